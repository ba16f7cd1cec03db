#!/usr/bin/env bash
# The harness through several gateways, on loopback, small and bounded:
# 1. `run --base-url A,B` straight against two simulators: each simulator served exactly
#    the requests the results say went to it (alternate: request i to URL i mod 2).
# 2. `compare --gateways 2 --kv-events`: two gateways, configured alike, in front of the
#    same three simulators; both proxied requests, the results record the gateway count
#    and per-gateway hit rates, and the engines' hit rate agrees with usage.
# 3. Bad combinations are refused (exit 2).
set -euo pipefail
. "$(dirname "$0")/ports.sh"
BUILD=${IR_BUILD:-build}
tmp=$(mktemp -d /tmp/ir-bench-gws.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
B="$BUILD/inferrail-bench"
py() { python3 -c "$@"; }
W=(--workload w1 --param prompts=3 --param sys_min=300 --param sys_max=600)

# 1. run against two simulators as two base URLs.
ports=()
for i in 1 2; do
  p=$(freeport); ports+=("$p")
  "$BUILD/inferrail-sim" --port "$p" --enable-prompt-tokens-details --zero-latency \
    2>"$tmp/sim$i.log" & pids+=($!)
done
for p in "${ports[@]}"; do
  for _ in $(seq 100); do curl -sf "localhost:$p/health" >/dev/null && break; sleep 0.05; done
done
a="http://127.0.0.1:${ports[0]}" b="http://127.0.0.1:${ports[1]}"
"$B" run --base-url "$a,$b" --gateways 2 "${W[@]}" --rate 8 --requests 20 --warmup 3 \
  --engine-metrics "$a,$b" --out "$tmp/run.json" >"$tmp/run.out" || fail "run through two URLs"
grep -q "by gateway" "$tmp/run.out" || fail "run: no per-gateway hit rates in $(cat "$tmp/run.out")"
for i in 0 1; do curl -sf "http://127.0.0.1:${ports[$i]}/metrics" >"$tmp/m$i.txt"; done
py '
import json,sys,re
d=json.load(open(sys.argv[1])); s=d["summary"]; c=d["config"]
assert c["gateways"]==2 and c["spread"]=="alternate" and len(c["base_urls"])==2, c
assert s["requests"]==20 and s["errors"]==0, s
for r in d["requests"]: assert r["gateway"]==r["i"]%2, r
served=[]
for f in sys.argv[2:]:
    t=open(f).read()
    served.append(sum(float(x) for x in re.findall(r"^vllm:request_success_total\{[^}]*\} (\S+)", t, re.M)))
# warmup (3: i=0,1,2) included: URL A got i=0,2,4..22 (12), URL B 11
assert served==[12,11], served
pg=s["per_gateway"]
assert [g["requests"] for g in pg]==[10,10], pg
assert abs(s["hit_rate"]-s["engine_hit_rate"])<1e-3, (s["hit_rate"], s["engine_hit_rate"])
' "$tmp/run.json" "$tmp/m0.txt" "$tmp/m1.txt" || fail "run: the spread over two URLs"
"$B" run --base-url "$a" --gateways 2 "${W[@]}" --rate 8 --requests 2 --out "$tmp/x.json" \
  2>"$tmp/err1" && fail "run: --gateways 2 with one URL was accepted"
grep -q "names 1" "$tmp/err1" || fail "run: message: $(cat "$tmp/err1")"
"$B" run --base-url "$a" --spread random "${W[@]}" --rate 8 --requests 2 --out "$tmp/x.json" \
  2>/dev/null && fail "run: --spread random was accepted"
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
pids=()

# 2. compare through two gateways following the simulators' KV events.
[ -x "$BUILD/inferrail-gateway" ] || fail "no gateway binary"
"$B" compare "${W[@]}" --policies cost_model --replicas 3 --rate 6 --requests 24 --warmup 4 \
  --sim-args "--zero-latency" --kv-events --gateways 2 --out "$tmp/cmp" 2>"$tmp/cmp.log" ||
  { cat "$tmp/cmp.log"; tail -5 "$tmp"/cmp/logs/*gateway*.log; fail "compare --gateways 2"; }
py '
import json,sys,os
d=json.load(open(os.path.join(sys.argv[1],"summary.json")))
assert d["gateways"]==2 and d["kv_events"] is True and d["spread"]=="alternate", d
v=d["policies"]["cost_model"]
assert v["errors"]==0 and v["requests"]==24, v
r=json.load(open(os.path.join(sys.argv[1],"w1-cost_model-rep0.json")))
c, s = r["config"], r["summary"]
assert c["gateways"]==2 and len(c["base_urls"])==2 and c["base_urls"][0]!=c["base_urls"][1], c
# what each gateway itself counted: 14 each (warmup included), nothing lost
assert c["gateway_requests"]==[14,14], c["gateway_requests"]
assert len(set(c["gateway_seeds"]))==2 and c["gateway_seeds"][0]==1, c["gateway_seeds"]
assert [g["requests"] for g in s["per_gateway"]]==[12,12], s["per_gateway"]
assert all(g["hit_rate"] is not None for g in s["per_gateway"]), s["per_gateway"]
assert abs(s["hit_rate"]-s["engine_hit_rate"])<1e-3, (s["hit_rate"], s["engine_hit_rate"])
assert s["hit_rate"]>0.3, s["hit_rate"]
# both gateways predicted from the events: predictions came back through both
assert s["prediction"] and s["prediction"]["cached_tokens"]["n"]==24, s["prediction"]
' "$tmp/cmp" || fail "compare summary"
# The two configs differ only in their ports and routing seeds (two gateways sharing a
# seed draw the same tie-breaks), and both follow every simulator's events.
cfg1="$tmp/cmp/logs/w1-cost_model-rep0-gateway.yaml" cfg2="$tmp/cmp/logs/w1-cost_model-rep0-gateway-2.yaml"
[ "$(grep -c kv_events "$cfg1")" = 3 ] || fail "gateway 1 does not follow 3 event streams"
same() { grep -v '^server:' "$1" | sed 's/seed: [0-9]*/seed: S/'; }
diff <(same "$cfg1") <(same "$cfg2") >/dev/null ||
  fail "the two gateways' configs differ beyond their ports and seeds"
s1=$(grep -o 'seed: [0-9]*' "$cfg1") s2=$(grep -o 'seed: [0-9]*' "$cfg2")
[ "$s1" = "seed: 1" ] && [ "$s2" != "$s1" ] || fail "gateway seeds: '$s1' and '$s2'"

# 3. refused combinations.
"$B" compare "${W[@]}" --policies cost_model --rate 6 --requests 2 --gateways 2 --no-gateway \
  --out "$tmp/bad" 2>"$tmp/err2" && fail "compare: --gateways 2 --no-gateway was accepted"
grep -q "exclude each other" "$tmp/err2" || fail "compare: message: $(cat "$tmp/err2")"
"$B" compare "${W[@]}" --policies cost_model --rate 6 --requests 2 --gateways 9 \
  --out "$tmp/bad" 2>/dev/null && fail "compare: --gateways 9 was accepted"
echo "3 passed, 0 failed"
