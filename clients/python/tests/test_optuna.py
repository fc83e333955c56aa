"""bo_client.optuna against the real server, with Optuna itself: an unchanged define-by-run
objective under BoSampler (every kind of distribution), several objectives, constraints as
safety metrics, pruning through the study's stopping rule, n_jobs, enqueued trials, and the
rule for parameters outside the space."""
import logging
import math
import time

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


def test_parameters_outside_a_declared_space_are_sampled_at_random_with_a_warning(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    def growing(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        if trial.number >= 2:
            x += trial.suggest_float("extra", 0.0, 1.0)
        return x

    declared = {"x": optuna.distributions.FloatDistribution(0.0, 1.0)}
    study = optuna.create_study(study_name="optuna-declared", sampler=BoSampler(server.url, search_space=declared))
    with caplog.at_level(logging.WARNING, logger="bo_client"):
        study.optimize(growing, n_trials=6)
    assert len(study.trials) == 6 and all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    warned = [r.getMessage() for r in caplog.records if "extra" in r.getMessage()]
    assert len(warned) == 1 and "sampled at random" in warned[0]
    assert not bo.Client(server.url).load_study("optuna-declared").open_space


def test_a_parameter_asked_with_another_distribution_is_an_error(server: Server) -> None:
    study = optuna.create_study(study_name="optuna-changed", sampler=BoSampler(server.url))
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=2)

    def changed(trial: optuna.Trial) -> float:
        return trial.suggest_float("x", 0.0, 2.0)

    with pytest.raises(ValueError, match="fixed at first use"):
        study.optimize(changed, n_trials=1, catch=())


def test_bo_pruner_needs_bo_sampler(server: Server) -> None:
    study = optuna.create_study(pruner=BoPruner())

    def reports(trial: optuna.Trial) -> float:
        trial.report(1.0, 1)
        trial.should_prune()
        return 1.0

    with pytest.raises(ValueError, match="BoPruner needs optuna.create_study"):
        study.optimize(reports, n_trials=1)


def tree(trial: optuna.Trial) -> float:
    """Optuna's sklearn_simple.py with a known optimum on each branch: SVC at C = 100 (1.0),
    RandomForest at depth 8 (0.8)."""
    classifier = trial.suggest_categorical("classifier", ["SVC", "RandomForest"])
    if classifier == "SVC":
        c = trial.suggest_float("svc_c", 1e-10, 1e10, log=True)
        return 1.0 - (math.log10(c) - 2.0) ** 2 / 200.0
    depth = trial.suggest_int("rf_max_depth", 2, 32, log=True)
    return 0.8 - (math.log2(depth) - 3.0) ** 2 / 50.0


def test_a_define_by_run_tree_is_grown_and_searched_by_bo(server: Server) -> None:
    """The first trial on the small branch (enqueued), then 99 chosen by bo: no trial fails, the
    bo study's spec holds each branch's parameter under its value, every trial holds exactly its
    branch's parameters, and the branch parameter concentrates near its optimum."""
    study = optuna.create_study(study_name="define-by-run", direction="maximize", sampler=BoSampler(server.url))
    study.enqueue_trial({"classifier": "RandomForest"})
    study.optimize(tree, n_trials=100)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 100
    bo_study = bo.Client(server.url).load_study("define-by-run")
    assert bo_study.open_space
    (root,) = bo_study.spec["parameters"]
    assert root["parameterId"] == "classifier"
    under = {c["parameterSpec"]["parameterId"]: c["parentCategoricalValues"]["values"] for c in root["conditionalParameterSpecs"]}
    assert under == {"rf_max_depth": ["RandomForest"], "svc_c": ["SVC"]}
    trials = bo_study.trials()
    assert isinstance(trials, list) and len(trials) == 100
    for t in trials:
        assert t.state == "SUCCEEDED"
        branch = "svc_c" if t["classifier"] == "SVC" else "rf_max_depth"
        assert set(t.parameters) == {"classifier", branch}, t.parameters
    assert {t.labels["optuna.trial_number"] for t in trials} == {str(n) for n in range(100)}
    # bo, not chance: the SVC trials of the second half sit near log10(C) = 2, where uniform
    # draws over [-10, 10] sit 5 away in the median.
    late = [abs(math.log10(float(t["svc_c"])) - 2.0) for t in trials[50:] if t["classifier"] == "SVC"]
    assert len(late) >= 10, late
    assert float(np.median(late)) < 1.5, sorted(late)
    assert study.best_value > 0.99


def test_a_wrong_url_fails_before_the_first_trial() -> None:
    with pytest.raises(bo.ConnectionFailed, match="127.0.0.1:9"):
        BoSampler("http://127.0.0.1:9")


def test_n_trials_sizes_the_design_and_the_study_runs_on_past_it(server: Server) -> None:
    """``BoSampler(n_trials=…)`` tells the study its budget (Optuna never tells a sampler); a
    second ``optimize`` goes on past it, and a script run again with another budget takes the
    study up as it was made."""

    def quadratic(trial: optuna.Trial) -> float:
        return sum((trial.suggest_float(f"x{i}", -1.0, 1.0) - 0.3) ** 2 for i in range(8))

    study = optuna.create_study(study_name="optuna-budget", sampler=BoSampler(server.url, n_trials=np.int64(12)))
    study.optimize(quadratic, n_trials=12)
    bo_study = bo.Client(server.url).load_study("optuna-budget")
    # 8 parameters: the default design is 18 quasi-random trials; within 12 expected, 10.
    point = {f"x{i}": 0.3 for i in range(8)}
    assert len(bo_study.predict([point])) == 1, "a model after 10 of 12 trials"
    unsaid = optuna.create_study(study_name="optuna-no-budget", sampler=BoSampler(server.url))
    unsaid.optimize(quadratic, n_trials=12)
    with pytest.raises(bo.ApiError, match="initial design"):
        bo.Client(server.url).load_study("optuna-no-budget").predict([point])
    study.optimize(quadratic, n_trials=4)
    assert bo_study.spec["algorithmConfig"] == {"expectedNumTrials": 12}
    assert bo_study.state == "ACTIVE" and len(list(bo_study.trials())) == 16
    again = optuna.create_study(study_name="optuna-budget", sampler=BoSampler(server.url, n_trials=40), load_if_exists=True)
    again.optimize(quadratic, n_trials=1)
    assert len(list(bo_study.trials())) == 17
    for bad in (0, -5, 2.5, float("nan"), True, "12"):
        with pytest.raises(ValueError, match="n_trials"):
            BoSampler(server.url, n_trials=bad)  # type: ignore[arg-type]


def test_a_finite_space_used_up_ends_optimize_quietly(server: Server) -> None:
    """Three points in all: Optuna's contract holds (no failed trial, no exception), as its
    grid sampler's does."""

    def small(trial: optuna.Trial) -> float:
        kind = trial.suggest_categorical("kind", ["a", "b"])
        return trial.suggest_int("n", 1, 2) if kind == "a" else 0.5

    study = optuna.create_study(study_name="optuna-finite", sampler=BoSampler(server.url))
    study.optimize(small, n_trials=12)
    states = {t.state for t in study.trials}
    assert states == {optuna.trial.TrialState.COMPLETE}, states
    assert 3 <= len(study.trials) < 12, len(study.trials)
    seen = {(t.params["kind"], t.params.get("n")) for t in study.trials}
    assert seen == {("a", 1), ("a", 2), ("b", None)}


def test_an_unnamed_study_is_named_after_the_script(server: Server) -> None:
    sampler = BoSampler(server.url)
    optuna.create_study(sampler=sampler).optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=1)
    assert sampler.study is not None and not sampler.study.display_name.startswith("no-name-")
    assert sampler.study.display_name.split("-")[0] in ("pytest", "__main__", "python", "optuna")


