"""Running a study by hand from the dashboard: every action clicked and typed in Chromium, with
API keys off and on, and what it did read back from the SQLite file the server writes."""
import hashlib
import json
import sqlite3
import time

import pytest

import bo_server
from conftest import API_KEY, LOC, Page, Server, _create

SPEC = {
    "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
    "algorithm": "GP_BANDIT",
    "parameters": [
        {"parameterId": "optimizer", "categoricalValueSpec": {"values": ["sgd", "adam"]}, "conditionalParameterSpecs": [
            {"parameterSpec": {"parameterId": "momentum", "doubleValueSpec": {"minValue": 0.0, "maxValue": 0.99}}, "parentCategoricalValues": {"values": ["sgd"]}}]},
        {"parameterId": "layers", "integerValueSpec": {"minValue": "1", "maxValue": "8"}}],
}


@pytest.fixture(scope="module", params=["keys off", "keys on"])
def acting(request, tmp_path_factory):
    keyed = request.param == "keys on"
    db = tmp_path_factory.mktemp("act") / "bo.db"
    extra = ("--api-keys", f"dash {hashlib.sha256(API_KEY.encode()).hexdigest()} demo") if keyed else ()
    for base in bo_server.serve(*extra, database_url=f"sqlite://{db}"):
        s = Server(base)
        s.key = API_KEY if keyed else None
        s.study = _create(s, SPEC, "by-hand")
        s.key = None
        s.db, s.keyed = db, keyed
        yield s


def rows(db, sql, *args):
    with sqlite3.connect(db) as c:
        return c.execute(sql, args).fetchall()


def trials_in_db(s):
    """{trial id: (state, parameters, final metrics, infeasible reason)} of the study, from the file."""
    out = {}
    for tid, state, params, final, reason in rows(s.db, "SELECT t.id, t.state, t.parameters, t.final_measurement, t.infeasible_reason "
                                                  "FROM trials t JOIN studies s ON s.id = t.study_id WHERE s.display_name = 'by-hand'"):
        out[tid] = (state, json.loads(params), json.loads(final)["metrics"] if final else None, reason)
    return out


