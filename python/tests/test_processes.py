"""Filters used by several processes: multiprocessing pools (fork and spawn), pickling,
copying, and errors raised in a worker."""

import copy
import multiprocessing as mp
import os
import pickle
import subprocess
import sys

import pytest

import blockbloom
from blockbloom import BloomFilter, GrowableBloomFilter, RedisBloomFilter, RedisError, SnapshotError, StateLost

KEYS = [f"https://example.org/doc/{i}" for i in range(3000)]
INHERITED = None  # a filter forked workers inherit


def winners(f, keys):
    """The keys this process inserted first (a worker task)."""
    return [k for k in keys if f.insert_if_absent(k)]


def winners_batch(f, keys):
    return [k for k, new in zip(keys, f.insert_if_absent_many(keys)) if new]


def open_conflicting(url):
    """A worker task that fails: the filter exists with other parameters."""
    RedisBloomFilter(url, "shared", 2_000_000, 1e-6)


def exactly_once(results, keys):
    won = [k for r in results for k in r]
    assert sorted(won) == sorted(keys), "every key won exactly once across the processes"


@pytest.mark.parametrize("exc", [SnapshotError, RedisError, StateLost])
def test_exceptions_pickle(exc):
    assert exc.__module__ == "blockbloom" and getattr(blockbloom, exc.__name__) is exc
    e = pickle.loads(pickle.dumps(exc("what went wrong")))
    assert type(e) is exc and str(e) == "what went wrong"


def test_file_backed_filter_pickles_as_its_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = BloomFilter.open_file("seen.bloom", 100_000, 0.001)  # a relative path
    f.add("a")
    monkeypatch.chdir("/")
    g = pickle.loads(pickle.dumps(f))  # another working directory: the same file
    assert g.is_file_backed and "a" in g
    assert g.insert_if_absent("b") and "b" in f  # shared, not a copy
    c = copy.copy(f)
    d = copy.deepcopy(f)
    assert not c.is_file_backed and not d.is_file_backed and "a" in c and "b" in d
    assert c.insert_if_absent("c") and "c" not in f and "c" not in d  # copies are private
    m = BloomFilter(1000, 0.01)
    m.add("x")
    assert not pickle.loads(pickle.dumps(m)).is_file_backed  # in memory: its contents

    grow = GrowableBloomFilter.open_file(tmp_path / "grow.bloom", 1000, 0.01)
    grow.add("a")
    again = pickle.loads(pickle.dumps(grow))
    assert again.is_file_backed and "a" in again and again.insert_if_absent("b") and "b" in grow
    with pytest.raises(TypeError, match="open_file"):
        pickle.dumps(GrowableBloomFilter())


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pool_workers_share_a_file_backed_filter(tmp_path, method):
    # The filter is an argument of every task: pickled for the pool, unpickled in the
    # worker as the same file. Every task offers every key; each key wins exactly once.
    # Exactly once needs no key to be a false positive (taken for a repeat by every
    # process): the growable chain is asked for 1e-9, so that of its 2,000 keys past the
    # first full layer one is a false positive with a chance of about 10^-6 per run. At
    # 1e-6 it was about 10^-3, and a CI run met it: a one-process replay of that chain's
    # seed took the same key for a repeat.
    f = BloomFilter.open_file(tmp_path / "seen.bloom", 1_000_000, 1e-6)
    g = GrowableBloomFilter.open_file(tmp_path / "grow.bloom", 1000, 1e-9)
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        exactly_once(pool.starmap(winners, [(f, KEYS)] * 4), KEYS)
        exactly_once(pool.starmap(winners_batch, [(g, KEYS)] * 4), KEYS)
    assert all(f.contains_many(KEYS)) and all(g.contains_many(KEYS))


def winners_inherited(keys):
    """A worker task on the filter the forked worker inherited (not pickled to it)."""
    return winners(INHERITED, keys)


def test_forked_workers_open_their_own_redis_connection(redis_url):
    # Connected before the fork, and used by the workers as a global they inherit (a task's
    # arguments are pickled even under fork, which connects afresh): each worker must open
    # its own connection, or replies meant for one process are read by another (wrong
    # answers, or errors), while the parent keeps using its connection at the same time.
    global INHERITED
    INHERITED = f = RedisBloomFilter(redis_url, "shared", 1_000_000, 1e-6)
    assert f.insert_if_absent("parent:0")
    ctx = mp.get_context("fork")
    with ctx.Pool(3) as pool:
        pending = pool.map_async(winners_inherited, [KEYS] * 6)
        mine = [f.insert_if_absent(f"parent:{i}") for i in range(1, 3000)]
        exactly_once(pending.get(timeout=120), KEYS)
        assert all(mine)
        assert not any(f.insert_if_absent_many(KEYS))
        batch = [f"b{i}" for i in range(2000)]
        exactly_once(pool.starmap(winners_batch, [(f, batch)] * 4), batch)  # pickled to them


def test_redis_filter_pickles_as_its_arguments(redis_url):
    f = RedisBloomFilter(redis_url, "shared", 1_000_000, 1e-6, local_front=10_000)
    g = pickle.loads(pickle.dumps(f))
    assert g.insert_if_absent("k") and not f.insert_if_absent("k") and g.round_trips == 1
    ctx = mp.get_context("spawn")
    with ctx.Pool(2) as pool:
        exactly_once(pool.starmap(winners, [(f, KEYS)] * 3), KEYS)
        # An error in a worker reaches the parent as the same exception class.
        with pytest.raises(RedisError):
            pool.apply(open_conflicting, (redis_url,))


