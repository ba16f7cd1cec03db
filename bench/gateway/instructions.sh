#!/usr/bin/env bash
# User-space instructions per proxied request, counted by callgrind: a measure
# of each proxy's own code that machine noise cannot move. Reproduce with:
#   make build && scripts/install-deps --bench && bench/gateway/instructions.sh [OUT_DIR]
# Three --zero-latency simulators; each proxy (one worker, round robin) runs
# under callgrind in turn: 500 warm-up requests, counters zeroed, then N
# requests (default 5,000) at 64 in flight, counters dumped. Kernel time is not
# counted: on the development VM it is most of every proxy's CPU time.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
out=$(fresh_out gateway "${1:-}") # bench/results/gateway updates the committed ones
n=${N:-5000}
mkdir -p "$out"
res="$out/instructions.jsonl"
: > "$res"
start_sims 3 -- --zero-latency
port=$(freeport); admin=$(freeport)
gw_yaml "$tmp/gw.yaml" "$port" "$admin" 100000 "workers: 1"
# The engine scraper reads every replica's /metrics 10 times a second of wall time,
# whatever the traffic; under callgrind the requests run some 50 times slower while
# the scrapes keep their pace, which would charge the proxy with 50 times its real
# scraping per request. It is idled here (SCRAPE=on keeps it); its real cost shows
# in interleaved.sh, which runs the default config in real time.
[ "${SCRAPE:-off}" = on ] || echo "load: {scrape_interval: 3600s, scrape_timeout: 1s, max_age: 7200s}" >> "$tmp/gw.yaml"
nginx_conf "$tmp/nginx.conf" "$port" "master_process off;"
haproxy_cfg "$tmp/haproxy.cfg" "$port"
env_json ",\"requests\":$n,\"valgrind\":\"$(valgrind --version)\"" >> "$res"
url="http://127.0.0.1:$port"
for t in inferrail nginx haproxy; do
  proxy_cmd "$t"
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$t.%p" "${cmd[@]}" 2>>"$tmp/vg.log" & vp=$!
  pids+=($vp)
  rps64 "$url" 500 >/dev/null # warm-up
  callgrind_control -z "$vp" >/dev/null
  line=$(rps64 "$url" "$n")
  callgrind_control -d "$vp" >/dev/null
  kill "$vp"; wait "$vp" 2>/dev/null || true
  # The dump taken after the measured requests is the newest file with a part number.
  f=$(ls -t "$tmp"/cg."$t".*.[0-9]* 2>/dev/null | head -1)
  ir=$(awk '/^summary:/{print $2}' "$f")
  errs=$(json_errors "$line")
  echo "{\"bench\":\"instructions\",\"target\":\"$t\",\"requests\":$n,\"errors\":$errs,\"instructions\":$ir,\"per_request\":$((ir / n))}" | tee -a "$res"
done
python3 - "$res" <<'PY' | tee "$out/instructions.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
env = rows[0]
print(f"Commit {env['commit']}, {env['date']}, {env['valgrind']}; {env['requests']} requests at 64 in flight after 500 warm-up.")
print()
print("| proxy | user-space instructions per request | relative to inferrail | errors |")
print("|---|---|---|---|")
base = next(r for r in rows if r.get("target") == "inferrail")["per_request"]
for r in rows[1:]:
    print(f"| {r['target']} | {r['per_request']:,} | {r['per_request'] / base:.2f} | {r['errors']} |")
PY
