#!/usr/bin/env bash
# The extended proof's harness pieces on the real binaries, at small scale:
# compare's P+events pseudo-policy (the exact index beside the approximate one),
# --reset-prefix-cache-at (a simulator's cache reset mid-run) and --direct-share
# (another client straight to one simulator); and a bad policy name refused.
set -euo pipefail
BUILD=${IR_BUILD:-build}
tmp=$(mktemp -d /tmp/ir-bench-ev.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
B="$BUILD/inferrail-bench"
[ -x "$BUILD/inferrail-gateway" ] || fail "no gateway binary"

# 1. a bad variant is refused before anything starts
if "$B" compare --workload w1 --policies cost_model+evnts --rate 1 --requests 4 \
  --out "$tmp/bad" 2>"$tmp/bad.log"; then fail "cost_model+evnts accepted"; fi
grep -q "bad policy 'cost_model+evnts'" "$tmp/bad.log" || { cat "$tmp/bad.log"; fail "bad policy message"; }

# 2. both variants, a reset of simulator 1 at 1 s, 30% of the requests straight to simulator 2
"$B" compare --workload w1 --policies cost_model,cost_model+events --replicas 2 --rate 4 \
  --requests 16 --warmup 2 --param prompts=3 --param sys_min=300 --param sys_max=600 \
  --reset-prefix-cache-at 1@1 --direct-share 0.3@2 --out "$tmp/cmp" 2>"$tmp/cmp.log" ||
  { cat "$tmp/cmp.log"; tail -5 "$tmp"/cmp/logs/*gateway.log; fail "compare"; }
grep -q kv_events "$tmp/cmp/logs/w1-cost_model+events-rep0-gateway.yaml" ||
  fail "+events: no kv_events in the gateway's config"
if grep -q kv_events "$tmp/cmp/logs/w1-cost_model-rep0-gateway.yaml"; then
  fail "plain cost_model got kv_events"
fi
python3 - "$tmp/cmp" <<'PY' || fail "compare results"
import json, os, sys
d = sys.argv[1]
s = json.load(open(os.path.join(d, "summary.json")))
assert set(s["policies"]) == {"cost_model", "cost_model+events"}, s["policies"].keys()
assert s["reset_prefix_cache_at"] == "1@1" and s["direct_share"] == "0.3@2", s
picked = None
for pol, ev in (("cost_model", False), ("cost_model+events", True)):
    r = json.load(open(os.path.join(d, f"w1-{pol}-rep0.json")))
    c, su = r["config"], r["summary"]
    assert c["policy"] == pol and c["kv_events"] is ev, c
    assert c["reset_prefix_cache_at"] == "1@1" and c["direct_share"] == "0.3@2", c
    a = r["actions"]
    assert len(a) == 1 and a[0]["status"] == 200 and a[0]["sent_s"] >= 0.99, a
    assert a[0]["url"].endswith("/reset_prefix_cache"), a
    direct = [q for q in r["requests"] if q.get("direct")]
    assert 0 < len(direct) < 16, len(direct)
    assert su["direct"]["requests"] == len(direct) and su["direct"]["errors"] == 0, su["direct"]
    assert su["requests"] == 16 - len(direct) and su["errors"] == 0, su
    # the direct client's requests never passed the gateway
    assert all(q["replica"] is None for q in direct), direct
    assert all(q["replica"] in ("sim-1", "sim-2") for q in r["requests"] if not q.get("direct"))
    ids = [q["i"] for q in direct]
    assert picked is None or picked == ids, (picked, ids)  # the same requests for both
    picked = ids
    w = r["workload"]
    assert 0 < w["reused_blocks"] < w["distinct_blocks"], w
    assert su["prediction"]["cached_tokens"]["n"] == su["requests"], su["prediction"]
PY
echo "2 passed, 0 failed"
