"""Optuna's samplers (TPE, GPSampler, random) on bo-bench's problems, for comparison.

Same problems, budgets and JSON shape as `bo-bench run` (minimised; `regret` is best-so-far
simple regret after each evaluation; `suggest_seconds` the time of ask + objective + tell, in
which the objectives' microseconds are negligible):

    bash bench/peers/run.sh --problem hartmann6 --sampler gp --budget 100 --seeds 5 --out out.json

Problem definitions mirror crates/bo-bench/src/problems.rs (constants from the Virtual Library
of Simulation Experiments; Jenatton from ../shared/algorithms/conditional.md §A5.2).
"""
import argparse
import json
import math
import statistics
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)


def branin(t):
    x0, x1 = t.suggest_float("x0", -5, 10), t.suggest_float("x1", 0, 15)
    b, c, r, s, tt = 5.1 / (4 * math.pi**2), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    return (x1 - b * x0**2 + c * x0 - r) ** 2 + s * (1 - tt) * math.cos(x0) + s


def _hartmann(x, a, p):
    alpha = [1.0, 1.2, 3.0, 3.2]
    return -sum(alpha[i] * math.exp(-sum(a[i][j] * (x[j] - p[i][j]) ** 2 for j in range(len(x)))) for i in range(4))


def hartmann3(t):
    x = [t.suggest_float(f"x{i}", 0, 1) for i in range(3)]
    a = [[3, 10, 30], [0.1, 10, 35], [3, 10, 30], [0.1, 10, 35]]
    p = [[0.3689, 0.1170, 0.2673], [0.4699, 0.4387, 0.7470], [0.1091, 0.8732, 0.5547], [0.03815, 0.5743, 0.8828]]
    return _hartmann(x, a, p)


def hartmann6(t):
    x = [t.suggest_float(f"x{i}", 0, 1) for i in range(6)]
    a = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
    p = [
        [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
        [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
        [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
        [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
    ]
    return _hartmann(x, a, p)


def ackley5(t):
    x = [t.suggest_float(f"x{i}", -32.768, 32.768) for i in range(5)]
    d = len(x)
    return -20 * math.exp(-0.2 * math.sqrt(sum(v * v for v in x) / d)) - math.exp(sum(math.cos(2 * math.pi * v) for v in x) / d) + 20 + math.e


def levy10(t):
    x = [t.suggest_float(f"x{i}", -10, 10) for i in range(10)]
    w = [1 + (v - 1) / 4 for v in x]
    f = math.sin(math.pi * w[0]) ** 2
    f += sum((wi - 1) ** 2 * (1 + 10 * math.sin(math.pi * wi + 1) ** 2) for wi in w[:-1])
    return f + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)


def rosenbrock4(t):
    x = [t.suggest_float(f"x{i}", -5, 10) for i in range(4)]
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))


def styblinski_tang8(t):
    x = [t.suggest_float(f"x{i}", -5, 5) for i in range(8)]
    return 0.5 * sum(v**4 - 16 * v * v + 5 * v for v in x)


def jenatton(t):
    if t.suggest_categorical("x1", ["0", "1"]) == "0":
        r8 = t.suggest_float("r8", 0, 1)
        if t.suggest_categorical("x2", ["0", "1"]) == "0":
            return t.suggest_float("x4", -1, 1) ** 2 + 0.1 + r8
        return t.suggest_float("x5", -1, 1) ** 2 + 0.2 + r8
    r9 = t.suggest_float("r9", 0, 1)
    if t.suggest_categorical("x3", ["0", "1"]) == "0":
        return t.suggest_float("x6", -1, 1) ** 2 + 0.3 + r9
    return t.suggest_float("x7", -1, 1) ** 2 + 0.4 + r9


PROBLEMS = {
    "branin": (branin, 0.397887),
    "hartmann3": (hartmann3, -3.86278),
    "hartmann6": (hartmann6, -3.32237),
    "ackley5": (ackley5, 0.0),
    "levy10": (levy10, 0.0),
    "rosenbrock4": (rosenbrock4, 0.0),
    "styblinski_tang8": (styblinski_tang8, -39.16616570377142 * 8),
    "jenatton": (jenatton, 0.1),
}


def sampler_for(name, seed):
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise SystemExit(f"unknown sampler {name!r}: tpe, gp, random")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    ap.add_argument("--sampler", required=True, choices=["tpe", "gp", "random"])
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args()
    fn, optimum = PROBLEMS[args.problem]
    runs = []
    for seed in range(args.seeds):
        study = optuna.create_study(sampler=sampler_for(args.sampler, seed), direction="minimize")
        best, regret, seconds = math.inf, [], []
        for _ in range(args.budget):
            start = time.perf_counter()
            trial = study.ask()
            value = fn(trial)
            study.tell(trial, value)
            # The objectives take microseconds: this is the sampler's time.
            seconds.append(time.perf_counter() - start)
            best = min(best, value)
            regret.append(max(best - optimum, 0.0))
        runs.append({"seed": seed, "regret": regret, "suggest_seconds": seconds})
        print(f"seed {seed}: final regret {regret[-1]:.3e}, mean {1e3 * statistics.mean(seconds):.1f} ms per suggestion", flush=True)
    for at in sorted({a for a in (10, 25, 50, 100, 200, 300) if a <= args.budget} | {args.budget}):
        print(f"  after {at:>4}: {statistics.median(r['regret'][at - 1] for r in runs):.3e}")
    report = {"problem": args.problem, "algorithm": f"optuna-{args.sampler}", "budget": args.budget, "optimum": optimum, "runs": runs}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f)


if __name__ == "__main__":
    main()
