"""ExpiringBloomFilter from Python: the window with injected times, batches, snapshots and
pickling, a file shared by processes, and the same bits as the command line's."""

import copy
import datetime
import multiprocessing as mp
import os
import pickle
import struct
import subprocess
import time

import pytest

from blockbloom import BloomFilter, ExpiringBloomFilter, SnapshotError

HOUR = 3600.0
T = 1_699_999_200.0  # a past time (2023: guarantee 6 takes later ones as now)
KEYS = [f"https://example.org/page/{i}" for i in range(3000)]


def test_parameters_and_errors():
    f = ExpiringBloomFilter(10_000, 0.001, expire_after=datetime.timedelta(days=30), seed=7)
    # Epochs of a third of the window and of a second: forgotten four epochs on at most.
    epoch = (30 * 86400 + 1) / 3
    assert (f.expire_after, f.epoch, f.forgotten_after) == (30 * 86400, pytest.approx(epoch), pytest.approx(4 * epoch))
    assert (f.capacity, f.target_fpr, f.seed, f.is_file_backed) == (10_000, 0.001, 7, False)
    assert f.memory_bytes < 10_000 * 5 and f.num_hashes > 1  # 4.7 bytes per key at 0.1%
    assert f.oldest_generation_start is None
    assert "expire_after=2592000" in repr(f)
    with pytest.raises(TypeError):
        ExpiringBloomFilter(1000, 0.01)  # expire_after is required
    for bad in [0.5, -1, float("nan"), float("inf")]:
        with pytest.raises(ValueError):
            ExpiringBloomFilter(1000, expire_after=bad)
    with pytest.raises(ValueError):
        ExpiringBloomFilter(0, expire_after=HOUR)
    with pytest.raises(TypeError):
        f.add(3)
    with pytest.raises(ValueError):
        f.contains("a", at=-5)


def test_the_window_with_injected_times():
    f = ExpiringBloomFilter(10_000, expire_after=HOUR)
    assert f.insert_if_absent("a", at=T)
    assert not f.insert_if_absent(b"a", at=T + HOUR - 0.001)  # bytes: the same key; not renewed
    assert f.contains("a", at=T + HOUR / 2) and not f.contains("a", at=T + f.forgotten_after)
    assert f.insert_if_absent("a", at=T + f.forgotten_after)  # forgotten: new again
    f.add("b", at=T)
    f.add("b", at=T + HOUR)  # an insert renews
    assert f.contains("b", at=T + 2 * HOUR - 1)
    # Time going back (an earlier `at` after a later one) never forgets a key in its window.
    assert f.contains("b", at=T)
    f.add("now")
    assert "now" in f and f.oldest_generation_start is not None
    # First used in 1970's first epoch: its oldest generation is known too.
    g = ExpiringBloomFilter(100, expire_after=HOUR)
    assert g.insert_if_absent("k", at=1.0) and g.oldest_generation_start is not None


def test_batches_answer_as_single_calls():
    a = ExpiringBloomFilter(5000, expire_after=HOUR, seed=1)
    b = ExpiringBloomFilter(5000, expire_after=HOUR, seed=1)
    keys = [f"k{i % 700}" for i in range(2000)]
    for r in range(8):
        t = T + r * HOUR / 3
        assert a.insert_if_absent_many(keys, at=t) == [b.insert_if_absent(k, at=t) for k in keys]
        assert a.contains_many(keys, at=t + HOUR / 2) == [b.contains(k, at=t + HOUR / 2) for k in keys]
    a.update(["x", "y"], at=T)
    assert a.contains_many(["x", "y", "z"], at=T + 1) == [True, True, False]
    with pytest.raises(TypeError):
        a.insert_if_absent_many(["ok", 5])
    assert not a.contains("ok")  # nothing inserted before the bad key raised


def test_arrival_sizes_for_a_steady_rate_or_the_worst_burst(tmp_path):
    month = 30 * 86400
    steady = ExpiringBloomFilter(1_000_000, expire_after=month)
    burst = ExpiringBloomFilter(1_000_000, expire_after=month, arrival="worst_burst")
    assert (steady.arrival, burst.arrival) == ("steady", "worst_burst")
    # A third of the capacity in each of four planes, against all of it in each of two:
    # 22.39 and 56.7 bits per key at 1%.
    assert steady.memory_bytes * 8 < 22.4 * 1_000_000 < burst.memory_bytes * 8 / 2.5
    assert pickle.loads(pickle.dumps(burst)).arrival == "worst_burst"
    with pytest.raises(ValueError, match="worst_burst"):
        ExpiringBloomFilter(1000, expire_after=month, arrival="bursty")
    path = tmp_path / "burst.bloom"
    ExpiringBloomFilter.open_file(path, 10_000, expire_after=month, arrival="worst_burst").flush()
    assert ExpiringBloomFilter.open_file(path).arrival == "worst_burst"
    with pytest.raises(ValueError, match="arrival"):
        ExpiringBloomFilter.open_file(path, 10_000, expire_after=month)


