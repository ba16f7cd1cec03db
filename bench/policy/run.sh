#!/usr/bin/env bash
# Decision-time benchmark of the routing policies (bench/policy/bench_policy.c):
# the KV index lookup plus choose over 64 replicas for a 512-block prompt, and
# for a 100,000-token prompt with its block hashing. Writes JSON lines to
# bench/results/policy/results.jsonl (or $1) with a machine line first.
#   bench/policy/run.sh [OUT.jsonl] [SAMPLES] [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/bench/results/policy/results.jsonl}"
samples="${2:-20000}"
rounds="${3:-5}"
bin="$root/build/inferrail-policybench"
[ -x "$bin" ] || make -C "$root" build >/dev/null
mkdir -p "$(dirname "$out")"
{
  printf '{"bench":"machine","cores":%s,"cpu":"%s","load_avg":"%s","command":"bench/policy/run.sh %s %s %s"}\n' \
    "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)" "${1:-}" "$samples" "$rounds"
  "$bin" --samples "$samples" --rounds "$rounds"
} >"$out"
grep -E '"decision_summary"' "$out"
