"""The Python classes on a server with the blockbloom module loaded: they use it by
themselves, answer as the Functions do on the same filter, survive pickling with the
choice, and see keys that redis-cli inserted with the module's own commands."""

import pickle
import subprocess
import time
from urllib.parse import urlparse

from blockbloom import RedisBloomFilter, RedisExpiringBloomFilter

URLS = [f"https://example.com/page/{i}" for i in range(3000)]


def test_the_module_is_used_and_answers_as_the_functions(module_redis_url):
    native = RedisBloomFilter(module_redis_url, "m", 10_000)
    lua = RedisBloomFilter(module_redis_url, "m", 10_000, use_module=False)
    assert native.uses_module and not lua.uses_module
    got = []
    for i in range(0, len(URLS), 500):
        f = native if i % 1000 == 0 else lua
        got += f.insert_if_absent_many(URLS[i : i + 500] + URLS[:10])
    assert sum(got) > 2990
    assert native.contains_many(URLS) == lua.contains_many(URLS) == [True] * len(URLS)
    assert native.estimated_len() == lua.estimated_len()
    # Pickled, the choice goes with it.
    assert not pickle.loads(pickle.dumps(lua)).uses_module
    assert pickle.loads(pickle.dumps(native)).uses_module


def test_an_expiring_filter_is_the_modules_expiring_type(module_redis_url):
    """Where the module is loaded an expiring filter is its expiring type (the planes): seen
    for the window, new again by `forgotten_after`, one winner per new key between two
    handles, about 2.8 bytes per key of capacity; `use_module=False` keeps generations."""
    x = RedisExpiringBloomFilter(module_redis_url, "x", 10_000, expire_after=60)
    y = RedisExpiringBloomFilter(module_redis_url, "x", 10_000, expire_after=60)
    assert x.uses_module and y.uses_module
    assert abs(x.forgotten_after - 4 * 61 / 3) < 0.01  # four epochs of (60 s + 1 s) / 3
    t = time.time() - 300
    won = [a + b for a, b in zip(x.insert_if_absent_many(URLS, at=t), y.insert_if_absent_many(URLS, at=t + 0.5))]
    assert max(won) == 1 and sum(won) > 2950
    assert all(x.contains_many(URLS, at=t + 59.9))
    assert y.insert_if_absent_many(URLS[:100], at=t + x.forgotten_after) == [True] * 100
    # The estimates, through the module's census: keys inserted now.
    e = RedisExpiringBloomFilter(module_redis_url, "e", 10_000, expire_after=60)
    e.insert_if_absent_many(URLS)
    assert abs(e.estimated_len() - len(URLS)) < 0.05 * len(URLS)
    assert 0 < e.estimated_fpr() < 0.01
    keys = subprocess.run(
        ["redis-cli", "-p", str(urlparse(module_redis_url).port), "--raw", "MEMORY", "USAGE", "{x.0}.bits", "SAMPLES", "0"],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    assert 2.5 < int(keys[0]) / 10_000 < 3.2, keys
    # Pickled, the choice goes with it; without the module, generations.
    assert pickle.loads(pickle.dumps(x)).uses_module
    g = RedisExpiringBloomFilter(module_redis_url, "g", 1000, expire_after=60, use_module=False)
    assert not g.uses_module and not pickle.loads(pickle.dumps(g)).uses_module
    assert g.insert_if_absent("https://example.com/")


def test_keys_inserted_by_redis_cli_are_seen_by_python(module_redis_url):
    f = RedisBloomFilter(module_redis_url, "cli", 10_000)
    port = str(urlparse(module_redis_url).port)
    out = subprocess.run(
        ["redis-cli", "-p", port, "BB.INSERT_IF_ABSENT", "cli", URLS[0], URLS[1], URLS[0]],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    assert out == ["1", "1", "0"]
    assert URLS[0] in f and URLS[1] in f and URLS[2] not in f
    assert not f.insert_if_absent(URLS[1])
    # Bytes and str of the same text are the same key, as everywhere else.
    assert URLS[0].encode() in f


def test_a_server_without_the_module_uses_the_functions(redis_url):
    f = RedisBloomFilter(redis_url, "plain", 1000)
    assert not f.uses_module
    assert f.insert_if_absent("https://example.com/")
