"""The load pattern of `bo-bench load`, run against Optuna's RDB storage (SQLite or Postgres):
worker processes each loop "ask one trial, tell its value" on one study with RandomSampler
(Optuna's distributed setup: every worker talks to the database itself), over the same space.
With --prefill, the study is first filled with completed trials to each size and the loop
timed at each. Prints one line per measurement and writes JSON in bo-bench load's shape.

    bash bench/peers/load.sh --storage sqlite:///target/optuna.db --workers 16 --trials 2000
"""
import argparse
import json
import multiprocessing as mp
import time

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution

optuna.logging.set_verbosity(optuna.logging.WARNING)

DISTRIBUTIONS = {
    "x": FloatDistribution(-5.0, 10.0),
    "y": FloatDistribution(0.0, 15.0),
    "opt": CategoricalDistribution(["adam", "sgd"]),
}


def objective(params):
    return (params["x"] - 2.0) ** 2 + (params["y"] - 3.0) ** 2


def _worker(storage, name, n, seed, out):
    study = optuna.load_study(study_name=name, storage=storage, sampler=optuna.samplers.RandomSampler(seed=seed))
    asks, tells = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        trial = study.ask(DISTRIBUTIONS)
        t1 = time.perf_counter()
        study.tell(trial, objective(trial.params))
        t2 = time.perf_counter()
        asks.append((t1 - t0) * 1e3)
        tells.append((t2 - t1) * 1e3)
    out.put((asks, tells))


def _prefill(storage, name, start, n):
    study = optuna.load_study(study_name=name, storage=storage)
    for i in range(start, start + n):
        v = (i % 1000) / 100.0
        params = {"x": v - 5.0, "y": v, "opt": "adam" if i % 2 == 0 else "sgd"}
        study.add_trial(optuna.trial.create_trial(params=params, distributions=DISTRIBUTIONS, value=v))


def _spread(total, workers):
    return [total // workers + (1 if i < total % workers else 0) for i in range(workers)]


def latency(samples):
    samples = sorted(samples)
    at = lambda q: samples[round((len(samples) - 1) * q)]
    return {"count": len(samples), "p50_ms": at(0.5), "p99_ms": at(0.99), "mean_ms": sum(samples) / len(samples)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--storage", required=True)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--prefill", default="")
    ap.add_argument("--out")
    args = ap.parse_args()
    name = f"load-{time.time_ns()}"
    optuna.create_study(study_name=name, storage=args.storage, direction="minimize")
    steps = [int(s) for s in args.prefill.split(",") if s] or [0]
    ctx = mp.get_context("spawn")
    rows, filled = [], 0
    for size in steps:
        if size > filled:
            started = time.perf_counter()
            parts = _spread(size - filled, args.workers)
            procs, offset = [], filled
            for n in parts:
                p = ctx.Process(target=_prefill, args=(args.storage, name, offset, n))
                offset += n
                p.start()
                procs.append(p)
            for p in procs:
                p.join()
                assert p.exitcode == 0, "a prefill worker failed"
            print(f"prefilled {size - filled} trials in {time.perf_counter() - started:.1f} s", flush=True)
            filled = size
        out = ctx.Queue()
        procs = [ctx.Process(target=_worker, args=(args.storage, name, n, i, out)) for i, n in enumerate(_spread(args.trials, args.workers))]
        started = time.perf_counter()
        for p in procs:
            p.start()
        asks, tells = [], []
        for _ in procs:
            a, t = out.get()
            asks += a
            tells += t
        for p in procs:
            p.join()
            assert p.exitcode == 0, "a worker failed"
        wall = time.perf_counter() - started
        row = {
            "study_trials": filled, "replicas": 0, "workers": args.workers, "cycles": args.trials,
            "trials_per_s": args.trials / wall, "requests_per_s": 2 * args.trials / wall,
            "suggest": latency(asks), "complete": latency(tells),
        }
        print(
            f"{filled} trials in study, {args.workers} workers: {row['trials_per_s']:.0f} trials/s; "
            f"ask p50 {row['suggest']['p50_ms']:.2f} ms p99 {row['suggest']['p99_ms']:.2f} ms; "
            f"tell p50 {row['complete']['p50_ms']:.2f} ms p99 {row['complete']['p99_ms']:.2f} ms",
            flush=True,
        )
        rows.append(row)
        filled += args.trials
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
