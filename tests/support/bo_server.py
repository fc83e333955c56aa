"""Starts the real bo-server binary for the Python suites: on a free loopback port, with a fresh
SQLite file, until it answers /readyz; stops it afterwards.

BO_SERVER_BIN names the binary (default: target/debug/bo-server of this checkout)."""
import os
import pathlib
import socket
import subprocess
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def binary() -> str:
    return os.environ.get("BO_SERVER_BIN", str(ROOT / "target" / "debug" / "bo-server"))


def wait_ready(base, proc, timeout=30.0):
    """Waits until the server at `base` answers /readyz; kills `proc` and raises if it exits or
    `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{base}/readyz") as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("bo-server did not become ready")
        time.sleep(0.05)


def serve(*extra, database_url=None):
    """Starts bo-server with `extra` arguments on `database_url` (default: a fresh SQLite file);
    yields its base URL; stops it."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen(
            [binary(), "--listen", f"127.0.0.1:{port}", "--database-url", database_url or f"sqlite://{tmp}/bo.db", "--log", "warn", *extra],
        )
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, proc)
        try:
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=30)
