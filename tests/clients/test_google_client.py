"""Google's own Vertex AI client (google-cloud-aiplatform, REST transport, anonymous
credentials) drives a whole conditional study against bo: create, lookup, suggest with a
clientId, measurements, complete, infeasible, stop, early stopping, list, optimal trials,
a trial evaluated elsewhere, delete. It sends enums as integers and omits proto3 defaults."""
import pytest
from google.api_core import exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1 as v

PS = v.StudySpec.ParameterSpec
CPS = PS.ConditionalParameterSpec


def _client(base):
    return v.VizierServiceClient(
        transport="rest", credentials=AnonymousCredentials(), client_options={"api_endpoint": base}
    )


def _study_spec():
    return v.StudySpec(
        metrics=[v.StudySpec.MetricSpec(metric_id="accuracy", goal=v.StudySpec.MetricSpec.GoalType.MAXIMIZE)],
        algorithm=v.StudySpec.Algorithm.RANDOM_SEARCH,
        median_automated_stopping_spec=v.StudySpec.MedianAutomatedStoppingSpec(),
        parameters=[
            PS(
                parameter_id="optimizer",
                categorical_value_spec=PS.CategoricalValueSpec(values=["sgd", "adam"]),
                conditional_parameter_specs=[
                    CPS(
                        parent_categorical_values=CPS.CategoricalValueCondition(values=["sgd"]),
                        parameter_spec=PS(
                            parameter_id="momentum",
                            # min_value 0.0 is a proto3 default: the client omits it on the wire.
                            double_value_spec=PS.DoubleValueSpec(min_value=0.0, max_value=0.99),
                        ),
                    ),
                    CPS(
                        parent_categorical_values=CPS.CategoricalValueCondition(values=["adam"]),
                        parameter_spec=PS(
                            parameter_id="layers",
                            integer_value_spec=PS.IntegerValueSpec(min_value=1, max_value=4),
                            conditional_parameter_specs=[
                                CPS(
                                    parent_int_values=CPS.IntValueCondition(values=[3, 4]),
                                    parameter_spec=PS(
                                        parameter_id="width",
                                        discrete_value_spec=PS.DiscreteValueSpec(values=[32, 64, 128]),
                                    ),
                                )
                            ],
                        ),
                    ),
                ],
            ),
            PS(
                parameter_id="learning_rate",
                double_value_spec=PS.DoubleValueSpec(min_value=1e-5, max_value=0.1),
                scale_type=PS.ScaleType.UNIT_LOG_SCALE,
            ),
        ],
    )


def _active(trial):
    """The parameter ids a trial sets, checked against the tree."""
    values = {p.parameter_id: p.value for p in trial.parameters}
    expected = {"optimizer", "learning_rate"}
    if values["optimizer"] == "sgd":
        expected.add("momentum")
        assert 0.0 <= values["momentum"] <= 0.99
    else:
        expected.add("layers")
        assert values["layers"] in (1, 2, 3, 4)
        if values["layers"] in (3, 4):
            expected.add("width")
            assert values["width"] in (32, 64, 128)
    assert set(values) == expected, values
    assert 1e-5 <= values["learning_rate"] <= 0.1
    return values


