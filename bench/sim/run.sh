#!/usr/bin/env bash
# Simulator benchmarks (issue: foundation and inferrail-sim). Reproduce with:
#   make build && bench/sim/run.sh [OUT_DIR]
# Writes one JSON line per measurement to OUT_DIR/results.jsonl (default: a
# new bench/results/runs/sim-<time>; pass bench/results/sim to update the
# committed results) and prints a summary. Loopback only; bounded in time.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/tests/integration/ports.sh"
B=${IR_BUILD:-$root/build}
out=${1:-$root/bench/results/runs/sim-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
res="$out/results.jsonl"
: > "$res"
port=$(freeport)
ncpu=$(nproc)
pin_sim=(); pin_client=()
# The simulator is single-threaded: pin it to one core. The client is left to
# the scheduler (on this class of VM, cross-core wakeups are costly enough that
# pinning the client to the other core measures the hypervisor, not us).
if [ "$ncpu" -ge 2 ] && command -v taskset >/dev/null; then pin_sim=(taskset -c 0); fi

start_sim() {
  "${pin_sim[@]}" "$B/inferrail-sim" --port "$port" "$@" 2>/dev/null &
  sim=$!
  for _ in $(seq 200); do curl -sf "localhost:$port/health" >/dev/null && return; sleep 0.05; done
  echo "simulator did not start" >&2; exit 1
}
stop_sim() { kill "$sim" 2>/dev/null; wait "$sim" 2>/dev/null || true; }
trap 'kill $sim 2>/dev/null || true' EXIT

echo "== machine: $(nproc) cores, $(uname -r); simulator pinned to core 0"
echo "{\"bench\":\"env\",\"cores\":$ncpu,\"date\":\"$(date -u +%FT%TZ)\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\"}" >> "$res"

# 1. 2,000 concurrent SSE streams straight to one simulator (zero latency, 16 tokens each),
#    five runs; the summary takes the median.
start_sim --zero-latency --max-num-seqs 4096
for i in 1 2 3 4 5; do
  "${pin_client[@]}" "$B/inferrail-bench" streams --url "http://127.0.0.1:$port" --n 2000 --max-tokens 16 | tee -a "$res"
done
# 2. Requests per second in --zero-latency mode, the simulator on one core.
for c in 64 256; do
  "${pin_client[@]}" "$B/inferrail-bench" rps --url "http://127.0.0.1:$port" --concurrency $c --duration 5 --no-stream --max-tokens 16 | tee -a "$res"
  "${pin_client[@]}" "$B/inferrail-bench" rps --url "http://127.0.0.1:$port" --concurrency $c --duration 5 --max-tokens 16 | tee -a "$res"
done
stop_sim
# 3. A 35,000-request soak with distinct prompts (the prefix cache churns); resident memory growth.
start_sim --zero-latency
"${pin_client[@]}" "$B/inferrail-bench" soak --url "http://127.0.0.1:$port" --requests 35000 --concurrency 64 --pid "$sim" --distinct | tee -a "$res"
stop_sim
# 4. The builtin:sim tokenizer next to memcpy.
"$B/inferrail-bench" tokenize-sim 256 | tee -a "$res"

python3 - "$res" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
st = [r for r in rows if r["bench"] == "streams"]
print("\nsummary")
runs = ", ".join("%.3f" % r["total_s"] for r in st)
print(f"  2,000 streams: median {statistics.median(r['total_s'] for r in st):.3f} s "
      f"(runs: {runs}), errors {sum(r['errors'] for r in st)}")
for r in rows:
    if r["bench"] == "rps":
        print(f"  rps c={r['concurrency']} stream={r['stream']}: {r['rps']:.0f} req/s, p99 {r['latency_ms']['p99']:.2f} ms, errors {r['errors']}")
    if r["bench"] == "soak":
        print(f"  soak: {r['requests']} requests, errors {r['errors']}, RSS growth {r['rss_growth_mb']:.2f} MB")
    if r["bench"] == "tokenize-sim":
        print(f"  builtin:sim: {r['encode_mib_per_s']:.0f} MiB/s, {r['tokens_per_s']/1e6:.0f} M tokens/s "
              f"({r['encode_vs_memcpy']:.3f} of memcpy's speed)")
PY
