"""Define-by-run objectives under Optuna: bo's BoSampler letting the space grow as the objective
asks (`bo-open`), BoSampler with the same tree declared by hand (`bo-declared`), Optuna's default
TPE (`tpe`), its multivariate TPE with group decomposition (`tpe-group`) and random sampling
(`random`), on the same objectives, seeds and budgets, in one run:

    target/pyenv/bin/python bench/peers/define_by_run.py --seeds 10 --trials 50 --out target/define_by_run.json

Objectives (each a conditional space written the Optuna way: a branch, then the branch's own
parameters):

- `sklearn_digits`: a classifier among SVC (C, gamma), a random forest (depth, features),
  logistic regression (C) and k-nearest neighbours (k, weights), by 3-fold cross-validated
  accuracy on scikit-learn's digits (fixed folds; no known optimum: regret is against the best
  accuracy any run found).
- `jenatton`: Jenatton et al. 2017's tree function (minimum 0.1), as bo-bench has it.
- `mlp_shape`: a layer count, a width per layer, an optimizer with its own momentum, a learning
  rate — a synthetic loss with its minimum 0.1 at two layers of 256 and 128 under Adam at 1e-3.

The bo server is the release binary (built first if missing), started here on a fresh SQLite
file; a seeded BoSampler makes a reproducible study. Prints a table of the median final regret
(and at a quarter of the budget) with its interquartile range, and writes every run's best-so-far
curve to `--out`."""
import argparse
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))

import optuna  # noqa: E402

import bo_client as bo  # noqa: E402
from bo_client.optuna import BoSampler  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)


# -- objectives --------------------------------------------------------------------------------


def _digits():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    return x / 16.0, y


DIGITS = None


def sklearn_digits(trial):
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.svm import SVC

    global DIGITS
    if DIGITS is None:
        DIGITS = _digits()
    x, y = DIGITS
    kind = trial.suggest_categorical("classifier", ["SVC", "RandomForest", "LogisticRegression", "KNN"])
    if kind == "SVC":
        model = SVC(C=trial.suggest_float("svc_c", 1e-3, 1e3, log=True), gamma=trial.suggest_float("svc_gamma", 1e-5, 1e-1, log=True))
    elif kind == "RandomForest":
        model = RandomForestClassifier(
            n_estimators=30,
            max_depth=trial.suggest_int("rf_max_depth", 2, 32, log=True),
            max_features=trial.suggest_float("rf_max_features", 0.05, 1.0),
            random_state=0,
        )
    elif kind == "LogisticRegression":
        model = LogisticRegression(C=trial.suggest_float("lr_c", 1e-4, 1e2, log=True), max_iter=300)
    else:
        model = KNeighborsClassifier(
            n_neighbors=trial.suggest_int("knn_k", 1, 30), weights=trial.suggest_categorical("knn_weights", ["uniform", "distance"])
        )
    return float(cross_val_score(model, x, y, cv=StratifiedKFold(3)).mean())


def jenatton(trial):
    if trial.suggest_categorical("x1", ["0", "1"]) == "0":
        r8 = trial.suggest_float("r8", 0.0, 1.0)
        if trial.suggest_categorical("x2", ["0", "1"]) == "0":
            return trial.suggest_float("x4", 0.0, 1.0) ** 2 + 0.1 + r8
        return trial.suggest_float("x5", 0.0, 1.0) ** 2 + 0.2 + r8
    r9 = trial.suggest_float("r9", 0.0, 1.0)
    if trial.suggest_categorical("x3", ["0", "1"]) == "0":
        return trial.suggest_float("x6", 0.0, 1.0) ** 2 + 0.3 + r9
    return trial.suggest_float("x7", 0.0, 1.0) ** 2 + 0.4 + r9


def mlp_shape(trial):
    layers = trial.suggest_int("n_layers", 1, 3)
    loss = {1: 0.3, 2: 0.1, 3: 0.15}[layers]
    for i in range(layers):
        units = trial.suggest_int(f"units_l{i}", 16, 512, log=True)
        loss += 0.1 * ((math.log2(units) - (8 - i)) / 4) ** 2
    lr = None
    if trial.suggest_categorical("optimizer", ["adam", "sgd"]) == "sgd":
        momentum = trial.suggest_float("momentum", 0.0, 0.99)
        lr = trial.suggest_float("lr", 1e-5, 1.0, log=True)
        return loss + 0.05 * (math.log10(lr) + 1) ** 2 + 0.5 * (momentum - 0.9) ** 2 + 0.02
    lr = trial.suggest_float("lr", 1e-5, 1.0, log=True)
    return loss + 0.05 * (math.log10(lr) + 3) ** 2


# -- the trees declared by hand ---------------------------------------------------------------


def digits_space():
    s = bo.SearchSpace()
    kind = s.categorical("classifier", ["SVC", "RandomForest", "LogisticRegression", "KNN"])
    svc = kind.when("SVC")
    svc.float("svc_c", 1e-3, 1e3, log=True)
    svc.float("svc_gamma", 1e-5, 1e-1, log=True)
    rf = kind.when("RandomForest")
    rf.integer("rf_max_depth", 2, 32, log=True)
    rf.float("rf_max_features", 0.05, 1.0)
    kind.when("LogisticRegression").float("lr_c", 1e-4, 1e2, log=True)
    knn = kind.when("KNN")
    knn.integer("knn_k", 1, 30)
    knn.categorical("knn_weights", ["uniform", "distance"])
    return s


