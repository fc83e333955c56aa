#!/usr/bin/env bash
# The three real-curve problems' pools of random configurations (seed 100), trained or read from
# the cache (target/real-curves/) and exported as target/real-curves/PROBLEM.NAME.json; prints
# the files comma-separated on stdout, the form `bo-bench curve-predictions --real` and
# `bo-bench stopping-pool --real` take (the exporter's messages go to stderr).
#   real=$(bash bench/real_curve_pools.sh CONFIGS NAME)
set -euo pipefail
cd "$(dirname "$0")/.."
configs=$1
name=$2
files=()
for problem in mlp_digits hgb_classify sgd_classify; do
    out=target/real-curves/$problem.$name.json
    bash bench/peers/run.sh --real-curves-tool export --problem "$problem" --configs "$configs" --seed 100 --out "$out" >&2
    files+=("$out")
done
(IFS=,; echo "${files[*]}")
