"""The Python API of blockbloom: answers, errors, persistence, pickling, threads."""

import os
import pickle
import threading
import time

import pytest

import blockbloom
from blockbloom import BloomFilter, ExpiringBloomFilter, GrowableBloomFilter, SnapshotError


def urls(a, b):
    return [f"https://example.com/page/{i}" for i in range(a, b)]


def test_answers_and_no_false_negatives():
    f = BloomFilter(100_000, 0.01)
    keys = urls(0, 50_000)
    fresh = sum(f.insert_if_absent(k) for k in keys)
    assert fresh >= 50_000 - 600  # all but a few false positives
    assert all(k in f for k in keys)
    assert not any(f.insert_if_absent(k) for k in keys)
    fp = sum(k in f for k in urls(10**6, 10**6 + 50_000))
    assert fp < 50_000 * 0.01 * 1.5
    assert f.capacity == 100_000 and f.target_fpr == 0.01
    assert f.num_hashes == 6 and f.num_bits >= 9.9 * 100_000  # 9.92 bits per key at 1%
    assert 45_000 < f.estimated_len() < 55_000
    assert 0 < f.estimated_fpr() < 0.01


def test_str_and_bytes_are_the_same_key():
    f = BloomFilter(1000, 0.001)
    assert f.insert_if_absent("héllo")
    assert not f.insert_if_absent("héllo".encode())
    assert b"h\xc3\xa9llo" in f
    with pytest.raises(TypeError):
        f.insert_if_absent(42)
    with pytest.raises(TypeError):
        f.insert_if_absent_many(["a", 1])

    class Text(str):
        pass

    class Data(bytes):
        pass

    # Subclasses of str and bytes are the same keys as their values, one at a time and in
    # batches (whose exact-type shortcut they miss).
    assert not f.insert_if_absent(Text("héllo"))
    assert f.contains_many([Text("héllo"), Data(b"h\xc3\xa9llo"), Text("other")]) == [
        True,
        True,
        False,
    ]
    # A str with no UTF-8 form (a lone surrogate) is refused, exact str or subclass, one at
    # a time and in batches, in every filter that reads keys.
    from blockbloom import GrowableBloomFilter

    g = GrowableBloomFilter()
    for bad in ("\ud800", Text("\ud800")):
        for call in (
            lambda: f.insert_if_absent(bad),
            lambda: bad in f,
            lambda: f.contains_many(["a", bad]),
            lambda: g.insert_if_absent(bad),
            lambda: g.insert_if_absent_many(["a", bad]),
        ):
            with pytest.raises(UnicodeEncodeError):
                call()
    assert g.insert_if_absent_many(["héllo", Text("héllo"), Data(b"h\xc3\xa9llo")]) == [
        True,
        False,
        False,
    ]


def test_batches_answer_like_one_call_at_a_time():
    keys = urls(0, 20_000) + urls(0, 5_000) + [b"bytes-key", "bytes-key"]
    a, b = BloomFilter(50_000, 0.01, seed=7), BloomFilter(50_000, 0.01, seed=7)
    assert a.insert_if_absent_many(keys) == [b.insert_if_absent(k) for k in keys]
    assert a.contains_many(keys) == [k in b for k in keys]
    assert a.to_bytes() == b.to_bytes()
    # Mostly absent keys (the answers list starts from the majority answer, False here),
    # and no keys at all.
    mixed = urls(10**6, 10**6 + 300) + keys[:100]
    assert a.contains_many(mixed) == [k in b for k in mixed]
    assert a.contains_many(mixed).count(True) >= 100
    assert a.insert_if_absent_many([]) == [] and a.contains_many(()) == []
    c = BloomFilter(50_000, 0.01, seed=7)
    c.update(iter(keys))  # any iterable
    assert c.to_bytes() == a.to_bytes()


