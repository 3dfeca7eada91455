"""Speed of the Python API against Python's set and rbloom (if installed), one run:

    python python/bench/speed.py [N] [REPS]

Prints a markdown table of keys per second: a Python loop of insert_if_absent, the batch
call, 2 threads of batches (N distinct URLs; then both calls on a stream of N/2 URLs twice
each, shuffled; into a filter beyond the caches; batches of 10,000 in a loop from 1 and 2
threads into a filter in use), the same loop and batch for `GrowableBloomFilter`, `set`
(`in` + `add`), rbloom (`in` + `add`; its built-in hash, and a
persistable sha256 hash), and bytes per key. Every measurement runs REPS times
(default 5), round-robin with the others so that a noisy neighbour slows all of them alike,
and the table gives the median; the ratios the goals are stated in follow it."""

import hashlib
import random
import statistics
import sys
import threading
import time

from blockbloom import BloomFilter, GrowableBloomFilter

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
keys = [f"https://example.com/{i % 997}/page/{i}" for i in range(N)]
# A crawl-like stream: N/2 distinct URLs, each twice, shuffled (50% repeats). Each item is
# a string object of its own, made in stream order as a crawler's parsed links are (a
# shuffled list of the same objects would read memory in random order instead).
order = list(range(N // 2)) * 2
random.Random(1).shuffle(order)
repeating = [f"https://example.com/{i % 997}/page/{i}" for i in order]
del order


def rate(fn):
    """Keys per second of `fn()`; a `fn` that sets something up first returns the seconds
    of the part to time."""
    t = time.perf_counter()
    timed = fn()
    return N / (timed if timed is not None else time.perf_counter() - t)


def medians(rows):
    """The median rate of every (name, fn) over REPS round-robin runs."""
    runs = {name: [] for name, _ in rows}
    for _ in range(REPS):
        for name, fn in rows:
            runs[name].append(rate(fn))
    return [(name, statistics.median(runs[name])) for name, _ in rows]


def loop(stream=keys, capacity=N):
    f = BloomFilter(capacity, 0.01)
    ins = f.insert_if_absent
    for k in stream:
        ins(k)


def batch(stream=keys, capacity=N):
    BloomFilter(capacity, 0.01).insert_if_absent_many(stream)


halves = (keys[: N // 2], keys[N // 2 :])


def two_threads(capacity):
    f = BloomFilter(capacity, 0.01)
    ts = [threading.Thread(target=f.insert_if_absent_many, args=(part,)) for part in halves]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def threads2():
    two_threads(N)


def big_threads2():
    two_threads(50_000_000)


# A crawler's steady state: each thread calls a batch per page of links, again and again,
# into a filter that is already in use (every page of its memory touched: `clear` writes
# them all), so that one thread's reading of its next batch overlaps the other's probing.
STEADY_BATCH = 10_000
steady = [keys[i : i + STEADY_BATCH] for i in range(0, N, STEADY_BATCH)]


def steady_batches(threads, capacity=50_000_000):
    f = BloomFilter(capacity, 0.01)
    f.clear()
    parts = [steady[i::threads] for i in range(threads)]

    def work(part):
        for b in part:
            f.insert_if_absent_many(b)

    ts = [threading.Thread(target=work, args=(part,)) for part in parts]
    t = time.perf_counter()
    for th in ts:
        th.start()
    for th in ts:
        th.join()
    return time.perf_counter() - t


def growable_loop():
    f = GrowableBloomFilter(N, 0.01)
    ins = f.insert_if_absent
    for k in keys:
        ins(k)


def growable_batch():
    GrowableBloomFilter(N, 0.01).insert_if_absent_many(keys)


def pyset():
    s = set()
    for k in keys:
        if k not in s:
            s.add(k)




rows = [
    ("blockbloom insert_if_absent, Python loop", loop),
    ("blockbloom insert_if_absent_many (one call)", batch),
    ("blockbloom insert_if_absent_many, 2 threads", threads2),
    ("… the same number of keys, 50% repeats: loop", lambda: loop(repeating)),
    ("… 50% repeats: insert_if_absent_many", lambda: batch(repeating)),
    ("… into a filter for 5·10^7 keys (60 MiB, beyond the caches): loop", lambda: loop(keys, 50_000_000)),
    ("… into a filter for 5·10^7 keys: insert_if_absent_many", lambda: batch(keys, 50_000_000)),
    ("… into a filter for 5·10^7 keys: insert_if_absent_many, 2 threads", big_threads2),
    ("… batches of 10,000 in a loop, into a filter for N keys in use: 1 thread", lambda: steady_batches(1, N)),
    ("… batches of 10,000 in a loop, into a filter for N keys in use: 2 threads", lambda: steady_batches(2, N)),
    ("… batches of 10,000 in a loop, into a filter for 5·10^7 keys in use: 1 thread", lambda: steady_batches(1)),
    ("… batches of 10,000 in a loop, into a filter for 5·10^7 keys in use: 2 threads", lambda: steady_batches(2)),
    ("GrowableBloomFilter insert_if_absent, Python loop", growable_loop),
    ("GrowableBloomFilter insert_if_absent_many (one call)", growable_batch),
    ("Python set: in + add", pyset),
]
try:
    import rbloom

    def rb():
        b = rbloom.Bloom(N, 0.01)
        for k in keys:
            if k not in b:
                b.add(k)

    def sha(obj):
        return int.from_bytes(hashlib.sha256(obj.encode()).digest()[:16], "big", signed=True)

    def rb_sha():
        b = rbloom.Bloom(N, 0.01, sha)
        for k in keys:
            if k not in b:
                b.add(k)

    rows.append(("rbloom in + add (built-in hash, not persistable)", rb))
    rows.append(("rbloom in + add (sha256 hash, persistable)", rb_sha))
except ImportError:
    rb = None

table = medians(rows)
r = dict(table)
print(f"{N} URLs, {sys.version.split()[0]}, medians of {REPS} round-robin runs\n")
print("| | keys/s |\n|---|---:|")
for name, v in table:
    print(f"| {name} | {v:,.0f} |")
loop_rate = r["blockbloom insert_if_absent, Python loop"]
batch_rate = r["blockbloom insert_if_absent_many (one call)"]
print(f"\nbatch / loop: {batch_rate / loop_rate:.2f} (goal >= 2)")
rep = r["… 50% repeats: insert_if_absent_many"] / r["… the same number of keys, 50% repeats: loop"]
print(f"batch / loop, 50% repeats: {rep:.2f}")
print(f"2 threads / 1 thread, one call of N/2 keys each: {r['blockbloom insert_if_absent_many, 2 threads'] / batch_rate:.2f} (goal >= 1.7)")
steady_small = r["… batches of 10,000 in a loop, into a filter for N keys in use: 2 threads"] / r["… batches of 10,000 in a loop, into a filter for N keys in use: 1 thread"]
print(f"2 threads / 1 thread, batches of 10,000 into a filter in use for N keys: {steady_small:.2f} (goal >= 1.7)")
big_threads = r["… into a filter for 5·10^7 keys: insert_if_absent_many, 2 threads"] / r["… into a filter for 5·10^7 keys: insert_if_absent_many"]
print(f"2 threads / 1 thread, one call each into a new filter beyond the caches: {big_threads:.2f}")
steady_threads = r["… batches of 10,000 in a loop, into a filter for 5·10^7 keys in use: 2 threads"] / r["… batches of 10,000 in a loop, into a filter for 5·10^7 keys in use: 1 thread"]
print(f"2 threads / 1 thread, batches of 10,000 into a filter in use beyond the caches: {steady_threads:.2f} (goal >= 1.7)")
grow = r["GrowableBloomFilter insert_if_absent_many (one call)"] / r["GrowableBloomFilter insert_if_absent, Python loop"]
print(f"GrowableBloomFilter batch / loop: {grow:.2f}")
big = r["… into a filter for 5·10^7 keys: insert_if_absent_many"] / r["… into a filter for 5·10^7 keys (60 MiB, beyond the caches): loop"]
print(f"batch / loop beyond the caches: {big:.2f}")
if rb is not None:
    print(f"loop / rbloom built-in hash: {loop_rate / r['rbloom in + add (built-in hash, not persistable)']:.2f} (goal >= 1)")
    print(f"loop / rbloom sha256: {loop_rate / r['rbloom in + add (sha256 hash, persistable)']:.2f} (goal >= 5)")
else:
    print("rbloom not installed: no comparison")
f = BloomFilter(N, 0.01)
print(f"\nblockbloom at 1%: {f.memory_bytes / N:.2f} bytes per key")
