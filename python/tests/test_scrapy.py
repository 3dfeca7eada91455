"""Real Scrapy crawls of Python's HTML docs (Debian's python3-doc), served on loopback:
the blockbloom dupefilters against Scrapy's default, with JOBDIR pause/resume (a page
count, SIGINT, SIGTERM) and a SIGKILL, two scrapy-redis crawler processes sharing one
filter in Redis, and crawls with an expiry window (JOBDIR and scrapy-redis) run again within
and after it."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import RedisServer, free_port

DOCS = Path("/usr/share/doc/python3-doc/html")
CRAWL = Path(__file__).with_name("crawl.py")


@pytest.fixture(scope="module")
def site():
    if not (DOCS / "index.html").exists():
        if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
            raise RuntimeError("python3-doc is required (apt-get install -y python3-doc)")
        pytest.skip("python3-doc not installed")
    pytest.importorskip("scrapy")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(DOCS)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1)
    yield f"http://127.0.0.1:{port}/index.html"
    server.kill()
    server.wait()


def crawl(site, tmp, name, settings, wait=True):
    fetched, stats = tmp / f"{name}.fetched", tmp / f"{name}.stats"
    cmd = [sys.executable, str(CRAWL), site, json.dumps(settings), str(fetched), str(stats)]
    proc = subprocess.Popen(cmd, cwd=CRAWL.parent)
    if not wait:
        return proc, fetched
    t = time.time()
    assert proc.wait(timeout=600) == 0
    return fetched.read_text().splitlines(), json.loads(stats.read_text()), time.time() - t


BLOOM = {"DUPEFILTER_CLASS": "blockbloom.scrapy.BloomDupeFilter"}


def test_bloom_dupefilter_crawls_what_the_default_crawls(site, tmp_path):
    default, dstats, dt = crawl(site, tmp_path, "default", {})
    bloom, bstats, bt = crawl(site, tmp_path, "bloom", BLOOM)
    print(f"\ndefault: {len(default)} pages, {dstats.get('dupefilter/filtered')} filtered, {dt:.1f} s")
    print(f"blockbloom: {len(bloom)} pages, {bstats.get('dupefilter/filtered')} filtered, {bt:.1f} s")
    assert len(default) > 500 and len(set(default)) == len(default)
    assert len(set(bloom)) == len(bloom), "a page fetched twice"
    missed = set(default) - set(bloom)
    assert set(bloom) <= set(default)
    assert len(missed) <= 2, f"{len(missed)} pages missed (false positives at 1e-5?)"
    # Every request not fetched was counted as filtered, as by the default.
    assert abs(bstats["dupefilter/filtered"] - dstats["dupefilter/filtered"]) <= len(missed) * 200
    # The estimate of requests lost to false positives (1e-5, ~500 pages: about 0).
    assert 0 <= bstats["blockbloom/estimated_false_positives"] < 1


def test_jobdir_pause_and_resume(site, tmp_path):
    job = tmp_path / "job"
    first, _, _ = crawl(site, tmp_path, "part1", {**BLOOM, "JOBDIR": str(job), "CLOSESPIDER_PAGECOUNT": 200})
    assert 150 <= len(first) < 400
    assert (job / "blockbloom.seen").exists()
    second, _, _ = crawl(site, tmp_path, "part2", {**BLOOM, "JOBDIR": str(job)})
    runs = Counter(first + second)
    print(f"\nJOBDIR: {len(first)} + {len(second)} pages")
    assert all(n == 1 for n in runs.values()), "a page fetched twice across the runs"
    assert len(runs) > 500, "the resumed crawl did not finish the site"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_jobdir_paused_by_a_signal_and_resumed(site, tmp_path, sig):
    """Scrapy's own way to pause a JOBDIR crawl: Ctrl-C (or SIGTERM) once, which stops it
    gracefully (the dupefilter is closed, the pending requests saved), then the same
    command again. Across the two runs every page is fetched once, and all of them."""
    job = tmp_path / "job"
    proc, fetched = crawl(site, tmp_path, "paused", {**BLOOM, "JOBDIR": str(job)}, wait=False)
    deadline = time.time() + 300
    while not (fetched.exists() and len(fetched.read_text().splitlines()) >= 150):
        assert proc.poll() is None and time.time() < deadline, "the crawl ended early"
        time.sleep(0.05)
    proc.send_signal(sig)
    assert proc.wait(timeout=120) == 0
    paused = fetched.read_text().splitlines()
    assert len(paused) < 500, "the signal did not stop the crawl"
    resumed, stats, _ = crawl(site, tmp_path, "resumed", {**BLOOM, "JOBDIR": str(job)})
    runs = Counter(paused + resumed)
    print(f"\n{sig.name}: {len(paused)} pages, then {len(resumed)} after resuming")
    assert all(n == 1 for n in runs.values()), "a page fetched twice across the runs"
    assert len(runs) > 500, "the resumed crawl did not finish the site"
    assert stats.get("dupefilter/filtered", 0) >= 1


def test_jobdir_resume_after_sigkill(site, tmp_path):
    """A crawl killed with SIGKILL keeps every request its dupefilter had seen. (Scrapy's
    own disk queue of pending requests does not survive SIGKILL — the resumed engine
    fails on it — so it is removed: the requests that were in it are lost, never fetched
    twice.)"""
    job = tmp_path / "job"
    proc, fetched = crawl(site, tmp_path, "killed", {**BLOOM, "JOBDIR": str(job)}, wait=False)
    deadline = time.time() + 300
    while not (fetched.exists() and len(fetched.read_text().splitlines()) >= 150):
        assert proc.poll() is None and time.time() < deadline, "the crawl ended early"
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = fetched.read_text().splitlines()
    shutil.rmtree(job / "requests.queue", ignore_errors=True)
    resumed, stats, _ = crawl(site, tmp_path, "resumed", {**BLOOM, "JOBDIR": str(job)})
    runs = Counter(killed + resumed)
    print(f"\nSIGKILL: {len(killed)} pages, then {len(resumed)} after resuming")
    assert all(n == 1 for n in runs.values()), "a page fetched twice across the runs"
    # The start page and every link already seen were filtered from the file's state.
    assert stats.get("dupefilter/filtered", 0) >= 1


@pytest.mark.parametrize("server", ["redis_url", "module_redis_url"])
def test_two_scrapy_redis_processes_share_one_filter(site, tmp_path, server, request):
    """Through the Functions, and through the module where the server has it loaded."""
    pytest.importorskip("scrapy_redis")
    redis_url = request.getfixturevalue(server)
    settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "blockbloom.scrapy.RedisBloomDupeFilter",
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_url,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 1,
    }
    t = time.time()
    a = crawl(site, tmp_path, "a", settings, wait=False)
    b = crawl(site, tmp_path, "b", settings, wait=False)
    for proc, _ in (a, b):
        assert proc.wait(timeout=600) == 0
    pa, pb = a[1].read_text().splitlines(), b[1].read_text().splitlines()
    counts = Counter(pa + pb)
    print(f"\nscrapy-redis: {len(pa)} + {len(pb)} pages in {time.time() - t:.1f} s")
    assert len(counts) > 500
    assert all(n == 1 for n in counts.values()), "a page fetched by both processes"
    # scrapy-redis' scheduler never calls the dupefilter's close: the spider_closed signal
    # reports the shared filter's estimate (1e-5 per request here: about 0) in each crawl.
    for name in ("a", "b"):
        stats = json.loads((tmp_path / f"{name}.stats").read_text())
        assert 0 <= stats["blockbloom/estimated_false_positives"] < 1
        assert stats["blockbloom/redis_module"] == (server == "module_redis_url")


class Stats:
    """The part of Scrapy's StatsCollector the dupefilters use."""

    def __init__(self):
        self.values = Counter()

    def inc_value(self, key, count=1):
        self.values[key] += count

    def set_value(self, key, value):
        self.values[key] = value


