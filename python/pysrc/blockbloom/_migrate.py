"""What the dupefilters carry over from the ones they replace: Scrapy's ``RFPDupeFilter``
keeps its fingerprints in ``requests.seen`` in the job directory; a crawl paused with it
and resumed with ``BloomDupeFilter`` must not fetch those requests again. scrapy-redis'
``RFPDupeFilter`` keeps its own in a set under the key, hashed its own way (no headers):
``RedisBloomDupeFilter`` keyed by that hash (``BLOCKBLOOM_FINGERPRINT = "scrapy-redis"``)
puts the set in its filter, and records in the filter which hash it holds, so that
processes keyed by the other are refused rather than mixed with it; keyed by Scrapy's, it
says at its start how many requests the set holds that it does not carry over."""

from __future__ import annotations

import os
from itertools import islice
import hashlib
import json
from typing import Any, BinaryIO, Iterator, Literal, Optional

from scrapy.utils.python import to_unicode
from w3lib.url import canonicalize_url

#: Scrapy's ``RFPDupeFilter``'s file in ``JOBDIR``.
SCRAPY_SEEN_FILE = "requests.seen"
#: How many bytes of ``requests.seen`` are already in the filter (a decimal number).
IMPORTED_FILE = "blockbloom.imported"
#: Fingerprints inserted per call (a file of 10^8 is not held as objects at once).
IMPORT_BATCH = 100_000
#: Binary records read from the file at a time.
READ_RECORDS = 65_536
#: What ``RedisBloomDupeFilter`` keyed by Scrapy's fingerprint logs at its start where its
#: key holds scrapy-redis' set.
NOT_CARRIED = (
    "blockbloom: %s also holds a set of %d fingerprints from scrapy-redis' RFPDupeFilter, which hashes "
    "requests its own way: they are not in this filter, so those requests are fetched once more. "
    "BLOCKBLOOM_FINGERPRINT = \"scrapy-redis\" in every process keys requests by that hash and carries "
    "the set over (into a filter that holds none of Scrapy's fingerprints); or delete the set."
)
#: Whose hash ``RedisBloomDupeFilter`` keys requests by (``BLOCKBLOOM_FINGERPRINT``).
FINGERPRINTS = ("scrapy", "scrapy-redis")


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


def scrapy_redis_fingerprint(request: Any) -> bytes:
    """scrapy-redis' ``RFPDupeFilter.request_fingerprint`` of ``request``, as the 20 bytes
    its hexadecimal digits spell: SHA-1 of the method, the canonical URL and the body
    (Scrapy's fingerprint hashes its headers too, so the two never match). Made with the
    w3lib installed, as scrapy-redis makes it beside this process, rather than with
    ``blockbloom.scrapy_redis_request_fingerprint``, which follows w3lib 2.6 or 2.5 as
    asked (for processes without w3lib)."""
    data = {"method": to_unicode(request.method), "url": canonicalize_url(request.url), "body": (request.body or b"").hex()}
    return hashlib.sha1(json.dumps(data, sort_keys=True).encode()).digest()


class ScrapyRedisFingerprinter:
    """A request fingerprinter, as Scrapy's, with scrapy-redis' hash
    (``scrapy_redis_fingerprint``)."""

    def fingerprint(self, request: Any) -> bytes:
        return scrapy_redis_fingerprint(request)


def _marks(what: str) -> list[bytes]:
    """Four keys no request is keyed by (a fingerprint is 20 bytes; these are longer, and
    start with a zero byte), put in a filter to record ``what`` in it: all four are read
    as present by mistake at the filter's rate to the fourth power (1e-8 at 1%)."""
    return [b"\x00blockbloom: " + what.encode() + b" #%d" % i for i in range(4)]


def _when(seen: Any, at: Optional[float]) -> dict:
    """The ``at`` argument of an expiring filter's calls (none for one that never forgets)."""
    return {"at": at} if hasattr(seen, "expire_after") else {}


