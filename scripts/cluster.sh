#!/usr/bin/env bash
# Starts REPLICAS bo-server processes on one Postgres, on loopback ports PORT, PORT+1, …, as the
# compose deployment does in containers, and stops them all on Ctrl-C or when one dies.
#
#   scripts/cluster.sh                       # 2 replicas on 127.0.0.1:8081-8082, the local Postgres
#   scripts/cluster.sh --replicas 4 --port 9000 --database-url postgres://postgres@127.0.0.1:5432/test
#
# Any further arguments go to every replica (e.g. --api-keys-file keys.txt --trial-lease 600).
# BO_SERVER_BIN picks the binary (default: this checkout's release build, built if missing).
# Each replica logs to $LOG_DIR/bo-N.log (default target/cluster).
set -euo pipefail
cd "$(dirname "$0")/.."

replicas=2
port=8081
database_url="${BO_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --replicas) replicas="$2"; shift 2 ;;
        --port) port="$2"; shift 2 ;;
        --database-url) database_url="$2"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) extra+=("$1"); shift ;;
    esac
done

bin="${BO_SERVER_BIN:-target/release/bo-server}"
if [ -z "${BO_SERVER_BIN:-}" ]; then
    cargo build --release --locked -p bo-server >&2
fi
log_dir="${LOG_DIR:-target/cluster}"
mkdir -p "$log_dir"

pids=()
stop() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop INT TERM EXIT

for i in $(seq 0 $((replicas - 1))); do
    p=$((port + i))
    "$bin" --listen "127.0.0.1:$p" --database-url "$database_url" "${extra[@]}" >"$log_dir/bo-$((i + 1)).log" 2>&1 &
    pids+=($!)
done

for i in $(seq 0 $((replicas - 1))); do
    p=$((port + i))
    for _ in $(seq 1 300); do
        if curl -fsS "http://127.0.0.1:$p/readyz" >/dev/null 2>&1; then break; fi
        if ! kill -0 "${pids[$i]}" 2>/dev/null; then
            echo "replica $((i + 1)) exited; its log:" >&2
            cat "$log_dir/bo-$((i + 1)).log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "replica $((i + 1)): http://127.0.0.1:$p (pid ${pids[$i]}, log $log_dir/bo-$((i + 1)).log)"
done
echo "ready: ${replicas} replicas; Ctrl-C stops them"
# Exit (stopping the others) as soon as any replica exits.
wait -n "${pids[@]}"
echo "a replica exited; stopping the cluster" >&2
exit 1
