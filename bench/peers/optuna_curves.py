"""Optuna's pruners (none, MedianPruner, HyperbandPruner) with TPESampler on bo-bench's
learning-curve problems, for comparison with `bo-bench curves`.

Same problems, epoch budget and JSON shape as `bo-bench curves`: a trial trains epoch by epoch,
reports each epoch's accuracy (``trial.report``) and stops when pruned; the run ends when the
budget of epochs is spent. ``incumbent`` is the true final accuracy of the fully trained trial with
the best reported final value, after each trial (null before one); ``spent`` the epochs spent by
then:

    bash bench/peers/run.sh --curves --problem lc_a --pruner median --budget 2000 --seeds 5 --out m.json

Problem definitions mirror crates/bo-bench/src/curves.rs.
"""
import argparse
import json
import math
import random
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)

EPOCHS = 50

# name: (l0, top, tau, over, noise, w0, n0, d0), as crates/bo-bench/src/curves.rs.
PROBLEMS = {
    "lc_a": (-2.5, 0.92, 8.0, 0.04, 0.01, -3.5, 3.0, 0.3),
    "lc_b": (-1.8, 0.85, 15.0, 0.08, 0.02, -4.0, 2.0, 0.5),
    "lc_c": (-3.0, 0.97, 5.0, 0.02, 0.005, -2.5, 4.0, 0.1),
}


def accuracy(problem, c, t):
    l0, top, tau0, over, _, w0, n0, d0 = problem
    lr, batch, momentum, wd, layers, dropout = c
    l_star = l0 + 0.3 * math.log2(batch / 64.0)
    l_eff = math.log10(lr) - math.log10(1.0 - momentum) - 1.0
    misfit = 1.2 * (l_eff - l_star) ** 2 + 0.125 * (math.log10(wd) - w0) ** 2 + 0.15 * (layers - n0) ** 2 + (dropout - d0) ** 2
    level = 0.1 + (top - 0.1) * math.exp(-misfit)
    tau = min(max(tau0 * 10 ** (-0.5 * (l_eff - l_star)), 0.5), 500.0)
    rise = 1.0 - math.exp(-((t / tau) ** 0.8))
    overfit = over * (1.0 - dropout) * max(2.0 * (t / EPOCHS - 0.5), 0.0)
    return 0.1 + (level - 0.1) * rise - overfit


def run(problem, pruner_name, budget, seed):
    noise = random.Random(seed ^ 0x5EEDC0DE)
    if pruner_name == "median":
        pruner = optuna.pruners.MedianPruner()
    elif pruner_name == "hyperband":
        pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=EPOCHS, reduction_factor=3)
    else:
        pruner = optuna.pruners.NopPruner()
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed), pruner=pruner)
    state = {"spent": 0, "best": None}
    trace = {"seed": seed, "spent": [], "incumbent": [], "full": 0, "rule_seconds": 0.0, "suggest_seconds": 0.0}
    while state["spent"] < budget:
        start = time.perf_counter()
        trial = study.ask()
        c = (
            trial.suggest_float("lr", 1e-4, 1e-1, log=True),
            trial.suggest_int("batch_size", 16, 512, log=True),
            trial.suggest_float("momentum", 0.1, 0.99),
            trial.suggest_float("weight_decay", 1e-5, 1e-1, log=True),
            trial.suggest_int("num_layers", 1, 5),
            trial.suggest_float("max_dropout", 0.0, 1.0),
        )
        trace["suggest_seconds"] += time.perf_counter() - start
        offset = noise.gauss(0.0, 1.0) * problem[4]
        y, pruned, epochs = None, False, 0
        for t in range(1, EPOCHS + 1):
            if state["spent"] >= budget:
                break
            state["spent"] += 1
            epochs = t
            y = accuracy(problem, c, t) + offset + noise.gauss(0.0, 1.0) * problem[4]
            trial.report(y, t)
            if t < EPOCHS:
                start = time.perf_counter()
                prune = trial.should_prune()
                trace["rule_seconds"] += time.perf_counter() - start
                if prune:
                    pruned = True
                    break
        start = time.perf_counter()
        if pruned:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, y)
        trace["suggest_seconds"] += time.perf_counter() - start
        if epochs == EPOCHS:
            trace["full"] += 1
            if state["best"] is None or y > state["best"][0]:
                state["best"] = (y, accuracy(problem, c, EPOCHS))
        trace["spent"].append(state["spent"])
        trace["incumbent"].append(None if state["best"] is None else state["best"][1])
    return trace


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    ap.add_argument("--pruner", required=True, choices=["none", "median", "hyperband"])
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    runs = [run(PROBLEMS[args.problem], args.pruner, args.budget, seed) for seed in range(args.seeds)]
    report = {"problem": args.problem, "optimizer": "Optuna TPE", "rule": args.pruner, "budget": args.budget, "runs": runs}
    with open(args.out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
