"""Each dashboard page loads against a real server with real studies, draws its charts, logs no
error and talks to nobody but the server."""
import math
import re
import time

from conftest import _trial


def until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the page did not change in time"
        time.sleep(0.1)


def test_the_dashboard_is_self_contained(server):
    import urllib.request

    with urllib.request.urlopen(f"{server.base}/dashboard/") as r:
        policy = r.headers["content-security-policy"]
        html = r.read().decode()
    assert "default-src 'self'" in policy
    assert "http" not in html.replace(server.base, "")
    asset = html.split('src="', 1)[1].split('"', 1)[0]
    request = urllib.request.Request(f"{server.base}/dashboard/{asset}", headers={"accept-encoding": "gzip"})
    with urllib.request.urlopen(request) as r:
        assert r.headers["content-encoding"] == "gzip"
        assert "immutable" in r.headers["cache-control"]


def test_studies_page_lists_every_study_with_its_counts(page, server):
    page.page.goto(f"{server.base}/dashboard/")
    rows = page.page.locator("#studies tbody tr")
    rows.first.wait_for()
    assert rows.count() == 5
    text = page.page.locator("#studies").inner_text()
    for name in ["conditional-add-tree", "rembo-d12", "accuracy-vs-latency", "safe-accuracy-vs-latency", "learning-curves"]:
        assert name in text
    assert "INFEASIBLE" in text
    assert page.page.locator("#studies-count").inner_text() == "5 studies in demo / local"
    page.page.fill("input[type=search]", "rembo")
    assert rows.count() == 1
    # The count says what the table shows, not the location's total alone.
    assert page.page.locator("#studies-count").inner_text() == "1 of 5 studies in demo / local matches"
    page.shot("studies")
    page.clean()


def test_each_study_page_draws_its_history_and_best(page, server):
    for key, study in server.ids.items():
        page.page.goto("about:blank")  # a fresh load: nothing of the last study's page remains
        page.page.goto(f"{server.base}/dashboard/#/studies/{study}")
        page.page.wait_for_selector("#history[data-drawn=true]", timeout=15000)
        page.page.wait_for_selector("#best table, #best p")
        page.page.wait_for_selector("#importance[data-drawn=true]")
        assert page.page.locator("#history canvas").count() >= 1
        page.shot(f"study-{key}")
    page.clean()


def test_a_best_trial_of_many_parameters_reads_down_its_card(page, server):
    """One objective: the best trial is a row per metric and parameter, all twelve of the REMBO
    study's parameters within the card (its table once ran off the card's edge at x7)."""
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['rembo']}")
    page.page.wait_for_selector("#best table")
    names = page.page.locator("#best tbody th").all_inner_texts()
    assert names[:2] == ["trial", "loss"] and names[2:] == [f"x{k}" for k in range(12)], names
    table, card = page.page.locator("#best table").bounding_box(), page.page.locator("#best").bounding_box()
    assert table["width"] <= card["width"], (table, card)
    page.clean()


def test_a_trial_completed_after_the_page_loaded_appears(page, server):
    study = server.ids["tree"]
    page.page.goto(f"{server.base}/dashboard/#/studies/{study}")
    page.page.wait_for_selector("#history[data-drawn=true]")
    # The facts follow once every trial has arrived.
    until(lambda: "trials40" in page.page.locator(".facts").inner_text().replace("\n", "").replace(" ", ""))
    _trial(server, study, {"optimizer": "adam", "beta1": 0.9, "learning_rate": 0.001, "layers": 3}, {"accuracy": 0.99})
    # Polled from here: the page's policy forbids evaluating strings, Playwright's waits included.
    until(lambda: "trials41" in page.page.locator(".facts").inner_text().replace("\n", "").replace(" ", ""))
    until(lambda: "0.99" in page.page.locator("#best").inner_text())
    page.clean()


