#!/usr/bin/env bash
# A TypeScript client generated from openapi/openapi.json by openapi-typescript (default options)
# with openapi-fetch: type-checked under `strict`, then run against the real server.
# Usage: tests/typescript/run.sh BO_SERVER_BINARY. The npm packages (package-lock.json, with
# their checksums) are installed once under target/typescript, keyed on the lock file.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
server="$1"
work="$root/target/typescript"
stamp="$work/.lock.sha256"
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ ! -d "$work/node_modules" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    rm -rf "$work"
    mkdir -p "$work"
    cp "$here/package.json" "$here/package-lock.json" "$work/"
    (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --silent)
    echo "$want" > "$stamp"
fi
cp "$here/study.ts" "$here/tsconfig.json" "$work/"
rm -rf "$work/dist"
(cd "$work" && npx --no-install openapi-typescript "$root/openapi/openapi.json" -o schema.d.ts --silent)
(cd "$work" && npx --no-install tsc -p tsconfig.json)

db="$(mktemp -d)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server" --listen "127.0.0.1:$port" --database-url "sqlite://$db/ts.db" --log error &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$db"' EXIT
for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
    sleep 0.1
done
node "$work/dist/study.js" "http://127.0.0.1:$port"
