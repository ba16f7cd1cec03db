#!/usr/bin/env bash
# The extended proof of issue 15: cost_model on the exact index (the simulators
# publish KV events, the gateway follows them: the pseudo-policy
# `cost_model+events`) against cost_model on the approximate index, with
# round_robin beside them for scale, on the same arrivals (compare gives every
# policy of a repetition the same seed). Five parts (PARTS), each a compare folder
# under OUT, and a check:
#   pressure-w1, pressure-w4  w1 and w4 under eviction pressure: simulator caches
#             smaller than the workload's working set (sizing below)
#   reset-w1  w1 with the simulators' prefix caches reset mid-run, one after
#             another (POST /reset_prefix_cache, `--reset-prefix-cache-at`): the
#             approximate index cannot see a reset; the events carry AllBlocksCleared
#   direct-w1 w1 with another client: a share of the requests (the same ones for
#             every policy) goes straight to simulator 1 (`--direct-share`), so it
#             holds prefixes and load the gateway never routed; the events show them
#   cpu-tier  w4 under the same pressure with a CPU tier (`--num-cpu-blocks`),
#             read against pressure-w4 (the same fleet without the tier)
#   accuracy  (a table, no runs of its own) predicted against engine-reported
#             cached tokens per run; the target: events >= ACCURACY (99.5%) exact
#             on pressure-w1 in every repetition
# in OUT/README-tables.md (bench/proof/summarize.py's tables, the accuracy and CPU-tier tables),
# OUT/runs.jsonl (each run's key figures), OUT/sizing.jsonl (how the caches were
# sized), OUT/plan.jsonl. Only summaries stay: each run's per-request file is
# reduced to a line of runs.jsonl and removed unless KEEP_RUNS=1.
#
# Sizing the caches (eviction pressure). `inferrail-bench workload` reports a
# schedule's working set: `reused_blocks`, the distinct blocks that some later
# request hits again, i.e. what the fleet must hold to reach the reuse ceiling
# (w1, 620 requests, seed 1: 10,533 blocks; w4, 420: 16,712). Each simulator
# gets --num-gpu-blocks-override
#   max(FILL x reused_blocks / REPLICAS, FLOOR_PROMPTS x the largest prompt's blocks)
# FILL 0.5: the whole fleet holds half the working set; the floor (3 of the
# largest prompts) keeps a few requests in flight on each replica. With the
# defaults: w1 1,755 blocks per simulator (fleet 5,265 = 50% of its working
# set), w4 3,243 (the floor: 1,081-block prompts; fleet 9,729 = 58%). The main
# proof's default 4,096 (fleet 12,288) holds all of w1's. GPU_BLOCKS_<w> overrides.
#
# The rate: as bench/proof/run.sh, `inferrail-bench capacity` with round_robin on
# the same fleet (the same simulator flags) at the same speed-up, then SHARE of it;
# RATE_<part> (RATE_pressure_w1, RATE_pressure_w4, RATE_reset_w1, RATE_direct_w1) or RATE skip
# the probe. The cpu-tier part runs at pressure-w4's rate. Probes are kept in
# OUT/capacity-<w>-<hash of the simulator flags, or default>.json and reused (reset-w1
# and direct-w1 share one); RECAPACITY=1 probes again.
#
# Knobs (environment; the defaults are the proof):
#   POLICIES   round_robin,cost_model,cost_model+events
#   PARTS      "pressure-w1 pressure-w4 reset-w1 direct-w1 cpu-tier"
#   K          10 (K_<part> per part)   REPLICAS 3   REPS 3   SHARE 0.7   SEED 1
#   REQ_W1     600   REQ 400 (w4)   WARMUP 20
#   FILL 0.5   FLOOR_PROMPTS 3   GPU_BLOCKS_w1, GPU_BLOCKS_w4
#   RESETS     the reset-w1 spec, S@R,.. in model seconds into the measured phase;
#              default RESET_COUNT (6) resets spread evenly over the measured span
#              (REQ_W1 / rate), cycling over the replicas. reset-w1 runs on the
#              main proof's default caches (SIM_ARGS_reset_w1, default none), so
#              that the resets are the only thing the approximate view misses
#   DIRECT     direct-w1's share of requests and simulator, F@R (default 0.25@1);
#              also on the default caches (SIM_ARGS_direct_w1); the summary leaves
#              the direct requests out (its "direct"), the engines' counters do not
#   CPU_BLOCKS 4 x the w4 GPU cache   CPU_US 5 (us per token loaded from the tier)
#   CPU_POLICIES round_robin,cost_model+events
#   ACCURACY   0.995 (the events' exact share that accuracy.md checks)
#   OUT        bench/results/cache-aware/events   REPORT bench/report/cache-aware/events
#              (REPORT=none: no report)
# A smoke run (a few minutes; numbers mean nothing):
#   REQ=24 REQ_W1=24 WARMUP=4 REPS=1 RATE=1 RESET_COUNT=2 \
#     OUT=/tmp/ev REPORT=none bench/proof/events.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD=${BUILD:-$root/build}
BIN="$BUILD/inferrail-bench"
OUT=${OUT:-$root/bench/results/cache-aware/events}
REPORT=${REPORT:-$root/bench/report/cache-aware/events}
POLICIES=${POLICIES:-round_robin,cost_model,cost_model+events}
PARTS=${PARTS:-"pressure-w1 pressure-w4 reset-w1 direct-w1 cpu-tier"}
K=${K:-10}
REPLICAS=${REPLICAS:-3}
REPS=${REPS:-3}
SHARE=${SHARE:-0.7}
SEED=${SEED:-1}
REQ_W1=${REQ_W1:-600}
REQ=${REQ:-400}
WARMUP=${WARMUP:-20}
FILL=${FILL:-0.5}
FLOOR_PROMPTS=${FLOOR_PROMPTS:-3}
RESET_COUNT=${RESET_COUNT:-6}
CPU_US=${CPU_US:-5}
CPU_POLICIES=${CPU_POLICIES:-round_robin,cost_model+events}
ACCURACY=${ACCURACY:-0.995}
START_RATE=${START_RATE:-0.5}
CAP_REQ=${CAP_REQ:-60}
PROBE_S=${PROBE_S:-60}
CAP_STEPS=${CAP_STEPS:-3}
KEEP_RUNS=${KEEP_RUNS:-0}
SIM_ARGS_reset_w1=${SIM_ARGS_reset_w1:-}
SIM_ARGS_direct_w1=${SIM_ARGS_direct_w1:-}
DIRECT=${DIRECT:-0.25@1}

