"""Measures the dashboard on studies of 1k, 10k and 100k trials against a running bo-server:
time to fill each study (CreateTrial, 8 clients), the importance computation, and in headless
Chromium the study page's time to its first chart and to all of them, with the bytes it moved.

    python bench/dashboard.py --url http://127.0.0.1:8080 [--sizes 1000,10000,100000]

Needs Playwright (tests/dashboard/requirements.txt) and Debian's chromium. Prints a Markdown
table for docs/journal/benchmarks.md."""
import argparse
import concurrent.futures
import json
import math
import os
import time
import urllib.request

from playwright.sync_api import sync_playwright

LOC = "/v1/projects/bench/locations/dashboard"


def call(url, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request) as r:
        return json.loads(r.read() or b"{}")


def fill(url, size):
    spec = {"metrics": [{"metricId": "loss", "goal": "MINIMIZE"}], "algorithm": "RANDOM_SEARCH", "parameters": [
        {"parameterId": "lr", "doubleValueSpec": {"minValue": 1e-5, "maxValue": 1.0}, "scaleType": "UNIT_LOG_SCALE"},
        {"parameterId": "momentum", "doubleValueSpec": {"minValue": 0.0, "maxValue": 0.99}},
        {"parameterId": "dropout", "doubleValueSpec": {"minValue": 0.0, "maxValue": 0.5}},
        {"parameterId": "wd", "doubleValueSpec": {"minValue": 1e-6, "maxValue": 1e-2}, "scaleType": "UNIT_LOG_SCALE"},
        {"parameterId": "layers", "integerValueSpec": {"minValue": "1", "maxValue": "12"}},
        {"parameterId": "act", "categoricalValueSpec": {"values": ["relu", "gelu", "tanh"]}}]}
    study = call(url, "POST", f"{LOC}/studies", {"displayName": f"dashboard-{size}", "studySpec": spec})["name"].rsplit("/", 1)[1]
    overview = call(url, "GET", f"{LOC}/studies:overview?pageSize=1000")["studies"]
    existing = sum(next(o for o in overview if o["study"]["name"].endswith(f"/{study}"))["trialCounts"].values())

    def one(i):
        g = (i * 0.6180339887) % 1
        lr = 10 ** (-5 + 5 * g)
        params = {"lr": lr, "momentum": (i * 0.7548776662) % 0.99, "dropout": (i * 0.5698402910) % 0.5,
                  "wd": 10 ** (-6 + 4 * ((i * 0.4142135) % 1)), "layers": 1 + i % 12, "act": ["relu", "gelu", "tanh"][i % 3]}
        loss = (math.log10(lr) + 2.5) ** 2 + 0.3 * (params["act"] == "tanh") + 0.02 * params["layers"] + 0.1 * ((i * 0.31) % 1)
        body = {"parameters": [{"parameterId": k, "value": v} for k, v in params.items()],
                "finalMeasurement": {"metrics": [{"metricId": "loss", "value": loss}]}}
        call(url, "POST", f"{LOC}/studies/{study}/trials", body)

    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(existing, size)))
    return study, time.monotonic() - started, size - existing


def importance_time(url, study):
    started = time.monotonic()
    while True:
        imp = call(url, "GET", f"{LOC}/studies/{study}/importance")
        if not imp["computing"]:
            return time.monotonic() - started
        time.sleep(0.05)


def page_times(browser, url, study, runs=3):
    best = None
    for _ in range(runs):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        moved = [0]
        page.on("requestfinished", lambda r: moved.__setitem__(0, moved[0] + r.sizes()["responseBodySize"] + r.sizes()["responseHeadersSize"]))
        context.add_init_script("localStorage.setItem('bo.project', 'bench'); localStorage.setItem('bo.location', 'dashboard');")
        started = time.monotonic()
        page.goto(f"{url}/dashboard/#/studies/{study}")
        page.wait_for_selector("#history[data-drawn=true]", timeout=120000)
        first = time.monotonic() - started
        for selector in ["#importance[data-drawn=true]", ".chart[data-drawn=true] #parcoords", "#curves[data-drawn=true]", "#trials tbody tr td"]:
            page.wait_for_selector(selector, state="attached", timeout=120000)
        done = time.monotonic() - started
        context.close()
        if best is None or done < best[1]:
            best = (first, done, moved[0])
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--chromium", default=os.environ.get("BO_CHROMIUM", "/usr/bin/chromium"))
    args = ap.parse_args()
    rows = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        for size in [int(s) for s in args.sizes.split(",")]:
            study, fill_s, added = fill(args.url, size)
            imp_s = importance_time(args.url, study)
            first, done, moved = page_times(browser, args.url, study)
            rows.append((size, added, fill_s, imp_s, first, done, moved))
            print(f"{size}: filled {added} in {fill_s:.1f} s, importance {imp_s:.2f} s, first chart {first:.2f} s, all {done:.2f} s, {moved / 1e6:.2f} MB", flush=True)
        browser.close()
    print("\n| trials | importance (first request to result) | first chart | all charts and the table | bytes moved |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for size, _, _, imp_s, first, done, moved in rows:
        print(f"| {size:,} | {imp_s:.2f} s | {first:.2f} s | {done:.2f} s | {moved / 1e6:.2f} MB |")


if __name__ == "__main__":
    main()
