"""``canonicalize_url`` and ``request_fingerprint`` against w3lib and Scrapy, live: on a
real link stream (every link of the locally installed Python docs, resolved as a crawler
would), on hostile spellings, and on random URLs built from hostile parts. They follow the
w3lib installed (2.5 or 2.6: CI runs this file with each)."""

import functools
import os
import random
import re
from importlib.metadata import version
from pathlib import Path
from urllib.parse import urljoin

import pytest

import blockbloom

w3lib_url = pytest.importorskip("w3lib.url")
scrapy_request = pytest.importorskip("scrapy.utils.request")
from scrapy import Request  # noqa: E402

W3LIB = ".".join(version("w3lib").split(".")[:2])
if W3LIB not in ("2.5", "2.6"):
    if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
        raise RuntimeError(f"w3lib {W3LIB} is installed: blockbloom follows 2.5 and 2.6")
    pytest.skip(f"blockbloom follows w3lib 2.5 and 2.6, not {W3LIB}", allow_module_level=True)
# Ours, following the w3lib installed.
canonicalize_url = functools.partial(blockbloom.canonicalize_url, w3lib=W3LIB)
request_fingerprint = functools.partial(blockbloom.request_fingerprint, w3lib=W3LIB)

DOCS = Path("/usr/share/doc/python3-doc/html")
HREF = re.compile(rb'(?:href|src)="([^"]*)"')

HOSTILE = [
    "http://Example.com/a#top", "HTTP://WWW.EXAMPLE.COM/", "http://example.com", "http://example.com?a=1",
    "https://example.com:443/", "http://example.com:0080/", "http://example.com:/a", "http://u:p@Example.com/a",
    "http://U%41:p%3Aw@Ex.com/", "http://@ex.com/", "http://a@b@ex.com/", "http://ex.com/?a=&b&c=1&&d==2",
    "http://ex.com/?q=a+b&q=a%20b&q=a b", "http://ex.com/?%61=%62", "http://ex.com/?a=%zz&b=%4", "http://ex.com/?&&&",
    "http://ex.com/?", "http://ex.com/#", "http://ex.com/?a=1#f?g", "http://ex.com/a%2fb%2Fc", "http://ex.com/%7euser",
    "http://ex.com/a%3bb%3Fc%25d", "http://ex.com/a%252f", "http://ex.com/%e9", "http://ex.com/r\u00e9sum\u00e9",
    'http://ex.com/a b"c<d>e`f{g}h|i^j\\k', "http://ex.com/a/./b/../../c/./d/..", "http://ex.com/../a",
    "http://ex.com/a/%2e%2e/b", "http://ex.com/a;p/b;q?x=1", "http://ex.com/a;", "http://b\u00fccher.de/",
    "http://fa\u00df.de/", "http://\u0440\u0444.\u0440\u0444/", "http://\u2603.net/", "http://\U0001f355.ws/",
    "http://EX\u00c4MPLE.com/", "http://\u0627\u0644\u0639\u0631\u0628\u064a\u0629.com/", "http://a\u3002b\uff0ec\uff61d/",
    "http://ex.com\uff0f/", "http://" + "a" * 70 + ".com/", "http://" + "\u00fc" * 70 + ".com/", "http://a..\u00fc.com/",
    "http://[::1]/", "http://[::FFFF:1.2.3.4]:8080/a", "http://[2001:DB8:0:0:1:0:0:1]/", "http://[fe80::1%25Eth0]/",
    "http://[v1.abc]/", "http://[::1/", "http://[1.2.3.4]/", "http://ex.com:99999/", "http://ex.com:8a/",
    "http://ex.com\\a\\b?c\\d#e\\f", "  \thttp://ex.com/a\nb\r  ", "http://ex.com/a\x00b\x1f", "mailto:a@Example.com",
    "foo:/a/../b", "//ex.com/a", "/a/b?c=1", "a?b=1", "file:///tmp/a b", "ftp://ex.com/a;type=i", "ws://ex.com?x",
    "https://ex.com/?q='a'", "custom://ex.com/?q='a'", "http://ex.com/?x=%2B+%20%2b", "http://ex.com/a%",
    "http://ex.com/%%41", "http://EX.COM./a", "http://ex.com/\u00e9?\u00e9=\u00e9#\u00e9",
    "http://ex.com/" + "x" * 5000 + "?" + "&".join(f"k{i}=v{i}" for i in range(300, 0, -1)),
]
HOSTILE_BYTES = [b"http://ex.com/caf\xe9", b"http://ex.com/?q=\xff\xfe", b"http://ex.com/\xe2\x82", b"http://\xc3\xa9x.com/"]


