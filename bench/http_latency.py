"""Suggest latency over HTTP against a running bo-server, beside Optuna's samplers on the same
data, for studies that already have N completed trials (added as trials evaluated elsewhere
would be: CreateTrial for bo, add_trial for Optuna).

    cargo build --release -p bo-server
    target/release/bo-server --listen 127.0.0.1:18181 --database-url sqlite:///tmp/lat.db &
    bash bench/peers/run.sh --help >/dev/null   # installs Optuna into target/peers/venv
    target/peers/venv/bin/python bench/http_latency.py --base http://127.0.0.1:18181 \
        --trials 100,500,2000,10000 --dim 6,20 --optuna gp,tpe --out latency.json

Three ways of asking bo, each timed per suggest call (milliseconds, p50 and p90):

- fitted:     the model is fitted on every trial and its queue of precomputed suggestions full
              (`--prefetch`); one suggest, then wait until the server has caught up again.
- burst:      clients ask one after another without completing anything (trials in flight
              become fantasies), as a pool of workers starting together does.
- sequential: suggest, complete, suggest, ...: every suggest follows a completion the model
              has not seen — the loop of a training job.

The modes run in the order of `--modes`; the trials handed out by one mode are completed before
the next starts (untimed), so each mode sees the same kind of study, the first at exactly N
trials and each later one at N plus the trials before it (`--modes sequential` times the loop
at the N Optuna's samplers are timed at). `fitted` waits for a queue of `--prefetch`
suggestions, which the server keeps only while the study's suggests have not come one per
completion (`Queue::wanted`): it cannot follow `sequential`. Optuna's samplers are timed on the same loop as `sequential`:
`ask` (timed), then `tell`. A sampler whose median ask takes longer than `--peer-cap` seconds is
not asked again at larger N (the median: the first ask of a process also imports and warms up
the sampler's libraries). Requests go over one kept-alive connection, as bo_client sends them
(`--connection new`: a connection per request). Standard library only, but for Optuna (`--optuna`).
"""
import argparse
import json
import math
import random
import statistics
import time
import urllib.parse
import http.client


def objective(params):
    """Styblinski–Tang on [-5, 5]^d: smooth, several basins."""
    return sum(x**4 - 16 * x**2 + 5 * x for x in params.values()) / 2


def loaded(n, dim, seed=0):
    """The N completed trials every optimiser starts from."""
    rng = random.Random(seed)
    names = [f"x{i}" for i in range(dim)]
    out = []
    for _ in range(n):
        params = {name: rng.uniform(-5, 5) for name in names}
        out.append((params, objective(params)))
    return out


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, math.ceil(q * len(v)) - 1)]


def summary(samples):
    return {"p50_ms": statistics.median(samples), "p90_ms": pct(samples, 0.9), "max_ms": max(samples), "samples": len(samples)}


