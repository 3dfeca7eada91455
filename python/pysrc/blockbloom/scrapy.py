"""Scrapy dupefilters on blockbloom.

In-process (Scrapy's own scheduler)::

    DUPEFILTER_CLASS = "blockbloom.scrapy.BloomDupeFilter"

With ``JOBDIR`` the filter is a file in the job directory (``blockbloom.seen``, growing
into ``blockbloom.seen.1``, … as requests come), mapped into memory: pause/resume works,
and a crawl killed even with SIGKILL keeps every request it had already seen. A crawl
paused with Scrapy's own dupefilter resumes with this one: the fingerprints of its
``requests.seen`` are put in the filter at the start (once: ``blockbloom.imported``).

Shared by a fleet through Redis (scrapy-redis' scheduler)::

    SCHEDULER = "scrapy_redis.scheduler.Scheduler"
    DUPEFILTER_CLASS = "blockbloom.scrapy.RedisBloomDupeFilter"
    REDIS_URL = "redis://127.0.0.1:6379"

The server is found from scrapy-redis' own settings, as its scheduler finds it:
``REDIS_URL``, else ``REDIS_HOST`` / ``REDIS_PORT`` (default ``localhost:6379``), with
``REDIS_DB`` and ``REDIS_PARAMS`` (``host``, ``port``, ``db``, ``username``, ``password``,
``unix_socket_path``, ``ssl``) — so the filter lives in the same Redis as the request queue.
TLS (``rediss://`` or ``ssl``) verifies the server against the system's certificates, or
those of the file named by the ``SSL_CERT_FILE`` environment variable (``ssl_ca_certs``
is not read).

Settings: ``BLOCKBLOOM_CAPACITY`` (requests the filter is sized for, a number or as the
CLI's ``--capacity``, ``"10M"``, ``"1e8"``: the first layer of
the in-process filter, which grows past it; the whole Redis filter; with
``BLOCKBLOOM_EXPIRE_AFTER``, the distinct requests per window), ``BLOCKBLOOM_EXPIRE_AFTER``
(seconds, or a duration as ``"30d"``, ``"12h"``, after which a request's fingerprint is forgotten and the page fetched again — a
re-crawl interval: an ``ExpiringBloomFilter``, whose file in ``JOBDIR`` records its window,
or a ``RedisExpiringBloomFilter``, whose window is recorded in Redis; another window is
refused), ``BLOCKBLOOM_ARRIVAL`` (with ``BLOCKBLOOM_EXPIRE_AFTER``: ``"steady"``, the
default, sizes the filter for its capacity per window at a steady rate; ``"worst_burst"``
for one in any order, at 2.5 times the memory, 2.6 at 1e-5: ``blockbloom calc --expire-after``
gives both), ``BLOCKBLOOM_FPR`` (the rate of requests
wrongly taken as seen, default 1e-5),
``BLOCKBLOOM_LOCAL_FRONT`` (Redis only, without expiry: requests a process remembers in
memory to skip round trips for its repeats; 0 turns it off), ``BLOCKBLOOM_REDIS_TIMEOUT`` (Redis only: seconds to connect and to wait
for a reply before a request is taken as new, default 5), ``BLOCKBLOOM_FINGERPRINT`` (Redis
only: ``"scrapy"``, the default, or ``"scrapy-redis"`` to key requests by scrapy-redis' hash
and carry its dupefilter's set over), ``DUPEFILTER_DEBUG``; stats ``dupefilter/filtered`` as Scrapy's own, and
``blockbloom/redis_errors`` (requests taken as new because Redis could not answer), and
``blockbloom/requests_past_capacity`` (requests decided while the in-process filter could
not grow: logged as an error, see ``BloomDupeFilter.request_seen``), and for an expiring
filter ``blockbloom/estimated_fpr`` (its rate, read every ``rate_check_every`` requests and
at the end; a warning once it passes twice ``BLOCKBLOOM_FPR``).
"""