def w3lib_or_error(url):
    try:
        return w3lib_url.canonicalize_url(url)
    except ValueError:
        return ValueError


def ours_or_error(url):
    try:
        return canonicalize_url(url)
    except ValueError:
        return ValueError


def assert_same(urls):
    wrong = [(u, ours_or_error(u), w3lib_or_error(u)) for u in urls if ours_or_error(u) != w3lib_or_error(u)]
    assert not wrong, f"{len(wrong)} of {len(urls)} differ, e.g. {wrong[:5]}"


def doc_links():
    """Every href and src of the Python docs, resolved against the page it is on."""
    if not (DOCS / "index.html").exists():
        if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
            raise RuntimeError("python3-doc is not installed")
        pytest.skip("python3-doc is not installed")
    links = []
    for page in sorted(DOCS.rglob("*.html")):
        base = "http://127.0.0.1:8000/" + page.relative_to(DOCS).as_posix()
        for href in HREF.findall(page.read_bytes()):
            links.append(urljoin(base, href.decode("utf-8", "surrogateescape").replace("&amp;", "&")))
    return links


def test_a_real_link_stream_is_canonicalized_as_w3lib_does():
    links = doc_links()
    assert len(links) > 100_000
    assert_same(links)
    distinct = {canonicalize_url(u) for u in links}
    print(f"\n{len(links)} links of the Python docs: {len(set(links))} spellings, {len(distinct)} pages")
    assert len(distinct) < len(set(links))


def test_hostile_spellings_are_canonicalized_as_w3lib_does():
    assert_same(HOSTILE + HOSTILE_BYTES)
    assert canonicalize_url("http://Example.com/a#top") == "http://example.com/a"
    with pytest.raises(ValueError, match="IPv4 address in brackets"):
        canonicalize_url("http://[1.2.3.4]/")


PARTS = {
    "scheme": ["http://", "https://", "HTTP://", "ftp://", "ws://", "", "//", "mailto:", "x-y+z:", "https:",
               "HTTPS:///"],
    "user": ["", "", "", "u@", "u:p@", "U%41:%3a@", "@", "a b@", "\u00e9@", "[a]@"],
    "host": ["ex.com", "EX.com", "b\u00fccher.de", "fa\u00df.de", "\u2603.net", "[::1]", "[::FFFF:1.2.3.4]",
             "[fe80::1%25eth0]", "[v1.x]", "127.0.0.1", "ex.com.", "a..b", "xn--bcher-kva.de", "\u0440\u0444",
             "[1.2.3.4]", "[::1", "ex\uff0fcom", "", "0x7f.1", "%41.com", "1.2.3.256", "127.1", "09.1", "a%20b",
             "Fa\u00df.DE", "\u03a3\u0391\u03a3.gr", "\u00fc%40x.com", "x.\u03c2"],
    "port": ["", "", "", ":80", ":443", ":0080", ":", ":65536", ":8a"],
    "segment": ["a", "A", "", ".", "..", "%2e", "%2E%2e", "%2f", "%2F", "%3b", "%3F", "%25", "%", "%zz", "%e9",
                "\u00e9", "a b", "a;p", ";", "~", "%7e", "|", "[x]", "\\", "a+b", "'", '"', "\x7f", "\U0001f355",
                ".%2e", "%2E.", "..;p"],
    "arg": ["a=1", "b=2", "a=", "a", "=", "", "%61=%62", "q=a+b", "q=a%20b", "q=a b", "x=%2B", "k=%zz", "\u00e9=\u00e9",
            "a=1=2", "a%3D1", "'=\"", "b=%FF", "z=;", "c=?", "d=/"],
    "fragment": ["", "", "#", "#top", "#a?b=1", "#\u00e9", "#a b"],
}


def random_url(rng: random.Random) -> str:
    url = rng.choice(PARTS["scheme"]) + rng.choice(PARTS["user"]) + rng.choice(PARTS["host"]) + rng.choice(PARTS["port"])
    url += "".join("/" + rng.choice(PARTS["segment"]) + rng.choice(["", rng.choice(PARTS["segment"])])
                   for _ in range(rng.randrange(4)))
    if rng.random() < 0.7:
        url += "?" + "&".join(rng.choice(PARTS["arg"]) for _ in range(rng.randrange(6)))
    return url + rng.choice(PARTS["fragment"])


def test_random_spellings_are_canonicalized_as_w3lib_does():
    rng = random.Random(36)
    urls = [random_url(rng) for _ in range(30_000)]
    assert_same(urls)
    errors = sum(1 for u in urls if ours_or_error(u) is ValueError)
    print(f"\n30,000 random URLs: {errors} refused by both, the rest equal")


