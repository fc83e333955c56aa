"""bo_client.ray under a real Ray Tune run (Ray from PyPI, in its own venv: `pytest -m ray`)."""
import math

import pytest

import bo_client as bo
from conftest import Server

pytestmark = pytest.mark.ray

ITERATIONS = 8


@pytest.fixture(scope="module")
def ray_cluster():  # type: ignore[no-untyped-def]
    import os
    import pathlib

    import ray

    # Ray's workers import this module to run `train`.
    here = pathlib.Path(__file__).resolve().parent
    path = os.pathsep.join([str(here), str(here.parent / "src"), os.environ.get("PYTHONPATH", "")])
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
        runtime_env={"env_vars": {"PYTHONPATH": path}},
    )
    yield
    ray.shutdown()


def test_tune_s_search_space_maps_onto_bo() -> None:
    from ray import tune

    from bo_client.ray import space_from_tune

    space, back = space_from_tune(
        {
            "lr": tune.loguniform(1e-5, 1e-1),
            "layers": tune.randint(1, 9),
            "dropout": tune.quniform(0.0, 0.5, 0.1),
            "opt": {"name": tune.choice(["sgd", "adam"]), "nesterov": tune.choice([True, False])},
            "batch": tune.choice([32, 64, 128]),
            "epochs": 10,
        }
    )
    specs = {s["parameterId"]: s for s in space.to_vertex()}
    assert set(specs) == {"lr", "layers", "dropout", "opt/name", "opt/nesterov", "batch"}
    assert specs["lr"]["scaleType"] == "UNIT_LOG_SCALE"
    assert specs["layers"]["integerValueSpec"] == {"minValue": "1", "maxValue": "8"}
    assert specs["dropout"]["discreteValueSpec"]["values"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]
    assert specs["opt/nesterov"]["categoricalValueSpec"]["values"] == ["True", "False"]
    assert back["opt/nesterov"]["True"] is True and back["batch"][repr(64.0)] == 64
    with pytest.raises(ValueError, match="normal sampler"):
        space_from_tune({"w": tune.randn(0, 1)})
    with pytest.raises(ValueError, match="grid_search"):
        space_from_tune({"w": tune.grid_search([1, 2])})


def train(config):  # type: ignore[no-untyped-def]
    import time

    import numpy as np

    from ray import tune

    if config["opt"]["name"] == "sgd" and config["opt"]["momentum"] > 0.95:
        raise RuntimeError("diverged")
    # A level no model learns from 16 trials (it varies fast with lr): later trials are no better
    # than earlier ones, so the median rule always has lagging trials to stop. (With a smooth
    # level the model made every later trial better than the median, and no trial was stopped
    # in about one run of four.)
    level = -abs(math.sin(1e4 * config["lr"] + 7 * config["layers"]))
    for i in range(1, ITERATIONS + 1):
        # A step takes a moment, as training does: the stopper's answer (an HTTP round trip to
        # the study's median rule) can land before the trial has reported all its steps. Without
        # it a loaded machine ran every trial to its end before any stop arrived.
        time.sleep(0.05)
        # numpy numbers, as a training loop's metrics usually are (they once made every trial
        # INFEASIBLE). Torch tensors Tune itself refuses ("Passing objects containing Torch
        # tensors as metrics is not supported").
        score = np.float32(level) * (1 - np.float32(0.5) ** i)
        tune.report({"score": score, "checked": sorted(config) + sorted(config["opt"])})


