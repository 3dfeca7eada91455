"""What the dupefilters carry over from the ones they replace: Scrapy's ``RFPDupeFilter``
keeps its fingerprints in ``requests.seen`` in the job directory; a crawl paused with it
and resumed with ``BloomDupeFilter`` must not fetch those requests again. scrapy-redis'
``RFPDupeFilter`` keeps its own in a set that cannot be carried over (another hash):
``RedisBloomDupeFilter`` says so at its start."""

from __future__ import annotations

import os
from itertools import islice
from typing import Any, BinaryIO, Iterator, Optional

#: Scrapy's ``RFPDupeFilter``'s file in ``JOBDIR``.
SCRAPY_SEEN_FILE = "requests.seen"
#: How many bytes of ``requests.seen`` are already in the filter (a decimal number).
IMPORTED_FILE = "blockbloom.imported"
#: Fingerprints inserted per call (a file of 10^8 is not held as objects at once).
IMPORT_BATCH = 100_000
#: Binary records read from the file at a time.
READ_RECORDS = 65_536
#: What ``RedisBloomDupeFilter`` logs at its start where its key holds scrapy-redis' set.
NOT_CARRIED = (
    "blockbloom: %s also holds a set of %d fingerprints from scrapy-redis' RFPDupeFilter, which hashes "
    "requests its own way: they are not in this filter, so those requests are fetched once more. "
    "Delete the set when that is done."
)


def scrapy_fingerprints(f: BinaryIO) -> Iterator[bytes]:
    """The fingerprints in a ``requests.seen`` open for reading, read as they are needed
    (a file of 10^8 is not held in memory): each one's 2-byte big-endian length and its
    bytes (Scrapy 2.19 and later), or one hexadecimal fingerprint per line (earlier
    releases). A binary file starts with a zero byte (a fingerprint is shorter than 256
    bytes), a text one with a hexadecimal digit. A record cut short by an unclean shutdown
    ends the binary file, as Scrapy reads it. A line that is not hexadecimal, or a record
    of another length than the first (a damaged length, after which every record would be
    read wrong), is a ``ValueError``: the file is not used."""
    head = f.read(2)
    if head[:1] != b"\x00":
        f.seek(0)
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield bytes.fromhex(line.decode("ascii"))
                except (UnicodeDecodeError, ValueError):
                    raise ValueError(f"{SCRAPY_SEEN_FILE}, line {n}: not a hexadecimal fingerprint") from None
        return
    first = int.from_bytes(head, "big")
    record, pos = 2 + first, 0
    block = head + f.read(record * READ_RECORDS - 2)
    while len(block) >= record:
        for i in range(0, len(block) - record + 1, record):
            if block[i : i + 2] != head:
                size = int.from_bytes(block[i : i + 2], "big")
                raise ValueError(f"{SCRAPY_SEEN_FILE}, byte {pos + i}: a record of {size} bytes after ones of {first}: damaged")
            yield block[i + 2 : i + record]
        done = len(block) - len(block) % record
        pos += done
        block = block[done:] + f.read(record * READ_RECORDS)


def import_scrapy_seen(seen: Any, jobdir: str, at: Optional[float]) -> int:
    """Inserts into ``seen`` (a ``GrowableBloomFilter`` or an ``ExpiringBloomFilter``, at
    ``at`` for the latter: seen now, so forgotten a window from now) the fingerprints of
    ``requests.seen`` in ``jobdir``, unless every byte of it already was (the count in
    ``blockbloom.imported``, written after the filter has them, so an import cut short is
    done again at the next start). Returns how many fingerprints were read (0 if none
    were new to import). Growing the filter for them can raise ``OSError`` or
    ``MemoryError``: the crawl must not start without them."""
    marker = os.path.join(jobdir, IMPORTED_FILE)
    try:
        with open(marker) as m:
            done = int(m.read().strip() or 0)
    except (FileNotFoundError, ValueError):
        done = -1
    try:
        f = open(os.path.join(jobdir, SCRAPY_SEEN_FILE), "rb")
    except FileNotFoundError:
        return 0
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0 or size == done:
            return 0
        count, fingerprints = 0, scrapy_fingerprints(f)
        while batch := list(islice(fingerprints, IMPORT_BATCH)):
            if hasattr(seen, "try_reserve"):
                seen.try_reserve(len(batch))
                seen.update(batch)
            else:
                seen.update(batch, at=at)
            count += len(batch)
    seen.flush()
    part = marker + ".part"
    with open(part, "w") as m:
        m.write(f"{size}\n")
        m.flush()
        os.fsync(m.fileno())
    os.replace(part, marker)
    return count


def scrapy_redis_set_size(url: str, key: str, timeout: float) -> int:
    """How many fingerprints scrapy-redis' ``RFPDupeFilter`` left under ``key`` (a set of
    hexadecimal fingerprints, the key ``RedisBloomDupeFilter`` names its filter by): 0 if
    the key holds no set, or where redis-py (scrapy-redis' client) is not installed or
    cannot answer. scrapy-redis hashes a request its own way (no headers in the hash,
    unlike Scrapy's fingerprint), so they cannot be put in the filter."""
    try:
        import redis
    except ImportError:
        return 0
    try:
        r = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            return int(r.scard(key)) if r.type(key) == b"set" else 0
        finally:
            r.close()
    except (redis.RedisError, OSError, ValueError):
        return 0
