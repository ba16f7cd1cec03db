#!/usr/bin/env bash
# Honest tool output (issue 12): rps counts successes and fails when none
# succeeded; run names the error kinds, fails when every request failed and
# prints n/a for what it did not measure; help texts exit 0 and describe every
# option; make help lists every target and make bench runs scripts that exist.
set -uo pipefail
. "$(dirname "$0")/ports.sh"
BUILD=${IR_BUILD:-build}
ROOT=${IR_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
B=$BUILD/inferrail-bench
T=$(mktemp -d)
port=$(freeport)
"$BUILD/inferrail-sim" --port "$port" --zero-latency --enable-prompt-tokens-details 2>"$T/sim.log" &
pid=$!
trap 'kill $pid 2>/dev/null; rm -rf "$T"' EXIT
for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.05; done
fails=0 passes=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { passes=$((passes + 1)); }

# rps where every request gets a 404
out=$("$B" rps --url "http://127.0.0.1:$port" --model nope --n 50 --concurrency 4 2>"$T/err")
rc=$?
[ "$rc" != 0 ] && ok || fail "rps with every request failing exited 0"
grep -q '"ok":0,' <<<"$out" && grep -q '"rps":0.0,' <<<"$out" && ok || fail "rps counted failures: $out"
python3 -c 'import json,sys; json.loads(sys.argv[1])' "$out" && ok || fail "rps output is not JSON: $out"
grep -q 'request failed: status 404' "$T/err" && ! grep -q 'failed: ok' "$T/err" && ok || fail "rps error line: $(cat "$T/err")"
# rps that succeeds
out=$("$B" rps --url "http://127.0.0.1:$port" --n 50 --concurrency 4 2>"$T/err")
[ $? = 0 ] && grep -q '"ok":50,' <<<"$out" && ok || fail "rps ok: $out $(cat "$T/err")"

# run --model nope: the error kinds, exit 1; engines n/a without --engine-metrics
out=$("$B" run --base-url "http://127.0.0.1:$port" --model nope --workload w1 --rate 50 --requests 5 \
  --warmup 0 --out "$T/r.json" 2>"$T/err")
rc=$?
[ "$rc" != 0 ] && ok || fail "run with every request failing exited 0: $out"
grep -q 'errors 5 (' <<<"$out" && ok || fail "run does not name the error kinds: $out"
grep -q 'every request failed' "$T/err" && ok || fail "run says nothing: $(cat "$T/err")"
grep -q 'engines n/a' <<<"$out" && ok || fail "engines without --engine-metrics: $out"
out=$("$B" run --base-url "http://127.0.0.1:$port" --workload w1 --rate 50 --requests 5 --warmup 0 \
  --out "$T/r2.json" 2>"$T/err")
[ $? = 0 ] && grep -q 'errors 0 ' <<<"$out" && ok || fail "run that succeeds: $out $(cat "$T/err")"

# run again against the same engines: above the ceiling (warm caches), said on stderr
"$B" run --base-url "http://127.0.0.1:$port" --workload w1 --rate 50 --requests 5 --warmup 0 \
  --out "$T/r3.json" >/dev/null 2>"$T/err"
[ $? = 0 ] && grep -q 'above the reuse ceiling' "$T/err" && ok || fail "a repeated run's hit rate above its ceiling unsaid: $(cat "$T/err")"
# numbers are read whole, never cut short
for bad in "--requests 1e3" "--requests 10x" "--seed abc" "--rate 2,5" "--warmup -1"; do
  "$B" run --base-url "http://127.0.0.1:$port" --workload w1 --rate 1 --requests 5 --out "$T/x.json" $bad 2>/dev/null
  [ $? = 2 ] && ok || fail "run accepted $bad"
done
for bad in "--repetitions 100" "--repetitions 0" "--replicas 0" "--steps -3" "--start-rate 0" "--policies nosuchpolicy"; do
  "$B" capacity --workload w1 --policy round_robin --requests 5 --out "$T/c.json" $bad 2>/dev/null
  [ $? = 2 ] && ok || fail "capacity accepted $bad"
done
# setup errors before any fleet starts, with exit 2
"$B" compare --workload w9 --policies round_robin --rate 1 --requests 5 --out "$T/cmp9" 2>"$T/err"
[ $? = 2 ] && grep -q "unknown workload 'w9'" "$T/err" && [ ! -d "$T/cmp9/logs" ] && ok || fail "unknown workload: $(cat "$T/err")"
"$B" capacity --workload w1 --policy round_robin --requests 5 --param nope=1 --out "$T/c.json" 2>"$T/err"
[ $? = 2 ] && grep -q "no parameter 'nope'" "$T/err" && ok || fail "unknown param: $(cat "$T/err")"
# a probe whose fleet never starts is no capacity: null, exit 1 (it read 0 req/s)
out=$("$B" capacity --workload w1 --policy round_robin --requests 5 --warmup 0 --steps 0 \
  --sim-bin /bin/false --out "$T/cfail.json" 2>"$T/err")
rc=$?
[ "$rc" = 1 ] && grep -q 'none (a probe did not run)' <<<"$out" &&
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["capacity_rps"] is None and d["error"] else 1)' "$T/cfail.json" &&
  ok || fail "capacity with a fleet that never starts: rc $rc: $out $(cat "$T/err")"