class Bo:
    """`connection`: `keep-alive` sends every request on one connection, as bo_client does (a
    connection per thread); `new` opens one per request (urllib's way)."""

    # Reconnect rather than reuse a connection idle this long: the server closes idle ones.
    IDLE_S = 5.0

    def __init__(self, base, connection="keep-alive"):
        parsed = urllib.parse.urlsplit(base)
        self.host, self.port = parsed.hostname, parsed.port
        self.prefix = "/v1/projects/bench/locations/local"
        self.keep_alive = connection == "keep-alive"
        self.conn, self.used = None, 0.0

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        if self.conn is None or not self.keep_alive or time.monotonic() - self.used > self.IDLE_S:
            if self.conn is not None:
                self.conn.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        headers = {"Content-Type": "application/json"}
        if not self.keep_alive:
            headers["Connection"] = "close"
        self.conn.request(method, self.prefix + path, body=data, headers=headers)
        r = self.conn.getresponse()
        payload = r.read()
        self.used = time.monotonic()
        if r.status >= 400:
            raise SystemExit(f"{method} {path}: HTTP {r.status} {payload[:300]!r}")
        return json.loads(payload)

    def measure(self, n, dim, algorithm, samples, modes, prefetch):
        names = [f"x{i}" for i in range(dim)]
        spec = {
            "displayName": f"latency-{n}-{dim}-{time.time_ns()}",
            "studySpec": {
                "metrics": [{"metricId": "f", "goal": "MINIMIZE"}],
                "algorithm": algorithm,
                "parameters": [{"parameterId": name, "doubleValueSpec": {"minValue": -5, "maxValue": 5}} for name in names],
            },
        }
        study = self.call("POST", "/studies", spec)["name"].rsplit("/", 1)[1]
        t0 = time.perf_counter()
        for params, value in loaded(n, dim):
            self.call("POST", f"/studies/{study}/trials", {
                "parameters": [{"parameterId": k, "value": v} for k, v in params.items()],
                "finalMeasurement": {"metrics": [{"metricId": "f", "value": value}]},
            })
        load_s = time.perf_counter() - t0

        def caught_up(need_queue):
            deadline = time.monotonic() + 1800
            while time.monotonic() < deadline:
                m = self.call("GET", f"/studies/{study}/model")
                if m["fittedDataVersion"] == m["dataVersion"] and (not need_queue or m["precomputedSuggestions"] >= prefetch):
                    return
                time.sleep(0.01)
            raise SystemExit("the server never caught up")

        def timed_suggest(client):
            t = time.perf_counter()
            op = self.call("POST", f"/studies/{study}/trials:suggest", {"suggestionCount": 1, "clientId": client})
            dt = time.perf_counter() - t
            if not op["done"]:
                raise SystemExit(f"suggest answered a pending operation: {op['name']}")
            return dt * 1e3, op["response"]["trials"][0]

        def complete(trial):
            params = {p["parameterId"]: p["value"] for p in trial["parameters"]}
            self.call("POST", f"/studies/{study}/trials/{trial['id']}:complete",
                      {"finalMeasurement": {"metrics": [{"metricId": "f", "value": objective(params)}]}})

        results = {}
        t0 = time.perf_counter()
        caught_up(False)
        first_fit_s = time.perf_counter() - t0
        def fitted():
            times, handed = [], []
            for k in range(samples):
                caught_up(True)
                ms, trial = timed_suggest(f"fitted-{k}")
                times.append(ms)
                handed.append(trial)
            for trial in handed:
                complete(trial)
            return times

        def burst():
            caught_up(True)
            asked = [timed_suggest(f"burst-{k}") for k in range(samples)]
            for _, trial in asked:
                complete(trial)
            return [ms for ms, _ in asked]

        def sequential():
            caught_up(False)
            times = []
            trial = timed_suggest("seq")[1]
            for _ in range(samples):
                complete(trial)
                ms, trial = timed_suggest("seq")
                times.append(ms)
            complete(trial)
            return times

        # In the order asked: each mode's trials are completed before the next, so the first
        # mode runs at the N loaded and each later one at N plus the trials before it.
        for mode in modes:
            results[mode] = {"fitted": fitted, "burst": burst, "sequential": sequential}[mode]()
        return {"load_seconds": load_s, "first_fit_seconds": first_fit_s,
                "summary": {mode: summary(v) for mode, v in results.items()}, "samples_ms": results}


