"""No panic on any input: every public function and method that takes a number, fed extreme
values (0, negative, NaN, ±inf, 2**63, 2**64, 1e19, 1e300, the largest float, …), returns or
raises an ``Exception`` (``ValueError``, ``OverflowError``, ``TypeError``, ``OSError``) —
never ``pyo3_runtime.PanicException``, which ``except Exception`` does not catch. And a time
far ahead never makes a key inside its window new."""

import sys
import time

import pytest

from blockbloom import (
    AtomicBitSet,
    BloomFilter,
    CountingBloomFilter,
    ExpiringBloomFilter,
    GrowableBloomFilter,
    RedisBloomFilter,
    RedisExpiringBloomFilter,
)

EXTREMES = [
    0, -1, -0.0, 1, 0.5, float("nan"), float("inf"), float("-inf"), 2**63 - 1, 2**63, 2**64 - 1,
    2**64, 2**128, -(2**63), 1e19, 9.3e18, 1e300, sys.float_info.max, sys.float_info.min,
]


def no_panic(call, *args, **kwargs):
    """Calls it; any ``Exception`` is fine, anything else (a panic) fails the test."""
    try:
        call(*args, **kwargs)
    except Exception:
        pass
    except BaseException as e:  # pragma: no cover - what the test exists to catch
        pytest.fail(f"{type(e).__name__} from {call.__qualname__}{args}{kwargs}: {e}")


def test_constructors_and_methods_take_extreme_numbers(tmp_path):
    f = BloomFilter(1000)
    g = GrowableBloomFilter(1000)
    e = ExpiringBloomFilter(1000, expire_after=3600)
    b = AtomicBitSet(1000)
    for i, x in enumerate(EXTREMES):
        no_panic(BloomFilter, x)
        no_panic(BloomFilter, 1000, x)
        no_panic(BloomFilter, 1000, 0.01, seed=x)
        no_panic(BloomFilter, 1000, 0.01, block_bits=x)
        no_panic(BloomFilter.open_file, tmp_path / f"f{i}", x)
        no_panic(BloomFilter.open_file, tmp_path / f"g{i}", 1000, x)
        no_panic(BloomFilter.open_file, tmp_path / f"h{i}", 1000, 0.01, x)
        no_panic(GrowableBloomFilter, x)
        no_panic(GrowableBloomFilter, 1000, x)
        no_panic(GrowableBloomFilter, 1000, 0.01, x)
        no_panic(GrowableBloomFilter.open_file, tmp_path / f"i{i}", x)
        no_panic(GrowableBloomFilter.open_file, tmp_path / f"j{i}", 1000, x)
        no_panic(g.try_reserve, x)
        no_panic(CountingBloomFilter, x)
        no_panic(CountingBloomFilter, 1000, x)
        no_panic(CountingBloomFilter, 1000, 0.01, x)
        no_panic(ExpiringBloomFilter, x, expire_after=3600)
        no_panic(ExpiringBloomFilter, 1000, x, expire_after=3600)
        no_panic(ExpiringBloomFilter, 1000, expire_after=x)
        no_panic(ExpiringBloomFilter, 1000, expire_after=3600, seed=x)
        no_panic(ExpiringBloomFilter.open_file, tmp_path / f"k{i}", x, expire_after=3600)
        no_panic(ExpiringBloomFilter.open_file, tmp_path / f"l{i}", 1000, x, expire_after=3600)
        no_panic(ExpiringBloomFilter.open_file, tmp_path / f"m{i}", 1000, 0.01, expire_after=x)
        for method in (e.insert_if_absent, e.add, e.contains):
            no_panic(method, "key", at=x)
        for method in (e.insert_if_absent_many, e.contains_many, e.update):
            no_panic(method, ["a", "b"], at=x)
        no_panic(AtomicBitSet, x)
        for method in (b.insert_if_absent, b.add, b.remove, b.__contains__):
            no_panic(method, x)
    assert f.insert_if_absent("still works")


def test_redis_classes_take_extreme_numbers(redis_url):
    r = RedisBloomFilter(redis_url, "x", 1000)
    x_ = RedisExpiringBloomFilter(redis_url, "y", 1000, expire_after=3600)
    for i, x in enumerate(EXTREMES):
        no_panic(RedisBloomFilter, redis_url, f"a{i}", x)
        no_panic(RedisBloomFilter, redis_url, f"b{i}", 1000, x)
        no_panic(RedisBloomFilter, redis_url, f"c{i}", 1000, 0.01, local_front=x)
        no_panic(RedisBloomFilter, redis_url, f"d{i}", 1000, 0.01, local_fpr=x)
        no_panic(RedisBloomFilter, redis_url, f"e{i}", 1000, 0.01, timeout=x)
        no_panic(RedisBloomFilter, redis_url, f"f{i}", 1000, 0.01, shard_bytes=x)
        no_panic(RedisBloomFilter.export, redis_url, f"g{i}", BloomFilter(100), timeout=x)
        no_panic(RedisBloomFilter.export, redis_url, f"h{i}", BloomFilter(100), shard_bytes=x)
        no_panic(r.wait_for_replicas, x)
        no_panic(r.wait_for_replicas, 0, x)
        no_panic(RedisExpiringBloomFilter, redis_url, f"i{i}", x, expire_after=3600)
        no_panic(RedisExpiringBloomFilter, redis_url, f"j{i}", 1000, x, expire_after=3600)
        no_panic(RedisExpiringBloomFilter, redis_url, f"k{i}", 1000, expire_after=x)
        no_panic(RedisExpiringBloomFilter, redis_url, f"l{i}", 1000, expire_after=3600, timeout=x)
        no_panic(RedisExpiringBloomFilter, redis_url, f"m{i}", 1000, expire_after=3600, shard_bytes=x)
        for method in (x_.insert_if_absent, x_.contains):
            no_panic(method, "key", at=x)
        for method in (x_.insert_if_absent_many, x_.contains_many, x_.update):
            no_panic(method, ["a", "b"], at=x)
        no_panic(x_.wait_for_replicas, x)
        no_panic(x_.wait_for_replicas, 0, x)
    assert r.insert_if_absent("still works")


@pytest.mark.parametrize("ahead", [1e9, 365 * 86400.0, 9.2e18])
def test_a_time_far_ahead_forgets_nothing_inside_the_window(ahead, tmp_path):
    for f in (
        ExpiringBloomFilter(1000, expire_after=3600),
        ExpiringBloomFilter.open_file(tmp_path / f"s{ahead}", 1000, expire_after=3600),
    ):
        assert f.insert_if_absent("seen a second ago")
        assert f.insert_if_absent("y", at=time.time() + ahead)
        assert f.contains("seen a second ago") and "y" in f


def test_redis_a_client_far_ahead_forgets_nothing(redis_url):
    f = RedisExpiringBloomFilter(redis_url, "ahead", 1000, expire_after=3600)
    assert f.insert_if_absent("seen a second ago")
    assert f.insert_if_absent("y", at=time.time() + 1e9)
    assert f.contains("seen a second ago") and f.contains("y")


def test_times_past_the_clock_s_range_are_overflow_errors():
    f = ExpiringBloomFilter(1000, expire_after=3600)
    for at in (1e19, 1e300, sys.float_info.max):
        with pytest.raises(OverflowError):
            f.insert_if_absent("x", at=at)
    for at in (-1, float("nan"), float("-inf")):
        with pytest.raises(ValueError):
            f.contains("x", at=at)