def test_a_whole_conditional_study_through_googles_client(server):
    client = _client(server)
    parent = "projects/demo/locations/local"
    study = client.create_study(parent=parent, study=v.Study(display_name="google-client", study_spec=_study_spec()))
    assert study.name.startswith(parent + "/studies/")
    assert study.state == v.Study.State.ACTIVE
    assert study.study_spec.metrics[0].goal == v.StudySpec.MetricSpec.GoalType.MAXIMIZE
    # The same name and spec again is the same study.
    assert client.create_study(parent=parent, study=v.Study(display_name="google-client", study_spec=_study_spec())).name == study.name
    assert client.lookup_study(request={"parent": parent, "display_name": "google-client"}).name == study.name
    assert client.get_study(name=study.name).display_name == "google-client"
    assert [s.name for s in client.list_studies(parent=parent)] == [study.name]

    op = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=4, client_id="worker-1"))
    trials = op.result(timeout=10).trials
    assert len(trials) == 4
    for t in trials:
        _active(t)
        assert t.state == v.Trial.State.ACTIVE
        assert t.client_id == "worker-1"
    # The same client asking again gets the same trials while they are ACTIVE.
    again = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=4, client_id="worker-1"))
    assert [t.name for t in again.result(timeout=10).trials] == [t.name for t in trials]

    # Completed trials with learning curves, for the median rule.
    for k, t in enumerate(trials[:3]):
        for step in (1, 2):
            client.add_trial_measurement(
                request=v.AddTrialMeasurementRequest(
                    trial_name=t.name,
                    measurement=v.Measurement(step_count=step, metrics=[v.Measurement.Metric(metric_id="accuracy", value=0.5 + 0.1 * k + 0.05 * step)]),
                )
            )
        done = client.complete_trial(request=v.CompleteTrialRequest(name=t.name))
        assert done.state == v.Trial.State.SUCCEEDED
        assert done.final_measurement.step_count == 2
    # The fourth lags behind the others: the median rule stops it.
    lagging = trials[3]
    client.add_trial_measurement(
        request=v.AddTrialMeasurementRequest(
            trial_name=lagging.name,
            measurement=v.Measurement(step_count=2, metrics=[v.Measurement.Metric(metric_id="accuracy", value=0.1)]),
        )
    )
    check = client.check_trial_early_stopping_state(request=v.CheckTrialEarlyStoppingStateRequest(trial_name=lagging.name))
    assert check.result(timeout=10).should_stop is True
    assert client.get_trial(name=lagging.name).state == v.Trial.State.STOPPING
    stopped = client.complete_trial(request=v.CompleteTrialRequest(name=lagging.name, trial_infeasible=True, infeasible_reason="stopped early"))
    assert stopped.state == v.Trial.State.INFEASIBLE
    assert stopped.infeasible_reason == "stopped early"

    # A new trial, stopped by the user; a trial evaluated elsewhere.
    fresh = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=1, client_id="worker-1")).result(timeout=10).trials[0]
    assert client.stop_trial(request=v.StopTrialRequest(name=fresh.name)).state == v.Trial.State.STOPPING
    elsewhere = client.create_trial(
        parent=study.name,
        trial=v.Trial(
            parameters=[
                v.Trial.Parameter(parameter_id="optimizer", value="adam"),
                v.Trial.Parameter(parameter_id="layers", value=2),
                v.Trial.Parameter(parameter_id="learning_rate", value=0.01),
            ],
            final_measurement=v.Measurement(metrics=[v.Measurement.Metric(metric_id="accuracy", value=0.99)]),
        ),
    )
    assert elsewhere.state == v.Trial.State.SUCCEEDED

    listed = list(client.list_trials(request=v.ListTrialsRequest(parent=study.name, page_size=2)))
    assert [t.name for t in listed] == [t.name for t in trials] + [fresh.name, elsewhere.name]
    optimal = client.list_optimal_trials(request=v.ListOptimalTrialsRequest(parent=study.name)).optimal_trials
    assert [t.name for t in optimal] == [elsewhere.name]

    # Errors come back as Google's exceptions.
    # FAILED_PRECONDITION travels as HTTP 400, which the client raises as BadRequest.
    with pytest.raises(exceptions.BadRequest, match="already SUCCEEDED"):
        client.complete_trial(request=v.CompleteTrialRequest(name=elsewhere.name))
    with pytest.raises(exceptions.NotFound):
        client.get_trial(name=study.name + "/trials/999")

    client.delete_trial(name=fresh.name)
    with pytest.raises(exceptions.NotFound):
        client.get_trial(name=fresh.name)
    client.delete_study(name=study.name)
    with pytest.raises(exceptions.NotFound):
        client.get_study(name=study.name)


