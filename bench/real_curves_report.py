"""The table of bench/real_curves.sh: per problem and arm, the median over seeds of the
incumbent's final validation error once 10 %, 25 %, 50 % and 100 % of the budget is spent (— when
no trial has been trained fully by then), the trials run and the share trained fully, and the
optimiser's own seconds per trial (suggest, measurements, stopping checks, over HTTP for bo; "—"
for Ray Tune's arms, whose scheduler and searcher run inside Tune's own loop, not timed here).

A second table answers issue 45's other question, compute to quality: per problem, the best
peer's (an arm without bo in it) median final error, and for each arm the share of the budget
after which its incumbent is at least that good — the median over seeds, a seed that never gets
there counting as never (shown "—" when most seeds do not).

    python3 bench/real_curves_report.py DIR [DIR …]   # every *.json in the directories

Whether two arms differ at a fraction of the budget beyond seed noise: the two-sided Mann-Whitney
U test of their per-seed errors (a seed with no fully trained trial yet counts as error 1; needs
scipy, which the peers' venvs have):

    python bench/real_curves_report.py --mwu 0.25 A.json B.json"""
import glob
import json
import statistics
import sys

FRACTIONS = (0.1, 0.25, 0.5, 1.0)


def is_bo(arm):
    """bo's arms: its rules over HTTP, and its searcher under Ray Tune's ASHA."""
    return arm.startswith("bo:") or arm == "ray:asha-bo"


def at(trace, spent_limit):
    best = None
    for spent, incumbent in trace:
        if spent > spent_limit:
            break
        best = incumbent
    return best


def first_reach(trace, target):
    """The steps spent when the incumbent first was at most `target`, or None."""
    for spent, incumbent in trace:
        if incumbent is not None and incumbent <= target + 1e-12:
            return spent
    return None


def reach_table(reports):
    """Per problem: the best peer's final error, and each arm's median share of the budget to
    reach it."""
    print()
    print("| problem | best peer (final error) | arm | share of the budget to reach it |")
    print("| --- | --- | --- | ---: |")
    problems = sorted({r["problem"] for r in reports})
    for problem in problems:
        mine = [r for r in reports if r["problem"] == problem]
        finals = {}
        for r in mine:
            values = [at(run["trace"], r["budget"]) for run in r["runs"]]
            known = [v for v in values if v is not None]
            if len(known) * 2 > len(values):
                finals[r["arm"]] = statistics.median(known)
        peers = {arm: v for arm, v in finals.items() if not is_bo(arm)}
        if not peers:
            continue
        best_arm = min(peers, key=peers.get)
        target = peers[best_arm]
        for r in mine:
            shares = [first_reach(run["trace"], target) for run in r["runs"]]
            shares = sorted(float("inf") if s is None else s / r["budget"] for s in shares)
            share = statistics.median(shares)
            cell = f"{share:.2f}" if share != float("inf") else "—"
            print(f"| {problem} | {best_arm} ({target:.4f}) | {r['arm']} | {cell} |")


def main(directories):
    rows = []
    reports = []
    for path in sorted(p for d in directories for p in glob.glob(f"{d}/*.json")):
        report = json.load(open(path))
        reports.append(report)
        budget = report["budget"]
        cells = []
        for f in FRACTIONS:
            values = [at(r["trace"], f * budget) for r in report["runs"]]
            known = [v for v in values if v is not None]
            cells.append(f"{statistics.median(known):.4f}" if len(known) * 2 > len(values) else "—")
        runs = report["runs"]
        trials = statistics.median(r["trials"] for r in runs)
        full = statistics.median(r["full"] / max(r["trials"], 1) for r in runs)
        seconds = statistics.median(r["optimiser_seconds"] / max(r["trials"], 1) for r in runs)
        rows.append((report["problem"], report["arm"], cells, trials, full, seconds))
    print("| problem | arm | @10 % | @25 % | @50 % | @100 % | trials | trained fully | optimiser s / trial |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for problem, arm, cells, trials, full, seconds in rows:
        timed = "—" if arm.startswith("ray:") else f"{seconds:.3f}"
        print(f"| {problem} | {arm} | {' | '.join(cells)} | {trials:g} | {full:.2f} | {timed} |")
    reach_table(reports)


def mwu(fraction, a, b):
    from scipy.stats import mannwhitneyu

    def errors(path):
        report = json.load(open(path))
        values = [at(run["trace"], fraction * report["budget"]) for run in report["runs"]]
        return report["arm"], [1.0 if v is None else v for v in values]

    (arm_a, x), (arm_b, y) = errors(a), errors(b)
    p = mannwhitneyu(x, y, alternative="two-sided").pvalue
    print(f"at {fraction:g} of the budget: {arm_a} median {statistics.median(x):.4f}, {arm_b} median "
          f"{statistics.median(y):.4f}, p = {p:.3f} ({len(x)} and {len(y)} seeds)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--mwu"]:
        mwu(float(sys.argv[2]), sys.argv[3], sys.argv[4])
    else:
        main(sys.argv[1:])
