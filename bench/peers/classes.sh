#!/usr/bin/env bash
# The peers on the problems of bench/classes.py, same seeds and budgets as bo-bench there:
#   bash bench/peers/classes.sh docs/results/2026-11-26-classes/peers
# Classes 1–3: 10 seeds (20 on the two noisy problems), 100 evaluations; SMAC3, the slowest run
# here, 5 seeds. Class 4: 5 seeds, 200 evaluations; GPSampler only up to D = 25; SMAC3 not run (a
# random forest's suggestion costs seconds at 200 trials in D = 24–100). Class 5 (scikit-learn
# tuning): 10 seeds, 50 evaluations, bo driven over HTTP through bo_client beside the peers;
# SMAC3 10 seeds; HEBO (4–6 s per suggestion) 5 seeds, and only here.
# branin_d25_rotated has no Python mirror (its rotation comes from bo-core's generator).
# A result already written is kept: rerunning the script finishes what is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: classes.sh OUT_DIR}
mkdir -p "$out"
run() { # problem optimiser seeds budget
    local file="$out/$1_${2/:/-}.json"
    [ -s "$file" ] || bash bench/peers/run.sh --problem "$1" --optimizer "$2" --seeds "$3" --budget "$4" --out "$file" > /dev/null
}
for p in branin hartmann3 hartmann6 ackley5 levy10 rosenbrock4 styblinski_tang8 michalewicz5 six_hump_camel hartmann6_noisy \
    mixed_styblinski_tang8 categorical_shift ackley_categorical integer_rosenbrock \
    jenatton jenatton_small addtree_toy jenatton3 branching_nested_synthetic vgg16_tree; do
    case $p in hartmann6_noisy | branching_nested_synthetic) seeds=20 ;; *) seeds=10 ;; esac
    for s in random tpe tpe_mv gp; do run "$p" "$s" $seeds 100; done
    run "$p" smac 5 100
done
for p in branin_d25 additive_hartmann3x8_d24 kandasamy_10_3_3 kandasamy_24_11_2 branin_d100 hartmann6_d100; do
    for s in random tpe tpe_mv; do run "$p" "$s" 5 200; done
done
for p in branin_d25 additive_hartmann3x8_d24 kandasamy_10_3_3 kandasamy_24_11_2; do
    run "$p" gp 5 200
done
for p in svm_breast_cancer random_forest_wine logistic_wine knn_breast_cancer mlp_wine gradient_boosting_diabetes svr_diabetes \
    which_classifier_breast_cancer which_regressor_diabetes; do
    for s in bo:AUTO bo:GP_BANDIT random tpe tpe_mv gp smac; do run "$p" "$s" 10 50; done
    run "$p" hebo 5 50
done
