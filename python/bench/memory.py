"""Memory per URL at 10^7 URLs (one run): a Python `set` of the URL strings, a `set` of
20-byte SHA-1 fingerprints (what Scrapy's default dupefilter keeps), and blockbloom at 1%
and 1e-5. Measured as the growth of the process's resident memory, the URL strings
themselves not counted (they exist for every approach):

    python python/bench/memory.py [N]
"""

import hashlib
import resource
import sys

from blockbloom import BloomFilter

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


urls = [f"https://example.com/{i % 997}/page/{i}" for i in range(N)]
print(f"{N} URLs, ~{sum(map(len, urls[:1000])) / 1000:.0f} characters each\n")
print("| | bytes per URL |\n|---|---:|")
for fpr in (0.01, 1e-5):
    before = rss()
    f = BloomFilter(N, fpr)
    f.update(urls)
    print(f"| blockbloom BloomFilter at {fpr:g} | {(rss() - before) / N:.2f} |")
    del f
before = rss()
s = set(urls)
print(f"| Python set of the URL strings (the set only) | {(rss() - before) / N:.1f} |")
del s
before = rss()
fps = set()
for u in urls:
    fps.add(hashlib.sha1(u.encode()).digest())
print(f"| set of 20-byte SHA-1 fingerprints (Scrapy's RFPDupeFilter) | {(rss() - before) / N:.1f} |")
