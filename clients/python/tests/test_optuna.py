"""bo_client.optuna against the real server, with Optuna itself: an unchanged define-by-run
objective under BoSampler (every kind of distribution), several objectives, constraints as
safety metrics, pruning through the study's stopping rule, n_jobs, enqueued trials, and the
rule for parameters outside the space."""
import logging
import math

import numpy as np
import optuna
import pytest
import torch

import bo_client as bo
from bo_client.optuna import BoPruner, BoSampler, space_from_optuna
from conftest import Server

optuna.logging.set_verbosity(optuna.logging.WARNING)


def objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -3.0, 3.0)
    lr = trial.suggest_float("lr", 1e-5, 1e-1, log=True)
    dropout = trial.suggest_float("dropout", 0.0, 0.5, step=0.1)
    layers = trial.suggest_int("layers", 1, 8)
    units = trial.suggest_int("units", 16, 256, log=True)
    batch = trial.suggest_int("batch", 32, 256, step=32)
    act = trial.suggest_categorical("act", ["relu", "tanh", None])
    flag = trial.suggest_categorical("flag", [True, False, 1])
    assert isinstance(layers, int) and isinstance(units, int) and isinstance(batch, int) and batch % 32 == 0
    assert act in ("relu", "tanh", None) and flag in (True, False, 1)
    return np.float32((x - 1) ** 2 + abs(math.log10(lr) + 3) + dropout + abs(layers - 4) * 0.1 + (act is None) * 0.5)


def test_the_space_maps_every_distribution() -> None:
    space, back = space_from_optuna({
        "f": optuna.distributions.FloatDistribution(0.0, 1.0),
        "g": optuna.distributions.FloatDistribution(1e-4, 1.0, log=True),
        "s": optuna.distributions.FloatDistribution(0.0, 0.5, step=0.1),
        "i": optuna.distributions.IntDistribution(1, 8),
        "l": optuna.distributions.IntDistribution(1, 1024, log=True),
        "t": optuna.distributions.IntDistribution(0, 100, step=25),
        "c": optuna.distributions.CategoricalDistribution(["a", 1, None, 2.5]),
        "d": optuna.distributions.CategoricalDistribution([1, "1"]),
    })
    specs = {s["parameterId"]: s for s in space.to_vertex()}
    assert specs["g"]["scaleType"] == "UNIT_LOG_SCALE" and specs["l"]["scaleType"] == "UNIT_LOG_SCALE"
    assert specs["s"]["discreteValueSpec"]["values"] == pytest.approx([0.0, 0.1, 0.2, 0.3, 0.4, 0.5])
    assert specs["t"]["discreteValueSpec"]["values"] == [0.0, 25.0, 50.0, 75.0, 100.0]
    assert specs["c"]["categoricalValueSpec"]["values"] == ["a", "1", "None", "2.5"]
    assert specs["d"]["categoricalValueSpec"]["values"] == ["1", "'1'"]
    assert back["c"]("None") is None and back["c"]("1") == 1 and back["d"]("'1'") == "1" and back["t"](75.0) == 75
    with pytest.raises(ValueError, match="makes 1000001 values"):
        space_from_optuna({"x": optuna.distributions.FloatDistribution(0.0, 1.0, step=1e-6)})


def test_an_unchanged_objective_runs_under_bo_sampler_with_n_jobs(server: Server) -> None:
    sampler = BoSampler(server.url, search_space=None)
    study = optuna.create_study(study_name="optuna-plain", sampler=sampler)
    study.optimize(objective, n_trials=24, n_jobs=3)
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) == 24
    bo_study = bo.Client(server.url).load_study("optuna-plain")
    trials = list(bo_study.trials())
    assert len(trials) == 24 and all(t.state == "SUCCEEDED" for t in trials)
    # Every Optuna trial is a bo trial with the same parameters and value.
    by_value = sorted(t.value for t in trials if t.value is not None)
    assert by_value == pytest.approx(sorted(t.value for t in done), rel=1e-6)
    assert bo_study.spec["metrics"] == [{"metricId": "objective", "goal": "MINIMIZE"}]
    best = bo_study.best_trial()
    assert best is not None and best.value == pytest.approx(study.best_value, rel=1e-6)
    # The trials after the first were bo's: their client ids say so.
    assert sum(t.client_id.startswith("optuna-optuna-plain-") for t in trials) >= 21


