#!/usr/bin/env bash
# What scraping engines costs the gateway, apart from requests (issue 13): an
# idle gateway scrapes N --zero-latency simulators every load.scrape_interval
# (100 ms) for SECS seconds; each of its threads' CPU time is read from
# /proc/PID/task/TID/schedstat (nanoseconds) before and after. With no
# requests, the scraper's thread is the busy one; the others (event loops,
# control loop) show what idling costs. Reproduce:
#   make build && bench/load/scrape_cost.sh            # N=3 and N=20, 20 s each
#   NS="3 20 64" SECS=20 bench/load/scrape_cost.sh
# Loopback only. Prints one JSON line per N and a Markdown table.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
secs=${SECS:-20}
snap() { for t in /proc/"$1"/task/*; do echo "$(basename "$t") $(cut -d' ' -f1 "$t/schedstat")"; done | sort; }
one() {
  local n=$1
  start_sims "$n" -- --zero-latency
  local port admin gw
  port=$(freeport); admin=$(freeport)
  gw_yaml "$tmp/gw.yaml" "$port" "$admin" 100 "workers: 1"
  "$B/inferrail-gateway" --config "$tmp/gw.yaml" 2>"$tmp/gw.log" & gw=$!; pids+=($gw)
  waitup "http://127.0.0.1:$port/health"
  sleep 2 # every replica scraped and learnt
  local page ok0 ok1 a b
  page=$(curl -s "http://127.0.0.1:${sims[0]}/metrics" | wc -c)
  ok0=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '/^inferrail_load_scrapes_total\{.*result="ok"/ {s += $2} END {print s + 0}')
  a=$(snap "$gw"); sleep "$secs"; b=$(snap "$gw")
  ok1=$(curl -s "http://127.0.0.1:$admin/metrics" | awk '/^inferrail_load_scrapes_total\{.*result="ok"/ {s += $2} END {print s + 0}')
  join <(echo "$a") <(echo "$b") | awk -v n="$n" -v s="$secs" -v page="$page" -v scrapes=$((ok1 - ok0)) '
    { d = ($3 - $2) / 1e6; if (d > top) { top = d }; all += d }
    END { printf "{\"replicas\":%d,\"seconds\":%d,\"page_bytes\":%d,\"scrapes\":%d,\"busiest_thread_ms_per_s\":%.2f,\"all_threads_ms_per_s\":%.2f,\"us_per_scrape\":%.1f}\n",
          n, s, page, scrapes, top / s, all / s, scrapes ? 1000 * top / scrapes : 0 }'
  kill "$gw"; wait "$gw" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
rows=$(for n in ${NS:-3 20}; do one "$n"; done)
echo "$rows"
echo
echo "| replicas | page bytes | scrapes | scraper thread, ms CPU per s | whole gateway, ms CPU per s | us CPU per scrape |"
echo "|---|---|---|---|---|---|"
echo "$rows" | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    cells = [r["replicas"], "{:,}".format(r["page_bytes"]), "{:,}".format(r["scrapes"]), r["busiest_thread_ms_per_s"],
             r["all_threads_ms_per_s"], r["us_per_scrape"]]
    print("| " + " | ".join(str(c) for c in cells) + " |")'