from __future__ import annotations

import logging
import math
import os
import time
from typing import Any, Literal, Optional

from scrapy import signals
from scrapy.dupefilters import BaseDupeFilter

from . import (
    ExpiringBloomFilter,
    GrowableBloomFilter,
    RedisBloomFilter,
    RedisError,
    RedisExpiringBloomFilter,
    StateLost,
)
from ._migrate import (
    FINGERPRINTS,
    NOT_CARRIED,
    SCRAPY_SEEN_FILE,
    ScrapyRedisFingerprinter,
    delete_scrapy_redis_set,
    import_scrapy_redis_set,
    import_scrapy_seen,
    mark_fingerprint,
    scrapy_redis_set_size,
)
from ._settings import capacity_setting, expire_after_setting, fingerprint_setting, redis_url, test_clock_setting

DEFAULT_CAPACITY = 1_000_000
DEFAULT_FPR = 1e-5
DEFAULT_LOCAL_FRONT = 100_000
DEFAULT_REDIS_TIMEOUT = 5.0
STATE_FILE = "blockbloom.seen"


class _LogMixin:
    logger = logging.getLogger(__name__)

    def _init_log(self, debug: bool, stats: Any) -> None:
        self.debug = debug
        self.logdupes = True
        self.stats = stats

    def log(self, request: Any, spider: Any) -> None:
        if self.debug:
            self.logger.debug(
                "Filtered duplicate request: %(request)s", {"request": request}, extra={"spider": spider}
            )
        elif self.logdupes:
            self.logger.debug(
                "Filtered duplicate request: %(request)s - no more duplicates will be shown"
                " (see DUPEFILTER_DEBUG to show all duplicates)",
                {"request": request},
                extra={"spider": spider},
            )
            self.logdupes = False
        if self.stats is not None:
            self.stats.inc_value("dupefilter/filtered")

    #: Requests between two readings of an expiring filter's rate; ``None``: one per
    #: ``capacity // rate_check_share`` requests, at least 10,000 (a reading reads the
    #: whole filter, in Redis every shard's live generations, so it is spread out in
    #: proportion to the filter's size).
    rate_check_every: Optional[int] = None
    rate_check_share = 100
    _rate_warned = False
    _since_rate_check = 0

    def _check_rate_every(self, seen: Any, at: Optional[float]) -> None:
        """``_check_rate`` at one call in ``rate_check_every``."""
        self._since_rate_check += 1
        if self._since_rate_check >= (self.rate_check_every or max(10_000, seen.capacity // self.rate_check_share)):
            self._check_rate(seen, at)

    def _check_rate(self, seen: Any, at: Optional[float]) -> float:
        """An expiring filter's rate now (at the test clock's time ``at``, if set): to the
        stat ``blockbloom/estimated_fpr``, and once it passes twice the target, a warning
        (once per crawl). Returns the rate."""
        self._since_rate_check = 0
        fpr = seen.estimated_fpr(at=at)
        if self.stats is not None:
            self.stats.set_value("blockbloom/estimated_fpr", fpr)
        if fpr > 2 * seen.target_fpr and not self._rate_warned:
            self._rate_warned = True
            self.logger.warning(
                "blockbloom: the dupefilter's false-positive rate is now %g, more than twice its "
                "target %g: it sees more requests in an epoch (a third of the window) than "
                "BLOCKBLOOM_CAPACITY (%d) per window at a steady rate gives, so new requests are "
                "dropped as duplicates more often; raise "
                "BLOCKBLOOM_CAPACITY (a new filter), or set BLOCKBLOOM_ARRIVAL = \"worst_burst\" "
                "if the requests come in bursts",
                fpr,
                seen.target_fpr,
                seen.capacity,
            )
        return fpr

    def _report_false_positives(self, estimate: float, fpr: float) -> None:
        """The stat ``blockbloom/estimated_false_positives`` (new requests dropped as
        duplicates so far, for the filter: across the runs of a ``JOBDIR``) and a log line."""
        if self.stats is not None:
            self.stats.set_value("blockbloom/estimated_false_positives", round(estimate, 1))
        if not math.isfinite(estimate):
            self.logger.warning(
                "blockbloom: the filter is full (every bit is set): it takes every request for "
                "a duplicate, and how many new ones it dropped is unknown (the stat is inf)"
            )
            return
        self.logger.info(
            "blockbloom: about %.1f new requests were taken for duplicates so far (estimated "
            "from the filter's fill); its false-positive rate is now %g",
            estimate,
            fpr,
        )


class BloomDupeFilter(_LogMixin, BaseDupeFilter):
    """Scrapy's duplicate filter on a growable blockbloom filter of request fingerprints, or,
    with ``expire_after`` (``BLOCKBLOOM_EXPIRE_AFTER``), on an expiring one: a request is
    then a duplicate only if it was seen within the last ``expire_after`` seconds (it is
    new again at most a third of the window and a second later), so a crawl re-run or
    resumed after the window fetches its pages again."""

    #: Seconds between attempts to grow a filter that could not grow (see ``request_seen``).
    growth_retry_seconds = 1.0

    def __init__(
        self,
        path: Optional[str] = None,
        debug: bool = False,
        *,
        capacity: int = DEFAULT_CAPACITY,
        fpr: float = DEFAULT_FPR,
        fingerprinter: Any = None,
        stats: Any = None,
        expire_after: Optional[float] = None,
        clock: Optional[float] = None,
        arrival: Literal["steady", "worst_burst"] = "steady",
    ) -> None:
        self._init_log(debug, stats)
        self.fingerprinter = fingerprinter
        #: For tests: the time (seconds since 1970) an expiring filter works at, else now.
        self.clock = clock
        self.path = os.path.join(path, STATE_FILE) if path else None
        self._growth_warned = False
        self._retry_growth_at: Optional[float] = None
        self.seen: Any
        if expire_after:
            # A fixed size (per window): nothing to grow. A JOBDIR file must have this
            # window, capacity and rate (`ValueError` otherwise).
            if self.path:
                self.seen = ExpiringBloomFilter.open_file(
                    self.path, capacity, fpr, expire_after=expire_after, arrival=arrival
                )
            else:
                self.seen = ExpiringBloomFilter(capacity, fpr, expire_after=expire_after, arrival=arrival)
        elif self.path:
            # An existing state keeps its own parameters.
            if os.path.exists(self.path):
                self.seen = GrowableBloomFilter.open_file(self.path)
            else:
                self.seen = GrowableBloomFilter.open_file(self.path, capacity, fpr)
        else:
            self.seen = GrowableBloomFilter(capacity, fpr)
        if path:
            # A crawl paused with Scrapy's own dupefilter resumes with this one.
            imported = import_scrapy_seen(self.seen, path, clock)
            if imported:
                self.logger.info("blockbloom: %d fingerprints from Scrapy's %s are in the filter", imported, SCRAPY_SEEN_FILE)
                if self.stats is not None:
                    self.stats.set_value("blockbloom/imported_fingerprints", imported)

    @classmethod
    def from_crawler(cls, crawler: Any) -> "BloomDupeFilter":
        """The filter Scrapy makes from its settings: ``BLOCKBLOOM_CAPACITY`` (the first
        layer's capacity) and ``BLOCKBLOOM_FPR`` (default 1e-5), ``DUPEFILTER_DEBUG``, and
        with ``JOBDIR`` a state file in the job directory (an existing one keeps its own
        capacity and rate); ``BLOCKBLOOM_EXPIRE_AFTER`` (seconds, or ``"30d"``, ``"12h"``;
        0 or unset: never forget) and ``BLOCKBLOOM_ARRIVAL`` for an expiring filter."""
        from scrapy.utils.job import job_dir

        s = crawler.settings
        return cls(
            job_dir(s),
            s.getbool("DUPEFILTER_DEBUG"),
            capacity=capacity_setting(s, DEFAULT_CAPACITY),
            fpr=s.getfloat("BLOCKBLOOM_FPR", DEFAULT_FPR),
            fingerprinter=crawler.request_fingerprinter,
            stats=crawler.stats,
            expire_after=expire_after_setting(s),
            clock=test_clock_setting(s),
            arrival=s.get("BLOCKBLOOM_ARRIVAL", "steady"),
        )

    def request_seen(self, request: Any) -> bool:
        """Whether a request with this fingerprint was seen before (in this crawl, or in
        the runs before it with the same ``JOBDIR``; with ``expire_after``, within that
        many seconds); records it if not.

        The filter makes room before each request (``try_reserve``). If it cannot grow
        (no space or permission for the next ``JOBDIR`` file, something in its way, no
        memory), the request is still checked, against a filter past its capacity whose
        rate rises above ``BLOCKBLOOM_FPR``: the cause is logged as an error once, and
        every request decided so is counted in the stat
        ``blockbloom/requests_past_capacity``. Growth is tried again every
        ``growth_retry_seconds`` (1 s), so the crawl recovers once the cause is removed."""
        fingerprint = self.fingerprinter.fingerprint(request)
        if isinstance(self.seen, ExpiringBloomFilter):
            new = self.seen.insert_if_absent(fingerprint, at=self.clock)
            self._check_rate_every(self.seen, self.clock)
            return not new
        if self._retry_growth_at is None or time.monotonic() >= self._retry_growth_at:
            try:
                self.seen.try_reserve(1)
                self._retry_growth_at = None
            except (OSError, MemoryError, ValueError) as cause:
                self._retry_growth_at = time.monotonic() + self.growth_retry_seconds
                self._past_capacity(cause)
        else:
            self._past_capacity(None)
        return not self.seen.insert_if_absent(fingerprint)

    def _past_capacity(self, cause: Optional[BaseException]) -> None:
        if self.stats is not None:
            self.stats.inc_value("blockbloom/requests_past_capacity")
        if cause is not None and not self._growth_warned:
            self._growth_warned = True
            self.logger.error(
                "blockbloom: the dupefilter cannot grow (%s): requests are now checked against "
                "a filter past its capacity, whose false-positive rate rises above %g, so new "
                "requests may be dropped as duplicates; each is counted in the stat "
                "blockbloom/requests_past_capacity",
                cause,
                self.seen.target_fpr,
            )

    def close(self, reason: str) -> None:
        """Writes a ``JOBDIR`` state to disk (``flush``); a state file is kept whatever
        the reason, so the next run with that ``JOBDIR`` resumes it. An expiring filter
        reports its rate (``blockbloom/estimated_fpr``, read every ``rate_check_every``
        requests too) and warns once it passes twice the target. The estimated number of
        new requests dropped as duplicates goes to the stats
        (``blockbloom/estimated_false_positives``) and the log."""
        if isinstance(self.seen, ExpiringBloomFilter):
            fpr = self._check_rate(self.seen, self.clock)
        else:
            fpr = self.seen.estimated_fpr()
        self._report_false_positives(self.seen.estimated_false_positives(), fpr)
        self.seen.flush()


class RedisBloomDupeFilter(_LogMixin, BaseDupeFilter):
    """A drop-in for ``scrapy_redis.dupefilter.RFPDupeFilter``: one blockbloom filter in
    Redis per spider (key ``SCHEDULER_DUPEFILTER_KEY``, default ``<spider>:dupefilter``),
    shared by every crawler process; at most one process enqueues any request.

    Requests are keyed by the crawler's request fingerprinter, or with ``fingerprint=
    "scrapy-redis"`` (``BLOCKBLOOM_FINGERPRINT``) by scrapy-redis' own hash: the set of
    fingerprints scrapy-redis' dupefilter left under the key is then put in the filter at
    the start (again only if it changed), so a crawl begun with it goes on without fetching
    those requests again. The filter records which hash it holds: a process set to the
    other is refused at its start (``ValueError``). Keyed by Scrapy's fingerprint, a warning
    at the start gives the size of a set it does not carry over. With
    ``expire_after`` (``BLOCKBLOOM_EXPIRE_AFTER``: seconds, or ``"30d"``) the filter is a
    ``RedisExpiringBloomFilter``: a request is a duplicate only if some process saw it
    within the last ``expire_after`` seconds (it is forgotten at most a third later with
    the server module, 25% later without it), and
    ``local_front`` is not used (a process's own memory would outlive the window)."""

    # A reading of the rate crosses the network: one per tenth of the capacity.
    rate_check_share = 10

    def __init__(
        self,
        url: str,
        key: str,
        debug: bool = False,
        *,
        capacity: int = 10 * DEFAULT_CAPACITY,
        fpr: float = DEFAULT_FPR,
        local_front: int = DEFAULT_LOCAL_FRONT,
        timeout: float = DEFAULT_REDIS_TIMEOUT,
        expire_after: Optional[float] = None,
        fingerprinter: Any = None,
        stats: Any = None,
        clock: Optional[float] = None,
        arrival: Literal["steady", "worst_burst"] = "steady",
        fingerprint: Literal["scrapy", "scrapy-redis"] = "scrapy",
    ) -> None:
        self._init_log(debug, stats)
        self.url, self.key = url, key
        self._arrival = arrival
        #: For tests: the time (seconds since 1970) an expiring filter works at, else now.
        self.clock = clock
        if fingerprint not in FINGERPRINTS:
            raise ValueError(f"fingerprint: {fingerprint!r} is neither \"scrapy\" nor \"scrapy-redis\"")
        self._fingerprint = fingerprint
        self.fingerprinter = ScrapyRedisFingerprinter() if fingerprint == "scrapy-redis" else fingerprinter
        self._params = (capacity, fpr, local_front or None, timeout, expire_after or None)
        # When the filter last recorded whose fingerprints it holds (an expiring one forgets it).
        self._marked_at = time.time() if clock is None else clock
        # While Redis cannot answer: the fingerprints let through meanwhile.
        self._failing = False
        self._let_through: set[bytes] = set()
        # Whether this process asked the filter anything, and reported its estimates.
        self._asked = self._reported = False
        self.seen: Optional[RedisBloomFilter | RedisExpiringBloomFilter] = self._open()
        if fingerprint == "scrapy-redis":
            _, imported = import_scrapy_redis_set(self.seen, url, key, timeout, clock)
            if imported:
                self.logger.info(
                    "blockbloom: %d fingerprints of scrapy-redis' set %s are in the filter; delete the set "
                    "to free its memory (kept, it is imported again at a start after it changed, and with "
                    "expiry a window later)",
                    imported,
                    key,
                )
                if self.stats is not None:
                    self.stats.set_value("blockbloom/imported_fingerprints", imported)
        elif left := scrapy_redis_set_size(url, key, timeout):
            self.logger.warning(NOT_CARRIED, key, left)
            if self.stats is not None:
                self.stats.set_value("blockbloom/scrapy_redis_fingerprints_not_carried", left)

    def _open(self) -> RedisBloomFilter | RedisExpiringBloomFilter:
        capacity, fpr, front, timeout, expire_after = self._params
        seen: RedisBloomFilter | RedisExpiringBloomFilter
        if expire_after:
            seen = RedisExpiringBloomFilter(
                self.url, self.key, capacity, fpr, expire_after=expire_after, timeout=timeout, arrival=self._arrival
            )
        else:
            seen = RedisBloomFilter(self.url, self.key, capacity, fpr, local_front=front, timeout=timeout)
        mark_fingerprint(seen, self._fingerprint, self.key, self.clock)
        if self.stats is not None:
            self.stats.set_value("blockbloom/redis_module", int(seen.uses_module))
        self.logger.info(
            "blockbloom: filter %r in Redis, through %s",
            self.key,
            "the blockbloom module" if seen.uses_module else "Redis Functions",
        )
        return seen

    @classmethod
    def from_crawler(cls, crawler: Any, spider_name: Optional[str] = None) -> "RedisBloomDupeFilter":
        """The filter for the crawler's spider (or ``spider_name``) on the Redis server
        scrapy-redis' scheduler uses (``redis_url``), under ``SCHEDULER_DUPEFILTER_KEY``,
        with ``BLOCKBLOOM_CAPACITY``, ``BLOCKBLOOM_FPR``, ``BLOCKBLOOM_LOCAL_FRONT``,
        ``BLOCKBLOOM_REDIS_TIMEOUT``, ``BLOCKBLOOM_EXPIRE_AFTER`` (seconds, or ``"30d"``,
        ``"12h"``; 0 or unset: never forget), ``BLOCKBLOOM_ARRIVAL``,
        ``BLOCKBLOOM_FINGERPRINT`` and ``DUPEFILTER_DEBUG``. A filter already in Redis with
        another capacity, rate or window (or one that expires, asked for one that does not,
        and the other way round) is a ``RedisError``, one keyed by the other fingerprint a
        ``ValueError``: the crawl does not start."""
        s = crawler.settings
        name = spider_name or (crawler.spider.name if crawler.spider else "scrapy")
        key = s.get("SCHEDULER_DUPEFILTER_KEY", "%(spider)s:dupefilter") % {"spider": name}
        df = cls(
            redis_url(s),
            key,
            s.getbool("DUPEFILTER_DEBUG"),
            capacity=capacity_setting(s, 10 * DEFAULT_CAPACITY),
            fpr=s.getfloat("BLOCKBLOOM_FPR", DEFAULT_FPR),
            local_front=s.getint("BLOCKBLOOM_LOCAL_FRONT", DEFAULT_LOCAL_FRONT),
            timeout=s.getfloat("BLOCKBLOOM_REDIS_TIMEOUT", DEFAULT_REDIS_TIMEOUT),
            expire_after=expire_after_setting(s),
            fingerprinter=crawler.request_fingerprinter,
            stats=crawler.stats,
            clock=test_clock_setting(s),
            arrival=s.get("BLOCKBLOOM_ARRIVAL", "steady"),
            fingerprint=fingerprint_setting(s),
        )
        # scrapy-redis' scheduler never calls `close`: report at the spider's close too.
        crawler.signals.connect(df.report_false_positives, signal=signals.spider_closed)
        return df

    @classmethod
    def from_spider(cls, spider: Any) -> "RedisBloomDupeFilter":
        """What scrapy-redis' scheduler calls (the key names the spider)."""
        return cls.from_crawler(spider.crawler, spider.name)

    def request_seen(self, request: Any) -> bool:
        """Whether another request with this fingerprint was seen, by any process.

        When Redis cannot answer (down, out of memory, or the connection dropped while the
        call was in flight, so it may or may not have been recorded), the request is taken
        as new: none is dropped by the filter, though another process may fetch it too.
        Until Redis answers again this process remembers what it let through, so it
        fetches nothing twice itself (a crawl does not loop while its filter is down). At
        the first such error the fingerprint is sent once more (a dropped connection is
        reopened), so that other processes see it; each request taken as new counts in
        the ``blockbloom/redis_errors`` stat, and the first of an outage is logged as an
        error."""
        fp = self.fingerprinter.fingerprint(request)
        self._asked = True
        if fp in self._let_through:
            return True
        try:
            seen = self._insert(fp)
        except RedisError as e:
            self._let_through.add(fp)
            if not self._failing:
                self._failing = True
                self.logger.error(
                    "blockbloom: Redis could not answer for %s (%s); requests are taken as new until it does",
                    self.key,
                    e,
                )
                try:
                    self._insert(fp)
                except RedisError:
                    pass
            if self.stats is not None:
                self.stats.inc_value("blockbloom/redis_errors")
            return False
        if isinstance(self.seen, RedisExpiringBloomFilter):
            try:
                self._check_rate_every(self.seen, self.clock)
                now = time.time() if self.clock is None else self.clock
                if now - self._marked_at >= self.seen.expire_after / 8:
                    self._marked_at = now
                    mark_fingerprint(self.seen, self._fingerprint, self.key, self.clock, check=False)
            except RedisError:
                pass  # a reading for the stats, or a record made again: the next one comes later
        if self._failing:
            self.logger.warning(
                "blockbloom: Redis answers again for %s (%d requests taken as new meanwhile)",
                self.key,
                len(self._let_through),
            )
            self._failing = False
            self._let_through.clear()
        return seen

    def _insert(self, fp: bytes) -> bool:
        """Inserts `fp`: whether it was there. Raises `RedisError` if Redis cannot answer."""
        if self.seen is None:
            self.seen = self._open()
        seen = self.seen
        if isinstance(seen, RedisExpiringBloomFilter):
            clock = self.clock
            claim = lambda: seen.insert_if_absent(fp, at=clock)  # noqa: E731
        else:
            claim = lambda: seen.insert_if_absent(fp)  # noqa: E731
        try:
            return not claim()
        except StateLost:
            # The filter in Redis was lost (restart, eviction, FLUSHALL) and is re-armed:
            # the request is decided again there (requests seen before may be fetched again).
            self.logger.warning("blockbloom: the filter %s in Redis was lost and re-armed", self.key)
            mark_fingerprint(seen, self._fingerprint, self.key, self.clock, check=False)
            return not claim()

    def clear(self) -> None:
        """Deletes the filter in Redis (scrapy-redis' scheduler calls it on close when
        ``SCHEDULER_PERSIST`` is false, and on start with ``SCHEDULER_FLUSH_ON_START``); the
        next request opens an empty one. At the end of a crawl its estimates are reported
        first (``report_false_positives``). Keyed by scrapy-redis' hash, scrapy-redis' set
        under the key is deleted too, as its own dupefilter's ``clear`` deletes it."""
        self.report_false_positives()
        self.seen = None
        RedisBloomFilter.delete(self.url, self.key)
        if self._fingerprint == "scrapy-redis":
            delete_scrapy_redis_set(self.url, self.key, self._params[3])

    def report_false_positives(self, *_: Any, **__: Any) -> None:
        """Once per crawl that asked the filter anything: the shared filter's estimated new
        requests dropped as duplicates so far (by every process) to the stat
        ``blockbloom/estimated_false_positives`` and the log, with its current rate. Called
        by ``close`` (Scrapy's scheduler), ``clear`` (scrapy-redis' at the end of a crawl
        that does not persist) and the ``spider_closed`` signal (scrapy-redis' scheduler
        calls neither when it persists). If Redis cannot answer, a warning says so."""
        if self._reported or not self._asked or self.seen is None:
            return
        self._reported = True
        try:
            if isinstance(self.seen, RedisExpiringBloomFilter):
                fpr = self._check_rate(self.seen, self.clock)
            else:
                fpr = self.seen.estimated_fpr()
            self._report_false_positives(self.seen.estimated_false_positives(), fpr)
        except RedisError as e:
            self.logger.warning("blockbloom: no estimates from Redis for %s (%s)", self.key, e)

    def close(self, reason: str = "") -> None:
        """Reports the estimates (``report_false_positives``); every answer is already in
        Redis (scrapy-redis' scheduler calls ``clear`` itself when ``SCHEDULER_PERSIST`` is
        false)."""
        self.report_false_positives()
