"""What a pruning step costs: Optuna's `basic/pruning.py` objective (an SGD classifier on iris,
100 steps, `trial.report` then `trial.should_prune` at each) under Optuna alone (TPE and its
MedianPruner) and under bo (BoSampler with BoPruner — Optuna's median rule on the server — and
with Vizier's median rule), in one run, on one machine:

    target/pyenv/bin/python bench/peers/pruning_cost.py --runs 3 --trials 100

For each arm: the median and 90th percentile of one step's `report` + `should_prune` (timed
inside the objective), the training steps run in all, the whole run's time, and how many trials
were pruned. The arms differ in what they prune as much as in what a step costs: a run's time is
mostly its training steps. The bo server is
the release binary, started here on a fresh SQLite file."""
import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
sys.path.insert(0, HERE)

import optuna  # noqa: E402
import sklearn.datasets  # noqa: E402
import sklearn.linear_model  # noqa: E402
import sklearn.model_selection  # noqa: E402

import bo_client as bo  # noqa: E402
from bo_client.optuna import BoPruner, BoSampler  # noqa: E402
from define_by_run import start_server  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)


def make_objective(steps_out):
    """Optuna's basic/pruning.py objective, its report and should_prune timed."""

    def objective(trial):
        iris = sklearn.datasets.load_iris()
        classes = list(set(iris.target))
        train_x, valid_x, train_y, valid_y = sklearn.model_selection.train_test_split(iris.data, iris.target, test_size=0.25)
        alpha = trial.suggest_float("alpha", 1e-5, 1e-1, log=True)
        clf = sklearn.linear_model.SGDClassifier(alpha=alpha)
        for step in range(100):
            clf.partial_fit(train_x, train_y, classes=classes)
            intermediate_value = clf.score(valid_x, valid_y)
            started = time.perf_counter()
            trial.report(intermediate_value, step)
            prune = trial.should_prune()
            steps_out.append(time.perf_counter() - started)
            if prune:
                raise optuna.TrialPruned()
        return clf.score(valid_x, valid_y)

    return objective


def arm(name, url, trials, run):
    steps = []
    if name == "optuna":
        study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=run), pruner=optuna.pruners.MedianPruner())
    elif name == "bo":
        # As a user writes it: no seed (a seeded study is reproducible: each suggest waits for the
        # model of every result). BoPruner() is Optuna's MedianPruner on the server.
        study = optuna.create_study(direction="maximize", study_name=f"pruning-{run}", sampler=BoSampler(url), pruner=BoPruner())
    elif name == "bo-seeded":
        study = optuna.create_study(direction="maximize", study_name=f"pruning-seeded-{run}", sampler=BoSampler(url, seed=run), pruner=BoPruner())
    else:  # Vizier's median rule: the median of the completed trials' running averages
        study = optuna.create_study(
            direction="maximize", study_name=f"pruning-vizier-{run}", sampler=BoSampler(url), pruner=BoPruner(stopping=bo.MedianStopping())
        )
    started = time.monotonic()
    study.optimize(make_objective(steps), n_trials=trials)
    total = time.monotonic() - started
    pruned = sum(t.state == optuna.trial.TrialState.PRUNED for t in study.trials)
    return steps, total, pruned, study.best_value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trials", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(os.path.join(tmp, "bo.db"))
        try:
            rows = {}
            for run in range(args.runs):
                for name in ("optuna", "bo", "bo-seeded", "bo-vizier"):
                    steps, total, pruned, best = arm(name, url, args.trials, run)
                    rows.setdefault(name, []).append((steps, total, pruned, best))
                    ms = sorted(s * 1000 for s in steps)
                    print(f"run {run} {name:12}: step median {statistics.median(ms):.3f} ms, p90 {ms[int(0.9 * len(ms))]:.3f} ms; "
                          f"{total:.1f} s; {pruned} pruned; best {best:.3f}", flush=True)
        finally:
            proc.terminate()
            proc.wait()
    print()
    print(f"| arm | step median (ms) | step p90 (ms) | steps run | run (s) | pruned of {args.trials} | best |")
    print("|---|---|---|---|---|---|---|")
    for name, results in rows.items():
        ms = sorted(s * 1000 for steps, *_ in results for s in steps)
        totals = [r[1] for r in results]
        pruned = [r[2] for r in results]
        best = [r[3] for r in results]
        steps_run = statistics.median(len(r[0]) for r in results)
        print(f"| {name} | {statistics.median(ms):.3f} | {ms[int(0.9 * len(ms))]:.3f} | {steps_run:.0f} | {statistics.median(totals):.1f} "
              f"({min(totals):.1f}–{max(totals):.1f}) | {statistics.median(pruned):.0f} ({min(pruned)}–{max(pruned)}) | "
              f"{statistics.median(best):.3f} |")


if __name__ == "__main__":
    main()
