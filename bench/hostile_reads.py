"""Hardening II, measured: the attacks of the read surfaces and of fairness between tenants,
at the sizes that aborted or pinned the server, against a release binary.

    cargo build --release -p bo-server
    python3 bench/hostile_reads.py --server target/release/bo-server [--postgres URL] [--only NAME,...] [--json]

Each scenario starts its own server (API keys for two tenants, alice and bob, in two projects;
no rate limit) on a fresh SQLite file, or with --postgres on a fresh Postgres database made for
it. While alice attacks, bob runs a GP_BANDIT study's suggest–complete loop; the report gives
bob's slowest call and 99th percentile, the attack's calls and answer sizes, the server's CPU
seconds and peak resident memory (VmHWM, from /proc) and whether it survived:

- overview:   1,000 studies of ~1 MB specs in one project; alice walks `studies:overview`
              (pageSize 1,000) and ListStudies (pageSize 200) from six threads.
- curves:     500 trials × 300 measurements × 20 metrics; `trials:curves?limit=500` from 14
              threads, the objective and another metric.
- fronts:     1,100 trials on one front, 2 to 20 objectives: `listOptimalTrials` cold and warm;
              then six callers at once on 4 and 20 objectives.
- mirror:     6,000 of the largest legal trials (300 parameters, 128-character ids and values),
              then suggests: the mirror's bytes (/metrics) and the process's memory.
- connections: alice opens 3,000 connections and sends each a request head and a byte of body
              now and then; bob's requests meanwhile.
- structure:  two OVERLAP_ADD_GP studies of alice's (30 parameters, 400 trials, gibbsBudget
              10,000) fitting; how long bob's GP study takes to get its first model (and the
              same alone, for comparison).
- importance: 32 concurrent importance requests on a 2,000-trial study just after a restart.

Standard library only. --scale shrinks the sizes for a quick look.
"""
import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import hashlib

ALICE, BOB = "alice-key-hostile-reads", "bob-key-hostile-reads"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sha(key):
    return hashlib.sha256(key.encode()).hexdigest()