var() { local v="${1}_${2//-/_}"; echo "${!v:-$3}"; }
requests() { [ "$1" = w1 ] && echo "$REQ_W1" || echo "$REQ"; }
cap_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['capacity_rps'] or 0)" "$1"; }

# gpu_blocks W: the cache size that puts W under eviction pressure (see above);
# appends the reasoning to sizing.jsonl.
gpu_blocks() {
  local w=$1 n given
  n=$(requests "$w")
  given=$(var GPU_BLOCKS "$w" "")
  "$BIN" workload --workload "$w" --rate 1 --requests "$n" --warmup "$WARMUP" --seed "$SEED" |
    python3 -c "
import json, math, sys
lines = [json.loads(l) for l in sys.stdin]
tail, reqs = lines[-1], lines[:-1]
w, fill, floor_p, reps, given = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
largest = max(r['prompt_tokens'] for r in reqs) // 16
by_fill = math.floor(fill * tail['reused_blocks'] / reps)
blocks = int(given) if given else max(by_fill, floor_p * largest)
d = dict(workload=w, requests=tail['requests'], seed=int(sys.argv[6]),
         reused_blocks=tail['reused_blocks'], distinct_blocks=tail['distinct_blocks'],
         largest_prompt_blocks=largest, fill=fill, floor_prompts=floor_p, replicas=reps,
         gpu_blocks=blocks, given=bool(given),
         fleet_over_working_set=round(blocks * reps / max(1, tail['reused_blocks']), 3))
open(sys.argv[7], 'a').write(json.dumps(d) + '\n')
print(blocks)" "$w" "$FILL" "$FLOOR_PROMPTS" "$REPLICAS" "$given" "$SEED" "$OUT/sizing.jsonl"
}