def test_redis_dupefilter_through_restarts_and_an_outage(redis_server, caplog):
    """A restart between requests is invisible; while Redis is down, requests are taken as
    new (fetched, never dropped by the filter) once per process, counted, and logged once."""
    pytest.importorskip("scrapy")
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinter

    from blockbloom.scrapy import RedisBloomDupeFilter

    stats = Stats()
    df = RedisBloomDupeFilter(
        redis_server.url, "docs:dupefilter", fingerprinter=RequestFingerprinter(), stats=stats, local_front=0
    )
    a, b, c = (Request(f"http://127.0.0.1/{p}") for p in "abc")
    assert not df.request_seen(a) and df.request_seen(a)
    redis_server.restart()
    assert df.request_seen(a) and not df.request_seen(b)
    assert stats.values["blockbloom/redis_errors"] == 0
    redis_server.kill()
    caplog.clear()
    assert not df.request_seen(c)
    assert not df.request_seen(a), "unknown is new: fetched again rather than dropped"
    assert df.request_seen(c) and df.request_seen(a), "let through twice by one process"
    assert stats.values["blockbloom/redis_errors"] == 2
    assert [r.levelname for r in caplog.records] == ["ERROR"]
    redis_server.start()
    assert df.request_seen(b)  # Redis answers: the outage is over, what was let through forgotten
    # c was never recorded (Redis was down): new now, once (at least once across an outage).
    assert not df.request_seen(c) and df.request_seen(c) and df.request_seen(a)
    assert stats.values["blockbloom/redis_errors"] == 2
    assert [r.levelname for r in caplog.records] == ["ERROR", "WARNING"]
    # A second outage: a and c again taken as new once each.
    redis_server.kill()
    assert not df.request_seen(a) and df.request_seen(a)
    assert stats.values["blockbloom/redis_errors"] == 3


