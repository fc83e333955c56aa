"""Every verb of the client against the real server: a conditional study from suggestion to its
best trial, its model and predictions, errors that name the field, pending operations, keys."""
import pytest

import bo_client as bo
from conftest import API_KEY, Server


def space() -> bo.SearchSpace:
    s = bo.SearchSpace()
    opt = s.categorical("optimizer", ["sgd", "adam"])
    opt.when("sgd").float("momentum", 0.0, 0.99)
    opt.when("adam").float("beta1", 0.8, 0.999)
    s.float("learning_rate", 1e-5, 0.1, log=True)
    s.integer("layers", 1, 8)
    return s


def score(t: bo.Trial) -> float:
    return -abs(float(t["layers"]) - 4) - (0.1 if t["optimizer"] == "sgd" else 0.0)


def test_a_conditional_study_from_first_suggestion_to_its_best_trial(server: Server) -> None:
    client = bo.Client(server.url, project="demo")
    study = client.create_study("walk", space(), metrics={"score": "MAXIMIZE"}, algorithm="GP_BANDIT", median_stopping=True)
    assert study.display_name == "walk" and study.state == "ACTIVE"
    assert client.create_study("walk", space(), metrics={"score": "MAXIMIZE"}, algorithm="GP_BANDIT", median_stopping=True).name == study.name
    assert client.load_study("walk").name == study.name
    assert [s.name for s in client.studies()] == [study.name]
    assert study.search_space.to_vertex() == space().to_vertex()

    trials = study.suggest(count=2, client_id="worker-1")
    assert len(trials) == 2 and all(t.state == "ACTIVE" and t.client_id == "worker-1" for t in trials)
    for t in trials:
        # Exactly the active parameters, as plain values.
        assert set(t.parameters) == {"optimizer", "learning_rate", "layers", "momentum" if t["optimizer"] == "sgd" else "beta1"}
        assert isinstance(t["layers"], int) and isinstance(t["learning_rate"], float)
    # The same client asking again gets the same trials.
    assert [t.id for t in study.suggest(count=2, client_id="worker-1")] == [t.id for t in trials]

    first, second = trials
    first.add_measurement(0.5, step=10, elapsed_seconds=1.5)
    assert first.measurements == [bo.Measurement({"score": 0.5}, 10, 1.5)]
    assert first.should_stop() is False
    first.complete(score(first))
    assert first.state == "SUCCEEDED" and first.value == score(first)
    second.complete(infeasible="out of memory")
    assert (second.state, second.infeasible_reason) == ("INFEASIBLE", "out of memory")

    for _ in range(20):
        for t in study.suggest(count=1, client_id="worker-2"):
            t.complete({"score": score(t)})
    done = list(study.trials())
    assert len(done) == 22 and all(t.done for t in done)
    best = study.best_trial()
    assert best is not None and best.value == max(t.value for t in done if t.value is not None)
    assert [t.id for t in study.optimal_trials()] == [best.id]
    assert [t.id for t in study.trials(page_size=5)] == [t.id for t in done]

    model = study.model()
    assert 0 < model["trials"] <= 22 and model["algorithm"] == "GP_BANDIT"
    [near, far] = study.predict([best.parameters, {"optimizer": "adam", "beta1": 0.9, "learning_rate": 1e-3, "layers": 8}])
    for p in (near, far):
        assert p.lower <= p.median <= p.upper
        assert p.mean is None or (p.stddev >= 0 and p.lower <= p.mean <= p.upper)
    assert near.median > far.median

    with pytest.raises(bo.ApiError) as e:
        study.predict([{"optimizer": "adam"}])
    assert e.value.status == 400 and "trials[0].parameters" in e.value.message

    added = study.add_trial({"optimizer": "adam", "beta1": 0.9, "learning_rate": 0.01, "layers": 4}, {"score": 0.0})
    assert added.state == "SUCCEEDED" and added.value == 0.0
    study.delete()
    with pytest.raises(bo.ApiError) as e:
        study.refresh()
    assert e.value.status == 404 and e.value.code == "NOT_FOUND"


def test_errors_name_the_field(server: Server) -> None:
    client = bo.Client(server.url, project="demo")
    study = client.create_study("errors", space(), metrics={"score": "MAXIMIZE"})
    with pytest.raises(bo.ApiError) as e:
        client.create_study("errors", space(), metrics={"score": "MINIMIZE"})
    assert e.value.status == 409
    with pytest.raises(bo.ApiError) as e:
        study.suggest(count=10_000, client_id="w")
    assert e.value.status == 400 and "suggestionCount" in e.value.message
    [t] = study.suggest(1, "w")
    with pytest.raises(bo.ApiError) as e:
        t.complete()
    assert "no measurement" in e.value.message
    t.complete(1.0)
    with pytest.raises(bo.ApiError) as e:
        t.complete(2.0)
    assert e.value.code == "FAILED_PRECONDITION"
    with pytest.raises(ValueError, match="dict"):
        bo.Client(server.url).create_study("two", space(), metrics={"a": "MAXIMIZE", "b": "MINIMIZE"}).suggest(1, "w")[0].complete(1.0)
    with pytest.raises(bo.ApiError) as e:
        client.load_study("no such study")
    assert e.value.status == 404


