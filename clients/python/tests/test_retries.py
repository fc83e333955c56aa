"""Retries against the real server: a 503 while the database is locked, 429s over a key's rate,
and a server that goes away and comes back — each request succeeds once, with nothing doubled."""
import logging
import pathlib
import socket
import sqlite3
import ssl
import subprocess
import threading
import time

import pytest

import bo_client as bo
from conftest import API_KEY, Server


def one_float() -> bo.SearchSpace:
    s = bo.SearchSpace()
    s.float("x", 0.0, 1.0)
    return s


def test_a_503_while_the_database_is_locked_is_retried(server: Server) -> None:
    client = bo.Client(server.url, project="demo")
    study = client.create_study("busy", one_float(), metrics={"m": "MAXIMIZE"})
    [trial] = study.suggest(1, "w")
    # Another process holds SQLite's write lock for longer than the server's busy timeout (10 s):
    # the server answers 503 UNAVAILABLE with Retry-After, and the client tries again.
    db = sqlite3.connect(server.db, timeout=30, isolation_level=None, check_same_thread=False)
    db.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(12.0, lambda: db.execute("COMMIT"))
    release.start()
    try:
        done = trial.complete(0.5)
    finally:
        release.join()
        db.close()
    assert done.state == "SUCCEEDED" and done.value == 0.5
    assert client.transport.retries.get("503", 0) >= 1
    assert [t.state for t in study.trials()] == ["SUCCEEDED"]


def test_429s_over_the_rate_limit_are_waited_out(limited_server: Server) -> None:
    client = bo.Client(limited_server.url, project="team-a", api_key=API_KEY)
    study = client.create_study("rate", one_float(), metrics={"m": "MAXIMIZE"})
    for i in range(20):
        for t in study.suggest(1, f"w{i}"):
            t.add_measurement(0.1, step=1)
            t.complete(float(t["x"]))
    trials = list(study.trials())
    assert len(trials) == 20 and all(len(t.measurements) == 1 for t in trials)
    assert client.transport.retries.get("429", 0) >= 1


def test_a_server_that_restarts_is_waited_for(server: Server) -> None:
    client = bo.Client(server.url, project="demo")
    study = client.create_study("restart", one_float(), metrics={"m": "MAXIMIZE"})
    [trial] = study.suggest(1, "w")
    server.kill()
    back = threading.Timer(1.5, lambda: server.start(wait=False))
    back.start()
    try:
        trial.add_measurement(0.3, step=1)
        trial.complete(0.4)
    finally:
        back.join()
        server.wait_ready()
    assert client.transport.retries.get("connection", 0) >= 1
    [stored] = list(study.trials())
    assert stored.state == "SUCCEEDED" and len(stored.measurements) == 1 and stored.value == 0.4


def test_an_answer_lost_after_the_server_applied_it_is_not_applied_twice(server: Server) -> None:
    """The ambiguous case, made on purpose: the measurement reaches the server, the answer is
    lost. The client reads the trial before resending and finds it there."""
    client = bo.Client(server.url, project="demo")
    study = client.create_study("lost", one_float(), metrics={"m": "MAXIMIZE"})
    [trial] = study.suggest(1, "w")
    transport = client.transport
    real = transport._connection
    calls = {"n": 0}

    class LosesTheAnswer:
        def __init__(self, conn):  # type: ignore[no-untyped-def]
            self.conn = conn

        def request(self, *a, **k):  # type: ignore[no-untyped-def]
            self.conn.request(*a, **k)

        def getresponse(self):  # type: ignore[no-untyped-def]
            r = self.conn.getresponse()
            r.read()
            raise ConnectionResetError("answer lost")

        def close(self) -> None:
            self.conn.close()

    def flaky():  # type: ignore[no-untyped-def]
        calls["n"] += 1
        conn = real()
        return LosesTheAnswer(conn) if calls["n"] == 1 else conn

    transport._connection = flaky  # type: ignore[method-assign]
    trial.add_measurement(0.7, step=3)
    transport._connection = real  # type: ignore[method-assign]
    assert [m.step for m in trial.measurements] == [3]
    assert len(study.trial(trial.id).measurements) == 1
    time.sleep(0)