def test_bloom_dupefilter_that_cannot_grow_says_so(tmp_path, caplog):
    """A JOBDIR filter whose next file cannot be made (a directory in its way, put there
    after the crawl started) keeps deciding requests, logs the cause as an error once, and
    counts every request decided past its capacity; once the cause is gone it grows again."""
    pytest.importorskip("scrapy")
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinter

    from blockbloom.scrapy import BloomDupeFilter

    stats = Stats()
    df = BloomDupeFilter(str(tmp_path), capacity=100, fpr=1e-3, fingerprinter=RequestFingerprinter(), stats=stats)
    df.growth_retry_seconds = 0  # try to grow at every request
    blocker = tmp_path / "blockbloom.seen.1"
    blocker.mkdir()
    caplog.clear()
    seen = [df.request_seen(Request(f"http://127.0.0.1/{i}")) for i in range(150)]
    assert seen.count(True) <= 2
    past = stats.values["blockbloom/requests_past_capacity"]
    assert 50 <= past <= 51, past
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "blockbloom.seen.1" in errors[0].getMessage()
    assert df.seen.num_layers == 1 and df.seen.growth_failed
    blocker.rmdir()
    assert not df.request_seen(Request("http://127.0.0.1/after"))
    assert stats.values["blockbloom/requests_past_capacity"] == past
    assert df.seen.num_layers == 2
    df.close("finished")
    assert 0 <= stats.values["blockbloom/estimated_false_positives"] < 1


def test_a_full_expiring_dupefilter_warns_that_its_losses_are_unknown(tmp_path, caplog):
    """An expiring filter given a thousand times its capacity in one epoch has every bit
    set: the stat is inf and the log says the count is unknown (it said "about 0.0")."""
    pytest.importorskip("scrapy")
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinter

    from blockbloom.scrapy import BloomDupeFilter

    stats = Stats()
    df = BloomDupeFilter(None, capacity=100, expire_after=3600, fingerprinter=RequestFingerprinter(), stats=stats)
    seen = [df.request_seen(Request(f"http://127.0.0.1/{i}")) for i in range(100_000)]
    assert seen.count(True) > 90_000
    caplog.clear()
    df.close("finished")
    assert stats.values["blockbloom/estimated_false_positives"] == float("inf")
    assert any("how many new ones it dropped is unknown" in r.getMessage() for r in caplog.records)


