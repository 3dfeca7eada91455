"""The counting filter (with `remove`) and the exact `AtomicBitSet`."""

import copy
import pickle

import pytest

from blockbloom import AtomicBitSet, BloomFilter, CountingBloomFilter, SnapshotError


def test_counting_filter_and_bitset(tmp_path):
    c = CountingBloomFilter(10_000, 0.01)
    assert c.insert_if_absent("a") and not c.insert_if_absent("a")
    c.add("a")
    assert c.estimated_count("a") == 2
    assert c.remove("a") and "a" in c and c.remove("a") and "a" not in c
    assert not c.remove("never")
    with pytest.raises(ValueError):
        CountingBloomFilter(0)
    assert c.insert_if_absent_many(["x", "y", "x"]) == [True, True, False]
    assert c.contains_many(["x", "z"]) == [True, False]
    c.update(["z"])
    assert "z" in c
    with pytest.raises(TypeError):
        c.update(["w", 5])
    assert "w" not in c
    s = AtomicBitSet(1000)
    assert s.insert_if_absent(3) and not s.insert_if_absent(3) and s.insert_if_absent(999)
    assert 3 in s and 4 not in s and 10**9 not in s and len(s) == 2
    assert list(s) == [3, 999]
    with pytest.raises(ValueError):
        s.insert_if_absent(1000)
    with pytest.raises(ValueError):
        s.add(1000)
    assert not hasattr(s, "insert")  # the 0.x name is gone: insert_if_absent
    assert s.insert_if_absent(5)
    p = tmp_path / "s.bits"
    s.save(p)
    assert list(AtomicBitSet.load(p)) == [3, 5, 999]
    with pytest.raises(ValueError):
        AtomicBitSet(0)


def test_bitset_pickles_copies_and_unions_as_its_contents(tmp_path):
    s = AtomicBitSet(1000)
    for i in (3, 5, 999):
        s.add(i)
    data = s.to_bytes()
    p = tmp_path / "s.bits"
    s.save(p)
    assert p.read_bytes() == data
    for t in (pickle.loads(pickle.dumps(s)), copy.copy(s), copy.deepcopy(s), AtomicBitSet.from_bytes(data)):
        assert list(t) == [3, 5, 999] and t.universe == 1000
        t.add(7)  # a copy, not the same set
        assert 7 not in s
    u = AtomicBitSet(1000)
    u.add(0)
    s |= u
    s.union(AtomicBitSet.from_bytes(data))
    assert list(s) == [0, 3, 5, 999]
    v = AtomicBitSet(1000)
    v.add(1)
    w = s | v
    assert list(w) == [0, 1, 3, 5, 999] and list(s) == [0, 3, 5, 999] and list(v) == [1]
    with pytest.raises(ValueError, match="universe"):
        s | AtomicBitSet(10)
    with pytest.raises(ValueError, match="universe"):
        s.union(AtomicBitSet(1001))
    with pytest.raises(ValueError, match="universe"):
        s |= AtomicBitSet(999)
    assert list(s) == [0, 3, 5, 999]
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 1
    for bad in (bytes(damaged), data[:-1], b"", BloomFilter(100).to_bytes()):
        with pytest.raises(SnapshotError):
            AtomicBitSet.from_bytes(bad)


def test_counting_filter_saves_pickles_and_copies_its_counters(tmp_path):
    """Before, ``pickle.dumps`` raised "cannot pickle 'blockbloom.CountingBloomFilter'" and
    there was no ``save``: a crawler's counting filter died with its process."""
    c = CountingBloomFilter(1000, 0.01, seed=7)
    assert (c.seed, c.num_hashes > 0) == (7, True)
    c.update(["a", "a", "b", "c"])
    assert c.remove("c")
    data = c.to_bytes()
    p = tmp_path / "c.counts"
    c.save(p)
    assert p.read_bytes() == data
    for d in (pickle.loads(pickle.dumps(c)), copy.copy(c), copy.deepcopy(c), CountingBloomFilter.from_bytes(data), CountingBloomFilter.load(p)):
        assert [d.estimated_count(k) for k in "abc"] == [2, 1, 0]
        assert (d.seed, d.capacity, d.target_fpr, d.memory_bytes) == (7, 1000, 0.01, c.memory_bytes)
        assert d.remove("a")  # a copy: the original still counts "a" twice
        assert c.estimated_count("a") == 2
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 1
    for bad in (bytes(damaged), data[:-1], b"", BloomFilter(100).to_bytes(), AtomicBitSet(100).to_bytes()):
        with pytest.raises(SnapshotError):
            CountingBloomFilter.from_bytes(bad)
    with pytest.raises(SnapshotError):
        BloomFilter.from_bytes(data)
    with pytest.raises(FileNotFoundError):
        CountingBloomFilter.load(tmp_path / "missing")
