#!/usr/bin/env bash
# The exact index's event ingestion: block events applied per second on one
# thread (with and without a lookup thread), msgpack batches decoded and applied,
# bytes per block held, and how soon a lookup sees an applied block. JSON lines.
#   make build && bench/events/run.sh [SECONDS] > /tmp/events.jsonl
# Summarise by hand into bench/results/events/README.md (raw output is not committed).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/build/inferrail-evbench"
echo "{\"machine\":\"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD)\"}"
"$bin" all "${1:-2}"
