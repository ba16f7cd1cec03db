#!/usr/bin/env bash
# The KV index and block hash benchmarks: hashing ns per block, 512-block
# lookups over 64 replicas (p50/p99), bytes per block held, and a soak of
# 40,000 distinct prompts. Writes JSON lines on stdout.
#   make build && bench/index/run.sh [BENCH_BINARY] > bench/results/index/results.jsonl
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-$root/build/inferrail-indexbench}"
echo "{\"machine\":\"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD)\"}"
"$bin" all
