"""The table of bench/real_curves.sh: per problem and arm, the median over seeds of the
incumbent's final validation error once 10 %, 25 %, 50 % and 100 % of the budget is spent (— when
no trial has been trained fully by then), the trials run and the share trained fully, and the
optimiser's own seconds per trial (suggest, measurements, stopping checks, over HTTP for bo)."""
import glob
import json
import statistics
import sys

FRACTIONS = (0.1, 0.25, 0.5, 1.0)


def at(trace, spent_limit):
    best = None
    for spent, incumbent in trace:
        if spent > spent_limit:
            break
        best = incumbent
    return best


def main(directory):
    rows = []
    for path in sorted(glob.glob(f"{directory}/*.json")):
        report = json.load(open(path))
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
        print(f"| {problem} | {arm} | {' | '.join(cells)} | {trials:g} | {full:.2f} | {seconds:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1])