def test_suggest_waits_on_a_pending_operation(impatient_server: Server) -> None:
    study = bo.Client(impatient_server.url, project="demo").create_study(
        "pending", space(), metrics={"score": "MAXIMIZE"}, algorithm="GP_BANDIT")
    pending = 0
    for i in range(12):
        raw = study._t.request(
            "POST", f"{study._path}/trials:suggest", {"suggestionCount": 1, "clientId": f"probe-{i}"})
        pending += not raw["done"]
        trial = study._t.wait_operation(raw)["response"]["trials"][0]
        study.trial(int(trial["id"])).complete(float(i))
    assert pending > 0, "the impatient server never answered with a pending operation"
    [t] = study.suggest(1, "last")  # the client's own suggest polls it to the end
    assert t.state == "ACTIVE"


def test_api_keys(keyed_server: Server) -> None:
    with pytest.raises(bo.ApiError) as e:
        list(bo.Client(keyed_server.url, project="team-a").studies())
    assert e.value.status == 401
    client = bo.Client(keyed_server.url, project="team-a", api_key=API_KEY)
    study = client.create_study("keyed", space(), metrics={"score": "MAXIMIZE"})
    assert [s.name for s in client.studies()] == [study.name]
    with pytest.raises(bo.ApiError) as e:
        list(bo.Client(keyed_server.url, project="team-b", api_key=API_KEY).studies())
    assert e.value.status == 404


def test_suggest_within_contexts(server: Server) -> None:
    """``contexts`` fixes parameters per trial; a fixed parent brings its own children."""
    client = bo.Client(server.url, project="demo")
    study = client.create_study("contexts", space(), metrics={"score": "MAXIMIZE"}, algorithm="ADD_TREE")
    trials = study.suggest(2, "ctx", contexts=[{"optimizer": "adam"}, {"optimizer": "sgd", "layers": 3}])
    assert [t["optimizer"] for t in trials] == ["adam", "sgd"]
    assert "beta1" in trials[0].parameters and trials[1]["layers"] == 3 and "momentum" in trials[1].parameters
    with pytest.raises(bo.ApiError, match="contexts"):
        study.suggest(1, "bad", contexts=[{"momentum": 0.5}])


def test_stop_ends_every_workers_loop(server: Server) -> None:
    """``study.stop()`` from inside a run: the study is COMPLETED, ``optimize`` ends with
    ``"exhausted"`` after the current trials, and a trial still running completes."""
    client = bo.Client(server.url, project="demo")
    study = client.create_study("to-stop", space(), metrics={"score": "MAXIMIZE"}, algorithm="RANDOM_SEARCH")
    held = study.suggest(1, "elsewhere")[0]

    def objective(t: bo.Trial) -> float:
        if t.id >= 4:
            client.load_study("to-stop").stop()
        return score(t)

    result = study.optimize(objective, n_trials=50, n_workers=2, progress=False)
    assert result.reason == "exhausted"
    assert len(result.trials) < 10
    assert study.refresh().state == "COMPLETED"
    assert "stopped" in study.inactive_reason
    assert held.complete(0.5).state == "SUCCEEDED"
    assert study.stop().inactive_reason == study.inactive_reason
    assert study.suggest(1) == []


def test_a_missing_parameter_names_those_the_trial_holds(server: Server) -> None:
    space = bo.SearchSpace()
    opt = space.categorical("optimizer", ["sgd", "adam"])
    opt.when("sgd").float("momentum", 0.0, 0.99)
    opt.when("adam").float("beta1", 0.8, 0.999)
    study = bo.Client(server.url).create_study("keyerror", space, {"acc": "MAXIMIZE"})
    trial = study.suggest(1, "w")[0]
    missing = "beta1" if trial["optimizer"] == "sgd" else "momentum"
    with pytest.raises(KeyError, match=r"'optimizer', '(momentum|beta1)'") as raised:
        trial[missing]
    assert f"{missing!r} is not a parameter of trial {trial.id}" in str(raised.value)
    assert trial.get(missing) is None
    assert isinstance(study.trials(), list) and [t.id for t in study.iter_trials()] == [trial.id]