# rate_for PART W SIMARGS K: RATE_<part>, RATE, or SHARE x round_robin's capacity.
rate_for() {
  local part=$1 w=$2 sa=$3 k=$4 r cap
  r=$(var RATE "$part" "${RATE:-}")
  if [ -n "$r" ]; then echo "$r"; return; fi
  # one probe per workload and simulator flags: parts on the same fleet share it
  cap="$OUT/capacity-$w-$([ -n "$sa" ] && echo "$sa" | md5sum | cut -c1-8 || echo default).json"
  if [ ! -f "$cap" ] || [ -n "${RECAPACITY:-}" ]; then
    "$BIN" capacity --workload "$w" --policy round_robin --replicas "$REPLICAS" \
      --requests "$CAP_REQ" --warmup 5 --probe-seconds "$PROBE_S" --start-rate "$START_RATE" \
      --steps "$CAP_STEPS" --speedup "$k" --seed 100 ${sa:+--sim-args "$sa"} --out "$cap" >&2
    rm -rf "$cap.logs"
  fi
  python3 -c "import sys; print(round(max(float(sys.argv[1])*float(sys.argv[2]), 0.1), 3))" \
    "$(cap_of "$cap")" "$SHARE"
}

# run_part PART W POLICIES RATE K SIMARGS [extra compare flags..]
run_part() {
  local part=$1 w=$2 pols=$3 rate=$4 k=$5 sa=$6
  shift 6
  local n
  n=$(requests "$w")
  echo "events: $part: $w at $rate req/s, K $k, $n requests x $REPS, sim flags '${sa}' $*" >&2
  echo "{\"part\":\"$part\",\"workload\":\"$w\",\"rate\":$rate,\"speedup\":$k,\"requests\":$n,\"warmup\":$WARMUP,\"replicas\":$REPLICAS,\"repetitions\":$REPS,\"policies\":\"$pols\",\"sim_args\":\"$sa\",\"extra\":\"$*\"}" >> "$OUT/plan.jsonl"
  rm -rf "${OUT:?}/$part"
  "$BIN" compare --workload "$w" --policies "$pols" --replicas "$REPLICAS" --rate "$rate" \
    --requests "$n" --warmup "$WARMUP" --repetitions "$REPS" --seed "$SEED" --speedup "$k" \
    ${sa:+--sim-args "$sa"} "$@" --out "$OUT/$part" ||
    echo "events: $part: some runs failed (see $OUT/$part)" >&2
  rm -rf "$OUT/$part/logs"
}

