"""The package builds as a wheel with the project's own files and works installed in a fresh
virtual environment: typed (py.typed inside), no dependencies pulled, the quickstart runs."""
import pathlib
import subprocess
import sys
import venv

from conftest import Server

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_wheel_installs_alone_and_runs_the_quickstart(server: Server, tmp_path: pathlib.Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(ROOT / "clients" / "python")],
        check=True,
    )
    [wheel] = list(wheels.glob("bo_client-*.whl"))
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "bo_client/py.typed" in names and "bo_client/ray.py" in names
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index", "--disable-pip-version-check", str(wheel)], check=True)
    out = subprocess.run(
        [str(python), str(ROOT / "clients" / "python" / "examples" / "quickstart.py"), "--url", server.url],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )
    assert out.returncode == 0 and out.stdout.startswith("best trial"), out.stderr
    where = subprocess.run([str(python), "-c", "import bo_client; print(bo_client.__file__)"], capture_output=True, text=True, cwd=tmp_path)
    assert str(env) in where.stdout
