"""A crawl paused with Scrapy's own dupefilter (``RFPDupeFilter``, its fingerprints in the
job directory's ``requests.seen``) and resumed with ``BloomDupeFilter``: what Scrapy had
seen stays seen. Both formats of the file (binary since Scrapy 2.19, hexadecimal lines
before), one cut short by an unclean shutdown, an import done again after it grew, an
expiring filter, and a real crawl of Python's docs run in two parts. And scrapy-redis'
set of fingerprints under the Redis dupefilter's key, which cannot be carried over: named
at the start."""

import time
from collections import Counter

import pytest

from test_scrapy import BLOOM, Stats, crawl, site  # noqa: F401 (`site`: a fixture)

scrapy = pytest.importorskip("scrapy")
from scrapy import Request  # noqa: E402
from scrapy.utils.request import RequestFingerprinter  # noqa: E402

from blockbloom.scrapy import BloomDupeFilter  # noqa: E402

FINGERPRINTER = RequestFingerprinter()
REQUESTS = [Request(f"http://127.0.0.1/page/{i}") for i in range(2000)]
SEEN_BY_SCRAPY = REQUESTS[:1000]


def write_requests_seen(job, requests, binary=True, mode="wb"):
    job.mkdir(exist_ok=True)
    with open(job / "requests.seen", mode) as f:
        for r in requests:
            fp = FINGERPRINTER.fingerprint(r)
            f.write(len(fp).to_bytes(2, "big") + fp if binary else fp.hex().encode() + b"\n")


def dupefilter(job, stats=None, **kwargs):
    return BloomDupeFilter(str(job), fingerprinter=FINGERPRINTER, stats=stats, **kwargs)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "hex-lines"])
def test_what_scrapy_s_dupefilter_saw_stays_seen(tmp_path, binary):
    job = tmp_path / "job"
    write_requests_seen(job, SEEN_BY_SCRAPY, binary)
    stats = Stats()
    df = dupefilter(job, stats)
    assert stats.values["blockbloom/imported_fingerprints"] == 1000
    assert all(df.request_seen(r) for r in SEEN_BY_SCRAPY)
    assert sum(df.request_seen(r) for r in REQUESTS[1000:]) <= 1  # new (1e-5 false positives)
    assert (job / "blockbloom.imported").read_text() == f"{(job / 'requests.seen').stat().st_size}\n"
    df.close("shutdown")
    # Resumed again: nothing to import, everything still seen.
    stats = Stats()
    df = dupefilter(job, stats)
    assert "blockbloom/imported_fingerprints" not in stats.values
    assert all(df.request_seen(r) for r in REQUESTS)
    df.close("shutdown")
    # Scrapy's dupefilter ran again in between (the file grew): imported again.
    extra = [Request(f"http://127.0.0.1/more/{i}") for i in range(10)]
    write_requests_seen(job, extra, binary, mode="ab")
    stats = Stats()
    df = dupefilter(job, stats)
    assert stats.values["blockbloom/imported_fingerprints"] == 1010
    assert all(df.request_seen(r) for r in extra)


def test_a_requests_seen_cut_short_or_not_scrapy_s(tmp_path):
    job = tmp_path / "job"
    write_requests_seen(job, SEEN_BY_SCRAPY)
    with open(job / "requests.seen", "ab") as f:
        f.write(b"\x00\x14" + b"\x01" * 7)  # a record cut short by an unclean shutdown
    stats = Stats()
    df = dupefilter(job, stats)
    assert stats.values["blockbloom/imported_fingerprints"] == 1000
    assert all(df.request_seen(r) for r in SEEN_BY_SCRAPY)
    other = tmp_path / "other"
    other.mkdir()
    (other / "requests.seen").write_bytes(b"not a fingerprint\n")
    with pytest.raises(ValueError, match="requests.seen, line 1"):
        dupefilter(other)
    assert not (other / "blockbloom.imported").exists()
    # One length byte flipped: every record after it would be read wrong.
    damaged = bytearray((job / "requests.seen").read_bytes())
    damaged[22 * 500] ^= 0x01
    (other / "requests.seen").write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="byte 11000: a record of 276 bytes after ones of 20: damaged"):
        dupefilter(other)


def test_an_import_cut_short_is_done_again(tmp_path, monkeypatch):
    """The record of the import is written after the filter has the fingerprints: a crawl
    killed during the import imports again at its next start. (In batches of 7 here.)"""
    import blockbloom._migrate

    monkeypatch.setattr(blockbloom._migrate, "IMPORT_BATCH", 7)
    job = tmp_path / "job"
    write_requests_seen(job, SEEN_BY_SCRAPY)
    dupefilter(job).close("shutdown")
    (job / "blockbloom.imported").unlink()  # as if killed before it was written
    stats = Stats()
    df = dupefilter(job, stats)
    assert stats.values["blockbloom/imported_fingerprints"] == 1000
    assert all(df.request_seen(r) for r in SEEN_BY_SCRAPY)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "hex-lines"])