[ -x "$BIN" ] || { echo "events: no $BIN (make build)" >&2; exit 2; }
mkdir -p "$OUT"
start=$(date +%s)
: > "$OUT/plan.jsonl"
: > "$OUT/sizing.jsonl"
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
declare -A SA RATES
# The simulator flags for N blocks: a context no longer than the cache holds, as vLLM demands.
cache_flags() { echo "--num-gpu-blocks-override $1 --max-model-len $(( $1 * 16 < 32768 ? $1 * 16 : 32768 ))"; }
if has pressure-w1; then SA[w1]=$(cache_flags "$(gpu_blocks w1)"); fi
if has pressure-w4 || has cpu-tier; then SA[w4]=$(cache_flags "$(gpu_blocks w4)"); fi
for part in $PARTS; do
  k=$(var K "$part" "$K")
  case $part in
  pressure-w1 | pressure-w4)
    w=${part#pressure-}
    RATES[$part]=$(rate_for "$part" "$w" "${SA[$w]}" "$k")
    run_part "$part" "$w" "$POLICIES" "${RATES[$part]}" "$k" "${SA[$w]}"
    ;;
  reset-w1)
    sa=$SIM_ARGS_reset_w1
    rate=$(rate_for "$part" w1 "$sa" "$k")
    spec=${RESETS:-$(python3 -c "
import sys
n, rate, cnt, reps = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
span = n / rate
print(','.join('%g@%d' % (round(span * (i + 1) / (cnt + 1), 2), i % reps + 1) for i in range(cnt)))" \
      "$REQ_W1" "$rate" "$RESET_COUNT" "$REPLICAS")}
    run_part "$part" w1 "$POLICIES" "$rate" "$k" "$sa" --reset-prefix-cache-at "$spec"
    ;;
  direct-w1)
    sa=$SIM_ARGS_direct_w1
    rate=$(rate_for "$part" w1 "$sa" "$k")
    run_part "$part" w1 "$POLICIES" "$rate" "$k" "$sa" --direct-share "$DIRECT"
    ;;
  cpu-tier)
    g=$(echo "${SA[w4]}" | awk '{print $2}')
    cb=${CPU_BLOCKS:-$((4 * g))}
    rate=${RATES[pressure-w4]:-$(rate_for pressure-w4 w4 "${SA[w4]}" "$k")}
    run_part "$part" w4 "$CPU_POLICIES" "$rate" "$k" \
      "${SA[w4]} --num-cpu-blocks $cb --cpu-transfer-token-us $CPU_US"
    ;;
  *) echo "events: unknown part '$part'" >&2; exit 2 ;;
  esac
done

# Each run's key figures, then (unless KEEP_RUNS=1) the per-request files go.
python3 - "$OUT" "$KEEP_RUNS" <<'PY'
import glob, json, os, sys
out, keep = sys.argv[1], sys.argv[2] == "1"
with open(os.path.join(out, "runs.jsonl"), "w") as f:
    for p in sorted(glob.glob(os.path.join(out, "*", "*-rep*.json"))):
        d = json.load(open(p))
        s, c = d["summary"], d["config"]
        pc = ((s.get("prediction") or {}).get("cached_tokens") or {})
        acts = d.get("actions") or []
        f.write(json.dumps({
            "part": os.path.basename(os.path.dirname(p)), "workload": c["workload"],
            "policy": c["policy"], "repetition": c.get("repetition"), "seed": c["seed"],
            "kv_events": c.get("kv_events"), "sim_args": c.get("sim_args"),
            "hit_rate": s.get("hit_rate"), "engine_hit_rate": s.get("engine_hit_rate"),
            "engine_cpu_hits": s.get("engine_cpu_hits"), "prompt_tokens": s.get("prompt_tokens"),
            "ttft_ms": {k: s["ttft_ms"].get(k) for k in ("p50", "p90", "p99")},
            "errors": s.get("errors"), "send_lag_p99_ms": s["send_lag_ms"].get("p99"),
            "prediction_exact": pc.get("exact"), "prediction_n": pc.get("n"),
            "prediction_over": pc.get("over"), "prediction_under": pc.get("under"),
            "resets_sent": sum(1 for a in acts if a.get("status") == 200),
            "direct_requests": (s.get("direct") or {}).get("requests"),
            "resets_asked": len(acts)}) + "\n")
        if not keep:
            os.remove(p)
PY