def test_reports_reach_the_server_through_a_restart(server: Server) -> None:
    """The server is killed mid-trial and started again: every step reported is on bo's trial,
    in order, and the trial completes."""

    def training(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.0, 1.0)
        for step in range(40):
            if trial.number == 1 and step == 10:
                server.kill()
            if trial.number == 1 and step == 20:
                server.start(wait=False)
            trial.report(x * step, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
            time.sleep(0.01)
        return x * 40

    study = optuna.create_study(study_name="optuna-restart", direction="maximize", sampler=BoSampler(server.url), pruner=BoPruner())
    study.optimize(training, n_trials=2)
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 2
    for t in bo.Client(server.url).load_study("optuna-restart").trials():
        assert [m.step for m in t.measurements] == list(range(40)), t.id
        assert t.state == "SUCCEEDED"


def test_should_prune_answers_from_the_last_answer_without_a_round_trip(server: Server) -> None:
    """Once the study has answered, a pruning step asks nothing of the server: its request
    count stays that of the background sender's."""
    study = optuna.create_study(
        study_name="optuna-local", direction="maximize", sampler=BoSampler(server.url), pruner=BoPruner(n_startup_trials=2)
    )

    def curve(trial: optuna.Trial) -> float:
        level = trial.suggest_float("level", 0.0, 1.0)
        for step in range(1, 30):
            trial.report(level * step, step)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return level * 30

    study.optimize(curve, n_trials=12)
    bo_study = bo.Client(server.url).load_study("optuna-local")
    assert bo_study.spec["medianAutomatedStoppingSpec"]["minCompletedTrials"] == 2
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned, "the median rule pruned no trial"
    for t in bo_study.trials():
        assert t.state == "SUCCEEDED"
        if t.partial:
            # A pruned trial is a partial result at its last reported value.
            assert t.value == t.measurements[-1].metrics["objective"]


def test_a_tree_declared_by_hand(server: Server, caplog: pytest.LogCaptureFixture) -> None:
    """search_space= as a bo.SearchSpace tree: a fixed study of that tree, whose trials hold
    their branch's parameters only, and nothing sampled at random."""
    space = bo.SearchSpace()
    classifier = space.categorical("classifier", ["SVC", "RandomForest"])
    classifier.when("SVC").float("svc_c", 1e-10, 1e10, log=True)
    classifier.when("RandomForest").integer("rf_max_depth", 2, 32, log=True)
    study = optuna.create_study(study_name="optuna-declared-tree", direction="maximize", sampler=BoSampler(server.url, search_space=space))
    with caplog.at_level(logging.WARNING, logger="bo_client"):
        study.optimize(tree, n_trials=12)
    assert not [r for r in caplog.records if "at random" in r.getMessage()]
    bo_study = bo.Client(server.url).load_study("optuna-declared-tree")
    assert not bo_study.open_space
    for t, frozen in zip(bo_study.trials(), study.trials):
        assert t.parameters == {k: (float(v) if isinstance(v, float) else v) for k, v in frozen.params.items()}