def test_a_declared_space_several_objectives_and_constraints(server: Server) -> None:
    space = {"x": optuna.distributions.FloatDistribution(0.0, 1.0), "y": optuna.distributions.FloatDistribution(0.0, 1.0)}

    def constraints(trial: optuna.trial.FrozenTrial) -> list:
        return [trial.params["x"] + trial.params["y"] - 1.2]

    sampler = BoSampler(server.url, search_space=space, constraints_func=constraints)
    study = optuna.create_study(study_name="optuna-mo", directions=["minimize", "maximize"], sampler=sampler)
    study.set_metric_names(["loss", "accuracy"])
    study.optimize(lambda t: (t.suggest_float("x", 0.0, 1.0) ** 2, t.suggest_float("y", 0.0, 1.0)), n_trials=12)
    bo_study = bo.Client(server.url).load_study("optuna-mo")
    metrics = bo_study.spec["metrics"]
    assert [(m["metricId"], m["goal"]) for m in metrics] == [("loss", "MINIMIZE"), ("accuracy", "MAXIMIZE"), ("constraint_0", "MINIMIZE")]
    assert metrics[2]["safetyConfig"]["safetyThreshold"] == 0.0
    trials = list(bo_study.trials())
    assert len(trials) == 12 and all(t.state == "SUCCEEDED" for t in trials)
    for t in trials:
        assert t.final_measurement is not None
        assert t.final_measurement.metrics["constraint_0"] == pytest.approx(t["x"] + t["y"] - 1.2)
    assert all(t.system_attrs["constraints"] for t in study.trials)


def test_pruning_follows_the_study_s_stopping_rule(server: Server) -> None:
    # A training loop's values as torch tensors: reported, pruned on and returned as they are.
    def curve(trial: optuna.Trial) -> torch.Tensor:
        level = torch.tensor(trial.suggest_float("level", 0.0, 1.0), requires_grad=True)
        value = level * 0
        for step in range(1, 9):
            value = level * (1 - 0.5**step)
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return value

    study = optuna.create_study(study_name="optuna-prune", direction="maximize", sampler=BoSampler(server.url), pruner=BoPruner())
    study.enqueue_trial({"level": 0.9})
    study.optimize(curve, n_trials=20)
    states = [t.state for t in study.trials]
    assert len(states) == 20
    bo_study = bo.Client(server.url).load_study("optuna-prune")
    assert "medianAutomatedStoppingSpec" in bo_study.spec
    trials = list(bo_study.trials())
    assert len(trials) == 20 and all(t.done for t in trials)
    # The enqueued trial ran with its parameters and is in the study with its result.
    assert study.trials[0].params == {"level": 0.9} and any(t["level"] == 0.9 for t in trials)
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned, "the median rule pruned no trial"
    for t in trials:
        if t.client_id and len(t.measurements) < 8:
            assert t.state == "SUCCEEDED" and t.value == t.measurements[-1].metrics["objective"]
    assert all(t.state == "SUCCEEDED" for t in trials if len(t.measurements) == 8)


def test_parameters_outside_the_space_are_sampled_at_random_with_a_warning(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    def growing(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        if trial.number >= 2:
            x += trial.suggest_float("extra", 0.0, 1.0)
        return x

    study = optuna.create_study(study_name="optuna-grow", sampler=BoSampler(server.url))
    with caplog.at_level(logging.WARNING, logger="bo_client"):
        study.optimize(growing, n_trials=6)
    assert len(study.trials) == 6 and all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    warned = [r.getMessage() for r in caplog.records if "extra" in r.getMessage()]
    assert len(warned) == 1 and "sampled at random" in warned[0]

    def changed(trial: optuna.Trial) -> float:
        return trial.suggest_float("x", 0.0, 2.0)

    with pytest.raises(ValueError, match="cannot change within a study"):
        study.optimize(changed, n_trials=1, catch=())


def test_bo_pruner_needs_bo_sampler(server: Server) -> None:
    study = optuna.create_study(pruner=BoPruner())

    def reports(trial: optuna.Trial) -> float:
        trial.report(1.0, 1)
        trial.should_prune()
        return 1.0

    with pytest.raises(ValueError, match="BoPruner needs optuna.create_study"):
        study.optimize(reports, n_trials=1)
