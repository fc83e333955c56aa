"""Whether two arms of the learning-curve runs differ at a budget beyond seed noise: the
Mann-Whitney U test (two-sided) of the per-seed regrets of the fully trained incumbent, each arm's
runs pooled from its JSON files (a run without a fully trained trial yet counts as the worst).

    python bench/curves_mwu.py --at 500 A.json[,A2.json] B.json[,B2.json]

Needs scipy (the peers' environment has it: bench/peers/requirements.txt)."""
import argparse
import json
import math
import os
import sys

from scipy.stats import mannwhitneyu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from curves_report import at  # noqa: E402


def regrets(reports, epochs, optimum):
    out = []
    for report in reports:
        for run in report["runs"]:
            value = at(run, epochs)
            out.append(math.inf if value is None else optimum - value)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--at", type=int, required=True, help="epochs spent")
    args = ap.parse_args()
    ra, rb = ([json.load(open(p)) for p in files.split(",")] for files in (args.a, args.b))
    optimum = next(r["optimum"] for r in ra + rb if "optimum" in r)
    a, b = regrets(ra, args.at, optimum), regrets(rb, args.at, optimum)
    worst = max(v for v in a + b if v != math.inf) + 1.0
    a, b = [min(v, worst) for v in a], [min(v, worst) for v in b]
    p = mannwhitneyu(a, b, alternative="two-sided").pvalue
    print(f"@{args.at} epochs: A {len(a)} runs, B {len(b)} runs; two-sided p = {p:.2f}")


if __name__ == "__main__":
    main()