class Server:
    def __init__(self, binary, postgres=None, extra=(), db_url=None):
        self.binary, self.extra = binary, list(extra)
        self.port = free_port()
        if db_url:
            self.db_url = db_url
        elif postgres:
            name = f"bo_hostile_{os.getpid()}_{random.randrange(1 << 30)}"
            subprocess.run(["psql", postgres, "-qc", f"CREATE DATABASE {name}"], check=True)
            self.db_url = postgres.rsplit("/", 1)[0] + "/" + name
        else:
            self.db_url = f"sqlite://{tempfile.mkdtemp(prefix='bo-hostile-')}/bo.db"
        self.start()

    def start(self):
        keys = f"alice {sha(ALICE)} project-a; bob {sha(BOB)} project-b"
        self.proc = subprocess.Popen(
            [self.binary, "--listen", f"127.0.0.1:{self.port}", "--database-url", self.db_url, "--log", "warn",
             "--api-keys", keys, "--rate-limit", "0", *self.extra],
            stdout=subprocess.DEVNULL)
        self.root = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{self.root}/readyz", timeout=1)
                return
            except (urllib.error.URLError, ConnectionError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def restart(self):
        self.proc.kill()
        self.proc.wait()
        self.start()

    def status(self):
        try:
            text = open(f"/proc/{self.proc.pid}/status").read()
        except OSError:
            return {}
        return {k: v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}

    def peak_mb(self):
        return int(self.status().get("VmHWM", "0 kB").split()[0]) / 1024

    def rss_mb(self):
        return int(self.status().get("VmRSS", "0 kB").split()[0]) / 1024

    def threads(self):
        return int(self.status().get("Threads", "0"))

    def cpu_seconds(self):
        try:
            fields = open(f"/proc/{self.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def alive(self):
        return self.proc.poll() is None

    def metrics(self):
        return urllib.request.urlopen(f"{self.root}/metrics", timeout=30).read().decode()

    def stop(self):
        self.proc.kill()
        self.proc.wait()


class Tenant:
    def __init__(self, server, key, project):
        self.server, self.key, self.project = server, key, project

    def base(self):
        return f"{self.server.root}/v1/projects/{self.project}/locations/l"

    def raw(self, method, path, body=None, timeout=300):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.base() + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.key}"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def call(self, method, path, body=None, timeout=300):
        status, text = self.raw(method, path, body, timeout)
        if status != 200:
            raise RuntimeError(f"{method} {path}: {status} {text[:300]!r}")
        return json.loads(text)

    def create(self, body):
        return self.call("POST", "/studies", body)["name"].rsplit("/", 1)[1]


class BobLoop:
    """Bob's GP study, suggested and completed in a loop until stopped: his calls' times."""

    def __init__(self, server, name):
        self.bob = Tenant(server, BOB, "project-b")
        self.study = self.bob.create({"displayName": name, "studySpec": {
            "metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT",
            "parameters": [{"parameterId": f"x{k}", "doubleValueSpec": {"minValue": 0, "maxValue": 1}} for k in range(4)]}})
        self.times, self.errors = [], []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set():
            started = time.perf_counter()
            try:
                op = self.bob.call("POST", f"/studies/{self.study}/trials:suggest", {"suggestionCount": 1, "clientId": "bob"}, timeout=120)
                if not op.get("done"):
                    self.errors.append("pending")
                    continue
                t = op["response"]["trials"][0]
                y = sum((p["value"] - 0.3) ** 2 for p in t["parameters"])
                self.bob.call("POST", f"/studies/{self.study}/trials/{t['id']}:complete",
                              {"finalMeasurement": {"metrics": [{"metricId": "y", "value": y}]}}, timeout=120)
                self.times.append(time.perf_counter() - started)
            except Exception as e:  # noqa: BLE001 — a failed call is what is measured
                self.errors.append(str(e)[:200])
                time.sleep(0.1)

    def stop(self):
        self.stopping.set()
        self.thread.join(timeout=300)
        times = sorted(self.times)
        if not times:
            return {"calls": 0, "errors": len(self.errors)}
        pick = lambda q: round(times[min(len(times) - 1, int(q * len(times)))] * 1000, 1)
        return {"calls": len(times), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": round(times[-1] * 1000, 1),
                "errors": len(self.errors), "first_error": self.errors[0] if self.errors else None}


def attack(server, threads, seconds, work):
    """`threads` threads calling `work()` (returning the answer's bytes) for `seconds`; bob's loop
    beside it. Returns what was measured."""
    bob = BobLoop(server, f"bob-{random.randrange(1 << 30)}")
    time.sleep(2)  # bob's initial design, before the attack
    cpu0, stop = server.cpu_seconds(), threading.Event()
    calls, sizes, errors, lock = [], [], [], threading.Lock()

    def run():
        while not stop.is_set():
            started = time.perf_counter()
            try:
                n = work()
                with lock:
                    calls.append(time.perf_counter() - started)
                    sizes.append(n)
            except Exception as e:  # noqa: BLE001
                with lock:
                    errors.append(str(e)[:200])
                if not server.alive():
                    return

    workers = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    time.sleep(seconds)
    stop.set()
    for w in workers:
        w.join(timeout=600)
    wall = time.perf_counter() - started
    result = {
        "attack_calls": len(calls),
        "attack_call_s_max": round(max(calls), 2) if calls else None,
        "attack_answer_bytes_max": max(sizes) if sizes else None,
        "attack_errors": len(errors),
        "attack_first_error": errors[0] if errors else None,
        "cpu_s": round(server.cpu_seconds() - cpu0, 1),
        "wall_s": round(wall, 1),
        "peak_rss_mb": round(server.peak_mb()),
        "alive": server.alive(),
    }
    result["bob"] = bob.stop()
    return result


def walk(tenant, first_path):
    """Follows a list's pages; the most bytes one page took."""
    token, most = "", 0
    while True:
        sep = "&" if "?" in first_path else "?"
        status, text = tenant.raw("GET", f"{first_path}{sep}pageToken={token}" if token else first_path)
        if status != 200:
            raise RuntimeError(f"GET {first_path}: {status}")
        most = max(most, len(text))
        # The token from the end of the answer, without parsing megabytes here: the attacker's
        # own CPU would be measured with the server's (one machine).
        found = re.search(rb'"nextPageToken":"([^"]*)"', text[-200:])
        token = found.group(1).decode() if found else ""
        if not token:
            return most


def scenario_overview(args):
    server = Server(args.server, args.postgres)
    alice = Tenant(server, ALICE, "project-a")
    n = max(10, int(1000 * args.scale))
    parameters = [{"parameterId": f"c{p}", "categoricalValueSpec": {"values": [f"{p}{v:0>117}" for v in range(1000)]}} for p in range(8)]
    body = {"studySpec": {"metrics": [{"metricId": "m", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH", "parameters": parameters}}
    spec_bytes = len(json.dumps(body))
    started = time.perf_counter()
    for k in range(n):
        alice.create({**body, "displayName": f"wide-{k}"})
    created = time.perf_counter() - started
    first = time.perf_counter()
    overview_page = walk(alice, "/studies:overview?pageSize=1000")
    list_page = walk(alice, "/studies?pageSize=200")
    walked = time.perf_counter() - first
    k = [0]

    def work():
        k[0] += 1
        return walk(alice, "/studies:overview?pageSize=1000") if k[0] % 2 else walk(alice, "/studies?pageSize=200")

    result = attack(server, 6, args.seconds, work)
    result.update({"studies": n, "spec_bytes": spec_bytes, "create_s": round(created, 1), "walk_both_s": round(walked, 2),
                   "overview_page_bytes": overview_page, "list_page_bytes_max": list_page})
    server.stop()
    return result


def scenario_curves(args):
    server = Server(args.server, args.postgres)
    alice = Tenant(server, ALICE, "project-a")
    trials, steps, metrics = max(20, int(500 * args.scale)), 300, 20
    study = alice.create({"displayName": "curves", "studySpec": {
        "metrics": [{"metricId": f"m{k}", "goal": "MINIMIZE"} for k in range(metrics)], "algorithm": "RANDOM_SEARCH",
        "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}})
    for t in range(trials):
        ms = [{"stepCount": str(s + 1), "metrics": [{"metricId": f"m{k}", "value": s * (k + 1) + t} for k in range(metrics)]} for s in range(steps)]
        alice.call("POST", f"/studies/{study}/trials", {"parameters": [{"parameterId": "x", "value": t / trials}], "measurements": ms})
    k = [0]

    def work():
        k[0] += 1
        metric = "m0" if k[0] % 2 else "m7"
        status, text = alice.raw("GET", f"/studies/{study}/trials:curves?limit=500&metric={metric}")
        if status != 200:
            raise RuntimeError(f"curves: {status}")
        return len(text)

    result = attack(server, 14, args.seconds, work)
    answer = alice.call("GET", f"/studies/{study}/trials:curves?limit=500")
    result.update({"trials": trials, "measurements": trials * steps, "values": trials * steps * metrics,
                   "curves_answered": len(answer["curves"]), "omitted": answer.get("omitted", 0),
                   "points": sum(len(c["steps"]) for c in answer["curves"])})
    server.stop()
    return result


def sphere(n, m, seed):
    rng = random.Random(seed)
    for _ in range(n):
        v = [rng.random() + 0.01 for _ in range(m)]
        norm = sum(x * x for x in v) ** 0.5
        yield [x / norm for x in v]


def front_study(alice, m, n):
    study = alice.create({"displayName": f"front-{m}", "studySpec": {
        "metrics": [{"metricId": f"o{k}", "goal": "MAXIMIZE"} for k in range(m)], "algorithm": "RANDOM_SEARCH",
        "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}})
    for v in sphere(n, m, m):
        alice.call("POST", f"/studies/{study}/trials", {"parameters": [{"parameterId": "x", "value": 0.5}],
                                                        "finalMeasurement": {"metrics": [{"metricId": f"o{k}", "value": x} for k, x in enumerate(v)]}})
    return study


def scenario_fronts(args):
    server = Server(args.server, args.postgres)
    alice = Tenant(server, ALICE, "project-a")
    n = max(50, int(1100 * args.scale))
    rows, studies = [], {}
    for m in args.objectives:
        study = front_study(alice, m, n)
        studies[m] = study
        path = f"/studies/{study}/trials:listOptimalTrials"
        t0 = time.perf_counter()
        status, text = alice.raw("POST", path, {})
        t1 = time.perf_counter()
        if status != 200:
            rows.append({"objectives": m, "trials": n, "status": status, "cold_s": round(t1 - t0, 3),
                         "cpu_s_so_far": round(server.cpu_seconds(), 1), "peak_rss_mb": round(server.peak_mb())})
            continue
        alice.call("POST", path, {})
        t2 = time.perf_counter()
        rows.append({"objectives": m, "trials": n, "kept": len(json.loads(text).get("optimalTrials", [])),
                     "cold_s": round(t1 - t0, 3), "warm_s": round(t2 - t1, 3), "peak_rss_mb": round(server.peak_mb())})
    result = {"table": rows}
    for m in [m for m in args.callers if m in studies]:
        path = f"/studies/{studies[m]}/trials:listOptimalTrials"
        version = [0]

        def work(path=path, m=m):
            # Each call after a new trial: a new data version, computed once for the callers.
            version[0] += 1
            if version[0] % 6 == 0:
                v = next(sphere(1, m, 1000 + version[0]))
                alice.call("POST", f"/studies/{studies[m]}/trials", {"parameters": [{"parameterId": "x", "value": 0.5}],
                                                                     "finalMeasurement": {"metrics": [{"metricId": f"o{k}", "value": x} for k, x in enumerate(v)]}})
            status, text = alice.raw("POST", path, {})
            if status != 200:
                raise RuntimeError(f"listOptimalTrials: {status}")
            return len(text)

        result[f"six_callers_{m}"] = attack(server, 6, args.seconds, work)
    server.stop()
    return result


def scenario_mirror(args):
    server = Server(args.server, args.postgres)
    alice = Tenant(server, ALICE, "project-a")
    n = max(100, int(6000 * args.scale))
    long = lambda k, c: f"{k:03}{c * 125}"
    values = [long(v, "v") for v in range(4)]
    params = [{"parameterId": long(k, "p"), "categoricalValueSpec": {"values": values}} for k in range(300)]
    study = alice.create({"displayName": "mirror", "studySpec": {
        "metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH", "parameters": params}})
    rng = random.Random(1)
    started = time.perf_counter()
    for t in range(n):
        ps = [{"parameterId": long(k, "p"), "value": values[rng.randrange(4)]} for k in range(300)]
        alice.call("POST", f"/studies/{study}/trials", {"parameters": ps, "finalMeasurement": {"metrics": [{"metricId": "y", "value": rng.random()}]}})
    created = time.perf_counter() - started
    before = server.peak_mb()
    t0 = time.perf_counter()
    alice.call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": "a"})
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    alice.call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": "b"})
    second = time.perf_counter() - t0
    mirrored = re.search(r"^bo_mirrored_trial_bytes (\d+)", server.metrics(), re.M)
    result = {"trials": n, "create_s": round(created, 1), "peak_rss_before_suggest_mb": round(before), "first_suggest_s": round(first, 2),
              "second_suggest_s": round(second, 2), "peak_rss_mb": round(server.peak_mb()), "rss_after_mb": round(server.rss_mb()),
              "mirrored_trial_mb": round(int(mirrored.group(1)) / 2**20) if mirrored else None, "alive": server.alive()}
    server.stop()
    return result


def scenario_connections(args):
    server = Server(args.server, args.postgres)
    bob = Tenant(server, BOB, "project-b")
    bob.create({"displayName": "b", "studySpec": {"metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH",
                                                   "parameters": [{"parameterId": "x", "doubleValueSpec": {"minValue": 0, "maxValue": 1}}]}})
    n = max(100, int(3000 * args.scale))
    head = (f"POST /v1/projects/project-a/locations/l/studies HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ALICE}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{").encode()
    sockets = []
    for _ in range(n):
        try:
            s = socket.create_connection(("127.0.0.1", server.port), timeout=2)
            s.sendall(head)
            sockets.append(s)
        except OSError:
            break
    times, failures = [], 0
    started = time.perf_counter()
    while time.perf_counter() - started < args.seconds:
        for s in sockets:
            try:
                s.send(b" ")
            except OSError:
                pass
        t0 = time.perf_counter()
        status, _ = bob.raw("GET", "/studies", timeout=60)
        times.append(time.perf_counter() - t0)
        failures += status != 200
        time.sleep(0.2)
    answered = {}
    for s in sockets:
        s.setblocking(False)
        try:
            data = s.recv(64)
            key = data[9:12].decode() if len(data) > 12 else "closed"
        except BlockingIOError:
            key = "nothing yet"
        except OSError:
            key = "reset"
        answered[key] = answered.get(key, 0) + 1
        s.close()
    times.sort()
    result = {"connections": len(sockets), "alice_answered": answered, "bob_calls": len(times), "bob_failures": failures,
              "bob_p99_ms": round(times[int(0.99 * (len(times) - 1))] * 1000, 1), "bob_max_ms": round(times[-1] * 1000, 1),
              "peak_rss_mb": round(server.peak_mb()), "alive": server.alive()}
    server.stop()
    return result


def first_model_seconds(server, name):
    """Bob's GP study from its first suggest until its model is fitted on its first GP data
    version: suggest–complete for 40 trials, then wait."""
    bob = Tenant(server, BOB, "project-b")
    study = bob.create({"displayName": name, "studySpec": {
        "metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT",
        "parameters": [{"parameterId": f"x{k}", "doubleValueSpec": {"minValue": 0, "maxValue": 1}} for k in range(4)]}})
    times, pending = [], 0
    started = time.perf_counter()
    for _ in range(40):
        t0 = time.perf_counter()
        op = bob.call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": "bob"})
        if not op.get("done"):
            # Answered pending (the model took longer than the server's wait): poll it.
            pending += 1
            while not op.get("done"):
                time.sleep(0.1)
                status, text = bob.raw("GET", f"/studies/{study}/operations/{op['name'].rsplit('/', 1)[1]}")
                op = json.loads(text)
                if time.perf_counter() - t0 > 600:
                    raise RuntimeError("bob's suggest stayed pending for ten minutes")
        t = op["response"]["trials"][0]
        bob.call("POST", f"/studies/{study}/trials/{t['id']}:complete",
                 {"finalMeasurement": {"metrics": [{"metricId": "y", "value": sum((p["value"] - 0.3) ** 2 for p in t["parameters"])}]}})
        times.append(time.perf_counter() - t0)
    loop = time.perf_counter() - started
    while True:
        model = bob.call("GET", f"/studies/{study}/model")
        if model["fittedDataVersion"] >= model["dataVersion"]:
            break
        if time.perf_counter() - started > 900:
            break
        time.sleep(0.1)
    times.sort()
    return {"loop_s": round(loop, 1), "model_current_after_s": round(time.perf_counter() - started, 1), "pending_answers": pending,
            "fitted": model["fittedDataVersion"], "data": model["dataVersion"],
            "bob_p99_ms": round(times[int(0.99 * (len(times) - 1))] * 1000, 1), "bob_max_ms": round(times[-1] * 1000, 1)}


def scenario_structure(args):
    server = Server(args.server, args.postgres, extra=["--workers", "2"])
    alone = first_model_seconds(server, "bob-alone")
    alice = Tenant(server, ALICE, "project-a")
    rng = random.Random(7)
    n = max(40, int(400 * args.scale))
    for s in range(2):
        study = alice.create({"displayName": f"search-{s}", "studySpec": {
            "metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "OVERLAP_ADD_GP", "algorithmConfig": {"gibbsBudget": 10000},
            "parameters": [{"parameterId": f"x{k}", "doubleValueSpec": {"minValue": 0, "maxValue": 1}} for k in range(30)]}})
        for _ in range(n):
            x = [rng.random() for _ in range(30)]
            y = sum((a - 0.3) * (b - 0.6) for a, b in zip(x, x[1:]))
            alice.call("POST", f"/studies/{study}/trials", {"parameters": [{"parameterId": f"x{k}", "value": v} for k, v in enumerate(x)],
                                                            "finalMeasurement": {"metrics": [{"metricId": "y", "value": y}]}})
        alice.call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": "alice"})
    time.sleep(1)
    cpu0 = server.cpu_seconds()
    beside = first_model_seconds(server, "bob-beside")
    busy = re.search(r"^bo_workers_busy (\d+)", server.metrics(), re.M)
    result = {"alone": alone, "beside_two_searches": beside, "cpu_s": round(server.cpu_seconds() - cpu0, 1),
              "workers_busy_after": int(busy.group(1)) if busy else None, "peak_rss_mb": round(server.peak_mb()), "alive": server.alive()}
    server.stop()
    return result


def scenario_importance(args):
    server = Server(args.server, args.postgres)
    alice = Tenant(server, ALICE, "project-a")
    n = max(100, int(2000 * args.scale))
    study = alice.create({"displayName": "importance", "studySpec": {
        "metrics": [{"metricId": "y", "goal": "MINIMIZE"}], "algorithm": "GP_BANDIT",
        "parameters": [{"parameterId": f"x{k}", "doubleValueSpec": {"minValue": 0, "maxValue": 1}} for k in range(8)]}})
    rng = random.Random(3)
    for _ in range(n):
        x = [rng.random() for _ in range(8)]
        alice.call("POST", f"/studies/{study}/trials", {"parameters": [{"parameterId": f"x{k}", "value": v} for k, v in enumerate(x)],
                                                        "finalMeasurement": {"metrics": [{"metricId": "y", "value": (x[0] - 0.3) ** 2 + 0.1 * x[1]}]}})
    server.restart()
    bob = BobLoop(server, "bob-importance")
    time.sleep(2)
    cpu0, most_threads, done = server.cpu_seconds(), server.threads(), []

    def ask():
        t0 = time.perf_counter()
        status, _ = alice.raw("GET", f"/studies/{study}/importance")
        done.append((status, time.perf_counter() - t0))

    callers = [threading.Thread(target=ask) for _ in range(32)]
    for c in callers:
        c.start()
    while any(c.is_alive() for c in callers):
        most_threads = max(most_threads, server.threads())
        time.sleep(0.02)
    bob_result = bob.stop()
    result = {"trials": n, "answers": sorted({s for s, _ in done}), "slowest_s": round(max(t for _, t in done), 2),
              "cpu_s": round(server.cpu_seconds() - cpu0, 1), "most_threads": most_threads, "peak_rss_mb": round(server.peak_mb()),
              "alive": server.alive(), "bob": bob_result}
    server.stop()
    return result


SCENARIOS = {"overview": scenario_overview, "curves": scenario_curves, "fronts": scenario_fronts, "mirror": scenario_mirror,
             "connections": scenario_connections, "structure": scenario_structure, "importance": scenario_importance}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", required=True)
    p.add_argument("--postgres", help="a Postgres URL whose server may CREATE DATABASE (one per scenario)")
    p.add_argument("--only", default=",".join(SCENARIOS))
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--objectives", type=lambda v: [int(x) for x in v.split(",")], default=[2, 3, 4, 6, 8, 12, 20],
                   help="fronts: the numbers of objectives timed")
    p.add_argument("--callers", type=lambda v: [int(x) for x in v.split(",") if x], default=[4, 20],
                   help="fronts: the numbers of objectives six callers pound at once (empty: none)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    out = {}
    for name in args.only.split(","):
        print(f"== {name}", file=sys.stderr, flush=True)
        out[name] = SCENARIOS[name](args)
        print(json.dumps(out[name], indent=None if args.json else 2), file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