def test_snapshots_pickles_and_copies(tmp_path):
    f = ExpiringBloomFilter(1000, expire_after=HOUR)
    f.add("a", at=T)
    for g in [pickle.loads(pickle.dumps(f)), copy.copy(f), copy.deepcopy(f), ExpiringBloomFilter.from_bytes(f.to_bytes())]:
        assert g.contains("a", at=T + 1) and not g.contains("a", at=T + 2 * HOUR)
        assert (g.seed, g.expire_after, g.is_file_backed) == (f.seed, HOUR, False)
    f.save(tmp_path / "s.snapshot")
    assert ExpiringBloomFilter.load(tmp_path / "s.snapshot").contains("a", at=T + 1)
    with pytest.raises(SnapshotError):
        BloomFilter.from_bytes(f.to_bytes())  # another kind's reader refuses it
    with pytest.raises(SnapshotError):
        ExpiringBloomFilter.from_bytes(f.to_bytes()[:-1])


def test_open_file_checks_parameters_and_pickles_as_its_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = ExpiringBloomFilter.open_file("seen.bloom", 100_000, 0.01, expire_after=HOUR)
    assert f.insert_if_absent("a")
    monkeypatch.chdir("/")
    g = pickle.loads(pickle.dumps(f))
    assert g.is_file_backed and "a" in g and g.insert_if_absent("b") and "b" in f
    assert ExpiringBloomFilter.open_file(tmp_path / "seen.bloom").expire_after == HOUR
    with pytest.raises(ValueError, match="expire_after"):
        ExpiringBloomFilter.open_file(tmp_path / "seen.bloom", 100_000, 0.01, expire_after=2 * HOUR)
    with pytest.raises(ValueError):
        ExpiringBloomFilter.open_file(tmp_path / "other.bloom", 100_000)  # no window
    with pytest.raises(ValueError, match="kind"):
        BloomFilter.open_file(tmp_path / "seen.bloom")
    f.flush()


def winners(f, keys, at):
    return [k for k, new in zip(keys, f.insert_if_absent_many(keys, at=at)) if new]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_workers_share_a_file_across_epochs(tmp_path, method):
    # Every task offers every key at the same time; four rounds, each an epoch (a third of
    # the window) later than the last, with the keys of the round before (within the window).
    f = ExpiringBloomFilter.open_file(tmp_path / "seen.bloom", 100_000, 1e-4, expire_after=HOUR)
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        for r in range(4):
            keys = KEYS[r * 500 : r * 500 + 1000]  # half of them offered in the round before
            won = [k for res in pool.starmap(winners, [(f, keys, T + r * HOUR / 3)] * 4) for k in res]
            fresh = keys if r == 0 else keys[500:]
            assert sorted(won) == sorted(fresh), f"round {r}: each new key won once, no old key"
        # Two windows later every key is new again, won exactly once.
        later = T + 3 * HOUR
        won = [k for res in pool.starmap(winners, [(f, KEYS[:500], later)] * 4) for k in res]
        assert sorted(won) == sorted(KEYS[:500])


def test_a_state_of_the_command_line_answers_the_same(tmp_path, cli):
    state = tmp_path / "s.bloom"
    lines = "".join(f"{k}\n" for k in KEYS[:100])
    # The command line's test clock: the run at T, so that Python can read the state
    # before and after the window (times past the machine's clock would be taken as it).
    out = subprocess.run(
        [cli, "dedup", "--state", str(state), "--expire-after", "1h", "--capacity", "10000", "--seed", "99"],
        input=lines.encode(), capture_output=True, check=True,
        env={**os.environ, "BLOCKBLOOM_TEST_CLOCK": str(T)},
    )
    assert out.stdout.decode() == lines
    f = ExpiringBloomFilter.open_file(state)
    assert f.seed == 99 and f.expire_after == HOUR
    assert all(f.contains_many(KEYS[:100], at=T + 1)) and not any(f.contains_many(KEYS[100:200], at=T + 1))
    # The same keys set the same bits in the same planes, under the same labels, as in a
    # filter made here at the same time.
    g = ExpiringBloomFilter(f.capacity, f.target_fpr, expire_after=HOUR, seed=99)
    g.update(KEYS[:100], at=T)

    def planes(snapshot):
        # The key lines' words, after the header and the clock line, without the checksum.
        body = snapshot[128 + 64 : -8]
        return struct.unpack(f"<{len(body) // 8}Q", body)

    same = planes(g.to_bytes()) == planes(ExpiringBloomFilter.from_bytes(f.to_bytes()).to_bytes())
    assert same, "the CLI and Python set different bits"
    # Reads later in the window, and after it (these move the file's clock on).
    assert all(f.contains_many(KEYS[:100], at=T + 0.9 * HOUR))
    assert not any(f.contains_many(KEYS[:100], at=T + f.forgotten_after))
