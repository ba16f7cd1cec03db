# bench/lib.sh: shared helpers for the benchmark scripts (sourced, not run).
# Sets root, B (the build folder), tmp (removed on exit) and pids (killed on exit).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${IR_BUILD:-$root/build}
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

# fresh_out NAME [DIR]: the folder a script writes its results to. DIR when
# given (e.g. bench/results/gateway to update the committed results on purpose),
# else a new folder bench/results/runs/NAME-<time> (ignored by git), so that a
# run never overwrites the committed results unasked.
fresh_out() {
  local d=${2:-$root/bench/results/runs/$1-$(date +%Y%m%d-%H%M%S)}
  [ -n "${2:-}" ] || { while [ -e "$d" ]; do d=$d.x; done; }
  mkdir -p "$d" && echo "$d"
}

. "$(dirname "${BASH_SOURCE[0]}")/../tests/integration/ports.sh"
waitup() { for _ in $(seq 200); do curl -sf -o /dev/null "$1" && return 0; sleep 0.05; done; echo "not up: $1" >&2; exit 1; }

# start_sims N [PREFIX...] -- [SIM FLAGS...]: starts N simulators on free ports,
# each command prefixed with PREFIX (e.g. taskset -c 0), and waits until they
# answer. Their ports land in the array sims.
start_sims() {
  local n=$1; shift
  local prefix=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do prefix+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  sims=()
  local i p
  for i in $(seq "$n"); do
    p=$(freeport); sims+=("$p")
    "${prefix[@]}" "$B/inferrail-sim" --port "$p" "$@" 2>/dev/null & pids+=($!)
  done
  for p in "${sims[@]}"; do waitup "http://127.0.0.1:$p/health"; done
}

# gw_yaml FILE PORT ADMIN_PORT CAP [SERVER EXTRAS]: a gateway config for the
# simulators in sims, each capped at CAP requests in flight and pending.
gw_yaml() {
  local f=$1 port=$2 admin=$3 cap=$4 extra=${5:-}
  {
    echo "server: {listen: \"127.0.0.1:$port\", admin_listen: \"127.0.0.1:$admin\"${extra:+, $extra}}"
    echo "models: [{name: inferrail/sim-8b}]"
    echo "replicas:"
    local i=0 p
    for p in "${sims[@]}"; do
      i=$((i + 1))
      echo "  - {id: s$i, url: \"http://127.0.0.1:$p\", max_concurrency: $cap, max_pending: $cap}"
    done
  } > "$f"
}

# CPU seconds (user + system) a process has used so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$1/stat"; }

env_json() {
  echo "{\"bench\":\"env\",\"cores\":$(nproc),\"date\":\"$(date -u +%FT%TZ)\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)\"$1}"
}

# nginx_conf FILE PORT [MAIN DIRECTIVES]: nginx with one worker proxying the
# simulators in sims round robin, upstream keep-alive, no buffering; its temp
# files under $tmp/ngx.
nginx_conf() {
  local f=$1 port=$2 extra=${3:-}
  mkdir -p "$tmp/ngx"
  cat > "$f" <<NGX
worker_processes 1;
daemon off;
$extra
pid $tmp/nginx.pid;
error_log $tmp/nginx.err warn;
events { worker_connections 8000; }
http {
  access_log off;
  client_body_temp_path $tmp/ngx; proxy_temp_path $tmp/ngx; fastcgi_temp_path $tmp/ngx;
  uwsgi_temp_path $tmp/ngx; scgi_temp_path $tmp/ngx;
  upstream sims {
$(for p in "${sims[@]}"; do echo "    server 127.0.0.1:$p;"; done)
    keepalive 256;
  }
  server {
    listen 127.0.0.1:$port backlog=4096;
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
}

# haproxy_cfg FILE PORT [GLOBAL DIRECTIVES]: HAProxy, one thread, round robin
# over the simulators in sims, keep-alive both ways.
haproxy_cfg() {
  local f=$1 port=$2 extra=${3:-}
  cat > "$f" <<HAP
global
  nbthread 1
  maxconn 8000
$extra
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  option http-keep-alive
  http-reuse always
frontend fe
  bind 127.0.0.1:$port
  default_backend sims
backend sims
  balance roundrobin
$(i=0; for p in "${sims[@]}"; do i=$((i + 1)); echo "  server s$i 127.0.0.1:$p"; done)
HAP
}

# proxy_cmd NAME: the command line of one proxy (inferrail, nginx or haproxy) in
# the array cmd, from the configs gw_yaml, nginx_conf and haproxy_cfg wrote as
# $tmp/gw.yaml, $tmp/nginx.conf and $tmp/haproxy.cfg.
proxy_cmd() {
  case $1 in
  inferrail) cmd=("$B/inferrail-gateway" --config "$tmp/gw.yaml") ;;
  nginx) cmd=(nginx -c "$tmp/nginx.conf" -p "$tmp") ;;
  haproxy) cmd=(haproxy -f "$tmp/haproxy.cfg" -db) ;;
  esac
}

# rps64 URL N: N non-streamed one-token completions at 64 in flight through
# URL, after waiting up to 30 s for URL/health (valgrind starts slowly); prints
# the harness's JSON line.
rps64() {
  for _ in $(seq 300); do curl -sf -o /dev/null "$1/health" && break; sleep 0.1; done
  "$B/inferrail-bench" rps --url "$1" --path /v1/completions --concurrency 64 --n "$2" --no-stream --max-tokens 1
}

# json_errors LINE: the "errors" field of a harness line.
json_errors() { echo "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["errors"])'; }
