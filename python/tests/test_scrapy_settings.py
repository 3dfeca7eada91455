"""The Scrapy dupefilters' settings as users write them (no crawl: a crawler from
``scrapy.utils.test.get_crawler``, or the settings alone)."""

import pytest


def test_expire_after_takes_seconds_or_the_clis_units(tmp_path):
    """``BLOCKBLOOM_EXPIRE_AFTER`` as Scrapy users write it (a number, or ``-s
    BLOCKBLOOM_EXPIRE_AFTER=30d`` as the CLI's ``--expire-after``); anything else a
    ``ValueError`` naming the setting (``"30d"`` said "could not convert string to float")."""
    pytest.importorskip("scrapy")
    from scrapy.utils.test import get_crawler

    from blockbloom.scrapy import BloomDupeFilter

    def window(value):
        crawler = get_crawler(settings_dict={"BLOCKBLOOM_EXPIRE_AFTER": value})
        seen = BloomDupeFilter.from_crawler(crawler).seen
        return getattr(seen, "expire_after", None)

    for value, seconds in [(2592000, 2592000), ("2592000", 2592000), ("30d", 2592000), (" 12h ", 43200), ("90m", 5400), ("45s", 45), ("1.5d", 129600)]:
        assert window(value) == seconds, value
    for value in [0, "0", "", None, "0d"]:
        assert window(value) is None, value  # never forget: a growable filter
    for value in ["30 days", "30w", "-5", -5, "nan", "inf", "d", "1e400"]:
        with pytest.raises(ValueError, match="BLOCKBLOOM_EXPIRE_AFTER"):
            window(value)


def test_capacity_takes_the_clis_counts():
    """``BLOCKBLOOM_CAPACITY`` as a number or as the CLI's ``--capacity`` (``-s
    BLOCKBLOOM_CAPACITY=10M``: "invalid literal for int()" before); anything else a
    ``ValueError`` naming the setting."""
    pytest.importorskip("scrapy")
    from scrapy.utils.test import get_crawler

    from blockbloom.scrapy import BloomDupeFilter

    def capacity(value):
        crawler = get_crawler(settings_dict={"BLOCKBLOOM_CAPACITY": value, "BLOCKBLOOM_EXPIRE_AFTER": 60})
        return BloomDupeFilter.from_crawler(crawler).seen.capacity

    for value, n in [(1000, 1000), ("1000", 1000), ("10k", 10_000), ("2M", 2_000_000), ("1e5", 100_000), (" 3K ", 3000)]:
        assert capacity(value) == n, value
    for value in [0, "0", -1, "1.5", "10x", "", "nan", "1e30", True]:
        with pytest.raises(ValueError, match="BLOCKBLOOM_CAPACITY"):
            capacity(value)


def test_redis_url_from_scrapy_redis_settings():
    """The server is found from scrapy-redis' settings as its scheduler finds it."""
    pytest.importorskip("scrapy")
    from scrapy.settings import Settings

    from blockbloom.scrapy import redis_url

    cases = [
        ({}, "redis://localhost:6379/0"),
        ({"REDIS_HOST": "redis.internal", "REDIS_PORT": "6380"}, "redis://redis.internal:6380/0"),
        ({"REDIS_URL": "redis://h:1/3", "REDIS_HOST": "x", "REDIS_DB": 5}, "redis://h:1/3"),
        ({"REDIS_URL": "redis://h:1", "REDIS_DB": 2}, "redis://h:1/2"),
        ({"REDIS_PARAMS": {"password": "s3cr:t@/x", "db": 4}}, "redis://:s3cr%3At%40%2Fx@localhost:6379/4"),
        ({"REDIS_PARAMS": {"host": "a", "port": 1}, "REDIS_HOST": "b"}, "redis://b:1/0"),
        ({"REDIS_PARAMS": {"host": "::1", "port": 7000}}, "redis://[::1]:7000/0"),
        ({"REDIS_PARAMS": {"ssl": True}}, "rediss://localhost:6379/0"),
        ({"REDIS_PARAMS": {"unix_socket_path": "/run/r.sock", "password": "p"}}, "unix:///run/r.sock?db=0&pass=p"),
        ({"REDIS_URL": "redis://h:1", "REDIS_PARAMS": {"username": "u", "password": "pw"}}, "redis://u:pw@h:1"),
        ({"REDIS_URL": "redis://me:pw@h:1/0", "REDIS_PARAMS": {"password": "other"}}, "redis://me:pw@h:1/0"),
    ]
    for settings, url in cases:
        assert redis_url(Settings(settings)) == url, settings
