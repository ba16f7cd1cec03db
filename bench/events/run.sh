#!/usr/bin/env bash
# The exact index's event ingestion: block events applied per second on one
# thread (events one by one and payloads through irx_ev_apply_batch, with and
# without a lookup thread, 131,072 and 1,048,576 blocks held), msgpack payloads as
# vLLM publishes them decoded and applied (ingest), bytes per block held, and how soon a lookup sees an applied
# block. JSON lines. bench/events/against.sh compares with another commit's index.
#   make build && bench/events/run.sh [SECONDS] > /tmp/events.jsonl
# Summarise by hand into bench/results/events/README.md (raw output is not committed).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="$root/build/inferrail-evbench"
echo "{\"machine\":\"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD)\"}"
"$bin" all "${1:-2}"
