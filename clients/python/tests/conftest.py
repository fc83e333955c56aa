"""The real bo-server binary for the client's tests: on a free loopback port with a fresh SQLite
file. BO_SERVER_BIN names the binary (default: target/debug/bo-server of this checkout)."""
import os
import pathlib
import subprocess
import sys
from typing import Iterator, List

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "support"))
# The package's source, not whatever is installed (test_wheel.py tests the built wheel).
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
import bo_server  # noqa: E402

BINARY = bo_server.binary()


class Server:
    """A bo-server process that can be killed and started again on the same port and file."""

    def __init__(self, db: pathlib.Path, *extra: str) -> None:
        self.port = bo_server.free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = db
        self.extra: List[str] = list(extra)
        self.proc: "subprocess.Popen[bytes] | None" = None

    def start(self, wait: bool = True) -> None:
        self.proc = subprocess.Popen(
            [BINARY, "--listen", f"127.0.0.1:{self.port}", "--database-url", f"sqlite://{self.db}", "--log", "error", *self.extra]
        )
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        assert self.proc is not None
        bo_server.wait_ready(self.url, self.proc)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def _server(tmp_path: pathlib.Path, *extra: str) -> Iterator[Server]:
    s = Server(tmp_path / "bo.db", *extra)
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture()
def server(tmp_path: pathlib.Path) -> Iterator[Server]:
    yield from _server(tmp_path)


@pytest.fixture()
def impatient_server(tmp_path: pathlib.Path) -> Iterator[Server]:
    """Every suggest that needs a model answers at once with a pending operation."""
    yield from _server(tmp_path, "--max-suggest-wait", "0", "--prefetch", "0")


API_KEY = "client-test-key"


@pytest.fixture()
def keyed_server(tmp_path: pathlib.Path) -> Iterator[Server]:
    import hashlib

    yield from _server(tmp_path, "--api-keys", f"ci {hashlib.sha256(API_KEY.encode()).hexdigest()} team-a")


@pytest.fixture()
def limited_server(tmp_path: pathlib.Path) -> Iterator[Server]:
    """API keys, and five requests a second per key (bursts of ten): a quick loop meets 429s."""
    import hashlib

    digest = hashlib.sha256(API_KEY.encode()).hexdigest()
    yield from _server(tmp_path, "--api-keys", f"ci {digest} team-a", "--rate-limit", "5")
