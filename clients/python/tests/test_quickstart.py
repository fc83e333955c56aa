"""The quickstart runs against the real server (with and without a key) and is, whole, the
client manual's "Quickstart"; the manual's loop of Vizier verbs and the project README's snippet
run as they are shown."""
import os
import pathlib
import re
import subprocess
import sys

from conftest import API_KEY, Server

ROOT = pathlib.Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "clients" / "python" / "examples" / "quickstart.py"
SRC = ROOT / "clients" / "python" / "src"


def run(*args: str) -> "subprocess.CompletedProcess[str]":
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, str(QUICKSTART), *args], env=env, capture_output=True, text=True, timeout=300)


def test_the_quickstart_runs_30_trials_and_prints_the_best(server: Server) -> None:
    out = run("--url", server.url)
    assert out.returncode == 0, out.stderr
    assert re.fullmatch(r"best trial \d+: accuracy 0\.\d{4} with \{'optimizer': .*\}\n", out.stdout), out.stdout
    again = run("--url", server.url)  # the same study, loaded: 30 more trials
    assert again.returncode == 0, again.stderr


def test_the_quickstart_with_a_key(keyed_server: Server) -> None:
    assert run("--url", keyed_server.url, "--project", "team-a").returncode != 0
    out = run("--url", keyed_server.url, "--project", "team-a", "--api-key", API_KEY)
    assert out.returncode == 0, out.stderr


def quickstart_blocks() -> "list[str]":
    """The Python blocks of the client manual's "Quickstart" section."""
    manual = (ROOT / "clients" / "python" / "README.md").read_text()
    section = manual.split("## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_manual_shows_the_quickstart_whole() -> None:
    assert QUICKSTART.read_text() in quickstart_blocks()


def test_the_manual_s_own_loop_runs(server: Server) -> None:
    """The manual's loop of Vizier verbs, run as it is on the quickstart's study."""
    assert run("--url", server.url).returncode == 0
    loop = next(b for b in quickstart_blocks() if b.startswith("for trial in study.suggest("))
    import bo_client as bo

    study = bo.Client(server.url, project="demo").load_study("quickstart")
    exec(compile(loop, "clients/python/README.md", "exec"), {"study": study})
    assert len(list(study.trials())) == 32


def test_the_project_readme_s_snippet_runs(server: Server) -> None:
    """The project README's Python snippet, with a `train` of its own, against the real server
    (the snippet's URL is the README's; the test's server stands in for it)."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Clients\n", 1)[1].split("\n## ", 1)[0]
    snippet = re.findall(r"```python\n(.*?)```", section, re.S)[0]
    assert "http://127.0.0.1:8080" in snippet
    snippet = snippet.replace("http://127.0.0.1:8080", server.url)

    def train(learning_rate: float, layers: int) -> float:
        assert 1e-5 <= learning_rate <= 0.1 and 1 <= layers <= 8
        return 0.9 - 0.01 * abs(layers - 4)

    exec(compile(snippet, "README.md", "exec"), {"train": train})
    import bo_client as bo

    study = bo.Client(server.url, project="demo").load_study("mnist")
    assert len([t for t in study.trials() if t.state == "SUCCEEDED"]) == 30
