"""Studies in and out with the real binary's tools (`bo-server export | import | studies`):

- the export document carried from SQLite into Postgres (another project) and served there
  unchanged — trials, measurements, states, times, the model state — and the study goes on;
- CSV that reads back to the same values, empty where a parameter is inactive;
- Optuna's journal, opened by optuna.load_study with the same trials and values, and a journal
  written by Optuna itself imported with a user-supplied search space.

Postgres is used when BO_TEST_POSTGRES_URL is set (always under CI); otherwise a second SQLite
file stands in, and the test says so."""
import csv
import json
import os
import pathlib
import subprocess
import sys
import urllib.parse

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
import bo_client as bo  # noqa: E402
import bo_server  # noqa: E402


def tool(*args: str) -> str:
    out = subprocess.run([bo_server.binary(), *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def space() -> bo.SearchSpace:
    s = bo.SearchSpace()
    opt = s.categorical("optimizer", ["sgd", "adam"])
    opt.when("sgd").float("momentum", 0.0, 0.99)
    opt.when("adam").float("beta1", 0.8, 0.999)
    s.float("learning_rate", 1e-5, 0.1, log=True)
    s.integer("layers", 1, 8)
    return s


def score(t: bo.Trial) -> float:
    return -abs(int(t["layers"]) - 4) - 0.1 * abs(float(t.get("momentum", 0.5) or 0.5) - 0.5)


@pytest.fixture()
def source(tmp_path):
    """A SQLite server with a GP study of 30 trials: measurements, an infeasible trial, one
    still ACTIVE, and a fitted model."""
    db = f"sqlite://{tmp_path}/source.db"
    gen = bo_server.serve(database_url=db)
    url = next(gen)
    study = bo.Client(url, project="demo").create_study("moving", space(), metrics={"score": "MAXIMIZE"}, algorithm="GP_BANDIT")
    for i in range(30):
        [t] = study.suggest(1, f"w{i % 3}")
        t.add_measurement(score(t) - 1.0, step=1, elapsed_seconds=0.5)
        if i == 7:
            t.complete(infeasible='diverged: "loss", then NaN')
        else:
            t.complete(score(t), step=2)
    study.suggest(1, "still-running")
    assert study.model()["trials"] > 0
    yield db, url, study
    next(gen, None)


def postgres_or_sqlite(tmp_path, name: str) -> str:
    base = os.environ.get("BO_TEST_POSTGRES_URL")
    if not base:
        print("BO_TEST_POSTGRES_URL is not set: importing into a second SQLite file instead of Postgres")
        return f"sqlite://{tmp_path}/{name}.db"
    schema = f"bo_test_transfer_{os.getpid()}_{name}"
    subprocess.run(["psql", base, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"], check=True, env={**os.environ, "PGOPTIONS": "-c client_min_messages=warning"})
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options={urllib.parse.quote('-csearch_path=' + schema)}"


def rest_trials(url: str, name: str) -> list:
    with __import__("urllib.request").request.urlopen(f"{url}/v1/{name}/trials") as r:
        return json.load(r)["trials"]


def test_a_study_moves_to_another_database_and_project_whole(source, tmp_path) -> None:
    db, url, study = source
    exported = tmp_path / "study.json"
    tool("export", "--database-url", db, study.name, "-o", str(exported))
    doc = json.loads(exported.read_text())
    assert doc["boExportFormat"] == 1 and len(doc["trials"]) == 31 and doc["model"]["state"]
    before = rest_trials(url, study.name)
    model_before = study.model()

    target = postgres_or_sqlite(tmp_path, "target")
    name = tool("import", "--database-url", target, str(exported), "--project", "elsewhere").strip()
    assert name == "projects/elsewhere/locations/local/studies/1"
    listing = tool("studies", "--database-url", target)
    assert f"{name}\tmoving\tACTIVE\tGP_BANDIT\t29/31\t" in listing
    # Exported again from there, it is the same document (names and the export time aside):
    # trials, times, the next id, the data version and the model state.
    doc2 = json.loads(tool("export", "--database-url", target, name))
    unnamed = lambda d: json.loads(json.dumps({**d, "exportTime": ""}).replace(study.name, "S").replace(name, "S"))  # noqa: E731
    assert unnamed(doc2) == unnamed(doc)

    gen = bo_server.serve(database_url=target)
    there = next(gen)
    try:
        after = rest_trials(there, name)
        strip = lambda ts: [{k: v for k, v in t.items() if k != "name"} for t in ts]  # noqa: E731
        assert strip(after) == strip(before)
        moved = bo.Client(there, project="elsewhere").load_study("moving")
        assert moved.model()["algorithm"] == model_before["algorithm"]
        # The ACTIVE trial's client gets it back there; the next new trial is number 32.
        [held] = moved.suggest(1, "still-running")
        assert held.id == 31
        held.complete(0.0)
        [new] = moved.suggest(1, "newcomer")
        assert new.id == 32
    finally:
        next(gen, None)

    # The same file again under the same name is refused, and nothing is written.
    again = subprocess.run([bo_server.binary(), "import", "--database-url", target, str(exported), "--project", "elsewhere"], capture_output=True, text=True)
    assert again.returncode != 0 and "already has a study named" in again.stderr
    assert tool("studies", "--database-url", target).count("\n") == 2


def test_csv_reads_back_the_same_values(source) -> None:
    db, url, study = source
    rows = list(csv.DictReader(tool("export", "--database-url", db, study.name, "--format", "csv").splitlines()))
    trials = {t.id: t for t in study.trials()}
    assert len(rows) == len(trials) == 31
    assert list(rows[0])[:8] == ["trial", "state", "optimizer", "momentum", "beta1", "learning_rate", "layers", "score"]
    for row in rows:
        t = trials[int(row["trial"])]
        assert row["state"] == t.state
        for p in ("optimizer", "momentum", "beta1", "learning_rate", "layers"):
            if p in t.parameters:
                want = t[p]
                assert (row[p] if isinstance(want, str) else float(row[p])) == want
            else:
                assert row[p] == ""
        assert (float(row["score"]) if row["score"] else None) == t.value
        assert row["infeasible_reason"] == t.infeasible_reason
        assert int(row["measurements"]) == len(t.measurements)


def test_optuna_opens_the_exported_journal(source, tmp_path) -> None:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    db, url, study = source
    journal = tmp_path / "journal.log"
    tool("export", "--database-url", db, study.name, "--format", "optuna-journal", "-o", str(journal))
    loaded = optuna.load_study(study_name="moving", storage=JournalStorage(JournalFileBackend(str(journal))))
    assert loaded.direction == optuna.study.StudyDirection.MAXIMIZE
    assert loaded.user_attrs["bo:study"] == study.name
    assert loaded.metric_names == ["score"], "optuna-dashboard labels the objective by its metric"
    ours = list(study.trials())
    theirs = loaded.get_trials(deepcopy=False)
    assert len(theirs) == len(ours)
    states = {"SUCCEEDED": "COMPLETE", "INFEASIBLE": "FAIL", "ACTIVE": "RUNNING"}
    for mine, ft in zip(ours, theirs):
        assert ft.user_attrs["bo:trial"] == mine.id
        assert ft.state.name == states[mine.state]
        assert ft.params == mine.parameters
        assert ft.value == mine.value
        assert ft.intermediate_values == {m.step: m.metrics["score"] for m in mine.measurements}
    assert loaded.best_value == max(t.value for t in ours if t.value is not None)
    # Optuna's own analysis runs on it.
    importance = optuna.importance.get_param_importances(loaded)
    assert set(importance) <= {"optimizer", "momentum", "beta1", "learning_rate", "layers"}
    # And optuna-dashboard serves it.
    port = bo_server.free_port()
    dashboard = subprocess.Popen(
        [str(pathlib.Path(sys.executable).parent / "optuna-dashboard"), str(journal), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        import time
        import urllib.request

        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies/0?after=0") as r:
                    served = json.load(r)
                break
            except OSError:
                assert time.monotonic() < deadline and dashboard.poll() is None, "optuna-dashboard did not serve the journal"
                time.sleep(0.2)
        assert len(served["trials"]) == len(ours)
        assert served["best_trials"][0]["values"] == [loaded.best_value]
    finally:
        dashboard.terminate()
        dashboard.wait(timeout=30)


def test_a_study_run_in_optuna_continues_in_bo(tmp_path) -> None:
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    journal = tmp_path / "optuna.log"
    storage = JournalStorage(JournalFileBackend(str(journal)))
    ostudy = optuna.create_study(study_name="from-optuna", storage=storage, direction="minimize", sampler=optuna.samplers.TPESampler(seed=1))

    def objective(trial: optuna.Trial) -> float:
        opt = trial.suggest_categorical("optimizer", ["sgd", "adam"])
        if opt == "sgd":
            extra = trial.suggest_float("momentum", 0.0, 0.99)
        else:
            extra = trial.suggest_float("beta1", 0.8, 0.999)
        lr = trial.suggest_float("learning_rate", 1e-5, 0.1, log=True)
        layers = trial.suggest_int("layers", 1, 8)
        if layers == 8:
            raise RuntimeError("out of memory")
        loss = abs(layers - 4) + extra + lr
        for step in range(3):
            trial.report(loss + 1.0 / (step + 1), step)
            if trial.number % 5 == 4 and step == 1:
                raise optuna.TrialPruned()
        return loss

    ostudy.optimize(objective, n_trials=25, catch=(RuntimeError,))
    spec = {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "parameters": space().to_vertex(), "algorithm": "GP_BANDIT"}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    db = f"sqlite://{tmp_path}/imported.db"
    name = tool("import", "--database-url", db, "--format", "optuna-journal", "--spec", str(tmp_path / "spec.json"), str(journal), "--project", "demo").strip()

    gen = bo_server.serve(database_url=db)
    url = next(gen)
    try:
        study = bo.Client(url, project="demo").load_study("from-optuna")
        assert study.name == name
        ours = list(study.trials())
        theirs = ostudy.get_trials(deepcopy=False)
        assert len(ours) == len(theirs) == 25
        for mine, ft in zip(ours, theirs):
            assert mine.parameters == ft.params
            assert [m.step for m in mine.measurements] == sorted(ft.intermediate_values)
            if ft.state == optuna.trial.TrialState.COMPLETE:
                assert (mine.state, mine.value) == ("SUCCEEDED", ft.value)
            elif ft.state == optuna.trial.TrialState.PRUNED:
                last = max(ft.intermediate_values)
                assert (mine.state, mine.value) == ("SUCCEEDED", ft.intermediate_values[last])
            else:
                assert (mine.state, mine.infeasible_reason) == ("INFEASIBLE", "failed in Optuna")
        best = study.best_trial()
        assert best is not None and best.value == ostudy.best_value
        # The GP goes on from Optuna's trials.
        [t] = study.suggest(1, "w")
        assert t.id == 26 and study.model()["trials"] >= 20
    finally:
        next(gen, None)

    # Without a search space, or with one that does not fit, nothing is imported.
    no_spec = subprocess.run([bo_server.binary(), "import", "--database-url", db, "--format", "optuna-journal", str(journal)], capture_output=True, text=True)
    assert no_spec.returncode != 0 and "--spec" in no_spec.stderr
    spec["parameters"] = spec["parameters"][1:]
    (tmp_path / "narrow.json").write_text(json.dumps(spec))
    narrow = subprocess.run(
        [bo_server.binary(), "import", "--database-url", db, "--format", "optuna-journal", "--spec", str(tmp_path / "narrow.json"),
         str(journal), "--display-name", "narrow"], capture_output=True, text=True)
    assert narrow.returncode != 0 and "Optuna trial 0: parameters[0].parameterId" in narrow.stderr and "is not a parameter of the study" in narrow.stderr


def test_the_tools_refuse_a_database_that_does_not_exist(tmp_path) -> None:
    missing = tmp_path / "typo.db"
    for args in (["studies"], ["export", "projects/demo/locations/local/studies/1"]):
        out = subprocess.run(
            [bo_server.binary(), args[0], "--database-url", f"sqlite://{missing}", *args[1:]], capture_output=True, text=True, timeout=60
        )
        assert out.returncode != 0, out.stdout
        assert f"there is no database at {missing}" in out.stderr, out.stderr
        assert not missing.exists(), "the tool created the database it was asked to read"


def test_a_journal_bo_wrote_imports_back_without_a_spec_and_spec_takes_bo_s_export(source, tmp_path) -> None:
    db, url, study = source
    journal, exported = tmp_path / "journal.log", tmp_path / "study.json"
    tool("export", "--database-url", db, study.name, "--format", "optuna-journal", "-o", str(journal))
    tool("export", "--database-url", db, study.name, "-o", str(exported))
    back = tool("import", "--database-url", db, "--format", "optuna-journal", str(journal), "--display-name", "round-trip").strip()
    with_export = tool(
        "import", "--database-url", db, "--format", "optuna-journal", "--spec", str(exported), str(journal), "--display-name", "by-export"
    ).strip()
    client = bo.Client(url, project="demo")
    original = [(t.state, t.parameters, t.value) for t in study.trials() if t.state in ("SUCCEEDED", "INFEASIBLE")]
    for name, printed in (("round-trip", back), ("by-export", with_export)):
        imported = client.load_study(name)
        assert printed == imported.name
        assert imported.spec["parameters"] == study.spec["parameters"] and imported.spec["metrics"] == study.spec["metrics"]
        assert [(t.state, t.parameters, t.value) for t in imported.trials() if t.state in ("SUCCEEDED", "INFEASIBLE")] == original


# Over REST, with API keys: what a team member without database access does.

KEY = "transfer-team-key"


def keyed(database_url: str):
    import hashlib

    return bo_server.serve("--api-keys", f"t {hashlib.sha256(KEY.encode()).hexdigest()} team-a", database_url=database_url)


def keyed_trials(client: "bo.Client", study: "bo.Study") -> list:
    listed = client.transport.request("GET", f"/v1/{study.name}/trials")["trials"]
    return [{k: v for k, v in t.items() if k != "name"} for t in listed]


def test_a_study_moves_over_rest_between_servers_with_keys(tmp_path) -> None:
    import numpy as np
    import optuna
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    gen_a = keyed(f"sqlite://{tmp_path}/a.db")
    gen_b = keyed(postgres_or_sqlite(tmp_path, "rest_target"))
    a, b = next(gen_a), next(gen_b)
    try:
        ours = bo.Client(a, project="team-a", api_key=KEY)
        study = ours.create_study("over rest", space(), metrics={"score": "MAXIMIZE"}, algorithm="GP_BANDIT")

        def objective(t: bo.Trial) -> np.float64:
            # What training code returns: numpy scalars, measured along the way.
            t.add_measurement(np.float32(score(t) - 1.0), step=np.int64(1))
            return np.float64(score(t))

        study.optimize(objective, 16)
        study.suggest(1, "still-running")
        before = keyed_trials(ours, study)

        size = study.export(tmp_path / "study.json")
        assert size == (tmp_path / "study.json").stat().st_size and not (tmp_path / "study.json.partial").exists()
        doc = json.loads((tmp_path / "study.json").read_text())
        assert len(doc["trials"]) == 17 and doc["model"]["state"], "every trial and the fitted model"
        study.export(tmp_path / "study.csv", format="csv")
        rows = list(csv.DictReader((tmp_path / "study.csv").read_text().splitlines()))
        assert [int(r["trial"]) for r in rows] == list(range(1, 18))
        study.export(tmp_path / "study.log", format="optuna-journal")
        loaded = optuna.load_study(study_name="over rest", storage=JournalStorage(JournalFileBackend(str(tmp_path / "study.log"))))
        assert len(loaded.trials) == 17 and loaded.best_value == max(t.value for t in study.trials() if t.value is not None)

        # Into the other server in parts of about 2 kB (several requests), all at once at the end.
        theirs = bo.Client(b, project="team-a", api_key=KEY)
        moved = theirs.import_study(tmp_path / "study.json", part_bytes=2000)
        assert moved.display_name == "over rest" and moved.spec == study.spec
        assert keyed_trials(theirs, moved) == before
        assert moved.model()["algorithm"] == study.model()["algorithm"]
        [held] = moved.suggest(1, "still-running")
        assert held.id == 17, "the ACTIVE trial's worker gets it back there"
        [new] = moved.suggest(1, "newcomer")
        assert new.id == 18

        # Under another name, again; the same name is refused and nothing is left behind.
        again = theirs.import_study(tmp_path / "study.json", display_name="second copy")
        assert again.id == 2 and len(list(again.trials())) == 17
        with pytest.raises(bo.ApiError) as refused:
            theirs.import_study(tmp_path / "study.json")
        assert refused.value.status == 409 and "displayName" in refused.value.message
        assert [s.display_name for s in theirs.studies()] == ["over rest", "second copy"]

        # Another project's key sees none of it.
        with pytest.raises(bo.ApiError) as foreign:
            bo.Client(a, project="team-b", api_key=KEY).study(1).export(tmp_path / "x.json")
        assert foreign.value.status == 404 and not (tmp_path / "x.json").exists()
    finally:
        next(gen_a, None)
        next(gen_b, None)


def exported_source(client: "bo.Client", n: int, path) -> "bo.Study":
    """A random-search study of ``n`` completed trials, exported to ``path``."""
    study = client.create_study("source", space(), metrics={"score": "MAXIMIZE"}, algorithm="RANDOM_SEARCH")
    for t in study.suggest(n, "w"):
        t.complete(score(t))
    study.export(path)
    return study


def test_an_import_whose_commit_outlasts_a_request_is_waited_for(tmp_path, monkeypatch) -> None:
    """A long commit (two million trials on Postgres take minutes) answers 202 with the upload's
    progress while it runs on; the client asks again until the study is there."""
    gen = keyed(f"sqlite://{tmp_path}/a.db")
    url = next(gen)
    try:
        client = bo.Client(url, project="team-a", api_key=KEY)
        exported_source(client, 5, tmp_path / "study.json")

        # The first two `:commit`s are answered as a server still committing answers: 202 with
        # the upload (read from the real server), the commit not yet begun.
        real = client.transport.request
        seen = {"commits": 0, "progress": []}

        def request(method, path, body=None, **kw):
            if path.endswith(":commit"):
                seen["commits"] += 1
                if seen["commits"] <= 2:
                    progress = real("GET", path[: -len(":commit")])
                    seen["progress"].append(progress["state"])
                    return progress
            return real(method, path, body, **kw)

        monkeypatch.setattr(client.transport, "request", request)
        copy = client.import_study(tmp_path / "study.json", display_name="copy")
        monkeypatch.undo()
        assert seen["commits"] == 3 and seen["progress"] == ["STAGING", "STAGING"]
        assert copy.display_name == "copy" and len(list(copy.trials())) == 5
    finally:
        next(gen, None)


def test_an_interrupted_import_leaves_nothing_behind(tmp_path, monkeypatch) -> None:
    gen = keyed(f"sqlite://{tmp_path}/a.db")
    url = next(gen)
    try:
        client = bo.Client(url, project="team-a", api_key=KEY)
        study = exported_source(client, 12, tmp_path / "study.json")

        # Ctrl-C during the third part.
        real = client.transport.request
        seen = {"appends": 0, "upload": None}

        def request(method, path, body=None, **kw):
            if path.endswith("/studies:import"):
                answer = real(method, path, body, **kw)
                seen["upload"] = answer["name"]
                return answer
            if path.endswith(":append"):
                seen["appends"] += 1
                if seen["appends"] == 3:
                    raise KeyboardInterrupt
            return real(method, path, body, **kw)

        monkeypatch.setattr(client.transport, "request", request)
        with pytest.raises(KeyboardInterrupt):
            client.import_study(tmp_path / "study.json", display_name="copy", part_bytes=600)
        monkeypatch.undo()
        assert seen["upload"], "an upload was opened"
        with pytest.raises(bo.ApiError) as gone:
            client.transport.request("GET", f"/v1/{seen['upload']}")
        assert gone.value.status == 404, "the upload was deleted"
        assert [s.display_name for s in client.studies()] == ["source"]

        # Files that are not bo's export, and formats that do not exist, say so.
        (tmp_path / "study.csv").write_text("trial,state\n1,SUCCEEDED\n")
        with pytest.raises(ValueError, match="not bo's JSON export"):
            client.import_study(tmp_path / "study.csv")
        with pytest.raises(ValueError, match="format must be one of json, csv, optuna-journal"):
            study.export(tmp_path / "x", format="xml")
    finally:
        next(gen, None)

    # The server is gone: the export fails within the retry policy and leaves no file.
    down = bo.Client(url, project="team-a", api_key=KEY, retry=bo.RetryPolicy(deadline=1.0))
    down.transport.answered = True  # as a client that had talked to it before it went away
    with pytest.raises(bo.ConnectionFailed):
        bo.Study(down, {"name": "projects/team-a/locations/local/studies/1"}).export(tmp_path / "late.json")
    assert not (tmp_path / "late.json").exists() and not (tmp_path / "late.json.partial").exists()
