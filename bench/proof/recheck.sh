#!/usr/bin/env bash
# cost_model's targets again at one commit, in about an hour and a half instead of
# make proof's four: every workload at the rate and speed-up the committed proof
# ran it (PLAN: bench/results/cache-aware/plan.jsonl, so no capacity probe), 3
# repetitions, and only the policies cost_model's targets are judged against:
# round robin and SGLang's policy everywhere, plus on w6 the other cache-blind
# baselines (its target is the best of them). w2 and w4 on 28,672-block caches
# (run.sh's defaults). Then the capacity of w1 (cost_model against round robin),
# and targets.py into OUT/targets.md.
#
#   OUT        bench/results/cache-aware/recheck
#   WORKLOADS  w1 w5 w6 w3 sglang-gsp prefix-repetition w4 llmd-shared-prefix w2
#   CAPACITY   w1 (workloads whose capacity target is checked again; "" for none)
#   BUILD      the binaries (build/)
#   PLAN       the rates and speed-ups (the proof's plan.jsonl; the rechecks of
#              sessions 33 and 34 ran first-run/plan.jsonl, the proof's plan then)
# Unlike make proof, it draws no report (REPORT is a temporary folder) and does not
# check K; what it writes is slimmed (bench/proof/slim.py) at the end.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
PROOF=$root/bench/results/cache-aware
PLAN=${PLAN:-$PROOF/plan.jsonl}
export OUT=${OUT:-$PROOF/recheck}
export WORKLOADS=${WORKLOADS:-"w1 w5 w6 w3 sglang-gsp prefix-repetition w4 llmd-shared-prefix w2"}
CAPACITY=${CAPACITY-w1}
export POLICIES=${POLICIES:-round_robin,cost_model,sglang_cache_aware}
export POLICIES_w6=${POLICIES_w6:-round_robin,random,least_request,p2c,cost_model,sglang_cache_aware}
export KCHECK=0 REPORT=${REPORT:-$(mktemp -d)}
# RATE_<w> and K_<w> from the committed plan (w4: 0.07 req/s at K = 30, as run
# before on these caches); a variable already set wins.
eval "$(python3 - "$PLAN" <<'PY'
import json, os, sys
plan = {"w4": {"rates": "0.07", "speedup": 30}}
for line in open(sys.argv[1]):
    d = json.loads(line)
    plan[d["workload"]] = d
for w, d in plan.items():
    v = w.replace("-", "_")
    for name, val in (("RATE_" + v, d["rates"]), ("K_" + v, d["speedup"])):
        if name not in os.environ:
            print(f"export {name}={val}")
PY
)"
mkdir -p "$OUT"
"$root/bench/proof/run.sh"
if [ -n "$CAPACITY" ]; then
  for w in $CAPACITY; do
    cp "$PROOF/capacity-$w.json" "$OUT/" 2>/dev/null || true
  done
  PROOF=$OUT OUT=$OUT/capacity-compare WORKLOADS="$CAPACITY" "$root/bench/proof/capacity.sh"
fi
"$root/bench/proof/targets.py" "$OUT" > "$OUT/targets.md"
"$root/bench/proof/slim.py" "$OUT"
cat "$OUT/targets.md"
