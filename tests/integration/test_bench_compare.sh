#!/usr/bin/env bash
# A full compare on the real binaries at small scale: fresh simulators and a
# fresh gateway per run, two policies, two repetitions; then the report.
# Also: `run` straight against a simulator agrees with the engine counters.
set -euo pipefail
. "$(dirname "$0")/ports.sh"
BUILD=${IR_BUILD:-build}
tmp=$(mktemp -d /tmp/ir-bench-cmp.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
B="$BUILD/inferrail-bench"
py() { python3 -c "$@"; }

# 1. run against one simulator: usage and engine hit rates agree, prompt tokens match the workload.
port=$(freeport)
"$BUILD/inferrail-sim" --port "$port" --enable-prompt-tokens-details 2>"$tmp/sim.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
"$B" run --base-url "http://127.0.0.1:$port" --workload w1 --rate 4 --requests 12 --warmup 3 \
  --param prompts=3 --param sys_min=300 --param sys_max=600 \
  --engine-metrics "http://127.0.0.1:$port" --cache-blocks 4096 --out "$tmp/run.json" >/dev/null
kill $pid
py '
import json,sys
d=json.load(open(sys.argv[1])); s=d["summary"]
assert s["requests"]==12 and s["errors"]==0, s
assert abs(s["hit_rate"]-s["engine_hit_rate"])<1e-3, (s["hit_rate"], s["engine_hit_rate"])
assert s["hit_rate"]>0.3, s["hit_rate"]
# the finite-cache ceiling (one engine of 4096 blocks) bounds what it hit
assert d["workload"]["cache"]=={"replicas":1,"blocks_per_replica":4096,"pooled_blocks":4096}, d["workload"]
assert s["hit_rate"]<=s["reuse_ceiling_finite"]+1e-9<=s["reuse_ceiling"]+2e-9, s
assert 0<=s["pooled_lru_hit_rate"]<=s["reuse_ceiling_finite"], s
for r in d["requests"]:
    assert r["prompt_tokens"]==r["expected_prompt_tokens"], r
    assert r["completion_tokens"]==r["max_tokens"], r
    assert r["ttft_ms"]>0 and r["e2e_ms"]>=r["ttft_ms"], r
' "$tmp/run.json" || fail "run against a simulator"

# 1b. the same with --param stream=0: bodies without "stream" (the OpenAI SDKs' default),
# answers read whole; usage and the engine still agree, and the parameter is recorded.
port=$(freeport)
"$BUILD/inferrail-sim" --port "$port" --enable-prompt-tokens-details 2>"$tmp/sim.log" &
pid=$!
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
"$B" run --base-url "http://127.0.0.1:$port" --workload w1 --rate 4 --requests 12 --warmup 3 \
  --param prompts=3 --param sys_min=300 --param sys_max=600 --param stream=0 \
  --engine-metrics "http://127.0.0.1:$port" --out "$tmp/run-whole.json" >/dev/null
kill $pid
py '
import json,sys
d=json.load(open(sys.argv[1])); s=d["summary"]
assert s["requests"]==12 and s["errors"]==0, s
assert d["workload"]["params"]["stream"]==0, d["workload"]["params"]
assert abs(s["hit_rate"]-s["engine_hit_rate"])<1e-3 and s["hit_rate"]>0.3, s
for r in d["requests"]:
    assert r["completion_tokens"]==r["max_tokens"] and r["ttft_ms"]>0, r
' "$tmp/run-whole.json" || fail "run with stream=0"

# 2. compare through the gateway.
[ -x "$BUILD/inferrail-gateway" ] || fail "no gateway binary"
"$B" compare --workload w1 --policies round_robin,least_request --replicas 2 --rate 4 \
  --requests 12 --warmup 2 --repetitions 2 --param prompts=3 --param sys_min=300 \
  --param sys_max=600 --sim-args "--zero-latency" --out "$tmp/cmp" 2>"$tmp/cmp.log" ||
  { cat "$tmp/cmp.log"; tail -5 "$tmp"/cmp/logs/*gateway.log; fail "compare"; }
py '
import json,sys,os
d=json.load(open(os.path.join(sys.argv[1],"summary.json")))
assert d["workload"]=="w1" and d["replicas"]==2, d
assert d["cache"]=={"replicas":2,"blocks_per_replica":4096}, d["cache"]
assert 0<=d["pooled_lru_hit_rate"]<=d["reuse_ceiling_finite"]<=d["reuse_ceiling"], d
assert set(d["policies"])=={"round_robin","least_request"}, d["policies"].keys()
for p,v in d["policies"].items():
    assert v["errors"]==0 and v["requests"]==12, (p,v)
    assert v["repetitions"]==2 and len(v["runs"])==2
    assert sum(v["per_replica"].values())==12, v["per_replica"]
    assert set(v["per_replica"])<= {"sim-1","sim-2"}, v["per_replica"]
    for k in ("ttft_ms","tpot_ms","e2e_ms"): assert v[k]["p50"] is not None, (p,k)
    assert v["hit_rate"]<=v["reuse_ceiling_finite"]+1e-9, (p,v["hit_rate"],v["reuse_ceiling_finite"])
rr=d["policies"]["round_robin"]["per_replica"]
assert abs(rr.get("sim-1",0)-rr.get("sim-2",0))<=1, rr
# every policy got the same requests at the same times
for k in range(2):
    a=json.load(open(os.path.join(sys.argv[1],"w1-round_robin-rep%d.json"%k)))["requests"]
    b=json.load(open(os.path.join(sys.argv[1],"w1-least_request-rep%d.json"%k)))["requests"]
    assert [(r["i"],r["sched_ms"],r["expected_prompt_tokens"]) for r in a]==[(r["i"],r["sched_ms"],r["expected_prompt_tokens"]) for r in b]
a=json.load(open(os.path.join(sys.argv[1],"w1-round_robin-rep0.json")))["requests"]
b=json.load(open(os.path.join(sys.argv[1],"w1-round_robin-rep1.json")))["requests"]
assert [r["sched_ms"] for r in a]!=[r["sched_ms"] for r in b], "repetitions share a seed"
' "$tmp/cmp" || fail "compare summary"

# 3. the report (charts need gnuplot).
# gnuplot comes from scripts/install-deps, which make test runs first.
command -v gnuplot >/dev/null || fail "report: gnuplot is not installed (run scripts/install-deps)"
"$B" report "$tmp/cmp" --out "$tmp/report" 2>/dev/null || fail report
for f in README.md ttft-cdf-w1.svg p99-ttft.svg hit-rate.svg replicas-w1-round_robin.svg; do
  [ -s "$tmp/report/$f" ] || fail "report: no $f"
done
grep -q '<svg' "$tmp/report/ttft-cdf-w1.svg" || fail "report: not an SVG"
# The hit-rate chart marks each workload's reuse ceiling (the summary's value).
want=$(python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["reuse_ceiling"])' "$tmp/cmp/summary.json")
head -1 "$tmp/report/hit-rate.dat" | grep -q ' reuse_ceiling$' || fail "report: no ceiling column"
[ "$(sed -n 2p "$tmp/report/hit-rate.dat" | awk '{print $NF}')" = "$want" ] || fail "report: ceiling"
grep -q 'reuse ceiling' "$tmp/report/hit-rate.svg" || fail "report: ceiling not drawn"
grep -q 'finite-cache ceiling |' "$tmp/report/README.md" || fail "report: no finite-cache ceiling column"
echo "3 passed, 0 failed"
