"""Two objectives over the real service, run after run: a 50-trial Branin–Currin study (both
minimised, the default algorithm) on a fresh server each run, one worker suggesting and
completing in turn, scored by the fraction of the front's optimal hypervolume it reaches
(reference point (18, 6), BoTorch's `BraninCurrin`). The spread over runs is what a user meets:
the service seeds each suggestion itself, and its background work (prefetching, refits) runs
when the machine lets it.

    cargo build --release -p bo-server
    python3 bench/two_objectives.py --server target/release/bo-server [--runs 10] [--trials 50] [--vary-seed]

Prints one line per run and a JSON summary; docs/journal/benchmarks.md records it.
"""
import argparse
import json
import math
import os
import socket
import subprocess
import tempfile
import time
import urllib.request

REFERENCE = (18.0, 6.0)
MAX_HV = 59.36011874867746  # BoTorch's BraninCurrin._max_hv


def branin_currin(u0, u1):
    x0, x1 = 15.0 * u0 - 5.0, 15.0 * u1
    b, c, r, s, t = 5.1 / (4.0 * math.pi ** 2), 5.0 / math.pi, 6.0, 10.0, 1.0 / (8.0 * math.pi)
    branin = (x1 - b * x0 * x0 + c * x0 - r) ** 2 + s * (1.0 - t) * math.cos(x0) + s
    factor = 1.0 - math.exp(-1.0 / (2.0 * u1)) if u1 > 0 else 1.0
    currin = factor * (2300 * u0 ** 3 + 1900 * u0 ** 2 + 2092 * u0 + 60) / (100 * u0 ** 3 + 500 * u0 ** 2 + 4 * u0 + 20)
    return branin, currin


def hypervolume(points):
    """The area both objectives (minimised) dominate below the reference point."""
    inside = sorted(p for p in points if p[0] < REFERENCE[0] and p[1] < REFERENCE[1])
    area, best_second = 0.0, REFERENCE[1]
    for a, b in inside:
        if b < best_second:
            area += (REFERENCE[0] - a) * (best_second - b)
            best_second = b
    return area


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(binary, trials, seed, extra):
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        log = open(os.path.join(d, "server.log"), "w")
        proc = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--database-url", f"sqlite://{d}/bo.db", *extra],
                                stdout=log, stderr=log)
        try:
            root = f"http://127.0.0.1:{port}"
            deadline = time.time() + 60
            while True:
                try:
                    urllib.request.urlopen(f"{root}/readyz", timeout=2).read()
                    break
                except OSError:
                    if time.time() > deadline:
                        raise SystemExit("the server did not come up")
                    time.sleep(0.1)
            base = f"{root}/v1/projects/mo/locations/local"

            def call(method, path, body=None):
                data = None if body is None else json.dumps(body).encode()
                req = urllib.request.Request(path if path.startswith("http") else base + path, data=data, method=method,
                                             headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(req, timeout=600) as r:
                    return json.loads(r.read())

            spec = {"displayName": "branin-currin", "studySpec": {
                "metrics": [{"metricId": "branin", "goal": "MINIMIZE"}, {"metricId": "currin", "goal": "MINIMIZE"}],
                "parameters": [{"parameterId": p, "doubleValueSpec": {"minValue": 0, "maxValue": 1}} for p in ("x0", "x1")]}}
            if seed is not None:
                spec["studySpec"]["algorithmConfig"] = {"seed": seed}
            study = call("POST", "/studies", spec)["name"].rsplit("/", 1)[1]
            points = []
            for _ in range(trials):
                op = call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": "w"})
                while not op.get("done"):
                    time.sleep(0.01)
                    op = call("GET", f"{root}/v1/{op['name']}")
                trial = op["response"]["trials"][0]
                x = {p["parameterId"]: p["value"] for p in trial["parameters"]}
                y = branin_currin(x["x0"], x["x1"])
                points.append(y)
                call("POST", f"/studies/{study}/trials/{trial['id']}:complete",
                     {"finalMeasurement": {"metrics": [{"metricId": "branin", "value": y[0]}, {"metricId": "currin", "value": y[1]}]}})
            return hypervolume(points) / MAX_HV
        finally:
            proc.terminate()
            proc.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--vary-seed", action="store_true",
                    help="give run i the study seed i (algorithmConfig.seed); by default every run is the same study, "
                         "whose seed comes from its name and number, so runs differ only by the server's timing")
    ap.add_argument("server_args", nargs="*", help="passed to the server after --")
    args = ap.parse_args()
    fractions = []
    for i in range(args.runs):
        t = time.perf_counter()
        f = run(args.server, args.trials, i if args.vary_seed else None, args.server_args)
        fractions.append(f)
        print(f"run {i + 1}: {f:.3f} of the optimal hypervolume ({time.perf_counter() - t:.1f} s)", flush=True)
    print(json.dumps({"runs": args.runs, "vary_seed": args.vary_seed, "trials": args.trials, "fractions": [round(f, 3) for f in fractions],
                      "min": round(min(fractions), 3), "median": round(sorted(fractions)[len(fractions) // 2], 3),
                      "at_least_0.95": sum(f >= 0.95 for f in fractions)}))


if __name__ == "__main__":
    main()
