#!/usr/bin/env bash
# layers.sh: fails when an #include in src/ crosses a layer the wrong way.
#
# The layers (docs/adr/0001-one-c-codebase.md):
#   1. core;
#   2. the modules (net, tokenize, policy, index, load, obs): each includes core
#      and only the modules that the ADR's table names for it;
#   3. the programs (gateway, sim, bench): they include core and any module,
#      never another program.
# Outside its own folder, a file of src/ includes only a module's public header
# (core/ir_core.h, net/ir_net.h, ...), never its internal ones. The benchmark
# programs under bench/ follow the program rule but may reach a module's
# internals, which some of them measure (bench/tokenizer/bench_strmap.c).
# The table of allowed modules is read from the ADR itself, so the document
# and the check cannot drift apart.
#
# Usage: layers.sh [ROOT]   (ROOT defaults to the repository of this script)
set -euo pipefail

root="${1:-$(cd "$(dirname "$0")/../.." && pwd)}"
adr="$root/docs/adr/0001-one-c-codebase.md"
modules="net tokenize policy index load obs"
programs="gateway sim bench"

layer_of() {
  [ "$1" = benchtool ] && { echo 3; return; } # bench/tools, bench/tokenizer, bench/policy
  case " core " in *" $1 "*) echo 1; return ;; esac
  case " $modules " in *" $1 "*) echo 2; return ;; esac
  case " $programs " in *" $1 "*) echo 3; return ;; esac
  echo 0
}

[ -f "$adr" ] || { echo "layers: $adr is missing"; exit 2; }
# Rows of the ADR's table look like: | `net` | `core` |
declare -A allowed
while IFS='|' read -r _ mod deps _; do
  mod="$(echo "$mod" | tr -d '` ')"
  case " $modules " in *" $mod "*) ;; *) continue ;; esac
  allowed[$mod]="$(echo "$deps" | tr -d '`,' | tr -s ' ')"
done < <(grep -E '^ *\| *`[a-z]+` *\|' "$adr")
for m in $modules; do
  [ -n "${allowed[$m]+x}" ] || { echo "layers: ADR 0001's table has no row for module '$m'"; exit 2; }
done

bad=0
complain() {
  echo "layers: $1: #include \"$2\": $3"
  bad=$((bad + 1))
}

check_file() {
  local file="$1" from="$2" rel="${1#"$root"/}"
  local from_layer
  from_layer="$(layer_of "$from")"
  while IFS= read -r inc; do
    case "$inc" in */*) ;; *) continue ;; esac # a file of the same folder
    local to="${inc%%/*}" header="${inc#*/}"
    [ "$to" = "$from" ] && continue
    local to_layer
    to_layer="$(layer_of "$to")"
    if [ "$to_layer" = 0 ]; then
      complain "$rel" "$inc" "'$to' is not a folder of src/"
    elif [ "$to_layer" -gt "$from_layer" ]; then
      complain "$rel" "$inc" "$from (layer $from_layer) may not include $to (layer $to_layer)"
    elif [ "$to_layer" = 3 ]; then
      complain "$rel" "$inc" "a program ($from) never includes another program ($to)"
    elif [ "$to_layer" = 2 ] && [ "$from_layer" = 2 ] &&
      ! case " ${allowed[$from]} " in *" $to "*) true ;; *) false ;; esac; then
      complain "$rel" "$inc" "ADR 0001 does not let $from use $to"
    elif [ "$from" != benchtool ] && [ "$header" != "ir_$to.h" ]; then
      complain "$rel" "$inc" "only $to's public header ir_$to.h may be included from outside $to"
    fi
  done < <(sed -nE 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1/p' "$file")
}

nfiles=0
for dir in "$root"/src/*/; do
  from="$(basename "$dir")"
  if [ "$(layer_of "$from")" = 0 ]; then
    echo "layers: src/$from is neither core, a module nor a program; add it to layers.sh and ADR 0001"
    bad=$((bad + 1))
    continue
  fi
  for f in "$dir"*.c "$dir"*.h; do
    [ -f "$f" ] || continue
    check_file "$f" "$from"
    nfiles=$((nfiles + 1))
  done
done
# The benchmark tools are small programs of their own.
for f in "$root"/bench/tools/*.c "$root"/bench/tokenizer/*.c "$root"/bench/policy/*.c; do
  [ -f "$f" ] && check_file "$f" benchtool && nfiles=$((nfiles + 1))
done

if [ "$bad" -gt 0 ]; then
  echo "layers: $bad include(s) cross a layer the wrong way (see docs/adr/0001-one-c-codebase.md)"
  exit 1
fi
echo "layers: ok ($nfiles files)"
