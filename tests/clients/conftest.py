"""Starts the real bo-server binary on a free loopback port with a fresh SQLite file.

BO_SERVER_BIN names the binary (default: target/debug/bo-server of this checkout).
"""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))
import bo_server  # noqa: E402


def _serve(*extra):
    yield from bo_server.serve(*extra)


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