def test_growable_batches_answer_like_one_call_at_a_time_across_growth():
    keys = urls(0, 20_000) + urls(0, 5_000) + [b"bytes-key", "bytes-key"]
    a, b = GrowableBloomFilter(1000, 0.01, seed=7), GrowableBloomFilter(1000, 0.01, seed=7)
    assert a.insert_if_absent_many(keys) == [b.insert_if_absent(k) for k in keys]
    assert a.num_layers == b.num_layers > 3 and a.seed == b.seed == 7
    assert GrowableBloomFilter().seed != GrowableBloomFilter().seed  # random by default
    mixed = urls(10**6, 10**6 + 300) + keys
    assert a.contains_many(mixed) == [k in b for k in mixed]
    assert a.contains_many(tuple(keys)) == [True] * len(keys)
    c = GrowableBloomFilter(1000, 0.01, seed=7)
    c.update(k for k in keys)  # any iterable
    assert c.contains_many(keys) == [True] * len(keys) and c.num_layers == a.num_layers
    # A bad key anywhere raises before any key is inserted.
    d = GrowableBloomFilter(1000, 0.01, seed=7)
    for bad in (keys + [42], tuple(keys) + (None,), keys + ["\ud800"]):
        with pytest.raises((TypeError, UnicodeEncodeError)):
            d.insert_if_absent_many(bad)
        with pytest.raises((TypeError, UnicodeEncodeError)):
            d.update(bad)
    assert d.estimated_len() == 0 and d.num_layers == 1 and not any(d.contains_many(keys))


def test_a_bad_key_leaves_the_filter_untouched():
    """Every key of a batch is read before any is inserted: a bad key anywhere (here far
    past the first thousands) raises and inserts nothing, so no answer is lost."""
    f = BloomFilter(100_000, 0.01, seed=3)
    empty = f.to_bytes()
    good = urls(0, 50_000)

    def failing():
        yield from good
        raise RuntimeError("the source broke")

    for bad in (good + [42], tuple(good) + (None,), good + ["\ud800"]):
        with pytest.raises((TypeError, UnicodeEncodeError)):
            f.insert_if_absent_many(bad)
        with pytest.raises((TypeError, UnicodeEncodeError)):
            f.update(bad)
    with pytest.raises(RuntimeError):
        f.insert_if_absent_many(failing())
    assert f.to_bytes() == empty
    # The same keys as a list, a tuple and a generator give the same answers.
    answers = f.insert_if_absent_many(good)
    g, h = BloomFilter(100_000, 0.01, seed=3), BloomFilter(100_000, 0.01, seed=3)
    assert g.insert_if_absent_many(tuple(good)) == answers
    assert h.insert_if_absent_many(k for k in good) == answers
    assert f.contains_many(good) == [True] * len(good)


def huge_page_advised_kib():
    """The sizes (KiB) of this process's mappings marked MADV_HUGEPAGE (VmFlags `hg`)."""
    sizes, size = [], None
    with open("/proc/self/smaps") as f:
        for line in f:
            if line.startswith("Size:"):
                size = int(line.split()[1])
            elif line.startswith("VmFlags:") and "hg" in line.split()[1:]:
                sizes.append(size)
    return sizes