def test_a_pending_suggest_operation_is_polled_by_googles_client(impatient_server):
    client = _client(impatient_server)
    parent = "projects/demo/locations/local"
    spec = v.StudySpec(
        metrics=[v.StudySpec.MetricSpec(metric_id="loss", goal=v.StudySpec.MetricSpec.GoalType.MINIMIZE)],
        parameters=[PS(parameter_id=p, double_value_spec=PS.DoubleValueSpec(min_value=0.0, max_value=1.0)) for p in ("a", "b")],
    )
    study = client.create_study(parent=parent, study=v.Study(display_name="pending", study_spec=spec))
    for i in range(12):
        a, b = (i * 0.618) % 1.0, (i * 0.414 + 0.1) % 1.0
        client.create_trial(
            parent=study.name,
            trial=v.Trial(
                parameters=[v.Trial.Parameter(parameter_id="a", value=a), v.Trial.Parameter(parameter_id="b", value=b)],
                final_measurement=v.Measurement(metrics=[v.Measurement.Metric(metric_id="loss", value=(a - 0.3) ** 2 + (b - 0.7) ** 2)]),
            ),
        )
    op = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=2, client_id="w"))
    assert op.operation.done is False, "the server was told not to wait"
    assert op.operation.name.startswith(study.name + "/operations/")
    trials = op.result(timeout=30).trials  # the client polls GET …/operations/{id}
    assert len(trials) == 2
    assert all(t.state == v.Trial.State.ACTIVE and t.client_id == "w" for t in trials)
    assert {p.parameter_id for p in trials[0].parameters} == {"a", "b"}


def test_an_api_key_is_sent_as_the_clients_bearer_token(keyed_server):
    """With keys configured, Google's client authenticates by passing the key as an OAuth token
    (it sends `Authorization: Bearer KEY`); another project's studies are NOT_FOUND, and a client
    without the key is refused."""
    from google.oauth2.credentials import Credentials

    from conftest import API_KEY

    keyed = v.VizierServiceClient(
        transport="rest", credentials=Credentials(token=API_KEY), client_options={"api_endpoint": keyed_server}
    )
    study = keyed.create_study(
        parent="projects/team-a/locations/l", study=v.Study(display_name="keyed", study_spec=_study_spec())
    )
    op = keyed.suggest_trials(request={"parent": study.name, "suggestion_count": 1, "client_id": "w"})
    assert len(op.result().trials) == 1
    with pytest.raises(exceptions.NotFound):
        keyed.list_studies(parent="projects/team-b/locations/l")
    with pytest.raises(exceptions.NotFound):
        keyed.get_study(name=study.name.replace("team-a", "team-b"))
    # Without the key: 401 UNAUTHENTICATED (Google's client then tries to refresh its
    # credentials, which anonymous ones cannot).
    import json
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{keyed_server}/v1/{study.name}")
    assert refused.value.code == 401
    assert json.load(refused.value)["error"]["status"] == "UNAUTHENTICATED"


def test_study_stopping_config_through_googles_client(server):
    """StudyStoppingConfig sent by Google's client (Int32Value and Duration wrappers): the study
    stops at its trial budget, says why, and tells its running trial to stop."""
    client = _client(server)
    spec = _study_spec()
    spec.study_stopping_config = v.StudySpec.StudyStoppingConfig(
        should_stop_asap=True, min_num_trials=1, max_num_trials=3, max_duration_no_progress={"seconds": 3600},
        maximum_runtime_constraint=v.StudyTimeConstraint(max_duration={"seconds": 86400}),
    )
    study = client.create_study(parent="projects/demo/locations/local", study=v.Study(display_name="budget", study_spec=spec))
    got = client.get_study(name=study.name).study_spec.study_stopping_config
    assert (got.max_num_trials, got.min_num_trials, got.should_stop_asap) == (3, 1, True)
    assert got.max_duration_no_progress.total_seconds() == 3600
    trials = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=3, client_id="w")).result(timeout=10).trials
    assert len(trials) == 3
    client.complete_trial(request=v.CompleteTrialRequest(name=trials[0].name, final_measurement=v.Measurement(
        metrics=[v.Measurement.Metric(metric_id="accuracy", value=0.5)])))
    done = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=1, client_id="late")).result(timeout=10)
    assert list(done.trials) == [] and done.study_state == v.Study.State.COMPLETED
    stopped = client.get_study(name=study.name)
    assert stopped.state == v.Study.State.COMPLETED and "maxNumTrials" in stopped.inactive_reason
    check = client.check_trial_early_stopping_state(request=v.CheckTrialEarlyStoppingStateRequest(trial_name=trials[1].name)).result(timeout=10)
    assert check.should_stop is True


