"""The held-out suite's tables (bench/peers/heldout.py): per class and half (tuning, validation),
each optimiser's median rank and the problems where AUTO is behind the best peer.

    target/peers/venv/bin/python bench/heldout_report.py DIR   (heldout.py, which holds the halves, needs numpy)
    target/peers/venv/bin/python bench/heldout_report.py DIR --at 50   (every run scored at its first 50 steps)

DIR holds `<problem>_<optimiser>.json` files written by `bench/peers/run.sh --out` (bo as
`bo-AUTO`, `bo-GP_BANDIT`, …: the ':' of `bo:AUTO` written as '-'; runs with `--bo-pace fitted`
as `bo-AUTO@fitted`; runs with `--bo-declare-budget` as `bo-AUTO@fitted#60`, the budget their studies
declared; runs with a `--bo-config` are named with it, `bo-AUTO@fitted {"trustRegion":false}`).
Per problem, an optimiser's
score is the median over seeds of its final simple regret; for the real tuning tasks, whose
optimum is unknown, regret is measured from the best value any optimiser found on the problem.
Ranks per problem (ties share the better rank) are taken among the optimisers that ran on it;
a class's median rank is over the problems of the half every listed optimiser ran on.

BBOB (and mixed-integer BBOB, from the best value found) is scored the COCO way besides: for each
run, 51 targets f_opt + 10^k (k from 2 down to -8
in steps of 0.2); the ECDF area is the fraction of (run, target) pairs reached, averaged over
the evaluations 1..budget (1 is every target at the first evaluation), per function and then
over the functions of a dimension and half; the same area up to a quarter and a half of the
budget shows who leads at the earlier budgets. Where the runs count the distinct cells of the
discrete parameters they evaluated, each optimiser's median is shown beside.

Needs the peers venv (bench/peers/run.sh installs it) for heldout.py.
"""
import argparse
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers"))

TARGETS = [10 ** (2 - 0.2 * k) for k in range(51)]


def load(directory, at=None):
    """The runs in `directory` by problem and optimiser; with `at`, each run's first `at` steps
    scored as a run of that budget (an optimiser that is not told its budget behaves the same in
    its first steps; one that is, such as bo with a declared budget, must have run at `at`), and
    runs shorter than `at` left out."""
    runs = {}
    for path in glob.glob(os.path.join(directory, "*.json")):
        with open(path) as f:
            report = json.load(f)
        if at is not None:
            if report["budget"] < at:
                continue
            report["budget"] = at
            for run in report["runs"]:
                for key in ("regret", "suggest_seconds", "best_observed"):
                    if key in run:
                        run[key] = run[key][:at]
                run.pop("cells", None)  # counted over the whole run
        name = report["algorithm"].replace(":", "-")
        if report.get("pace", "free") != "free":
            name += "@" + report["pace"]
        if report.get("declared_budget"):
            name += f"#{report['declared_budget']}"
        if report.get("config"):
            name += " " + json.dumps(report["config"], separators=(",", ":"))
        runs.setdefault(report["problem"], {})[name] = report
    return runs


def auto_choices(runs, problems):
    """What `AUTO` proposed from at the end of each bo run that records it: {model: seeds} per
    problem and optimiser."""
    out = []
    for p in problems:
        for name, report in sorted(runs[p].items()):
            chosen = [(run.get("model") or {}).get("auto", {}).get("chosen") for run in report["runs"]]
            chosen = [c for c in chosen if c]
            if chosen:
                counts = {c: chosen.count(c) for c in sorted(set(chosen))}
                out.append(f"{p} {name}: " + ", ".join(f"{c} {k}" for c, k in counts.items()))
    return out


def floor_of(problem_runs):
    """What the files' `regret` is measured from: 0 when the optimum is known, else the best value
    any optimiser found (the files then hold the best value so far)."""
    known = all(r.get("optimum") is not None for r in problem_runs.values())
    return 0.0 if known else min(min(run["regret"]) for r in problem_runs.values() for run in r["runs"])


def regrets(problem_runs):
    """{optimiser: [final regret per seed]}, regret from the best any optimiser found when the
    optimum is unknown."""
    floor = floor_of(problem_runs)
    return {name: [run["regret"][-1] - floor for run in report["runs"]] for name, report in problem_runs.items()}


def ranks(scores):
    ordered = sorted(scores.values())
    return {name: 1 + ordered.index(v) for name, v in scores.items()}


