#!/usr/bin/env bash
# Optuna's samplers on the problems of bench/classes.py, same seeds and budgets as bo-bench there:
#   bash bench/peers/classes.sh docs/results/2026-11-25-auto/peers
# Classes 1–3: TPE, TPE with groups, GPSampler and random, 10 seeds, 100 evaluations. Class 4:
# 5 seeds, 200 evaluations; GPSampler only up to D = 25 (not attempted in D = 100).
# branin_d25_rotated has no Python mirror (its rotation comes from bo-core's generator).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: classes.sh OUT_DIR}
mkdir -p "$out"
run() { # problem sampler seeds budget
    [ -s "$out/$1_$2.json" ] || bash bench/peers/run.sh --problem "$1" --sampler "$2" --seeds "$3" --budget "$4" --out "$out/$1_$2.json" > /dev/null
}
for p in branin hartmann3 hartmann6 ackley5 levy10 rosenbrock4 styblinski_tang8 michalewicz5 six_hump_camel hartmann6_noisy \
    mixed_styblinski_tang8 categorical_shift ackley_categorical integer_rosenbrock \
    jenatton jenatton_small addtree_toy jenatton3 branching_nested_synthetic vgg16_tree; do
    for s in random tpe tpe_mv gp; do run "$p" "$s" 10 100; done
done
for p in branin_d25 additive_hartmann3x8_d24 kandasamy_10_3_3 kandasamy_24_11_2 branin_d100 hartmann6_d100; do
    for s in random tpe tpe_mv; do run "$p" "$s" 5 200; done
done
for p in branin_d25 additive_hartmann3x8_d24 kandasamy_10_3_3 kandasamy_24_11_2; do run "$p" gp 5 200; done
