#!/usr/bin/env bash
# Gateway overhead and peers benchmark. Reproduce with:
#   make build && scripts/install-deps --bench && bench/gateway/run.sh [OUT_DIR]
# Three --zero-latency simulators and the load generator share core 0; each
# proxy runs alone, with one worker, on core 1, started fresh for each
# measurement. Loopback only; about 7 minutes. The proxies:
#   relay       ir-relay, a byte relay that parses nothing: the floor any
#               event-loop proxy pays on this machine for the extra hops
#   inferrail   the gateway, round robin
#   inferrail-noscrape  the same with engine scraping idle (load.scrape_interval
#               1h): the gateway as a proxy only, against which issue 13 sets
#               the cost of scraping at 10 Hz (not in the default TARGETS:
#               TARGETS="direct inferrail-noscrape inferrail inferrail-obs")
#   inferrail-obs  the same with the decision log at full sampling and every
#               request traced to an unreachable OTLP collector (issue 13's
#               second rerun; not in the default TARGETS: TARGETS="direct
#               inferrail inferrail-obs" bench/gateway/run.sh). Its decision log's
#               written/dropped counts after each rate are rows "decisions".
#   nginx       nginx, round robin, upstream keepalive
#   haproxy     HAProxy, round robin, http-reuse always
# and, with "-busy", the same polling without sleeping (server.busy_poll,
# ir-relay --busy-poll, HAProxy's busy-polling): one whole core each.
# ir-relay keeps each client connection on one simulator, so over one
# connection it talks to one simulator where the others rotate over three.
# Measurements, each a proxy's numbers minus going straight to a simulator in
# the same round:
#  1. open loop at 2,000 and 5,000 req/s, 10,000 requests (1,000 warmup), at
#     most 64 connections (without a cap, a proxy that stalls makes the client
#     open a connection per request, and ir-relay, which opens one upstream
#     connection per client connection, then never recovers);
#  2. one connection, one request at a time, 3 s: the latency added at rest;
#  3. closed loop, 64 connections, 5 s: req/s, and req/s per CPU second the
#     proxy used (the throughput per core; core 0 may saturate first).
# ROUNDS (default 3) repeats each; the summary takes the median round.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
out=$(fresh_out gateway "${1:-}") # bench/results/gateway updates the committed ones
rounds=${ROUNDS:-3}
targets=${TARGETS:-"direct relay relay-busy inferrail inferrail-busy nginx haproxy haproxy-busy"}
mkdir -p "$out"
res="$out/overhead.jsonl"
: > "$res"
core0=(); core1=()
if [ "$(nproc)" -ge 2 ]; then core0=(taskset -c 0); core1=(taskset -c 1); fi

start_sims 3 "${core0[@]}" -- --zero-latency
port=$(freeport); admin=$(freeport)
gw_yaml "$tmp/gw.yaml" "$port" "$admin" 100000 "workers: 1"
gw_yaml "$tmp/gw-busy.yaml" "$port" "$admin" 100000 "workers: 1, busy_poll: true"
gw_yaml "$tmp/gw-obs.yaml" "$port" "$admin" 100000 "workers: 1"
gw_yaml "$tmp/gw-noscrape.yaml" "$port" "$admin" 100000 "workers: 1"
echo "load: {scrape_interval: 1h, scrape_timeout: 1s, max_age: 2h}" >> "$tmp/gw-noscrape.yaml"
dead=$(freeport) # nothing listens there: every span's post fails
echo "observability: {otlp_endpoint: \"http://127.0.0.1:$dead\", trace_sample_ratio: 1, decision_log: {path: \"$tmp/decisions.jsonl\", sample_rate: 1}}" >> "$tmp/gw-obs.yaml"
ups=(); for p in "${sims[@]}"; do ups+=(--upstream "127.0.0.1:$p"); done

nginx_conf "$tmp/nginx.conf" "$port"
haproxy_cfg "$tmp/haproxy.cfg" "$port"
haproxy_cfg "$tmp/haproxy-busy.cfg" "$port" "  busy-polling"

