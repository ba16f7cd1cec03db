#!/usr/bin/env bash
# make stack (scripts/stack): a real Prometheus, three simulators and the gateway
# come up on loopback, the URLs are printed, Prometheus scrapes all four targets,
# and the script stops every part when it ends (IR_STACK_SECONDS) or on Ctrl-C.
set -uo pipefail
ROOT=${IR_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${IR_BUILD:-$ROOT/build}
T=$(mktemp -d)
pass=0
fail() { echo "FAIL: $*"; [ -f "$T/out" ] && tail -40 "$T/out"; exit 1; }
ok() { pass=$((pass + 1)); }
used=" "
# A random port in 10000-19999 that binds now and was not picked before.
pick() {
  for _ in $(seq 50); do
    local p=$((10000 + RANDOM % 10000))
    case $used in *" $p "*) continue ;; esac
    if python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$p" 2>/dev/null; then
      used="$used$p "
      echo "$p"
      return
    fi
  done
  fail "no free port"
}
GW=$(pick) AD=$(pick) PR=$(pick) S1=$(pick) S2=$(pick) S3=$(pick)
IR_BUILD=$BUILD IR_GW_PORT=$GW IR_ADMIN_PORT=$AD IR_PROM_PORT=$PR IR_SIM_PORTS="$S1 $S2 $S3" IR_STACK_SECONDS=120 \
  setsid "$ROOT/scripts/stack" >"$T/out" 2>&1 &
pid=$!
trap 'kill -TERM -- -$pid 2>/dev/null; sleep 1; kill -KILL -- -$pid 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 600); do grep -q "stack: ready" "$T/out" && break; kill -0 $pid 2>/dev/null || fail "stack exited early"; sleep 0.1; done
grep -q "stack: ready" "$T/out" && ok || fail "stack never said ready"
grep -q "http://127.0.0.1:$AD/" "$T/out" && grep -q "http://127.0.0.1:$PR/graph" "$T/out" && ok || fail "URLs not printed"
code=$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$GW/v1/chat/completions" \
  -d '{"model":"sim","messages":[{"role":"user","content":"stack"}],"max_tokens":2}')
[ "$code" = 200 ] && ok || fail "request through the stack's gateway: $code"
# Prometheus sees all four targets up, and the gateway's counter.
up=""
for _ in $(seq 120); do
  up=$(curl -s "127.0.0.1:$PR/api/v1/query" --data-urlencode 'query=sum(up)' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)' 2>/dev/null)
  [ "$up" = 4 ] && break
  sleep 0.5
done
[ "$up" = 4 ] && ok || fail "Prometheus sees $up of 4 targets up"
n=""
for _ in $(seq 60); do
  n=$(curl -s "127.0.0.1:$PR/api/v1/query" --data-urlencode 'query=sum(inferrail_requests_total{status="2xx"})' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)' 2>/dev/null)
  [ "$n" = 1 ] && break
  sleep 0.5
done
[ "$n" = 1 ] && ok || fail "Prometheus counts $n requests, not 1"
# A stop signal ends every part: the ports are free again. (SIGTERM: a background job
# of a script ignores SIGINT, so Ctrl-C cannot be sent from here; the script traps both.)
kill -TERM $pid
for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
kill -0 $pid 2>/dev/null && fail "stack did not stop on SIGTERM"
ok
# Nothing listens any more (SO_REUSEADDR: connections left in TIME_WAIT do not count).
for p in $GW $AD $PR $S1 $S2 $S3; do
  python3 -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()' "$p" 2>/dev/null || fail "port $p still listened on after the stack stopped"
done
ok
echo "test_stack: $pass checks passed"