def test_with_keys_the_page_asks_for_one_and_uses_it(browser, keyed_server):
    from conftest import API_KEY, Page

    p = Page(browser, keyed_server.base)
    p.page.goto(f"{keyed_server.base}/dashboard/")
    p.page.wait_for_selector("#key-dialog[open]")
    p.page.fill("#key-form input[name=key]", API_KEY)
    p.page.click("#key-form button")
    p.page.locator("#studies tbody tr").first.wait_for()
    assert "behind-a-key" in p.page.locator("#studies").inner_text()
    assert p.page.locator("#studies-count").inner_text() == "1 study in demo / local"
    # The key is kept in the browser until forgotten; then the server asks again.
    assert p.page.evaluate("() => localStorage.getItem('bo.apiKey')") == API_KEY
    p.shot("with-a-key")
    p.page.click("#forget-key")
    p.page.wait_for_selector("#key-dialog[open]")
    assert p.page.evaluate("() => localStorage.getItem('bo.apiKey')") is None
    assert not p.page.locator("#forget-key").is_visible()
    # The 401s before a key is given are expected; nothing else may fail.
    p.errors = [e for e in p.errors if "401" not in e]
    p.clean()
    p.context.close()


def test_the_trials_table_sorts_filters_and_downloads(page, server):
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['tree']}")
    page.page.wait_for_selector("#trials tbody tr td")
    count = page.page.locator("#trial-count")
    shown_total = lambda: tuple(int(n) for n in re.fullmatch(r"([0-9,]+) of ([0-9,]+) trials", count.inner_text()).groups())
    shown, total = shown_total()
    assert shown == total >= 40
    page.page.select_option("select[aria-label=state]", "INFEASIBLE")
    assert shown_total() == (3, total)
    page.page.select_option("select[aria-label=state]", "")
    page.page.fill("#trials >> xpath=../.. >> input[type=search]", "adam")
    shown, _ = shown_total()
    assert 0 < shown < total
    page.page.click("#trials th:has-text('accuracy')")
    page.page.click("#trials th:has-text('accuracy')")
    first_row = page.page.locator("#trials tbody tr").nth(1).inner_text()
    assert "adam" in first_row
    with page.page.expect_download() as download:
        page.page.click("text=download CSV")
    lines = open(download.value.path()).read().splitlines()
    assert lines[0].startswith("trial,state,accuracy,")
    assert len(lines) == shown + 1
    page.shot("trials-table")
    page.clean()


def test_infeasible_trials_have_a_band_of_their_own(page, server):
    """Infeasible trials are marked along the worse edge, apart from the values: in a minimising
    study they once sat at the lowest value, on the best-so-far line, looking like the best."""
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['tree']}")
    page.page.wait_for_selector("#history[data-drawn=true]", timeout=15000)
    assert "infeasible" in page.page.locator("#history").inner_text()
    found = page.page.evaluate("""async () => {
        const src = document.querySelector("script[type=module]").getAttribute("src");
        const history = await import(new URL(src.replace(/[^/]*$/, "history.js"), location.href).href);
        const h = { firstIds: [1, 2, 3, 4], lastIds: [1, 2, 3, 4], min: [0.5, null, 0.2, 0.9], max: [0.5, null, 0.2, 0.9],
                    infeasible: [0, 1, 0, 0], stopped: [0, 0, 0, 0], bucketWidth: 1 };
        const out = {};
        for (const goal of ["MINIMIZE", "MAXIMIZE"]) {
            const d = history.historyData(h, goal);
            const box = document.createElement("div");
            box.style.width = "600px";
            document.body.append(box);
            const plot = history.historyChart(box, d, { log: false, metricId: "loss" });
            // uPlot sets its scales on its first commit, after this task.
            await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
            const y = (v, scale) => plot.valToPos(v, scale);
            // Pixels from the top: the band's mark, and the values' extremes.
            out[goal] = { band: y(d.data[4][1], "band"), values: [0.2, 0.9].map((v) => y(v, "y")) };
            plot.destroy();
            box.remove();
        }
        return out;
    }""")
    # Minimising, worse is up: the band is above every value; maximising, below every value.
    assert found["MINIMIZE"]["band"] < min(found["MINIMIZE"]["values"]) - 5, found
    assert found["MAXIMIZE"]["band"] > max(found["MAXIMIZE"]["values"]) + 5, found
    page.clean()