def optuna_measure(sampler_name, n, dim, samples):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = {"gp": lambda: optuna.samplers.GPSampler(seed=0), "tpe": lambda: optuna.samplers.TPESampler(seed=0)}[sampler_name]()
    study = optuna.create_study(direction="minimize", sampler=sampler)
    dist = {f"x{i}": optuna.distributions.FloatDistribution(-5, 5) for i in range(dim)}
    study.add_trials([optuna.trial.create_trial(params=p, distributions=dist, value=v) for p, v in loaded(n, dim)])
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        trial = study.ask(dist)
        times.append((time.perf_counter() - t) * 1e3)
        study.tell(trial, objective(trial.params))
    return {"summary": {"sequential": summary(times)}, "samples_ms": {"sequential": times}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base", default="http://127.0.0.1:8080")
    ap.add_argument("--trials", default="2000", help="completed trials before timing, comma-separated")
    ap.add_argument("--dim", default="6", help="parameters of the study, comma-separated")
    ap.add_argument("--algorithm", default="GP_BANDIT")
    ap.add_argument("--samples", type=int, default=30, help="suggest calls timed per mode")
    ap.add_argument("--modes", default="fitted,burst,sequential", help="comma-separated, run in this order (the first at exactly N trials)")
    ap.add_argument("--prefetch", type=int, default=4, help="the server's --prefetch: 'caught up' means a full queue")
    ap.add_argument("--optuna", default="", help="Optuna samplers to time beside bo: gp, tpe (comma-separated)")
    ap.add_argument("--peer-samples", type=int, default=10, help="asks timed per Optuna sampler")
    ap.add_argument("--peer-cap", type=float, default=60.0, help="seconds: a slower median ask stops that sampler at larger N")
    ap.add_argument("--peers-only", action="store_true", help="time only the Optuna samplers (no server needed)")
    ap.add_argument("--connection", choices=["keep-alive", "new"], default="keep-alive",
                    help="keep-alive: one connection for every request, as bo_client keeps one per thread; new: one per request")
    ap.add_argument("--out", help="write every sample as JSON here")
    args = ap.parse_args()
    ns = [int(x) for x in args.trials.split(",")]
    dims = [int(x) for x in args.dim.split(",")]
    modes = args.modes.split(",")
    if "fitted" in modes and "sequential" in modes and modes.index("fitted") > modes.index("sequential"):
        raise SystemExit("--modes: fitted cannot follow sequential (the server then keeps one queued suggestion, not --prefetch)")
    peers = [p for p in args.optuna.split(",") if p]
    bo = Bo(args.base, args.connection)
    rows = []
    for dim in dims:
        stopped = set()
        for n in ns:
            if args.peers_only:
                row = {"trials": n, "dim": dim, "bo": None}
            else:
                row = {"trials": n, "dim": dim, "bo": bo.measure(n, dim, args.algorithm, args.samples, modes, args.prefetch)}
                print(f"n={n} D={dim}: bo {json.dumps(row['bo']['summary'])}", flush=True)
            for peer in peers:
                if peer in stopped:
                    row[peer] = None
                    continue
                row[peer] = optuna_measure(peer, n, dim, args.peer_samples)
                if row[peer]["summary"]["sequential"]["p50_ms"] > args.peer_cap * 1e3:
                    stopped.add(peer)
            rows.append(row)
            if args.out:
                with open(args.out, "w") as f:
                    json.dump({"algorithm": args.algorithm, "samples": args.samples, "connection": args.connection, "rows": rows}, f)
            s = row["bo"]["summary"] if row["bo"] else {m: {"p50_ms": math.nan, "p90_ms": math.nan} for m in modes}
            line = " ".join(f"{mode} {s[mode]['p50_ms']:.1f}/{s[mode]['p90_ms']:.1f}" for mode in modes)
            line += "".join(f"  {p} {row[p]['summary']['sequential']['p50_ms']:.1f}" if row[p] else f"  {p} —" for p in peers)
            loaded_s = row["bo"]["load_seconds"] if row["bo"] else 0
            print(f"n={n} D={dim} (loaded {loaded_s:.0f} s): bo p50/p90 ms {line}", flush=True)
    print()
    head = "| N | D | " + " | ".join(f"bo {m} p50 / p90 ms" for m in modes) + "".join(f" | Optuna {p} ask p50 ms | ×" for p in peers) + " |"
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for row in rows:
        s = row["bo"]["summary"] if row["bo"] else {m: {"p50_ms": math.nan, "p90_ms": math.nan} for m in modes}
        cells = [str(row["trials"]), str(row["dim"])] + [f"{s[m]['p50_ms']:.1f} / {s[m]['p90_ms']:.1f}" for m in modes]
        for p in peers:
            if row[p] is None:
                cells += ["not run (slower than the cap at a smaller N)", "—"]
            else:
                peer = row[p]["summary"]["sequential"]["p50_ms"]
                ratio = peer / s["sequential"]["p50_ms"] if "sequential" in s else float("nan")
                cells += [f"{peer:.1f}", f"{ratio:.0f}×"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
