"""Suggest latency over HTTP as a study grows: runs the README's study for N trials (suggest one,
complete it) against a running bo-server and prints p50/p90 of the suggest calls per 500 trials.

    cargo run --release -p bo-server -- --listen 127.0.0.1:18181 --database-url sqlite:///tmp/lat.db &
    python3 bench/http_latency.py --base http://127.0.0.1:18181 --trials 2000

Standard library only.
"""
import argparse
import json
import pathlib
import statistics
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="http://127.0.0.1:8080")
    ap.add_argument("--trials", type=int, default=2000)
    args = ap.parse_args()
    base = f"{args.base}/v1/projects/bench/locations/local"

    def post(path, body):
        req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            return json.loads(r.read())

    spec = json.loads((ROOT / "README.md").read_text().split("```json\n", 1)[1].split("```", 1)[0])
    spec["displayName"] = f"latency-{time.time_ns()}"
    study = post("/studies", spec)["name"].rsplit("/", 1)[1]
    buckets = {}
    for n in range(args.trials):
        t0 = time.perf_counter()
        op = post(f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": "bench"})
        buckets.setdefault(n // 500, []).append(time.perf_counter() - t0)
        trial = op["response"]["trials"][0]["id"]
        post(f"/studies/{study}/trials/{trial}:complete", {"finalMeasurement": {"metrics": [{"metricId": "accuracy", "value": 0.5}]}})
    for k, v in sorted(buckets.items()):
        v.sort()
        print(f"trials {k * 500:5d}-{k * 500 + len(v) - 1:5d}: suggest p50 {statistics.median(v) * 1e3:6.2f} ms, p90 {v[int(len(v) * 0.9)] * 1e3:6.2f} ms")


if __name__ == "__main__":
    main()
