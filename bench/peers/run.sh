#!/usr/bin/env bash
# Runs Optuna's samplers on bo-bench's problems, writing JSON in bo-bench's shape.
#   bash bench/peers/run.sh --problem branin --sampler gp --budget 100 --seeds 5 --out gp.json
#   bash bench/peers/run.sh --safe --problem gramacy --sampler gp --budget 50 --out safe.json
#   bash bench/peers/run.sh --curves --problem lc_a --pruner hyperband --budget 2000 --out curves.json
#   bash bench/peers/run.sh --mo --problem zdt1 --sampler gp --reference 11,11 --max-hv 120.667 --out mo.json
# Installs Optuna (and torch, which its GPSampler needs) into target/peers/venv on first use.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/peers/venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import optuna, torch, greenlet" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/peers/requirements.txt
fi
if [ "${1:-}" = "--safe" ]; then
    shift
    exec "$venv/bin/python" bench/peers/optuna_safe.py "$@"
fi
if [ "${1:-}" = "--curves" ]; then
    shift
    exec "$venv/bin/python" bench/peers/optuna_curves.py "$@"
fi
if [ "${1:-}" = "--mo" ]; then
    shift
    exec "$venv/bin/python" bench/peers/optuna_mo.py "$@"
fi
exec "$venv/bin/python" bench/peers/optuna_bench.py "$@"