# The tables: summarize.py per folder, the accuracy check, the CPU tier.
{
  echo "# The extended proof (issue 15): tables"
  echo
  echo "Made by bench/proof/events.sh in $(( $(date +%s) - start )) s; plan.jsonl says what ran, sizing.jsonl how the caches were sized."
  echo
  for part in $PARTS; do
    [ -f "$OUT/$part/summary.json" ] || continue
    echo "## $part"
    echo
    python3 "$root/bench/proof/summarize.py" "$OUT/$part"
  done
  python3 - "$OUT" "$ACCURACY" <<'PY'
import json, os, sys
out, target = sys.argv[1], float(sys.argv[2])
runs = [json.loads(l) for l in open(os.path.join(out, "runs.jsonl"))]
def f3(x):
    return "n/a" if x is None else f"{x:.3f}"
def rows(part):
    return [r for r in runs if r["part"] == part]
for l in open(os.path.join(out, "sizing.jsonl")):
    z = json.loads(l)
    if z["fleet_over_working_set"] >= 1:
        print(f"WARNING {z['workload']}: the fleet's caches ({z['gpu_blocks']} blocks x "
              f"{z['replicas']}) hold its whole working set ({z['reused_blocks']} blocks): "
              "no eviction pressure (a smoke run's few requests, or GPU_BLOCKS too large).\n")
print("## Prediction accuracy: predicted against engine-reported cached tokens\n")
print("Share of measured requests whose `x-inferrail-cached-tokens` equalled the engine's "
      "`cached_tokens` (`prediction.cached_tokens.exact`), per run.\n")
print("| part | policy | rep | exact | over | under | requests |")
print("|---|---|---|---|---|---|---|")
for part in ("pressure-w1", "pressure-w4", "reset-w1", "direct-w1"):
    for r in rows(part):
        if r["policy"] == "round_robin": continue
        print(f"| {part} | {r['policy']} | {r['repetition']} | {f3(r['prediction_exact'])} | "
              f"{f3(r['prediction_over'])} | {f3(r['prediction_under'])} | {r['prediction_n']} |")
ev = [r["prediction_exact"] for r in rows("pressure-w1") if r["policy"].endswith("+events")]
if ev:
    worst = min(x for x in ev if x is not None) if any(x is not None for x in ev) else None
    ok = worst is not None and worst >= target
    print(f"\nTarget: events >= {target:.1%} exact on w1 under eviction pressure, in every "
          f"repetition: worst {worst}: **{'met' if ok else 'NOT met'}**.\n")
rs = rows("reset-w1")
if rs:
    print("Resets sent in reset-w1 (asked): " +
          ", ".join(f"{r['policy']} rep {r['repetition']}: {r['resets_sent']} ({r['resets_asked']})"
                    for r in rs) + ".\n")
cpu, base = rows("cpu-tier"), {(r["policy"], r["repetition"]): r for r in rows("pressure-w4")}
if cpu:
    print("## The CPU tier: w4 under pressure, with the tier against without\n")
    print("| policy | rep | hit rate without | with | CPU-tier tokens / prompt tokens | "
          "TTFT p90 without | with | p99 without | with (wall ms) | errors |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in cpu:
        b = base.get((r["policy"], r["repetition"]), {})
        share = (r["engine_cpu_hits"] or 0) / r["prompt_tokens"] if r["prompt_tokens"] else None
        print(f"| {r['policy']} | {r['repetition']} | {b.get('hit_rate')} | {r['hit_rate']} | "
              f"{None if share is None else round(share, 3)} | {(b.get('ttft_ms') or {}).get('p90')} | "
              f"{r['ttft_ms']['p90']} | {(b.get('ttft_ms') or {}).get('p99')} | "
              f"{r['ttft_ms']['p99']} | {r['errors']} |")
    print()
lag = [r for r in runs if (r["send_lag_p99_ms"] or 0) > 5]
for r in lag:
    print(f"WARNING {r['part']} {r['policy']} rep {r['repetition']}: send lag p99 "
          f"{r['send_lag_p99_ms']} ms; the client fell behind, lower K.\n")
PY
} > "$OUT/README-tables.md"
cat "$OUT/README-tables.md"
if [ "$REPORT" != none ]; then
  "$BIN" report "$OUT" --out "$REPORT" \
    --title "Inferrail: the exact KV index (events) against the approximate one"
fi
echo "events: done in $(( $(date +%s) - start )) s"