# scrapy-redis' own connection defaults pass redis-py 6 a deprecated argument.
@pytest.mark.filterwarnings("ignore:Call to '__init__' function with deprecated usage")
def test_redis_dupefilter_uses_the_scheduler_s_server(tmp_path):
    """No REDIS_URL: REDIS_HOST, REDIS_PORT and REDIS_PARAMS (a password, a database) place
    the filter in the very database scrapy-redis' own connection uses, not on localhost."""
    pytest.importorskip("scrapy_redis")
    from scrapy import Request, Spider
    from scrapy.utils.request import RequestFingerprinter
    from scrapy.utils.test import get_crawler
    from scrapy_redis.connection import get_redis_from_settings

    from blockbloom import RedisBloomFilter
    from blockbloom.scrapy import RedisBloomDupeFilter

    password = "s3cr:t@/x"
    server = RedisServer(tmp_path, args=["--requirepass", password])
    try:
        settings = {
            "REDIS_HOST": "127.0.0.1",
            "REDIS_PORT": str(server.port),
            "REDIS_PARAMS": {"password": password, "db": 3},
            "SCHEDULER_DUPEFILTER_KEY": "%(spider)s:seen",
        }
        crawler = get_crawler(Spider, settings)
        df = RedisBloomDupeFilter.from_crawler(crawler, "docs")
        a = Request("http://127.0.0.1/a")
        assert not df.request_seen(a) and df.request_seen(a)
        assert get_redis_from_settings(crawler.settings).keys("{docs:seen*"), "not in scrapy-redis' database"
        other = dict(settings, REDIS_PARAMS={"password": password, "db": 0})
        assert not get_redis_from_settings(get_crawler(Spider, other).settings).keys("*")
        f = RedisBloomFilter(df.url, "docs:seen", df._params[0], df._params[1])
        assert RequestFingerprinter().fingerprint(a) in f
    finally:
        server.kill()


def test_a_redis_restart_mid_crawl(site, tmp_path, redis_server):
    """The server (append-only file) is killed and restarted while a scrapy-redis crawl
    runs: no error escapes the dupefilter, and every page is fetched once."""
    pytest.importorskip("scrapy_redis")
    settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "blockbloom.scrapy.RedisBloomDupeFilter",
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_server.url,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 1,
    }
    log = tmp_path / "crawl.log"
    fetched, stats = tmp_path / "r.fetched", tmp_path / "r.stats"
    cmd = [sys.executable, str(CRAWL), site, json.dumps(settings), str(fetched), str(stats)]
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, cwd=CRAWL.parent, stderr=err)
        deadline = time.time() + 300
        while not (fetched.exists() and len(fetched.read_text().splitlines()) >= 100):
            assert proc.poll() is None and time.time() < deadline, "the crawl ended early"
            time.sleep(0.01)
        redis_server.restart()
        at = len(fetched.read_text().splitlines())
        assert proc.wait(timeout=600) == 0
    pages = fetched.read_text().splitlines()
    counts = Counter(pages)
    errors = json.loads(stats.read_text()).get("blockbloom/redis_errors", 0)
    print(f"\nrestarted at {at} pages; {len(pages)} pages; {errors} requests let through")
    escaped = re.findall(r"^blockbloom\.\w+: .*", log.read_text(), re.M)
    assert not escaped, f"errors escaped the dupefilter: {escaped}"
    assert len(counts) > 500
    assert all(n == 1 for n in counts.values()), "a page fetched twice"


EXPIRE = 90  # seconds of the crawls' test clock (each crawl runs at one time of it)


def crawl_all(site, tmp, runs):
    """The crawls of `runs` ({name: settings}) at once: {name: (pages, stats, seconds)}."""
    t = time.time()
    procs = {name: crawl(site, tmp, name, settings, wait=False)[0] for name, settings in runs.items()}
    out = {}
    for name, proc in procs.items():
        code = proc.wait(timeout=600)
        fetched, stats = tmp / f"{name}.fetched", tmp / f"{name}.stats"
        pages = fetched.read_text().splitlines() if fetched.exists() else []
        out[name] = (code, pages, json.loads(stats.read_text()) if code == 0 else {}, time.time() - t)
    return out


