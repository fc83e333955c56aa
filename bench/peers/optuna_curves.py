"""Optuna's pruners (none, MedianPruner, HyperbandPruner, SuccessiveHalvingPruner) with
TPESampler on bo-bench's learning-curve problems, for comparison with `bo-bench curves`, with one
worker or several asynchronous ones (``--workers``).

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


def suggest(trial):
    return (
        trial.suggest_float("lr", 1e-4, 1e-1, log=True),
        trial.suggest_int("batch_size", 16, 512, log=True),
        trial.suggest_float("momentum", 0.1, 0.99),
        trial.suggest_float("weight_decay", 1e-5, 1e-1, log=True),
        trial.suggest_int("num_layers", 1, 5),
        trial.suggest_float("max_dropout", 0.0, 1.0),
    )


def run(problem, pruner_name, budget, seed, workers=1):
    """One seed's run with `workers` asynchronous workers, as `bo-bench curves --workers`: time
    advances an epoch at a time, each worker's trial trains one epoch and the pruner decides on
    it, in worker order; a worker whose trial ended asks for a new one at once. With several
    workers TPE runs with ``constant_liar``, Optuna's setting for parallel studies."""
    noise = random.Random(seed ^ 0x5EEDC0DE)
    if pruner_name == "median":
        pruner = optuna.pruners.MedianPruner()
    elif pruner_name == "hyperband":
        pruner = optuna.pruners.HyperbandPruner(min_resource=1, max_resource=EPOCHS, reduction_factor=3)
    elif pruner_name == "sha":
        pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    else:
        pruner = optuna.pruners.NopPruner()
    sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=workers > 1)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    state = {"spent": 0, "best": None}
    trace = {"seed": seed, "spent": [], "incumbent": [], "full": 0, "rule_seconds": 0.0, "suggest_seconds": 0.0}
    # Per worker: None, or [trial, configuration, offset, epochs trained, last value].
    running = [None] * workers

    def complete(slot, pruned):
        trial, c, _, epochs, y = slot
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

    while True:
        for w in range(workers):
            if running[w] is None and state["spent"] < budget:
                start = time.perf_counter()
                trial = study.ask()
                c = suggest(trial)
                trace["suggest_seconds"] += time.perf_counter() - start
                running[w] = [trial, c, noise.gauss(0.0, 1.0) * problem[4], 0, None]
        if all(r is None for r in running):
            break
        for w in range(workers):
            slot = running[w]
            if slot is None:
                continue
            if state["spent"] >= budget:
                break
            state["spent"] += 1
            trial, c, offset = slot[0], slot[1], slot[2]
            slot[3] += 1
            t = slot[3]
            slot[4] = accuracy(problem, c, t) + offset + noise.gauss(0.0, 1.0) * problem[4]
            trial.report(slot[4], t)
            if t == EPOCHS:
                complete(slot, False)
                running[w] = None
                continue
            start = time.perf_counter()
            prune = trial.should_prune()
            trace["rule_seconds"] += time.perf_counter() - start
            if prune:
                complete(slot, True)
                running[w] = None
        if state["spent"] >= budget:
            # The budget is spent: the trials still training end where they are.
            # A trial given out in the last round that never trained is not told.
            for w in range(workers):
                if running[w] is not None and running[w][3] > 0:
                    complete(running[w], False)
                running[w] = None
            break
    return trace


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    ap.add_argument("--pruner", required=True, choices=["none", "median", "hyperband", "sha"])
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1, choices=range(1, 65), metavar="1..64")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    runs = [run(PROBLEMS[args.problem], args.pruner, args.budget, seed, args.workers) for seed in seeds]
    report = {"problem": args.problem, "optimizer": "Optuna TPE", "rule": args.pruner, "budget": args.budget, "workers": args.workers, "runs": runs}
    with open(args.out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