OPEN_AND_ADD = """
import sys
from blockbloom import BloomFilter
f = BloomFilter.open_file(sys.argv[1])
f.add(sys.argv[2])
"""


def test_a_forked_child_closing_first_leaves_the_file_to_its_parent(tmp_path):
    # After os.fork both processes hold the filter; the child drops its copy first. The
    # parent still has the file open, so the child must neither seal it nor leave it locked
    # in a way that blocks every other process's open_file.
    path = tmp_path / "seen.bloom"
    f = BloomFilter.open_file(path, 100_000, 0.01)
    f.add("before the fork")
    pid = os.fork()
    if pid == 0:
        ok = f.insert_if_absent("from the child")
        del f  # closes the child's handle
        os._exit(0 if ok else 1)
    assert os.waitpid(pid, 0)[1] == 0
    assert "from the child" in f and f.insert_if_absent("after the child closed")
    # another process opens the file while the parent has it: no wait, the same bits
    subprocess.run([sys.executable, "-c", OPEN_AND_ADD, str(path), "from another process"], check=True, timeout=30)
    assert "from another process" in f
    with pytest.raises(SnapshotError, match="in use"):
        BloomFilter.load(path)  # not sealed while the parent has it open
    del f
    sealed = BloomFilter.load(path)
    assert all(k in sealed for k in ["before the fork", "from the child", "after the child closed", "from another process"])


FULL_DISK = """
import errno, os, sys
from blockbloom import BloomFilter, GrowableBloomFilter
d = sys.argv[1]
try:
    BloomFilter.open_file(os.path.join(d, "big.bloom"), 10_000_000, 0.01)
    sys.exit("a 12 MB filter opened on a 1 MiB file system")
except OSError as e:
    assert e.errno == errno.ENOSPC and "big.bloom" in str(e), e
assert os.listdir(d) == [], os.listdir(d)
f = BloomFilter.open_file(os.path.join(d, "seen.bloom"), 500_000, 0.01)
filler = os.open(os.path.join(d, "filler"), os.O_WRONLY | os.O_CREAT)
try:  # the disk fills up
    while True:
        os.write(filler, b"x" * 4096)
except OSError as e:
    assert e.errno == errno.ENOSPC, e
os.close(filler)
keys = [f"https://example.org/{i}" for i in range(500_000)]
assert sum(f.insert_if_absent_many(keys)) > 495_000  # no SIGBUS: its blocks were reserved
del f
assert all(BloomFilter.load(os.path.join(d, "seen.bloom")).contains_many(keys))
os.remove(os.path.join(d, "filler"))
g = GrowableBloomFilter.open_file(os.path.join(d, "grow.bloom"), 10_000, 0.01)
assert not g.growth_failed
g.update(f"https://example.org/g/{i}" for i in range(1_000_000))  # outgrows the disk
assert g.growth_failed
assert all(g.contains_many([f"https://example.org/g/{i}" for i in range(1_000_000)]))
del g
for name in os.listdir(d):
    os.remove(os.path.join(d, name))

# The Scrapy dupefilter's JOBDIR state: an error logged once when it cannot grow.
import logging
from blockbloom.scrapy import BloomDupeFilter
class Fingerprints:
    def fingerprint(self, request):
        return request.encode()
warnings = []
handler = logging.Handler()
handler.emit = lambda record: warnings.append(record.getMessage())
logging.getLogger("blockbloom.scrapy").addHandler(handler)
df = BloomDupeFilter(d, capacity=10_000, fpr=0.01, fingerprinter=Fingerprints())
assert [df.request_seen(f"r{i}") for i in range(2)] == [False, False]
assert not warnings
for i in range(2, 1_000_000):  # outgrows the disk; once past that, more are taken as seen
    df.request_seen(f"r{i}")
assert len(warnings) == 1 and "cannot grow" in warnings[0] and "blockbloom.seen" in warnings[0], warnings
df.close("finished")
print("ok")
"""


def test_a_full_disk_raises_instead_of_killing_the_interpreter(tmp_path):
    # A 1 MiB tmpfs in a mount namespace of its own. Writing through the mapping to a page
    # the file system has no room for is SIGBUS; the filter reserves its file's blocks when
    # it opens it, so a full disk is an OSError there (ENOSPC), never a dead interpreter.
    unshare = ["unshare", "--mount", "--propagation", "private"]
    probe = subprocess.run([*unshare, "mount", "-t", "tmpfs", "tmpfs", "/mnt"], capture_output=True)
    if probe.returncode != 0:
        if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
            pytest.fail("cannot mount a tmpfs in a mount namespace (unshare, mount: root needed)")
        pytest.skip("cannot mount a tmpfs in a mount namespace")
    script = 'mount -t tmpfs -o size=1m tmpfs "$1" && exec "$2" -c "$3" "$1"'
    r = subprocess.run(
        [*unshare, "sh", "-c", script, "sh", str(tmp_path), sys.executable, FULL_DISK],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and r.stdout == "ok\n", (r.returncode, r.stdout, r.stderr)