def test_request_fingerprints_are_scrapys():
    rng = random.Random(7)
    requests = [(u, "GET", b"") for u in doc_links()[::50]]
    requests += [(random_url(rng), rng.choice(["GET", "post", "Put"]), rng.choice([b"", b"a=1", "\u00e9", b"\xff\x00"]))
                 for _ in range(5_000)]
    compared = 0
    for url, method, body in requests:
        try:
            scrapy = scrapy_request.fingerprint(Request(url, method=method, body=body))
        except ValueError:
            with pytest.raises(ValueError):
                request_fingerprint(url, method, body)
            continue
        assert request_fingerprint(url, method, body) == scrapy, (url, method, body)
        compared += 1
    assert compared > 3_000
    assert request_fingerprint("http://a.com/?y=1&x=2") == request_fingerprint("http://A.com/?x=2&y=1")


def test_the_cli_prints_the_first_spelling_of_each_page_as_w3lib_keys_them(cli, tmp_path):
    import subprocess

    links = [u for u in doc_links() if "\n" not in u and "\r" not in u]
    first, keys = [], set()
    for u in links:
        key = w3lib_or_error(u)
        key = u if key is ValueError else key
        if key not in keys:
            keys.add(key)
            first.append(u)
    out = subprocess.run([cli, "dedup", "--canonical-urls", "--w3lib", W3LIB, "--capacity", "1M", "--fpr", "1e-9"],
                         input="\n".join(links).encode() + b"\n", capture_output=True, check=True)
    assert out.stdout.decode().splitlines() == first
    print(f"\nthe CLI: {len(links)} links in, {len(first)} pages out, as w3lib keys them")


def test_lossy_options_are_off_by_default_and_strip_what_they_name():
    url = "HTTP://Ex.com:80/a/?utm_source=x&sid=1&b=2&gclid=3"
    assert canonicalize_url(url) == w3lib_url.canonicalize_url(url)
    assert canonicalize_url(url, strip_tracking_params=True) == "http://ex.com:80/a/?b=2&sid=1"
    assert (canonicalize_url(url, strip_tracking_params=True, strip_params=["sid"], strip_default_port=True,
                                        strip_trailing_slash=True) == "http://ex.com/a?b=2")
    assert canonicalize_url(url, strip_params=("utm_*", "g*")) == "http://ex.com:80/a/?b=2&sid=1"
    with pytest.raises(TypeError):
        canonicalize_url(url, strip_params="sid")  # a str is not a list of names


ENCODINGS = [None, "utf-8", "latin-1", "cp1251", "gbk", "shift_jis", "utf-16", "ascii"]
SEPARATORS = ["&", ";", "|", "&amp;"]
NON_ASCII_ARGS = ["q=\u00e9t\u00e9", "\u0434=\u0430", "w=\u4e2d\u6587", "k=\u00ff;x=1", "p=a|b", "x=1&amp;y=2"]


def outcome(call, *args, **kwargs):
    """What a call gives: its value, or the type of the exception it raises."""
    try:
        return call(*args, **kwargs)
    except (ValueError, LookupError, TypeError) as e:
        return type(e)


def test_w3lib_s_arguments_give_w3lib_s_answers():
    """canonicalize_url(url, keep_blank_values, keep_fragments, encoding, query_separator=...)
    with a str, bytes or parsed URL: 100,000 random cases, the same answers (or the same
    exception) as w3lib's."""
    from urllib.parse import urlparse

    rng = random.Random(50)
    differ, compared = [], 0
    for _ in range(100_000):
        url = random_url(rng)
        if rng.random() < 0.4:
            url += ("&" if "?" in url else "?") + rng.choice(NON_ASCII_ARGS)
        encoding = rng.choice(ENCODINGS)
        form = rng.choice(["str", "str", "bytes", "parsed"])
        if form == "bytes":
            arg = url.encode(rng.choice(["utf-8", "latin-1", "cp1251"]), errors="ignore")
        elif form == "parsed":
            try:
                arg = urlparse(url)
            except ValueError:  # urlparse's own refusal (a bracketed IPv4 address, ...)
                continue
        else:
            arg = url
        kwargs = {"query_separator": rng.choice(SEPARATORS)}
        args = (arg, rng.random() < 0.5, rng.random() < 0.5, encoding)
        want = outcome(w3lib_url.canonicalize_url, *args, **kwargs)
        got = outcome(canonicalize_url, *args, **kwargs)
        compared += 1
        if got != want:
            differ.append((args, kwargs, got, want))
    by = {}
    for args, kwargs, _, _ in differ:
        key = (type(args[0]).__name__, args[3], kwargs["query_separator"])
        by[key] = by.get(key, 0) + 1
    assert differ == [], f"{len(differ)} of {compared} differ ({by}), first: {differ[:3]}"
    print(f"\n{compared} calls with w3lib's arguments (str, bytes, parsed; 8 encodings, 4 separators): 0 differences")