def test_a_tune_run_drives_a_conditional_study(server: Server, ray_cluster) -> None:  # type: ignore[no-untyped-def]
    from ray import tune

    from bo_client.ray import BoSearch

    space = bo.SearchSpace()
    name = space.categorical("opt/name", ["sgd", "adam"])
    name.when("sgd").float("opt/momentum", 0.0, 0.99)
    name.when("adam").float("opt/beta1", 0.8, 0.999)
    space.float("lr", 1e-5, 1e-1, log=True)
    space.integer("layers", 1, 8)
    search = BoSearch(space, metric="score", mode="max", url=server.url, project="demo", study="tune")
    tuner = tune.Tuner(
        train,
        tune_config=tune.TuneConfig(search_alg=search, num_samples=16, max_concurrent_trials=2),
        run_config=tune.RunConfig(stop=search.stopper(), verbose=0, storage_path=str(server.db.parent / "ray")),
    )
    results = tuner.fit()
    assert len(results) == 16

    study = bo.Client(server.url, project="demo").load_study("tune")
    trials = list(study.trials())
    assert len(trials) == 16 and all(t.done for t in trials)
    by_config = {}
    for r in results:
        cfg = r.config
        key = (cfg["lr"], cfg["layers"], cfg["opt"]["name"], cfg["opt"].get("momentum"), cfg["opt"].get("beta1"))
        by_config[key] = r
        # Only the active child reached the trainable.
        assert set(cfg["opt"]) == {"name", "momentum" if cfg["opt"]["name"] == "sgd" else "beta1"}
    for t in trials:
        r = by_config[(t["lr"], t["layers"], t["opt/name"], t.get("opt/momentum"), t.get("opt/beta1"))]
        if r.error is not None:
            assert t.state == "INFEASIBLE" and "error" in t.infeasible_reason
            continue
        assert t.state == "SUCCEEDED"
        # Reported results are measurements in order; the last one completes the trial (Tune
        # hands a result that stops a trial to on_trial_complete only).
        last = r.metrics["training_iteration"]
        assert [m.step for m in t.measurements] in (list(range(1, last)), list(range(1, last + 1)))
        assert t.final_measurement is not None and t.final_measurement.step == last
        assert t.value == pytest.approx(float(r.metrics["score"]))
    stopped = [t for t in trials if t.state == "SUCCEEDED" and len(t.measurements) < ITERATIONS]
    assert stopped, "the study's median rule stopped no trial"
    best = study.best_trial()
    assert best is not None and best.value == max(t.value for t in trials if t.value is not None)


def test_trials_tune_s_asha_stops_are_partial_results(server: Server, ray_cluster) -> None:  # type: ignore[no-untyped-def]
    """Under Tune's own ASHAScheduler a trial ASHA stops at a rung is a partial result to the
    study (stopped, then completed), and one that reaches max_t is a full one."""
    import numpy as np
    from ray import tune

    from bo_client.ray import BoSearch

    space = bo.SearchSpace()
    space.float("lr", 1e-5, 1e-1, log=True)
    for wrong, message in ((0, "at least 1"), (2.5, "whole number"), (float("nan"), "whole number"), (True, "boolean"), ("8", "string")):
        with pytest.raises(ValueError, match=f"max_t.*{message}"):
            BoSearch(space, url=server.url, max_t=wrong)
    assert BoSearch(space, url=server.url, max_t=np.int64(ITERATIONS))._max_t == ITERATIONS
    search = BoSearch(space, metric="score", mode="max", url=server.url, project="demo", study="tune-asha",
                      median_stopping=False, max_t=ITERATIONS)
    tuner = tune.Tuner(
        train_lr,
        tune_config=tune.TuneConfig(
            search_alg=search, num_samples=12, max_concurrent_trials=1,
            scheduler=tune.schedulers.ASHAScheduler(metric="score", mode="max", max_t=ITERATIONS, grace_period=1, reduction_factor=3),
        ),
        run_config=tune.RunConfig(verbose=0, storage_path=str(server.db.parent / "ray-asha")),
    )
    results = tuner.fit()
    assert all(r.error is None for r in results)

    study = bo.Client(server.url, project="demo").load_study("tune-asha")
    trials = list(study.trials())
    assert len(trials) == 12 and all(t.state == "SUCCEEDED" for t in trials)
    full = [t for t in trials if t.final_measurement.step == ITERATIONS]
    cut = [t for t in trials if t.final_measurement.step < ITERATIONS]
    assert full and cut, "ASHA stopped no trial, or every trial"
    assert not any(t.partial for t in full)
    assert all(t.partial for t in cut)
    # "Best" ranks the trials trained in full only.
    best = study.best_trial()
    assert best is not None and best.id in {t.id for t in full}


