"""RedisExpiringBloomFilter from Python, on a redis-server of its own: the window with
injected times, batches against single calls, pickling, pool workers racing
across epochs, and generations freed by the server."""

import datetime
import multiprocessing as mp
import pickle
import time

import pytest

from blockbloom import RedisBloomFilter, RedisError, RedisExpiringBloomFilter

HOUR = 3600.0
T = 1_699_999_200.0  # a past time (2023: guarantee 6 takes later ones as now), at the start of an epoch of every window below
KEYS = [f"https://example.org/page/{i}" for i in range(2000)]


def test_parameters_and_refusals(redis_url):
    f = RedisExpiringBloomFilter(redis_url, "fetched", 10_000, 0.001, expire_after=datetime.timedelta(days=30))
    assert (f.expire_after, f.forgotten_after) == (30 * 86400, 37.5 * 86400)
    assert repr(f) == "RedisExpiringBloomFilter(name='fetched', capacity=10000, fpr=0.001, expire_after=2592000)"
    with pytest.raises(TypeError):
        RedisExpiringBloomFilter(redis_url, "x", 1000)  # expire_after is required
    with pytest.raises(ValueError):
        RedisExpiringBloomFilter(redis_url, "x", 1000, expire_after=-1)
    with pytest.raises(RedisError, match="expire_after"):
        RedisExpiringBloomFilter(redis_url, "fetched", 10_000, 0.001, expire_after=HOUR)  # another window
    with pytest.raises(RedisError):
        RedisBloomFilter(redis_url, "fetched", 10_000, 0.001)  # a plain filter of that name
    with pytest.raises(TypeError):
        f.insert_if_absent(3)
    with pytest.raises(TypeError):
        f.insert_if_absent_many(["ok", 5])
    assert not f.contains("ok")  # nothing was sent before the bad key raised
    with pytest.raises(ValueError):
        f.contains("a", at=-5)
    assert RedisExpiringBloomFilter.delete(redis_url, "fetched")
    assert not RedisExpiringBloomFilter.delete(redis_url, "fetched")


def test_the_window_with_injected_times(redis_url):
    f = RedisExpiringBloomFilter(redis_url, "w", 10_000, expire_after=HOUR)
    assert f.insert_if_absent("a", at=T)
    assert not f.insert_if_absent(b"a", at=T + HOUR - 0.001)  # bytes: the same key; not renewed
    assert f.contains("a", at=T + HOUR / 2) and not f.contains("a", at=T + f.forgotten_after)
    assert f.insert_if_absent("a", at=T + 1.25 * HOUR)  # forgotten: new again
    f.update(["b"], at=T)
    f.update(["b"], at=T + HOUR)  # an insert renews
    assert f.contains("b", at=T + 2 * HOUR - 1)
    # Time going back (an earlier `at` after a later one) never forgets a key in its window.
    assert f.contains("b", at=T + HOUR)
    f.add("c", at=T + HOUR)
    f.add("c", at=T + 2 * HOUR)  # renews, as update does
    assert f.contains("c", at=T + 3 * HOUR - 1)
    assert (f.name, f.capacity, f.target_fpr) == ("w", 10_000, 0.01)
    f.update(["now"])
    assert "now" in f and f.contains_many(["now", "never"]) == [True, False]


def test_batches_answer_as_single_calls_across_epochs(redis_url):
    # At 1e-6 false positives are unlikely enough that every answer must agree. (Every
    # answer against the rule the filter keeps: `redis/tests/expiring.rs`.)
    batched = RedisExpiringBloomFilter(redis_url, "batched", 5000, 1e-6, expire_after=HOUR, shard_bytes=4096)
    single = RedisExpiringBloomFilter(redis_url, "single", 5000, 1e-6, expire_after=HOUR, shard_bytes=4096)
    keys = [f"k{i % 700}" for i in range(2000)]
    for r in range(8):
        t = T + r * HOUR / 3
        assert batched.insert_if_absent_many(keys, at=t) == [single.insert_if_absent(k, at=t) for k in keys], r
        later = t + HOUR / 2
        assert batched.contains_many(keys, at=later) == [single.contains(k, at=later) for k in keys], r


