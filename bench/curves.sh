#!/usr/bin/env bash
# Early stopping, in one run: bo's GP_BANDIT with no rule, the median rule, the decay-curve rule,
# the convex rule and successive halving, against Optuna's TPESampler with no pruner,
# MedianPruner, HyperbandPruner and SuccessiveHalvingPruner, on the same learning-curve problems,
# seeds and epoch budget, with one worker or several asynchronous ones; prints the table in
# docs/journal/benchmarks.md ("Early stopping", "Four asynchronous workers").
#   bash bench/curves.sh [seeds] [epochs] [workers]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10}
budget=${2:-2000}
workers=${3:-1}
out=target/curves-w$workers
rm -rf "$out" && mkdir -p "$out"
cargo build --release -q -p bo-bench
target/release/bo-bench curves --algorithm GP_BANDIT --seeds "$seeds" --budget "$budget" --workers "$workers" --out "$out" >/dev/null
for problem in lc_a lc_b lc_c; do
    for pruner in none median hyperband sha; do
        bash bench/peers/run.sh --curves --problem "$problem" --pruner "$pruner" --seeds "$seeds" --budget "$budget" \
            --workers "$workers" --out "$out/$problem-optuna-$pruner.json"
    done
done
python3 bench/curves_report.py "$out"