def test_a_large_requests_seen_is_read_as_it_is_imported(tmp_path, monkeypatch, binary):
    """The file is read a block at a time, not held in memory with its fingerprints as
    objects: importing 200,000 of them (8.2 MB as hex lines) takes a tenth of the file's
    size at the most (in batches of 1,000 here)."""
    import os
    import tracemalloc

    import blockbloom._migrate

    monkeypatch.setattr(blockbloom._migrate, "IMPORT_BATCH", 1000)
    monkeypatch.setattr(blockbloom._migrate, "READ_RECORDS", 1000)
    job = tmp_path / "job"
    job.mkdir()
    fingerprints = [os.urandom(20) for _ in range(200_000)]
    with open(job / "requests.seen", "wb") as f:
        for fp in fingerprints:
            f.write(len(fp).to_bytes(2, "big") + fp if binary else fp.hex().encode() + b"\n")
    size = (job / "requests.seen").stat().st_size
    tracemalloc.start()
    try:
        stats = Stats()
        df = dupefilter(job, stats)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert stats.values["blockbloom/imported_fingerprints"] == len(fingerprints)
    assert peak < size / 10, f"{peak} bytes allocated at the peak, for a file of {size}"
    assert all(fp in df.seen for fp in fingerprints[::97])


def test_an_expiring_filter_takes_them_as_seen_at_its_start(tmp_path):
    # (Times in the past: a filter takes none past this machine's clock.)
    job, t = tmp_path / "job", time.time() - 3600
    write_requests_seen(job, SEEN_BY_SCRAPY)
    df = dupefilter(job, expire_after=60, clock=t)
    assert all(df.request_seen(r) for r in SEEN_BY_SCRAPY)
    df.close("shutdown")
    # A window (and the third of it the filter may keep them longer) later: forgotten.
    later = dupefilter(job, expire_after=60, clock=t + 4 / 3 * 61 + 1)
    assert sum(later.request_seen(r) for r in SEEN_BY_SCRAPY) <= 1


def test_a_crawl_paused_with_scrapy_s_dupefilter_resumes_with_blockbloom(site, tmp_path):  # noqa: F811
    job = tmp_path / "job"
    first, _, _ = crawl(site, tmp_path, "default", {"JOBDIR": str(job), "CLOSESPIDER_PAGECOUNT": 200})
    assert 150 <= len(first) < 400 and (job / "requests.seen").stat().st_size > 0
    second, stats, _ = crawl(site, tmp_path, "bloom", {**BLOOM, "JOBDIR": str(job)})
    runs = Counter(first + second)
    print(f"\nScrapy's dupefilter, then blockbloom's: {len(first)} + {len(second)} pages")
    assert all(n == 1 for n in runs.values()), "a page fetched twice across the runs"
    assert len(runs) > 500, "the resumed crawl did not finish the site"
    assert stats["blockbloom/imported_fingerprints"] > len(first)


def test_scrapy_redis_fingerprints_under_the_key_are_named_at_the_start(redis_url, caplog):
    """scrapy-redis' RFPDupeFilter keeps a set of its own fingerprints under the key the
    Redis dupefilter names its filter by. Keyed by Scrapy's fingerprint (the default:
    scrapy-redis hashes a request without its headers, Scrapy with them), the dupefilter
    cannot carry them over, and says at its start how many requests will be fetched once
    more, and how to carry them over, in the log and the stats."""
    redis = pytest.importorskip("redis")
    dupefilter_module = pytest.importorskip("scrapy_redis.dupefilter")
    from blockbloom.scrapy import RedisBloomDupeFilter

    old = dupefilter_module.RFPDupeFilter(redis.Redis.from_url(redis_url), "docs:dupefilter")
    assert not any(old.request_seen(r) for r in REQUESTS[:3])
    assert old.request_fingerprint(REQUESTS[0]) != FINGERPRINTER.fingerprint(REQUESTS[0]).hex()
    stats = Stats()
    df = RedisBloomDupeFilter(redis_url, "docs:dupefilter", fingerprinter=FINGERPRINTER, stats=stats)
    assert stats.values["blockbloom/scrapy_redis_fingerprints_not_carried"] == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "3 fingerprints from scrapy-redis" in warnings[0], warnings
    assert 'BLOCKBLOOM_FINGERPRINT = "scrapy-redis"' in warnings[0]
    assert not df.request_seen(REQUESTS[0]), "another hash: new to the filter"
    # No set under the key (the filter's own keys are others): nothing said.
    caplog.clear()
    stats = Stats()
    RedisBloomDupeFilter(redis_url, "other:dupefilter", fingerprinter=FINGERPRINTER, stats=stats)
    assert "blockbloom/scrapy_redis_fingerprints_not_carried" not in stats.values
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_scrapy_redis_own_hash_is_scrapy_redis_fingerprint():
    dupefilter_module = pytest.importorskip("scrapy_redis.dupefilter")
    from blockbloom._migrate import scrapy_redis_fingerprint

    old = dupefilter_module.RFPDupeFilter(None, "k")
    requests = [
        Request("http://example.com/a?b=2&a=1#frag"),
        Request("HTTP://Example.COM/%7euser/ä?q=a b"),
        Request("http://example.com/form", method="POST", body=b"x=1&y=\xff"),
        Request("http://example.com/a?a=1&b=2", headers={"Accept-Language": "fr"}),  # the first
    ]
    for r in requests:
        assert scrapy_redis_fingerprint(r).hex() == old.request_fingerprint(r), r
    assert len({scrapy_redis_fingerprint(r) for r in requests}) == 3  # no fragment, sorted, no headers