def jenatton_space():
    s = bo.SearchSpace()
    x1 = s.categorical("x1", ["0", "1"])
    left = x1.when("0")
    left.float("r8", 0.0, 1.0)
    x2 = left.categorical("x2", ["0", "1"])
    x2.when("0").float("x4", 0.0, 1.0)
    x2.when("1").float("x5", 0.0, 1.0)
    right = x1.when("1")
    right.float("r9", 0.0, 1.0)
    x3 = right.categorical("x3", ["0", "1"])
    x3.when("0").float("x6", 0.0, 1.0)
    x3.when("1").float("x7", 0.0, 1.0)
    return s


def mlp_space():
    s = bo.SearchSpace()
    layers = s.integer("n_layers", 1, 3)
    s.integer("units_l0", 16, 512, log=True)
    layers.when(2, 3).integer("units_l1", 16, 512, log=True)
    layers.when(3).integer("units_l2", 16, 512, log=True)
    s.categorical("optimizer", ["adam", "sgd"]).when("sgd").float("momentum", 0.0, 0.99)
    s.float("lr", 1e-5, 1.0, log=True)
    return s


#: name → (objective, direction, known optimum or None, the tree by hand)
OBJECTIVES = {
    "sklearn_digits": (sklearn_digits, "maximize", None, digits_space),
    "jenatton": (jenatton, "minimize", 0.1, jenatton_space),
    "mlp_shape": (mlp_shape, "minimize", 0.1, mlp_space),
}

METHODS = ("bo-open", "bo-declared", "tpe", "tpe-group", "random")


# -- the server ---------------------------------------------------------------------------------


def start_server(db):
    binary = os.path.join(ROOT, "target", "release", "bo-server")
    if not os.path.exists(binary):
        subprocess.run(["cargo", "build", "--release", "-p", "bo-server"], cwd=ROOT, check=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--database-url", f"sqlite://{db}", "--log", "error"])
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/readyz", timeout=1)
            return proc, url
        except Exception:
            time.sleep(0.1)
    raise RuntimeError("bo-server did not start")


# -- one run ------------------------------------------------------------------------------------


def sampler(method, seed, url, name, space):
    if method == "bo-open":
        return BoSampler(url, study_name=name, seed=seed)
    if method == "bo-declared":
        return BoSampler(url, study_name=name, seed=seed, search_space=space())
    if method == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if method == "tpe-group":
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True)
    return optuna.samplers.RandomSampler(seed=seed)


def run(objective_name, method, seed, trials, url):
    fn, direction, _, space = OBJECTIVES[objective_name]
    name = f"{objective_name}-{method}-{seed}"
    study = optuna.create_study(direction=direction, sampler=sampler(method, seed, url, name, space))
    started = time.monotonic()
    study.optimize(fn, n_trials=trials)
    elapsed = time.monotonic() - started
    best, curve = None, []
    better = (lambda a, b: a > b) if direction == "maximize" else (lambda a, b: a < b)
    for t in study.trials:
        if t.value is not None and (best is None or better(t.value, best)):
            best = t.value
        curve.append(best)
    failed = sum(t.state != optuna.trial.TrialState.COMPLETE for t in study.trials)
    return {"objective": objective_name, "method": method, "seed": seed, "curve": curve, "failed": failed, "seconds": elapsed}


def regret(objective_name, value, best_known):
    _, direction, optimum, _ = OBJECTIVES[objective_name]
    target = optimum if optimum is not None else best_known
    return (target - value) if direction == "maximize" else (value - target)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--objectives", default=",".join(OBJECTIVES))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(os.path.join(tmp, "bo.db"))
        try:
            runs = []
            for name in args.objectives.split(","):
                for method in args.methods.split(","):
                    for seed in range(args.seeds):
                        runs.append(run(name, method, seed, args.trials, url))
                        r = runs[-1]
                        print(f"{name:15} {method:12} seed {seed}: best {r['curve'][-1]:.5f} in {r['seconds']:.1f} s, {r['failed']} failed", flush=True)
        finally:
            proc.terminate()
            proc.wait()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(runs, f)
    quarter = max(1, args.trials // 4)
    print()
    print(f"Median regret (interquartile range) over {args.seeds} seeds, after {quarter} and {args.trials} trials; failed trials in all")
    print()
    print("| objective | method | after " + str(quarter) + " | after " + str(args.trials) + " | failed | s per run |")
    print("|---|---|---|---|---|---|")
    for name in args.objectives.split(","):
        _, direction, _, _ = OBJECTIVES[name]
        finals = [r["curve"][-1] for r in runs if r["objective"] == name]
        best_known = max(finals) if direction == "maximize" else min(finals)
        for method in args.methods.split(","):
            mine = [r for r in runs if r["objective"] == name and r["method"] == method]
            if not mine:
                continue

            def summary(at):
                values = sorted(regret(name, r["curve"][at - 1], best_known) for r in mine)
                q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
                return f"{statistics.median(values):.4f} ({q[0]:.4f}–{q[2]:.4f})"

            seconds = statistics.median(r["seconds"] for r in mine)
            failed = sum(r["failed"] for r in mine)
            print(f"| {name} | {method} | {summary(quarter)} | {summary(args.trials)} | {failed} | {seconds:.1f} |")


if __name__ == "__main__":
    main()
