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


class RedisServer:
    """A redis-server of its own on a free port, to kill and restart on the same port and
    directory (with ``persist``, an append-only file synced at every write keeps its data
    across restarts)."""

    def __init__(self, directory: Path, persist: bool = False, args: "list[str] | None" = None) -> None:
        if shutil.which("redis-server") is None:
            if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
                raise RuntimeError("redis-server is required")
            pytest.skip("redis-server not installed")
        self.port, self.dir = free_port(), directory
        self.aof = ["--appendonly", "yes", "--appendfsync", "always"] if persist else ["--appendonly", "no"]
        self.args = args or []
        directory.mkdir(parents=True, exist_ok=True)
        self.url = f"redis://127.0.0.1:{self.port}/"
        self.proc: "subprocess.Popen[bytes] | None" = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *self.aof, *self.args, "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if time.time() > deadline:
                    self.kill()
                    raise
                time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL: the server's connections are closed under its clients."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()


def make_tls_certificates(directory: Path) -> "dict[str, str]":
    """A CA (``ca``) and a certificate for localhost and 127.0.0.1 signed by it (``cert``,
    ``key``), made with ``openssl`` in ``directory``."""
    if shutil.which("openssl") is None:
        if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
            raise RuntimeError("openssl is required")
        pytest.skip("openssl not installed")
    directory.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=blockbloom test CA")
    openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (directory / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf")
    return {name: str(directory / file) for name, file in (("ca", "ca.crt"), ("cert", "server.crt"), ("key", "server.key"))}


@pytest.fixture
def redis_server(tmp_path):
    """A redis-server with an append-only file, to kill and restart."""
    server = RedisServer(tmp_path, persist=True)
    yield server
    server.kill()


def redis_module() -> str:
    """The server module (`libblockbloom_redis_module.so`): $BLOCKBLOOM_REDIS_MODULE, else
    one built in the workspace; the test is skipped without one."""
    env = os.environ.get("BLOCKBLOOM_REDIS_MODULE")
    if env:
        return env
    for profile in ("release", "debug"):
        for sub in ("", "deps"):
            p = ROOT / "target" / profile / sub / "libblockbloom_redis_module.so"
            if p.exists():
                return str(p)
    if os.environ.get("BLOCKBLOOM_REQUIRE_ALL"):
        raise RuntimeError("no Redis module: cargo build --release -p blockbloom-redis-module")
    pytest.skip("no Redis module (cargo build --release -p blockbloom-redis-module)")


@pytest.fixture
def module_redis_url(tmp_path):
    """A redis-server of its own with the blockbloom module loaded (no persistence)."""
    server = RedisServer(tmp_path, args=["--loadmodule", redis_module()])
    yield server.url
    server.kill()


@pytest.fixture
def redis_url(tmp_path):
    """A redis-server of its own on a free port (no persistence)."""
    server = RedisServer(tmp_path)
    yield server.url
    server.kill()
