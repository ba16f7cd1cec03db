# shellcheck shell=bash
# bench/tokenizer/base.sh: sourced by this folder's side-by-side scripts
# (warm_ab.sh, tmpl_arith.sh, hostile_steps.sh), which measure this checkout's
# bench program built against another commit's tokenizer.
#
# base_bench COMMIT DIR BENCH.c OUT [CC FLAGS...]: builds COMMIT's ir_tokenize
# and ir_core in DIR/b and links this checkout's BENCH.c against them into OUT
# (-O2 -g, as the scripts always did). COMMIT's sources go to DIR/src, kept
# between calls: only the files that differ from the last call's are copied, so
# a call for the next commit of a series recompiles only what that commit changed.
base_bench() {
  local commit=$1 dir=$2 bench=$3 out=$4
  shift 4
  local here f libs gmp=""
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  rm -rf "$dir/x" && mkdir -p "$dir/x" "$dir/src"
  git -C "$here" archive "$commit" src CMakeLists.txt cmake bench tests/unit | tar -x -C "$dir/x"
  (cd "$dir/x" && find . -type f) | while read -r f; do
    cmp -s "$dir/x/$f" "$dir/src/$f" 2>/dev/null && continue
    mkdir -p "$(dirname "$dir/src/$f")" && cp "$dir/x/$f" "$dir/src/$f"
  done
  [ -f "$dir/b/CMakeCache.txt" ] ||
    cmake -S "$dir/src" -B "$dir/b" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  nice -n 10 cmake --build "$dir/b" -j "$(nproc)" --target ir_tokenize >"$dir/build.log"
  libs="$(pkg-config --libs jansson yaml-0.1 libxxhash libpcre2-8 libutf8proc)"
  pkg-config --exists gmp && gmp="$(pkg-config --libs gmp)"
  # shellcheck disable=SC2086 # the pkg-config lists are word lists
  cc -O2 -g -I"$dir/src/src" "$@" "$bench" "$dir/b/libir_tokenize.a" "$dir/b/libir_core.a" \
    $libs $gmp -lm -lpthread -o "$out"
}
