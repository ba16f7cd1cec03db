#!/usr/bin/env bash
# bench/sim/cpu-tier.sh: w4 (RAG) with the simulators' CPU tier against without, the
# same arrivals on both, the gateway following the simulators' KV events (the exact
# index, CPU tiers included) in both arms. Per policy and arm one
# `inferrail-bench compare` on fresh fleets; a summary table at the end.
#
#   OUT        results folder (default: a new bench/results/runs/cpu-tier-<time>)
#   POLICIES   default "cost_model,round_robin"
#   RATE       req/s in model time (default 1.2); SPEEDUP (default 10)
#   REQUESTS   measured requests (default 300), WARMUP (default 30), REPS (default 1)
#   GPU_BLOCKS per simulator (default 4096: 65,536 tokens, about 26 of w4's documents)
#   CPU_BLOCKS the CPU tier's (default 16384, four times the GPU cache)
#   CPU_US     the tier's transfer time per token (default 5, the gateway's default)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
OUT=$(fresh_out cpu-tier "${OUT:-}")
POLICIES=${POLICIES:-cost_model,round_robin}
RATE=${RATE:-1.2}
SPEEDUP=${SPEEDUP:-10}
REQUESTS=${REQUESTS:-300}
WARMUP=${WARMUP:-30}
REPS=${REPS:-1}
GPU_BLOCKS=${GPU_BLOCKS:-4096}
CPU_BLOCKS=${CPU_BLOCKS:-16384}
CPU_US=${CPU_US:-5}
base="--num-gpu-blocks-override $GPU_BLOCKS --cpu-transfer-token-us $CPU_US"
for arm in gpu-only cpu-tier; do
  args=$base
  [ "$arm" = cpu-tier ] && args="$base --num-cpu-blocks $CPU_BLOCKS"
  "$B/inferrail-bench" compare --workload w4 --policies "$POLICIES" --rate "$RATE" \
    --requests "$REQUESTS" --warmup "$WARMUP" --repetitions "$REPS" --seed 1 \
    --speedup "$SPEEDUP" --kv-events --sim-args "$args" --out "$OUT/$arm" >&2
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print("| arm | policy | rep | hit rate (usage) | GPU hit rate (engines) | CPU-tier tokens / prompt tokens | TTFT p50 | p90 | p99 (wall ms) | errors |")
print("|---|---|---|---|---|---|---|---|---|---|")
for arm in ("gpu-only", "cpu-tier"):
    for f in sorted(glob.glob(os.path.join(out, arm, "w4-*-rep*.json"))):
        d = json.load(open(f))
        s, c = d["summary"], d["config"]
        cpu = s.get("engine_cpu_hits", 0) / s["prompt_tokens"] if s["prompt_tokens"] else 0
        print("| %s | %s | %d | %.3f | %.3f | %.3f | %.1f | %.1f | %.1f | %d |" % (
            arm, c["policy"], c["repetition"], s["hit_rate"], s["engine_hit_rate"] or 0, cpu,
            s["ttft_ms"]["p50"], s["ttft_ms"]["p90"], s["ttft_ms"]["p99"], s["errors"]))
PY
echo "results: $OUT" >&2
