#!/usr/bin/env bash
# --speedup K end to end: compare at K = 10 over a ladder of two rates runs
# simulators whose latencies are divided by 10 (TPOT ~2 ms instead of ~20 ms)
# on a schedule compressed 10 times, records K, and the report says so.
# Then a Mooncake trace replayed straight against a simulator: the prompt
# lengths the simulator counts are the trace's, and shared hash_ids hit.
set -euo pipefail
. "$(dirname "$0")/ports.sh"
BUILD=${IR_BUILD:-build}
FIX=${IR_FIXTURES:-tests/fixtures}
tmp=$(mktemp -d /tmp/ir-bench-speedup.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
B="$BUILD/inferrail-bench"
py() { python3 -c "$@"; }
W=(--workload w1 --param prompts=2 --param sys_min=300 --param sys_max=400
   --param out_min=10 --param out_max=10 --replicas 2 --requests 8 --warmup 1)

# 1. K = 1 and K = 10, same seed: the same requests, times / 10, latencies ~ / 10.
"$B" compare "${W[@]}" --policies round_robin --rate 4 --out "$tmp/k1" 2>"$tmp/k1.log" ||
  { cat "$tmp/k1.log"; fail "compare K=1"; }
"$B" compare "${W[@]}" --policies round_robin --rate 4,8 --speedup 10 --out "$tmp/k10" \
  2>"$tmp/k10.log" || { cat "$tmp/k10.log"; fail "compare K=10"; }
py '
import json,sys,os
d=sys.argv[1]
a=json.load(open(d+"/k1/w1-round_robin-rep0.json"))
b=json.load(open(d+"/k10/rate-4/w1-round_robin-rep0.json"))
s1=json.load(open(d+"/k1/summary.json")); s10=json.load(open(d+"/k10/rate-4/summary.json"))
assert s1["speedup"]==1 and s10["speedup"]==10, (s1["speedup"], s10["speedup"])
assert os.path.exists(d+"/k10/rate-8/summary.json")
assert json.load(open(d+"/k10/rate-8/summary.json"))["rate"]==8
assert b["config"]["speedup"]==10 and b["config"]["rate"]==4, b["config"]
eff=b["config"]["sim_args_effective"]
assert "--decode-token-ms 2" in eff and "--prefill-fixed-ms 0.5" in eff, eff
assert abs(b["config"]["slo_ttft_ms"]-200)<1e-6, b["config"]["slo_ttft_ms"]
ra,rb=a["requests"],b["requests"]
assert [r["expected_prompt_tokens"] for r in ra]==[r["expected_prompt_tokens"] for r in rb]
for x,y in zip(ra,rb): assert abs(x["sched_ms"]/10-y["sched_ms"])<0.01, (x["sched_ms"],y["sched_ms"])
t1=s1["policies"]["round_robin"]["tpot_ms"]["p50"]; t10=s10["policies"]["round_robin"]["tpot_ms"]["p50"]
assert t1>15 and t10<6, (t1,t10)
for s in (s1,s10): assert s["policies"]["round_robin"]["errors"]==0
' "$tmp" || fail "speed-up results"
if command -v gnuplot >/dev/null; then
  "$B" report "$tmp/k10/rate-4" --out "$tmp/report" 2>/dev/null || fail report
  grep -q 'speed-up 10×' "$tmp/report/README.md" || fail "report: no speed-up"
fi

# 2. A Mooncake trace against one simulator, at K = 4.
port=$(freeport)
"$BUILD/inferrail-sim" --port "$port" --enable-prompt-tokens-details --zero-latency \
  2>"$tmp/sim.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
"$B" run --base-url "http://127.0.0.1:$port" --trace "$FIX/traces/mooncake_small.jsonl" \
  --requests 5 --warmup 1 --speedup 4 --engine-metrics "http://127.0.0.1:$port" \
  --out "$tmp/trace.json" >/dev/null || fail "run --trace"
kill $pid
py '
import json,sys
d=json.load(open(sys.argv[1])); s=d["summary"]; c=d["config"]
assert c["workload"]=="trace" and c["speedup"]==4 and abs(c["rate"]-2.5)<1e-9, c
assert s["requests"]==5 and s["errors"]==0, s
rs=d["requests"]
assert [r["prompt_tokens"] for r in rs]==[1024+16,700+16,600+16,1300+16,1536+16], [r["prompt_tokens"] for r in rs]
assert [round(r["sched_ms"],3) for r in rs]==[0,0,187.5,312.5,437.5], [r["sched_ms"] for r in rs]
# (the measured clock starts at the first measured request)
# the second request repeats the first two blocks of the warmup one, the third the first
assert rs[0]["cached_tokens"]==1024 and rs[1]["cached_tokens"]==512, [r["cached_tokens"] for r in rs]
assert abs(s["hit_rate"]-s["engine_hit_rate"])<1e-3, (s["hit_rate"], s["engine_hit_rate"])
' "$tmp/trace.json" || fail "trace replay"
# compare replays the trace through the gateway; the summary has the trace's mean rate
"$B" compare --trace "$FIX/traces/mooncake_small.jsonl" --policies round_robin,random \
  --replicas 2 --requests 5 --warmup 1 --speedup 4 --sim-args "--zero-latency" \
  --out "$tmp/tcmp" 2>"$tmp/tcmp.log" || { cat "$tmp/tcmp.log"; fail "compare --trace"; }
py '
import json,sys
d=json.load(open(sys.argv[1]+"/summary.json"))
assert d["workload"]=="trace" and abs(d["rate"]-2.5)<1e-9 and d["speedup"]==4, d
assert d["trace"].endswith("mooncake_small.jsonl")
for p,v in d["policies"].items(): assert v["errors"]==0 and v["requests"]==5, (p,v)
a=json.load(open(sys.argv[1]+"/trace-round_robin-rep0.json"))["requests"]
b=json.load(open(sys.argv[1]+"/trace-random-rep0.json"))["requests"]
assert [(r["sched_ms"],r["prompt_tokens"]) for r in a]==[(r["sched_ms"],r["prompt_tokens"]) for r in b]
' "$tmp/tcmp" || fail "compare --trace summary"

# capacity cannot search rates for a trace, which keeps its own times
rc=0
"$B" capacity --trace "$FIX/traces/mooncake_small.jsonl" --policy round_robin --requests 3 \
  --out "$tmp/cap.json" 2>"$tmp/cap.err" || rc=$?
[ "$rc" = 2 ] && grep -q 'use compare' "$tmp/cap.err" || fail "capacity --trace: rc $rc"
echo "4 passed, 0 failed"
