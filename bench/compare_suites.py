"""Seed-by-seed comparison of two `bo-bench suite --out` directories (A, then B).

For every problem both hold: on how many seeds B's final simple regret is below A's and above
it, the mean of log10 regret and the mean regret for each, and the mean over seeds of the median
suggest time. A change of default is adopted when B is within seed spread of A (docs/journal/benchmarks.md).

    python3 bench/compare_suites.py RESULTS/A RESULTS/B
"""

import json
import math
import os
import statistics
import sys


def finals(path):
    runs = json.load(open(path))["runs"]
    return {r["seed"]: r for r in runs}


def main(a, b):
    for name in sorted(os.listdir(a)):
        if not name.endswith(".json") or not os.path.exists(os.path.join(b, name)):
            continue
        ra, rb = finals(os.path.join(a, name)), finals(os.path.join(b, name))
        seeds = sorted(set(ra) & set(rb))
        fa = {s: ra[s]["regret"][-1] for s in seeds}
        fb = {s: rb[s]["regret"][-1] for s in seeds}
        tol = lambda v: 1e-12 * (1 + abs(v))
        better = sum(1 for s in seeds if fb[s] < fa[s] - tol(fa[s]))
        worse = sum(1 for s in seeds if fb[s] > fa[s] + tol(fa[s]))
        log_mean = lambda f: statistics.mean(math.log10(max(f[s], 1e-12)) for s in seeds)
        ms = lambda r: 1e3 * statistics.mean(statistics.median(r[s]["suggest_seconds"]) for s in seeds)
        print(
            f"{name[:-5]:26s} seeds {len(seeds):2d}: B better {better:2d}, worse {worse:2d} | "
            f"mean log10 regret {log_mean(fa):7.3f} -> {log_mean(fb):7.3f} | "
            f"mean regret {statistics.mean(fa.values()):9.4g} -> {statistics.mean(fb.values()):9.4g} | "
            f"suggest ms {ms(ra):6.2f} -> {ms(rb):6.2f}"
        )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
