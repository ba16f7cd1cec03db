#!/usr/bin/env bash
# The committed baselines: for each workload w1..w6, measure what three
# simulators behind the gateway sustain (capacity, round_robin), then compare
# the four policies at about 70% of that, 3 repetitions each.
# Writes bench/results/baselines/ and the report in bench/report/baselines/.
#
# Scale (small, estimated ~45 minutes on a 2-core VM; see docs/bench-harness.md):
#   capacity: probes of about PROBE_S seconds (at least CAP_REQ requests), 2 bisection steps
#   compare:  REQ measured requests after WARMUP, 3 repetitions, 4 policies
# Override with the environment, e.g. REQ=200 REPS=5 bench/baselines/run.sh;
# K=10 runs everything 10 times faster (--speedup, docs/bench-harness.md).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD=${BUILD:-$root/build}
BIN="$BUILD/inferrail-bench"
OUT=${OUT:-$root/bench/results/baselines}
REPORT=${REPORT:-$root/bench/report/baselines}
WORKLOADS=${WORKLOADS:-"w1 w2 w3 w4 w5 w6"}
POLICIES=${POLICIES:-round_robin,random,least_request,p2c}
REPLICAS=${REPLICAS:-3}
REQ=${REQ:-30}
WARMUP=${WARMUP:-5}
REPS=${REPS:-3}
CAP_REQ=${CAP_REQ:-30}
PROBE_S=${PROBE_S:-8}
SHARE=${SHARE:-0.7}
K=${K:-1}
# w2's documented think time is 10-20 s; at this scale a chat would never
# reach its second turn, so the baseline shortens it (recorded in the results).
declare -A PARAMS=([w2]="--param think_min_s=2 --param think_max_s=4")

mkdir -p "$OUT"
start=$(date +%s)
for w in $WORKLOADS; do
  cap="$OUT/capacity-$w.json"
  if [ ! -f "$cap" ] || [ -n "${RECAPACITY:-}" ]; then
    "$BIN" capacity --workload "$w" --policy round_robin --replicas "$REPLICAS" \
      --requests "$CAP_REQ" --warmup 5 --probe-seconds "$PROBE_S" --start-rate 1 --steps 2 --speedup "$K" \
      --seed 100 ${PARAMS[$w]:-} --out "$cap"
  fi
  c=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['capacity_rps'] or 0)" "$cap")
  rate=$(python3 -c "import sys; c=float(sys.argv[1]); print(round(max(c*float(sys.argv[2]),0.25),2))" "$c" "$SHARE")
  echo "baselines: $w sustains $c req/s with round_robin; comparing at $rate req/s"
  rm -rf "$OUT/$w"
  "$BIN" compare --workload "$w" --policies "$POLICIES" --replicas "$REPLICAS" --rate "$rate" \
    --requests "$REQ" --warmup "$WARMUP" --repetitions "$REPS" --seed 1 --speedup "$K" ${PARAMS[$w]:-} \
    --out "$OUT/$w"
  rm -rf "$OUT/$w/logs"
done
rm -rf "$OUT"/capacity-*.json.logs
"$BIN" report "$OUT" --out "$REPORT" --title "Inferrail baselines: $REPLICAS simulators, four policies"
echo "baselines: done in $(( $(date +%s) - start )) s"
