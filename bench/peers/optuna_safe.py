"""Optuna's constrained samplers (GPSampler and TPESampler, each with ``constraints_func``) on
bo-bench's constrained problems, for comparison with `bo-bench safe`.

Same problems, budget and JSON shape as `bo-bench safe` (the objective ``f`` minimised, each
constraint safe at or below 0; ``regret`` is the best safe value so far less the optimum, null
before a safe trial; ``safe`` whether each trial was; ``suggest_seconds`` the time of ask +
objective + tell, in which the objective's microseconds are negligible):

    bash bench/peers/run.sh --safe --problem gramacy --sampler gp --budget 50 --seeds 3 --out gp.json

Problem definitions mirror crates/bo-bench/src/safety.rs.
"""
import argparse
import json
import math
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)


def gramacy(x):
    a, b = x
    c1 = 1.5 - a - 2 * b - 0.5 * math.sin(2 * math.pi * (a * a - 2 * b))
    return a + b, [c1, a * a + b * b - 1.5]


def townsend(x):
    a, b = x
    f = -math.cos((a - 0.1) * b) ** 2 - a * math.sin(3 * a + b)
    t = math.atan2(a, b)
    r = (2 * math.cos(t) - 0.5 * math.cos(2 * t) - 0.25 * math.cos(3 * t) - 0.125 * math.cos(4 * t)) ** 2 + (2 * math.sin(t)) ** 2
    return f, [a * a + b * b - r]


def branin_disk(x):
    a, b = x
    f = (b - 5.1 / (4 * math.pi**2) * a * a + 5 / math.pi * a - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(a) + 10
    return f, [(a - 2.5) ** 2 + (b - 7.5) ** 2 - 50]


ALPHA = [1.0, 1.2, 3.0, 3.2]
A = [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14], [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
P = [[0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886], [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
     [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650], [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381]]


def hartmann6_l1(x):
    f = -sum(ALPHA[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(6))) for i in range(4))
    return f, [sum(x) - 3]


# name: (objective and constraints, bounds, optimum)
PROBLEMS = {
    "gramacy": (gramacy, [(0, 1)] * 2, 0.5998),
    "townsend": (townsend, [(-2.25, 2.5), (-2.5, 1.75)], -2.0239884),
    "branin_disk": (branin_disk, [(-5, 10), (0, 15)], 0.397887),
    "hartmann6_l1": (hartmann6_l1, [(0, 1)] * 6, -3.32237),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    ap.add_argument("--sampler", required=True, choices=["gp", "tpe", "random"])
    ap.add_argument("--budget", type=int, default=100)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    f, bounds, optimum = PROBLEMS[args.problem]

    def constraints(trial):
        return trial.user_attrs["c"]

    runs = []
    for seed in range(args.seeds):
        if args.sampler == "gp":
            sampler = optuna.samplers.GPSampler(seed=seed, constraints_func=constraints, warn_independent_sampling=False)
        elif args.sampler == "tpe":
            sampler = optuna.samplers.TPESampler(seed=seed, constraints_func=constraints)
        else:
            sampler = optuna.samplers.RandomSampler(seed=seed)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        best, regret, safe, seconds = None, [], [], []
        for _ in range(args.budget):
            start = time.perf_counter()
            trial = study.ask()
            x = [trial.suggest_float(f"x{i}", lo, hi) for i, (lo, hi) in enumerate(bounds)]
            value, c = f(x)
            trial.set_user_attr("c", c)
            study.tell(trial, value)
            seconds.append(time.perf_counter() - start)
            ok = all(v <= 0 for v in c)
            if ok:
                best = value if best is None else min(best, value)
            safe.append(ok)
            regret.append(None if best is None else max(best - optimum, 0.0))
        runs.append({"seed": seed, "regret": regret, "safe": safe, "suggest_seconds": seconds})
    with open(args.out, "w") as out:
        json.dump({"problem": args.problem, "algorithm": f"optuna-{args.sampler}", "budget": args.budget, "runs": runs}, out)


if __name__ == "__main__":
    main()
