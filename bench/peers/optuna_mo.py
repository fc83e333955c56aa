"""Optuna's multi-objective samplers (GPSampler with LogEHVI, NSGAIISampler) on bo-bench's
multi-objective problems, for comparison with `bo-bench multi`.

Same problems, budget and JSON shape as `bo-bench multi` (every objective minimised;
`hv_regret` is the hypervolume of the true front less that of the front observed so far, after
each evaluation, against the problem's fixed reference point; `suggest_seconds` the time of ask +
objective + tell, in which the objectives' microseconds are negligible):

    bash bench/peers/run.sh --mo --problem zdt1 --sampler gp --budget 100 --seeds 3 --out gp.json

Problem definitions mirror crates/bo-bench/src/multi.rs (Branin–Currin and ZDT/DTLZ as in
BoTorch's test functions, with their reference points). The conditional problem uses Optuna's
define-by-run space: a parameter is suggested only on the branch that uses it.
"""
import argparse
import json
import math
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)


def branin_currin(t):
    u0, u1 = t.suggest_float("x0", 0, 1), t.suggest_float("x1", 0, 1)
    x0, x1 = 15 * u0 - 5, 15 * u1
    b, c, r, s, tt = 5.1 / (4 * math.pi**2), 5 / math.pi, 6, 10, 1 / (8 * math.pi)
    branin = (x1 - b * x0**2 + c * x0 - r) ** 2 + s * (1 - tt) * math.cos(x0) + s
    # Currin's exponential: the factor's limit at x1 = 0 is 1.
    factor = 1 - math.exp(-1 / (2 * u1)) if u1 > 0 else 1.0
    currin = factor * (2300 * u0**3 + 1900 * u0**2 + 2092 * u0 + 60) / (100 * u0**3 + 500 * u0**2 + 4 * u0 + 20)
    return branin, currin


def _zdt(t, shape):
    x = [t.suggest_float(f"x{i}", 0, 1) for i in range(6)]
    g = 1 + 9 * sum(x[1:]) / 5
    f1 = x[0]
    return f1, g * shape(f1 / g)


def zdt1(t):
    return _zdt(t, lambda r: 1 - math.sqrt(r))


def zdt2(t):
    return _zdt(t, lambda r: 1 - r * r)


def dtlz2(t):
    x = [t.suggest_float(f"x{i}", 0, 1) for i in range(6)]
    g = sum((v - 0.5) ** 2 for v in x[2:])
    a, b = x[0] * math.pi / 2, x[1] * math.pi / 2
    return (1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b), (1 + g) * math.sin(a)


def model_choice(t):
    """Error vs cost of three model families, each with its own parameters (a tree)."""
    lr = t.suggest_float("lr", 1e-3, 1, log=True)
    shared = 0.05 * (math.log10(lr) + 1.5) ** 2
    model = t.suggest_categorical("model", ["linear", "mlp", "boosting"])
    if model == "linear":
        l2 = t.suggest_float("l2", 1e-4, 1, log=True)
        return 0.30 + 0.1 * (math.log10(l2) + 2) ** 2 / 4 + shared, 1.0
    if model == "mlp":
        width = t.suggest_float("width", 16, 1024, log=True)
        dropout = t.suggest_float("dropout", 0, 0.5)
        s = math.log2(width / 16) / 6
        return 0.08 + 0.2 * math.exp(-3 * s) + 0.3 * (dropout - 0.2) ** 2 + shared, 2 + 10 * s
    trees = t.suggest_int("trees", 10, 500)
    depth = t.suggest_int("depth", 2, 10)
    s = (trees - 10) / 490
    return 0.1 + 0.25 * math.exp(-4 * s) + 0.05 * ((depth - 6) / 4) ** 2 + shared, 1.5 + 6 * s


PROBLEMS = {"branin_currin": branin_currin, "zdt1": zdt1, "zdt2": zdt2, "dtlz2": dtlz2, "model_choice": model_choice}


def _front(points):
    front = []
    for p in sorted(points, key=sum):
        if not any(all(f[i] <= p[i] for i in range(len(p))) for f in front):
            front.append(p)
    return front


def hypervolume(points, ref):
    """Hypervolume (minimisation) of `points` against `ref`: exact, by slicing on the last
    coordinate (fronts of at most a few hundred points)."""
    pts = [p for p in _front(points) if all(p[i] < ref[i] for i in range(len(ref)))]
    if not pts:
        return 0.0
    if len(ref) == 1:
        return ref[0] - min(p[0] for p in pts)
    pts.sort(key=lambda p: p[-1])
    total = 0.0
    for i, p in enumerate(pts):
        upper = pts[i + 1][-1] if i + 1 < len(pts) else ref[-1]
        if upper > p[-1]:
            total += (upper - p[-1]) * hypervolume([q[:-1] for q in pts[: i + 1]], ref[:-1])
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    ap.add_argument("--sampler", required=True, choices=["gp", "nsga2", "random"])
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--reference", required=True, help="the problem's reference point, comma-separated (from bo-bench multi --list)")
    ap.add_argument("--max-hv", type=float, required=True, help="the true front's hypervolume (from bo-bench multi --list)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    ref = [float(v) for v in args.reference.split(",")]
    f = PROBLEMS[args.problem]
    runs = []
    for seed in range(args.seeds):
        if args.sampler == "gp":
            sampler = optuna.samplers.GPSampler(seed=seed, warn_independent_sampling=False)
        elif args.sampler == "nsga2":
            sampler = optuna.samplers.NSGAIISampler(seed=seed)
        else:
            sampler = optuna.samplers.RandomSampler(seed=seed)
        study = optuna.create_study(directions=["minimize"] * len(ref), sampler=sampler)
        seen, regret, seconds = [], [], []
        for _ in range(args.budget):
            start = time.perf_counter()
            trial = study.ask()
            values = f(trial)
            study.tell(trial, values)
            seconds.append(time.perf_counter() - start)
            seen.append(list(values))
            regret.append(max(args.max_hv - hypervolume(seen, ref), 0.0))
        runs.append({"seed": seed, "hv_regret": regret, "suggest_seconds": seconds})
    with open(args.out, "w") as out:
        json.dump({"problem": args.problem, "algorithm": f"optuna-{args.sampler}", "budget": args.budget, "runs": runs}, out)


if __name__ == "__main__":
    main()