def test_a_two_metric_study_through_googles_client(server):
    """Two metrics sent by Google's client: GP_BANDIT suggests from a model of each (trading one
    off against the other), and list_optimal_trials returns the Pareto front."""
    client = _client(server)
    Metric = v.StudySpec.MetricSpec
    spec = v.StudySpec(
        metrics=[Metric(metric_id="error", goal=Metric.GoalType.MINIMIZE), Metric(metric_id="latency", goal=Metric.GoalType.MINIMIZE)],
        algorithm=v.StudySpec.Algorithm.ALGORITHM_UNSPECIFIED,  # AUTO: GP_BANDIT on this flat space
        parameters=[PS(parameter_id="size", double_value_spec=PS.DoubleValueSpec(min_value=0.0, max_value=1.0)),
                    PS(parameter_id="waste", double_value_spec=PS.DoubleValueSpec(min_value=0.0, max_value=1.0))],
    )
    study = client.create_study(parent="projects/demo/locations/local", study=v.Study(display_name="trade-off", study_spec=spec))
    assert [m.metric_id for m in client.get_study(name=study.name).study_spec.metrics] == ["error", "latency"]
    for k in range(24):
        trial = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=1, client_id="w")).result(timeout=30).trials[0]
        x = {p.parameter_id: p.value for p in trial.parameters}
        client.complete_trial(request=v.CompleteTrialRequest(name=trial.name, final_measurement=v.Measurement(metrics=[
            v.Measurement.Metric(metric_id="error", value=1 - x["size"] + x["waste"] ** 2),
            v.Measurement.Metric(metric_id="latency", value=x["size"] + x["waste"] ** 2)])))
    front = client.list_optimal_trials(request=v.ListOptimalTrialsRequest(parent=study.name)).optimal_trials
    assert len(front) >= 4, front
    sizes = sorted({p.parameter_id: p.value for p in t.parameters}["size"] for t in front)
    assert sizes[-1] - sizes[0] > 0.5, f"the front spans the trade-off: {sizes}"


def test_a_safety_metric_through_googles_client(server):
    """A safety metric sent by Google's client (``safety_config``) comes back as sent, and the best
    trial list_optimal_trials returns is a safe one near the constrained optimum."""
    client = _client(server)
    Metric = v.StudySpec.MetricSpec
    safety = Metric.SafetyMetricConfig(safety_threshold=0.5, desired_min_safe_trials_fraction=0.8)
    spec = v.StudySpec(
        metrics=[Metric(metric_id="reward", goal=Metric.GoalType.MAXIMIZE),
                 Metric(metric_id="risk", goal=Metric.GoalType.MINIMIZE, safety_config=safety)],
        parameters=[PS(parameter_id="a", double_value_spec=PS.DoubleValueSpec(min_value=0.0, max_value=1.0)),
                    PS(parameter_id="b", double_value_spec=PS.DoubleValueSpec(min_value=0.0, max_value=1.0))],
    )
    study = client.create_study(parent="projects/demo/locations/local", study=v.Study(display_name="safe", study_spec=spec))
    echoed = client.get_study(name=study.name).study_spec.metrics[1]
    assert echoed.safety_config.safety_threshold == 0.5 and echoed.safety_config.desired_min_safe_trials_fraction == 0.8, echoed
    for _ in range(24):
        trial = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=1, client_id="w")).result(timeout=30).trials[0]
        x = {p.parameter_id: p.value for p in trial.parameters}
        client.complete_trial(request=v.CompleteTrialRequest(name=trial.name, final_measurement=v.Measurement(metrics=[
            v.Measurement.Metric(metric_id="reward", value=x["a"] + x["b"]),
            v.Measurement.Metric(metric_id="risk", value=x["a"] ** 2 + x["b"] ** 2)])))
    best = client.list_optimal_trials(request=v.ListOptimalTrialsRequest(parent=study.name)).optimal_trials
    assert len(best) == 1, best
    values = {m.metric_id: m.value for m in best[0].final_measurement.metrics}
    assert values["risk"] <= 0.5, f"the best trial is safe: {values}"
    assert values["reward"] > 0.9, f"and near the safe optimum (reward 1): {values}"