def test_counts_are_ticked_in_whole_numbers(page, server):
    """An axis of counts (the hypervolume's succeeded trials) reads 0, 2, 4, 6, 8, never 0, 3, 5, 8
    (steps of 2.5 rounded for their labels)."""
    page.page.goto(f"{server.base}/dashboard/")
    page.page.locator("#studies tbody tr").first.wait_for()
    found = page.page.evaluate("""async () => {
        const src = document.querySelector("script[type=module]").getAttribute("src");
        const axes = await import(new URL(src.replace(/[^/]*$/, "axes.js"), location.href).href);
        return [[0, 8], [0, 3], [0, 17], [0, 130]].map(([lo, hi]) => axes.ticks(lo, hi, 4, false, true));
    }""")
    for values in found:
        assert values and all(v == int(v) for v in values), found
    assert found[0] == [0, 2, 4, 6, 8], found
    page.clean()


def test_learning_curves_mark_the_stopped_trial(page, server):
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['curves']}")
    page.page.wait_for_selector("#curves[data-drawn=true]")
    # The history and the curves load independently: wait for each before reading it.
    page.page.wait_for_selector("#history[data-drawn=true]")
    assert "asked to stop" in page.page.locator("#history").inner_text(), "the history's legend names the mark"
    # The facts are written once the trials have loaded, which may be after the curves are drawn.
    page.page.locator(".facts", has_text="median rule").wait_for(timeout=15000)
    assert "median rule" in page.page.locator(".facts").inner_text(), "the facts name the stopping rule"
    assert page.page.locator("#curves canvas").count() >= 1
    # Two trials were stopped at the same step: a ring each (a series held one mark a step).
    assert page.page.locator("#curves").get_attribute("data-stopped-marks") == "2"
    assert page.page.locator("#curves-card").is_visible()
    page.shot("learning-curves")
    page.page.goto("about:blank")
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['rembo']}")
    page.page.wait_for_selector("#history[data-drawn=true]")
    page.page.wait_for_selector("#curves[data-drawn=true]", state="attached")
    assert not page.page.locator("#curves-card").is_visible(), "no curves, no card"
    page.clean()


def test_importance_ranks_the_learning_rate_first(page, server):
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['tree']}")
    page.page.wait_for_selector("#importance[data-drawn=true]")
    first = page.page.locator("#importance tbody tr").first.inner_text()
    assert first.startswith("learning_rate"), page.page.locator("#importance").inner_text()
    assert "Sobol" in page.page.locator("#importance").inner_text()
    # ADD_TREE is additive over its tree's vertices: each vertex's share of the variation.
    terms = page.page.locator("#terms").inner_text()
    assert "optimizer=sgd" in terms and "optimizer=adam" in terms, terms
    page.page.locator("#importance").screenshot(path=str(__import__("conftest").SHOTS / "importance.png"))
    page.clean()


def test_brushing_the_parallel_coordinates_filters_the_table(page, server):
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['tree']}")
    page.page.wait_for_selector("#parcoords")
    page.page.wait_for_selector(".chart[data-drawn=true] #parcoords")
    count = page.page.locator("#trial-count")
    total = count.inner_text()
    page.page.locator("#parcoords").scroll_into_view_if_needed()
    box = page.page.locator("#parcoords").bounding_box()
    # The objective's axis is the last, 60 px from the right; keep its upper half (the best
    # accuracies: the study maximises).
    x = box["x"] + box["width"] - 60
    top, bottom = box["y"] + 40, box["y"] + box["height"] - 50
    page.page.mouse.move(x, top + 2)
    page.page.mouse.down()
    page.page.mouse.move(x, (top + bottom) / 2, steps=5)
    page.page.mouse.up()
    kept = count.inner_text()
    assert kept != total and int(kept.split(" ")[0]) > 0, (kept, total)
    page.shot("parallel-coordinates")
    page.page.locator("#parcoords").scroll_into_view_if_needed()
    box = page.page.locator("#parcoords").bounding_box()
    page.page.mouse.dblclick(x, box["y"] + 40 + (box["height"] - 90) / 2)
    assert count.inner_text() == total
    page.clean()


