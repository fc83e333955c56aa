"""A wide study after a restart: 6,000 trials of 300 categorical parameters with 128-character
values (four each), imported; its first suggest (the first fit), one made while the study is
mirrored, the first suggest after a restart (three restarts), eight first suggests at once from
new clients after another restart, and the server's peak memory (VmHWM) over each phase. Starts
its own server on a fresh SQLite file (its log beside it).

    cargo build --release -p bo-server
    python3 bench/wide_study.py --server target/release/bo-server

Prints one JSON object; docs/journal/benchmarks.md records it.
"""
import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

PARAMS = 300
LEVELS = 4


def value(k, level):
    return f"{k:03}-{level}-" + "v" * 122


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary, db):
        self.binary, self.db, self.port = binary, db, free_port()
        self.proc = None

    def start(self):
        self.log = self.db.replace("sqlite://", "") + ".log"
        log = open(self.log, "a")
        self.proc = subprocess.Popen(
            # No suggestions computed ahead: every suggest computes, so each phase's split
            # (read, model, total) is its own.
            [self.binary, "--listen", f"127.0.0.1:{self.port}", "--database-url", self.db, "--prefetch", "0"],
            stdout=log, stderr=log, env={**os.environ, "BO_LOG": "info,bo_server::engine::suggest=debug"})
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=2).read()
                return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("the server did not come up")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)

    def computed(self):
        """The last suggest's read, model and total seconds, from the server's log."""
        last = None
        with open(self.log) as f:
            for line in f:
                if "computed proposals" in line:
                    last = line
        if last is None:
            return None
        fields = dict(part.split("=", 1) for part in last.split() if "=" in part)
        seconds = lambda v: float(v[:-2]) / 1000 if v.endswith("ms") else float(v.rstrip("s").replace("µ", "")) / (1e6 if "µ" in v else 1)
        return {k: round(seconds(fields[k]), 2) for k in ("read", "model", "total")}

    def peak_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def call(self, method, path, body=None, timeout=1200):
        url = f"http://127.0.0.1:{self.port}/v1/projects/wide/locations/local{path}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())


def trial_wire(i, rng):
    return {"id": str(i), "state": "SUCCEEDED", "startTime": "2026-01-01T00:00:00Z", "endTime": "2026-01-01T00:00:01Z",
            "parameters": [{"parameterId": f"p{k:03}", "value": value(k, rng.randrange(LEVELS))} for k in range(PARAMS)],
            "finalMeasurement": {"stepCount": "1", "metrics": [{"metricId": "y", "value": rng.random()}]}}


def suggest(server, study, client):
    started = time.perf_counter()
    op = server.call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": client})
    while not op.get("done"):
        time.sleep(0.5)
        op = server.call("GET", f"/{op['name'].split('/locations/local/', 1)[1]}")
    if "error" in op:
        raise SystemExit(f"suggest failed: {op['error']}")
    return time.perf_counter() - started


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--trials", type=int, default=6000)
    ap.add_argument("--concurrent", type=int, default=8)
    ap.add_argument("--restarts", type=int, default=3, help="times the first suggest after a restart is measured")
    args = ap.parse_args()
    workdir = tempfile.mkdtemp(prefix="bo-wide-")
    server = Server(os.path.abspath(args.server), f"sqlite://{workdir}/wide.db")
    server.start()
    spec = {"displayName": "source", "studySpec": {"metrics": [{"metricId": "y", "goal": "MAXIMIZE"}],
            "parameters": [{"parameterId": f"p{k:03}", "categoricalValueSpec": {"values": [value(k, v) for v in range(LEVELS)]}}
                           for k in range(PARAMS)]}}
    source = server.call("POST", "/studies", spec)["name"].rsplit("/", 1)[1]
    doc = server.call("GET", f"/studies/{source}:export")
    doc["trials"] = []
    upload = server.call("POST", "/studies:import?displayName=wide", doc)["name"].rsplit("/", 1)[1]
    rng = random.Random(1)
    started = time.perf_counter()
    batch = 20
    for first in range(1, args.trials + 1, batch):
        part = [trial_wire(i, rng) for i in range(first, min(first + batch, args.trials + 1))]
        server.call("POST", f"/imports/{upload}:append", {"trials": part})
    study = server.call("POST", f"/imports/{upload}:commit", {})["name"].rsplit("/", 1)[1]
    out = {"trials": args.trials, "params": PARAMS, "import_s": round(time.perf_counter() - started, 1)}

    # The study's first suggest (its first fit), one while it is mirrored, then the first
    # suggest after a restart.
    server.stop()
    server.start()
    out["first_ever_s"] = round(suggest(server, study, "first"), 2)
    out["mirrored_s"] = round(suggest(server, study, "second"), 2)
    out["mirrored_computed"] = server.computed()
    out["peak_mb_first_fit"] = round(server.peak_mb())
    # A restart's first read depends on what the page cache still holds: measured several times.
    out["first_after_restart_s"], out["after_restart_computed"], out["peak_mb_after_restart"] = [], [], []
    for k in range(args.restarts):
        server.stop()
        server.start()
        out["first_after_restart_s"].append(round(suggest(server, study, f"third-{k}"), 2))
        out["after_restart_computed"].append(server.computed())
        out["peak_mb_after_restart"].append(round(server.peak_mb()))

    # Eight first suggests at once from new clients after another restart.
    server.stop()
    server.start()
    times = [None] * args.concurrent

    def one(k):
        times[k] = suggest(server, study, f"new-{k}")

    threads = [threading.Thread(target=one, args=(k,)) for k in range(args.concurrent)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out["concurrent_first_s"] = sorted(round(t, 2) for t in times)
    out["peak_mb_concurrent"] = round(server.peak_mb())
    server.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
