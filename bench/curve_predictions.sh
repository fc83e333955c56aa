#!/usr/bin/env bash
# How well the curve models predict a trial's final value from a prefix of its curve (issue 72's
# yardstick), on the synthetic learning-curve family and on real training curves, with 10 and 40
# full curves: the tables of docs/journal/benchmarks.md "Freeze-thaw on the step's own scale".
# Real curves: 150 random configurations per problem (seed 100), trained by
# bench/peers/real_curves.py (cached under target/real-curves/, so a second run trains nothing).
#   bash bench/curve_predictions.sh [seeds]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10}
cargo build --release -q -p bo-bench
real=$(bash bench/real_curve_pools.sh 150 sample)
for train in 10 40; do
    target/release/bo-bench curve-predictions --seeds "$seeds" --train "$train" --test 30
    target/release/bo-bench curve-predictions --seeds "$seeds" --train "$train" --test 30 --real "$real"
done
