"""The multi-fidelity peers of ``real_curves_bench.py``, on the same problems, seeds and budget:
SMAC3's multi-fidelity facade (a random forest inside Hyperband, BOHB's recipe), DEHB
(differential evolution inside Hyperband), and Ray Tune's ASHA scheduler with random search and
with bo's searcher (``bo_client.ray.BoSearch``), and Ray's BOHB (``TuneBOHB`` with
``HyperBandForBOHB``, which pauses and resumes trials from checkpoints).

What a step costs. Optuna's pruners, bo's rules and Ray's schedulers train a trial step by step
and stop it, so they pay for the steps they train. SMAC3 and DEHB ask for a configuration *at a
budget* and, promoting it, ask again at a higher one; run naively that trains it again from
scratch. Here a configuration asked for at a higher budget goes on from the highest budget it was
trained to before (its checkpoint) and pays only for the steps in between — the cheaper of the
two ways to run them, so bo is not flattered. Ray's BOHB resumes from its own checkpoints.

The trace is ``real_curves_bench.Trace``'s: the steps spent and the final validation error of
the best fully trained configuration. The optimiser's own time is timed for SMAC3 and DEHB (ask
and tell), not for Ray, whose scheduler and searcher run inside Tune's loop.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from typing import Any, Dict, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CLIENT = os.path.join(ROOT, "clients", "python", "src")
sys.path.insert(0, HERE)
from real_curves import PROBLEMS, Problem, bo_space  # noqa: E402

METRIC = "error"


def configspace(problem: Problem, seed: int, conditions: bool = True) -> Any:
    """The problem's space in ConfigSpace's terms (SMAC3, DEHB and BOHB take it); a conditional
    parameter is declared with its condition unless ``conditions`` is false (DEHB searches a
    vector of every parameter: there the inactive one is drawn and left out of the
    configuration)."""
    from ConfigSpace import Categorical, ConfigurationSpace, EqualsCondition, Float, InCondition, Integer

    cs = ConfigurationSpace(seed=seed)
    made: Dict[str, Any] = {}
    for p in problem.params:
        if p.kind == "categorical":
            made[p.name] = Categorical(p.name, list(p.choices))
        elif p.kind == "int":
            made[p.name] = Integer(p.name, (int(p.low), int(p.high)), log=p.log)
        else:
            made[p.name] = Float(p.name, (p.low, p.high), log=p.log)
        cs.add(made[p.name])
    if conditions:
        for p in problem.params:
            if p.when is not None:
                parent, values = p.when
                cond = (EqualsCondition(made[p.name], made[parent], values[0]) if len(values) == 1
                        else InCondition(made[p.name], made[parent], list(values)))
                cs.add(cond)
    return cs


class Resumable:
    """Each configuration's highest step trained so far: a configuration asked for again at a
    higher budget goes on from there."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        self.trained: Dict[str, int] = {}

    def evaluate(self, trace: Any, config: Dict[str, Any], budget: int, limit: int) -> Optional[float]:
        """Trains ``config`` to step ``budget`` (going on from its checkpoint) while ``limit``
        steps last; returns the error at ``budget``, or None when the budget ran out first."""
        active = self.problem.active(config)
        key = json.dumps(active, sort_keys=True)
        curve = self.problem.curve(active)
        after = self.trained.get(key, 0)
        if after < budget:
            steps, _ = trace.train(self.problem, curve, limit, lambda step, v, last: step >= budget, after)
            self.trained[key] = steps
            if steps < budget:
                return None
        trace.after_trial(budget == self.problem.steps, curve[-1])
        return curve[budget - 1]


def smac_run(problem: Problem, limit: int, seed: int, trace: Any) -> Dict[str, Any]:
    """SMAC3's ``MultiFidelityFacade``: Hyperband (η = 3, budgets 1 … steps) whose new
    configurations come from a random forest fitted across budgets."""
    from smac import MultiFidelityFacade, Scenario
    from smac.runhistory.dataclasses import TrialValue

    # SMAC3's random forest averages empty leaves on the way (numpy's "mean of empty slice").
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    with tempfile.TemporaryDirectory() as out:
        scenario = Scenario(configspace(problem, seed), name=f"{problem.name}-{seed}", output_directory=out, deterministic=True,
                            n_trials=100_000, min_budget=1, max_budget=problem.steps, seed=seed)
        intensifier = MultiFidelityFacade.get_intensifier(scenario, eta=3, incumbent_selection="highest_budget")
        smac = MultiFidelityFacade(scenario, lambda config, seed=0, budget=1: 0.0, intensifier=intensifier, overwrite=True,
                                   logging_level=40)
        runner = Resumable(problem)
        while trace.spent < limit:
            start = time.perf_counter()
            info = smac.ask()
            trace.optimiser_seconds += time.perf_counter() - start
            budget = int(round(info.budget if info.budget is not None else problem.steps))
            value = runner.evaluate(trace, dict(info.config), budget, limit)
            if value is None:
                break
            start = time.perf_counter()
            smac.tell(info, TrialValue(cost=value))
            trace.optimiser_seconds += time.perf_counter() - start
    return trace.done()


