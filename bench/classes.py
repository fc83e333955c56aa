"""The problem-class table of docs/journal/benchmarks.md: each optimiser's median rank and median
normalised regret per class of problems, and the per-problem table behind it.

    (cd docs/results && tar xzf 2026-11-26-classes.tar.gz)
    python3 bench/classes.py docs/results/2026-11-26-classes

Reads, for each problem of CLASSES, bo's `<dir>/<run>/<problem>.json` (written by `bo-bench suite
--out <dir>/<run>`) for each bo run named in BO_RUNS — or, for class 5, which bo answers over HTTP,
`<dir>/peers/<problem>_bo-<run>.json` — and the peers' `<dir>/peers/<problem>_<optimiser>.json`
(written by `bench/peers/run.sh --out`), all in `bo-bench run --out`'s shape. Per problem: the
median over seeds of the simple regret after the whole budget; the rank of each optimiser by that
median (ties share the better rank) — each bo run among the peers alone, the peers among
themselves and bo's `AUTO`; its normalised regret, that median divided by random
search's. Per class: the median of those over the problems bo and random search were run on, for
the optimisers with a result on every one of them ("—" for the others), and class 5 again over
the problems HEBO was run on when that is only some of them. Class 5's optima are not
known: its regret is measured from the best value any optimiser found on the problem. Last, the
problems where `AUTO` is more than 3× behind the best peer.

Standard library only.
"""
import argparse
import json
import os
import statistics

CLASSES = {
    "1. classic continuous": ["branin", "hartmann3", "hartmann6", "ackley5", "levy10", "rosenbrock4", "styblinski_tang8",
                              "michalewicz5", "six_hump_camel", "hartmann6_noisy"],
    "2. mixed and categorical": ["mixed_styblinski_tang8", "categorical_shift", "ackley_categorical", "integer_rosenbrock"],
    "3. conditional trees": ["jenatton", "jenatton_small", "addtree_toy", "jenatton3", "branching_nested_synthetic", "vgg16_tree"],
    "4. high-dimensional": ["branin_d25", "branin_d100", "hartmann6_d100", "additive_hartmann3x8_d24", "kandasamy_10_3_3",
                            "kandasamy_24_11_2"],
    # The same without D = 100, where GPSampler and HEBO were not run.
    "4. high-dimensional, D ≤ 25": ["branin_d25", "additive_hartmann3x8_d24", "kandasamy_10_3_3", "kandasamy_24_11_2"],
    "5. scikit-learn tuning": ["svm_breast_cancer", "random_forest_wine", "logistic_wine", "knn_breast_cancer", "mlp_wine",
                               "gradient_boosting_diabetes", "svr_diabetes", "which_classifier_breast_cancer",
                               "which_regressor_diabetes"],
}
# bo only (no Python mirror: its rotation comes from bo-core's generator).
BO_ONLY = ["branin_d25_rotated"]

BO_RUNS = [("bo `AUTO`", "AUTO"), ("bo `GP_BANDIT`", "GP_BANDIT")]
BO_NAMES = {name for name, _ in BO_RUNS}
# Optuna 5's default TPE is multivariate for one objective; `tpe_mv` adds group decomposition,
# which changes it on conditional spaces only.
PEERS = [("Optuna TPE (default)", "tpe"), ("Optuna TPE (group)", "tpe_mv"), ("Optuna `GPSampler`", "gp"), ("SMAC3", "smac"),
         ("HEBO", "hebo")]
RANDOM = ("random", "random")


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def final(report, best_known=0.0):
    """The median over seeds of the regret after the whole budget. A report without a known
    optimum holds the best value so far: its regret is measured from `best_known`."""
    b = report["budget"]
    offset = best_known if report.get("optimum", 0.0) is None else 0.0
    return statistics.median(max(run["regret"][b - 1] - offset, 0.0) for run in report["runs"])


def best_found(reports):
    """The best value any run of `reports` found (reports without a known optimum)."""
    return min((run["regret"][r["budget"] - 1] for r in reports if r is not None for run in r["runs"]), default=0.0)


