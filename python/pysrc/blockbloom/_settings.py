"""The dupefilters' settings, read as Scrapy and scrapy-redis read theirs, and as the CLI
takes its numbers (``"10M"``, ``"30d"``): each one a ``ValueError`` naming the setting if
it is not what it says."""

from __future__ import annotations

from typing import Any, Literal, Optional
from urllib.parse import quote, urlsplit, urlunsplit


def redis_url(settings: Any) -> str:
    """The URL of the Redis server scrapy-redis' scheduler uses under ``settings``: the
    settings it reads (``REDIS_URL``, ``REDIS_HOST``, ``REDIS_PORT``, ``REDIS_DB``,
    ``REDIS_PARAMS``), read as it does (redis-py's defaults, ``REDIS_*`` over
    ``REDIS_PARAMS``, the URL's own parts over both)."""
    params: dict[str, Any] = {"host": "localhost", "port": 6379}
    params.update(settings.getdict("REDIS_PARAMS"))
    for setting, param in (("REDIS_URL", "url"), ("REDIS_HOST", "host"), ("REDIS_PORT", "port"), ("REDIS_DB", "db")):
        value = settings.get(setting)
        if value:
            params[param] = value
    user, password, db = params.get("username"), params.get("password"), params.get("db")
    # `user:password@` of a URL, quoted; empty without a password.
    auth = "" if password is None else f"{quote(str(user or ''), safe='')}:{quote(str(password), safe='')}@"
    url = params.get("url")
    if url:
        parts = urlsplit(str(url))
        if parts.scheme in ("redis", "rediss"):
            netloc = parts.netloc if "@" in parts.netloc else auth + parts.netloc
            path = parts.path
            if path in ("", "/") and "db=" not in parts.query and db is not None:
                path = f"/{int(db)}"
            url = urlunsplit(parts._replace(netloc=netloc, path=path))
        return str(url)
    db = int(db or 0)
    if params.get("unix_socket_path"):
        query = f"db={db}"
        if password is not None:
            query += f"&pass={quote(str(password), safe='')}"
        if user:
            query += f"&user={quote(str(user), safe='')}"
        return f"unix://{quote(str(params['unix_socket_path']))}?{query}"
    host = str(params["host"])
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 address
    scheme = "rediss" if params.get("ssl") else "redis"
    return f"{scheme}://{auth}{host}:{int(params['port'])}/{db}"


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_COUNT_SUFFIXES = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def scaled(value: Any, suffixes: dict) -> float:
    """A setting's number, times its suffix's factor if it ends in one of ``suffixes``
    (``"30d"``, ``"10M"``, as the CLI takes them); NaN if it is not a number."""
    text = str(value).strip()
    scale = suffixes.get(text[-1:])
    try:
        return float(text[:-1] if scale else text) * (scale or 1.0)
    except ValueError:
        return float("nan")


def capacity_setting(settings: Any, default: int) -> int:
    """``BLOCKBLOOM_CAPACITY``: a whole number of requests, written as the CLI's
    ``--capacity`` takes it too (``"10M"``, ``"1e8"``, ``"500k"``); anything else, 0
    included, is a ``ValueError`` naming the setting."""
    value = settings.get("BLOCKBLOOM_CAPACITY", default)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value  # exact, past 2^53 too
    count = -1.0 if isinstance(value, bool) else scaled(value, _COUNT_SUFFIXES)
    if not 1.0 <= count < 1.8e19 or count != int(count):
        raise ValueError(
            f"BLOCKBLOOM_CAPACITY: not a whole number of requests >= 1: {value!r} (like "
            "1000000, 10M or 1e8)"
        )
    return int(count)


def expire_after_setting(settings: Any) -> Optional[float]:
    """``BLOCKBLOOM_EXPIRE_AFTER`` in seconds: a number of seconds, or a duration as the
    CLI's ``--expire-after`` takes it (``"30d"``, ``"12h"``, ``"90m"``, ``"45s"``); 0 or
    unset: never forget. Anything else is a ``ValueError`` naming the setting."""
    value = settings.get("BLOCKBLOOM_EXPIRE_AFTER")
    if value is None or value == "":
        return None
    seconds = scaled(value, _UNITS)
    if not 0.0 <= seconds < float("inf"):
        raise ValueError(
            f"BLOCKBLOOM_EXPIRE_AFTER: not a duration: {value!r} (seconds, or with a unit: "
            "30d, 12h, 90m, 45s; 0 to never forget)"
        )
    return seconds or None


def test_clock_setting(settings: Any) -> Optional[float]:
    """``BLOCKBLOOM_TEST_CLOCK``: for tests only, the time (seconds since 1970) an expiring
    filter works at instead of now, so that a test of the window does not depend on how
    fast its crawls run. Unset in production."""
    value = settings.get("BLOCKBLOOM_TEST_CLOCK")
    return None if value is None else float(value)


def fingerprint_setting(settings: Any) -> Literal["scrapy", "scrapy-redis"]:
    """``BLOCKBLOOM_FINGERPRINT``: whose hash ``RedisBloomDupeFilter`` keys a request by,
    ``"scrapy"`` (the crawler's request fingerprinter, the default) or ``"scrapy-redis"``
    (scrapy-redis' own, so that the set its ``RFPDupeFilter`` left is carried over)."""
    value = settings.get("BLOCKBLOOM_FINGERPRINT") or "scrapy"
    if value == "scrapy-redis":
        return "scrapy-redis"
    if value != "scrapy":
        raise ValueError(f"BLOCKBLOOM_FINGERPRINT: {value!r} is neither \"scrapy\" nor \"scrapy-redis\"")
    return "scrapy"
