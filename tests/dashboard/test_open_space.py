"""A define-by-run study as the dashboard shows it: its space grown as trials asked (a branch,
then each branch's own parameter), trials pruned by the study's rule shown as stopped early in
the studies list, the header and the trials table, Optuna's trial numbers as labels, and the
model page's tree of the grown space."""
import math

import pytest

from conftest import LOC, Page, _create, _serve, _suggest


def grow(s, name: str) -> str:
    """An open ADD_TREE study run as BoSampler runs one: each trial suggested with its Optuna
    number as a label, asked for `classifier` and then its branch's parameter, every fourth
    reporting a few steps and stopped early."""
    study = _create(s, {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}], "algorithm": "ADD_TREE", "openSearchSpace": True, "parameters": []}, name)
    ask = lambda trial, spec, parent=None: s.call(  # noqa: E731
        "POST", f"{LOC}/studies/{study}/trials/{trial}:addTrialParameters",
        {"parameters": [{"parameterSpec": spec, **({"parentParameterId": parent} if parent else {})}]},
    )
    for number in range(24):
        op = s.call("POST", f"{LOC}/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": f"optuna-{number}", "labels": {"optuna.trial_number": str(number)}})
        trial = op["response"]["trials"][0]["id"] if op.get("done") else _suggest(s, study)[0]["id"]
        t = ask(trial, {"parameterId": "classifier", "categoricalValueSpec": {"values": ["SVC", "RandomForest"]}})
        values = {p["parameterId"]: p["value"] for p in t["parameters"]}
        if values["classifier"] == "SVC":
            t = ask(trial, {"parameterId": "svc_c", "doubleValueSpec": {"minValue": 1e-10, "maxValue": 1e10}, "scaleType": "UNIT_LOG_SCALE"}, "classifier")
            c = {p["parameterId"]: p["value"] for p in t["parameters"]}["svc_c"]
            value = 1.0 - (math.log10(c) - 2.0) ** 2 / 200.0
        else:
            t = ask(trial, {"parameterId": "rf_max_depth", "integerValueSpec": {"minValue": "2", "maxValue": "32"}, "scaleType": "UNIT_LOG_SCALE"}, "classifier")
            depth = {p["parameterId"]: p["value"] for p in t["parameters"]}["rf_max_depth"]
            value = 0.8 - (math.log2(depth) - 3.0) ** 2 / 50.0
        path = f"{LOC}/studies/{study}/trials/{trial}"
        if number % 4 == 3:
            s.call("POST", f"{path}:addTrialMeasurement",
                   {"measurements": [{"stepCount": str(k), "metrics": [{"metricId": "accuracy", "value": value * k / 10}]} for k in (1, 2, 3)]})
            s.call("POST", f"{path}:stop", {})
            s.call("POST", f"{path}:complete", {})
        else:
            s.call("POST", f"{path}:complete", {"finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": value}]}})
    return study


@pytest.fixture(scope="module")
def grown():
    for s in _serve():
        s.study = grow(s, "sklearn-simple-define-by-run")
        yield s


@pytest.fixture()
def grown_page(browser, grown):
    p = Page(browser, grown.base)
    yield p
    p.context.close()


def test_stopped_early_trials_are_shown_as_such(grown_page, grown):
    page = grown_page.page
    page.goto(f"{grown.base}/dashboard/")
    row = page.locator("#studies tbody tr").first
    row.wait_for()
    text = row.inner_text()
    assert "STOPPED EARLY 6" in text and "SUCCEEDED 18" in text, text
    grown_page.shot("open-space-studies")
    page.goto(f"{grown.base}/dashboard/#/studies/{grown.study}")
    page.wait_for_selector("#history[data-drawn=true]", timeout=15000)
    # The facts are filled by their own request, which may answer after the chart is drawn.
    page.wait_for_selector(".facts:has-text('stopped early')", timeout=15000)
    facts = page.locator(".facts").inner_text()
    assert "stopped early" in facts and "6" in facts, facts
    table = page.locator("#trials")
    table.wait_for()
    header = page.locator("#trials thead").inner_text()
    assert "labels" in header, header
    body = page.locator("#trials tbody").inner_text()
    assert "optuna.trial_number=0" in body and "stopped early" in body, body
    # The search space card holds the grown tree: each branch's parameter under its value.
    space = page.locator("main").inner_text()
    assert "svc_c" in space and "rf_max_depth" in space
    grown_page.shot("open-space-study")
    grown_page.clean()


def test_the_model_page_draws_the_grown_tree(grown_page, grown):
    page = grown_page.page
    page.goto(f"{grown.base}/dashboard/#/studies/{grown.study}/model")
    page.wait_for_selector("#tree tbody tr", timeout=30000)
    vertices = page.locator("#tree tbody").inner_text()
    assert "classifier=SVC" in vertices and "classifier=RandomForest" in vertices, vertices
    assert "svc_c" in vertices and "rf_max_depth" in vertices, vertices
    grown_page.shot("open-space-model")
    grown_page.errors = [e for e in grown_page.errors if "400" not in e]
    grown_page.clean()
