#!/usr/bin/env bash
# The open-loop sender's precision: 300 req/s open loop through the gateway to
# three --zero-latency simulators; every request must leave within 2 ms of its
# schedule at p99. Appends one line per repetition to $OUT/results.jsonl
# (default: a new bench/results/runs/openloop-<time>; OUT=bench/results/openloop
# appends to the committed results).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD=${BUILD:-$root/build}
OUT=${OUT:-$root/bench/results/runs/openloop-$(date +%Y%m%d-%H%M%S)}
RATE=${RATE:-300}
N=${N:-3000}
REPS=${REPS:-3}
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BUILD/inferrail-bench" compare --workload w6 --policies round_robin --replicas 3 \
  --rate "$RATE" --requests "$N" --warmup 100 --repetitions "$REPS" --sim-args "--zero-latency" \
  --param p_min=50 --param p_max=200 --param out_min=8 --param out_max=8 --out "$tmp" 2>/dev/null
python3 - "$tmp" "$RATE" <<'PY' | tee -a "$OUT/results.jsonl"
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/w6-round_robin-rep*.json")):
    s = json.load(open(f))["summary"]
    lag = s["send_lag_ms"]
    print(json.dumps({"bench": "openloop_send_lag", "rate": float(sys.argv[2]),
                      "requests": s["requests"], "errors": s["errors"],
                      "lag_p50_ms": lag["p50"], "lag_p99_ms": lag["p99"], "lag_max_ms": lag["max"],
                      "goal_p99_ms": 2, "met": lag["p99"] <= 2}))
PY
