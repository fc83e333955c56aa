"""Optuna scripts as Optuna's own examples are written — a conditional scikit-learn objective,
two objectives with a Pareto front, pruning with ``trial.report`` (examples/optuna_migration.py,
run by test_examples.py) — each with only its sampler changed, run as scripts against the real
server; every trial they ran is a trial of the bo study, with the same values."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import bo_client as bo
from conftest import Server

SCRIPTS = pathlib.Path(__file__).resolve().parent / "optuna_scripts"
SRC = pathlib.Path(__file__).resolve().parents[1] / "src"

CASES = {
    "sklearn_conditional.py": ("sklearn-conditional", r"best \{'classifier': '(SVC|RandomForest)', .*\}: accuracy 0\.\d{3} after 16 trials"),
    "multi_objective.py": ("multi-objective", r"\d+ trials on the front of 16: \(parameters, error\) \[\(\d+, 0\.\d+\)"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_optuna_script_runs_with_only_its_sampler_changed(server: Server, name: str) -> None:
    study_name, expected = CASES[name]
    env = {**os.environ, "PYTHONPATH": str(SRC), "BO_URL": server.url}
    out = subprocess.run([sys.executable, str(SCRIPTS / name)], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    assert re.search(expected, out.stdout), out.stdout
    trials = list(bo.Client(server.url).load_study(study_name).trials())
    assert len(trials) == 16 and all(t.state == "SUCCEEDED" for t in trials), [(t.state, t.infeasible_reason) for t in trials]
