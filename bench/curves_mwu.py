"""Whether two arms of the learning-curve runs differ at a budget beyond seed noise: the
Mann-Whitney U test (two-sided) of the per-seed regrets of the fully trained incumbent, each arm's
runs pooled from its JSON files (a run without a fully trained trial yet counts as the worst).

    python bench/curves_mwu.py --at 500 A.json[,A2.json] B.json[,B2.json]

Given directories instead (each a `--out` of `bo-bench curves`; several comma-separated, their
runs pooled), every problem and rule in both is compared at a quarter, half and all of its
budget, with the fewest and the median number of fully trained trials per run:

    python bench/curves_mwu.py BEFORE_S0,BEFORE_S10 AFTER_S0,AFTER_S10

Or every rule of one set of directories against one of its rules (its name as the JSON's
`rule` says it, `none-w4` for four workers), per problem, at the same fractions; `<` marks a
rule ahead (lower median regret) at p < 0.05:

    python bench/curves_mwu.py --against none DIR[,DIR2]

Needs scipy (the peers' environment has it: bench/peers/requirements.txt)."""
import argparse
import json
import math
import os
import statistics
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


def p_value(a, b):
    """Two-sided Mann-Whitney p of two lists of regrets, a run with no fully trained trial
    counted as worse than any with one."""
    finite = [v for v in a + b if v != math.inf]
    worst = (max(finite) if finite else 0.0) + 1.0
    a, b = [min(v, worst) for v in a], [min(v, worst) for v in b]
    return mannwhitneyu(a, b, alternative="two-sided").pvalue


def compare_dirs(a_dirs, b_dirs):
    def load(dirs):
        out = {}
        for d in dirs:
            for name in sorted(os.listdir(d)):
                if name.endswith(".json"):
                    out.setdefault(name, []).append(json.load(open(os.path.join(d, name))))
        return out

    ra, rb = load(a_dirs), load(b_dirs)
    print("| problem and rule | @25 % A / B (p) | @50 % A / B (p) | @100 % A / B (p) | fewest full A / B | median full A / B |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in sorted(set(ra) & set(rb)):
        optimum, budget = ra[name][0]["optimum"], ra[name][0]["budget"]
        cells = []
        for at_ in (budget // 4, budget // 2, budget):
            a, b = regrets(ra[name], at_, optimum), regrets(rb[name], at_, optimum)
            cells.append(f"{statistics.median(a):.3f} / {statistics.median(b):.3f} ({p_value(a, b):.2f})")
        full = [[run["full"] for r in reports for run in r["runs"]] for reports in (ra[name], rb[name])]
        cells.append(f"{min(full[0])} / {min(full[1])}")
        cells.append(f"{statistics.median(full[0]):g} / {statistics.median(full[1]):g}")
        print(f"| {name[:-5]} | " + " | ".join(cells) + " |")


def load_reports(dirs):
    """Every report in `dirs`, grouped by (problem, rule), each group's runs pooled."""
    out = {}
    for d in dirs:
        for name in sorted(os.listdir(d)):
            if name.endswith(".json"):
                report = json.load(open(os.path.join(d, name)))
                out.setdefault((report["problem"], report["rule"]), []).append(report)
    return out


def compare_against(dirs, against):
    reports = load_reports(dirs)
    print(f"| problem | rule | @25 % rule / {against} (p) | @50 % | @100 % | fewest full |")
    print("| --- | --- | --- | --- | --- | --- |")
    for (problem, rule), group in sorted(reports.items()):
        base = reports.get((problem, against))
        if rule == against or base is None:
            continue
        optimum, budget = group[0]["optimum"], group[0]["budget"]
        cells = []
        for at_ in (budget // 4, budget // 2, budget):
            a, b = regrets(group, at_, optimum), regrets(base, at_, optimum)
            p = p_value(a, b)
            mark = " <" if p < 0.05 and statistics.median(a) < statistics.median(b) else ""
            cells.append(f"{statistics.median(a):.4f} / {statistics.median(b):.4f} ({p:.3f}){mark}")
        cells.append(str(min(run["full"] for r in group for run in r["runs"])))
        print(f"| {problem} | {rule} | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b", nargs="?")
    ap.add_argument("--at", type=int, help="epochs spent (with JSON files)")
    ap.add_argument("--against", help="compare every rule of the directories A with this one")
    args = ap.parse_args()
    if args.against is not None:
        compare_against(args.a.split(","), args.against)
        return
    if args.b is None:
        ap.error("two sets to compare, or --against RULE")
    if all(os.path.isdir(p) for p in args.a.split(",") + args.b.split(",")):
        compare_dirs(args.a.split(","), args.b.split(","))
        return
    if args.at is None:
        ap.error("--at is needed when comparing JSON files")
    ra, rb = ([json.load(open(p)) for p in files.split(",")] for files in (args.a, args.b))
    optimum = next(r["optimum"] for r in ra + rb if "optimum" in r)
    a, b = regrets(ra, args.at, optimum), regrets(rb, args.at, optimum)
    p = p_value(a, b)
    print(f"@{args.at} epochs: A {len(a)} runs, B {len(b)} runs; two-sided p = {p:.2f}")


if __name__ == "__main__":
    main()
