#!/usr/bin/env bash
# Runs bench/peers/optuna_load.py (Optuna's RDB storage under bo-bench load's pattern).
#   bash bench/peers/load.sh --storage postgresql://postgres@127.0.0.1:5432/test --workers 16 --trials 2000
# Installs Optuna and a Postgres driver into target/peers/load-venv on first use (not by CI).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/peers/load-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import optuna, psycopg2" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/peers/load-requirements.txt
fi
exec "$venv/bin/python" bench/peers/optuna_load.py "$@"
