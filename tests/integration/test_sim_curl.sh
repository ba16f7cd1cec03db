#!/usr/bin/env bash
# The README's curl examples against a real inferrail-sim.
set -euo pipefail
. "$(dirname "$0")/ports.sh"
BUILD=${IR_BUILD:-build}
port=$(freeport)
"$BUILD/inferrail-sim" --port "$port" --enable-prompt-tokens-details --zero-latency 2>/tmp/ir-sim-curl.$$ &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f /tmp/ir-sim-curl.$$' EXIT
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
fail() { echo "FAIL: $*"; exit 1; }

out=$(curl -s "localhost:$port/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"inferrail/sim-8b","messages":[{"role":"user","content":"Hello"}],"max_tokens":16}')
echo "$out" | grep -q '"object":"chat.completion"' || fail "chat: $out"
echo "$out" | grep -q '"completion_tokens":16' || fail "usage: $out"

out=$(curl -sN "localhost:$port/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"messages":[{"role":"user","content":"Hello"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}')
[ "$(echo "$out" | grep -c '^data: ')" -eq 7 ] || fail "stream: $out"
echo "$out" | tail -2 | grep -q '^data: \[DONE\]' || fail "done: $out"

code=$(curl -s -o /dev/null -w '%{http_code}' "localhost:$port/v1/chat/completions" -d '{"model":"x","messages":[]}')
[ "$code" = 404 ] || fail "unknown model gave $code"
# Read the page whole first: grep -q leaving early would SIGPIPE curl, and pipefail fail it.
m=$(curl -s "localhost:$port/metrics")
grep -q '^vllm:num_requests_running{engine="0",model_name="inferrail/sim-8b"} 0.0$' <<<"$m" ||
  fail "metrics: $(grep -E '^vllm:num_requests_(running|waiting)' <<<"$m")"
# The same for the help text (over 4 KiB: two writes, the second one after grep -q left).
h=$("$BUILD/inferrail-sim" --help)
grep -q -- '--served-model-name' <<<"$h" || fail help
grep -q -- '--num-cpu-blocks' <<<"$h" || fail "help: no --num-cpu-blocks"
# The gateway's builtin:sim tokenizer counts exactly what the simulator bills.
body='{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi \u00e9 there!"}],"max_tokens":1}'
billed=$(curl -s "localhost:$port/v1/chat/completions" -d "$body" | python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"]["prompt_tokens"])')
counted=$(echo "$body" | "$BUILD/inferrail-gateway" tokenize --tokenizer builtin:sim | python3 -c 'import json,sys; print(json.load(sys.stdin)["prompt_tokens"])')
[ "$billed" = "$counted" ] || fail "builtin:sim counted $counted, the simulator billed $billed"
"$BUILD/inferrail-sim" --bogus 2>/dev/null && fail "bad flag accepted"
# A stream's head leaves at once, before the prefill (as vLLM's server sends it):
# with a 5 s prefill, the head is there within 3 s, and no event yet.
slow=$(freeport)
"$BUILD/inferrail-sim" --port "$slow" --prefill-fixed-ms 5000 2>/dev/null &
slow_pid=$!
for _ in $(seq 100); do curl -sf "localhost:$slow/health" >/dev/null && break; sleep 0.05; done
head=$(curl -sN -D - -m 3 "localhost:$slow/v1/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"inferrail/sim-8b","stream":true,"max_tokens":2,"messages":[{"role":"user","content":"hi"}]}' || true)
kill "$slow_pid" 2>/dev/null
grep -q '^HTTP/1.1 200' <<<"$head" || fail "no head before the prefill ended: $head"
grep -q '^data:' <<<"$head" && fail "an event before the prefill ended: $head"
echo "1 passed, 0 failed"
