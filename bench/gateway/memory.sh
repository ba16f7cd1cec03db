#!/usr/bin/env bash
# Gateway memory benchmarks. Reproduce with:
#   make build && bench/gateway/memory.sh [OUT_DIR]
#  1. 2,000 concurrent SSE streams through the gateway to three simulators:
#     zero errors and an even spread;
#  2. about 640 MiB streamed to 20 clients that stop reading for 3 s: the
#     gateway's resident memory stays bounded (backpressure pauses the engines);
#  3. an 8 MiB body arriving as 1-byte chunks (chunked encoding): the gateway's
#     resident memory while it arrives.
# Loopback only; about a minute.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
out=$(fresh_out gateway "${1:-}") # bench/results/gateway updates the committed ones
mkdir -p "$out"
res="$out/memory.jsonl"
: > "$res"

# Simulators that stream fast and hold long sequences: decode 1 us per token,
# no batch slope, no prefill cost, a KV cache large enough for 176k-token outputs.
start_sims 3 -- --max-model-len 4000000 --num-gpu-blocks-override 300000 \
  --max-num-seqs 4096 --decode-token-ms 0.001 --decode-batch-us 0 --prefill-token-us 0 \
  --prefill-pair-ns 0 --prefill-fixed-ms 0
gw=$(freeport); gwa=$(freeport)
gw_yaml "$tmp/gw.yaml" "$gw" "$gwa" 4096
# Each measurement gets a fresh gateway, so none inherits another's buffers.
start_gw() {
  "$B/inferrail-gateway" --config "$tmp/gw.yaml" 2>>"$tmp/gw.log" & gwpid=$!; pids+=($gwpid)
  waitup "http://127.0.0.1:$gw/health"
  sleep 0.3
  idle=$(awk '/VmRSS/{print $2}' /proc/$gwpid/status)
}
stop_gw() { kill "$gwpid"; wait "$gwpid" 2>/dev/null || true; }
start_gw
env_json ",\"gateway_rss_idle_kib\":$idle" >> "$res"
for i in 1 2 3; do
  "$B/inferrail-bench" streams --url "http://127.0.0.1:$gw" --n 2000 --max-tokens 16 | tee -a "$res"
done
echo "{\"bench\":\"rss_after_streams\",\"kib\":$(awk '/VmRSS/{print $2}' /proc/$gwpid/status)}" | tee -a "$res"
stop_gw
start_gw
"$B/ir-slowclient" stall --port "$gw" --clients 20 --tokens 176000 --pid "$gwpid" --hold-ms 3000 | tee -a "$res"
stop_gw
start_gw
"$B/ir-slowclient" body --port "$gw" --bytes 8388608 --pid "$gwpid" | tee -a "$res"
stop_gw

python3 - "$res" <<'PY' | tee "$out/memory.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
env = rows[0]
print("| measurement | result |")
print("|---|---|")
for r in rows:
    if r["bench"] == "streams":
        spread = ", ".join(f"{k} {v}" for k, v in sorted(r["per_replica"].items()))
        print(f"| 2,000 concurrent streams through the gateway | {r['completed']} completed, {r['errors']} errors, {r['total_s']:.2f} s; spread {spread} |")
    if r["bench"] == "stall":
        print(f"| {r['mib']:.0f} MiB streamed to {r['clients']} clients that stop reading for 3 s | {r['completed']} completed; gateway RSS peak {r['peak_mb']:.1f} MB in total (at start {r['rss_base_kib']/1024:.1f} MB) |")
    if r["bench"] == "slow_body":
        print(f"| 8 MiB body in 1-byte chunks | status {r['status']}; gateway RSS peak {r['arriving_peak_mb']:.1f} MB in total while it arrived, {r['peak_mb']:.1f} MB once the model was spliced in and it was forwarded (at start {r['rss_base_kib']/1024:.1f} MB) |")
    if r["bench"] == "rss_after_streams":
        print(f"| gateway RSS after the stream runs (pooled connections and allocator caches) | {r['kib']/1024:.1f} MB |")
PY