def test_a_lone_surrogate_is_a_unicode_encode_error_as_in_w3lib():
    with pytest.raises(UnicodeEncodeError):
        w3lib_url.canonicalize_url("http://example.com/\ud800")
    with pytest.raises(UnicodeEncodeError):
        canonicalize_url("http://example.com/\ud800")
    with pytest.raises(TypeError):
        canonicalize_url(42)


def test_scrapy_s_fingerprint_arguments_give_scrapy_s_fingerprints():
    """request_fingerprint(url, method, body, headers=..., include_headers=...,
    keep_fragments=...) against scrapy.utils.request.fingerprint(Request(...), ...)."""
    rng = random.Random(51)
    names = ["Accept-Language", "accept-language", "Cookie", "X-Token", "Content-Type", "x-missing"]
    values = ["en", "fr", b"id=1", "\u00e9", b"\xff", ["a", "b"], [b"c"]]
    compared = 0
    for _ in range(20_000):
        url, method = random_url(rng), rng.choice(["GET", "post"])
        body = rng.choice([b"", b"a=1", "\u00e9"])
        headers = {rng.choice(names[:5]): rng.choice(values) for _ in range(rng.randrange(4))}
        include = rng.sample(names, rng.randrange(4)) or None
        keep = rng.random() < 0.5
        try:
            request = Request(url, method=method, body=body, headers=headers)
        except ValueError:
            continue
        # (w3lib 2.6 can refuse the URL a Request made safe: then both raise ValueError.)
        want = outcome(scrapy_request.fingerprint, request, include_headers=include, keep_fragments=keep)
        got = outcome(
            request_fingerprint, url, method, body, headers=headers, include_headers=include, keep_fragments=keep
        )
        assert got == want, (url, method, body, headers, include, keep)
        compared += 1
    assert compared > 6_000  # 7,206 of the 20,000 (seed 51) are requests Scrapy accepts


def test_the_w3lib_release_is_chosen_by_name():
    """``w3lib=`` takes "2.5" or "2.6", or a full version as importlib.metadata gives it;
    the default is the newest; another release is a ValueError that names both."""
    url = "http://fa\u00df.de/?b=1&a=2"
    assert blockbloom.canonicalize_url(url) == blockbloom.canonicalize_url(url, w3lib="2.6.0") == "http://xn--fa-hia.de/?a=2&b=1"
    assert blockbloom.canonicalize_url(url, w3lib="2.5") == "http://fass.de/?a=2&b=1"
    assert blockbloom.request_fingerprint(url) != blockbloom.request_fingerprint(url, w3lib="2.5")
    assert canonicalize_url(url) == w3lib_url.canonicalize_url(url)
    for bad in ["2.4", "3", "", "latest"]:
        with pytest.raises(ValueError, match="2.5 and 2.6"):
            blockbloom.canonicalize_url(url, w3lib=bad)
        with pytest.raises(ValueError, match="2.5 and 2.6"):
            blockbloom.request_fingerprint(url, w3lib=bad)


def test_scrapy_redis_request_fingerprints_are_scrapy_redis():
    """The key of ``RedisBloomDupeFilter`` with ``BLOCKBLOOM_FINGERPRINT = "scrapy-redis"``,
    for a Rust crawler sharing its filter: scrapy-redis' own, live, and the dupefilter's."""
    dupefilter = pytest.importorskip("scrapy_redis.dupefilter").RFPDupeFilter(None, "k")
    from blockbloom._migrate import scrapy_redis_fingerprint

    rng = random.Random(8)
    requests = [(u, "GET", b"") for u in doc_links()[::50]]
    requests += [(random_url(rng), rng.choice(["GET", "post", "Put"]), rng.choice([b"", b"a=1", "\u00e9", b"\xff\x00"]))
                 for _ in range(5_000)]
    ours = functools.partial(blockbloom.scrapy_redis_request_fingerprint, w3lib=W3LIB)
    compared = 0
    for url, method, body in requests:
        try:
            request = Request(url, method=method, body=body)
            theirs = dupefilter.request_fingerprint(request)
        except ValueError:
            with pytest.raises(ValueError):
                ours(url, method, body)
            continue
        assert ours(url, method, body).hex() == theirs == scrapy_redis_fingerprint(request).hex(), (url, method, body)
        assert ours(url, method, body) != request_fingerprint(url, method, body)
        compared += 1
    print(f"\n{compared} requests: scrapy-redis' fingerprint, equal; {len(requests) - compared} refused by both")
    assert compared > 3_000
