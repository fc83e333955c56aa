"""Compute to quality on real training curves (``real_curves.py``), in one run: bo over HTTP
(the server started here, driven by bo_client as a training job would: a measurement per step,
``should_stop`` after each) with each stopping rule, Optuna's TPESampler with no pruner, the
median pruner, successive halving and Hyperband, and the multi-fidelity peers of
``real_curves_mf.py`` (SMAC3, DEHB, Ray Tune's ASHA and BOHB), on the same problems, seeds and
budget.

    bash bench/peers/run.sh --real-curves --problem mlp_digits --arm bo:median --seeds 3 --trainings 20 --out r.json

The budget is ``trainings`` full trainings' worth of steps; a run ends when it is spent. After
each trial: the steps spent and the incumbent's final validation error (the fully trained trial
with the lowest final error; stopped trials' partial errors are not final results). One worker.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(__file__))
import real_curves_mf  # noqa: E402
from real_curves import PROBLEMS, Problem, bo_space, declare  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARMS = ["optuna:none", "optuna:median", "optuna:sha", "optuna:hyperband", "bo:none", "bo:median", "bo:decay", "bo:convex", "bo:asha",
        "bo:asha-topk", "bo:asha-resume", "bo:hyperband", "smac:hyperband", "dehb:dehb", "ray:asha-random", "ray:asha-bo",
        "ray:bohb"]


def optuna_run(problem: Problem, pruner_name: str, budget: int, seed: int) -> Dict[str, Any]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pruner = {
        "none": optuna.pruners.NopPruner(),
        "median": optuna.pruners.MedianPruner(),
        "sha": optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3),
        "hyperband": optuna.pruners.HyperbandPruner(min_resource=1, max_resource=problem.steps, reduction_factor=3),
    }[pruner_name]
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed), pruner=pruner)
    trace = Trace(seed)
    while trace.spent < budget:
        start = time.perf_counter()
        trial = study.ask()
        config: Dict[str, Any] = {}
        for p in problem.params:
            if p.when is not None and config.get(p.when[0]) not in p.when[1]:
                continue
            config[p.name] = declare(p, trial.suggest_categorical, trial.suggest_int, trial.suggest_float)
        trace.optimiser_seconds += time.perf_counter() - start
        curve = problem.curve(config)

        def report(step: int, value: float, last: bool) -> bool:
            trial.report(value, step)
            return not last and trial.should_prune()

        steps, value = trace.train(problem, curve, budget, report)
        start = time.perf_counter()
        if steps == problem.steps:
            study.tell(trial, value)
        else:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        trace.optimiser_seconds += time.perf_counter() - start
        trace.after_trial(steps == problem.steps, curve[-1])
    return trace.done()


class Trace:
    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.spent = 0
        self.best: Optional[float] = None
        self.trials = 0
        self.full = 0
        self.optimiser_seconds = 0.0
        self.points: List[List[Any]] = []

    def train(self, problem: Problem, curve: List[float], budget: int, report: Callable[[int, float, bool], bool],
              after: int = 0) -> Tuple[int, float]:
        """Shows the optimiser the curve a step at a time while the budget lasts, from the step
        after ``after`` (a trial resumed from a checkpoint there): ``report(step, value, last)``
        reports it and, before the last step, says whether to stop. Returns the step reached and
        the last value."""
        value, steps = curve[max(after, 1) - 1], after
        for step in range(after + 1, problem.steps + 1):
            if self.spent >= budget:
                break
            self.spent += 1
            steps, value = step, curve[step - 1]
            start = time.perf_counter()
            stop = report(step, value, step == problem.steps)
            self.optimiser_seconds += time.perf_counter() - start
            if stop:
                break
        return steps, value

    def after_trial(self, full: bool, final: float) -> None:
        self.trials += 1
        if full:
            self.full += 1
            self.best = final if self.best is None else min(self.best, final)
        self.points.append([self.spent, self.best])

    def done(self) -> Dict[str, Any]:
        return {"seed": self.seed, "trials": self.trials, "full": self.full, "optimiser_seconds": self.optimiser_seconds,
                "trace": self.points}


def bo_run(server: Any, problem: Problem, rule: str, budget: int, seed: int) -> Dict[str, Any]:
    sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))
    import bo_client as bo

    root = bo_space(problem.params, bo)
    stopping = {"none": None, "median": bo.MedianStopping(), "decay": bo.DecayCurveStopping(), "convex": bo.ConvexStopping(),
                "asha": bo.SuccessiveHalvingStopping(max_step_count=problem.steps, min_step_count=1, reduction_factor=3),
                "asha-topk": bo.SuccessiveHalvingStopping(max_step_count=problem.steps, min_step_count=1, reduction_factor=3,
                                                          promotion="TOP_K"),
                # ASHA with checkpoints: every trial pauses at each rung, a promoted one comes back as
                # a new trial that goes on from its step (the cached curve is its checkpoint).
                "asha-resume": bo.SuccessiveHalvingStopping(max_step_count=problem.steps, min_step_count=1, reduction_factor=3,
                                                            resume=True),
                # A bracket at each rung 1, 3, 9, … below the full training, as Optuna's HyperbandPruner.
                "hyperband": bo.SuccessiveHalvingStopping(max_step_count=problem.steps, min_step_count=1, reduction_factor=3,
                                                          brackets=sum(1 for k in range(64) if 3 ** k < problem.steps))}[rule]
    client = bo.Client(server.url, project="curves")
    study = client.create_study(f"{problem.name}-{rule}-seed{seed}", root, metrics={"error": "MINIMIZE"}, stopping=stopping)
    trace = Trace(seed)
    while trace.spent < budget:
        start = time.perf_counter()
        (trial,) = study.suggest(1, client_id="worker")
        trace.optimiser_seconds += time.perf_counter() - start
        curve = problem.curve(dict(trial.parameters))

        def measure(step: int, value: float, last: bool, trial: Any = trial) -> bool:
            trial.add_measurement({"error": value}, step=step)
            return not last and stopping is not None and bool(trial.should_stop())

        after = int(trial.resumed_at) if trial.resumed_from is not None and trial.resumed_at is not None else 0
        steps, value = trace.train(problem, curve, budget, measure, after)
        start = time.perf_counter()
        trial.complete({"error": value}, step=steps)
        trace.optimiser_seconds += time.perf_counter() - start
        trace.after_trial(steps == problem.steps, curve[-1])
    return trace.done()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    ap.add_argument("--arm", required=True, choices=ARMS)
    ap.add_argument("--trainings", type=int, default=20, help="the budget, in full trainings' steps")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--bo-server", default=os.path.join(ROOT, "target", "release", "bo-server"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    problem = PROBLEMS[args.problem]
    budget = args.trainings * problem.steps
    family, rule = args.arm.split(":")
    runs = []
    if family == "bo" or args.arm == "ray:asha-bo":
        from bench import BoServer

        server = BoServer(args.bo_server)
        try:
            if family == "bo":
                runs = [bo_run(server, problem, rule, budget, seed) for seed in range(args.seeds)]
            else:
                runs = [real_curves_mf.ray_run(problem, rule, budget, seed, Trace(seed), server) for seed in range(args.seeds)]
        finally:
            server.close()
    elif family == "smac":
        runs = [real_curves_mf.smac_run(problem, budget, seed, Trace(seed)) for seed in range(args.seeds)]
    elif family == "dehb":
        runs = [real_curves_mf.dehb_run(problem, budget, seed, Trace(seed)) for seed in range(args.seeds)]
    elif family == "ray":
        runs = [real_curves_mf.ray_run(problem, rule, budget, seed, Trace(seed)) for seed in range(args.seeds)]
    else:
        runs = [optuna_run(problem, rule, budget, seed) for seed in range(args.seeds)]
    with open(args.out, "w") as f:
        json.dump({"problem": args.problem, "arm": args.arm, "budget": budget, "steps": problem.steps, "runs": runs}, f)


if __name__ == "__main__":
    main()
