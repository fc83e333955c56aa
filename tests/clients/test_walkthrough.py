"""Replays the curl walk-through of docs/api.md against a fresh server and checks that every command
prints exactly what the page shows (timestamps aside, which differ run to run)."""
import json
import pathlib
import re
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
WALKTHROUGH = ROOT / "docs" / "api.md"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def _transcript():
    """(command, expected output lines) pairs from the walk-through's console blocks."""
    text = WALKTHROUGH.read_text()
    pairs = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                pairs.append((line[2:], []))
            else:
                pairs[-1][1].append(line)
    return pairs


def test_walkthrough_prints_what_it_shows(server, tmp_path):
    text = WALKTHROUGH.read_text()
    (tmp_path / "study.json").write_text(text.split("```json\n", 1)[1].split("```", 1)[0])
    base = f"{server}/v1/projects/demo/locations/local"
    pairs = _transcript()
    assert len(pairs) >= 8
    for command, expected in pairs:
        got = subprocess.run(["bash", "-c", command], cwd=tmp_path, env={"B": base, "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True, check=True).stdout
        want = "\n".join(expected)
        assert json.loads(TIME.sub("T", got)) == json.loads(TIME.sub("T", want)), command
        assert TIME.sub("T", got.strip()) == TIME.sub("T", want.strip()), f"{command}: same JSON, different text"
