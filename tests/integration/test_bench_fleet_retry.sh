#!/usr/bin/env bash
# A free port is only free until another process takes it: a simulator or a
# gateway that exits while starting is started again on new ports (3 tries
# in all), so an hour-long proof does not lose runs to a port race; one that
# keeps failing still fails the run, after 3 tries.
set -euo pipefail
BUILD=${IR_BUILD:-build}
BUILD=$(cd "$BUILD" && pwd)
tmp=$(mktemp -d /tmp/ir-bench-retry.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
B="$BUILD/inferrail-bench"

# wrapper NAME REAL ALWAYS: a binary that exits 1 at its first launch (at
# every launch when ALWAYS is 1), else runs REAL; NAME.count gets a line per
# launch. Simulators start together: mkdir picks the one launch that fails.
wrapper() {
  cat > "$tmp/$1" <<EOF
#!/bin/sh
echo x >> "$tmp/$1.count"
if [ $3 = 1 ] || mkdir "$tmp/$1.failed" 2>/dev/null; then
  echo "cannot listen: address already in use" >&2
  exit 1
fi
exec "$2" "\$@"
EOF
  chmod +x "$tmp/$1"
}
launches() { wc -l < "$tmp/$1.count" | tr -d ' '; }
run() {
  "$B" compare --workload w1 --policies round_robin --replicas 2 --rate 5 --requests 4 \
    --param prompts=2 --param sys_min=100 --param sys_max=200 --sim-args "--zero-latency" \
    --gateway-bin "$tmp/$1" --sim-bin "$tmp/$2" --out "$tmp/$3"
}
wrapper gw "$BUILD/inferrail-gateway" 0
wrapper sim "$BUILD/inferrail-sim" 0

# 1. One simulator and the gateway die at their first start: the run still succeeds.
run gw sim ok 2>"$tmp/ok.log" || { cat "$tmp/ok.log"; fail "compare with one failed start each"; }
[ "$(launches gw)" = 2 ] || fail "gateway launches: $(launches gw)"
[ "$(launches sim)" = 3 ] || fail "simulator launches: $(launches sim)"
grep -q 'gateway exited while starting' "$tmp/ok.log" || fail "no word of the gateway retry"
grep -q 'simulator [12] exited while starting' "$tmp/ok.log" || fail "no word of the simulator retry"
python3 -c '
import json,sys
v=json.load(open(sys.argv[1]))["policies"]["round_robin"]
assert v["errors"]==0 and v["requests"]==4, v
' "$tmp/ok/summary.json" || fail "summary"

# 2. A gateway that never starts fails the run after 3 tries, with its log named.
wrapper bad "$BUILD/inferrail-gateway" 1
rc=0
"$B" compare --workload w1 --policies round_robin --replicas 2 --rate 5 --requests 4 \
  --param prompts=2 --param sys_min=100 --param sys_max=200 --sim-args "--zero-latency" \
  --gateway-bin "$tmp/bad" --sim-bin "$BUILD/inferrail-sim" --out "$tmp/bad-run" \
  2>"$tmp/bad.log" || rc=$?
[ "$rc" = 1 ] || { cat "$tmp/bad.log"; fail "a gateway that never starts: rc $rc"; }
[ "$(launches bad)" = 3 ] || fail "bad gateway launches: $(launches bad)"
grep -q 'the gateway did not come up' "$tmp/bad.log" || fail "no error for the bad gateway"
echo "2 passed, 0 failed"
