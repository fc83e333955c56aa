"""bo_client.sklearn.BoSearchCV as GridSearchCV's users use it, against the real server:
fit, best_params_, best_estimator_, best_score_, cv_results_, refit (on, off, one of several
scorers), n_jobs as bo clients, pipelines, a failing candidate, clone; and the mapping of
scipy.stats distributions and lists."""
import numpy as np
import pytest
from scipy.stats import loguniform, randint, uniform
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.tree import DecisionTreeClassifier

import bo_client as bo
from bo_client.sklearn import BoSearchCV, space_from_sklearn
from conftest import Server

X, Y = load_iris(return_X_y=True)


def test_distributions_and_lists_map_onto_bo() -> None:
    space, back = space_from_sklearn({
        "C": loguniform(1e-3, 1e3), "tol": uniform(0.1, 0.5), "depth": randint(1, 10),
        "n": [10, 50, 100], "w": [0.5, 1.5], "kernel": ["rbf", "linear"], "weight": [None, "balanced"],
    })
    specs = {s["parameterId"]: s for s in space.to_vertex()}
    assert specs["C"]["scaleType"] == "UNIT_LOG_SCALE" and specs["C"]["doubleValueSpec"] == {"minValue": 1e-3, "maxValue": 1e3}
    assert specs["tol"]["doubleValueSpec"] == {"minValue": 0.1, "maxValue": pytest.approx(0.6)}
    assert specs["depth"]["integerValueSpec"] == {"minValue": "1", "maxValue": "9"}
    assert specs["n"]["discreteValueSpec"]["values"] == [10.0, 50.0, 100.0] and back["n"](50.0) == 50
    assert specs["weight"]["categoricalValueSpec"]["values"] == ["None", "balanced"] and back["weight"]("None") is None
    with pytest.raises(ValueError, match="scipy.stats.norm is not a distribution bo maps"):
        from scipy.stats import norm
        space_from_sklearn({"x": norm(0, 1)})
    with pytest.raises(ValueError, match="a list of grids is not supported"):
        space_from_sklearn([{"C": [1, 2]}])  # type: ignore[arg-type]


def test_a_search_fits_like_grid_search(server: Server) -> None:
    search = BoSearchCV(
        SVC(), {"C": loguniform(1e-2, 1e2), "gamma": loguniform(1e-3, 1e0), "kernel": ["rbf", "linear"]},
        n_iter=12, cv=5, url=server.url, study_name="svc",
    )
    assert search.fit(X, Y) is search
    results = search.cv_results_
    assert len(results["params"]) == 12 and set(search.best_params_) == {"C", "gamma", "kernel"}
    assert search.best_score_ == pytest.approx(np.max(results["mean_test_score"]))
    assert search.best_estimator_.get_params()["C"] == search.best_params_["C"]
    assert search.score(X, Y) > 0.9 and len(search.predict(X)) == len(Y)
    trials = list(bo.Client(server.url).load_study("svc").trials())
    assert len(trials) == 12 and all(t.state == "SUCCEEDED" for t in trials)
    for t, params, mean in zip(trials, results["params"], results["mean_test_score"]):
        assert [m.step for m in t.measurements] == [1, 2, 3, 4, 5]
        assert t.value == pytest.approx(mean) and t["kernel"] == params["kernel"] and t["C"] == pytest.approx(params["C"])
    assert search.study_.name.endswith(str(search.study_.id))
    # A named study declares no budget: a later search under its name goes on from its trials.
    assert "studyStoppingConfig" not in bo.Client(server.url).load_study("svc").spec
    again = BoSearchCV(SVC(), {"C": loguniform(1e-2, 1e2), "gamma": loguniform(1e-3, 1e0), "kernel": ["rbf", "linear"]},
                       n_iter=3, cv=2, url=server.url, study_name="svc")
    again.fit(X, Y)
    assert len(list(bo.Client(server.url).load_study("svc").trials())) == 15
    # A search's own study declares n_iter, so the server holds its design to a quarter of it.
    own = BoSearchCV(SVC(), {"C": loguniform(1e-2, 1e2)}, n_iter=3, cv=2, url=server.url).fit(X, Y)
    assert int(own.study_.spec["studyStoppingConfig"]["maxNumTrials"]) == 3 and len(own.cv_results_["params"]) == 3


def test_refit_off_several_scorers_pipelines_and_workers(server: Server) -> None:
    search = BoSearchCV(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
        {"logisticregression__C": loguniform(1e-3, 1e2), "logisticregression__class_weight": [None, "balanced"]},
        n_iter=8, cv=3, n_jobs=2, scoring={"acc": "accuracy", "f1": "f1_macro"}, refit="f1", url=server.url, study_name="pipe",
    )
    search.fit(X, Y)
    assert search.best_score_ == pytest.approx(np.max(search.cv_results_["mean_test_f1"]))
    study = bo.Client(server.url).load_study("pipe")
    assert study.spec["metrics"] == [{"metricId": "f1", "goal": "MAXIMIZE"}]
    clients = {t.client_id for t in study.trials()}
    assert clients == {"pipe-0", "pipe-1"}
    unfitted = BoSearchCV(SVC(), {"C": [0.1, 1.0, 10.0]}, n_iter=3, cv=3, refit=False, url=server.url, study_name="norefit")
    unfitted.fit(X, Y)
    assert not hasattr(unfitted, "best_estimator_") and len(unfitted.cv_results_["params"]) == 3
    copy = clone(search)
    assert copy.get_params()["n_iter"] == 8 and copy.get_params()["url"] == server.url