def test_a_proxy_s_502_after_the_replica_applied_it_is_not_applied_twice(server: Server) -> None:
    """Behind a proxy the same case arrives as a status: the replica completes the trial and
    dies before answering, and the proxy says 502. The client reads the trial before resending
    (a resent completion would be refused: the trial is completed already)."""
    client = bo.Client(server.url, project="demo")
    study = client.create_study("gateway", one_float(), metrics={"m": "MAXIMIZE"})
    [trial] = study.suggest(1, "w")
    transport = client.transport
    real = transport._connection
    calls = {"n": 0}

    class BadGateway:
        status = 502

        def read(self) -> bytes:
            return b"<html>502 Bad Gateway</html>"

        def getheader(self, name: str, default: str = "") -> str:
            return default

    class AnswersBadGateway:
        def __init__(self, conn):  # type: ignore[no-untyped-def]
            self.conn = conn

        def request(self, *a, **k):  # type: ignore[no-untyped-def]
            self.conn.request(*a, **k)

        def getresponse(self):  # type: ignore[no-untyped-def]
            self.conn.getresponse().read()
            return BadGateway()

        def close(self) -> None:
            self.conn.close()

    def proxied():  # type: ignore[no-untyped-def]
        calls["n"] += 1
        conn = real()
        return AnswersBadGateway(conn) if calls["n"] == 1 else conn

    transport._connection = proxied  # type: ignore[method-assign]
    trial.complete(0.7)
    transport._connection = real  # type: ignore[method-assign]
    assert trial.state == "SUCCEEDED" and trial.value == 0.7
    assert study.trial(trial.id).state == "SUCCEEDED"
    assert transport.retries.get("502") == 1


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _first_contact_fails_fast(url: str, says: str) -> None:
    client = bo.Client(url)
    started = time.monotonic()
    with pytest.raises(bo.ConnectionFailed) as e:
        client.create_study("never", one_float(), metrics={"m": "MAXIMIZE"})
    assert time.monotonic() - started < 5.0
    assert url in str(e.value) and says in str(e.value), str(e.value)


def test_nothing_listening_fails_within_five_seconds_naming_the_url() -> None:
    _first_contact_fails_fast(f"http://127.0.0.1:{_closed_port()}", "connection refused")


def test_an_unknown_host_fails_at_once() -> None:
    _first_contact_fails_fast("http://no-such-host.invalid:8080", "unknown host")


def test_tls_to_the_plain_port_says_to_use_http(server: Server) -> None:
    _first_contact_fails_fast(server.url.replace("http://", "https://"), "use http://")


def test_plain_http_to_a_tls_port_says_to_use_https(tmp_path: pathlib.Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-days", "1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve() -> None:
        # A TLS server: the plain request fails its handshake, and it closes the connection.
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            try:
                context.wrap_socket(conn, server_side=True)
            except (ssl.SSLError, OSError):
                pass
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        _first_contact_fails_fast(f"http://127.0.0.1:{port}", "use https://")
    finally:
        listener.close()


def test_a_server_that_answered_is_waited_for_and_each_retry_logged(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    client = bo.Client(server.url)
    study = client.create_study("logged", one_float(), metrics={"m": "MAXIMIZE"})
    [trial] = study.suggest(1, "w")
    server.kill()
    back = threading.Timer(5.0, lambda: server.start(wait=False))
    back.start()
    try:
        with caplog.at_level(logging.WARNING, logger="bo_client"):
            trial.complete(0.4)
    finally:
        back.join()
    assert trial.state == "SUCCEEDED"
    lines = [r.getMessage() for r in caplog.records if r.name == "bo_client"]
    assert lines and all(":complete" in line and "connection refused" in line and "giving up in" in line for line in lines), lines


def test_wait_ready_waits_for_a_server_that_is_starting(server: Server) -> None:
    server.kill()
    threading.Timer(1.0, lambda: server.start(wait=False)).start()
    client = bo.Client(server.url)
    client.wait_ready(timeout=60)
    assert client.create_study("ready", one_float(), metrics={"m": "MAXIMIZE"}).state == "ACTIVE"
