#!/usr/bin/env bash
# Runs the peers (Optuna's samplers, SMAC3, HEBO, random) and bo over HTTP on bo-bench's problems
# and class 5's, writing JSON in bo-bench's shape:
#   bash bench/peers/run.sh --problem branin --optimizer gp --budget 100 --seeds 5 --out gp.json
#   bash bench/peers/run.sh --problem svm_breast_cancer --optimizer bo:AUTO --seeds 10 --budget 50 --out bo.json
#   bash bench/peers/run.sh --safe --problem gramacy --sampler gp --budget 50 --out safe.json
#   bash bench/peers/run.sh --curves --problem lc_a --pruner hyperband --budget 2000 --out curves.json
#   bash bench/peers/run.sh --real-curves --problem mlp_digits --arm optuna:sha --seeds 3 --out real.json
#   bash bench/peers/run.sh --real-curves-tool export --problem mlp_digits --configs 150 --out mlp.json
#   bash bench/peers/run.sh --mo --problem zdt1 --sampler gp --reference 11,11 --max-hv 120.667 --out mo.json
# Installs the peers into target/peers/venv on first use (and again when requirements.txt
# changes), HEBO into target/peers/hebo-venv when it is asked for (hebo-requirements.txt), and
# real curves' SMAC3/DEHB and Ray arms into target/peers/mf-venv and ray-venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
install() { # venv requirements
    local stamp="$1/.requirements.sha256" want
    want=$(sha256sum "$2" | cut -d' ' -f1)
    if [ ! -x "$1/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        rm -rf "$1"
        python3 -m venv "$1"
        "$1/bin/pip" install --quiet --disable-pip-version-check --prefer-binary -r "$2"
        echo "$want" > "$stamp"
    fi
}
venv=target/peers/venv
case " $* " in
    # Real curves' multi-fidelity peers each have a venv of their own (the requirements say why).
    *" smac:"* | *" dehb:"*)
        venv=target/peers/mf-venv
        install "$venv" bench/peers/mf-requirements.txt ;;
    *" ray:"*)
        venv=target/peers/ray-venv
        install "$venv" bench/peers/ray-requirements.txt ;;
    *) install "$venv" bench/peers/requirements.txt ;;
esac
case " $* " in
    *" hebo "*) install target/peers/hebo-venv bench/peers/hebo-requirements.txt ;;
esac
if [ "${1:-}" = "--safe" ]; then
    shift
    exec "$venv/bin/python" bench/peers/optuna_safe.py "$@"
fi
if [ "${1:-}" = "--curves" ]; then
    shift
    exec "$venv/bin/python" bench/peers/optuna_curves.py "$@"
fi
if [ "${1:-}" = "--real-curves-tool" ]; then
    shift
    exec "$venv/bin/python" bench/peers/real_curves.py "$@"
fi
if [ "${1:-}" = "--real-curves" ]; then
    shift
    exec "$venv/bin/python" bench/peers/real_curves_bench.py "$@"
fi
if [ "${1:-}" = "--mo" ]; then
    shift
    exec "$venv/bin/python" bench/peers/optuna_mo.py "$@"
fi
exec "$venv/bin/python" bench/peers/bench.py "$@"
