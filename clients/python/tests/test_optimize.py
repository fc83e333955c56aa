"""study.optimize against the real server: parallel workers, exceptions as infeasible trials,
the end of a finite study, a progress line, and Ctrl-C that leaves no trial ACTIVE."""
import logging
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import bo_client as bo
from conftest import Server

SRC = pathlib.Path(__file__).resolve().parents[1] / "src"


def space() -> bo.SearchSpace:
    s = bo.SearchSpace()
    s.float("x", -2.0, 2.0)
    s.categorical("kind", ["a", "b"]).when("b").integer("n", 1, 4)
    return s


def test_parallel_workers_run_exactly_n_trials(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    study = bo.Client(server.url, project="demo").create_study("opt", space(), metrics={"loss": "MINIMIZE"})
    seen = set()

    def objective(trial: bo.Trial) -> float:
        seen.add(trial.client_id)
        if trial["kind"] == "b" and trial["n"] == 4:
            raise RuntimeError("n=4 diverged")
        if trial["kind"] == "b" and trial["n"] == 3:
            return float("nan")
        time.sleep(0.02)
        return float(trial["x"]) ** 2

    with caplog.at_level(logging.WARNING, logger="bo_client"):
        result = study.optimize(objective, n_trials=24, n_workers=3, client_id="job", progress=False, catch=(RuntimeError,))
    trials = list(study.trials())
    assert len(trials) == 24 and len(result.trials) == 24 and result.reason == "n_trials"
    assert all(t.done for t in trials)
    assert seen == {"job-0", "job-1", "job-2"}
    failed = [t for t in trials if t.state == "INFEASIBLE"]
    assert result.infeasible == len(failed)
    assert all(t.infeasible_reason == "RuntimeError: n=4 diverged" for t in failed if t["n"] == 4)
    nan = "the objective returned an unusable value: metric 'loss': nan is not a finite number"
    assert all(t.infeasible_reason == nan for t in failed if t["n"] == 3)
    assert {t["n"] for t in failed} <= {3, 4}
    # Each caught exception is logged with its traceback, each unusable value with its reason.
    caught = [r for r in caplog.records if r.exc_info]
    assert len(caught) == sum(1 for t in failed if t["n"] == 4)
    assert not caught or "RuntimeError: n=4 diverged" in caplog.text
    best = study.best_trial()
    assert best is not None and best.value == min(t.value for t in trials if t.value is not None)


def test_infeasible_and_measurements_and_the_end_of_a_grid(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    s = bo.SearchSpace()
    s.categorical("c", ["a", "b", "c"])
    s.discrete("d", [1.0, 2.0])
    study = bo.Client(server.url, project="demo").create_study("grid", s, metrics={"m": "MAXIMIZE"}, algorithm="GRID_SEARCH")

    def objective(trial: bo.Trial) -> None:
        if trial["c"] == "c":
            raise bo.Infeasible("c is not allowed")
        if trial["c"] == "b" and trial["d"] == 2.0:
            return float("inf")  # type: ignore[return-value]
        trial.add_measurement({"m": float(trial["d"])}, step=1)
        # None: the trial's last measurement completes it.

    result = study.optimize(objective, n_trials=50, progress=True)
    assert result.reason == "exhausted" and len(result.trials) == 6
    assert sorted(t.state for t in study.trials()) == ["INFEASIBLE"] * 3 + ["SUCCEEDED"] * 3
    assert {t.infeasible_reason for t in study.trials() if t.state == "INFEASIBLE"} == {
        "c is not allowed", "the objective returned an unusable value: metric 'm': inf is not a finite number"}
    err = capsys.readouterr().err
    assert "6/50" in err and "best 2" in err
    assert result.infeasible == 3


# The child takes SIGINT as a terminal's Ctrl-C does: a test run started in the background (a
# non-interactive shell's `cmd &` ignores SIGINT and SIGQUIT, as a CI runner's may) leaves pytest
# ignoring SIGINT, which a child inherits (Python then keeps it ignored), and the interrupt was
# lost: the child's stderr stayed empty for 40 s after it.
CTRL_C = textwrap.dedent(
    """
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {src!r})
    import bo_client as bo
    s = bo.SearchSpace()
    s.float("x", 0.0, 1.0)
    study = bo.Client({url!r}, project="demo").create_study("ctrl-c", s, metrics={{"m": "MAXIMIZE"}})
    def objective(trial):
        if trial.id > 3:
            print("started", trial.id, flush=True)
            time.sleep(600)
        return float(trial["x"])
    study.optimize(objective, n_trials=100, n_workers=3, client_id="job")
    """
)


def test_ctrl_c_leaves_no_trial_active(server: Server) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C.format(src=str(SRC), url=server.url)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    started = 0
    while started < 3:
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        started += line.startswith("started")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    trials = list(bo.Client(server.url, project="demo").load_study("ctrl-c").trials())
    assert len(trials) == 6
    assert [t.state for t in trials].count("ACTIVE") == 0
    interrupted = [t for t in trials if t.state == "INFEASIBLE"]
    assert len(interrupted) == 3 and {t.infeasible_reason for t in interrupted} == {"interrupted: KeyboardInterrupt"}


WORKER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {src!r})
    import bo_client as bo
    study = bo.Client({url!r}, project="demo").load_study("killed")
    [trial] = study.suggest(1, {client!r})
    print(trial.id, flush=True)
    time.sleep(600)
    """
)


def test_a_killed_worker_s_trial_is_resumed_by_its_client_id_or_leased_to_another(server: Server) -> None:
    client = bo.Client(server.url, project="demo")
    s = bo.SearchSpace()
    s.float("x", 0.0, 1.0)
    study = client.create_study("killed", s, metrics={"m": "MAXIMIZE"}, algorithm_config={"trialLease": "1s"})

    def start(client_id: str) -> "tuple[subprocess.Popen[str], int]":
        p = subprocess.Popen(
            [sys.executable, "-c", WORKER.format(src=str(SRC), url=server.url, client=client_id)], stdout=subprocess.PIPE, text=True
        )
        assert p.stdout is not None
        return p, int(p.stdout.readline())

    # A worker dies mid-trial (SIGKILL: no handler runs) and restarts under its id: it gets the
    # same trial back, with the same parameters.
    worker, first = start("worker-a")
    worker.kill()
    worker.wait()
    again, resumed = start("worker-a")
    again.kill()
    again.wait()
    assert resumed == first
    x = study.trial(first)["x"]
    # A worker that never comes back: after the study's one-second lease, another client gets
    # its trial.
    time.sleep(1.5)
    [taken] = study.suggest(1, "worker-b")
    assert (taken.id, taken["x"]) == (first, x)
    taken.complete(1.0)
    assert [t.state for t in study.trials()] == ["SUCCEEDED"]