def test_googles_v1beta1_client(server):
    """Google's v1beta1 client: /v1beta1 is an alias of /v1, and the operations it polls (under
    /ui/) name v1beta1's messages, so it unpacks the suggestions and the early-stopping answer."""
    from google.cloud import aiplatform_v1beta1 as b

    client = b.VizierServiceClient(transport="rest", credentials=AnonymousCredentials(), client_options={"api_endpoint": server})
    BPS = b.StudySpec.ParameterSpec
    spec = b.StudySpec(
        metrics=[b.StudySpec.MetricSpec(metric_id="m", goal=b.StudySpec.MetricSpec.GoalType.MINIMIZE)],
        algorithm=b.StudySpec.Algorithm.RANDOM_SEARCH,
        median_automated_stopping_spec=b.StudySpec.MedianAutomatedStoppingSpec(),
        parameters=[BPS(parameter_id="x", double_value_spec=BPS.DoubleValueSpec(min_value=-1.0, max_value=1.0))],
    )
    study = client.create_study(parent="projects/demo/locations/local", study=b.Study(display_name="beta", study_spec=spec))
    assert client.get_study(name=study.name).display_name == "beta"
    trials = client.suggest_trials(request=b.SuggestTrialsRequest(parent=study.name, suggestion_count=2, client_id="w")).result(timeout=30).trials
    assert len(trials) == 2 and all(-1 <= t.parameters[0].value <= 1 for t in trials)
    client.add_trial_measurement(request=b.AddTrialMeasurementRequest(
        trial_name=trials[0].name, measurement=b.Measurement(step_count=1, metrics=[b.Measurement.Metric(metric_id="m", value=0.5)])))
    check = client.check_trial_early_stopping_state(request=b.CheckTrialEarlyStoppingStateRequest(trial_name=trials[0].name)).result(timeout=30)
    assert check.should_stop is False
    done = client.complete_trial(request=b.CompleteTrialRequest(
        name=trials[0].name, final_measurement=b.Measurement(metrics=[b.Measurement.Metric(metric_id="m", value=0.25)])))
    assert done.state == b.Trial.State.SUCCEEDED
    best = client.list_optimal_trials(request=b.ListOptimalTrialsRequest(parent=study.name)).optimal_trials
    assert [t.name for t in best] == [trials[0].name]


def test_contexts_through_googles_client(server):
    """SuggestTrials with contexts from Google's client: one trial per context, in their order,
    each taking the context's values; a context naming no parameter of the study is a 400."""
    client = _client(server)
    spec = v.StudySpec(
        metrics=[v.StudySpec.MetricSpec(metric_id="loss", goal=v.StudySpec.MetricSpec.GoalType.MINIMIZE)],
        algorithm=v.StudySpec.Algorithm.ALGORITHM_UNSPECIFIED,
        parameters=[PS(parameter_id="day", categorical_value_spec=PS.CategoricalValueSpec(values=["mon", "tue", "wed"])),
                    PS(parameter_id="x", double_value_spec=PS.DoubleValueSpec(min_value=0.0, max_value=1.0))],
    )
    study = client.create_study(parent="projects/demo/locations/local", study=v.Study(display_name="contexts", study_spec=spec))
    P = v.Trial.Parameter
    contexts = [v.TrialContext(description=d, parameters=[P(parameter_id="day", value=d)]) for d in ["tue", "mon", "tue"]]
    for _ in range(4):
        trials = client.suggest_trials(request=v.SuggestTrialsRequest(
            parent=study.name, suggestion_count=3, client_id="w", contexts=contexts)).result(timeout=30).trials
        assert [{p.parameter_id: p.value for p in t.parameters}["day"] for t in trials] == ["tue", "mon", "tue"]
        for t in trials:
            x = {p.parameter_id: p.value for p in t.parameters}
            client.complete_trial(request=v.CompleteTrialRequest(name=t.name, final_measurement=v.Measurement(
                metrics=[v.Measurement.Metric(metric_id="loss", value=(x["x"] - 0.5) ** 2)])))
    bad = [v.TrialContext(parameters=[P(parameter_id="week", value=1)])]
    with pytest.raises(exceptions.BadRequest, match="contexts"):
        client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=1, client_id="v", contexts=bad)).result(timeout=30)


