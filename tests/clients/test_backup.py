"""Backups with the real binary:

- `bo-server backup` copies a live SQLite database while four workers write to it; the copy
  serves, and holds every trial completed before the backup began, each as the source has it;
- it refuses to overwrite a file, and refuses Postgres, naming pg_dump;
- docs/deploy.md's pg_dump / pg_restore commands, run on a Postgres study: the restored database
  serves the same trials (under CI, where BO_TEST_POSTGRES_URL is set; skipped otherwise)."""
import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import urllib.parse
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
import bo_client as bo  # noqa: E402
import bo_server  # noqa: E402


def space() -> bo.SearchSpace:
    s = bo.SearchSpace()
    s.float("x", 0.0, 1.0)
    s.integer("n", 1, 8)
    return s


def trials(url: str, name: str) -> dict:
    out, token = {}, ""
    while True:
        query = f"?pageToken={urllib.parse.quote(token)}" if token else ""
        with urllib.request.urlopen(f"{url}/v1/{name}/trials{query}") as r:
            page = json.load(r)
        out.update({t["id"]: t for t in page.get("trials", [])})
        token = page.get("nextPageToken", "")
        if not token:
            return out


def backup(db: str, output: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([bo_server.binary(), "backup", "--database-url", db, "-o", str(output)], capture_output=True, text=True, timeout=120)


def test_a_live_sqlite_database_is_copied_consistently(tmp_path) -> None:
    db = f"sqlite://{tmp_path}/live.db"
    gen = bo_server.serve(database_url=db)
    url = next(gen)
    try:
        study = bo.Client(url, project="demo").create_study("busy", space(), {"y": "MINIMIZE"}, algorithm="RANDOM_SEARCH")
        for i in range(20):
            study.add_trial({"x": i / 20, "n": 1 + i % 8}, float(i))
        stop = threading.Event()
        errors = []

        def worker(k: int) -> None:
            try:
                while not stop.is_set():
                    [t] = study.suggest(1, f"w{k}")
                    t.complete(float(t["x"]) * int(t["n"]))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        workers = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for w in workers:
            w.start()
        before = {i: t for i, t in trials(url, study.name).items() if t["state"] == "SUCCEEDED"}
        copy = tmp_path / "copy.db"
        done = backup(db, copy)
        stop.set()
        for w in workers:
            w.join()
        assert not errors, errors
        assert done.returncode == 0, done.stderr
        assert re.search(r"backed up to .*copy\.db \(\d+\.\d MB\)", done.stderr), done.stderr
        assert not list(tmp_path.glob(".copy.db.partial*")), "the partial copy was left behind"
        source = trials(url, study.name)
        assert len(source) > len(before), "the workers wrote nothing while the backup ran"

        refused = backup(db, copy)
        assert refused.returncode == 1 and "exists; the backup does not overwrite a file" in refused.stderr, refused.stderr
    finally:
        next(gen, None)

    restored = bo_server.serve(database_url=f"sqlite://{copy}")
    there = next(restored)
    try:
        copied = trials(there, study.name)
        # Every trial completed before the backup began is there as it was...
        for i, t in before.items():
            assert copied.get(i) == t, f"trial {i}"
        # ...and every trial in the copy is the source's (a consistent snapshot, not a torn one):
        # those the source completed later may be ACTIVE in the copy, never otherwise different.
        for i, t in copied.items():
            s = source[i]
            if t["state"] == "SUCCEEDED":
                assert t == s, f"trial {i}"
            else:
                assert t["state"] == "ACTIVE" and t["parameters"] == s["parameters"], f"trial {i}: {t} against {s}"
        # The copy serves: the study goes on there.
        [t] = bo.Client(there, project="demo").load_study("busy").suggest(1, "after")
        t.complete(0.5)
    finally:
        next(restored, None)


def test_postgres_is_refused_naming_pg_dump(tmp_path) -> None:
    base = os.environ.get("BO_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("BO_TEST_POSTGRES_URL is not set")
    done = backup(base, tmp_path / "pg.db")
    assert done.returncode == 1 and "pg_dump" in done.stderr, done.stderr


def test_the_readmes_pg_dump_and_pg_restore_commands_restore_a_study(tmp_path) -> None:
    base = os.environ.get("BO_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("BO_TEST_POSTGRES_URL is not set: the Postgres backup was not tested")
    env = {**os.environ, "PGOPTIONS": "-c client_min_messages=warning"}
    source_db, target_db = f"bo_test_backup_{os.getpid()}", f"bo_test_restore_{os.getpid()}"
    parsed = urllib.parse.urlsplit(base)
    url_of = lambda name: urllib.parse.urlunsplit(parsed._replace(path=f"/{name}"))  # noqa: E731
    for name in (source_db, target_db):
        subprocess.run(["psql", base, "-qc", f"DROP DATABASE IF EXISTS {name}"], check=True, env=env)
    subprocess.run(["psql", base, "-qc", f"CREATE DATABASE {source_db}"], check=True, env=env)
    try:
        gen = bo_server.serve(database_url=url_of(source_db))
        url = next(gen)
        try:
            study = bo.Client(url, project="demo").create_study("kept", space(), {"y": "MINIMIZE"}, algorithm="GP_BANDIT")
            for i in range(12):
                [t] = study.suggest(1, "w")
                t.complete(float(t["x"]) + int(t["n"]))
            before = trials(url, study.name)
        finally:
            next(gen, None)
        # docs/deploy.md's commands (Backups): a dump in pg_dump's custom format, restored into a new
        # database.
        dump = tmp_path / "bo.dump"
        subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", url_of(source_db)], check=True, env=env)
        subprocess.run(["createdb", f"--maintenance-db={base}", target_db], check=True, env=env)
        subprocess.run(["pg_restore", "--no-owner", f"--dbname={url_of(target_db)}", str(dump)], check=True, env=env)
        gen = bo_server.serve(database_url=url_of(target_db))
        there = next(gen)
        try:
            assert trials(there, study.name) == before
            [t] = bo.Client(there, project="demo").load_study("kept").suggest(1, "after")
            t.complete(1.0)
        finally:
            next(gen, None)
    finally:
        for name in (source_db, target_db):
            subprocess.run(["psql", base, "-qc", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], env=env)
