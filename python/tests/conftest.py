import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def cli() -> str:
    """The `blockbloom` binary: $BLOCKBLOOM_BIN, else one built in the workspace."""
    env = os.environ.get("BLOCKBLOOM_BIN")
    if env:
        return env
    for profile in ("release", "debug"):
        p = ROOT / "target" / profile / "blockbloom"
        if p.exists():
            return str(p)
    if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
        raise RuntimeError("no blockbloom binary: cargo build -p blockbloom-cli")
    pytest.skip("no blockbloom binary (cargo build -p blockbloom-cli)")


@pytest.fixture
def redis_url(tmp_path):
    """A redis-server of its own on a free port (no persistence)."""
    if shutil.which("redis-server") is None:
        if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
            raise RuntimeError("redis-server is required")
        pytest.skip("redis-server not installed")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.time() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/"
    proc.kill()
    proc.wait()
