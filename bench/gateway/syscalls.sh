#!/usr/bin/env bash
# System calls per proxied request, counted by strace -c: the kernel work a
# proxy asks for, which is most of its CPU time on the development VM.
# Reproduce with:
#   make build && scripts/install-deps --bench && bench/gateway/syscalls.sh [OUT_DIR]
# Three --zero-latency simulators; each proxy (one worker, round robin) in
# turn: 500 warm-up requests, then strace attaches for N requests (default
# 5,000) at 64 in flight. Loopback only; about 20 seconds.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
out=$(fresh_out gateway "${1:-}") # bench/results/gateway updates the committed ones
n=${N:-5000}
command -v strace >/dev/null || { echo "strace is missing: apt-get install strace" >&2; exit 1; }
mkdir -p "$out"
res="$out/syscalls.jsonl"
start_sims 3 -- --zero-latency
port=$(freeport); admin=$(freeport)
gw_yaml "$tmp/gw.yaml" "$port" "$admin" 100000 "workers: 1"
nginx_conf "$tmp/nginx.conf" "$port" "master_process off;"
haproxy_cfg "$tmp/haproxy.cfg" "$port"
env_json ",\"requests\":$n" > "$res"
url="http://127.0.0.1:$port"
for t in inferrail nginx haproxy; do
  proxy_cmd "$t"
  "${cmd[@]}" 2>/dev/null & p=$!
  pids+=($p)
  rps64 "$url" 500 >/dev/null # warm-up
  strace -c -f -p "$p" -o "$tmp/sc.$t" 2>/dev/null & sp=$!
  sleep 0.5 # attached to every thread
  line=$(rps64 "$url" "$n")
  kill -INT "$sp"; wait "$sp" 2>/dev/null || true
  kill "$p"; wait "$p" 2>/dev/null || true
  errs=$(json_errors "$line")
  # strace -c: "% time seconds usecs/call calls [errors] syscall", then a total line.
  python3 - "$tmp/sc.$t" "$t" "$n" "$errs" >> "$res" <<'PY'
import json, sys
path, target, n, errs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
calls = {}
for line in open(path):
    f = line.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
        calls[f[-1]] = int(f[3])
print(json.dumps({"bench": "syscalls", "target": target, "requests": n, "errors": errs,
                  "calls": calls, "per_request": round(sum(calls.values()) / n, 2)}))
PY
  tail -1 "$res"
done
python3 - "$res" <<'PY' | tee "$out/syscalls.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
env = rows[0]
print(f"Commit {env['commit']}, {env['date']}; {env['requests']} requests at 64 in flight after 500 warm-up, strace -c.")
print()
print("| proxy | system calls per request | the calls (count per request) | errors |")
print("|---|---|---|---|")
for r in rows[1:]:
    top = sorted(r["calls"].items(), key=lambda kv: -kv[1])
    parts = ", ".join(f"{k} {v / r['requests']:.2f}" for k, v in top if v / r["requests"] >= 0.01)
    print(f"| {r['target']} | {r['per_request']} | {parts} | {r['errors']} |")
PY
