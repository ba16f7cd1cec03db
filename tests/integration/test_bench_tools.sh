#!/usr/bin/env bash
# The gateway benchmark's own tools: ir-relay forwards both ways byte for byte,
# round robin over its upstreams, and ir-overhead sends every request and
# accounts for each.
set -euo pipefail
. "$(dirname "$0")/ports.sh"
BUILD=${IR_BUILD:-build}
s1=$(freeport); s2=$(freeport); rp=$(freeport)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null || true; done' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$BUILD/inferrail-sim" --port "$s1" --zero-latency --max-model-len 1000000 --num-gpu-blocks-override 100000 2>/dev/null & pids+=($!)
"$BUILD/inferrail-sim" --port "$s2" --zero-latency --max-model-len 1000000 --num-gpu-blocks-override 100000 --served-model-name other 2>/dev/null & pids+=($!)
"$BUILD/ir-relay" --port "$rp" --upstream "127.0.0.1:$s1" --upstream "127.0.0.1:$s2" & pids+=($!)
up() { for _ in $(seq 100); do curl -sf "localhost:$1/health" >/dev/null && return 0; sleep 0.05; done; fail "not up: $1"; }
for p in "$s1" "$s2" "$rp"; do up "$p"; done

"$BUILD/ir-relay" --port x 2>/dev/null && fail "bad --port accepted"
"$BUILD/ir-relay" --port 1 --upstream nohost 2>/dev/null && fail "bad --upstream accepted"
"$BUILD/ir-relay" --help | grep -q -- '--busy-poll' || fail help

# Each new connection goes to the next upstream: the two serve different models.
m1=$(curl -s "localhost:$rp/v1/models" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
m2=$(curl -s "localhost:$rp/v1/models" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
[ "$m1" != "$m2" ] || fail "round robin: $m1 twice"

# A long stream, 1 MiB of request body and the response arrive whole.
body=$(python3 -c 'import json; print(json.dumps({"prompt": "x " * 500000, "max_tokens": 2000, "stream": True, "ignore_eos": True}))')
for _ in 1 2; do
  out=$(printf '%s' "$body" | curl -sN "localhost:$rp/v1/completions" -H 'content-type: application/json' --data-binary @-)
  n=$(echo "$out" | grep -c '^data: {' || true)
  [ "$n" = 2000 ] || fail "stream through the relay: $n chunks"
  echo "$out" | tail -2 | grep -q '^data: \[DONE\]' || fail "no [DONE]"
done

# Open loop: every request is sent, measured or counted as warmup, none fails.
line=$("$BUILD/ir-overhead" --url "http://127.0.0.1:$s1" --rate 1000 --requests 300 --warmup 50)
echo "$line" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["requests"] == 300 and d["measured"] == 250 and d["errors"] == 0, d
assert 0 < d["latency"]["p50"] <= d["latency"]["max"], d
assert d["seconds"] >= 0.29, d  # 300 requests at 1,000/s are spread over 0.3 s, not burst
' || fail "ir-overhead: $line"
# With a cap, no more connections than the cap, and every request still goes.
line=$("$BUILD/ir-overhead" --url "http://127.0.0.1:$s1" --rate 5000 --requests 400 --warmup 0 --max-connections 2)
echo "$line" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["measured"] == 400 and d["errors"] == 0 and 1 <= d["connections"] <= 2, d
' || fail "ir-overhead --max-connections: $line"
# A dead URL: every request is an error, and it exits 1.
if "$BUILD/ir-overhead" --url "http://127.0.0.1:1" --rate 1000 --requests 20 --warmup 2 >/dev/null; then fail "dead url exit 0"; fi
echo ok
