"""Measures bo_client's loop and the export/import tools against a running release bo-server:

- `study.optimize` of a free objective on a RANDOM_SEARCH study (the client's and the server's
  cost per trial, nothing of a model), 1 and 4 workers;
- a study of N trials (CreateTrial from 8 threads) exported as JSON, CSV and Optuna's journal,
  imported into a fresh SQLite file and into Postgres, and the journal opened by
  optuna.load_study — wall time and file size of each.

    python bench/transfer.py --url http://127.0.0.1:18091 --database-url sqlite:///tmp/transfer/bo.db \
        --postgres postgres://postgres@127.0.0.1:5432/test --sizes 10000,100000

Needs optuna (tests/clients/requirements.txt). Prints Markdown for docs/journal/benchmarks.md."""
import argparse
import concurrent.futures
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
import bo_client as bo  # noqa: E402

BINARY = str(ROOT / "target" / "release" / "bo-server")


def space() -> bo.SearchSpace:
    s = bo.SearchSpace()
    opt = s.categorical("optimizer", ["sgd", "adam"])
    opt.when("sgd").float("momentum", 0.0, 0.99)
    opt.when("adam").float("beta1", 0.8, 0.999)
    s.float("lr", 1e-5, 1.0, log=True)
    s.float("dropout", 0.0, 0.5)
    s.integer("layers", 1, 12)
    return s


def loop(client: bo.Client, n: int, workers: int) -> float:
    study = client.create_study(f"loop-{workers}-{time.time_ns()}", space(), metrics={"loss": "MINIMIZE"}, algorithm="RANDOM_SEARCH")
    start = time.perf_counter()
    study.optimize(lambda t: float(t["dropout"]), n_trials=n, n_workers=workers, progress=False)
    return n / (time.perf_counter() - start)


def fill(client: bo.Client, size: int) -> bo.Study:
    study = client.create_study(f"transfer-{size}", space(), metrics={"loss": "MINIMIZE"}, algorithm="RANDOM_SEARCH")
    have = sum(1 for _ in study.trials())  # a rerun on the same database tops the study up
    rng = random.Random(size)

    def one(i: int) -> None:
        sgd = rng.random() < 0.5
        p = {"optimizer": "sgd" if sgd else "adam", ("momentum" if sgd else "beta1"): 0.9, "lr": 10 ** rng.uniform(-5, 0),
             "dropout": rng.uniform(0, 0.5), "layers": rng.randint(1, 12)}
        study.add_trial(p, {"loss": rng.random()})

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(have, size)))
    return study


def timed(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([BINARY, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--database-url", required=True, help="the running server's database")
    ap.add_argument("--postgres", default=os.environ.get("BO_TEST_POSTGRES_URL"))
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--loop-trials", type=int, default=1000)
    args = ap.parse_args()
    client = bo.Client(args.url, project="bench")

    print("| loop | trials/s |\n| --- | ---: |")
    for workers in (1, 4):
        print(f"| study.optimize, {workers} worker(s), {args.loop_trials} trials | {loop(client, args.loop_trials, workers):.0f} |")

    print("\n| trials | what | seconds | size |\n| ---: | --- | ---: | ---: |")
    for size in [int(s) for s in args.sizes.split(",")]:
        study = fill(client, size)
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp)
            for fmt, name in (("json", "study.json"), ("csv", "trials.csv"), ("optuna-journal", "journal.log")):
                t = timed("export", "--database-url", args.database_url, study.name, "--format", fmt, "-o", str(out / name))
                print(f"| {size:,} | export {fmt} | {t:.2f} | {(out / name).stat().st_size / 1e6:.1f} MB |")
            t = timed("import", "--database-url", f"sqlite://{out}/copy.db", str(out / "study.json"))
            print(f"| {size:,} | import json into SQLite | {t:.2f} | |")
            if args.postgres:
                schema = f"bo_bench_transfer_{size}"
                subprocess.run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"],
                               check=True, env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"})
                sep = "&" if "?" in args.postgres else "?"
                pg = f"{args.postgres}{sep}options={urllib.parse.quote('-csearch_path=' + schema)}"
                t = timed("import", "--database-url", pg, str(out / "study.json"))
                print(f"| {size:,} | import json into Postgres | {t:.2f} | |")
                subprocess.run(["psql", args.postgres, "-qc", f"DROP SCHEMA {schema} CASCADE"], check=True,
                               env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"})
            import optuna
            from optuna.storages import JournalStorage
            from optuna.storages.journal import JournalFileBackend

            optuna.logging.set_verbosity(optuna.logging.WARNING)
            start = time.perf_counter()
            loaded = optuna.load_study(study_name=f"transfer-{size}", storage=JournalStorage(JournalFileBackend(str(out / "journal.log"))))
            n = len(loaded.get_trials(deepcopy=False))
            print(f"| {size:,} | optuna.load_study of the journal ({n:,} trials) | {time.perf_counter() - start:.2f} | |")


if __name__ == "__main__":
    main()