def test_crawls_run_again_within_and_after_the_window(site, tmp_path, redis_url, module_redis_url):
    """BLOCKBLOOM_EXPIRE_AFTER with JOBDIR (BloomDupeFilter) and with scrapy-redis
    (RedisBloomDupeFilter; a server without the module: generations through the Functions,
    and one with it: the module's expiring type), crawled side by side: a crawl run again
    within the window fetches no page (its start page is a duplicate); run again once every
    fingerprint of the first has expired (4/3 of the window and a second after its last
    request locally and through the module, 1.25 windows through the Functions) it fetches
    every page again. Another window on the same state is refused."""
    pytest.importorskip("scrapy_redis")
    common = {"BLOCKBLOOM_EXPIRE_AFTER": EXPIRE, "BLOCKBLOOM_CAPACITY": 100_000}
    setups = {
        "jobdir": {**BLOOM, **common, "JOBDIR": str(tmp_path / "job")},
        "redis": {
            **common,
            "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
            "DUPEFILTER_CLASS": "blockbloom.scrapy.RedisBloomDupeFilter",
            "SCHEDULER_PERSIST": True,
            "REDIS_URL": redis_url,
            "SCHEDULER_IDLE_BEFORE_CLOSE": 1,
        },
    }
    setups["redis-module"] = {**setups["redis"], "REDIS_URL": module_redis_url}
    # The crawls' time is the dupefilters' test clock, so that the test does not depend on
    # how fast the crawls run (a loaded machine): the first at T0, the second within the
    # window, the third after it. Past times: a time ahead of the clock is taken as now.
    t0 = time.time() - 10 * EXPIRE

    def at(t, runs):
        return {name: {**v, "BLOCKBLOOM_TEST_CLOCK": t} for name, v in runs.items()}

    first = crawl_all(site, tmp_path, at(t0, {f"{k}-first": v for k, v in setups.items()}))
    within = crawl_all(site, tmp_path, at(t0 + EXPIRE - 1, {f"{k}-within": v for k, v in setups.items()}))
    after = crawl_all(site, tmp_path, at(t0 + 4 / 3 * (EXPIRE + 1) + 1, {f"{k}-after": v for k, v in setups.items()}))
    for k in setups:
        (c1, p1, _, _), (c2, p2, s2, _), (c3, p3, _, _) = first[f"{k}-first"], within[f"{k}-within"], after[f"{k}-after"]
        print(f"\nexpiring {k}: {len(p1)} pages, {len(p2)} within {EXPIRE} s, {len(p3)} after")
        assert c1 == c2 == c3 == 0, k
        assert len(p1) > 500 and len(set(p1)) == len(p1), k
        assert p2 == [], f"{k}: {len(p2)} pages fetched again within the window"
        assert s2.get("dupefilter/filtered", 0) >= 1, k
        assert sorted(p3) == sorted(p1), f"{k}: after the window every page is fetched again"
        if k.startswith("redis"):
            assert s2["blockbloom/redis_module"] == (k == "redis-module"), k
    # Another window on the same state is refused, not silently used.
    other = crawl_all(site, tmp_path, {f"{k}-other": {**v, "BLOCKBLOOM_EXPIRE_AFTER": 2 * EXPIRE} for k, v in setups.items()})
    for name, (_, pages, _, _) in other.items():
        assert pages == [], f"{name}: a crawl ran with another window"


def test_redis_dupefilter_reports_its_estimates_once(redis_server, caplog):
    """The shared filter's estimated false positives go to the stats and the log once per
    crawl: at close, at a scrapy-redis flush (`clear`, before the filter is deleted), or at
    the spider_closed signal; not at a flush on start, before any request. The estimate is
    within 30% of the requests counted as dropped while new; Redis gone: a warning."""
    import logging

    from scrapy import Request, signals
    from scrapy.utils.test import get_crawler

    from blockbloom.scrapy import RedisBloomDupeFilter

    redis_url = redis_server.url
    settings = {"REDIS_URL": redis_url, "BLOCKBLOOM_CAPACITY": 20_000, "BLOCKBLOOM_FPR": 0.01}
    crawler = get_crawler(settings_dict=settings)
    stats = crawler.stats = Stats()
    df = RedisBloomDupeFilter.from_crawler(crawler, "docs")
    df.clear()  # SCHEDULER_FLUSH_ON_START: nothing asked yet, nothing reported
    assert "blockbloom/estimated_false_positives" not in stats.values
    caplog.set_level(logging.INFO)
    # Twice the capacity: the rate rises past 1%, enough dropped to compare with.
    lost = sum(df.request_seen(Request(f"https://example.org/{i}")) for i in range(40_000))
    crawler.signals.send_catch_log(signals.spider_closed, spider=None, reason="finished")
    estimate = stats.values["blockbloom/estimated_false_positives"]
    print(f"\n40000 requests, capacity 20000 at 1%: {lost} dropped while new, estimated {estimate}")
    assert 0.7 * lost <= estimate <= 1.3 * lost
    assert sum("taken for duplicates" in r.getMessage() for r in caplog.records) == 1
    df.close("finished")
    df.clear()  # SCHEDULER_PERSIST false: the end of the crawl; reported once already
    assert sum("taken for duplicates" in r.getMessage() for r in caplog.records) == 1

    # A crawl that does not persist: reported by the flush, before the filter is deleted.
    stats2 = Stats()
    df2 = RedisBloomDupeFilter(redis_url, "docs2", stats=stats2, fingerprinter=crawler.request_fingerprinter)
    df2.request_seen(Request("https://example.org/a"))
    df2.clear()
    assert stats2.values["blockbloom/estimated_false_positives"] == 0
    # Redis gone at the end of a crawl: a warning, not an exception.
    df3 = RedisBloomDupeFilter(redis_url, "docs3", stats=Stats(), fingerprinter=crawler.request_fingerprinter)
    df3.request_seen(Request("https://example.org/a"))
    redis_server.kill()
    caplog.clear()
    df3.close("finished")
    assert any("no estimates from Redis" in r.getMessage() for r in caplog.records)