def test_the_model_page_slices_and_maps_the_posterior(page, server):
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['tree']}")
    page.page.click("#model-link")
    page.page.wait_for_selector("#slices[data-drawn=true]", timeout=20000)
    page.page.wait_for_selector("#map[data-drawn=true]", timeout=20000)
    assert page.page.locator("#tree tbody tr").count() >= 3, page.page.locator("#main").inner_text()
    # learning_rate (log) and layers (integer), and the best trial's own leaf (momentum or beta1).
    assert page.page.locator("#slices canvas").count() == 3
    assert page.page.locator("#map canvas").count() == 1
    page.shot("model")
    # A study whose algorithm has no model of the objective says so instead.
    page.page.goto("about:blank")
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['curves']}/model")
    page.page.wait_for_selector("#slices[data-drawn=true]")
    assert "no predictive model" in page.page.locator("#slices").inner_text()
    page.errors = [e for e in page.errors if "400" not in e]  # :predict's refusal is the answer
    page.clean()


def test_two_metrics_show_their_pareto_front(page, server):
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['two']}")
    page.page.wait_for_selector("#pareto[data-drawn=true]")
    text = page.page.locator("#pareto").inner_text()
    assert "Pareto-optimal" in text and "accuracy" in text
    rows = page.page.locator("#best tbody tr").count()
    assert f"{rows} Pareto-optimal" in text
    caption = page.page.locator("#hypervolume-caption").inner_text()
    assert caption.startswith("Hypervolume of the front after each succeeded trial") and "reference point" in caption, caption
    # The volume the page computed is the fixture's, computed here independently: the 30 trials
    # oriented (accuracy up, latency negated), the reference each's worst less 10 % of its range.
    volume = float(caption.split(": ")[1].split(" now")[0])
    points = []
    for i in range(30):
        width, dropout = 16 + (i * 97) % 497, (i * 0.137) % 0.5
        points.append((1 - 1 / math.sqrt(width) - 0.1 * dropout, -(width / 100 + 0.1 * (i % 3))))
    ref = [min(p[j] for p in points) - 0.1 * (max(p[j] for p in points) - min(p[j] for p in points)) for j in (0, 1)]
    area, top = 0.0, ref[1]
    for x, y in sorted(points, key=lambda p: (-p[0], -p[1])):
        if y > top:
            area, top = area + (x - ref[0]) * (y - top), y
    assert abs(volume - area) <= 1e-3 * area, (volume, area)
    page.page.locator("#pareto").screenshot(path=str(__import__("conftest").SHOTS / "pareto.png"))
    page.clean()


def test_a_safety_metric_marks_unsafe_trials(page, server):
    """A study with a safety metric: the facts count its safe trials against the target, the
    Pareto chart draws unsafe trials apart (and the front is of safe trials only), and the table
    marks each unsafe value."""
    from conftest import SAFE_METRICS, SAFE_TRIAL
    memory = [SAFE_METRICS(*SAFE_TRIAL(i), i)["memory"] for i in range(30)]
    unsafe = sum(m > 3.5 for m in memory)
    assert 0 < unsafe < 30, "the fixture has safe and unsafe trials"
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['safe']}")
    page.page.wait_for_selector("#pareto[data-drawn=true]")
    facts = page.page.locator(".facts").inner_text()
    assert "safety: memory ≤ 3.5" in facts and f"{30 - unsafe} of 30 safe (target 80 %)" in facts, facts
    assert "memory" not in page.page.locator(".facts div").nth(1).inner_text(), "memory is no objective"
    text = page.page.locator("#pareto").inner_text()
    assert f"{unsafe} unsafe trials as red crosses" in text, text
    assert "Best trial" not in page.page.content() and "Pareto-optimal trials (safe only)" in page.page.content()
    best_memory = [float(v) for v in page.page.locator("#best tbody tr td:nth-child(4)").all_inner_texts()]
    assert best_memory and all(m <= 3.5 for m in best_memory), best_memory
    marked = page.page.locator("#trials td.unsafe")
    shown = [float(v) for v in marked.all_inner_texts()]
    assert shown and all(m > 3.5 for m in shown), shown
    assert marked.first.get_attribute("title") == "unsafe: memory should be ≤ 3.5"
    page.page.locator("#pareto").screenshot(path=str(__import__("conftest").SHOTS / "pareto-safety.png"))
    page.shot("study-safety")
    page.clean()