def _curve_study(client, name, **rule):
    """A study of one DOUBLE ``x`` whose trials at x0, x1, … are created, measured along curves
    rising to ``1 − (x − 0.7)²`` over 20 steps and completed; returns the study and a function
    that creates a running trial at ``x`` measured for ``steps`` steps."""
    spec = v.StudySpec(
        metrics=[v.StudySpec.MetricSpec(metric_id="acc", goal=v.StudySpec.MetricSpec.GoalType.MAXIMIZE)],
        algorithm=v.StudySpec.Algorithm.RANDOM_SEARCH,
        parameters=[PS(parameter_id="lr", double_value_spec=PS.DoubleValueSpec(min_value=0.0, max_value=1.0))],
        **rule,
    )
    study = client.create_study(parent="projects/demo/locations/local", study=v.Study(display_name=name, study_spec=spec))

    def running(x, steps, client_id):
        client.create_trial(parent=study.name, trial=v.Trial(parameters=[v.Trial.Parameter(parameter_id="lr", value=x)]))
        trial = client.suggest_trials(request=v.SuggestTrialsRequest(parent=study.name, suggestion_count=1, client_id=client_id)).result(timeout=30).trials[0]
        for step in range(1, steps + 1):
            value = (1 - (x - 0.7) ** 2) * (1 - 2.718281828 ** (-step / 4))
            client.add_trial_measurement(request=v.AddTrialMeasurementRequest(trial_name=trial.name, measurement=v.Measurement(
                step_count=step, metrics=[v.Measurement.Metric(metric_id="acc", value=value)])))
        return trial

    for k, x in enumerate([0.0, 0.1, 0.2, 0.3, 0.45, 0.55, 0.85, 1.0]):
        client.complete_trial(request=v.CompleteTrialRequest(name=running(x, 20, f"done-{k}").name))
    return study, running


def test_curve_stopping_rules_through_googles_client(server):
    """decayCurveStoppingSpec and convexAutomatedStoppingSpec sent by Google's client: a trial
    heading far below the best is told to stop, one at the optimum is not; the convex rule
    appends its predicted last measurement at maxStepCount."""
    client = _client(server)
    rules = {
        "decay": {"decay_curve_stopping_spec": v.StudySpec.DecayCurveAutomatedStoppingSpec()},
        "convex": {"convex_automated_stopping_spec": v.StudySpec.ConvexAutomatedStoppingSpec(
            max_step_count=20, min_measurement_count=3, learning_rate_parameter_name="lr")},
    }
    for name, rule in rules.items():
        study, running = _curve_study(client, name, **rule)
        good, bad = running(0.7, 8, "good"), running(0.05, 8, "bad")
        check = lambda t: client.check_trial_early_stopping_state(request=v.CheckTrialEarlyStoppingStateRequest(trial_name=t.name)).result(timeout=30)
        assert check(good).should_stop is False, name
        assert check(bad).should_stop is True, name
        stopped = client.get_trial(name=bad.name)
        assert stopped.state == v.Trial.State.STOPPING
        if name == "convex":
            assert client.get_study(name=study.name).study_spec.convex_automated_stopping_spec.max_step_count == 20
            assert len(stopped.measurements) == 9 and stopped.measurements[-1].step_count == 20, stopped.measurements
        else:
            assert len(stopped.measurements) == 8


