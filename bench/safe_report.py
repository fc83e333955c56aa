"""The table of bench/safe.sh: per problem and method, the median regret of the best safe trial
at a quarter, half and all of the budget (inf: the median run had no safe trial yet), the
fraction of all trials that were safe, and the median milliseconds per suggestion."""
import json
import math
import os
import statistics
import sys

out, budget = sys.argv[1], int(sys.argv[2])
problems = ["gramacy", "townsend", "branin_disk", "hartmann6_l1"]
methods = [
    ("bo GP_BANDIT", "GP_BANDIT-0/{}.json"),
    ("bo GP_BANDIT, target 0.8", "GP_BANDIT-0.8/{}.json"),
    ("Optuna GPSampler", "optuna-gp-{}.json"),
    ("Optuna TPE", "optuna-tpe-{}.json"),
    ("random", "optuna-random-{}.json"),
]
marks = [max(budget // 4, 1), max(budget // 2, 1), budget]
print(f"| problem | method | {' | '.join(f'@{m}' for m in marks)} | safe fraction | ms / suggestion |")
print("| --- | --- | " + "---: | " * len(marks) + "---: | ---: |")
for p in problems:
    for name, pattern in methods:
        path = os.path.join(out, pattern.format(p))
        if not os.path.exists(path):
            continue
        runs = json.load(open(path))["runs"]
        at = lambda t: statistics.median(math.inf if r["regret"][t - 1] is None else r["regret"][t - 1] for r in runs)
        safe = sum(sum(r["safe"]) for r in runs) / sum(len(r["safe"]) for r in runs)
        ms = 1e3 * statistics.median(s for r in runs for s in r["suggest_seconds"])
        print(f"| {p} | {name} | {' | '.join(f'{at(m):.3g}' for m in marks)} | {safe:.2f} | {ms:.0f} |")