def dehb_run(problem: Problem, limit: int, seed: int, trace: Any) -> Dict[str, Any]:
    """DEHB (Awad et al. 2021): Hyperband's brackets (η = 3, fidelities 1 … steps) whose
    configurations evolve by differential evolution, one population per fidelity."""
    from dehb import DEHB

    cs = configspace(problem, seed, conditions=False)
    with tempfile.TemporaryDirectory() as out:
        dehb = DEHB(cs=cs, dimensions=len(list(cs.values())), min_fidelity=1, max_fidelity=problem.steps, eta=3, n_workers=1,
                    seed=seed, output_path=out, log_level="ERROR")
        runner = Resumable(problem)
        while trace.spent < limit:
            start = time.perf_counter()
            job = dehb.ask()
            trace.optimiser_seconds += time.perf_counter() - start
            budget = int(round(job["fidelity"]))
            config = dict(job["config"])  # a Configuration: DEHB converts its vector
            value = runner.evaluate(trace, config, budget, limit)
            if value is None:
                break
            start = time.perf_counter()
            dehb.tell(job, {"fitness": value, "cost": float(budget)})
            trace.optimiser_seconds += time.perf_counter() - start
    return trace.done()


def ray_run(problem: Problem, kind: str, limit: int, seed: int, trace: Any, server: Any = None) -> Dict[str, Any]:
    """Ray Tune, one trial at a time: ``asha-random`` (``ASHAScheduler``, η = 3, grace period 1,
    Tune's random search), ``asha-bo`` (the same scheduler, bo's searcher: a trial ASHA stops is
    a partial result to the study) or ``bohb`` (``TuneBOHB`` with ``HyperBandForBOHB``, which
    pauses trials and resumes them from their checkpoints). A ``Stopper`` counts every reported
    step against the budget and ends the run when it is spent."""
    import ray
    from ray import tune
    from ray.tune.stopper import Stopper

    if not ray.is_initialized():
        # The trainable imports real_curves in Ray's worker processes.
        os.environ["PYTHONPATH"] = os.pathsep.join([HERE, CLIENT, os.environ.get("PYTHONPATH", "")])
        os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, logging_level="ERROR", configure_logging=False)

    class Budget(Stopper):  # type: ignore[misc]
        def __init__(self) -> None:
            self.seen: set = set()

        def __call__(self, trial_id: str, result: Dict[str, Any]) -> bool:
            if trace.spent >= limit:
                return True
            trace.spent += 1
            if trial_id not in self.seen:
                self.seen.add(trial_id)
                trace.trials += 1
            if int(result["step"]) == problem.steps:
                trace.full += 1
                value = float(result[METRIC])
                trace.best = value if trace.best is None else min(trace.best, value)
                trace.points.append([trace.spent, trace.best])
            return False

        def stop_all(self) -> bool:
            return trace.spent >= limit

    space: Dict[str, Any] = {}
    for p in problem.params:
        if p.kind == "categorical":
            space[p.name] = tune.choice(list(p.choices))
        elif p.kind == "int":
            space[p.name] = (tune.lograndint if p.log else tune.randint)(int(p.low), int(p.high) + 1)
        else:
            space[p.name] = (tune.loguniform if p.log else tune.uniform)(p.low, p.high)
    # One trial at a time in one reused worker process; no per-trial result files.
    tune_config: Dict[str, Any] = {"metric": METRIC, "mode": "min", "num_samples": limit, "max_concurrent_trials": 1,
                                   "reuse_actors": True}
    param_space: Dict[str, Any] = space
    if kind == "asha-random":
        from ray.tune.search.basic_variant import BasicVariantGenerator

        tune_config["search_alg"] = BasicVariantGenerator(random_state=seed)
        tune_config["scheduler"] = tune.schedulers.ASHAScheduler(max_t=problem.steps, grace_period=1, reduction_factor=3)
    elif kind == "asha-bo":
        sys.path.insert(0, CLIENT)
        import bo_client as bo
        from bo_client.ray import BoSearch

        root = bo_space(problem.params, bo)
        tune_config["search_alg"] = BoSearch(root, metric=METRIC, mode="min", url=server.url, project="curves",
                                             study=f"{problem.name}-ray-asha-bo-seed{seed}", median_stopping=False,
                                             max_t=problem.steps)
        tune_config["scheduler"] = tune.schedulers.ASHAScheduler(max_t=problem.steps, grace_period=1, reduction_factor=3)
        param_space = {}
    elif kind == "bohb":
        from ray.tune.search.bohb import TuneBOHB

        tune_config["search_alg"] = TuneBOHB(configspace(problem, seed), metric=METRIC, mode="min", seed=seed)
        tune_config["scheduler"] = tune.schedulers.HyperBandForBOHB(time_attr="training_iteration", max_t=problem.steps,
                                                                   reduction_factor=3)
        param_space = {}
    else:
        raise ValueError(kind)
    with tempfile.TemporaryDirectory() as out:
        tuner = tune.Tuner(
            tune.with_parameters(_trainable, problem_name=problem.name, checkpoints=kind == "bohb"),
            param_space=param_space,
            tune_config=tune.TuneConfig(**tune_config),
            run_config=tune.RunConfig(stop=Budget(), storage_path=out, name="run", verbose=0),
        )
        tuner.fit()
    return trace.done()


def _trainable(config: Dict[str, Any], problem_name: str, checkpoints: bool) -> None:
    """One trial: its cached curve reported a step at a time, with a checkpoint (the step reached)
    at each when ``checkpoints``, from which a paused trial goes on."""
    from ray import tune

    problem = PROBLEMS[problem_name]
    curve = problem.curve({k: v for k, v in config.items() if any(p.name == k for p in problem.params)})
    start = 0
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            with open(os.path.join(d, "step.json")) as f:
                start = json.load(f)["step"]
    for step in range(start + 1, problem.steps + 1):
        if not checkpoints:
            tune.report({METRIC: curve[step - 1], "step": step})
            continue
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "step.json"), "w") as f:
                json.dump({"step": step}, f)
            tune.report({METRIC: curve[step - 1], "step": step}, checkpoint=tune.Checkpoint.from_directory(d))