def test_v1beta1_convex_stop_config_is_read_as_the_convex_rule(server):
    """v1beta1's deprecated convexStopConfig, sent by Google's v1beta1 client, is the convex rule:
    echoed as convexAutomatedStoppingSpec."""
    from google.cloud import aiplatform_v1beta1 as b

    client = b.VizierServiceClient(transport="rest", credentials=AnonymousCredentials(), client_options={"api_endpoint": server})
    BPS = b.StudySpec.ParameterSpec
    spec = b.StudySpec(
        metrics=[b.StudySpec.MetricSpec(metric_id="m", goal=b.StudySpec.MetricSpec.GoalType.MAXIMIZE)],
        convex_stop_config=b.StudySpec.ConvexStopConfig(max_num_steps=100, min_num_steps=10, autoregressive_order=4, use_seconds=True),
        parameters=[BPS(parameter_id="x", double_value_spec=BPS.DoubleValueSpec(min_value=0.0, max_value=1.0))],
    )
    study = client.create_study(parent="projects/demo/locations/local", study=b.Study(display_name="convex-beta", study_spec=spec))
    got = client.get_study(name=study.name).study_spec
    rule = got.convex_automated_stopping_spec
    assert (rule.max_step_count, rule.min_step_count, rule.min_measurement_count, rule.use_elapsed_duration) == (100, 10, 4, True), got


def test_transfer_learning_through_googles_v1beta1_client(server):
    """v1beta1's TransferLearningConfig: a new study of the same parameters and objective stands
    on the COMPLETED study before it and names it in prior_study_names (output only); with
    disable_transfer_learning it stands on nothing."""
    from google.cloud import aiplatform_v1beta1 as b

    client = b.VizierServiceClient(transport="rest", credentials=AnonymousCredentials(), client_options={"api_endpoint": server})
    BPS = b.StudySpec.ParameterSpec
    parent = "projects/demo/locations/transfer"

    def spec(algorithm, **extra):
        return b.StudySpec(
            metrics=[b.StudySpec.MetricSpec(metric_id="loss", goal=b.StudySpec.MetricSpec.GoalType.MINIMIZE)],
            algorithm=algorithm,
            parameters=[BPS(parameter_id="x", double_value_spec=BPS.DoubleValueSpec(min_value=-1.0, max_value=1.0)),
                        BPS(parameter_id="y", double_value_spec=BPS.DoubleValueSpec(min_value=-1.0, max_value=1.0))],
            **extra,
        )

    budget = b.StudySpec.StudyStoppingConfig(max_num_trials=8)
    prior = client.create_study(parent=parent, study=b.Study(display_name="prior", study_spec=spec(b.StudySpec.Algorithm.RANDOM_SEARCH, study_stopping_config=budget)))
    while True:
        got = client.suggest_trials(request=b.SuggestTrialsRequest(parent=prior.name, suggestion_count=1, client_id="w")).result(timeout=30)
        if not got.trials:
            break
        t = got.trials[0]
        x, y = (p.value for p in t.parameters)
        client.complete_trial(request=b.CompleteTrialRequest(
            name=t.name, final_measurement=b.Measurement(metrics=[b.Measurement.Metric(metric_id="loss", value=(x - 0.3) ** 2 + y * y)])))
    assert client.get_study(name=prior.name).state == b.Study.State.COMPLETED

    warm = client.create_study(parent=parent, study=b.Study(display_name="warm", study_spec=spec(b.StudySpec.Algorithm.ALGORITHM_UNSPECIFIED)))
    assert list(client.get_study(name=warm.name).study_spec.transfer_learning_config.prior_study_names) == [prior.name]
    cold = client.create_study(parent=parent, study=b.Study(display_name="cold", study_spec=spec(
        b.StudySpec.Algorithm.ALGORITHM_UNSPECIFIED, transfer_learning_config=b.StudySpec.TransferLearningConfig(disable_transfer_learning=True))))
    config = client.get_study(name=cold.name).study_spec.transfer_learning_config
    assert config.disable_transfer_learning is True and list(config.prior_study_names) == []