def test_a_failing_candidate_is_infeasible(server: Server) -> None:
    search = BoSearchCV(
        DecisionTreeClassifier(), {"max_depth": [1, 3, 5], "criterion": ["gini", "no-such-criterion"]},
        n_iter=6, cv=3, url=server.url, study_name="failing", error_score=np.nan,
    )
    search.fit(X, Y)
    trials = list(bo.Client(server.url).load_study("failing").trials())
    bad = [t for t in trials if t["criterion"] == "no-such-criterion"]
    assert bad and all(t.state == "INFEASIBLE" and "error_score" in t.infeasible_reason for t in bad)
    assert all(t.state == "SUCCEEDED" for t in trials if t["criterion"] == "gini")
    assert search.best_params_["criterion"] == "gini"


def test_every_randomized_search_argument_is_taken_with_its_default() -> None:
    import inspect
    import math

    from sklearn.model_selection import RandomizedSearchCV

    theirs = inspect.signature(RandomizedSearchCV).parameters
    ours = inspect.signature(BoSearchCV).parameters
    assert list(ours)[: len(theirs)] == list(theirs), "the same arguments in the same order"
    for name, p in theirs.items():
        q = ours[name]
        assert q.kind == p.kind, name
        same = q.default == p.default or (isinstance(p.default, float) and math.isnan(p.default) and math.isnan(q.default))
        assert same, f"{name}: {q.default!r} where scikit-learn has {p.default!r}"


def test_scikit_learns_examples_switch_by_the_class_name(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """RandomizedSearchCV's own docstring example, and the user guide's randomized search of an
    SGDClassifier, with only the class (and its import) changed."""
    import doctest

    from sklearn.model_selection import RandomizedSearchCV

    monkeypatch.setenv("BO_URL", server.url)
    examples = doctest.DocTestParser().get_examples(RandomizedSearchCV.__doc__ or "")
    source = "".join(e.source for e in examples)
    assert "RandomizedSearchCV(logistic, distributions, random_state=0)" in source
    switched = source.replace("from sklearn.model_selection import RandomizedSearchCV", "from bo_client.sklearn import BoSearchCV")
    switched = switched.replace("RandomizedSearchCV(", "BoSearchCV(")
    namespace: dict = {}
    exec(compile(switched, "RandomizedSearchCV docstring", "exec"), namespace)
    best = namespace["search"].best_params_
    assert set(best) == {"C", "l1_ratio"} and 0 <= best["C"] <= 4 and best["l1_ratio"] in (0, 1)
    assert isinstance(best["l1_ratio"], int)
    assert len(namespace["search"].cv_results_["params"]) == 10, "n_iter's default: 10"

    user_guide = '''
import numpy as np
from scipy import stats
from sklearn.datasets import load_digits
from sklearn.linear_model import SGDClassifier
from sklearn.model_selection import RandomizedSearchCV

X, y = load_digits(return_X_y=True, n_class=3)
clf = SGDClassifier(loss="hinge", penalty="elasticnet", fit_intercept=True)
param_dist = {
    "average": [True, False],
    "l1_ratio": stats.uniform(0, 1),
    "alpha": stats.loguniform(1e-2, 1e0),
}
n_iter_search = 15
random_search = RandomizedSearchCV(clf, param_distributions=param_dist, n_iter=n_iter_search)
random_search.fit(X, y)
'''
    switched = user_guide.replace("from sklearn.model_selection import RandomizedSearchCV", "from bo_client.sklearn import BoSearchCV")
    namespace = {}
    exec(compile(switched.replace("RandomizedSearchCV(", "BoSearchCV("), "user guide", "exec"), namespace)
    search = namespace["random_search"]
    assert len(search.cv_results_["params"]) == 15
    assert isinstance(search.best_params_["average"], bool) and search.best_score_ > 0.8


def test_random_state_makes_a_search_repeatable(server: Server) -> None:
    def candidates(name: str, state: object) -> list:
        search = BoSearchCV(SVC(), {"C": loguniform(1e-2, 1e2), "kernel": ["rbf", "linear"]}, n_iter=8, cv=3, random_state=state, url=server.url, study_name=name)
        search.fit(X, Y)
        return search.cv_results_["params"]

    first, again = candidates("seeded-a", 3), candidates("seeded-b", 3)
    assert first == again, "the same seed and data: the same candidates"
    assert candidates("seeded-c", 4) != first
    assert bo.Client(server.url).load_study("seeded-a").spec["algorithmConfig"] == {"seed": 3, "reproducible": True}
    assert len(candidates("seeded-d", np.random.RandomState(0))) == 8
