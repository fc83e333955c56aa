#!/usr/bin/env bash
# Compute to quality on real training curves (issue 45), in one run: every arm of
# bench/peers/real_curves_bench.py (bo over HTTP with each stopping rule, successive halving and
# Hyperband too; Optuna TPE with no pruner, the median pruner, successive halving and Hyperband;
# SMAC3's multi-fidelity facade; DEHB; Ray Tune's ASHA with random search and with bo's searcher,
# and Ray's BOHB) on the three real-curve problems, the same seeds and budget; prints the table
# for docs/journal/benchmarks.md. Curves are cached under
# target/real-curves/, so a second run trains nothing it has trained before. With workers > 1,
# trials train asynchronously that many at once, for bo's and Optuna's arms only (the other
# peers' scripts run one worker).
#   bash bench/real_curves.sh [seeds] [trainings] [workers]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-3}
trainings=${2:-20}
workers=${3:-1}
out=target/real-curves-runs
rm -rf "$out" && mkdir -p "$out"
cargo build --release -q -p bo-server
for problem in mlp_digits hgb_classify sgd_classify; do
    arms="optuna:none optuna:median optuna:sha optuna:hyperband bo:none bo:median bo:decay bo:convex bo:asha bo:asha-topk bo:asha-resume bo:hyperband"
    if [ "$workers" = 1 ]; then arms="$arms smac:hyperband dehb:dehb ray:asha-random ray:asha-bo ray:bohb"; fi
    for arm in $arms; do
        bash bench/peers/run.sh --real-curves --problem "$problem" --arm "$arm" --seeds "$seeds" --trainings "$trainings" \
            --workers "$workers" --out "$out/$problem-${arm/:/-}.json"
    done
done
python3 bench/real_curves_report.py "$out"
