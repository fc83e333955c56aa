"""The table of bench/curves.sh: per learning-curve problem, optimiser and early-stopping rule, the
median regret (best final accuracy of any configuration less the true final accuracy of the fully
trained incumbent) once a tenth, a quarter, half and all of the epoch budget is spent (inf: the
median run had no fully trained trial yet), the median number of trials run, the share of trials
trained fully, and the rule's milliseconds per trial.

    python3 bench/curves_report.py DIR[,DIR2...]

Directories joined by commas are pooled: runs of the same problem, optimiser and rule (two halves
of seeds) count as one set."""
import glob
import json
import math
import os
import statistics
import sys


def at(run, epochs):
    """The incumbent's true final accuracy once `epochs` were spent (None before a full trial)."""
    value = None
    for spent, incumbent in zip(run["spent"], run["incumbent"]):
        if spent > epochs:
            break
        if incumbent is not None:
            value = incumbent
    return value


def regret(runs, optimum, epochs):
    """The median over `runs` of the optimum less the incumbent's accuracy at `epochs` (inf: no
    fully trained trial yet)."""
    return statistics.median(math.inf if at(run, epochs) is None else optimum - at(run, epochs) for run in runs)


def main():
    pooled = {}
    for out in sys.argv[1].split(","):
        for path in sorted(glob.glob(os.path.join(out, "*.json"))):
            r = json.load(open(path))
            key = (r["problem"], r["optimizer"], r["rule"])
            if key in pooled:
                pooled[key]["runs"] = pooled[key]["runs"] + r["runs"]
            else:
                pooled[key] = r
    reports = list(pooled.values())
    optimum = {r["problem"]: r["optimum"] for r in reports if "optimum" in r}
    order = ["none", "median", "hyperband", "sha", "asha", "hyperband2", "hyperband3", "decay", "convex"]
    reports.sort(key=lambda r: (r["problem"], r["optimizer"], order.index(r["rule"]) if r["rule"] in order else len(order), r["rule"]))
    budget = reports[0]["budget"]
    marks = [budget // 10, budget // 4, budget // 2, budget]
    print(f"| problem | optimiser | rule | {' | '.join(f'@{m} epochs' for m in marks)} | trials | trained fully | rule ms / trial |")
    print("| --- | --- | --- | " + "---: | " * len(marks) + "---: | ---: | ---: |")
    for r in reports:
        best = optimum[r["problem"]]
        runs = r["runs"]
        trials = sum(len(run["spent"]) for run in runs)
        full = sum(run["full"] for run in runs) / max(trials, 1)
        rule_ms = 1e3 * sum(run["rule_seconds"] for run in runs) / max(trials, 1)
        print(
            f"| {r['problem']} | {r['optimizer']} | {r['rule']} | {' | '.join(f'{regret(runs, best, m):.4f}' for m in marks)} "
            f"| {statistics.median(len(run['spent']) for run in runs):.0f} | {full:.2f} | {rule_ms:.1f} |"
        )


if __name__ == "__main__":
    main()
