"""Whether each arm of `bo-bench stopping-pool --out FILE` differs from a baseline arm beyond seed
noise: per pool, the Mann-Whitney U test (two-sided) of the per-seed regrets of the fully
trained incumbent at a quarter, half and all of the budget (a run with no fully trained trial yet
counts as the worst), with the medians and the fewest full trainings in a run.

    python bench/stopping_pool_mwu.py FILE [--baseline median]

Needs scipy (the peers' environment has it: bench/peers/requirements.txt)."""
import argparse
import json
import math
import statistics

from scipy.stats import mannwhitneyu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--baseline", default="median")
    args = ap.parse_args()
    with open(args.file) as f:
        rows = json.load(f)
    by = {(r["pool"], r["arm"]): r["runs"] for r in rows}
    print(f"| pool | arm | regret ¼ (p) | regret ½ (p) | regret (p) | fewest full | against {args.baseline} |")
    print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
    for (pool, arm), runs in by.items():
        base = by.get((pool, args.baseline))
        if base is None or arm == args.baseline:
            continue
        cells, verdicts = [], []
        for k in range(3):
            a = [math.inf if r["regret"][k] is None else r["regret"][k] for r in runs]
            b = [math.inf if r["regret"][k] is None else r["regret"][k] for r in base]
            p = mannwhitneyu(a, b, alternative="two-sided").pvalue
            ma, mb = statistics.median(a), statistics.median(b)
            cells.append(f"{ma:.4f} / {mb:.4f} ({p:.2g})")
            verdicts.append("better" if p < 0.05 and ma < mb else "worse" if p < 0.05 and ma > mb else "level")
        fewest = min(r["full"] for r in runs)
        print(f"| {pool} | {arm} | {' | '.join(cells)} | {fewest} | {', '.join(verdicts)} |")


if __name__ == "__main__":
    main()