# a compare where every request fails exits 1, and its report prints no nan, inf or -1
"$B" compare --workload w1 --policies round_robin --rate 5 --requests 4 --warmup 0 --replicas 1 \
  --sim-args "--max-model-len 100" --out "$T/cmpbad" >/dev/null 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && grep -q 'every request failed' "$T/err" && ok || fail "compare with every request failing: rc $rc $(cat "$T/err")"
"$B" report "$T/cmpbad" --out "$T/rbad" >/dev/null 2>&1
[ -f "$T/rbad/README.md" ] && ! grep -qE '\| (nan|-?inf)|-1\.000|\(inf' "$T/rbad/README.md" && ok ||
  fail "report of a compare where every request failed: $(grep -E 'nan|inf|-1\.000' "$T/rbad/README.md" 2>&1 | head -3)"

# report reads a capacity result named on the command line, whatever its name
cp "$ROOT/bench/results/baselines/capacity-w1.json" "$T/cap.json"
"$B" report "$T/cap.json" --out "$T/report" >/dev/null 2>"$T/err" && grep -qi capacity "$T/report/README.md" &&
  ok || fail "report ignored cap.json: $(cat "$T/err")"
"$B" report "$T/nothing" --out "$T/report2" 2>/dev/null && fail "report of a missing path exited 0" || ok

# help texts
"$B" tokenize-sim --help >"$T/h" && grep -q 'MiB' "$T/h" && ok || fail "tokenize-sim --help"
for cmd in streams soak rps; do
  "$B" $cmd --help >"$T/h" || fail "$cmd --help exit status"
  undocumented=$(grep -E '^  --' "$T/h" | awk 'NF < 3' | head -3)
  grep -q -- '--concurrency' "$T/h" && [ -z "$undocumented" ] && ok || fail "$cmd --help: options without descriptions: $undocumented"
done
"$BUILD/inferrail-gateway" --help | grep -q -- '--print-defaults' && ok || fail "gateway usage lacks --print-defaults"
# Read whole first: the help is over 4 KiB, and grep -q leaving early would SIGPIPE it.
simhelp=$("$BUILD/inferrail-sim" --help)
grep -q -- '0 picks a free port' <<<"$simhelp" && ok || fail "sim --help does not say --port 0"
# every program make build leaves: --help exits 0 with a usage line under its own name
for prog in "$BUILD"/inferrail-*; do
  [ -x "$prog" ] && [ -f "$prog" ] || continue
  name=$(basename "$prog")
  h=$("$prog" --help 2>&1)
  rc=$?
  [ "$rc" = 0 ] && grep -qi "usage: $name" <<<"$h" && ok || fail "$name --help: exit $rc: $(head -2 <<<"$h")"
done

# A simulator that dies in the middle of a compare run (the gateway's retries may hide it
# from the requests): the run is flagged and compare fails, instead of a summary that
# names a fleet of 3.
SIMBIN=$(cd "$BUILD" && pwd)/inferrail-sim
cat >"$T/dying-sim" <<SIM
#!/bin/sh
# One of the simulators (the first to get here) is killed 1.5 s after it starts.
if mkdir "$T/armed" 2>/dev/null; then ( sleep 1.5; kill -9 \$\$ ) & fi
exec "$SIMBIN" "\$@"
SIM
chmod +x "$T/dying-sim"
"$B" compare --workload w1 --policies round_robin --replicas 3 --rate 40 --requests 160 \
  --warmup 0 --sim-bin "$T/dying-sim" --sim-args "--zero-latency" --out "$T/dying" \
  >"$T/dying.out" 2>"$T/dying.err"
rc=$?
[ "$rc" = 1 ] && ok || fail "compare with a simulator that died exited $rc: $(tail -3 "$T/dying.err")"
grep -qE '\["sim-[123]"\] exited during the run' "$T/dying.err" && ok || fail "not said: $(cat "$T/dying.err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["config"]["exited"] in (["sim-1"], ["sim-2"], ["sim-3"]), d["config"]' \
  "$T/dying/w1-round_robin-rep0.json" && ok || fail "the run's file does not say which exited"

# make help lists every target; the scripts the Makefile runs exist
targets=$(grep -E '^[a-z][a-z-]*:' "$ROOT/Makefile" | cut -d: -f1 | sort -u)
help=$(make -s -C "$ROOT" help)
for t in $targets; do
  [ "$t" = all ] && continue
  grep -qE "^make $t( |$)" <<<"$help" || fail "make help does not list $t"
done
ok
for s in $(grep -oE '^\s+\./[A-Za-z0-9_./-]+' "$ROOT/Makefile" | tr -d ' \t'); do
  [ -x "$ROOT/$s" ] && ok || fail "the Makefile runs $s, which does not exist"
done

echo "$passes passed, $fails failed"
[ "$fails" = 0 ]
