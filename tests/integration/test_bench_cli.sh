#!/usr/bin/env bash
# inferrail-bench's command line: determinism of workloads across processes,
# documented workloads and parameters, bad input rejected.
set -euo pipefail
BUILD=${IR_BUILD:-build}
B="$BUILD/inferrail-bench"
fail() { echo "FAIL: $*"; exit 1; }
for w in w1 w2 w3 w4 w5 w6; do
  a=$("$B" workload --workload $w --rate 5 --requests 40 --seed 9 --param out_max=20 | sha256sum)
  b=$("$B" workload --workload $w --rate 5 --requests 40 --seed 9 --param out_max=20 | sha256sum)
  c=$("$B" workload --workload $w --rate 5 --requests 40 --seed 10 --param out_max=20 | sha256sum)
  [ "$a" = "$b" ] || fail "$w: same seed, different workload"
  [ "$a" != "$c" ] || fail "$w: different seed, same workload"
  grep -q "| \`$w\`" "${IR_ROOT:-.}/docs/bench-workloads.md" || fail "$w undocumented"
done
"$B" workload --workload w7 --rate 1 --requests 1 2>/dev/null && fail "unknown workload accepted"
"$B" workload --workload w1 --rate 1 --requests 1 --param nope=1 2>/dev/null && fail "unknown param"
"$B" run --workload w1 2>/dev/null && fail "run without --base-url"
echo '[{"conversations":[{"from":"human","value":"Hi there"},{"from":"gpt","value":"Hello! How can I help?"},{"from":"human","value":"Tell me more"},{"from":"gpt","value":"Sure."}]}]' >/tmp/ir-sg.$$.json
out=$("$B" workload --workload w2 --rate 100 --requests 4 --sharegpt /tmp/ir-sg.$$.json --param think_min_s=0 --param think_max_s=0 --bodies)
rm -f /tmp/ir-sg.$$.json
sed -n 2p <<<"$out" | grep -q 'Tell me more' || fail "sharegpt replay: $out"
sed -n 2p <<<"$out" | grep -q 'Hello! How can I help?' || fail "sharegpt history"
# A trace: its own arrival times, named as the workload's alternative, with timestamps whose
# nanoseconds fit (a span past 1e12 ms wrapped to 0 before).
T=/tmp/ir-trace.$$.jsonl
printf '{"timestamp": 0, "input_length": 40, "output_length": 2, "hash_ids": [1, 2]}\n{"timestamp": 5, "input_length": 40, "output_length": 2, "hash_ids": [1]}\n' >"$T"
"$B" workload --trace "$T" --requests 2 >/dev/null || fail "a trace refused"
err=$("$B" workload --workload w1 --trace "$T" --requests 2 2>&1 >/dev/null) && fail "--workload w1 with --trace accepted"
grep -q "leave out --workload w1" <<<"$err" || fail "--workload w1 --trace: $err"
err=$("$B" workload --trace "$T" --rate 5 --requests 2 2>&1 >/dev/null) && fail "--rate with --trace accepted (and ignored)"
grep -q "rate goes without --trace" <<<"$err" || fail "--rate --trace: $err"
printf '{"timestamp": 0, "input_length": 40, "output_length": 2, "hash_ids": [1]}\n{"timestamp": 2e13, "input_length": 40, "output_length": 2, "hash_ids": [1]}\n' >"$T"
err=$("$B" workload --trace "$T" --requests 2 2>&1 >/dev/null) && fail "a timestamp past 1e12 ms accepted"
grep -q "0 to 1e12" <<<"$err" || fail "timestamp bound: $err"
rm -f "$T"
echo "1 passed, 0 failed"
