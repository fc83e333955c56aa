"""Seven scripts from Optuna's own examples repository (vendored unchanged under
tests/optuna_examples, with their licence) run to the end against the real server with only
their sampler (and pruner) line changed to bo's, and the import of bo's classes added: the test
makes the change, checks that nothing else differs, runs the script, and checks that every trial
it ran is a finished trial of the bo study."""
import difflib
import os
import pathlib
import subprocess
import sys
from typing import Dict, List, Tuple

import pytest

import bo_client as bo
from conftest import Server

EXAMPLES = pathlib.Path(__file__).resolve().parents[3] / "tests" / "optuna_examples"
SRC = pathlib.Path(__file__).resolve().parents[1] / "src"

IMPORT = "from bo_client.optuna import BoPruner, BoSampler"

#: For each script: the line as Optuna's example has it, and as it reads with bo.
SWITCHES: Dict[str, Tuple[str, str]] = {
    "sklearn/sklearn_simple.py": (
        'study = optuna.create_study(direction="maximize")',
        'study = optuna.create_study(direction="maximize", sampler=BoSampler())',
    ),
    "lightgbm/lightgbm_simple.py": (
        'study = optuna.create_study(direction="maximize")',
        'study = optuna.create_study(direction="maximize", sampler=BoSampler())',
    ),
    # Optuna's default pruner is its MedianPruner; bo's is named.
    "basic/pruning.py": (
        'study = optuna.create_study(direction="maximize")',
        'study = optuna.create_study(direction="maximize", sampler=BoSampler(), pruner=BoPruner())',
    ),
    "xgboost/xgboost_integration.py": (
        "pruner=optuna.pruners.MedianPruner(n_warmup_steps=5), direction=\"maximize\"",
        "pruner=BoPruner(n_warmup_steps=5), direction=\"maximize\", sampler=BoSampler()",
    ),
    "multi_objective/quadratic_simple.py": (
        'study = optuna.create_study(directions=["minimize", "maximize"])',
        'study = optuna.create_study(directions=["minimize", "maximize"], sampler=BoSampler())',
    ),
    "basic/quadratic_constraint.py": (
        "sampler = optuna.samplers.TPESampler(constraints_func=constraints)",
        "sampler = BoSampler(constraints_func=constraints)",
    ),
    # OptunaSearchCV takes its study: the study's sampler is bo's.
    "sklearn/sklearn_optuna_search_cv_simple.py": (
        "clf, param_distributions, n_trials=100, timeout=600, verbose=2",
        "clf, param_distributions, n_trials=100, timeout=600, verbose=2, "
        'study=optuna.create_study(direction="maximize", sampler=BoSampler())',
    ),
}


def switched(source: str, old: str, new: str) -> str:
    """The script with bo's sampler: the one line changed, bo's import after Optuna's."""
    assert source.count(old) == 1, f"{old!r} is not once in the script"
    lines = source.replace(old, new).splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("import optuna"))
    lines.insert(at + 1, IMPORT + "\n")
    return "".join(lines)


def changed_lines(before: str, after: str) -> List[str]:
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [d for d in diff if d[:1] in "+-" and not d.startswith(("+++", "---"))]


def test_every_vendored_example_is_run() -> None:
    assert {str(p.relative_to(EXAMPLES)) for p in EXAMPLES.rglob("*.py")} == set(SWITCHES)


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_an_optuna_example_runs_with_only_its_sampler_changed(server: Server, tmp_path: pathlib.Path, name: str) -> None:
    source = (EXAMPLES / name).read_text()
    old, new = SWITCHES[name]
    script = switched(source, old, new)
    changes = changed_lines(source, script)
    assert len([c for c in changes if c.startswith("+")]) == 2 and len([c for c in changes if c.startswith("-")]) == 1, changes
    assert all("BoSampler" in c or "BoPruner" in c or c.startswith("-") for c in changes), changes
    path = tmp_path / pathlib.Path(name).name
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(SRC), "BO_URL": server.url}
    out = subprocess.run([sys.executable, str(path)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-6000:]
    studies = list(bo.Client(server.url).studies())
    assert len(studies) == 1, [s.display_name for s in studies]
    trials = studies[0].trials()
    assert trials, "the bo study has no trial"
    states = {t.state for t in trials}
    assert states <= {"SUCCEEDED", "INFEASIBLE"}, states
    failed = [t.infeasible_reason for t in trials if t.state == "INFEASIBLE"]
    assert not failed, failed
    assert not any(t.infeasible_reason for t in trials)