def train_lr(config):  # type: ignore[no-untyped-def]
    from ray import tune

    level = -abs(math.sin(1e4 * config["lr"]))
    for step in range(1, ITERATIONS + 1):
        tune.report({"score": level * (1 - 0.5**step)})


def train_resumable(config, checkpoints):  # type: ignore[no-untyped-def]
    """A trainable that keeps a checkpoint under its bo trial's id, written before each report
    (the stopper may end the trial at any report), and goes on from the one it resumes."""
    import json
    import os
    import time

    from ray import tune

    level = -abs(math.sin(1e4 * config["lr"]))
    done = 0
    if "bo_resumed_from" in config:
        with open(os.path.join(checkpoints, f"{config['bo_resumed_from']}.json")) as f:
            done = json.load(f)["step"]
        if done != config["bo_resumed_at"]:
            raise RuntimeError(f"resumed at {config['bo_resumed_at']}, the checkpoint is of step {done}")
    for step in range(done + 1, ITERATIONS + 1):
        time.sleep(0.05)
        with open(os.path.join(checkpoints, f"{config['bo_trial_id']}.json"), "w") as f:
            json.dump({"step": step}, f)
        tune.report({"score": level * (1 - 0.5**step)})


def test_asha_with_checkpoints_resumes_paused_trials_under_tune(server: Server, ray_cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ray import tune

    from bo_client.ray import BoSearch

    space = bo.SearchSpace()
    space.float("lr", 1e-5, 1e-1, log=True)
    stopping = bo.SuccessiveHalvingStopping(max_step_count=ITERATIONS, resume=True)
    search = BoSearch(space, metric="score", mode="max", url=server.url, project="demo", study="tune-resume", stopping=stopping)
    tuner = tune.Tuner(
        tune.with_parameters(train_resumable, checkpoints=str(tmp_path)),
        tune_config=tune.TuneConfig(search_alg=search, num_samples=14, max_concurrent_trials=1),
        run_config=tune.RunConfig(stop=search.stopper(), verbose=0, storage_path=str(server.db.parent / "ray-resume")),
    )
    results = tuner.fit()
    assert all(r.error is None for r in results), [str(r.error) for r in results if r.error is not None]

    study = bo.Client(server.url, project="demo").load_study("tune-resume")
    trials = {t.id: t for t in study.trials()}
    resumed = [t for t in trials.values() if t.resumed_from is not None]
    assert resumed, "no paused trial was resumed"
    for t in resumed:
        before = trials[t.resumed_from]
        assert t.parameters == before.parameters
        # The measurements taken over, then the resumed run's, on from where it paused.
        steps = [m.step for m in t.measurements]
        assert steps[: len(before.measurements)] == [m.step for m in before.measurements]
        assert steps == list(range(1, len(steps) + 1)), steps
        assert t.resumed_at == before.measurements[-1].step


def test_the_ray_tune_example_runs(server: Server) -> None:
    """examples/ray_tune.py as its docstring runs it (its own Ray, in a fresh process)."""
    import os
    import pathlib
    import re
    import subprocess
    import sys

    here = pathlib.Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(here / "src"), "RAY_USAGE_STATS_ENABLED": "0"}
    out = subprocess.run(
        [sys.executable, str(here / "examples" / "ray_tune.py"), "--url", server.url, "--samples", "8",
         "--storage", str(server.db.parent / "ray-example")],
        env=env, capture_output=True, text=True, timeout=900,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert re.search(r"best \{'lr': .*\}: accuracy (0\.\d{3}|1\.000)", out.stdout), out.stdout
    study = bo.Client(server.url).load_study("ray-tune-example")
    trials = list(study.trials())
    assert len(trials) == 8 and all(t.state == "SUCCEEDED" for t in trials), [(t.state, t.infeasible_reason) for t in trials]
    # TuneConfig's num_samples reached the study as the trials it expects (it does not stop it).
    assert study.spec["algorithmConfig"] == {"expectedNumTrials": 8} and study.state == "ACTIVE"
