"""Markdown tables for docs/journal/benchmarks.md from a results directory.

    (cd docs/results && tar xzf 2026-11-23.tar.gz && tar xzf 2026-11-22.tar.gz)
    python3 bench/report.py docs/results/2026-11-23 --peers docs/results/2026-11-22

Reads `bo-ei/<problem>.json` and `bo-ucb/<problem>.json` (written by `bo-bench suite --out`),
and the peers' `<problem>_gp.json`, `<problem>_tpe.json` and `<problem>_random.json` (or bo's
`<problem>_bo_random.json` where Optuna's random search was not run), all of the shape
`bo-bench run --out` writes; a file missing from the directory is looked for in `--peers`. Prints the summary table (median simple regret after the whole
budget, best of each row in bold, median time per step over all steps and over the last
fifth, bo against GPSampler) and one detailed table per problem named with
`--detail` (after 25 / 50 / 100, time per step, seeds within `--solved`).

Standard library only.
"""
import argparse
import json
import os
import statistics

PROBLEMS = ["branin", "hartmann3", "hartmann6", "ackley5", "levy10", "rosenbrock4", "styblinski_tang8", "jenatton"]


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def at(report, t):
    return statistics.median(run["regret"][t - 1] for run in report["runs"])


def step_ms(report, first=0):
    return 1e3 * statistics.median(s for run in report["runs"] for s in run["suggest_seconds"][first:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--peers", help="where to look for files missing from dir")
    ap.add_argument("--detail", default="branin:1e-4,hartmann6:1e-3",
                    help="problem:threshold pairs for the detailed tables")
    args = ap.parse_args()

    def find(name):
        found = load(f"{args.dir}/{name}")
        if found is None and args.peers:
            found = load(f"{args.peers}/{name}")
        return found

    def designers(p):
        random = find(f"{p}_random.json")
        random_name = "Optuna `RandomSampler`"
        if random is None:
            random, random_name = find(f"{p}_bo_random.json"), "bo `RANDOM_SEARCH`"
        return [
            ("bo `GP_BANDIT` (EI, default)", find(f"bo-ei/{p}.json")),
            ("bo `GP_BANDIT` (UCB)", find(f"bo-ucb/{p}.json")),
            ("Optuna `GPSampler`", find(f"{p}_gp.json")),
            ("Optuna `TPESampler`", find(f"{p}_tpe.json")),
            (random_name, random),
        ]

    print("| problem | " + " | ".join(name for name, _ in designers("branin")[:4])
          + " | random | time per step, bo / GPSampler | last fifth of steps, bo / GPSampler |")
    print("| --- " * 8 + "|")
    for p in PROBLEMS:
        rows = designers(p)
        if any(r is None for _, r in rows):
            continue
        budget = rows[0][1]["budget"]
        values = [at(r, budget) for _, r in rows]
        best = min(values)
        cells = [f"**{v:.2e}**" if v == best else f"{v:.2e}" for v in values]
        bo, gp = rows[0][1], rows[2][1]
        late = budget * 4 // 5
        ratio = step_ms(gp, late) / step_ms(bo, late)
        print(f"| {p} | " + " | ".join(cells) + f" | {step_ms(bo):.1f} ms / {step_ms(gp):.0f} ms"
              + f" | {step_ms(bo, late):.1f} ms / {step_ms(gp, late):.0f} ms ({ratio:.0f}×) |")

    for item in args.detail.split(","):
        p, threshold = item.split(":")
        threshold = float(threshold)
        print(f"\n### {p} in detail (seeds solved: regret below {threshold:g} after 100)\n")
        print("| designer | after 25 | after 50 | after 100 | time per step | seeds solved |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, r in designers(p):
            if r is None:
                continue
            b = r["budget"]
            solved = sum(run["regret"][b - 1] < threshold for run in r["runs"])
            print(f"| {name} | {at(r, b // 4):.1e} | {at(r, b // 2):.1e} | {at(r, b):.1e} | {step_ms(r):.1f} ms | {solved}/{len(r['runs'])} |")


if __name__ == "__main__":
    main()
