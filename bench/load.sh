#!/usr/bin/env bash
# The load benchmarks of docs/journal/benchmarks.md ("The service under load"): bo on SQLite (one
# process) and on Postgres (1, 2 and 4 replicas through scripts/cluster.sh), 16 workers
# suggesting and completing RANDOM_SEARCH trials in one study and spread over four; with
# --bookkeeping also the cost per request as one study grows to 1k, 10k and 100k trials.
# Optuna's RDB storage under the same pattern is bench/peers/load.sh (commands in the doc).
#
#   bash bench/load.sh OUT_DIR [--bookkeeping]
#
# Postgres: $BO_BENCH_POSTGRES (default the local test database), in a schema bo_load that is
# dropped and recreated for each run.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: bench/load.sh OUT_DIR [--bookkeeping]}"
bookkeeping="${2:-}"
mkdir -p "$out"
cargo build --release --locked -p bo-server -p bo-bench >&2
pg="${BO_BENCH_POSTGRES:-postgres://postgres@127.0.0.1:5432/test}"
work=$(mktemp -d)
cluster_pid=
stop() {
    if [ -n "$cluster_pid" ]; then kill -TERM "$cluster_pid" 2>/dev/null || true; wait "$cluster_pid" 2>/dev/null || true; fi
    cluster_pid=
}
trap 'stop; rm -rf "$work"' EXIT

# start NAME REPLICAS DATABASE_URL: the cluster on ports 9600…; sets $urls.
start() {
    BO_SERVER_BIN=target/release/bo-server LOG_DIR="$work/$1" scripts/cluster.sh --replicas "$2" --port 9600 \
        --database-url "$3" --rate-limit 0 >"$work/$1.out" 2>&1 &
    cluster_pid=$!
    for _ in $(seq 1 300); do grep -q '^ready' "$work/$1.out" && break; sleep 0.1; done
    urls=$(seq -s, 9600 $((9600 + $2 - 1)) | sed 's#\([0-9]\+\)#http://127.0.0.1:\1#g')
}
fresh_schema() {
    psql "$pg" -qc "DROP SCHEMA IF EXISTS bo_load CASCADE; CREATE SCHEMA bo_load;" 2>/dev/null
    echo "$pg?options[search_path]=bo_load"
}
load() { target/release/bo-bench load --url "$urls" "$@"; }

start sqlite 1 "sqlite://$work/bo.db"
load --workers 1 --trials 1000 --out "$out/sqlite-r1-w1.json"
load --workers 16 --trials 2000 --out "$out/sqlite-r1-w16.json"
load --workers 16 --trials 2000 --studies 4 --out "$out/sqlite-r1-w16-s4.json"
if [ "$bookkeeping" = "--bookkeeping" ]; then
    load --workers 4 --trials 1000 --prefill 1000,10000,100000 --out "$out/sqlite-bookkeeping.json"
fi
stop

for r in 1 2 4; do
    start "pg$r" "$r" "$(fresh_schema)"
    [ "$r" = 1 ] && load --workers 1 --trials 1000 --out "$out/postgres-r1-w1.json"
    load --workers 16 --trials 2000 --out "$out/postgres-r$r-w16.json"
    load --workers 16 --trials 2000 --studies 4 --out "$out/postgres-r$r-w16-s4.json"
    if [ "$r" = 1 ] && [ "$bookkeeping" = "--bookkeeping" ]; then
        load --workers 4 --trials 1000 --prefill 1000,10000,100000 --out "$out/postgres-bookkeeping.json"
    fi
    stop
done