def until(check, what, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def status(p):
    return p.page.locator("#act-status")


def test_a_person_runs_a_study_from_the_browser(browser, acting):
    s = acting
    p = Page(browser, s.base)
    p.page.goto(f"{s.base}/dashboard/#/studies/{s.study}")
    if s.keyed:
        p.page.wait_for_selector("#key-dialog[open]")
        p.page.fill("#key-form input[name=key]", API_KEY)
        p.page.click("#key-form button")
    p.page.wait_for_selector("#act")
    p.page.wait_for_selector("#open-trials h3")
    # Nothing has finished: the history says so rather than drawing an empty frame.
    p.page.wait_for_selector("#history[data-drawn=true]")
    assert "No trial has finished yet" in p.page.locator("#history").inner_text()
    assert p.page.locator("#history canvas").count() == 0

    # Add a trial of one's own: the conditional field appears once its parent has the value it
    # depends on, and the trial is stored with exactly the active parameters.
    p.page.click("#add-trial")
    form = p.page.locator("#add-trial-form")
    assert not form.locator("[data-parameter=momentum]").is_visible(), "momentum is hidden until sgd is chosen"
    form.locator("select[data-parameter=optimizer]").select_option("sgd")
    assert form.locator("[data-parameter=momentum]").is_visible()
    # A value outside the range: the server's message, naming the field, and nothing stored.
    form.locator("[data-parameter=momentum]").fill("0.5")
    form.locator("[data-parameter=layers]").fill("3")
    form.locator("[data-metric=accuracy]").fill("0.81")
    p.shot("act-add-trial")
    form.locator("button[type=submit]").click()
    until(lambda: "Added trial 1" in status(p).inner_text(), status(p).inner_text())
    stored = trials_in_db(s)
    assert stored[1][0] == "SUCCEEDED" and stored[1][2] == {"accuracy": 0.81}, stored
    assert set(stored[1][1]) == {"optimizer", "momentum", "layers"}, stored
    assert "sgd" in json.dumps(stored[1][1]["optimizer"]) and "0.5" in json.dumps(stored[1][1]["momentum"]), stored
    # The first completed trial replaces the sentence with the chart.
    until(lambda: p.page.locator("#history canvas").count() > 0, "the history is drawn once a trial has finished")
    assert "No trial has finished yet" not in p.page.locator("#history").inner_text()

    # The API validates what the form lets through: adam has no momentum, so it is not sent; an
    # integer out of range is refused with the server's message and nothing is stored.
    p.page.click("#add-trial")
    form = p.page.locator("#add-trial-form")
    form.locator("select[data-parameter=optimizer]").select_option("adam")
    assert not form.locator("[data-parameter=momentum]").is_visible()
    form.locator("[data-parameter=layers]").evaluate("e => { e.removeAttribute('max'); e.value = '80'; }")
    form.locator("button[type=submit]").click()
    until(lambda: "layers" in status(p).inner_text() and "error" in (status(p).get_attribute("class") or ""), status(p).inner_text())
    assert len(trials_in_db(s)) == 1, "a refused trial is not stored"
    p.page.click("#add-trial-form button.plain")

    # Ask for a suggestion and enter its result.
    p.page.click("#suggest")
    until(lambda: "Suggested trial 2" in status(p).inner_text(), status(p).inner_text())
    row = p.page.locator("#open-table tr[data-trial='2']")
    row.wait_for()
    assert trials_in_db(s)[2][0] == "ACTIVE"
    # A measurement on the way.
    row.locator("[data-action=measure]").click()
    measure = p.page.locator("#measure-2")
    measure.locator("input[name=step]").fill("10")
    measure.locator("[data-metric=accuracy]").fill("0.5")
    measure.locator("button[type=submit]").click()
    # Then its final result, opened at once: the measurement's form, closing when its request
    # ends, leaves the form opened after it.
    row.locator("[data-action=complete]").click()
    until(lambda: "has the measurement" in status(p).inner_text(), status(p).inner_text())
    [(step, metrics)] = rows(s.db, "SELECT step_count, metrics FROM measurements WHERE trial_id = 2")
    assert step == 10 and json.loads(metrics) == {"accuracy": 0.5}, (step, metrics)
    complete = p.page.locator("#complete-2")
    time.sleep(0.5)  # past the measurement's read of the trials, when its form closes
    assert complete.is_visible(), "the complete form stays open"
    complete.locator("[data-metric=accuracy]").fill("0.9")
    p.shot("act-complete")
    complete.locator("button[type=submit]").click()
    until(lambda: "Trial 2 is SUCCEEDED" in status(p).inner_text(), status(p).inner_text())
    assert trials_in_db(s)[2][:1] == ("SUCCEEDED",) and trials_in_db(s)[2][2] == {"accuracy": 0.9}

    # Two more: one infeasible, one stopped.
    for expected in (3, 4):
        p.page.click("#suggest")
        until(lambda: f"Suggested trial {expected}" in status(p).inner_text(), status(p).inner_text())
    p.page.locator("#open-table tr[data-trial='3'] [data-action=infeasible]").click()
    p.page.fill("#infeasible-3 input[name=reason]", "out of memory")
    # While that is being typed, the open trials change (trial 4 is stopped) and are drawn again:
    # what was typed under trial 3 is still there.
    p.page.locator("#open-table tr[data-trial='4'] [data-action=stop]").click()
    until(lambda: "Trial 4 is stopped" in status(p).inner_text(), status(p).inner_text())
    assert trials_in_db(s)[4][0] == "STOPPING"
    until(lambda: "STOPPING" in p.page.locator("#open-table tr[data-trial='4']").inner_text(), "the stopped trial is drawn again")
    assert p.page.input_value("#infeasible-3 input[name=reason]") == "out of memory"
    p.page.click("#infeasible-3 button[type=submit]")
    until(lambda: "Trial 3 is INFEASIBLE" in status(p).inner_text(), status(p).inner_text())
    assert trials_in_db(s)[3][0] == "INFEASIBLE" and trials_in_db(s)[3][3] == "out of memory"

    # Delete a trial: nothing happens until the confirmation's own button.
    p.page.locator("#open-table tr[data-trial='4'] [data-action=delete]").click()
    p.page.wait_for_selector(".confirm")
    p.shot("act-confirm")
    p.page.click(".confirm button.plain")
    assert 4 in trials_in_db(s), "cancelled: still there"
    p.page.locator("#open-table tr[data-trial='4'] [data-action=delete]").click()
    p.page.click(".confirm button.danger")
    until(lambda: "Trial 4 is deleted" in status(p).inner_text(), status(p).inner_text())
    assert 4 not in trials_in_db(s)
    # A closed trial by its number.
    p.page.fill("#trial-by-id input[name=id]", "3")
    p.page.click("#trial-by-id button")
    p.page.click(".confirm button.danger")
    until(lambda: "Trial 3 is deleted" in status(p).inner_text(), status(p).inner_text())
    assert sorted(trials_in_db(s)) == [1, 2]
    p.page.wait_for_selector("#open-table tr[data-trial='4']", state="detached")

    # Stop the study: it suggests nothing more.
    p.page.click("#stop-study")
    until(lambda: "The study is stopped" in status(p).inner_text(), status(p).inner_text())
    assert rows(s.db, "SELECT state FROM studies WHERE display_name = 'by-hand'") == [("COMPLETED",)]
    until(lambda: "COMPLETED" in p.page.locator("h1 .state").inner_text(), "the badge follows")
    p.shot("act-stopped" + ("-keyed" if s.keyed else ""))

    # Export it in each format, with the page's key: the files hold what the database holds.
    for button, suffix in (("#export-json", ".json"), ("#export-csv", ".csv"), ("#export-journal", ".journal.log")):
        with p.page.expect_download() as saved:
            p.page.click(button)
        path = saved.value.path()
        assert saved.value.suggested_filename.endswith(suffix), saved.value.suggested_filename
        text = open(path, encoding="utf-8").read()
        if suffix == ".json":
            doc = json.loads(text)
            assert sorted(int(t["id"]) for t in doc["trials"]) == sorted(trials_in_db(s))
            assert doc["study"]["displayName"] == "by-hand"
        elif suffix == ".csv":
            assert text.splitlines()[0].startswith("trial,state,") and len(text.splitlines()) == 1 + len(trials_in_db(s))
        else:
            assert len(text.splitlines()) == 4 + len(trials_in_db(s))
        until(lambda: "Saved study-" in status(p).inner_text(), status(p).inner_text())
    p.shot("act-exported" + ("-keyed" if s.keyed else ""))

    # Delete the study, behind its confirmation; the page goes back to the list.
    p.page.click("#delete-study")
    p.page.click(".confirm button.danger")
    p.page.wait_for_url(f"{s.base}/dashboard/#/")
    assert rows(s.db, "SELECT count(*) FROM studies WHERE display_name = 'by-hand'") == [(0,)]
    assert rows(s.db, "SELECT count(*) FROM trials") == [(0,)]
    # The refused trial's 400 (and, with keys, the first 401) are answers the page handled.
    unexpected = [e for e in p.errors if "status of 400" not in e and "status of 401" not in e]
    assert not unexpected, unexpected
    assert not p.foreign, p.foreign
    p.context.close()
