#!/usr/bin/env bash
# Early stopping, in one run: bo's GP_BANDIT with no rule, the median rule, the decay-curve rule
# and the convex rule, against Optuna's TPESampler with no pruner, MedianPruner and
# HyperbandPruner, on the same learning-curve problems, seeds and epoch budget; prints the table
# in docs/benchmarks.md ("Early stopping").
#   bash bench/curves.sh [seeds] [epochs]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10}
budget=${2:-2000}
out=target/curves
rm -rf "$out" && mkdir -p "$out"
cargo build --release -q -p bo-bench
target/release/bo-bench curves --algorithm GP_BANDIT --seeds "$seeds" --budget "$budget" --out "$out" >/dev/null
for problem in lc_a lc_b lc_c; do
    for pruner in none median hyperband; do
        bash bench/peers/run.sh --curves --problem "$problem" --pruner "$pruner" --seeds "$seeds" --budget "$budget" \
            --out "$out/$problem-optuna-$pruner.json"
    done
done
python3 bench/curves_report.py "$out"
