#!/usr/bin/env bash
# inferrail-bench calibrate against a simulator: it measures cold and warm
# prompts, fits cost_model's prefill shape and decode time, prints them as
# routing.cost_model keys and writes its points; with --cpu-tier, against a
# simulator with --num-cpu-blocks, the CPU tier's transfer time per token. No timing bound is asserted
# (a loaded machine adds to every time); the values must be positive and the
# warm points must be warm (the engine reported cached tokens).
set -euo pipefail
BUILD=${IR_BUILD:-build}
ROOT=${IR_ROOT:-.}
B="$BUILD/inferrail-bench"
. "$ROOT/tests/integration/ports.sh"
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
port=$(freeport)
# 16 output tokens 2 ms apart: a loaded machine (or ASan) that fires the simulator's
# timer late emits several tokens at once, and with 4 tokens 1 ms apart all of them
# came in one piece, a time per output token of 0.
"$BUILD/inferrail-sim" --port "$port" --enable-prompt-tokens-details --decode-token-ms 2 \
  --prefill-token-us 20 >"$dir/sim.log" 2>&1 &
sim=$!
trap 'kill $sim 2>/dev/null; rm -rf "$dir"' EXIT
for i in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
out=$("$B" calibrate --base-url "http://127.0.0.1:$port" --repeats 1 --scale 0.5 \
  --max-tokens 16 --out "$dir/cal.json" 2>"$dir/err.log") || { cat "$dir/err.log"; fail "calibrate failed"; }
for k in prefill_token_us prefill_pair_ns prefill_fixed_ms decode_token_ms; do
  grep -q "^    $k: " <<<"$out" || fail "no $k in: $out"
done
python3 - "$dir/cal.json" <<'PY' || fail "bad results file"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "inferrail-bench/calibrate/1", d["schema"]
cm = d["cost_model"]
assert cm["prefill_token_us"] > 0 and cm["decode_token_ms"] > 0, cm
pts = d["points"]
assert len(pts) == 12, len(pts)
warm = [p for p in pts if p["cached_tokens"] > 0]
assert len(warm) == 7, warm  # every warm point was served from the cache
assert all(p["ttft_ms"] > 0 for p in pts)
PY
# --cpu-tier against a simulator without one: refused, saying why.
"$B" calibrate --base-url "http://127.0.0.1:$port" --repeats 1 --scale 0.25 --max-tokens 2 \
  --cpu-tier >/dev/null 2>"$dir/err2.log" && fail "--cpu-tier without a CPU tier"
grep -q "no CPU tier" "$dir/err2.log" || fail "no reason given: $(cat "$dir/err2.log")"
# --cpu-tier against one with a CPU tier (a 4,096-token GPU cache, 32,768 on the CPU):
# every prefix comes back from the CPU, and the rate is printed and written.
port2=$(freeport)
"$BUILD/inferrail-sim" --port "$port2" --enable-prompt-tokens-details --decode-token-ms 1 \
  --prefill-token-us 20 --num-gpu-blocks-override 256 --max-model-len 4096 \
  --num-cpu-blocks 2048 --cpu-transfer-token-us 30 >"$dir/sim2.log" 2>&1 &
sim2=$!
trap 'kill $sim $sim2 2>/dev/null; rm -rf "$dir"' EXIT
for i in $(seq 100); do
  curl -sf "http://127.0.0.1:$port2/health" >/dev/null 2>&1 && break
  sleep 0.1
done
out=$("$B" calibrate --base-url "http://127.0.0.1:$port2" --repeats 1 --scale 0.5 \
  --max-tokens 4 --cpu-tier --out "$dir/cal2.json" 2>"$dir/err3.log") || { cat "$dir/err3.log"; fail "calibrate --cpu-tier failed"; }
grep -q "^    cpu_transfer_token_us: " <<<"$out" || fail "no cpu_transfer_token_us in: $out"
python3 - "$dir/cal2.json" <<'PY' || fail "bad --cpu-tier results file"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cost_model"]["cpu_transfer_token_us"] >= 0, d["cost_model"]
pts = d["cpu_points"]
assert len(pts) == 3, pts  # 256, 512 and 1,024-token prefixes, each back from the CPU
assert all(p["loaded_tokens"] >= 240 for p in pts), pts
print("cpu_transfer_token_us %.1f (the simulator's: 30)" % d["cost_model"]["cpu_transfer_token_us"], file=sys.stderr)
PY
"$B" calibrate 2>/dev/null && fail "calibrate without --base-url"
"$B" calibrate --base-url "http://127.0.0.1:$port" --repeats 0 2>/dev/null && fail "--repeats 0"
echo "1 passed, 0 failed"
