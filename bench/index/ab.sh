#!/usr/bin/env bash
# Two builds' map-bound benchmarks, interleaved round by round, so that on a busy
# machine only the ratio within a round means something: inferrail-indexbench lookup
# (512-block lookups, bytes per block) and inferrail-evbench one (event ingestion with
# and without a lookup thread), then each build's evbench memory. JSON lines, each with
# "build" (base or new) and "rep"; bench/index/ab_summary.py prints medians and the
# median of the per-round ratios.
#   BASE_DIR holds the base's inferrail-indexbench and inferrail-evbench (for example
#   a build of the base commit, or its two binaries copied aside before rebuilding):
#   make build && bench/index/ab.sh BASE_DIR build [ROUNDS] [SECONDS] > /tmp/ab.jsonl
#   bench/index/ab_summary.py /tmp/ab.jsonl
set -euo pipefail
base="${1:?usage: ab.sh BASE_DIR NEW_DIR [ROUNDS] [SECONDS]}"
new="${2:?usage: ab.sh BASE_DIR NEW_DIR [ROUNDS] [SECONDS]}"
rounds="${3:-5}"
secs="${4:-2}"
load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "{\"machine\":\"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\",\"load\":\"$(load)\"}"
tag() { sed "s/^{/{\"build\":\"$1\",\"rep\":$2,/"; }
# one PER_EVENT BATCH READERS CHAINS: 2048 chains of 64 = 131,072 blocks held
cases=("1 64 0 2048" "16 64 0 2048" "1 64 1 2048" "16 64 1 2048" "1 64 0 16384")
for ((i = 0; i < rounds; i++)); do
    for b in base new; do
        d="$base"
        [ "$b" = new ] && d="$new"
        "$d/inferrail-indexbench" lookup | tag "$b" "$i"
        for c in "${cases[@]}"; do
            # shellcheck disable=SC2086
            "$d/inferrail-evbench" one $c "$secs" | tag "$b" "$i"
        done
    done
done
for b in base new; do
    d="$base"
    [ "$b" = new ] && d="$new"
    "$d/inferrail-evbench" memory | tag "$b" 0
done
echo "{\"load_end\":\"$(load)\"}"
