#!/usr/bin/env bash
# deploy/compose passes scripts/check-compose, and the check catches what breaks
# the stack: a scrape target on the wrong port, a replica that is no simulator, a
# port published beyond loopback, a datasource uid the dashboard does not use, a
# mounted file that is missing, a gateway config that does not load.
set -uo pipefail
ROOT=${IR_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${IR_BUILD:-$ROOT/build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail() { echo "FAIL: $*"; exit 1; }
check() { IR_BUILD=$BUILD "$ROOT/scripts/check-compose" "$1" >"$T/out" 2>&1; }
check "$ROOT/deploy/compose" && pass=$((pass + 1)) || fail "check-compose: $(cat "$T/out")"
# A copy with the same layout (../../dashboards, ../../deploy/Dockerfile), broken one way at a time.
fresh() {
  rm -rf "$T/r" && mkdir -p "$T/r/deploy" && cp -r "$ROOT/deploy/compose" "$T/r/deploy/" &&
    cp "$ROOT/deploy/Dockerfile" "$T/r/deploy/" && cp -r "$ROOT/dashboards" "$T/r/"
}
expect_bad() { # what, file, sed expression, message pattern
  fresh
  sed -i "$3" "$T/r/deploy/compose/$2"
  if check "$T/r/deploy/compose"; then fail "$1: not caught"; fi
  grep -q "$4" "$T/out" && pass=$((pass + 1)) || fail "$1: wrong message: $(cat "$T/out")"
}
expect_bad "scrape port" prometheus.yml 's/gateway:9090/gateway:9999/' "does not scrape gateway:9090"
expect_bad "replica" gateway.yaml 's|http://sim-3:8000|http://sim-4:8000|' "are not the simulators"
expect_bad "public port" docker-compose.yml 's|"127.0.0.1:3000:3000"|"3000:3000"|' "not published on 127.0.0.1"
expect_bad "datasource uid" grafana/provisioning/datasources/prometheus.yml 's/uid: prometheus/uid: other/' "datasource uids"
expect_bad "missing mount" docker-compose.yml 's|./prometheus.yml:|./prom.yml:|' "does not exist"
expect_bad "bad gateway config" gateway.yaml 's/admin_listen: 0.0.0.0:9090/admin_listen: 0.0.0.0:9090\n  nonsense_key: 1/' "inferrail-gateway --check"
echo "test_compose: $pass checks passed"
