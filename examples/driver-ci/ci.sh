#!/usr/bin/env bash
# The driver's CI, as .github/workflows/driver-ci.yml runs it (and as you can run it locally):
#   1. the driver's own tests, with dramock's pytest plugin (a cluster per session, fault rules);
#   2. the kubelet-plugin contract: `dramock serve` with one node, the driver on it under a supervisor
#      (so that it can be restarted), then `dramock check-driver`.
# Needs: python with dramock and pytest installed, kubectl on PATH. Results: $OUT/*.xml (JUnit), $OUT/*.log.
set -euo pipefail
cd "$(dirname "$0")"
OUT=${OUT:-$PWD/ci-results}
PORT=${PORT:-8080}
PYTHON=${PYTHON:-python}
mkdir -p "$OUT"

echo "== driver tests (pytest + dramock plugin)"
"$PYTHON" -m pytest -q -p no:cacheprovider --junit-xml="$OUT/pytest.xml"

echo "== check-driver"
work=$(mktemp -d /tmp/driver-ci.XXXXXX)  # short: plugin socket paths must stay under ~107 bytes
serve_pid="" loop_pid=""
cleanup() {
  touch "$work/stop"
  [ -s "$work/driver.pid" ] && kill "$(cat "$work/driver.pid")" 2>/dev/null || true
  [ -n "$loop_pid" ] && wait "$loop_pid" 2>/dev/null || true
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  cp "$work"/*.log "$OUT"/ 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

server=http://127.0.0.1:$PORT
"$PYTHON" -m dramock serve --port "$PORT" --data-dir "$work/data" --nodes 1 --no-example-driver >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 150); do kubectl -s "$server" get node node-1 >/dev/null 2>&1 && break; sleep 0.2; done
annotation() { kubectl -s "$server" get node node-1 -o "jsonpath={.metadata.annotations.dramock\.io/$1}"; }
registry=$(annotation plugins-registry-dir)
plugins=$(annotation plugins-dir)
kubectl -s "$server" apply -f deviceclass.yaml

# The supervisor restarts the driver whenever it exits, as the kubelet restarts a DaemonSet's container.
( while [ ! -e "$work/stop" ]; do
    "$PYTHON" fpga_driver.py --server "$server" --node-name node-1 --registry-dir "$registry" \
      --plugins-dir "$plugins" >>"$work/driver.log" 2>&1 &
    echo $! >"$work/driver.pid"
    wait $! || true
  done ) &
loop_pid=$!

"$PYTHON" -m dramock check-driver --server "$server" --driver fpga.example.com --node node-1 \
  --junit-xml "$OUT/check-driver.xml" --driver-restart-command "kill \$(cat $work/driver.pid)"
