#!/usr/bin/env bash
# The template engine's arithmetic against another commit's, side by side:
# builds that commit's ir_tokenize (and ir_core) in build-base/, links the same
# bench_tmpl_arith.c against both, and runs them interleaved, ROUNDS pairs.
# Prints each template's ns per iteration (best of 5 renders per run) and the
# median ratio new/base. A quick A/B check, not a quiet-machine result.
#   bench/tokenizer/tmpl_arith.sh [BASE_COMMIT=main] [ROUNDS=5]
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
base="${1:-main}"
rounds="${2:-5}"
out="$here/build-base"
. "$here/bench/tokenizer/base.sh"
base_bench "$base" "$out" "$here/bench/tokenizer/bench_tmpl_arith.c" "$out/tmplarithbench-base"
cmake --build "$here/build" -j 2 --target inferrail-tmplarithbench >/dev/null
new="$here/build/inferrail-tmplarithbench"
tmp="$(mktemp)"
for _ in $(seq "$rounds"); do
  "$out/tmplarithbench-base" 5 | sed 's/^/base /' >>"$tmp"
  "$new" 5 | sed 's/^/new /' >>"$tmp"
done
python3 - "$tmp" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    side, name, val = line.split()[:3]
    if val == "refused":
        continue
    runs.setdefault(name, {}).setdefault(side, []).append(float(val))
print("%-10s %12s %12s %8s" % ("template", "base ns/it", "new ns/it", "new/base"))
for name, s in runs.items():
    b, n = s.get("base"), s.get("new")
    mb = statistics.median(b) if b else float("nan")
    mn = statistics.median(n) if n else float("nan")
    print("%-10s %12.1f %12.1f %8.3f" % (name, mb, mn, mn / mb if b and n else float("nan")))
PY
rm -f "$tmp"