def ecdf_area(report, fraction=1.0, floor=0.0):
    """The fraction of (run, target) pairs reached, averaged over the evaluations 1..B, B the
    given fraction of the budget (the area at an earlier budget); regret measured from `floor`."""
    budget = max(1, round(report["budget"] * fraction))
    total = 0.0
    for run in report["runs"]:
        reached_at = []
        for target in TARGETS:
            at = next((i for i, r in enumerate(run["regret"][:budget]) if r - floor <= target), None)
            reached_at.append(at)
        total += sum(budget - at for at in reached_at if at is not None) / (budget * len(TARGETS))
    return total / len(report["runs"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--auto", default="bo-AUTO", help="the optimiser judged against the peers")
    ap.add_argument("--at", type=int, help="score every run at its first AT steps, as a run of that budget")
    args = ap.parse_args()
    import heldout
    runs = load(args.dir, args.at)
    for cls, halves in heldout.HALVES.items():
        for half, problems in zip(("tuning", "validation"), halves):
            ran = [p for p in problems if p in runs]
            if not ran:
                continue
            everyone = sorted(set.union(*(set(runs[p]) for p in ran)))
            on_all = [n for n in everyone if all(n in runs[p] for p in ran)]
            print(f"\n## {cls} — {half} half ({len(ran)} of {len(problems)} problems run)")
            table(runs, ran, on_all, cls, args.auto, "")
            choices = auto_choices(runs, ran)
            if choices:
                print("\n`AUTO`'s model at the end of each run (seeds):\n")
                for line in choices:
                    print(f"- {line}")
            # The slow peers, run on some of the problems: the same table on those.
            some = [n for n in everyone if n not in on_all]
            if some:
                subset = [p for p in ran if all(n in runs[p] for n in everyone)]
                if subset:
                    table(runs, subset, everyone, cls, args.auto, f"on the {len(subset)} problems every optimiser ran ({', '.join(subset)})")


def table(runs, problems, names, cls, auto, title):
    if title:
        print(f"\n{title}:")
    print()
    per_rank = {n: [] for n in names}
    behind = []
    for p in problems:
        finals = regrets({n: runs[p][n] for n in names})
        med = {n: statistics.median(v) for n, v in finals.items()}
        for n, r in ranks(med).items():
            per_rank[n].append(r)
        peers = {n: v for n, v in med.items() if not n.startswith("bo-")}
        if auto in med and peers:
            best = min(peers, key=peers.get)
            ratio = med[auto] / peers[best] if peers[best] > 0 else (1.0 if med[auto] == 0 else float("inf"))
            behind.append((p, ratio, best))
    bbob = cls.startswith(("bbob", "mixint"))
    # Distinct cells of the discrete parameters each run evaluated, where the runs count them.
    cells = any("cells" in run for p in problems for n in names for run in runs[p][n]["runs"])
    floors = {p: floor_of({n: runs[p][n] for n in names}) for p in problems}
    print("| optimiser | median rank |" + (" ECDF area | at ¼ / ½ of the budget |" if bbob else "")
          + (" distinct cells (median) |" if cells else ""))
    print("| --- | --- |" + (" --- | --- |" if bbob else "") + (" --- |" if cells else ""))
    for n in sorted(names, key=lambda n: statistics.median(per_rank[n])):
        row = f"| {n} | {statistics.median(per_rank[n]):g} |"
        if bbob:
            area = lambda f: statistics.mean(ecdf_area(runs[p][n], f, floors[p]) for p in problems)  # noqa: E731
            row += f" {area(1.0):.3f} | {area(0.25):.3f} / {area(0.5):.3f} |"
        if cells:
            row += f" {statistics.median(statistics.median(run.get('cells', 0) for run in runs[p][n]['runs']) for p in problems):g} |"
        print(row)
    others = [n for n in names if n.startswith("bo-") and n != auto]
    if auto in names and others:
        alone = [n for n in names if n not in others]
        against = []
        for p in problems:
            med = {n: statistics.median(v) for n, v in regrets({n: runs[p][n] for n in alone}).items()}
            against.append(ranks(med)[auto])
        print(f"\n{auto} against the peers alone (without {', '.join(others)}): median rank {statistics.median(against):g}")
    late = [(p, r, b) for p, r, b in behind if r > 1.5]
    if late:
        print(f"\n{auto} more than 1.5× behind the best peer: "
              + ", ".join(f"{p} ({r:.2g}× {b})" for p, r, b in sorted(late, key=lambda x: -x[1])))

if __name__ == "__main__":
    main()
