"""Two sets of `bo-bench curves --out` runs compared (A, then B), per (problem, rule) both hold:
the median regret of the fully trained incumbent at a tenth, a quarter, half and all of the epoch budget
for A and for B (inf: the median run had no fully trained trial yet), and per budget how many
pairs B has lower and higher, and the sums over the pairs.

    python3 bench/compare_curves.py A_DIR[,A_DIR2] B_DIR[,B_DIR2] [--rules asha,hyperband3]

Directories joined by commas are merged: their runs (seeds) of the same problem and rule are
pooled, so two halves of seeds (`--first-seed 0` and `5`) compare as one set of ten. A rule's
name is taken without the `--partials`/`--workers` suffix the harness adds to it. `--rename
FROM=TO` compares rule FROM of A with rule TO of B (two arms of one run: `A=B=DIR --rename
asha=asha-topk`).
"""
import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from curves_report import regret  # noqa: E402


def load(dirs):
    pooled = {}
    for d in dirs.split(","):
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            r = json.load(open(path))
            if "optimum" not in r:
                continue
            rule = re.sub(r"(-(predicted|last|mean|half-spread|cautious))?(-w\d+)?$", "", r["rule"])
            key = (r["problem"], rule)
            entry = pooled.setdefault(key, {"optimum": r["optimum"], "budget": r["budget"], "runs": []})
            entry["runs"] += r["runs"]
    return pooled


ap = argparse.ArgumentParser()
ap.add_argument("a")
ap.add_argument("b")
ap.add_argument("--rules", help="only these rules (of A), comma-separated")
ap.add_argument("--rename", action="append", default=[], help="FROM=TO: A's rule FROM against B's rule TO")
args = ap.parse_args()
a, b = load(args.a), load(args.b)
for pair in args.rename:
    old, new = pair.split("=")
    b = {(p, old if r == new else r): v for (p, r), v in b.items() if r != old or old == new}
keys = sorted(set(a) & set(b))
if args.rules:
    keys = [k for k in keys if k[1] in args.rules.split(",")]
if not keys:
    raise SystemExit("no (problem, rule) is in both")
budget = a[keys[0]]["budget"]
marks = [budget // 10, budget // 4, budget // 2, budget]
print(f"| problem | rule | seeds | " + " | ".join(f"A @{m} | B @{m}" for m in marks) + " |")
print("| --- | --- | ---: | " + "---: | " * (2 * len(marks)))
tally = {m: [0.0, 0.0, 0, 0] for m in marks}
for k in keys:
    cells = []
    for m in marks:
        ra, rb = regret(a[k]["runs"], a[k]["optimum"], m), regret(b[k]["runs"], b[k]["optimum"], m)
        cells += [f"{ra:.4f}", f"{rb:.4f}"]
        t = tally[m]
        t[0] += ra
        t[1] += rb
        t[2] += rb < ra
        t[3] += rb > ra
    print(f"| {k[0]} | {k[1]} | {len(a[k]['runs'])}/{len(b[k]['runs'])} | " + " | ".join(cells) + " |")
print()
for m in marks:
    sa, sb, better, worse = tally[m]
    print(f"@{m} epochs: B lower in {better} of {len(keys)} pairs, higher in {worse}; summed regret A {sa:.3f}, B {sb:.3f}")