@pytest.mark.skipif(
    not os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"),
    reason="transparent huge pages are Linux's, and this kernel has none",
)
def test_huge_pages_are_asked_for_the_filter_s_memory():
    """huge_pages=True marks the filter's own mapping MADV_HUGEPAGE (and only with it);
    the answers are those of the same filter on 4 KiB pages."""
    before = huge_page_advised_kib()
    plain = BloomFilter(10_000_000, 0.01, seed=9)
    assert huge_page_advised_kib() == before
    huge = BloomFilter(10_000_000, 0.01, seed=9, huge_pages=True)
    assert huge.memory_bytes >= 2 << 20
    new = list(huge_page_advised_kib())
    for s in before:
        new.remove(s)
    assert new == [-(-huge.memory_bytes // 4096) * 4]  # whole 4 KiB pages
    keys = urls(0, 20_000)
    assert huge.insert_if_absent_many(keys) == plain.insert_if_absent_many(keys)
    assert huge.to_bytes() == plain.to_bytes()
    del huge
    assert huge_page_advised_kib() == before


@pytest.mark.skipif(
    not os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"),
    reason="transparent huge pages are Linux's, and this kernel has none",
)
def test_an_expiring_filter_asks_for_huge_pages_unless_told_not_to():
    """ExpiringBloomFilter's default (huge_pages=None, as True) marks its mapping
    MADV_HUGEPAGE at construction; huge_pages=False does not; the answers are the same."""
    before = huge_page_advised_kib()
    small = ExpiringBloomFilter(1_000_000, 0.01, expire_after=3600, seed=9, huge_pages=False)
    assert huge_page_advised_kib() == before
    huge = ExpiringBloomFilter(1_000_000, 0.01, expire_after=3600, seed=9)
    assert huge.memory_bytes >= 2 << 20
    new = list(huge_page_advised_kib())
    for s in before:
        new.remove(s)
    assert new == [-(-huge.memory_bytes // 4096) * 4]  # whole 4 KiB pages
    keys, t = urls(0, 20_000), time.time()
    assert huge.insert_if_absent_many(keys, at=t) == small.insert_if_absent_many(keys, at=t)
    assert huge.to_bytes() == small.to_bytes()
    explicit = ExpiringBloomFilter(1_000_000, 0.01, expire_after=3600, seed=9, huge_pages=True)
    # (Two advised mappings side by side may be merged into one.)
    assert sum(huge_page_advised_kib()) == sum(before) + 2 * new[0]
    del huge, explicit
    assert huge_page_advised_kib() == before


def test_block_bits(tmp_path):
    """block_bits= picks the block size: the same answers, more bits per key when smaller,
    recorded in saved and file-backed state; anything but 64/128/256/512 is a ValueError."""
    keys = urls(0, 20_000)
    sizes = {}
    for bits in (64, 128, 256, 512):
        f = BloomFilter(20_000, 0.01, seed=5, block_bits=bits)
        assert f.block_bits == bits
        assert sum(f.insert_if_absent_many(keys)) > 20_000 * 0.98
        assert all(k in f for k in keys)
        assert BloomFilter.from_bytes(f.to_bytes()).block_bits == bits
        assert pickle.loads(pickle.dumps(f)).to_bytes() == f.to_bytes()
        sizes[bits] = f.num_bits
    assert sizes[64] > sizes[128] > sizes[256] > sizes[512]
    assert BloomFilter(20_000, 0.01).block_bits == 512
    with pytest.raises(ValueError):
        BloomFilter(100, 0.01, block_bits=100)
    path = tmp_path / "seen.bloom"
    f = BloomFilter.open_file(path, 10_000, 0.01, block_bits=64)
    f.add("x")
    f.flush()
    g = BloomFilter.open_file(path)
    assert g.block_bits == 64 and "x" in g
    with pytest.raises(ValueError):
        BloomFilter.open_file(path, block_bits=64)  # an existing file keeps its own


def test_bad_parameters_are_value_errors():
    for args in [(0, 0.01), (100, 0.0), (100, 1.0), (100, 2.0)]:
        with pytest.raises(ValueError):
            BloomFilter(*args)
    with pytest.raises(ValueError):
        GrowableBloomFilter(0, 0.01)
    with pytest.raises(ValueError):
        BloomFilter(100, 0.01, seed=1).union(BloomFilter(200, 0.01, seed=1))
    # Negative or too large integers are ValueErrors too, not OverflowErrors (which an
    # `except ValueError` would not catch), and a wrong type stays a TypeError.
    from blockbloom import AtomicBitSet, CountingBloomFilter

    bad = [
        lambda: BloomFilter(-1, 0.01),
        lambda: BloomFilter(10**30, 0.01),
        lambda: BloomFilter(100, 0.01, seed=-1),
        lambda: BloomFilter(100, 0.01, seed=2**128),
        lambda: BloomFilter(100, 0.01, block_bits=-512),
        lambda: BloomFilter.open_file("never-created.bloom", -5),
        lambda: GrowableBloomFilter(-1),
        lambda: CountingBloomFilter(-1, 0.01),
        lambda: AtomicBitSet(-1),
        lambda: AtomicBitSet(10).insert_if_absent(-1),
        lambda: AtomicBitSet(10).remove(2**64),
        # Checked before any connection is tried.
        lambda: blockbloom.RedisBloomFilter("redis://127.0.0.1:1/", "k", -1),
    ]
    for call in bad:
        with pytest.raises(ValueError, match="out of range"):
            call()
    with pytest.raises(TypeError):
        BloomFilter("many", 0.01)
    bits = AtomicBitSet(10)
    bits.add(3)
    assert 3 in bits and -1 not in bits and 2**70 not in bits and "3" not in bits


def test_save_load_pickle_union(tmp_path):
    f = BloomFilter(10_000, 0.01, seed=3)
    f.update(urls(0, 1000))
    p = tmp_path / "f.bloom"
    f.save(p)
    g = BloomFilter.load(str(p))
    assert all(k in g for k in urls(0, 1000))
    h = pickle.loads(pickle.dumps(f))
    assert h.to_bytes() == f.to_bytes()
    other = BloomFilter(10_000, 0.01, seed=3)
    other.update(urls(1000, 2000))
    f |= other
    assert all(k in f for k in urls(0, 2000))


def test_set_operations_seed_and_clear(tmp_path):
    """|, &, |=, &=, intersect and clear, as on a Python set; seed makes a filter they
    accept; an incompatible filter is a ValueError and changes nothing."""
    a = BloomFilter(10_000, 0.01)
    b = BloomFilter(10_000, 0.01, seed=a.seed)
    assert 0 <= a.seed < 2**128 and b.seed == a.seed
    a.update(urls(0, 2000))
    b.update(urls(1000, 3000))
    before = a.to_bytes()
    both, common = a | b, a & b
    assert a.to_bytes() == before  # | and & make new filters
    assert all(k in both for k in urls(0, 3000))
    assert all(k in common for k in urls(1000, 2000))
    assert sum(k in common for k in urls(0, 1000)) < 50  # only false positives
    c = BloomFilter.open_file(tmp_path / "c.bloom", 10_000, 0.01)
    with pytest.raises(ValueError):
        a.intersect(c)  # another seed
    with pytest.raises(ValueError):
        a | BloomFilter(20_000, 0.01, seed=a.seed)
    with pytest.raises(TypeError):
        a | {"https://example.com/"}
    assert a.to_bytes() == before
    a &= b
    assert a.to_bytes() == common.to_bytes()
    a.intersect(b)
    assert a.to_bytes() == common.to_bytes()
    c.update(urls(0, 100))
    c.clear()
    c.flush()
    assert not any(k in BloomFilter.open_file(tmp_path / "c.bloom") for k in urls(0, 100))
    assert c.estimated_len() == 0


def test_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        BloomFilter.load(tmp_path / "missing.bloom")
    with pytest.raises(OSError):
        BloomFilter.open_file(tmp_path / "no" / "dir" / "f.bloom", 1000, 0.01)
    bad = tmp_path / "bad.bloom"
    bad.write_bytes(b"not a filter at all" * 10)
    with pytest.raises(SnapshotError):
        BloomFilter.load(bad)
    f = BloomFilter(1000, 0.01)
    f.save(bad)
    data = bytearray(bad.read_bytes())
    data[100] ^= 1
    bad.write_bytes(bytes(data))
    with pytest.raises(SnapshotError):
        BloomFilter.load(bad)
    with pytest.raises(SnapshotError):
        BloomFilter.from_bytes(b"")


@pytest.mark.parametrize("kind", ["fixed", "growing", "expiring"])
def test_a_damaged_file_is_refused_and_left_as_it_was(tmp_path, kind):
    """Each byte of the header (and a byte of the lines) of a closed file damaged: every
    open_file raises SnapshotError, an OSError, and changes no byte; verify=False still
    checks the header."""
    path = tmp_path / "s.bloom"
    opens = {
        "fixed": (lambda **kw: BloomFilter.open_file(path, 1000, 0.01, **kw), lambda **kw: BloomFilter.open_file(path, **kw)),
        "growing": (lambda **kw: GrowableBloomFilter.open_file(path, 1000, 0.01, **kw), lambda **kw: GrowableBloomFilter.open_file(path, **kw)),
        "expiring": (lambda **kw: ExpiringBloomFilter.open_file(path, 1000, 0.01, expire_after=3600, **kw), lambda **kw: ExpiringBloomFilter.open_file(path, **kw)),
    }[kind]
    f = opens[0]()
    f.update([f"k{i}" for i in range(300)])
    del f
    good = path.read_bytes()
    for at in list(range(128)) + [128, len(good) // 2]:
        if at == 44:
            continue  # the in-use flag: a file whose last user was killed opens
        bad = bytearray(good)
        bad[at] ^= 0x10
        path.write_bytes(bytes(bad))
        for open_ in opens:
            for verify in ([True, False] if at < 128 else [True]):
                with pytest.raises(OSError) as e:
                    open_(verify=verify)
                assert isinstance(e.value, SnapshotError), (at, e.value)
                assert path.read_bytes() == bytes(bad), at
    path.write_bytes(good)
    assert "k7" in opens[1]()


def test_file_backed_filters_share_bits(tmp_path):
    p = tmp_path / "seen.bloom"
    a = BloomFilter.open_file(p, 100_000, 0.01)
    b = BloomFilter.open_file(p)  # the file's own parameters
    assert a.is_file_backed and b.capacity == 100_000
    assert a.insert_if_absent("k") and not b.insert_if_absent("k")
    with pytest.raises(ValueError):
        BloomFilter.open_file(p, 200_000, 0.01)  # other parameters: a conflict
    g = GrowableBloomFilter.open_file(tmp_path / "grow.bloom", 1000, 0.01)
    assert sum(g.insert_if_absent_many(urls(0, 10_000))) > 9_900
    assert g.num_layers >= 4 and (tmp_path / "grow.bloom.3").exists()
    again = GrowableBloomFilter.open_file(tmp_path / "grow.bloom")
    assert not any(again.insert_if_absent_many(urls(0, 10_000)))


def test_batches_release_the_gil():
    """Another Python thread runs while a batch is in Rust: with the GIL held it could
    not advance at all during the call."""
    f = BloomFilter(3_000_000, 0.01)
    keys = [b"%d" % i for i in range(2_000_000)]
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = count[0]
        f.insert_if_absent_many(keys)
        during = count[0] - before
    finally:
        stop.set()
        t.join()
    assert during > 10_000, during


CHURN = """
import os, threading
from blockbloom import BloomFilter
keys = [os.urandom(1 << 18) for _ in range(64)]
f = BloomFilter(10_000, 0.01)
stop = threading.Event()
replaced = 0

def churn():
    global replaced
    while not stop.is_set():
        keys[replaced % len(keys)] = os.urandom(1 << 18)
        replaced += 1

t = threading.Thread(target=churn)
t.start()
for _ in range(40):
    assert len(f.insert_if_absent_many(keys)) == len(keys)
stop.set()
t.join()
assert replaced > 0
print("ok", replaced)
"""


def test_a_list_changed_by_another_thread_during_a_batch():
    """A batch reads its keys' bytes with the GIL released while another thread replaces
    the list's items: it must keep each chunk's objects alive meanwhile. With glibc told to
    give every key of 256 KiB its own memory mapping, reading a key after the list dropped
    it is a segmentation fault, not a silent wrong hash."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536")
    run = subprocess.run([sys.executable, "-c", CHURN], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("ok")


def test_module_surface():
    for name in ["AtomicBitSet", "CountingBloomFilter", "BloomFilter", "GrowableBloomFilter", "RedisBloomFilter", "SnapshotError", "RedisError", "StateLost"]:
        assert hasattr(blockbloom, name)
    assert issubclass(blockbloom.RedisError, ConnectionError)
    assert issubclass(blockbloom.StateLost, blockbloom.RedisError)


def test_docstrings_and_their_examples():
    """help() documents every public method and property of every class, and the examples
    in the docstrings give what they show (doctest)."""
    import doctest

    classes = [
        BloomFilter,
        GrowableBloomFilter,
        blockbloom.CountingBloomFilter,
        blockbloom.AtomicBitSet,
        blockbloom.RedisBloomFilter,
    ]
    undocumented = [
        f"{c.__name__}.{name}"
        for c in classes
        for name, attr in vars(c).items()
        if not name.startswith("_") and not (attr.__doc__ or "").strip()
    ]
    assert undocumented == []
    assert all(len(c.__doc__) > 200 for c in classes)
    try:
        import blockbloom.scrapy as dupefilters
    except ImportError:  # Scrapy is optional
        pass
    else:
        for c in (dupefilters.BloomDupeFilter, dupefilters.RedisBloomDupeFilter):
            for name in ("from_crawler", "request_seen", "close"):
                assert getattr(c, name).__doc__, f"{c.__name__}.{name}"
    result = doctest.testmod(blockbloom)
    assert result.failed == 0 and result.attempted >= 15, result


def test_version_and_reprs(tmp_path):
    import importlib.metadata

    from blockbloom import AtomicBitSet, CountingBloomFilter, GrowableBloomFilter

    # One version: the Rust crate's (Cargo.toml), the wheel's (pyproject.toml).
    assert blockbloom.__version__ == importlib.metadata.version("blockbloom")
    assert repr(BloomFilter(1000, 0.01)) == (
        "BloomFilter(capacity=1000, fpr=0.01, num_bits=10240, file_backed=False)"
    )
    small = BloomFilter(1000, 0.01, block_bits=64)
    assert f"num_bits={small.num_bits}, block_bits=64, file_backed=False)" in repr(small)
    shared = BloomFilter.open_file(str(tmp_path / "f.bloom"), 1000, 0.01)
    assert repr(shared).endswith("file_backed=True)")
    assert repr(GrowableBloomFilter(5000, 0.001)) == (
        "GrowableBloomFilter(initial_capacity=5000, fpr=0.001, num_layers=1)"
    )
    c = CountingBloomFilter(1000, 0.01)
    assert repr(c) == f"CountingBloomFilter(capacity=1000, fpr=0.01, memory_bytes={c.memory_bytes})"
    s = AtomicBitSet(100)
    s.add(3)
    s.add(70)
    assert repr(s) == "AtomicBitSet(universe=100, len=2)"


def test_defaults_are_the_signatures():
    """The defaults the signatures show (help(), the stubs, which stubtest checks against
    them) are the ones the constructors use."""
    import inspect

    for cls, made in [
        (BloomFilter, BloomFilter(1000)),
        (GrowableBloomFilter, GrowableBloomFilter()),
        (blockbloom.CountingBloomFilter, blockbloom.CountingBloomFilter(1000)),
    ]:
        params = inspect.signature(cls).parameters
        for name, p in params.items():
            # (seed=None: a random seed, which the filter's seed then shows.)
            if p.default not in (inspect.Parameter.empty, None) and hasattr(made, name):
                assert getattr(made, name) == p.default, (cls.__name__, name)
    assert "fpr" in inspect.signature(BloomFilter).parameters
    assert BloomFilter(1000).block_bits == 512 and BloomFilter(1000).target_fpr == 0.01
    assert GrowableBloomFilter().initial_capacity == 100_000


def test_estimated_false_positives_within_30_percent_of_the_count():
    from datetime import timedelta

    import blockbloom

    filters = {
        "BloomFilter": blockbloom.BloomFilter(100_000, 0.01),
        "GrowableBloomFilter": blockbloom.GrowableBloomFilter(1_000, 0.01),
        "CountingBloomFilter": blockbloom.CountingBloomFilter(100_000, 0.01),
        "ExpiringBloomFilter": blockbloom.ExpiringBloomFilter(50_000, 0.01, expire_after=timedelta(days=1)),
    }
    keys = [f"https://example.com/{i}" for i in range(100_000)]
    for name, f in filters.items():
        assert f.estimated_false_positives() == 0.0
        lost = sum(1 for won in f.insert_if_absent_many(keys) if not won)
        estimate = f.estimated_false_positives()
        print(f"{name}: {lost} taken for repeats, estimated {estimate:.1f}")
        assert lost > 100 and 0.7 * lost <= estimate <= 1.3 * lost, name


def test_a_full_filter_says_its_estimates_are_unbounded():
    """A thousand times its capacity sets every bit: the fill bounds no count, so the
    estimates are 2**64 - 1 keys and inf lost (they read 1.8e21 and 0 before)."""
    from datetime import timedelta

    import blockbloom

    filters = {
        "BloomFilter": blockbloom.BloomFilter(100, 0.01),
        "ExpiringBloomFilter": blockbloom.ExpiringBloomFilter(100, 0.01, expire_after=timedelta(days=1)),
    }
    keys = [f"https://example.com/{i}" for i in range(100_000)]
    for name, f in filters.items():
        f.insert_if_absent_many(keys)
        assert f.estimated_len() == 2**64 - 1, name
        assert f.estimated_false_positives() == float("inf"), name
