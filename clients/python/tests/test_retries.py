"""Retries against the real server: a 503 while the database is locked, 429s over a key's rate,
and a server that goes away and comes back — each request succeeds once, with nothing doubled."""
import sqlite3
import threading
import time

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
