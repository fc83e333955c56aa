#!/usr/bin/env bash
# The container image and docker/compose.yaml, exercised as a team runs them:
#
#   tests/deploy/compose.sh [BO_SERVER_BINARY]     # default: target/release/bo-server, built if missing
#
# 1. Starts dockerd if it is not running (installing Debian's docker.io, docker-compose and
#    debootstrap when missing); prints SKIPPED with the reason and exits 0 only when the machine
#    cannot run an engine at all.
# 2. Builds the images without a registry (tests/deploy/images.sh): a Debian base from Debian's
#    mirror, Postgres and Caddy stand-ins from Debian's packages, bo's image from the
#    Dockerfile's `prebuilt` stage.
# 3. Runs docker/compose.yaml unchanged (Postgres, two replicas, the proxy) with an API key, and
#    through the proxy: a conditional study of 60 trials from 8 workers; one replica's process
#    killed mid-run (a crash) and restarted by compose (`restart: unless-stopped`); `down` then
#    `up` with the named volume. After each, every acknowledged completion is read back and no
#    trial was handed to two workers (tests/deploy/drive.py).
# 4. Runs the image alone with SQLite on a named volume, across `docker rm` and `docker run`.
#
# Prints the image's size and the time from `up` to a healthy stack; the compose log is kept
# in target/deploy/.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
binary=${1:-target/release/bo-server}
out=target/deploy
mkdir -p "$out"

say() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- 1. the engine -----------------------------------------------------------------------------
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
need=()
command -v docker >/dev/null || need+=(docker.io)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || need+=(docker-compose)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null; then
        echo "SKIPPED: the deployment test needs ${need[*]} and this machine has no apt-get to install them"
        exit 0
    fi
    say "installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "${need[@]}" >/dev/null; }
fi
if ! docker info >/dev/null 2>&1; then
    say "starting dockerd"
    ($sudo dockerd >"$out/dockerd.log" 2>&1 &)
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
    if ! docker info >/dev/null 2>&1; then
        echo "SKIPPED: dockerd did not start on this machine; its log says:"
        tail -n 5 "$out/dockerd.log" | sed 's/^/    /'
        exit 0
    fi
fi
if docker compose version >/dev/null 2>&1; then compose=(docker compose); else compose=(docker-compose); fi

# --- 2. the images ---------------------------------------------------------------------------
if [ ! -x "$binary" ]; then
    say "building the release binary"
    cargo build --release --locked -p bo-server
fi
images=$(tests/deploy/images.sh "$binary")
eval "$(echo "$images" | sed 's/^/export /')"
size=$(docker image inspect -f '{{.Size}}' "$BO_IMAGE")
base_size=$(docker image inspect -f '{{.Size}}' "$BO_BASE_IMAGE")
say "image $BO_IMAGE: $((size / 1000000)) MB ($((base_size / 1000000)) MB of it the base $BO_BASE_IMAGE, $(($(stat -c %s "$binary") / 1000000)) MB the binary)"

