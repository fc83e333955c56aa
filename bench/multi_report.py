"""The table of bench/multi.sh: median hypervolume regret at 25, 50 and 100 evaluations and the
median seconds per suggestion after the 50th, per problem and method."""
import json
import os
import statistics
import sys

out = sys.argv[1]
problems = ["branin_currin", "zdt1", "zdt2", "dtlz2", "model_choice"]
methods = [
    ("bo GP_BANDIT", "GP_BANDIT/{}.json"),
    ("bo ADD_TREE", "ADD_TREE/{}.json"),
    ("Optuna GPSampler", "optuna-gp-{}.json"),
    ("Optuna NSGA-II", "optuna-nsga2-{}.json"),
]
print("| problem | method | @25 | @50 | @100 | ms / suggestion |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for p in problems:
    for name, pattern in methods:
        path = os.path.join(out, pattern.format(p))
        if not os.path.exists(path):
            continue
        runs = json.load(open(path))["runs"]
        at = lambda t: statistics.median(r["hv_regret"][t - 1] for r in runs if len(r["hv_regret"]) >= t)
        late = [s for r in runs for s in r["suggest_seconds"][50:]]
        print(f"| {p} | {name} | {at(25):.3g} | {at(50):.3g} | {at(100):.3g} | {1e3 * statistics.median(late):.0f} |")
