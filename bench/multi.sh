#!/usr/bin/env bash
# Several objectives, in one run: bo's GP_BANDIT and ADD_TREE against Optuna's GPSampler
# (LogEHVI) and NSGAIISampler on the same problems, seeds and budget; prints the table in
# docs/journal/benchmarks.md ("Several objectives").
#   bash bench/multi.sh [seeds] [budget]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-5}
budget=${2:-100}
out=target/multi
mkdir -p "$out"
cargo build --release -q -p bo-bench
for algorithm in GP_BANDIT ADD_TREE; do
    target/release/bo-bench multi --algorithm "$algorithm" --seeds "$seeds" --budget "$budget" --out "$out/$algorithm" >/dev/null
done
target/release/bo-bench multi --list | while read -r name reference max_hv; do
    for sampler in gp nsga2; do
        bash bench/peers/run.sh --mo --problem "$name" --sampler "$sampler" --seeds "$seeds" --budget "$budget" \
            --reference "$reference" --max-hv "$max_hv" --out "$out/optuna-$sampler-$name.json"
    done
done
python3 bench/multi_report.py "$out"
