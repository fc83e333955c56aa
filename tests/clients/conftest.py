"""Starts the real bo-server binary on a free loopback port with a fresh SQLite file.

BO_SERVER_BIN names the binary (default: target/debug/bo-server of this checkout).
"""
import os
import pathlib
import socket
import subprocess
import tempfile
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(*extra):
    """Starts bo-server with `extra` arguments; yields its base URL; stops it."""
    binary = os.environ.get("BO_SERVER_BIN", str(ROOT / "target" / "debug" / "bo-server"))
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{port}", "--database-url", f"sqlite://{tmp}/bo.db", "--log", "warn", *extra],
        )
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base}/readyz") as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("bo-server did not become ready")
            time.sleep(0.05)
        try:
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.fixture()
def server():
    yield from _serve()


@pytest.fixture()
def impatient_server():
    """A server that never waits for a suggestion it has to compute: each such suggest answers
    with a pending operation (`done: false`) for the client to poll."""
    yield from _serve("--max-suggest-wait", "0", "--prefetch", "0")


# A key the keyed server accepts for project "team-a" only (its SHA-256 is in the key line).
API_KEY = "team-a-secret-key"


@pytest.fixture()
def keyed_server():
    """A server with API keys: `API_KEY` grants project team-a."""
    import hashlib

    digest = hashlib.sha256(API_KEY.encode()).hexdigest()
    yield from _serve("--api-keys", f"ci {digest} team-a")
