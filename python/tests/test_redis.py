"""RedisBloomFilter from Python, on a redis-server of its own."""

import pytest

from blockbloom import RedisBloomFilter, RedisError


def urls(a, b):
    return [f"https://example.net/{i}" for i in range(a, b)]


def test_shared_filter_and_local_front(redis_url):
    a = RedisBloomFilter(redis_url, "crawl:seen", 100_000, 0.01)
    b = RedisBloomFilter(redis_url, "crawl:seen", 100_000, 0.01, local_front=10_000)
    keys = urls(0, 5000)
    won_a = a.insert_if_absent_many(keys)
    won_b = [b.insert_if_absent(k) for k in keys]
    assert sum(won_a) > 4_950 and not any(won_b)
    assert b.round_trips == 5000
    assert not any(b.insert_if_absent(k) for k in keys)
    assert b.round_trips == 5000  # repeats answered in-process
    assert all(a.contains_many(keys)) and keys[0] in a
    with pytest.raises(RedisError):
        RedisBloomFilter(redis_url, "crawl:seen", 200_000, 0.01)  # other parameters
    assert RedisBloomFilter.delete(redis_url, "crawl:seen")


def test_connection_refused_is_a_connection_error():
    with pytest.raises(ConnectionError):
        RedisBloomFilter("redis://127.0.0.1:1/", "x", 1000)