def test_a_model_of_several_metrics_shows_each_and_its_constraints(page, server):
    """The safety study's model page: one row per metric's own model with its role, the
    acquisition, and the safety constraint's count of safe trials, as the fixture has them."""
    from conftest import SAFE_METRICS, SAFE_TRIAL
    safe = sum(SAFE_METRICS(*SAFE_TRIAL(i), i)["memory"] <= 3.5 for i in range(30))
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['safe']}/model")
    page.page.wait_for_selector("#slices[data-drawn=true]", timeout=20000)
    rows = page.page.locator("#metric-models tbody tr").all_inner_texts()
    assert [r.split("\t")[:2] for r in rows] == [["accuracy", "objective"], ["latency", "objective"], ["memory", "safety"]], rows
    assert "length scale" in rows[0], rows
    constraint = page.page.locator("#constraints tbody tr").inner_text()
    counted = re.search(r"(\d+) of (\d+)", constraint)
    assert constraint.startswith("memory") and counted, constraint
    # The model may be fitted on fewer trials than the study has; on all 30, the fixture's count.
    n_safe, judged = int(counted.group(1)), int(counted.group(2))
    assert n_safe <= judged <= 30 and (judged < 30 or n_safe == safe), (constraint, safe)
    assert "hypervolume" in page.page.locator("#hyperparameters").inner_text()
    page.shot("model-several-metrics")
    page.clean()


def test_a_rembo_model_shows_its_embeddings(page, server):
    page.page.goto(f"{server.base}/dashboard/#/studies/{server.ids['rembo']}/model")
    page.page.wait_for_selector("#slices[data-drawn=true]", timeout=30000)
    assert "random embedding" in page.page.locator("#embeddings").inner_text()
    assert page.page.locator("#embeddings tbody tr").count() >= 1
    # A trust region reads as words ("side 0.8, restarts 0"), not as JSON cut off at the edge.
    assert '"side"' not in page.page.locator("#embeddings").inner_text()
    # Its own suggestions, completed, are on its embeddings: each embedding's trials and fit.
    counts = [int(t) for t in page.page.locator("#embeddings tbody tr td:nth-child(3)").all_inner_texts()]
    assert sum(counts) > 0, counts
    # Sliced and mapped along an embedding's own coordinates (its GP lives there), through its
    # best point: one slice per coordinate of the embedding (d = 4), and the map.
    captions = page.page.locator("#slices figcaption").all_inner_texts()
    assert captions == ["y1", "y2", "y3", "y4"], captions
    assert "embedding" in page.page.locator("#slices").locator("xpath=..").locator("h2").inner_text()
    page.page.wait_for_selector("#map[data-drawn=true]")
    assert "the embedding's best point" in page.page.locator("#map").inner_text()
    page.shot("model-rembo")
    page.clean()


def test_the_header_offers_the_locations_with_studies(browser, server):
    from conftest import Page

    p = Page(browser, server.base)
    # A browser that last looked at a location with no studies is taken to one with some.
    p.context.add_init_script("localStorage.setItem('bo.project', 'elsewhere'); localStorage.setItem('bo.location', 'nowhere');")
    p.page.goto(f"{server.base}/dashboard/")
    p.page.locator("#studies tbody tr").first.wait_for()
    assert "demo / local (" in p.page.locator("#where").inner_text()
    assert p.page.input_value("#location input[name=project]") == "demo"
    p.clean()
    p.context.close()


