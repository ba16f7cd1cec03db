#!/usr/bin/env bash
# bench/events/two-gateways.sh: cost_model with KV events through one gateway, then
# through two (issue 15, "several gateways, one view"): the same simulators' flags, the
# same arrivals (same seeds), the gateways following every simulator's KV events, requests
# spread over the two (alternate: request i to gateway i mod 2, so a chat's turns land
# on either). Prints each workload's hit rates and their difference in points; the goal
# is within 2 points.
#
#   OUT        results folder (default: a new bench/results/runs/two-gateways-<time>)
#   WORKLOADS  default "w1" ("w1 w4" adds RAG)
#   RATE_<w>   req/s in model time (w1 2.1 and w4 1.2, the proof's and cpu-tier.sh's)
#   SPEEDUP    K (default 10); REQUESTS measured (default 600, the proof's w1),
#   WARMUP     (default 60), REPS (default 1; repetition k has seed 1+k in both arms)
#   SPREAD     alternate (default) or session (a chat stays on one gateway)
#   SIM_ARGS   extra simulator flags, e.g. "--num-gpu-blocks-override 1024" for
#              eviction pressure (default none: the simulator's 4,096 blocks)
#   CONTROL    1: one more run through one gateway, on the same arrivals, after the two
#              (an A/A pair: how far two runs of the same set-up differ on this machine)
#
# A quick run on a busy machine: REQUESTS=300 WARMUP=30 SPEEDUP=5 bench/events/two-gateways.sh
# Hit rates depend little on the machine's speed, but watch the send lag column: a client
# that falls behind changes what is in flight, and so the routing.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
OUT=$(fresh_out two-gateways "${OUT:-}")
WORKLOADS=${WORKLOADS:-w1}
SPEEDUP=${SPEEDUP:-10}
REQUESTS=${REQUESTS:-600}
WARMUP=${WARMUP:-60}
REPS=${REPS:-1}
SPREAD=${SPREAD:-alternate}
SIM_ARGS=${SIM_ARGS:-}
CONTROL=${CONTROL:-0}
arms="1 2"
[ "$CONTROL" = 1 ] && arms="1 2 1again"
rate_of() {
  local v="RATE_$1"
  case $1 in
  w1) echo "${!v:-2.1}" ;;
  w4) echo "${!v:-1.2}" ;;
  *) echo "${!v:?set RATE_$1}" ;;
  esac
}
for w in $WORKLOADS; do
  for arm in $arms; do
    n=${arm%again}
    "$B/inferrail-bench" compare --workload "$w" --policies cost_model --kv-events \
      --gateways "$n" --spread "$SPREAD" --rate "$(rate_of "$w")" --requests "$REQUESTS" \
      --warmup "$WARMUP" --repetitions "$REPS" --seed 1 --speedup "$SPEEDUP" \
      ${SIM_ARGS:+--sim-args "$SIM_ARGS"} --out "$OUT/$w-gw$arm" >&2
  done
done
python3 - "$OUT" $WORKLOADS <<'PY'
import glob, json, os, statistics, sys
out, wls = sys.argv[1], sys.argv[2:]
print("| workload | rep | gateways | hit rate (usage) | engines | per gateway | prediction exact | send lag p99 (ms) | TTFT p90 (wall ms) | errors |")
print("|---|---|---|---|---|---|---|---|---|---|")
diffs = {}
for w in wls:
    med = {}
    for n in ("1", "2", "1again"):
        hits = []
        for f in sorted(glob.glob(os.path.join(out, f"{w}-gw{n}", f"{w}-cost_model-rep*.json"))):
            d = json.load(open(f))
            s, c = d["summary"], d["config"]
            pg = " / ".join("%.3f" % g["hit_rate"] for g in s.get("per_gateway", []) if g["hit_rate"] is not None) or "-"
            pe = ((s.get("prediction") or {}).get("cached_tokens") or {}).get("exact")
            print("| %s | %d | %s | %.3f | %.3f | %s | %s | %.2f | %.1f | %d |" % (
                w, c["repetition"], "%d%s" % (c["gateways"], " (control)" if n == "1again" else ""), s["hit_rate"], s["engine_hit_rate"] or 0, pg,
                "%.3f" % pe if pe is not None else "-", s["send_lag_ms"]["p99"],
                s["ttft_ms"]["p90"], s["errors"]))
            hits.append(s["hit_rate"])
        if hits: med[n] = statistics.median(hits)
    diffs[w] = med
print()
for w, med in diffs.items():
    a, b = med["1"], med["2"]
    d = 100 * (b - a)
    verdict = "within 2 points" if abs(d) <= 2 else "NOT within 2 points"
    print(f"{w}: cost_model hit rate (median over repetitions), 1 gateway {a:.3f}, 2 gateways {b:.3f}: {d:+.1f} points ({verdict})")
    if "1again" in med:
        print(f"{w}: control, 1 gateway again {med['1again']:.3f}: {100 * (med['1again'] - a):+.1f} points from the first")
PY
echo "results: $OUT" >&2
