"""What the largest study the limits allow costs the service: time and the server's peak memory.

    cargo build --release -p bo-server
    python3 bench/limits.py --server target/release/bo-server [--json]

Each scenario starts its own server on a fresh SQLite file (so the peak resident memory, read
from /proc/PID/status as VmHWM, is the scenario's), and times each step over HTTP:

- largest-spec:   the largest spec the default limits and the 1 MiB body allow — 300 parameters,
                  a conditional chain 8 levels deep, 1,000-value categoricals of 100-character
                  values, integers to ±2^53, huge and log-scaled doubles — under AUTO (ADD_TREE on
                  a conditional space): create, read, suggest through the initial design and past
                  it (a fitted model), page through the trials, list the optimal ones.
- candidates:     GP_BANDIT on 300 DOUBLE parameters fitted on 30 trials, suggesting with
                  numCandidates at the limit (300,000 candidate coordinates: 1,000 × 300) and, with
                  the limit raised, at 4× and 16× it: what the limit protects.

Standard library only.
"""
import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, extra=()):
        self.dir = tempfile.mkdtemp(prefix="bo-limits-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--listen", f"127.0.0.1:{self.port}", "--database-url", f"sqlite://{self.dir}/bo.db", "--log", "warn", *extra],
            stdout=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{self.port}/v1/projects/bench/locations/local"
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1)
                break
            except (urllib.error.URLError, ConnectionError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        started = time.perf_counter()
        with urllib.request.urlopen(req, timeout=600) as r:
            raw = r.read()
        return json.loads(raw), time.perf_counter() - started, len(raw)

    def peak_rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def largest_spec():
    """300 parameters in a body just under 1 MiB, the tree 8 levels deep."""
    params = []
    # A chain of 8 levels: each level a categorical with a child under its first value.
    child = {"parameterId": "leaf", "doubleValueSpec": {"minValue": 1e-300, "maxValue": 1e300}, "scaleType": "UNIT_LOG_SCALE"}
    for level in range(7, 0, -1):
        child = {"parameterId": f"level{level}", "categoricalValueSpec": {"values": [f"c{k}" for k in range(20)]},
                 "conditionalParameterSpecs": [{"parentCategoricalValues": {"values": ["c0"]}, "parameterSpec": child}]}
    params.append(child)
    n = 8
    for k in range(6):  # 1,000-value categoricals of 100 characters: 600 KB
        params.append({"parameterId": f"cat{k}", "categoricalValueSpec": {"values": [f"{v:0>100}" for v in range(1000)]}})
        n += 1
    kinds = [
        {"doubleValueSpec": {"minValue": -8e307, "maxValue": 8e307}},
        {"doubleValueSpec": {"minValue": 1e-9, "maxValue": 1e9}, "scaleType": "UNIT_LOG_SCALE"},
        {"integerValueSpec": {"minValue": str(-(1 << 53)), "maxValue": str(1 << 53)}},
        {"discreteValueSpec": {"values": [0.5 * k for k in range(50)]}},
        {"doubleValueSpec": {"minValue": 0, "maxValue": 1}},
    ]
    while n < 300:
        params.append({"parameterId": f"p{n:03d}", **kinds[n % len(kinds)]})
        n += 1
    return {"displayName": "largest", "studySpec": {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "algorithm": "AUTO",
                                                   "parameters": params}}


def objective(trial):
    x = [p["value"] for p in trial["parameters"] if isinstance(p["value"], float) and abs(p["value"]) <= 1]
    return sum((v - 0.3) ** 2 for v in x) + random.random() * 1e-3


def scenario_largest(binary):
    s = Server(binary)
    out = {}
    spec = largest_spec()
    out["body_bytes"] = len(json.dumps(spec))
    study, out["create_s"], _ = s.call("POST", "/studies", spec)
    sid = study["name"].rsplit("/", 1)[1]
    reads = [s.call("GET", f"/studies/{sid}")[1] for _ in range(10)]
    out["get_study_s"] = sorted(reads)[5]
    first = None
    fitted = []
    for k in range(40):
        op, took, _ = s.call("POST", f"/studies/{sid}/trials:suggest", {"suggestionCount": 1, "clientId": "w"})
        if first is None:
            first = took
        if not op["done"]:
            name = op["name"].split("/locations/local", 1)[1]
            while not op["done"]:
                time.sleep(0.2)
                op, _, _ = s.call("GET", name)
            took = None
        trial = op["response"]["trials"][0]
        if k >= 30 and took is not None:
            fitted.append(took)
        s.call("POST", f"/studies/{sid}/trials/{trial['id']}:complete",
               {"finalMeasurement": {"metrics": [{"metricId": "loss", "value": objective(trial)}]}})
    out["first_suggest_s"] = first
    out["fitted_suggest_s_median"] = sorted(fitted)[len(fitted) // 2] if fitted else None
    _, out["list_trials_s"], out["list_trials_bytes"] = s.call("GET", f"/studies/{sid}/trials?pageSize=1000")
    _, out["optimal_s"], _ = s.call("POST", f"/studies/{sid}/trials:listOptimalTrials", {})
    model, _, _ = s.call("GET", f"/studies/{sid}/model")
    out["model"] = model.get("model", {}).get("model", model.get("algorithm"))
    out["peak_rss_mib"] = s.peak_rss_mib()
    s.stop()
    return out


def scenario_candidates(binary, candidates, dim=300, trials=30, limit_flag=True):
    coordinates = candidates * dim
    extra = ["--max-candidate-coordinates", str(max(coordinates, 300_000))] if limit_flag else []
    s = Server(binary, extra)
    params = [{"parameterId": f"x{i:03d}", "doubleValueSpec": {"minValue": 0, "maxValue": 1}} for i in range(dim)]
    spec = {"displayName": "candidates", "studySpec": {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT",
            "algorithmConfig": {"numCandidates": candidates, "initialDesignSize": trials}, "parameters": params}}
    study, _, _ = s.call("POST", "/studies", spec)
    sid = study["name"].rsplit("/", 1)[1]
    rng = random.Random(1)
    for k in range(trials):
        x = [rng.random() for _ in range(dim)]
        body = {"parameters": [{"parameterId": f"x{i:03d}", "value": v} for i, v in enumerate(x)],
                "finalMeasurement": {"metrics": [{"metricId": "loss", "value": sum((v - 0.3) ** 2 for v in x)}]}}
        s.call("POST", f"/studies/{sid}/trials", body)
    # Wait for the background refit, so the suggest times the acquisition search alone.
    deadline = time.time() + 600
    while True:
        model, _, _ = s.call("GET", f"/studies/{sid}/model")
        if model["fittedDataVersion"] >= trials or time.time() > deadline:
            break
        time.sleep(0.5)
    times = []
    for k in range(3):
        op, took, _ = s.call("POST", f"/studies/{sid}/trials:suggest", {"suggestionCount": 1, "clientId": f"c{k}"})
        times.append(took)
    out = {"num_candidates": candidates, "dim": dim, "coordinates": coordinates, "suggest_s": sorted(times)[1],
           "peak_rss_mib": s.peak_rss_mib()}
    s.stop()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default="target/release/bo-server")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--scenarios", default="largest,candidates")
    ap.add_argument("--candidates", default="1000,4000,16000", help="numCandidates values of the candidates scenario")
    ap.add_argument("--before-limits", action="store_true",
                    help="the server predates the limits (no --max-candidate-coordinates flag): for comparisons")
    args = ap.parse_args()
    random.seed(0)
    results = {"machine": {"cores": os.cpu_count()}}
    if "largest" in args.scenarios:
        results["largest_spec"] = scenario_largest(args.server)
    if "candidates" in args.scenarios:
        counts = [int(c) for c in args.candidates.split(",")]
        results["candidates"] = [scenario_candidates(args.server, c, limit_flag=not args.before_limits) for c in counts]
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return
    l = results.get("largest_spec")
    if l:
        print(f"largest spec ({l['body_bytes']} bytes): create {l['create_s']*1e3:.0f} ms, GET {l['get_study_s']*1e3:.1f} ms, "
              f"first suggest {l['first_suggest_s']*1e3:.0f} ms, fitted suggest {l['fitted_suggest_s_median']}, "
              f"list {l['list_trials_s']*1e3:.0f} ms / {l['list_trials_bytes']} B, optimal {l['optimal_s']*1e3:.1f} ms, "
              f"peak RSS {l['peak_rss_mib']:.0f} MiB")
    for c in results.get("candidates", []):
        print(f"GP_BANDIT D={c['dim']} numCandidates={c['num_candidates']} ({c['coordinates']:,} coordinates): "
              f"suggest {c['suggest_s']:.2f} s, peak RSS {c['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