# --- 3. the stack ----------------------------------------------------------------------------
key="deploy-test-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export BO_API_KEYS="ci $(printf %s "$key" | sha256sum | cut -d' ' -f1) demo"
export BO_PORT=${BO_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
project=bodeploytest
url="http://127.0.0.1:$BO_PORT"
dc() { "${compose[@]}" -f docker/compose.yaml -p "$project" "$@"; }
sqlite_name=bodeploytest-sqlite
cleanup() {
    dc logs --no-color >"$out/compose.log" 2>&1 || true
    dc down -v >/dev/null 2>&1 || true
    docker rm -f "$sqlite_name" >/dev/null 2>&1 || true
    docker volume rm "$sqlite_name" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup

export PYTHONPATH="$root/clients/python/src"
drive() { python3 tests/deploy/drive.py "$@"; }

healthy() {
    # Every service's container running and, where it has a health check, healthy.
    local ids id state
    ids=$(dc ps -q)
    [ "$(echo "$ids" | grep -c .)" = 4 ] || return 1
    for id in $ids; do
        state=$(docker inspect -f '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}healthy{{end}}' "$id")
        [ "$state" = "running healthy" ] || return 1
    done
    curl -fsS --max-time 2 "$url/readyz" >/dev/null 2>&1
}
wait_healthy() {
    local started=$1 deadline=$((SECONDS + 180))
    until healthy; do
        [ $SECONDS -lt $deadline ] || { dc ps; fail "the stack was not healthy within 180 s"; }
        sleep 0.5
    done
    echo "$(( $(date +%s%N) / 1000000 - started ))"
}

say "compose up"
t0=$(( $(date +%s%N) / 1000000 ))
dc up -d >/dev/null 2>&1 || { dc up -d; fail "compose up failed"; }
ms=$(wait_healthy "$t0")
say "healthy $ms ms after up (Postgres, two replicas, the proxy)"

log="$out/acknowledged.jsonl"
rm -f "$log"
say "60 trials of a conditional study from 8 workers through the proxy; replica bo1 crashes mid-run"
drive run "$url" "$key" deploy-study "$log" --trials 60 --workers 8 &
driver=$!
completions() { if [ -f "$log" ]; then grep -c '"completed"' "$log" || true; else echo 0; fi; }
bo1=$(dc ps -q bo1)
pid=$(docker inspect -f '{{.State.Pid}}' "$bo1")
until [ "$(completions)" -ge 12 ]; do
    kill -0 $driver 2>/dev/null || fail "the workers ended before 12 completions"
    sleep 0.1
done
$sudo kill -9 "$pid"
at_kill=$(completions)
kill -0 $driver 2>/dev/null && [ "$at_kill" -lt 60 ] || fail "the run ended before the crash: it tested nothing"
say "killed bo1's process (pid $pid) after $at_kill completions"
wait $driver || fail "a worker failed (above)"
say "$(( $(completions) - at_kill )) completions acknowledged after the crash"
for _ in $(seq 120); do
    [ "$(docker inspect -f '{{.RestartCount}} {{.State.Health.Status}}' "$bo1")" = "1 healthy" ] && break
    sleep 0.5
done
restarted=$(docker inspect -f '{{.RestartCount}} {{.State.Health.Status}}' "$bo1")
[ "$restarted" = "1 healthy" ] || fail "compose did not bring bo1 back (restarts, health: $restarted)"
say "compose restarted bo1 and it is healthy"
drive check "$url" "$key" deploy-study "$log" --at-least 60

say "compose down, then up on the same volume"
dc down >/dev/null 2>&1
t0=$(( $(date +%s%N) / 1000000 ))
dc up -d >/dev/null 2>&1 || { dc up -d; fail "compose up failed"; }
ms2=$(wait_healthy "$t0")
say "healthy $ms2 ms after up"
drive check "$url" "$key" deploy-study "$log" --at-least 60
dc logs --no-color >"$out/compose.log" 2>&1
if grep -E "panicked|ERROR" "$out/compose.log" | grep -v "postgres" >"$out/errors.log"; then
    cat "$out/errors.log" >&2
    fail "the replicas logged errors (target/deploy/compose.log)"
fi

# --- 4. the image alone, SQLite on a volume ----------------------------------------------------
say "the image alone: SQLite on the volume $sqlite_name across docker rm and run"
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
single() {
    docker run -d --name "$sqlite_name" -v "$sqlite_name:/var/lib/bo" -e BO_API_KEYS="$BO_API_KEYS" \
        -p "127.0.0.1:$port2:8080" "$BO_IMAGE" >/dev/null
}
slog="$out/acknowledged-sqlite.jsonl"
rm -f "$slog"
single
drive run "http://127.0.0.1:$port2" "$key" sqlite-study "$slog" --trials 12 --workers 2
docker rm -f "$sqlite_name" >/dev/null
single
drive check "http://127.0.0.1:$port2" "$key" sqlite-study "$slog" --at-least 12
say "PASS: image $((size / 1000000)) MB; healthy ${ms} ms and ${ms2} ms after up"
