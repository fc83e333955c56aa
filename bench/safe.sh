#!/usr/bin/env bash
# Safety metrics, in one run: bo's GP_BANDIT (without a target safe fraction, and with 0.8)
# against Optuna's GPSampler and TPESampler with constraints_func, and random search, on the
# same constrained problems, seeds and budget; prints the table in docs/journal/benchmarks.md ("Safety
# metrics").
#   bash bench/safe.sh [seeds] [budget]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-10}
budget=${2:-100}
out=target/safe
mkdir -p "$out"
cargo build --release -q -p bo-bench
for desired in 0 0.8; do
    target/release/bo-bench safe --algorithm GP_BANDIT --desired "$desired" --seeds "$seeds" --budget "$budget" --out "$out/GP_BANDIT-$desired" >/dev/null
done
for problem in gramacy townsend branin_disk hartmann6_l1; do
    for sampler in gp tpe random; do
        bash bench/peers/run.sh --safe --problem "$problem" --sampler "$sampler" --seeds "$seeds" --budget "$budget" \
            --out "$out/optuna-$sampler-$problem.json"
    done
done
python3 bench/safe_report.py "$out" "$budget"
