"""Every example in clients/python/examples runs against the real server, as its docstring says
to run it, and prints its result."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import Server

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
SRC = EXAMPLES.parent / "src"

CASES = {
    "pytorch_training.py": (["--trials", "12"], r"best trial \d+: accuracy (0\.\d{3}|1\.000) with \{'optimizer'"),
    "sklearn_search.py": (["--n-iter", "8"], r"best \{'C': .*\}: cross-validated 0\.\d{3}, held out 0\.\d{3}"),
    "optuna_migration.py": (["--n-trials", "16"], r"best \{.alpha.: .*\}: accuracy 0\.\d{3}; \d+ of 16 trials pruned\nbo study optuna-migration: l1_ratio under .*"),
    # Each resumed trial checks that the checkpoint it loads was saved at its resumedAt.
    "asha_checkpoints.py": (["--epochs", "80"], r"best trial \d+: accuracy (0\.\d{3}|1\.000) with .*; [1-9]\d* of \d+ trials resumed, \d+ epochs"),
}


def test_every_example_is_tested() -> None:
    # quickstart.py: test_quickstart.py; ray_tune.py: test_ray.py (in the Ray venv).
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(CASES) | {"quickstart.py", "ray_tune.py"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_example_runs(server: Server, name: str) -> None:
    args, expected = CASES[name]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, str(EXAMPLES / name), "--url", server.url, *args], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert re.search(expected, out.stdout), out.stdout
