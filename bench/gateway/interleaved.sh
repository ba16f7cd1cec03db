#!/usr/bin/env bash
# Requests per CPU second, the gateway and nginx interleaved: both run the whole
# time (one worker each, core 1), and 4 s closed-loop runs at 64 connections
# alternate between them, so slow drifts of the machine hit both alike.
# Reproduce with:
#   make build && scripts/install-deps --bench && bench/gateway/interleaved.sh [OUT_DIR]
# RUNS (default 6) pairs. Loopback only; about a minute.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
out=$(fresh_out gateway "${1:-}") # bench/results/gateway updates the committed ones
runs=${RUNS:-6}
mkdir -p "$out"
core0=(); core1=()
if [ "$(nproc)" -ge 2 ]; then core0=(taskset -c 0); core1=(taskset -c 1); fi
start_sims 3 "${core0[@]}" -- --zero-latency
gp=$(freeport); ga=$(freeport); np=$(freeport)
gw_yaml "$tmp/gw.yaml" "$gp" "$ga" 100000 "workers: 1"
nginx_conf "$tmp/nginx.conf" "$np"
"${core1[@]}" "$B/inferrail-gateway" --config "$tmp/gw.yaml" 2>/dev/null & gpid=$!; pids+=($gpid)
"${core1[@]}" nginx -c "$tmp/nginx.conf" -p "$tmp" & npid=$!; pids+=($npid)
waitup "http://127.0.0.1:$gp/health"; waitup "http://127.0.0.1:$np/health"
nworker=$(pgrep -P "$npid" -f 'nginx: worker')
res="$out/interleaved.jsonl"
env_json ",\"nginx\":\"$(nginx -v 2>&1 | cut -d/ -f2)\"" > "$res"
for run in $(seq "$runs"); do
  for t in inferrail nginx; do
    if [ $t = inferrail ]; then port=$gp; pid=$gpid; else port=$np; pid=$nworker; fi
    c0=$(cpu_s "$pid")
    line=$("${core0[@]}" "$B/inferrail-bench" rps --url "http://127.0.0.1:$port" --path /v1/completions \
      --concurrency 64 --duration 4 --no-stream --max-tokens 1 || true)
    cpu=$(python3 -c "print(round($(cpu_s "$pid") - $c0, 3))")
    echo "{\"bench\":\"interleaved\",\"run\":$run,\"target\":\"$t\",\"proxy_cpu_s\":$cpu,${line#\{}" | tee -a "$res"
  done
done
python3 - "$res" <<'PY' | tee "$out/interleaved.md"
import json, statistics, sys
rows = [json.loads(l, object_pairs_hook=lambda p: dict(reversed(p))) for l in open(sys.argv[1]) if l.strip()]
env, runs = rows[0], [r for r in rows[1:]]
print(f"Commit {env['commit']}, {env['date']}, nginx {env['nginx']}: requests per CPU second the proxy used,")
print("64 connections, 4 s runs alternating between the two.")
print()
print("| run | inferrail req/s | CPU s | req per CPU s | nginx req/s | CPU s | req per CPU s |")
print("|---|---|---|---|---|---|---|")
per = {"inferrail": [], "nginx": []}
for n in sorted({r["run"] for r in runs}):
    cells = []
    for t in ("inferrail", "nginx"):
        r = next(x for x in runs if x["run"] == n and x["target"] == t)
        v = r["requests"] / r["proxy_cpu_s"]
        per[t].append(v)
        cells += [f"{r['rps']:.0f}", f"{r['proxy_cpu_s']:.2f}", f"{v:.0f}"]
    print(f"| {n} | " + " | ".join(cells) + " |")
print(f"| median | | | {statistics.median(per['inferrail']):.0f} | | | {statistics.median(per['nginx']):.0f} |")
PY
