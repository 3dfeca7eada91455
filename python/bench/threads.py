"""Where the time of two threads' batches goes, one run:

    python python/bench/threads.py [N]

Two threads each call insert_if_absent_many on half of N URLs into one filter; prints when
each call started and ended, beside one thread doing all N. A batch hashes its keys with
the GIL held (every key is read before any is inserted) and probes with it released, so
the second call can only start hashing when the first has hashed its keys.

Then a crawler's steady state, five times: batches of 10,000 of the same URLs in a loop,
from 1 and from 2 threads, into a filter already in use (its memory all touched) for N keys
(in cache) and for 5·10^7 (beyond the caches): one thread reads its next batch while the
other probes."""

import sys
import threading
import time

from blockbloom import BloomFilter

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
keys = [f"https://example.com/{i % 997}/page/{i}" for i in range(N)]
halves = (keys[: N // 2], keys[N // 2 :])

for _ in range(5):
    f = BloomFilter(N, 0.01)
    spans = {}

    def run(part, name):
        a = time.perf_counter()
        f.insert_if_absent_many(part)
        spans[name] = (a, time.perf_counter())

    ts = [threading.Thread(target=run, args=(h, n)) for h, n in zip(halves, "AB")]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    two = time.perf_counter() - t0
    g = BloomFilter(N, 0.01)
    a = time.perf_counter()
    g.insert_if_absent_many(keys)
    one = time.perf_counter() - a
    calls = "; ".join(f"{n} {1e3 * (s - t0):.1f}-{1e3 * (e - t0):.1f} ms" for n, (s, e) in sorted(spans.items()))
    print(f"one thread {1e3 * one:.1f} ms, two threads {1e3 * two:.1f} ms (x{one / two:.2f}): {calls}")

B = 10_000
batches = [keys[i : i + B] for i in range(0, N, B)]


def steady(threads, capacity):
    f = BloomFilter(capacity, 0.01)
    f.clear()

    def work(part):
        for b in part:
            f.insert_if_absent_many(b)

    ts = [threading.Thread(target=work, args=(batches[i::threads],)) for i in range(threads)]
    t = time.perf_counter()
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return time.perf_counter() - t


for capacity in (N, 50_000_000):
    for _ in range(5):
        one, two = steady(1, capacity), steady(2, capacity)
        print(f"batches of {B:,} in a loop, filter for {capacity:.0e} keys in use: one thread {1e3 * one:.1f} ms, two threads {1e3 * two:.1f} ms (x{one / two:.2f})")
