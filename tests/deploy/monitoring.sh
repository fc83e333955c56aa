#!/usr/bin/env bash
# The alerts and the Grafana board a team loads (deploy/), checked against a real server:
#
#   tests/deploy/monitoring.sh [BO_SERVER_BINARY]      # default: target/debug/bo-server
#
# - `promtool check rules` on deploy/prometheus/alerts.yaml and `promtool test rules` on its unit
#   tests (each alert fires on the series it is for, not on a healthy replica's);
# - a real /metrics scrape, after a study's suggests, completions and a refused request, through
#   `promtool check metrics`;
# - every metric the alerts and deploy/grafana/bo.json query is one that scrape exposes.
# Installs Debian's prometheus package (for promtool) when promtool is missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=${1:-target/debug/bo-server}

if ! command -v promtool >/dev/null; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q prometheus >/dev/null 2>&1 || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q prometheus >/dev/null; }
fi

echo "== promtool check rules / test rules"
promtool check rules deploy/prometheus/alerts.yaml
(cd deploy/prometheus && promtool test rules alerts.test.yaml)

echo "== a real /metrics scrape through promtool check metrics"
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$binary" --listen "127.0.0.1:$port" --database-url "sqlite://$dir/bo.db" --log warn &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
url="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
PYTHONPATH=clients/python/src python3 - "$url" <<'EOF'
import sys
import bo_client as bo

client = bo.Client(sys.argv[1], project="demo")
space = bo.SearchSpace()
space.float("x", 0.0, 1.0)
study = client.create_study("scraped", space, {"y": "MINIMIZE"}, algorithm="GP_BANDIT")
for i in range(8):
    [t] = study.suggest(1, "w")
    t.complete((float(t["x"]) - 0.3) ** 2)
try:
    client.load_study("no such study")
except bo.ApiError:
    pass
EOF
curl -fsS "$url/metrics" >"$dir/metrics.txt"
promtool check metrics <"$dir/metrics.txt"

echo "== every metric the alerts and the board query is exposed"
python3 - "$dir/metrics.txt" deploy/prometheus/alerts.yaml deploy/grafana/bo.json <<'EOF'
import json
import re
import sys

scrape, alerts, board = sys.argv[1:]
exposed = {"up"}
for line in open(scrape):
    if line.startswith("# TYPE "):
        name, kind = line.split()[2:4]
        exposed.add(name)
        suffixes = {"counter": ["_total", "_created"], "histogram": ["_bucket", "_sum", "_count", "_created"]}.get(kind, [])
        exposed.update(name + s for s in suffixes)
    elif line.strip() and not line.startswith("#"):
        exposed.add(re.split(r"[{ ]", line, 1)[0])

def names(expr):
    expr = re.sub(r'"[^"]*"', '""', expr)          # label values
    expr = re.sub(r"\{[^}]*\}", "", expr)           # matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)          # ranges
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))
    keywords = {"sum", "max", "min", "avg", "by", "without", "rate", "increase", "histogram_quantile", "on", "ignoring",
                "label_values", "le", "instance", "stage", "state", "status", "route", "path", "result", "job", "and", "or", "unless"}
    return {w for w in words - keywords if not w.isdigit()}

queried = {}
text = open(alerts).read()
for expr in re.findall(r"expr: \|\n((?:          .*\n)+)|expr: (.*)\n", text):
    for name in names(expr[0] or expr[1]):
        queried.setdefault(name, alerts)
dash = json.load(open(board))
for panel in dash["panels"]:
    for target in panel["targets"]:
        for name in names(target["expr"]):
            queried.setdefault(name, f"{board}: {panel['title']}")
missing = {n: where for n, where in queried.items() if n not in exposed}
for n, where in sorted(missing.items()):
    print(f"FAIL: {where} queries {n}, which /metrics does not expose", file=sys.stderr)
print(f"{len(queried)} metrics queried, all exposed" if not missing else "")
sys.exit(1 if missing else 0)
EOF
