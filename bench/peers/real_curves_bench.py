"""Compute to quality on real training curves (``real_curves.py``), in one run: bo over HTTP
(the server started here, driven by bo_client as a training job would: a measurement per step,
``should_stop`` after each) with each stopping rule, Optuna's TPESampler with no pruner, the
median pruner, successive halving and Hyperband, and the multi-fidelity peers of
``real_curves_mf.py`` (SMAC3, DEHB, Ray Tune's ASHA and BOHB), on the same problems, seeds and
budget.

    bash bench/peers/run.sh --real-curves --problem mlp_digits --arm bo:median --seeds 3 --trainings 20 --out r.json

The budget is ``trainings`` full trainings' worth of steps; a run ends when it is spent. After
each trial: the steps spent and the incumbent's final validation error (the fully trained trial
with the lowest final error; stopped trials' partial errors are not final results). ``--workers``
trials train at once for bo's and Optuna's arms (``run_workers``); the other peers run one.
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


def optuna_run(problem: Problem, pruner_name: str, budget: int, seed: int, workers: int = 1) -> Dict[str, Any]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    pruner = {
        "none": optuna.pruners.NopPruner(),
        "median": optuna.pruners.MedianPruner(),
        "sha": optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3),
        "hyperband": optuna.pruners.HyperbandPruner(min_resource=1, max_resource=problem.steps, reduction_factor=3),
    }[pruner_name]
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed), pruner=pruner)

    def start(worker: int) -> Tuple[Any, Dict[str, Any], int]:
        trial = study.ask()
        config: Dict[str, Any] = {}
        for p in problem.params:
            if p.when is not None and config.get(p.when[0]) not in p.when[1]:
                continue
            config[p.name] = declare(p, trial.suggest_categorical, trial.suggest_int, trial.suggest_float)
        return trial, config, 0

    def report(trial: Any, step: int, value: float, last: bool) -> bool:
        trial.report(value, step)
        return not last and trial.should_prune()

    def finish(trial: Any, steps: int, value: float) -> None:
        if steps == problem.steps:
            study.tell(trial, value)
        else:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)

    trace = Trace(seed)
    run_workers(problem, budget, workers, trace, start, report, finish)
    return trace.done()


def run_workers(problem: Problem, budget: int, workers: int, trace: "Trace", start: Callable[[int], Tuple[Any, Dict[str, Any], int]],
                report: Callable[[Any, int, float, bool], bool], finish: Callable[[Any, int, float], None]) -> None:
    """``workers`` trials train at once, asynchronously, until the budget is spent: in each round
    every running trial trains one step (a step of compute each), is shown its value and, before
    its last step, asked whether to stop; a worker whose trial ends starts a new one at once
    (``start(worker)`` gives its handle, configuration and the step it resumes after). When the
    budget runs out, the trials still running end where they are. One worker is the sequential
    loop: a trial ends before the next starts."""
    running: List[Dict[str, Any]] = []

    def begin(worker: int) -> None:
        clock = time.perf_counter()
        handle, config, after = start(worker)
        trace.optimiser_seconds += time.perf_counter() - clock
        curve = problem.curve(config)
        running.append({"worker": worker, "handle": handle, "curve": curve, "steps": after})

    def end(slot: Dict[str, Any]) -> None:
        steps = slot["steps"]
        value = slot["curve"][max(steps, 1) - 1]
        clock = time.perf_counter()
        finish(slot["handle"], steps, value)
        trace.optimiser_seconds += time.perf_counter() - clock
        trace.after_trial(steps == problem.steps, slot["curve"][-1])
        running.remove(slot)

    for worker in range(workers):
        if trace.spent < budget:
            begin(worker)
    while running:
        for slot in list(running):
            if trace.spent >= budget:
                end(slot)
                continue
            trace.spent += 1
            slot["steps"] += 1
            step = slot["steps"]
            clock = time.perf_counter()
            stop = report(slot["handle"], step, slot["curve"][step - 1], step == problem.steps)
            trace.optimiser_seconds += time.perf_counter() - clock
            if stop or step == problem.steps:
                end(slot)
                if trace.spent < budget:
                    begin(slot["worker"])


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


def bo_run(server: Any, problem: Problem, rule: str, budget: int, seed: int, workers: int = 1) -> Dict[str, Any]:
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
    study = client.create_study(f"{problem.name}-{rule}-w{workers}-seed{seed}", root, metrics={"error": "MINIMIZE"}, stopping=stopping)

    def start(worker: int) -> Tuple[Any, Dict[str, Any], int]:
        # A client id per worker: a worker asking again gets its own ACTIVE trial back.
        (trial,) = study.suggest(1, client_id=f"worker{worker}")
        after = int(trial.resumed_at) if trial.resumed_from is not None and trial.resumed_at is not None else 0
        return trial, dict(trial.parameters), after

    def report(trial: Any, step: int, value: float, last: bool) -> bool:
        trial.add_measurement({"error": value}, step=step)
        return not last and stopping is not None and bool(trial.should_stop())

    def finish(trial: Any, steps: int, value: float) -> None:
        trial.complete({"error": value}, step=steps)

    trace = Trace(seed)
    run_workers(problem, budget, workers, trace, start, report, finish)
    return trace.done()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", required=True, choices=sorted(PROBLEMS))
    ap.add_argument("--arm", required=True, choices=ARMS)
    ap.add_argument("--trainings", type=int, default=20, help="the budget, in full trainings' steps")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1, help="asynchronous workers (bo's and Optuna's arms)")
    ap.add_argument("--bo-server", default=os.path.join(ROOT, "target", "release", "bo-server"))
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    problem = PROBLEMS[args.problem]
    budget = args.trainings * problem.steps
    family, rule = args.arm.split(":")
    if args.workers < 1:
        ap.error("--workers must be at least 1")
    if args.workers > 1 and family not in ("bo", "optuna"):
        ap.error(f"--workers {args.workers} is run for bo's and Optuna's arms only, not {args.arm}")
    runs = []
    if family == "bo" or args.arm == "ray:asha-bo":
        from bench import BoServer

        server = BoServer(args.bo_server)
        try:
            if family == "bo":
                runs = [bo_run(server, problem, rule, budget, seed, args.workers) for seed in range(args.seeds)]
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
        runs = [optuna_run(problem, rule, budget, seed, args.workers) for seed in range(args.seeds)]
    with open(args.out, "w") as f:
        json.dump({"problem": args.problem, "arm": args.arm, "budget": budget, "steps": problem.steps, "workers": args.workers, "runs": runs}, f)


if __name__ == "__main__":
    main()
