#!/usr/bin/env bash
# The median rule's settings on their own (issue 72): random search over pools of curves, every
# arm on the same draws (bo-bench stopping-pool), on the synthetic family (2,000 configurations a
# pool) and on real training curves (1,000 random configurations a problem, seed 100, trained by
# bench/peers/real_curves.py and cached under target/real-curves/), then each arm against the
# default median rule by Mann-Whitney: the tables of docs/journal/benchmarks.md "The median
# rule's first look, measured alone".
#   bash bench/stopping_pool.sh [seeds] [trainings]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-20}
trainings=${2:-20}
cargo build --release -q -p bo-bench
real=$(bash bench/real_curve_pools.sh 1000 pool1000)
arms=none,median,median:of=value,median:first=10%,median:first=20%,median:min=5,median:first=10%:of=value
mkdir -p target/stopping-pool
target/release/bo-bench stopping-pool --arms "$arms" --trainings "$trainings" --seeds "$seeds" \
    --real "$real" --problems lc_a,lc_b,lc_c --pool 2000 --out target/stopping-pool/runs.json
target/peers/venv/bin/python bench/stopping_pool_mwu.py target/stopping-pool/runs.json --baseline median