def test_redis_dupefilter_with_an_expiry_window(redis_url):
    """BLOCKBLOOM_EXPIRE_AFTER makes RedisBloomDupeFilter's filter a RedisExpiringBloomFilter
    (no local front); a filter of the other kind under the key is refused."""
    from scrapy import Request
    from scrapy.utils.test import get_crawler

    from blockbloom import RedisError, RedisExpiringBloomFilter
    from blockbloom.scrapy import RedisBloomDupeFilter

    settings = {"REDIS_URL": redis_url, "BLOCKBLOOM_EXPIRE_AFTER": 3600, "BLOCKBLOOM_CAPACITY": 1000}
    df = RedisBloomDupeFilter.from_crawler(get_crawler(settings_dict=settings), "docs")
    assert isinstance(df.seen, RedisExpiringBloomFilter) and df.seen.expire_after == 3600
    r = Request("https://example.org/a")
    assert not df.request_seen(r) and df.request_seen(r)
    with pytest.raises(RedisError, match="expire_after"):
        RedisBloomDupeFilter.from_crawler(get_crawler(settings_dict={**settings, "BLOCKBLOOM_EXPIRE_AFTER": 60}), "docs")
    with pytest.raises(RedisError):
        RedisBloomDupeFilter.from_crawler(get_crawler(settings_dict={**settings, "BLOCKBLOOM_EXPIRE_AFTER": 0}), "docs")
    df.clear()
    assert RedisBloomDupeFilter.from_crawler(get_crawler(settings_dict=settings), "docs").request_seen(r) is False


@pytest.mark.parametrize("where", ["memory", "redis"])
def test_expiring_dupefilters_report_their_rate_and_warn_past_twice_the_target(where, request, caplog):
    """An expiring dupefilter's rate goes to the stat blockbloom/estimated_fpr as it is read
    (every rate_check_every requests, and at the end); past twice BLOCKBLOOM_FPR, one
    warning. BLOCKBLOOM_ARRIVAL sizes the filter for the worst burst."""
    from scrapy import Request
    from scrapy.utils.test import get_crawler

    from blockbloom.scrapy import BloomDupeFilter, RedisBloomDupeFilter

    settings = {"BLOCKBLOOM_EXPIRE_AFTER": 3600, "BLOCKBLOOM_CAPACITY": 1000, "BLOCKBLOOM_FPR": 0.01}
    if where == "redis":
        settings["REDIS_URL"] = request.getfixturevalue("redis_url")

    def dupefilter(extra=None):
        crawler = get_crawler(settings_dict={**settings, **(extra or {})})
        if where == "redis":
            return RedisBloomDupeFilter.from_crawler(crawler, f"rate{len(extra or {})}"), crawler.stats
        return BloomDupeFilter.from_crawler(crawler), crawler.stats

    df, stats = dupefilter()
    df.rate_check_every = 250
    assert df.seen.arrival == "steady"
    caplog.clear()
    warnings = lambda: [r for r in caplog.records if "more than twice its target" in r.getMessage()]  # noqa: E731
    for i in range(300):  # an epoch's share of the capacity (a third), at once: the rate holds
        df.request_seen(Request(f"https://example.org/{i}"))
    assert 0 < stats.get_value("blockbloom/estimated_fpr") <= 0.01 and not warnings()
    for i in range(300, 6000):  # six times the capacity in one window
        df.request_seen(Request(f"https://example.org/{i}"))
    rate = stats.get_value("blockbloom/estimated_fpr")
    assert rate > 0.02 and len(warnings()) == 1, rate
    assert "0.01" in warnings()[0].getMessage() and warnings()[0].levelname == "WARNING"
    df.close("finished")
    assert len(warnings()) == 1 and stats.get_value("blockbloom/estimated_fpr") >= rate
    burst, _ = dupefilter({"BLOCKBLOOM_ARRIVAL": "worst_burst"})
    assert burst.seen.arrival == "worst_burst"
    for d in (df, burst):
        if where == "redis":
            d.clear()