def mark_fingerprint(seen: Any, kind: Literal["scrapy", "scrapy-redis"], key: str, at: Optional[float], check: bool = True) -> None:
    """Records in the Redis filter ``seen`` (named ``key``) that its requests are keyed by
    ``kind``'s fingerprint. With ``check``, a ``ValueError`` if it records the other's (read
    before the record, so that a process set wrong leaves no trace, and after it, so that
    of two processes started at once with different settings one at least is refused).
    An expiring filter forgets the record a window after it is made: ``RedisBloomDupeFilter``
    makes it again (without ``check``) every eighth of its window while requests come."""
    other = next(k for k in FINGERPRINTS if k != kind)

    def refuse_the_other() -> None:
        if check and all(seen.contains_many(_marks(f"fingerprint {other}"), **_when(seen, at))):
            raise ValueError(
                f"the filter {key} in Redis holds requests keyed by BLOCKBLOOM_FINGERPRINT = {other!r}, "
                f"and this process keys them by {kind!r}: it would take every request as new. Set "
                f"{other!r} as the other processes do, or delete the filter "
                f"(blockbloom.RedisBloomFilter.delete(url, {key!r})) to start another"
            )

    refuse_the_other()
    seen.update(_marks(f"fingerprint {kind}"), **_when(seen, at))
    refuse_the_other()


def _redis_py(url: str, timeout: float) -> Any:
    """A redis-py client for ``url`` (scrapy-redis' client: installed with it), or ``None``
    if redis-py is not installed."""
    try:
        import redis
    except ImportError:
        return None
    return redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)


def scrapy_redis_set_size(url: str, key: str, timeout: float) -> int:
    """How many fingerprints scrapy-redis' ``RFPDupeFilter`` left under ``key`` (a set of
    hexadecimal fingerprints, the key ``RedisBloomDupeFilter`` names its filter by): 0 if
    the key holds no set, or where redis-py is not installed or cannot answer."""
    r = _redis_py(url, timeout)
    if r is None:
        return 0
    import redis

    try:
        return int(r.scard(key)) if r.type(key) == b"set" else 0
    except (redis.RedisError, OSError, ValueError):
        return 0
    finally:
        r.close()


def import_scrapy_redis_set(seen: Any, url: str, key: str, timeout: float, at: Optional[float]) -> tuple[int, int]:
    """Puts the fingerprints of scrapy-redis' set under ``key`` in the Redis filter
    ``seen`` (at ``at`` if it expires: seen now), unless the filter records that this set,
    of this size, already is in it (recorded after the last one goes in, so an import cut
    short is done again). Returns the set's size and how many fingerprints were put in (0
    if none were new to import). A member that is not a hexadecimal fingerprint is a
    ``ValueError`` (the set is not scrapy-redis'); redis-py not installed is a
    ``ValueError`` too, and redis-py's errors are raised: the crawl must not start without
    them."""
    r = _redis_py(url, timeout)
    if r is None:
        raise ValueError('BLOCKBLOOM_FINGERPRINT = "scrapy-redis" reads scrapy-redis\' set with redis-py: pip install redis')
    try:
        if r.type(key) != b"set":
            return 0, 0
        size = int(r.scard(key))
        done = _marks(f"scrapy-redis' set of {size} imported")
        if all(seen.contains_many(done, **_when(seen, at))):
            return size, 0
        count, members = 0, r.sscan_iter(key, count=10_000)
        while batch := list(islice(members, IMPORT_BATCH)):
            try:
                fingerprints = [bytes.fromhex(m.decode("ascii")) for m in batch]
            except (UnicodeDecodeError, ValueError):
                raise ValueError(f"{key}: a member of the set is not a hexadecimal fingerprint, not scrapy-redis': not imported") from None
            seen.update(fingerprints, **_when(seen, at))
            count += len(batch)
        seen.update(done, **_when(seen, at))
        return size, count
    finally:
        r.close()


def delete_scrapy_redis_set(url: str, key: str, timeout: float) -> None:
    """Deletes scrapy-redis' set under ``key`` (as its ``RFPDupeFilter.clear`` does), if
    the key holds one."""
    r = _redis_py(url, timeout)
    if r is not None:
        try:
            if r.type(key) == b"set":
                r.delete(key)
        finally:
            r.close()
