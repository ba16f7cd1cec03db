#!/usr/bin/env bash
# test_layers.sh: layers.sh passes on the tree as it is, and fails on each kind
# of bad include planted in a scratch copy of it.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

fresh() {
  rm -rf "$tmp/tree"
  mkdir -p "$tmp/tree/docs/adr" "$tmp/tree/bench"
  cp -r "$root/src" "$tmp/tree/src"
  cp -r "$root/bench/tools" "$root/bench/tokenizer" "$tmp/tree/bench/"
  cp "$root/docs/adr/0001-one-c-codebase.md" "$tmp/tree/docs/adr/"
}

fails=0
# expect_fail FILE INCLUDE MESSAGE: planting INCLUDE in FILE makes the check fail with MESSAGE.
expect_fail() {
  fresh
  printf '#include "%s"\n' "$2" >>"$tmp/tree/$1"
  if out="$(bash "$here/layers.sh" "$tmp/tree" 2>&1)"; then
    echo "FAIL: $1 including $2 passed the check"
    fails=$((fails + 1))
  elif ! grep -qF "$3" <<<"$out"; then
    echo "FAIL: $1 including $2: expected '$3' in:"
    echo "$out"
    fails=$((fails + 1))
  else
    echo "ok: $1 including $2 is refused"
  fi
}

fresh
bash "$here/layers.sh" "$tmp/tree" || { echo "FAIL: the unchanged tree fails the check"; exit 1; }

expect_fail src/core/buf.c net/ir_net.h "core (layer 1) may not include net (layer 2)"
expect_fail src/core/ir_core.h gateway/gateway.h "core (layer 1) may not include gateway"
expect_fail src/policy/policy.c tokenize/ir_tokenize.h "ADR 0001 does not let policy use tokenize"
expect_fail src/net/common.c sim/sim.h "net (layer 2) may not include sim (layer 3)"
expect_fail src/gateway/proxy.c sim/sim.h "a program (gateway) never includes another program (sim)"
expect_fail src/sim/engine.c bench/bench.h "a program (sim) never includes another program (bench)"
expect_fail src/bench/fleet.c net/net_internal.h "only net's public header ir_net.h"
expect_fail src/gateway/gateway.h tokenize/hf_internal.h "only tokenize's public header"
expect_fail bench/tools/relay.c gateway/gateway.h "a program (benchtool) never includes another program"
expect_fail src/tokenize/ids.c nowhere/x.h "'nowhere' is not a folder of src/"

# An edge the ADR's table grants is accepted; the same edge is refused once the row loses it.
fresh
printf '#include "net/ir_net.h"\n' >>"$tmp/tree/src/policy/policy.c"
sed -i 's/^\(  *| `policy` |\).*/\1 `net` |/' "$tmp/tree/docs/adr/0001-one-c-codebase.md"
if bash "$here/layers.sh" "$tmp/tree" >/dev/null; then echo "ok: an edge the ADR names is allowed"; else
  echo "FAIL: policy -> net refused although the ADR's table allows it"
  fails=$((fails + 1))
fi

# A module missing from the ADR's table is an error, not a silent pass.
fresh
sed -i '/^  *| `obs` |/d' "$tmp/tree/docs/adr/0001-one-c-codebase.md"
if bash "$here/layers.sh" "$tmp/tree" >/dev/null 2>&1; then
  echo "FAIL: a table without obs's row passed"
  fails=$((fails + 1))
else echo "ok: a missing table row is an error"; fi

[ "$fails" -eq 0 ] || { echo "test_layers: $fails failure(s)"; exit 1; }
echo "test_layers: ok"
