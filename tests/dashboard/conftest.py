"""The dashboard against the real bo-server binary (BO_SERVER_BIN, default target/debug/bo-server)
in Debian's chromium (BO_CHROMIUM, default /usr/bin/chromium), driven by Playwright."""
import hashlib
import json
import math
import os
import pathlib
import sys
import time
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import sync_playwright

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))
import bo_server  # noqa: E402
SHOTS = pathlib.Path(os.environ.get("BO_SCREENSHOTS", ROOT / "target" / "dashboard-screenshots"))
API_KEY = "dashboard-test-key"


class Server:
    def __init__(self, base: str):
        self.base = base
        self.key = None

    def call(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method, headers={"content-type": "application/json"})
        if self.key:
            request.add_header("authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(request) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path}: {e.code} {e.read().decode()}") from None


def _serve(*extra):
    for base in bo_server.serve(*extra):
        yield Server(base)


LOC = "/v1/projects/demo/locations/local"


def _create(s: Server, spec: dict, name: str) -> str:
    study = s.call("POST", f"{LOC}/studies", {"displayName": name, "studySpec": spec})
    return study["name"].rsplit("/", 1)[1]


def _suggest(s: Server, study: str) -> list:
    """One suggestion, waited for."""
    op = s.call("POST", f"{LOC}/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": "dashboard"})
    deadline = time.monotonic() + 60
    while not op.get("done"):
        assert time.monotonic() < deadline, op
        time.sleep(0.05)
        op = s.call("GET", f"/v1/{op['name']}")
    return op["response"]["trials"]


def _trial(s: Server, study: str, params: dict, metrics=None, infeasible=None, measurements=()):
    body = {"parameters": [{"parameterId": k, "value": v} for k, v in params.items()]}
    if metrics is not None:
        body["finalMeasurement"] = {"metrics": [{"metricId": k, "value": v} for k, v in metrics.items()]}
    if measurements:
        body["measurements"] = [{"stepCount": str(step), "metrics": [{"metricId": "loss", "value": v}]} for step, v in measurements]
    trial = s.call("POST", f"{LOC}/studies/{study}/trials", body)
    if infeasible:
        s.call("POST", f"{LOC}/studies/{study}/trials/{trial['id']}:complete", {"trialInfeasible": True, "infeasibleReason": infeasible})
    return trial


def SAFE_TRIAL(i):
    """The parameters of the safety study's trial `i`."""
    return 16 + (i * 131) % 497, (i * 0.293) % 0.5


def SAFE_METRICS(width, dropout, i):
    """The safety study's metrics: memory grows with width, so the widest trials are unsafe."""
    return {"accuracy": 1 - 1 / math.sqrt(width) - 0.1 * dropout, "latency": width / 100 + 0.1 * (i % 3), "memory": width / 100 - dropout}


