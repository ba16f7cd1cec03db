#!/usr/bin/env bash
# The proof's capacity target: the highest rate at which a policy holds the SLO
# (p99 TTFT <= 2 s, p99 TPOT <= 100 ms in model time, no error), for cost_model
# against round_robin, on the workloads named by the target (w1: 2x, w2: 1.5x).
# Each policy is probed exactly as bench/proof/run.sh probes round_robin (same
# fleet, speed-up, simulator flags, seed and probe length), in one run, one
# after the other on fresh fleets. round_robin is probed again here rather than
# read from the proof's capacity file, so that both numbers come from the same
# minutes of the same machine.
#
#   bench/proof/capacity.sh            # writes bench/results/cache-aware/capacity-compare/
#   WORKLOADS="w1" POLICIES=round_robin,cost_model,kv_aware bench/proof/capacity.sh
#
# K per workload is the one the proof used (read from its capacity-<w>.json),
# else K_<w>, else 10.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD=${BUILD:-$root/build}
BIN="$BUILD/inferrail-bench"
PROOF=${PROOF:-$root/bench/results/cache-aware}
OUT=${OUT:-$PROOF/capacity-compare}
WORKLOADS=${WORKLOADS:-"w1 w2"}
POLICIES=${POLICIES:-round_robin,cost_model}
REPLICAS=${REPLICAS:-3}
START_RATE=${START_RATE:-0.5}
CAP_REQ=${CAP_REQ:-60}
PROBE_S=${PROBE_S:-60}
CAP_STEPS=${CAP_STEPS:-3}
# Each probe's warm-up, in model seconds (WARM_S_<workload> for one workload):
# w2's conversations need time to reach their later turns, as in the proof's
# compare runs (W2_WARM_S in run.sh).
WARM_S=${WARM_S:-0}
WARM_S_w2=${WARM_S_w2:-30}
SIM_ARGS_w2=${SIM_ARGS_w2:---num-gpu-blocks-override 28672} # as run.sh

var() { local v="${1}_${2//-/_}"; echo "${!v:-$3}"; }
speedup() {
  local f="$PROOF/capacity-$1.json" v
  v=$(var K "$1" "")
  [ -n "$v" ] && { echo "$v"; return; }
  [ -f "$f" ] || { echo 10; return; }
  python3 -c "import json,sys; print('%g' % json.load(open(sys.argv[1])).get('speedup', 1))" "$f"
}

[ -x "$BIN" ] || { echo "capacity: no $BIN (make build)" >&2; exit 2; }
mkdir -p "$OUT"
for w in $WORKLOADS; do
  k=$(speedup "$w")
  sa=$(var SIM_ARGS "$w" "")
  for p in ${POLICIES//,/ }; do
    echo "capacity: $w $p at speed-up $k"
    "$BIN" capacity --workload "$w" --policy "$p" --replicas "$REPLICAS" \
      --requests "$CAP_REQ" --warmup 5 --warmup-seconds "$(var WARM_S "$w" "$WARM_S")" \
      --probe-seconds "$PROBE_S" --start-rate "$START_RATE" \
      --steps "$CAP_STEPS" --speedup "$k" --seed 100 ${sa:+--sim-args "$sa"} \
      --out "$OUT/$w-$p.json"
    rm -rf "$OUT/$w-$p.json.logs"
  done
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    d = json.load(open(f))
    rows.setdefault(d["workload"], {})[d["policy"]] = d
print("| workload | policy | capacity (req/s, model time) | first failing rate | x round_robin |")
print("|---|---|---|---|---|")
for w, ps in rows.items():
    rr = (ps.get("round_robin") or {}).get("capacity_rps")
    for p, d in ps.items():
        c = d.get("capacity_rps")
        x = f"{c / rr:.2f}" if rr and c is not None else "n/a"
        print(f"| {w} | {p} | {c} | {d.get('first_failing_rps')} | {x} |")
PY