def step_ms(report):
    return 1e3 * statistics.median(s for run in report["runs"] for s in run["suggest_seconds"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    args = ap.parse_args()

    def results(problem):
        out = [(name, load(f"{args.dir}/{run}/{problem}.json") or load(f"{args.dir}/peers/{problem}_bo-{run}.json"))
               for name, run in BO_RUNS]
        out += [(name, load(f"{args.dir}/peers/{problem}_{s}.json")) for name, s in PEERS]
        random = load(f"{args.dir}/peers/{problem}_random.json") or load(f"{args.dir}/RANDOM_SEARCH/{problem}.json")
        out.append((RANDOM[0], random))
        return out

    names = [n for n, _ in BO_RUNS] + [n for n, _ in PEERS] + [RANDOM[0]]
    summary = {}
    details = []
    behind = []
    seen = set()
    classes = dict(CLASSES)
    # HEBO, at seconds per suggestion, may have been run on part of class 5 only: that part too.
    sklearn = CLASSES["5. scikit-learn tuning"]
    with_hebo = [p for p in sklearn if os.path.exists(f"{args.dir}/peers/{p}_hebo.json")]
    if 0 < len(with_hebo) < len(sklearn):
        classes["5. scikit-learn tuning, where HEBO ran"] = with_hebo
    for cls, problems in classes.items():
        table = {p: dict(results(p)) for p in problems}
        known = {p: best_found(table[p].values()) for p in problems}
        # The problems bo and random search were run on; the optimisers with a result on all of them.
        counted = [p for p in problems if table[p][names[0]] is not None and table[p][RANDOM[0]] is not None]
        present = [n for n in names if counted and all(table[p][n] is not None for p in counted)]
        ranks = {n: [] for n in present}
        normalised = {n: [] for n in present}
        for p in counted:
            shown = p in seen
            seen.add(p)
            values = {n: final(table[p][n], known[p]) for n in present}
            random = values[RANDOM[0]]
            for n, v in values.items():
                # Each bo run is ranked among the peers alone (not against bo's other run), each
                # peer among the other peers and `AUTO`: the targets are `AUTO`'s among the peers.
                rivals = [m for m in values if m != n and m not in BO_NAMES] + ([] if n in BO_NAMES else [BO_RUNS[0][0]])
                ranks[n].append(1 + sum(values[m] < v for m in rivals))
                normalised[n].append(v / random if random > 0 else (0.0 if v == 0 else float("inf")))
            # The per-problem table shows every result there is, the class's optimisers or not.
            every = {n: final(table[p][n], known[p]) for n in names if table[p][n] is not None}
            best = min(every.values())
            peers = [every[n] for n, _ in PEERS if n in every]
            if not shown and peers and names[0] in every and every[names[0]] > 3 * min(peers):
                behind.append(f"{p}: {every[names[0]]:.2e} against the best peer's {min(peers):.2e}")
            cells = [("—" if n not in every else f"**{every[n]:.2e}**" if every[n] == best else f"{every[n]:.2e}") for n in names]
            gp = table[p]["Optuna `GPSampler`"]
            # bo's seeds, and in brackets the fewest any optimiser shown ran (the slowest peers').
            ours, fewest = len(table[p][names[0]]["runs"]), min(len(table[p][n]["runs"]) for n in every)
            seeds = f"{ours} ({fewest})" if fewest < ours else f"{ours}"
            if shown:
                continue
            details.append(f"| {cls.split('.')[0]} | {p} | {table[p][names[0]]['budget']} | {seeds} | " + " | ".join(cells)
                           + f" | {step_ms(table[p][names[0]]):.1f}" + (f" / {step_ms(gp):.0f} ms |" if gp else " ms / — |"))
        if counted:
            summary[cls] = (len(counted), {n: (statistics.median(ranks[n]), statistics.median(normalised[n])) for n in present})

    for p in BO_ONLY:
        rows = dict(results(p))
        if all(rows[n] is not None for n, _ in BO_RUNS):
            b = rows[BO_RUNS[0][0]]["budget"]
            others = " | ".join(f"{final(rows[n]):.2e}" if rows[n] else "—" for n in names[1:])
            details.append(f"| 4 | {p} | {b} | {len(rows[names[0]]['runs'])} | {final(rows[names[0]]):.2e} | {others} | "
                           f"{step_ms(rows[names[0]]):.1f} ms / — |")

    print("| class (problems) | " + " | ".join(names) + " |")
    print("| --- " * (len(names) + 1) + "|")
    for cls, (counted, per) in summary.items():
        cells = []
        best_rank = min(r for r, _ in per.values())
        for n in names:
            if n not in per:
                cells.append("—")
                continue
            rank, norm = per[n]
            text = f"{rank:g} / {norm:.2g}"
            cells.append(f"**{text}**" if rank == best_rank else text)
        print(f"| {cls} ({counted}) | " + " | ".join(cells) + " |")
    print()
    print("| class | problem | budget | seeds | " + " | ".join(names) + " | time per step, AUTO / GPSampler |")
    print("| --- " * (len(names) + 5) + "|")
    for line in details:
        print(line)
    print()
    print("More than 3× behind the best peer: " + ("; ".join(behind) if behind else "none") + ".")


if __name__ == "__main__":
    main()