def seed(s: Server) -> dict:
    """Studies of every kind the pages show: a conditional ADD_TREE study, a REMBO study, a
    two-metric study, one with a safety metric, and one with intermediate measurements of
    running trials."""
    tree = {
        "metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
        "algorithm": "ADD_TREE",
        "parameters": [
            {"parameterId": "optimizer", "categoricalValueSpec": {"values": ["sgd", "adam"]}, "conditionalParameterSpecs": [
                {"parameterSpec": {"parameterId": "momentum", "doubleValueSpec": {"minValue": 0.0, "maxValue": 0.99}}, "parentCategoricalValues": {"values": ["sgd"]}},
                {"parameterSpec": {"parameterId": "beta1", "doubleValueSpec": {"minValue": 0.8, "maxValue": 0.999}}, "parentCategoricalValues": {"values": ["adam"]}}]},
            {"parameterId": "learning_rate", "doubleValueSpec": {"minValue": 1e-5, "maxValue": 0.1}, "scaleType": "UNIT_LOG_SCALE"},
            {"parameterId": "layers", "integerValueSpec": {"minValue": "1", "maxValue": "8"}}],
    }
    ids = {"tree": _create(s, tree, "conditional-add-tree")}
    for i in range(40):
        sgd = i % 2 == 0
        lr = 10 ** (-5 + 4 * ((i * 0.618) % 1))
        params = {"optimizer": "sgd" if sgd else "adam", ("momentum" if sgd else "beta1"): (0.9 if sgd else 0.85) + 0.001 * (i % 7), "learning_rate": lr, "layers": 1 + i % 8}
        if i % 13 == 5:
            _trial(s, ids["tree"], params, infeasible="out of memory")
        else:
            _trial(s, ids["tree"], params, {"accuracy": 0.9 - 0.05 * abs(math.log10(lr) + 3) + 0.01 * (i % 5) + (0.02 if sgd else 0)})

    rembo = {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "algorithm": "REMBO",
             "parameters": [{"parameterId": f"x{k}", "doubleValueSpec": {"minValue": -1.0, "maxValue": 1.0}} for k in range(12)]}
    ids["rembo"] = _create(s, rembo, "rembo-d12")
    # REMBO learns from its own suggestions only (a point of its embeddings): a real loop.
    for _ in range(25):
        for trial in _suggest(s, ids["rembo"]):
            x = {p["parameterId"]: p["value"] for p in trial["parameters"]}
            loss = (x["x0"] - 0.2) ** 2 + (x["x3"] + 0.5) ** 2 + 0.01
            s.call("POST", f"{LOC}/studies/{ids['rembo']}/trials/{trial['id']}:complete",
                   {"finalMeasurement": {"metrics": [{"metricId": "loss", "value": loss}]}})

    two = {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}, {"metricId": "latency", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT",
           "parameters": [{"parameterId": "width", "integerValueSpec": {"minValue": "16", "maxValue": "512"}},
                          {"parameterId": "dropout", "doubleValueSpec": {"minValue": 0.0, "maxValue": 0.5}}]}
    ids["two"] = _create(s, two, "accuracy-vs-latency")
    for i in range(30):
        width, dropout = 16 + (i * 97) % 497, (i * 0.137) % 0.5
        _trial(s, ids["two"], {"width": width, "dropout": dropout}, {"accuracy": 1 - 1 / math.sqrt(width) - 0.1 * dropout, "latency": width / 100 + 0.1 * (i % 3)})

    # Two objectives and a safety metric: memory at most 3.5 (a target of 80 % safe trials).
    safe = {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}, {"metricId": "latency", "goal": "MINIMIZE"},
                        {"metricId": "memory", "goal": "MINIMIZE", "safetyConfig": {"safetyThreshold": 3.5, "desiredMinSafeTrialsFraction": 0.8}}],
            "algorithm": "GP_BANDIT", "parameters": two["parameters"]}
    ids["safe"] = _create(s, safe, "safe-accuracy-vs-latency")
    for i in range(30):
        width, dropout = SAFE_TRIAL(i)
        _trial(s, ids["safe"], {"width": width, "dropout": dropout}, SAFE_METRICS(width, dropout, i))

    curves = {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH",
              "medianAutomatedStoppingSpec": {"useElapsedDuration": False},
              "parameters": [{"parameterId": "lr", "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}, "scaleType": "UNIT_LOG_SCALE"}]}
    ids["curves"] = _create(s, curves, "learning-curves")
    for i in range(8):
        lr = 0.001 * (1.8 ** i)
        steps = [(step, 1 / (1 + lr * step * 10)) for step in range(1, 11)]
        trial = _trial(s, ids["curves"], {"lr": lr}, {"loss": steps[-1][1]} if i < 5 else None, measurements=steps)
        if i >= 6:  # two trials stopped at the same step: two marks
            s.call("POST", f"{LOC}/studies/{ids['curves']}/trials/{trial['id']}:stop", {})
    return ids


@pytest.fixture(scope="session")
def server():
    for s in _serve():
        s.ids = seed(s)
        yield s


@pytest.fixture(scope="session")
def keyed_server():
    digest = hashlib.sha256(API_KEY.encode()).hexdigest()
    for s in _serve("--api-keys", f"dash {digest} demo"):
        s.key = API_KEY
        _create(s, {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0.0, "maxValue": 1.0}}]}, "behind-a-key")
        s.key = None
        yield s


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=os.environ.get("BO_CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox"])
        yield b
        b.close()


class Page:
    """A browser page that records console errors and every request's origin."""

    def __init__(self, browser, base: str):
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.base = base
        self.errors = []
        self.foreign = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: None if r.url.startswith((base, "about:", "blob:")) else self.foreign.append(r.url))
        self.page.on("response", lambda r: self.errors.append(f"{r.status} {r.url}") if r.status >= 400 and "/v1/" not in r.url else None)

    def shot(self, name: str):
        SHOTS.mkdir(parents=True, exist_ok=True)
        # From the top: scrolled, the sticky header would be drawn across the middle of a
        # full-page picture.
        self.page.evaluate("window.scrollTo(0, 0)")
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def clean(self):
        assert not self.errors, self.errors
        assert not self.foreign, f"requests left the server's origin: {self.foreign}"


@pytest.fixture()
def page(browser, server):
    p = Page(browser, server.base)
    yield p
    p.context.close()