# start TARGET: starts the proxy on core 1; sets url and cpid (the process
# whose CPU time counts: nginx's worker). stop: ends it.
start() {
  ppid=""; cpid=""
  case $1 in
  direct) url="http://127.0.0.1:${sims[0]}"; return ;;
  relay) "${core1[@]}" "$B/ir-relay" --port "$port" "${ups[@]}" & ppid=$! ;;
  relay-busy) "${core1[@]}" "$B/ir-relay" --port "$port" "${ups[@]}" --busy-poll & ppid=$! ;;
  inferrail) "${core1[@]}" "$B/inferrail-gateway" --config "$tmp/gw.yaml" 2>>"$tmp/gw.log" & ppid=$! ;;
  inferrail-busy) "${core1[@]}" "$B/inferrail-gateway" --config "$tmp/gw-busy.yaml" 2>>"$tmp/gw.log" & ppid=$! ;;
  inferrail-obs) "${core1[@]}" "$B/inferrail-gateway" --config "$tmp/gw-obs.yaml" 2>>"$tmp/gw.log" & ppid=$! ;;
  inferrail-noscrape) "${core1[@]}" "$B/inferrail-gateway" --config "$tmp/gw-noscrape.yaml" 2>>"$tmp/gw.log" & ppid=$! ;;
  nginx) "${core1[@]}" nginx -c "$tmp/nginx.conf" -p "$tmp" & ppid=$! ;;
  haproxy) "${core1[@]}" haproxy -f "$tmp/haproxy.cfg" -db 2>>"$tmp/haproxy.log" & ppid=$! ;;
  haproxy-busy) "${core1[@]}" haproxy -f "$tmp/haproxy-busy.cfg" -db 2>>"$tmp/haproxy.log" & ppid=$! ;;
  esac
  pids+=($ppid)
  url="http://127.0.0.1:$port"
  waitup "$url/health"
  cpid=$ppid
  if [ "$1" = nginx ]; then cpid=$(pgrep -P "$ppid" -f 'nginx: worker'); fi
}
stop() {
  [ -z "$ppid" ] && return
  kill "$ppid" 2>/dev/null || true
  wait "$ppid" 2>/dev/null || true
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" || return 0; sleep 0.05; done
}
rps() {
  local c=$1; shift
  "${core0[@]}" "$B/inferrail-bench" rps --url "$url" --path /v1/completions --concurrency "$c" --no-stream --max-tokens 1 "$@"
}
row() { echo "{\"bench\":\"$1\",${2#\{}" | tee -a "$res"; }

env_json ",\"nginx\":\"$(nginx -v 2>&1 | cut -d/ -f2)\",\"haproxy\":\"$(haproxy -v | head -1 | awk '{print $3}')\"" >> "$res"
for round in $(seq "$rounds"); do
  for t in $targets; do
    start "$t"
    for rate in 2000 5000; do
      line=$("${core0[@]}" "$B/ir-overhead" --url "$url" --rate "$rate" --requests 10000 --warmup 1000 --max-connections 64 || true)
      row latency "{\"round\":$round,\"target\":\"$t\",${line#\{}"
      if [ "$t" = inferrail-obs ]; then
        sleep 1 # the writer drains its queue
        page=$(curl -s "http://127.0.0.1:$admin/metrics")
        w=$(echo "$page" | awk '/^inferrail_decision_log_records_total\{result="written"\}/ {print $2}')
        d=$(echo "$page" | awk '/^inferrail_decision_log_records_total\{result="dropped"\}/ {print $2}')
        row decisions "{\"round\":$round,\"target\":\"$t\",\"rate\":$rate,\"written\":${w:-null},\"dropped\":${d:-null}}"
      fi
    done
    rps 1 --n 500 >/dev/null || true # warm-up
    line=$(rps 1 --duration 3 || true)
    row serial "{\"round\":$round,\"target\":\"$t\",${line#\{}"
    stop
  done
done
for round in $(seq "$rounds"); do
  for t in $targets; do
    start "$t"
    rps 64 --n 2000 >/dev/null || true # warm-up
    c0=0; [ -n "$cpid" ] && c0=$(cpu_s "$cpid")
    line=$(rps 64 --duration 5 || true)
    cpu=null; [ -n "$cpid" ] && cpu=$(python3 -c "print(round($(cpu_s "$cpid") - $c0, 3))")
    row throughput "{\"round\":$round,\"target\":\"$t\",\"proxy_cpu_s\":$cpu,${line#\{}"
    stop
  done
done

python3 "$root/bench/gateway/summary.py" "$res" | tee "$out/summary.md"
