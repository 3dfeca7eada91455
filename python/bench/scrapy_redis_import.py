"""How long ``RedisBloomDupeFilter`` keyed by scrapy-redis' hash
(``BLOCKBLOOM_FINGERPRINT = "scrapy-redis"``) takes at its start to put scrapy-redis' set
of N fingerprints in its filter, through the Redis Functions and through the server
module, on redis-servers of its own (one run):

    python python/bench/scrapy_redis_import.py [N] [MODULE.so]

(the module: ``cargo build --release -p blockbloom-redis-module``, the default path.)
"""

import os
import socket
import subprocess
import sys
import tempfile
import time

import redis

from blockbloom.scrapy import RedisBloomDupeFilter

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
MODULE = sys.argv[2] if len(sys.argv) > 2 else "target/release/libblockbloom_redis_module.so"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


print(f"{N} fingerprints in scrapy-redis' set\n")
print("| through | import at the start | per fingerprint | the next start |\n|---|---:|---:|---:|")
for through, args in (("the Functions", []), ("the module", ["--loadmodule", os.path.abspath(MODULE)])):
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--save", "", "--dir", tempfile.mkdtemp(), *args],
        stdout=subprocess.DEVNULL,
    )
    try:
        r = redis.Redis(port=port)
        for _ in range(50):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.1)
        for i in range(0, N, 10_000):
            r.sadd("docs:dupefilter", *[os.urandom(20).hex() for _ in range(min(10_000, N - i))])
        url = f"redis://127.0.0.1:{port}/0"
        times = []
        for _ in range(2):
            t = time.perf_counter()
            RedisBloomDupeFilter(url, "docs:dupefilter", capacity=10 * N, fingerprint="scrapy-redis")
            times.append(time.perf_counter() - t)
        print(f"| {through} | {times[0]:.2f} s | {times[0] / N * 1e6:.2f} µs | {times[1] * 1e3:.1f} ms |")
    finally:
        server.kill()
        server.wait()