@pytest.mark.parametrize("server", ["redis_url", "module_redis_url"], ids=["functions", "module"])
def test_scrapy_redis_set_carried_over(server, request, caplog):
    """Keyed by scrapy-redis' hash (``BLOCKBLOOM_FINGERPRINT = "scrapy-redis"``), the
    dupefilter puts scrapy-redis' set in the filter at its start: what scrapy-redis saw
    stays seen. Once (again after the set changed); a process keyed by Scrapy's fingerprint
    is refused on that filter, and the other way round; ``clear`` deletes the set as
    scrapy-redis' own ``clear`` does; a set that is not scrapy-redis' is refused."""
    redis = pytest.importorskip("redis")
    dupefilter_module = pytest.importorskip("scrapy_redis.dupefilter")
    from blockbloom.scrapy import RedisBloomDupeFilter

    url = request.getfixturevalue(server)
    r = redis.Redis.from_url(url)
    old = dupefilter_module.RFPDupeFilter(r, "docs:dupefilter")
    assert not any(old.request_seen(q) for q in SEEN_BY_SCRAPY)

    def carrying(key="docs:dupefilter", **kwargs):
        stats = Stats()
        return RedisBloomDupeFilter(url, key, stats=stats, fingerprint="scrapy-redis", **kwargs), stats

    df, stats = carrying()
    assert stats.values["blockbloom/imported_fingerprints"] == 1000
    assert "not_carried" not in str(stats.values)
    assert all(df.request_seen(q) for q in SEEN_BY_SCRAPY)
    assert sum(df.request_seen(q) for q in REQUESTS[1000:]) <= 1  # new (1e-5 false positives)
    df, stats = carrying()
    assert "blockbloom/imported_fingerprints" not in stats.values, "imported twice"
    extra = [Request(f"http://127.0.0.1/more/{i}") for i in range(10)]
    assert not any(old.request_seen(q) for q in extra)  # scrapy-redis ran again: the set grew
    df, stats = carrying()
    assert stats.values["blockbloom/imported_fingerprints"] == 1010
    assert all(df.request_seen(q) for q in extra)
    # Keyed by Scrapy's fingerprint, every request would be new: refused, and the other way round.
    with pytest.raises(ValueError, match="keyed by BLOCKBLOOM_FINGERPRINT = 'scrapy-redis'"):
        RedisBloomDupeFilter(url, "docs:dupefilter", fingerprinter=FINGERPRINTER)
    RedisBloomDupeFilter(url, "b:dupefilter", fingerprinter=FINGERPRINTER).request_seen(REQUESTS[0])
    with pytest.raises(ValueError, match="keyed by BLOCKBLOOM_FINGERPRINT = 'scrapy'"):
        carrying("b:dupefilter")
    df.clear()
    assert not r.exists("docs:dupefilter"), "scrapy-redis' set is cleared with the filter"
    r.sadd("c:dupefilter", "not a fingerprint")
    with pytest.raises(ValueError, match="c:dupefilter: a member of the set is not a hexadecimal fingerprint"):
        carrying("c:dupefilter")


