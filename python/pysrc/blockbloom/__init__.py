"""blockbloom: lock-free blocked Bloom filters for deduplicating crawl URLs.

Keys are ``str`` or ``bytes``. A ``str`` is the same key as the Rust ``&str`` of its UTF-8
bytes and as a line of ``blockbloom dedup``; ``bytes`` the same as a ``str`` with those
bytes. So a state file written by the command line or a Rust program answers the same here.

>>> from blockbloom import BloomFilter
>>> seen = BloomFilter(1_000_000, 0.01)
>>> seen.insert_if_absent("https://example.com/")
True
>>> "https://example.com/" in seen
True
"""

from ._blockbloom import (
    AtomicBitSet,
    BloomFilter,
    CountingBloomFilter,
    ExpiringBloomFilter,
    GrowableBloomFilter,
    RedisBloomFilter,
    RedisExpiringBloomFilter,
    RedisError,
    SnapshotError,
    StateLost,
    __version__,
    canonicalize_url,
    request_fingerprint,
    scrapy_redis_request_fingerprint,
)

__all__ = [
    "AtomicBitSet",
    "BloomFilter",
    "CountingBloomFilter",
    "ExpiringBloomFilter",
    "GrowableBloomFilter",
    "RedisBloomFilter",
    "RedisExpiringBloomFilter",
    "RedisError",
    "SnapshotError",
    "StateLost",
    "__version__",
    "canonicalize_url",
    "request_fingerprint",
    "scrapy_redis_request_fingerprint",
]
