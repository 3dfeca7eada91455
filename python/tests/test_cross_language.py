"""The same bytes are the same key in Python, in Rust and on the command line: states and
snapshots written by the `blockbloom` binary answer the same here."""

import subprocess

from blockbloom import BloomFilter, GrowableBloomFilter


def lines(a, b):
    return [f"https://example.org/{i}/é" for i in range(a, b)]


def dedup(cli, state, data, *args):
    out = subprocess.run(
        [cli, "dedup", "--state", str(state), *args],
        input="".join(l + "\n" for l in data).encode(),
        capture_output=True,
        check=True,
    )
    return out.stdout.decode().splitlines()


def test_a_growing_cli_state_answers_in_python(cli, tmp_path):
    state = tmp_path / "seen.bloom"
    assert dedup(cli, state, lines(0, 5000)) == lines(0, 5000)
    g = GrowableBloomFilter.open_file(state)
    assert all(l in g for l in lines(0, 5000))
    assert all(l.encode() in g for l in lines(0, 100))
    assert sum(l in g for l in lines(5000, 10_000)) < 100
    # And what Python adds, the command line then skips.
    g.update(lines(5000, 6000))
    g.flush()
    del g
    assert dedup(cli, state, lines(0, 7000)) == lines(6000, 7000)


def test_a_fixed_cli_state_and_a_merged_snapshot_answer_in_python(cli, tmp_path):
    state = tmp_path / "fixed.bloom"
    dedup(cli, state, lines(0, 3000), "--capacity", "100000", "--fpr", "0.0001")
    f = BloomFilter.open_file(state)
    assert f.capacity == 100_000 and all(l in f for l in lines(0, 3000))
    del f
    snap = tmp_path / "merged.bloom"
    subprocess.run([cli, "merge", str(snap), str(state)], check=True, capture_output=True)
    s = BloomFilter.load(snap)
    assert all(l in s for l in lines(0, 3000))
    assert not any(l in s for l in lines(3000, 3100))