def test_estimates_of_the_shared_expiring_filter(redis_url):
    """The new keys taken for repeats within one window, counted, against the estimate; the
    keys it holds, and a rate past the target once past its capacity."""
    day = 86_400.0
    f = RedisExpiringBloomFilter(redis_url, "xest", 20_000, 0.01, expire_after=day)
    assert f.estimated_false_positives() == 0.0 and f.estimated_len() == 0
    keys = [f"https://example.net/{i}" for i in range(60_000)]  # three windows' worth at once
    lost = f.insert_if_absent_many(keys).count(False)
    estimate = f.estimated_false_positives()
    print(f"\n60000 URLs, capacity 20000 per window: {lost} taken for repeats, estimated {estimate:.1f}")
    assert 0.7 * lost <= estimate <= 1.3 * lost
    assert abs(f.estimated_len() / 60_000 - 1) < 0.03
    assert 0.02 < f.estimated_fpr() < 0.2  # past its capacity: the estimate says so


def test_pickles_as_its_arguments(redis_url):
    f = RedisExpiringBloomFilter(redis_url, "p", 1000, expire_after=HOUR, timeout=2.0)
    f.update(["a"], at=T)
    g = pickle.loads(pickle.dumps(f))
    assert repr(g) == repr(f) and g.contains("a", at=T + 1) and not g.contains("a", at=T + 2 * HOUR)


def test_arrival_sizes_it_for_a_steady_rate_or_the_worst_burst(redis_url):
    f = RedisExpiringBloomFilter(redis_url, "burst", 10_000, expire_after=HOUR, arrival="worst_burst")
    assert f.arrival == "worst_burst"
    assert pickle.loads(pickle.dumps(f)).arrival == "worst_burst"
    with pytest.raises(RedisError, match="arrival"):
        RedisExpiringBloomFilter(redis_url, "burst", 10_000, expire_after=HOUR)  # sized otherwise
    assert RedisExpiringBloomFilter(redis_url, "steady", 10_000, expire_after=HOUR).arrival == "steady"


def winners(f, keys, at):
    return [k for k, new in zip(keys, f.insert_if_absent_many(keys, at=at)) if new]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_workers_race_across_epochs(redis_url, method):
    # Every task offers every key at the same time; four rounds, each an epoch later than
    # the last, half of the keys offered in the round before (within the window: seen).
    f = RedisExpiringBloomFilter(redis_url, "race", 100_000, 1e-4, expire_after=HOUR, shard_bytes=4096)
    with mp.get_context(method).Pool(2) as pool:
        for r in range(4):
            keys = KEYS[r * 250 : r * 250 + 500]
            won = [k for res in pool.starmap(winners, [(f, keys, T + r * HOUR / 4)] * 4) for k in res]
            fresh = keys if r == 0 else keys[250:]
            assert sorted(won) == sorted(fresh), f"round {r}: each new key won once, no old key"
        # Two windows later every key is new again, won exactly once.
        won = [k for res in pool.starmap(winners, [(f, KEYS[:250], T + 3 * HOUR)] * 4) for k in res]
        assert sorted(won) == sorted(KEYS[:250])


def test_the_server_frees_old_generations(redis_url):
    f = RedisExpiringBloomFilter(redis_url, "short", 1000, expire_after=2)
    assert all(f.insert_if_absent_many(KEYS[:100]))
    assert f.generation_keys(), "the inserts made a generation"
    t = time.time()
    while f.generation_keys():
        assert time.time() - t < 10, "generations not freed"
        time.sleep(0.1)
    print(f"\ngenerations freed by the server {time.time() - t:.2f} s after the inserts")
    assert not any(f.contains_many(KEYS[:100])) and all(f.insert_if_absent_many(KEYS[:100]))
