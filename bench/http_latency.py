"""Suggest latency over HTTP against a running bo-server, for a study that already has N
completed trials (added with CreateTrial, as trials evaluated elsewhere would be).

    cargo run --release -p bo-server -- --listen 127.0.0.1:18181 --database-url sqlite:///tmp/lat.db &
    python3 bench/http_latency.py --base http://127.0.0.1:18181 --trials 2000

Three ways of asking, each timed per suggest call (milliseconds, p50 and p90):

- fitted:     the model is fitted on every trial and its queue of precomputed suggestions full
              (`--prefetch`); one suggest, then wait until the server has caught up again (the
              target case).
- burst:      clients ask one after another without completing anything (trials in flight
              become fantasies), as a pool of workers starting together does.
- sequential: suggest, complete, suggest, ...: every suggest follows a completion, so it is
              computed from the cached model conditioned on the new result (no queue can be
              fresh: the result was not known before).

Standard library only. Prints JSON with --json.
"""
import argparse
import json
import math
import random
import statistics
import time
import urllib.request


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="http://127.0.0.1:8080")
    ap.add_argument("--trials", type=int, default=2000, help="completed trials before timing")
    ap.add_argument("--dim", type=int, default=6, help="parameters of the study")
    ap.add_argument("--algorithm", default="GP_BANDIT")
    ap.add_argument("--samples", type=int, default=30, help="suggest calls timed per mode")
    ap.add_argument("--modes", default="fitted,burst,sequential", help="comma-separated, in this order")
    ap.add_argument("--prefetch", type=int, default=4, help="the server's --prefetch: 'caught up' means a full queue")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = f"{args.base}/v1/projects/bench/locations/local"

    def call(method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    names = [f"x{i}" for i in range(args.dim)]

    def objective(params):
        # Styblinski–Tang on [-5, 5]^d: smooth, several basins.
        return sum(x**4 - 16 * x**2 + 5 * x for x in params.values()) / 2

    spec = {
        "displayName": f"latency-{time.time_ns()}",
        "studySpec": {
            "metrics": [{"metricId": "f", "goal": "MINIMIZE"}],
            "algorithm": args.algorithm,
            "parameters": [{"parameterId": n, "doubleValueSpec": {"minValue": -5, "maxValue": 5}} for n in names],
        },
    }
    study = call("POST", "/studies", spec)["name"].rsplit("/", 1)[1]
    rng = random.Random(0)
    t0 = time.perf_counter()
    for _ in range(args.trials):
        params = {n: rng.uniform(-5, 5) for n in names}
        call("POST", f"/studies/{study}/trials", {
            "parameters": [{"parameterId": n, "value": v} for n, v in params.items()],
            "finalMeasurement": {"metrics": [{"metricId": "f", "value": objective(params)}]},
        })
    load_s = time.perf_counter() - t0

    def caught_up(need_queue):
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            m = call("GET", f"/studies/{study}/model")
            if m["fittedDataVersion"] == m["dataVersion"] and (not need_queue or m["precomputedSuggestions"] >= args.prefetch):
                return
            time.sleep(0.01)
        raise SystemExit("the server never caught up")

    def timed_suggest(client):
        t = time.perf_counter()
        op = call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": client})
        dt = time.perf_counter() - t
        if not op["done"]:
            raise SystemExit(f"suggest answered a pending operation: {op['name']}")
        return dt * 1e3, op["response"]["trials"][0]

    def complete(trial):
        params = {p["parameterId"]: p["value"] for p in trial["parameters"]}
        call("POST", f"/studies/{study}/trials/{trial['id']}:complete",
             {"finalMeasurement": {"metrics": [{"metricId": "f", "value": objective(params)}]}})

    modes = args.modes.split(",")
    results = {}
    caught_up(False)
    if "fitted" in modes:
        fitted = []
        for k in range(args.samples):
            caught_up(True)
            ms, trial = timed_suggest(f"fitted-{k}")
            fitted.append(ms)
        results["fitted"] = fitted
    if "burst" in modes:
        caught_up(True)
        results["burst"] = [timed_suggest(f"burst-{k}")[0] for k in range(args.samples)]
    if "sequential" in modes:
        sequential = []
        trial = timed_suggest("seq")[1]
        for _ in range(args.samples):
            complete(trial)
            ms, trial = timed_suggest("seq")
            sequential.append(ms)
        results["sequential"] = sequential

    def pct(v, q):
        v = sorted(v)
        return v[min(len(v) - 1, math.ceil(q * len(v)) - 1)]

    summary = {mode: {"p50_ms": statistics.median(v), "p90_ms": pct(v, 0.9), "max_ms": max(v)} for mode, v in results.items()}
    if args.json:
        print(json.dumps({"trials": args.trials, "dim": args.dim, "algorithm": args.algorithm, "load_seconds": load_s,
                          "summary": summary, "samples_ms": results}))
    else:
        print(f"{args.algorithm}, {args.trials} completed trials, {args.dim} parameters (loaded in {load_s:.1f} s)")
        for mode, s in summary.items():
            print(f"  {mode:<10} suggest p50 {s['p50_ms']:8.2f} ms   p90 {s['p90_ms']:8.2f} ms   max {s['max_ms']:8.2f} ms")


if __name__ == "__main__":
    main()
