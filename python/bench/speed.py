"""Speed of the Python API against Python's set and rbloom (if installed), one run:

    python python/bench/speed.py [N]

Prints a markdown table of keys per second: a Python loop of insert_if_absent, the batch
call, 2 threads of batches, `set` (`in` + `add`), rbloom (`in` + `add`; its built-in hash,
and a persistable sha256 hash), and bytes per key."""

import hashlib
import sys
import threading
import time

from blockbloom import BloomFilter

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
keys = [f"https://example.com/{i % 997}/page/{i}" for i in range(N)]


def rate(fn):
    t = time.perf_counter()
    fn()
    return N / (time.perf_counter() - t)


def loop():
    f = BloomFilter(N, 0.01)
    ins = f.insert_if_absent
    for k in keys:
        ins(k)


def batch():
    BloomFilter(N, 0.01).insert_if_absent_many(keys)


def threads2():
    f = BloomFilter(N, 0.01)
    half = N // 2
    ts = [threading.Thread(target=f.insert_if_absent_many, args=(part,)) for part in (keys[:half], keys[half:])]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def pyset():
    s = set()
    for k in keys:
        if k not in s:
            s.add(k)


def big_loop():
    f = BloomFilter(50_000_000, 0.01)
    ins = f.insert_if_absent
    for k in keys:
        ins(k)


def big_batch():
    BloomFilter(50_000_000, 0.01).insert_if_absent_many(keys)


rows = [
    ("blockbloom insert_if_absent, Python loop", rate(loop)),
    ("blockbloom insert_if_absent_many (one call)", rate(batch)),
    ("… into a filter for 5·10^7 keys (60 MiB, beyond the caches): loop", rate(big_loop)),
    ("… into a filter for 5·10^7 keys: insert_if_absent_many", rate(big_batch)),
    ("blockbloom insert_if_absent_many, 2 threads", rate(threads2)),
    ("Python set: in + add", rate(pyset)),
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

    rows.append(("rbloom in + add (built-in hash, not persistable)", rate(rb)))
    rows.append(("rbloom in + add (sha256 hash, persistable)", rate(rb_sha)))
except ImportError:
    rows.append(("rbloom (not installed)", float("nan")))

print(f"{N} URLs, {sys.version.split()[0]}\n")
print("| | keys/s |\n|---|---:|")
for name, r in rows:
    print(f"| {name} | {r:,.0f} |")
f = BloomFilter(N, 0.01)
print(f"\nblockbloom at 1%: {f.memory_bytes / N:.2f} bytes per key")
