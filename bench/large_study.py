"""A large study over HTTP beside Optuna's TPE: Hartmann-6 preloaded with N uniformly random
evaluations (the same points for both), then STEPS suggestions one at a time, each evaluated
and reported. Prints each one's regret before and after the steps and its seconds per ask.

    target/release/bo-server --listen 127.0.0.1:18181 --database-url sqlite:///tmp/large.db &
    target/peers/venv/bin/python bench/large_study.py --base http://127.0.0.1:18181 --trials 10000 --steps 30 --seeds 3

bo's study is GP_BANDIT, which beyond 2,048 trials is fitted on 1,024 of them chosen by
relevance (crates/bo-core/src/designer/subset.rs).
"""
import argparse
import json
import random
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from problems import hartmann6_of  # noqa: E402

OPTIMUM = -3.32237


def preload(n, seed):
    rng = random.Random(seed)
    points = [[rng.random() for _ in range(6)] for _ in range(n)]
    return [(x, hartmann6_of(x)) for x in points]


def bo_run(base, n, steps, seed):
    root = f"{base}/v1/projects/large/locations/local"

    def call(method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(root + path, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())

    spec = {"displayName": f"large-{n}-{seed}-{time.time_ns()}", "studySpec": {
        "metrics": [{"metricId": "f", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT",
        "parameters": [{"parameterId": f"x{i}", "doubleValueSpec": {"minValue": 0, "maxValue": 1}} for i in range(6)]}}
    study = call("POST", "/studies", spec)["name"].rsplit("/", 1)[1]
    best = float("inf")
    for x, y in preload(n, seed):
        best = min(best, y)
        call("POST", f"/studies/{study}/trials", {"parameters": [{"parameterId": f"x{i}", "value": v} for i, v in enumerate(x)],
                                                  "finalMeasurement": {"metrics": [{"metricId": "f", "value": y}]}})
    before, times = best, []
    for _ in range(steps):
        t = time.perf_counter()
        op = call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": "w"})
        times.append(time.perf_counter() - t)
        if not op["done"]:
            raise SystemExit(f"a pending operation: {op['name']}")
        trial = op["response"]["trials"][0]
        x = [next(p["value"] for p in trial["parameters"] if p["parameterId"] == f"x{i}") for i in range(6)]
        y = hartmann6_of(x)
        best = min(best, y)
        call("POST", f"/studies/{study}/trials/{trial['id']}:complete", {"finalMeasurement": {"metrics": [{"metricId": "f", "value": y}]}})
    return before - OPTIMUM, best - OPTIMUM, statistics.median(times)


def tpe_run(n, steps, seed):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    dist = {f"x{i}": optuna.distributions.FloatDistribution(0, 1) for i in range(6)}
    data = preload(n, seed)
    study.add_trials([optuna.trial.create_trial(params={f"x{i}": v for i, v in enumerate(x)}, distributions=dist, value=y) for x, y in data])
    best = min(y for _, y in data)
    before, times = best, []
    for _ in range(steps):
        t = time.perf_counter()
        trial = study.ask(dist)
        times.append(time.perf_counter() - t)
        y = hartmann6_of([trial.params[f"x{i}"] for i in range(6)])
        best = min(best, y)
        study.tell(trial, y)
    return before - OPTIMUM, best - OPTIMUM, statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="http://127.0.0.1:8080")
    ap.add_argument("--trials", type=int, default=10000)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args()
    rows = {"bo": [], "tpe": []}
    for seed in range(args.seeds):
        rows["bo"].append(bo_run(args.base, args.trials, args.steps, seed))
        rows["tpe"].append(tpe_run(args.trials, args.steps, seed))
        print(f"seed {seed}: bo {rows['bo'][-1]}  tpe {rows['tpe'][-1]}", flush=True)
    print(f"\nHartmann-6, {args.trials} random trials preloaded, then {args.steps} suggestions ({args.seeds} seeds, medians)")
    print("| optimiser | regret of the preload | regret after | seconds per suggest |")
    print("| --- | --- | --- | --- |")
    for name, label in [("bo", "bo GP_BANDIT (subset of 1,024)"), ("tpe", "Optuna TPE")]:
        r = rows[name]
        med = lambda i: statistics.median(x[i] for x in r)  # noqa: E731
        print(f"| {label} | {med(0):.4f} | {med(1):.4f} | {med(2):.3f} |")
        print(f"|   per seed (after) | | {', '.join(f'{x[1]:.4f}' for x in r)} | |")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"trials": args.trials, "steps": args.steps, "rows": rows}, f)


if __name__ == "__main__":
    main()
