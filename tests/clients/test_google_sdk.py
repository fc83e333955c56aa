"""Google's high-level Vizier SDK (`google.cloud.aiplatform.vizier.Study`, with google-vizier)
drives a conditional study against bo as a new user would: `aiplatform.init` with a real region
name (the SDK refuses others, "local" among them, before it sends anything), create, suggest
in batches, complete, and read every trial back with `Study.trials()` — which reads one page of
ListTrials, so bo answers every trial when no page size is asked (it listed 100 of 120)."""
import math

from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform
from google.cloud.aiplatform.vizier import Study
from google.cloud.aiplatform.vizier import pyvizier as vz


def test_the_high_level_sdk_runs_a_conditional_study(server):
    aiplatform.init(project="sdk", location="us-central1", api_endpoint=server, credentials=AnonymousCredentials(), api_transport="rest")
    config = vz.StudyConfig()
    root = config.search_space.root
    optimizer = root.add_categorical_param("optimizer", ["sgd", "adam"])
    optimizer.select_values(["sgd"]).add_float_param("momentum", 0.0, 0.99)
    optimizer.select_values(["adam"]).add_float_param("beta1", 0.8, 0.999)
    root.add_float_param("learning_rate", 1e-5, 0.1, scale_type=vz.ScaleType.LOG)
    config.metric_information.append(vz.MetricInformation("accuracy", goal=vz.ObjectiveMetricGoal.MAXIMIZE))
    study = Study.create_or_load(display_name="sdk-tree", problem=config)
    assert study.resource_name == "projects/sdk/locations/us-central1/studies/1"

    best = -math.inf
    for _ in range(12):
        trials = study.suggest(count=10, worker="worker-1")
        assert len(trials) == 10
        for trial in trials:
            p = trial.parameters.as_dict()
            # Only the active child of the chosen optimizer comes back.
            assert ("momentum" in p) == (p["optimizer"] == "sgd") and ("beta1" in p) == (p["optimizer"] == "adam"), p
            accuracy = 1 - abs(math.log10(p["learning_rate"]) + 3) / 5
            best = max(best, accuracy)
            trial.complete(vz.Measurement({"accuracy": accuracy}))

    listed = list(study.trials())
    assert len(listed) == 120
    assert all(t.materialize().status == vz.TrialStatus.COMPLETED for t in listed[:3])
    optimal = study.optimal_trials()
    assert len(optimal) == 1
    assert optimal[0].materialize().final_measurement.metrics["accuracy"].value == best
    assert Study.create_or_load(display_name="sdk-tree", problem=config).resource_name == study.resource_name
