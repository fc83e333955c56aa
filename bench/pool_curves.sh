#!/usr/bin/env bash
# bo's designer (AUTO) with each stopping rule on real training curves, served from pools
# (issue 72): bo-bench curves --pools, where each suggestion trains the blend of the three
# pooled curves nearest to it. Pools: CONFIGS random configurations a problem (seed 100),
# trained by bench/peers/real_curves.py and cached under target/real-curves/. One and four
# workers, seeds 0..SEEDS-1, a budget of TRAININGS full trainings' steps; then every rule
# against training every trial fully (Mann-Whitney over seeds): the tables of
# docs/journal/benchmarks.md "Real curves from pools, one and four workers".
#   bash bench/pool_curves.sh [seeds] [trainings] [configs]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-20}
trainings=${2:-20}
configs=${3:-1000}
cargo build --release -q -p bo-bench
pools=$(bash bench/real_curve_pools.sh "$configs" "pool$configs")
rules=none,median,decay,convex,asha,asha-topk,asha-resume,hyperband,asha:eta=2
out=target/pool-curves
rm -rf "$out"
for workers in 1 4; do
    target/release/bo-bench curves --algorithm AUTO --pools "$pools" --trainings "$trainings" --seeds "$seeds" \
        --workers "$workers" --rules "$rules" --out "$out/w$workers"
    none=none; if [ "$workers" != 1 ]; then none=none-w$workers; fi
    target/peers/venv/bin/python bench/curves_mwu.py --against "$none" "$out/w$workers"
done
