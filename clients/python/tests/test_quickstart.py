"""The quickstart runs against the real server (with and without a key) and is, whole, the
README's "From Python"."""
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


def test_the_readme_shows_the_quickstart_whole() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## From Python\n", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert QUICKSTART.read_text() in blocks


def test_the_readme_s_own_loop_runs(server: Server) -> None:
    """The README's loop of Vizier verbs, run as it is on the quickstart's study."""
    assert run("--url", server.url).returncode == 0
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme.split("## From Python\n", 1)[1], re.S)
    loop = next(b for b in blocks if b.startswith("for trial in study.suggest("))
    import bo_client as bo

    study = bo.Client(server.url, project="demo").load_study("quickstart")
    exec(compile(loop, "README.md", "exec"), {"study": study})
    assert len(list(study.trials())) == 32
