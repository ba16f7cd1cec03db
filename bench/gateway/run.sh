#!/usr/bin/env bash
# Gateway overhead and peers benchmark. Reproduce with:
#   make build && scripts/install-deps --bench && bench/gateway/run.sh [OUT_DIR]
# Three --zero-latency simulators; the gateway, nginx and HAProxy each proxy
# them round robin with one worker, pinned to their own core (core 1) while the
# simulators and the load generator share core 0. Loopback only.
#  1. added latency: open loop at 2,000 and 5,000 req/s, 10,000 requests
#     (1,000 warmup), through each proxy minus straight to a simulator,
#     three rounds in turn; the summary takes the median of the rounds;
#  2. throughput: closed loop, 64 in flight, 5 s, per proxy.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
B=${IR_BUILD:-$root/build}
out=${1:-$root/bench/results/gateway}
rounds=${ROUNDS:-3}
mkdir -p "$out"
res="$out/overhead.jsonl"
: > "$res"
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitup() { for _ in $(seq 200); do curl -sf -o /dev/null "$1" && return 0; sleep 0.05; done; echo "not up: $1" >&2; exit 1; }
core0=(); core1=()
if [ "$(nproc)" -ge 2 ]; then core0=(taskset -c 0); core1=(taskset -c 1); fi

sims=()
for i in 1 2 3; do
  p=$(freeport); sims+=("$p")
  "${core0[@]}" "$B/inferrail-sim" --port "$p" --zero-latency 2>/dev/null & pids+=($!)
done
for p in "${sims[@]}"; do waitup "http://127.0.0.1:$p/health"; done

gw=$(freeport); gwa=$(freeport); ngx=$(freeport); hap=$(freeport)
cat > "$tmp/gw.yaml" <<YAML
server: {listen: "127.0.0.1:$gw", admin_listen: "127.0.0.1:$gwa", workers: 1}
models: [{name: inferrail/sim-8b}]
replicas:
  - {id: s1, url: "http://127.0.0.1:${sims[0]}", max_concurrency: 100000, max_pending: 100000}
  - {id: s2, url: "http://127.0.0.1:${sims[1]}", max_concurrency: 100000, max_pending: 100000}
  - {id: s3, url: "http://127.0.0.1:${sims[2]}", max_concurrency: 100000, max_pending: 100000}
YAML
"${core1[@]}" "$B/inferrail-gateway" --config "$tmp/gw.yaml" 2>"$tmp/gw.log" & pids+=($!)

mkdir -p "$tmp/ngx"
cat > "$tmp/nginx.conf" <<NGX
worker_processes 1;
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/nginx.err warn;
events { worker_connections 8000; }
http {
  access_log off;
  client_body_temp_path $tmp/ngx; proxy_temp_path $tmp/ngx; fastcgi_temp_path $tmp/ngx;
  uwsgi_temp_path $tmp/ngx; scgi_temp_path $tmp/ngx;
  upstream sims {
    server 127.0.0.1:${sims[0]}; server 127.0.0.1:${sims[1]}; server 127.0.0.1:${sims[2]};
    keepalive 256;
  }
  server {
    listen 127.0.0.1:$ngx backlog=4096;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://sims;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering on;
    }
  }
}
NGX
"${core1[@]}" nginx -c "$tmp/nginx.conf" -p "$tmp" & pids+=($!)

cat > "$tmp/haproxy.cfg" <<HAP
global
  nbthread 1
  maxconn 8000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
  http-reuse always
frontend fe
  bind 127.0.0.1:$hap
  default_backend sims
backend sims
  balance roundrobin
  server s1 127.0.0.1:${sims[0]}
  server s2 127.0.0.1:${sims[1]}
  server s3 127.0.0.1:${sims[2]}
HAP
"${core1[@]}" haproxy -f "$tmp/haproxy.cfg" -db 2>"$tmp/haproxy.log" & pids+=($!)

waitup "http://127.0.0.1:$gw/health"
waitup "http://127.0.0.1:$ngx/health"
waitup "http://127.0.0.1:$hap/health"

declare -A url=([direct]="http://127.0.0.1:${sims[0]}" [inferrail]="http://127.0.0.1:$gw" [nginx]="http://127.0.0.1:$ngx" [haproxy]="http://127.0.0.1:$hap")
echo "{\"bench\":\"env\",\"cores\":$(nproc),\"date\":\"$(date -u +%FT%TZ)\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\",\"nginx\":\"$(nginx -v 2>&1 | cut -d/ -f2)\",\"haproxy\":\"$(haproxy -v | head -1 | awk '{print $3}')\"}" >> "$res"
for round in $(seq "$rounds"); do
  for rate in 2000 5000; do
    for target in direct inferrail nginx haproxy; do
      line=$("${core0[@]}" "$B/ir-overhead" --url "${url[$target]}" --rate "$rate" --requests 10000 --warmup 1000 || true)
      echo "{\"bench\":\"latency\",\"round\":$round,\"target\":\"$target\",${line#\{}" | tee -a "$res"
    done
  done
done
for target in direct inferrail nginx haproxy; do
  line=$("${core0[@]}" "$B/inferrail-bench" rps --url "${url[$target]}" --path /v1/completions --concurrency 64 --duration 5 --no-stream --max-tokens 1 || true)
  echo "{\"bench\":\"throughput\",\"target\":\"$target\",${line#\{}" | tee -a "$res"
done

python3 - "$res" <<'PY' | tee "$(dirname "$res")/summary.md"
import json, statistics, sys
def first_wins(pairs):
    d = {}
    for k, v in pairs:
        d.setdefault(k, v)
    return d
rows = [json.loads(l, object_pairs_hook=first_wins) for l in open(sys.argv[1]) if l.strip()]
lat = [r for r in rows if r["bench"] == "latency"]
print("| rate | proxy | added p50 (us) | added p99 (us) | errors |")
print("|---|---|---|---|---|")
for rate in (2000, 5000):
    for t in ("inferrail", "nginx", "haproxy"):
        adds50, adds99, errs = [], [], 0
        for rnd in sorted({r["round"] for r in lat}):
            d = [r for r in lat if r["round"] == rnd and r["rate"] == rate and r["target"] == "direct"]
            p = [r for r in lat if r["round"] == rnd and r["rate"] == rate and r["target"] == t]
            if not d or not p: continue
            adds50.append(p[0]["latency"]["p50"] - d[0]["latency"]["p50"])
            adds99.append(p[0]["latency"]["p99"] - d[0]["latency"]["p99"])
            errs += p[0]["errors"]
        if adds50:
            print(f"| {rate} | {t} | {statistics.median(adds50):.0f} | {statistics.median(adds99):.0f} | {errs} |")
print()
print("| proxy | req/s, one worker, 64 in flight | errors |")
print("|---|---|---|")
for r in rows:
    if r["bench"] == "throughput":
        print(f"| {r['target']} | {r['rps']:.0f} | {r['errors']} |")
PY
