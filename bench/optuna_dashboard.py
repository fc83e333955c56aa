"""optuna-dashboard beside bo's dashboard (bench/dashboard.py): the same 6-parameter study of 1k,
10k and 100k trials, written to an Optuna journal file, served by optuna-dashboard, and its study
page loaded in headless Chromium. "First chart" is the history drawn (a Plotly plot holding its
points); "all" is every plot of the page drawn (history, importance, timeline). Best of 3 loads
of a server that has read the journal once, and the first load of a fresh server.

    python3 -m venv target/od-venv && target/od-venv/bin/pip install -r bench/optuna_dashboard_requirements.txt
    target/od-venv/bin/python bench/optuna_dashboard.py [--sizes 1000,10000,100000]

Prints a Markdown table for docs/journal/benchmarks.md."""
import argparse
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from playwright.sync_api import sync_playwright

DISTRIBUTIONS = {
    "lr": FloatDistribution(1e-5, 1.0, log=True), "momentum": FloatDistribution(0.0, 0.99), "dropout": FloatDistribution(0.0, 0.5),
    "wd": FloatDistribution(1e-6, 1e-2, log=True), "layers": IntDistribution(1, 12), "act": CategoricalDistribution(["relu", "gelu", "tanh"]),
}


def fill(path, size):
    """The study bench/dashboard.py creates in bo: the same parameters and values, trial by trial."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=JournalStorage(JournalFileBackend(path)), study_name=f"dashboard-{size}", direction="minimize")
    trials = []
    for i in range(size):
        lr = 10 ** (-5 + 5 * ((i * 0.6180339887) % 1))
        params = {"lr": lr, "momentum": (i * 0.7548776662) % 0.99, "dropout": (i * 0.5698402910) % 0.5,
                  "wd": 10 ** (-6 + 4 * ((i * 0.4142135) % 1)), "layers": 1 + i % 12, "act": ["relu", "gelu", "tanh"][i % 3]}
        loss = (math.log10(lr) + 2.5) ** 2 + 0.3 * (params["act"] == "tanh") + 0.02 * params["layers"] + 0.1 * ((i * 0.31) % 1)
        trials.append(optuna.trial.create_trial(params=params, distributions=DISTRIBUTIONS, value=loss))
    started = time.monotonic()
    study.add_trials(trials)
    return time.monotonic() - started


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(path):
    port = free_port()
    binary = os.path.join(os.path.dirname(sys.executable), "optuna-dashboard")
    proc = subprocess.Popen([binary, "--port", str(port), "--host", "127.0.0.1", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/studies").read()
            return proc, base
        except OSError:
            assert time.monotonic() < deadline and proc.poll() is None, "optuna-dashboard did not start"
            time.sleep(0.2)


DRAWN = "(n) => [...document.querySelectorAll('.js-plotly-plot')].filter((p) => p.querySelector('.point')).length >= n"


def load(browser, base, timeout_ms=600_000):
    """Seconds to the first plot drawn and to every plot drawn."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    started = time.monotonic()
    page.goto(f"{base}/dashboard/studies/0")
    page.wait_for_function(DRAWN, arg=1, timeout=timeout_ms)
    first = time.monotonic() - started
    page.wait_for_function(DRAWN, arg=3, timeout=timeout_ms)
    every = time.monotonic() - started
    context.close()
    return first, every


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--chromium", default=os.environ.get("BO_CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        for size in [int(s) for s in args.sizes.split(",")]:
            path = os.path.join(tmp, f"journal-{size}.log")
            filled = fill(path, size)
            proc, base = serve(path)
            try:
                cold = load(browser, base)
                warm = [load(browser, base) for _ in range(3)]
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            first, every = min(w[0] for w in warm), min(w[1] for w in warm)
            rows.append((size, filled, cold, first, every))
            print(f"{size}: fill {filled:.1f} s, first load {cold[0]:.2f} / {cold[1]:.2f} s, best of 3 {first:.2f} / {every:.2f} s", flush=True)
        browser.close()
    print("| trials | fill (journal) | first load: first chart / all | best of 3: first chart | best of 3: all charts |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for size, filled, cold, first, every in rows:
        print(f"| {size:,} | {filled:.1f} s | {cold[0]:.2f} s / {cold[1]:.2f} s | {first:.2f} s | {every:.2f} s |")


if __name__ == "__main__":
    main()
