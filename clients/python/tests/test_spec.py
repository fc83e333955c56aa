"""The whole study from Python: every field of the server's ``StudySpec`` (as its OpenAPI
document has it) can be set through ``create_study`` and ``SearchSpace`` — a field added to the
server that the client cannot set fails here — and the studies so made are accepted by the real
server, which echoes what was set."""
import json
import pathlib
from typing import Any, Dict, Iterator, List, Set

import numpy as np
import pytest

import bo_client as bo
from conftest import Server

DOCUMENT = pathlib.Path(__file__).resolve().parents[3] / "openapi" / "openapi.json"


def schema_paths(schemas: Dict[str, Any], schema: Any, prefix: str, seen: Set[str]) -> Iterator[str]:
    """Every property path under ``schema`` (arrays as ``[]``), following references once."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        if name in seen:
            return
        yield from schema_paths(schemas, schemas[name], prefix, seen | {name})
        return
    for alternative in schema.get("oneOf", []) + schema.get("anyOf", []):
        yield from schema_paths(schemas, alternative, prefix, seen)
    if "items" in schema:
        yield from schema_paths(schemas, schema["items"], prefix + "[]", seen)
    for key, sub in schema.get("properties", {}).items():
        if sub.get("description", "").startswith("Output only"):
            continue  # what the server says, not what a client sets
        path = f"{prefix}.{key}" if prefix else key
        yield path
        yield from schema_paths(schemas, sub, path, seen)


def json_paths(value: Any, prefix: str = "") -> Iterator[str]:
    """Every key path in ``value``; a child parameter's spec counts as a parameter's (the
    document's paths follow the recursion once)."""
    if isinstance(value, dict):
        for key, sub in value.items():
            path = f"{prefix}.{key}" if prefix else key
            if key == "parameterSpec" and prefix.endswith("conditionalParameterSpecs[]"):
                yield path
                yield from json_paths(sub, "parameters[]")
                continue
            yield path
            yield from json_paths(sub, path)
    elif isinstance(value, list):
        for item in value:
            yield from json_paths(item, prefix + "[]")


def full_space() -> bo.SearchSpace:
    space = bo.SearchSpace()
    model = space.categorical("model", ["conv", "mlp"], default="conv")
    layers = model.when("conv").integer("layers", 1, 4, default=2)
    pool = layers.when(2, 3).discrete("pool", [1.0, 2.0, 4.0], default=2.0)
    pool.when(2.0).float("kernel_scale", 0.1, 10.0, log=True, default=1.0)
    space.float("lr", 1e-5, 1e-1, scale="UNIT_REVERSE_LOG_SCALE", default=1e-3)
    space.integer("units", 8, 512, log=True)
    return space


def test_every_study_spec_field_is_settable_from_python(server: Server) -> None:
    document = json.loads(DOCUMENT.read_text())
    schemas = document["components"]["schemas"]
    wanted = set(schema_paths(schemas, {"$ref": "#/components/schemas/StudySpec"}, "", set()))
    # The spec as a user writes it, across studies: one study has one stopping rule, and a
    # runtime constraint is a duration or an end time.
    client = bo.Client(server.url, project="parity")
    prior = client.create_study("prior", full_space(), metrics={"accuracy": "MAXIMIZE"})
    for k in range(4):
        prior.add_trial({"model": "mlp", "lr": 10 ** -(k + 1), "units": 16 * (k + 1)}, 0.5 + k / 10)
    sent: List[Dict[str, Any]] = []
    request = client.transport.request

    def recording(method: str, path: str, body: Any = None, **kw: Any) -> Any:
        if path.endswith("/studies") and method == "POST":
            sent.append(body["studySpec"])
        return request(method, path, body, **kw)

    client.transport.request = recording  # type: ignore[method-assign]
    metrics = [
        bo.Metric("accuracy", "MAXIMIZE"),
        bo.Metric("latency_ms", "MINIMIZE", safety_threshold=50.0, desired_min_safe_trials_fraction=0.8),
    ]
    studies = [
        client.create_study(
            "all-median", full_space(), metrics, algorithm="GP_BANDIT", algorithm_config={"numRestarts": 3},
            stopping=bo.MedianStopping(use_elapsed_duration=True, min_completed_trials=5, min_step_count=2, interval_steps=3, median_of="VALUE_AT_POSITION"),
            study_stopping=bo.StudyStopping(
                should_stop_asap=False, min_num_trials=5, max_num_trials=200, max_duration_no_progress=3600,
                minimum_runtime=60, maximum_runtime=86400),
            observation_noise="HIGH", measurement_selection="BEST_MEASUREMENT",
        ),
        client.create_study(
            "all-decay", full_space(), {"accuracy": "MAXIMIZE"}, algorithm="GP_BANDIT", stopping=bo.DecayCurveStopping(),
            study_stopping=bo.StudyStopping(max_num_trials_no_progress=40, minimum_end_time="2030-01-01T00:00:00Z",
                                            maximum_end_time="2031-01-01T00:00:00Z"),
            prior_studies=[prior],
        ),
        client.create_study(
            "all-convex", full_space(), {"accuracy": "MAXIMIZE"},
            stopping=bo.ConvexStopping(min_step_count=10, max_step_count=100, min_measurement_count=3,
                                       learning_rate_parameter_name="lr", use_elapsed_duration=False,
                                       update_all_stopped_trials=False),
            study_stopping=bo.StudyStopping(should_stop_asap=True), transfer_learning=False,
        ),
        client.create_study(
            "all-asha", full_space(), {"accuracy": "MAXIMIZE"},
            # Settings as ML code computes them: numpy numbers.
            stopping=bo.SuccessiveHalvingStopping(max_step_count=np.int64(27), min_step_count=np.int32(1),
                                                  reduction_factor=np.float32(3.0), use_elapsed_duration=False,
                                                  brackets=np.int64(2), promotion="TOP_K"),
        ),
        client.create_study(
            "all-asha-resume", full_space(), {"accuracy": "MAXIMIZE"},
            stopping=bo.SuccessiveHalvingStopping(max_step_count=np.int64(27), resume=np.bool_(True)),
        ),
        client.create_study("all-open", None, {"accuracy": "MAXIMIZE"}, open_space=True, trial_lease=600),
    ]
    settable = {p for spec in sent for p in json_paths(spec)}
    missing = sorted(wanted - settable)
    assert not missing, f"StudySpec fields the Python client cannot set: {missing}"
    # The server kept what was set.
    echoed = studies[0].spec
    assert echoed["metrics"][1]["safetyConfig"] == {"safetyThreshold": 50.0, "desiredMinSafeTrialsFraction": 0.8}
    assert echoed["studyStoppingConfig"]["maxNumTrials"] in (200, "200")
    assert studies[1].spec["transferLearningConfig"]["priorStudyNames"] == [prior.name]
    assert studies[2].spec["transferLearningConfig"] == {"disableTransferLearning": True}
    assert studies[0].objective_ids == ["accuracy"]
    assert "convexAutomatedStoppingSpec" in studies[2].spec and studies[2].spec["studyStoppingConfig"]["shouldStopAsap"] is True
    assert studies[3].spec["successiveHalvingStoppingSpec"] == {
        "minStepCount": "1", "maxStepCount": "27", "reductionFactor": 3.0, "brackets": 2, "promotion": "TOP_K"}
    assert studies[4].spec["successiveHalvingStoppingSpec"] == {
        "minStepCount": "1", "maxStepCount": "27", "reductionFactor": 3.0, "brackets": 1, "promotion": "TOP_K", "resume": True}


def test_typed_spec_errors_are_caught_before_sending() -> None:
    with pytest.raises(ValueError, match="goal must be MAXIMIZE or MINIMIZE"):
        bo.Metric("m", "MAX")
    with pytest.raises(ValueError, match="not both"):
        bo.StudyStopping(maximum_runtime=10, maximum_end_time="2030-01-01T00:00:00Z").to_vertex()
    with pytest.raises(ValueError, match="max_duration_no_progress"):
        bo.StudyStopping(max_duration_no_progress=-1).to_vertex()
    with pytest.raises(ValueError, match="promotion must be QUANTILE or TOP_K"):
        bo.SuccessiveHalvingStopping(max_step_count=27, promotion="TOPK")
    with pytest.raises(ValueError, match="promotion must be TOP_K or unset"):
        bo.SuccessiveHalvingStopping(max_step_count=27, promotion="QUANTILE", resume=True)
    with pytest.raises(ValueError, match="brackets must be 1"):
        bo.SuccessiveHalvingStopping(max_step_count=27, brackets=2, resume=True)
