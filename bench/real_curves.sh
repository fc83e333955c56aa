#!/usr/bin/env bash
# Compute to quality on real training curves (issue 45), in one run: every arm of
# bench/peers/real_curves_bench.py (bo over HTTP with each stopping rule, successive halving and
# Hyperband too; Optuna TPE with no pruner, the median pruner, successive halving and Hyperband;
# SMAC3's multi-fidelity facade; DEHB; Ray Tune's ASHA with random search and with bo's searcher,
# and Ray's BOHB) on the three real-curve problems, the same seeds and budget; prints the table
# for docs/journal/benchmarks.md. Curves are cached under
# target/real-curves/, so a second run trains nothing it has trained before.
#   bash bench/real_curves.sh [seeds] [trainings]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-3}
trainings=${2:-20}
out=target/real-curves-runs
rm -rf "$out" && mkdir -p "$out"
cargo build --release -q -p bo-server
for problem in mlp_digits hgb_classify sgd_classify; do
    for arm in optuna:none optuna:median optuna:sha optuna:hyperband bo:none bo:median bo:decay bo:convex bo:asha bo:asha-topk bo:asha-resume bo:hyperband \
        smac:hyperband dehb:dehb ray:asha-random ray:asha-bo ray:bohb; do
        bash bench/peers/run.sh --real-curves --problem "$problem" --arm "$arm" --seeds "$seeds" --trainings "$trainings" \
            --out "$out/$problem-${arm/:/-}.json"
    done
done
python3 bench/real_curves_report.py "$out"
