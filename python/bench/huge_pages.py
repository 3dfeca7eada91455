"""What huge pages buy a large filter in Python, one run:

    python python/bench/huge_pages.py [N] [REPS]

N URLs (default 10^6) into a new filter for 5·10^7 keys (60 MiB, beyond the caches), on
4 KiB pages and with huge_pages=True: a Python loop of insert_if_absent, one
insert_if_absent_many call, and two threads each calling it on half the URLs. Each run
builds its filter, so it pays the first touch of the pages it writes (about 15,000 page
faults on 4 KiB pages, 30 on 2 MiB ones) as a crawler does once. Runs go round-robin, REPS
times (default 5); the table gives medians in millions of keys per second."""

import statistics
import sys
import threading
import time

from blockbloom import BloomFilter

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
CAPACITY = 50_000_000
keys = [f"https://example.com/{i % 997}/page/{i}" for i in range(N)]
halves = (keys[: N // 2], keys[N // 2 :])


def loop(huge):
    ins = BloomFilter(CAPACITY, 0.01, huge_pages=huge).insert_if_absent
    for k in keys:
        ins(k)


def batch(huge):
    BloomFilter(CAPACITY, 0.01, huge_pages=huge).insert_if_absent_many(keys)


def two_threads(huge):
    f = BloomFilter(CAPACITY, 0.01, huge_pages=huge)
    ts = [threading.Thread(target=f.insert_if_absent_many, args=(h,)) for h in halves]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


rows = [("Python loop", loop), ("insert_if_absent_many", batch), ("2 threads", two_threads)]
runs = {(name, huge): [] for name, _ in rows for huge in (False, True)}
for _ in range(REPS):
    for name, fn in rows:
        for huge in (False, True):
            t = time.perf_counter()
            fn(huge)
            runs[name, huge].append(N / (time.perf_counter() - t) / 1e6)
med = {k: statistics.median(v) for k, v in runs.items()}
print(f"{N} URLs into a filter for {CAPACITY:.0e} keys, {sys.version.split()[0]}, medians of {REPS} runs\n")
print("| M keys/s | 4 KiB pages | huge_pages=True | ratio |\n|---|---:|---:|---:|")
for name, _ in rows:
    a, b = med[name, False], med[name, True]
    print(f"| {name} | {a:.2f} | {b:.2f} | ×{b / a:.2f} |")