def mixed_fleet_binary():
    """`redis/examples/mixed_fleet.rs`, built by `cargo test --workspace` (or `cargo build -p
    blockbloom-redis --example mixed_fleet`)."""
    root = Path(__file__).resolve().parents[2]
    for profile in ("release", "debug"):
        path = root / "target" / profile / "examples" / "mixed_fleet"
        if path.exists():
            return str(path)
    if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
        raise RuntimeError("no mixed_fleet example: cargo build -p blockbloom-redis --example mixed_fleet")
    pytest.skip("no mixed_fleet example (cargo build -p blockbloom-redis --example mixed_fleet)")


def test_a_rust_crawler_and_a_scrapy_redis_spider_share_one_filter(site, tmp_path, redis_url):
    """The Rust crawler keys requests by `request_fingerprint`, the spider's dupefilter by
    Scrapy's own: both crawl the docs at once through one Redis filter, from two start
    pages, and no page is fetched by both."""
    pytest.importorskip("scrapy_redis")
    import blockbloom

    rust = mixed_fleet_binary()
    settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "blockbloom.scrapy.RedisBloomDupeFilter",
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_url,
        "SCHEDULER_IDLE_BEFORE_CLOSE": 1,
        "SCHEDULER_DUPEFILTER_KEY": "docs:dupefilter",
        "BLOCKBLOOM_CAPACITY": 100_000,
        "BLOCKBLOOM_FPR": 1e-5,
    }
    t = time.time()
    spider, spider_fetched = crawl(site, tmp_path, "spider", settings, wait=False)
    rust_fetched = tmp_path / "rust.fetched"
    # Its seeds: the library pages, which the spider reaches in its second step; it takes
    # those no process has claimed yet.
    seeds = [site.replace("index.html", f"library/{p.name}") for p in sorted((DOCS / "library").glob("*.html"))]
    # Once the spider is under way (Scrapy starts in seconds, the Rust crawler at once).
    while not spider_fetched.exists() or len(spider_fetched.read_text().splitlines()) < 3:
        assert spider.poll() is None and time.time() - t < 120
        time.sleep(0.1)
    crawler = subprocess.run(
        [rust, "--delay-ms=5", redis_url, "docs:dupefilter", "100000", "1e-5", str(rust_fetched), *seeds[::-1]],
        capture_output=True, text=True, timeout=600,
    )
    assert crawler.returncode == 0, crawler.stderr
    assert spider.wait(timeout=600) == 0
    page = blockbloom.canonicalize_url
    by_spider = [page(u) for u in spider_fetched.read_text().splitlines()]
    by_rust = [page(u) for u in rust_fetched.read_text().splitlines()]
    both = set(by_spider) & set(by_rust)
    print(f"\nScrapy-Redis spider {len(by_spider)} pages, Rust crawler {len(by_rust)}, "
          f"fetched by both {len(both)}, in {time.time() - t:.1f} s; {crawler.stdout.strip()}")
    assert len(set(by_spider)) == len(by_spider) and len(set(by_rust)) == len(by_rust)
    assert not both, f"fetched by both: {sorted(both)[:5]}"
    assert len(by_rust) > 50 and len(by_spider) > 50 and len(both | set(by_spider) | set(by_rust)) > 500