def test_of_two_processes_started_at_once_with_different_hashes_one_is_refused():
    """Each reads the filter's record, writes its own, and reads again: the other's record,
    written between the first read and its own, is found by the second (the record's
    protocol on a local filter, the other process's write injected at that moment)."""
    from blockbloom import BloomFilter
    from blockbloom._migrate import mark_fingerprint

    class OtherWritesFirst:
        def __init__(self):
            self.filter, self.injected = BloomFilter(1000, 1e-5), False

        def contains_many(self, keys):
            return self.filter.contains_many(keys)

        def update(self, keys):
            if not self.injected:  # the other process's record lands first
                self.injected = True
                mark_fingerprint(self.filter, "scrapy-redis", "k", None, check=False)
            self.filter.update(keys)

    with pytest.raises(ValueError, match="keyed by BLOCKBLOOM_FINGERPRINT = 'scrapy-redis'"):
        mark_fingerprint(OtherWritesFirst(), "scrapy", "k", None)
    alone = BloomFilter(1000, 1e-5)
    mark_fingerprint(alone, "scrapy", "k", None)
    mark_fingerprint(alone, "scrapy", "k", None)  # again: its own record is no obstacle


def test_an_expiring_filter_keeps_the_record_of_its_fingerprint(redis_url):
    """An expiring filter forgets the record of whose fingerprints it holds as it forgets
    requests: the dupefilter makes it again every eighth of its window while requests
    come, so a process keyed by the other is refused as long as the requests are seen."""
    pytest.importorskip("redis")
    from blockbloom.scrapy import RedisBloomDupeFilter

    # (Times in the past: a filter takes none past this machine's clock.)
    t, window = time.time() - 3600, 60
    for key, renewed in (("renewed:dupefilter", True), ("idle:dupefilter", False)):
        url = redis_url
        df = RedisBloomDupeFilter(url, key, fingerprint="scrapy-redis", expire_after=window, clock=t)
        df.request_seen(REQUESTS[0])
        if renewed:
            df.clock = t + 30
            df.request_seen(REQUESTS[1])
        # At t + 85 the record made at t is forgotten (by 4/3 (W + 1 s)), one made at t + 30 not.
        later = t + 85
        if renewed:
            with pytest.raises(ValueError, match="keyed by BLOCKBLOOM_FINGERPRINT = 'scrapy-redis'"):
                RedisBloomDupeFilter(url, key, fingerprinter=FINGERPRINTER, expire_after=window, clock=later)
        else:
            RedisBloomDupeFilter(url, key, fingerprinter=FINGERPRINTER, expire_after=window, clock=later)


def test_a_scrapy_redis_crawl_goes_on_with_blockbloom(site, tmp_path, redis_url):  # noqa: F811
    """A scrapy-redis crawl of the docs stopped after 200 pages with scrapy-redis' own
    dupefilter, its queue kept in Redis, and finished with ``RedisBloomDupeFilter`` keyed
    by scrapy-redis' hash: no page fetched twice."""
    pytest.importorskip("scrapy_redis")
    scheduler = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_url,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 1,
    }
    first, _, _ = crawl(
        site,
        tmp_path,
        "scrapy-redis",
        {**scheduler, "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter", "CLOSESPIDER_PAGECOUNT": 200},
    )
    assert 150 <= len(first) < 400
    second, stats, _ = crawl(
        site,
        tmp_path,
        "bloom",
        {
            **scheduler,
            "DUPEFILTER_CLASS": "blockbloom.scrapy.RedisBloomDupeFilter",
            "BLOCKBLOOM_FINGERPRINT": "scrapy-redis",
        },
    )
    runs = Counter(first + second)
    print(f"\nscrapy-redis' dupefilter, then blockbloom's: {len(first)} + {len(second)} pages")
    assert all(n == 1 for n in runs.values()), "a page fetched twice across the runs"
    assert len(runs) > 490, "the second crawl did not finish the site"
    assert stats["blockbloom/imported_fingerprints"] > len(first)


def test_a_filter_lost_and_re_armed_records_its_fingerprint_again(redis_url):
    """The record is in the filter: lost with it (here FLUSHALL), written again when the
    dupefilter re-arms the filter, so a process keyed the other way is still refused."""
    redis = pytest.importorskip("redis")
    from blockbloom.scrapy import RedisBloomDupeFilter

    df = RedisBloomDupeFilter(redis_url, "docs:dupefilter", fingerprint="scrapy-redis", local_front=0)
    assert not df.request_seen(REQUESTS[0])
    redis.Redis.from_url(redis_url).flushall()
    assert not df.request_seen(REQUESTS[1])  # the filter re-armed, the request decided there
    with pytest.raises(ValueError, match="keyed by BLOCKBLOOM_FINGERPRINT = 'scrapy-redis'"):
        RedisBloomDupeFilter(redis_url, "docs:dupefilter", fingerprinter=FINGERPRINTER, local_front=0)
