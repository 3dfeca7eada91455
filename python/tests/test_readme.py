"""The Python examples of the Python guide (python/README.md) run as written (with the test's own Redis server for
the URL they name), and the Scrapy settings they show name classes that load."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def python_blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), re.S)


def run(code, name):
    namespace = {}
    exec(compile(code, name, "exec"), namespace)
    return namespace


def test_the_guide_s_first_example_runs(redis_url, tmp_path, monkeypatch):
    code = next(b for b in python_blocks(ROOT / "python" / "README.md") if "redis://127.0.0.1/" in b)
    monkeypatch.chdir(tmp_path)
    ns = run(code.replace("redis://127.0.0.1/", redis_url), "python/README.md")
    assert "https://example.com/" in ns["seen"]
    assert ns["shared"].is_file_backed and (tmp_path / "seen.bloom").exists()
    assert ns["fleet"].insert_if_absent("https://example.com/")
    assert not ns["fleet"].insert_if_absent("https://example.com/")


def test_the_python_readme_s_example_runs():
    ns = run(python_blocks(ROOT / "python" / "README.md")[0], "python/README.md")
    assert "https://example.com/" in ns["seen"]


def test_the_settings_shown_load():
    pytest.importorskip("scrapy")
    pytest.importorskip("scrapy_redis")
    from scrapy.utils.misc import load_object

    import blockbloom.scrapy

    shown = "".join(python_blocks(ROOT / "README.md") + python_blocks(ROOT / "python" / "README.md"))
    classes = set(re.findall(r'^(?:DUPEFILTER_CLASS|SCHEDULER) = "([\w.]+)"', shown, re.M))
    assert {"blockbloom.scrapy.BloomDupeFilter", "blockbloom.scrapy.RedisBloomDupeFilter"} <= classes
    for path in classes:
        load_object(path)
    # "BLOCKBLOOM_FPR = 1e-5  # default": the default it names.
    fpr = re.search(r"^BLOCKBLOOM_FPR = (\S+)\s+# default", shown, re.M)
    assert float(fpr.group(1)) == blockbloom.scrapy.DEFAULT_FPR
    # A fingerprint setting shown is one the dupefilter takes.
    from scrapy.settings import Settings

    from blockbloom._settings import fingerprint_setting

    shown_fingerprints = re.findall(r'^BLOCKBLOOM_FINGERPRINT = "([\w-]+)"', shown, re.M)
    assert shown_fingerprints == ["scrapy-redis"]
    for value in shown_fingerprints:
        assert fingerprint_setting(Settings({"BLOCKBLOOM_FINGERPRINT": value})) == value
    with pytest.raises(ValueError, match="BLOCKBLOOM_FINGERPRINT"):
        fingerprint_setting(Settings({"BLOCKBLOOM_FINGERPRINT": "scrapy_redis"}))


def test_the_url_example_runs():
    code = next(b for b in python_blocks(ROOT / "python" / "README.md") if "canonicalize_url" in b)
    run(code, "python/README.md")
