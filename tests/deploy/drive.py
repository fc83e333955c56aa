"""The deployment test's client side, with bo_client as a team's training jobs use it.

    drive.py run   URL KEY STUDY LOG --trials 60 --workers 8   # workers until the study has its trials
    drive.py check URL KEY STUDY LOG                           # every acknowledged completion is there

``run`` creates (or loads) a study over a conditional space and runs ``--workers`` threads, each
a worker with its own client id asking for one trial at a time, evaluating it and completing
it. Every suggestion and every acknowledged completion is appended to LOG (one JSON object per
line, flushed at once), so a replica killed mid-run or a whole stack taken down cannot make the
test forget what the service acknowledged. ``check`` reads the study back and fails, naming
the trial, when an acknowledged completion is missing or changed, or when a trial was handed
to two workers.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from typing import Any, Dict, List

import bo_client as bo


def space() -> bo.SearchSpace:
    s = bo.SearchSpace()
    opt = s.categorical("optimizer", ["sgd", "adam"])
    opt.when("sgd").float("momentum", 0.0, 0.99)
    opt.when("adam").float("beta2", 0.9, 0.9999)
    s.float("learning_rate", 1e-4, 1.0, log=True)
    s.integer("layers", 1, 6)
    return s


def loss(p: Dict[str, Any]) -> float:
    """A smooth stand-in for a validation loss, different under each optimizer."""
    lr = math.log10(float(p["learning_rate"]))
    base = (lr + 2.0) ** 2 + 0.1 * (int(p["layers"]) - 3) ** 2
    if p["optimizer"] == "sgd":
        return base + (float(p["momentum"]) - 0.9) ** 2
    return 0.5 + base + 100.0 * (float(p["beta2"]) - 0.999) ** 2


def study(client: bo.Client, name: str, trials: int) -> bo.Study:
    return client.create_study(
        name,
        space(),
        {"loss": "MINIMIZE"},
        algorithm="AUTO",
        study_stopping=bo.StudyStopping(max_num_trials=trials),
    )


def run(args: argparse.Namespace) -> int:
    client = bo.Client(args.url, project="demo", api_key=args.key)
    client.wait_ready(timeout=120)
    s = study(client, args.study, args.trials)
    lock = threading.Lock()
    failures: List[str] = []
    log = open(args.log, "a", encoding="utf-8")

    def record(event: Dict[str, Any]) -> None:
        with lock:
            log.write(json.dumps(event) + "\n")
            log.flush()

    def worker(k: int) -> None:
        me = f"worker-{k}"
        try:
            while True:
                got = s.suggest(1, client_id=me)
                if not got:
                    return
                t = got[0]
                record({"event": "suggested", "worker": me, "trial": t.id})
                value = loss(t.parameters)
                time.sleep(0.3)  # the training: long enough that a crash lands mid-run
                t.complete(value)
                record({"event": "completed", "worker": me, "trial": t.id, "value": value})
        except Exception as e:  # noqa: BLE001 - the test reports any worker's failure
            with lock:
                failures.append(f"{me}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.close()
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


def check(args: argparse.Namespace) -> int:
    client = bo.Client(args.url, project="demo", api_key=args.key)
    client.wait_ready(timeout=120)
    s = client.load_study(args.study)
    stored = {t.id: t for t in s.trials()}
    problems: List[str] = []
    owners: Dict[int, set] = {}
    acknowledged = 0
    with open(args.log, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            owners.setdefault(e["trial"], set()).add(e["worker"])
            if e["event"] != "completed":
                continue
            acknowledged += 1
            t = stored.get(e["trial"])
            if t is None:
                problems.append(f"trial {e['trial']} was acknowledged complete and is gone")
            elif t.state != "SUCCEEDED" or t.value is None or abs(t.value - e["value"]) > 1e-9 * max(1.0, abs(e["value"])):
                problems.append(f"trial {e['trial']} was acknowledged with {e['value']} and reads {t.state} {t.value}")
    for trial, workers in owners.items():
        if len(workers) > 1:
            problems.append(f"trial {trial} was handed to {sorted(workers)}")
    succeeded = sum(t.state == "SUCCEEDED" for t in stored.values())
    print(f"{acknowledged} acknowledged completions, {len(stored)} trials stored, {succeeded} succeeded, best {s.best_trial().value if succeeded else None}")
    for p in problems:
        print(f"FAIL {p}", file=sys.stderr)
    if acknowledged < args.at_least:
        print(f"FAIL only {acknowledged} completions were acknowledged; expected at least {args.at_least}", file=sys.stderr)
        return 1
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["run", "check"])
    parser.add_argument("url")
    parser.add_argument("key")
    parser.add_argument("study")
    parser.add_argument("log")
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--at-least", type=int, default=1)
    args = parser.parse_args()
    return run(args) if args.command == "run" else check(args)


if __name__ == "__main__":
    sys.exit(main())