def test_the_csv_download_runs_no_formula(page, server):
    """A categorical value a spreadsheet would run as a formula (=, +, -, @) is written with a
    leading apostrophe; numbers, negative ones too, are written as they are."""
    values = ['=HYPERLINK("http://example.invalid")', "+1+2", "-2+3", "@SUM(A1)", "plain"]
    spec = {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH",
            "parameters": [{"parameterId": "kind", "categoricalValueSpec": {"values": values}},
                           {"parameterId": "x", "doubleValueSpec": {"minValue": -5, "maxValue": 5}}]}
    loc = "/v1/projects/csv/locations/local"
    study = server.call("POST", f"{loc}/studies", {"displayName": "formulas", "studySpec": spec})["name"].rsplit("/", 1)[1]
    for i, v in enumerate(values):
        server.call("POST", f"{loc}/studies/{study}/trials", {
            "parameters": [{"parameterId": "kind", "value": v}, {"parameterId": "x", "value": -1.5 - 0.5 * i}],
            "finalMeasurement": {"metrics": [{"metricId": "loss", "value": -0.25 * i}]}})
    page.page.goto(f"{server.base}/dashboard/")
    page.page.fill("#location input[name=project]", "csv")
    page.page.click("#location button")
    # The csv project's studies, not the page before the click.
    page.page.locator("#studies-count", has_text="csv / local").wait_for()
    page.page.goto("about:blank")  # a fresh load, as the other tests make (the project is kept)
    page.page.goto(f"{server.base}/dashboard/#/studies/{study}")
    page.page.locator("#crumbs", has_text="csv / local").wait_for()
    page.page.wait_for_selector("#trials tbody tr td")
    with page.page.expect_download() as download:
        page.page.click("text=download CSV")
    text = open(download.value.path()).read()
    assert '"\'=HYPERLINK(""http://example.invalid"")"' in text, text
    for cell in ["'+1+2", "'-2+3", "'@SUM(A1)"]:
        assert cell in text, (cell, text)
    assert "-1.5" in text and "'-1.5" not in text, "numbers are not neutralised"
    assert "'plain" not in text
    page.clean()


def test_axis_labels_stay_on_the_canvas(page, server):
    """The parallel coordinates' labels are centred on their axes but never cut by the canvas's
    edge: a long first parameter ("learning_rate") lost its first letter."""
    spec = {"metrics": [{"metricId": "validation_loss", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH",
            "parameters": [{"parameterId": "learning_rate_of_the_optimiser", "doubleValueSpec": {"minValue": 1e-5, "maxValue": 0.1}, "scaleType": "UNIT_LOG_SCALE"},
                           {"parameterId": "number_of_hidden_layers", "integerValueSpec": {"minValue": 1, "maxValue": 8}}]}
    loc = "/v1/projects/labels/locations/local"
    study = server.call("POST", f"{loc}/studies", {"displayName": "long-names", "studySpec": spec})["name"].rsplit("/", 1)[1]
    for i in range(6):
        server.call("POST", f"{loc}/studies/{study}/trials", {
            "parameters": [{"parameterId": "learning_rate_of_the_optimiser", "value": 10 ** (-5 + 0.8 * i)},
                           {"parameterId": "number_of_hidden_layers", "value": 1 + i}],
            "finalMeasurement": {"metrics": [{"metricId": "validation_loss", "value": 0.123456789 * (i + 1)}]}})
    # Every label the parallel coordinates write, with where it starts and ends.
    page.page.add_init_script("""
        window.__labels = [];
        const fillText = CanvasRenderingContext2D.prototype.fillText;
        CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
            if (this.canvas.id === "parcoords") {
                const w = this.measureText(text).width;
                const left = this.textAlign === "center" ? x - w / 2 : this.textAlign === "right" || this.textAlign === "end" ? x - w : x;
                window.__labels.push({ text: String(text), left, right: left + w, width: this.canvas.width });
            }
            return fillText.call(this, text, x, y, ...rest);
        };""")
    page.page.goto(f"{server.base}/dashboard/")
    page.page.fill("#location input[name=project]", "labels")
    page.page.click("#location button")
    page.page.locator("#studies-count", has_text="labels / local").wait_for()
    page.page.goto("about:blank")
    page.page.goto(f"{server.base}/dashboard/#/studies/{study}")
    page.page.wait_for_selector(".chart[data-drawn=true] #parcoords")
    assert "labels / local (1 study)" in page.page.locator("select").first.inner_text()
    labels = page.page.evaluate("window.__labels")
    assert any(l["text"] == "learning_rate_of_the_optimiser" for l in labels), labels
    for l in labels:
        assert l["left"] >= 0 and l["right"] <= l["width"], l
    page.shot("long-names")
    page.clean()
