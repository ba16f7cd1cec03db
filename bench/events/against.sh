#!/usr/bin/env bash
# This tree's event ingestion against a base commit's, side by side: builds
# bench_events.c (this tree's) against the base's src/index (a shim stands in for
# irx_ev_apply_batch where the base lacks it: one irx_ev_apply per event), then
# runs both, interleaved, REPS times per case: events applied, then msgpack
# payloads decoded and applied (ingest). JSON lines, each with "build".
#   make build && bench/events/against.sh BASE [SECONDS] [REPS] > /tmp/against.jsonl
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
base="${1:?usage: against.sh BASE_COMMIT [SECONDS] [REPS]}"
secs="${2:-2}"
reps="${3:-3}"
new="$root/build/inferrail-evbench"
dir="$(mktemp -d /tmp/evbench-base.XXXXXX)"
trap 'rm -rf "$dir"' EXIT

git -C "$root" archive "$base" src/index | tar -x -C "$dir"
flags=(-D_GNU_SOURCE -I"$dir/src" -I"$root/src" -O2 -DNDEBUG -std=c17)
objs=()
for f in "$dir"/src/index/*.c; do
    cc "${flags[@]}" -c "$f" -o "$f.o"
    objs+=("$f.o")
done
if ! grep -q irx_ev_apply_batch "$dir/src/index/ir_index.h"; then
    cat >"$dir/shim.h" <<'EOF'
#include "index/ir_index.h"
void irx_ev_apply_batch(irx_index *ix, uint32_t r, const irx_ev *ev, size_t nev,
                        irx_ev_counts *c);
EOF
    cat >"$dir/shim.c" <<'EOF'
#include "shim.h"
void irx_ev_apply_batch(irx_index *ix, uint32_t r, const irx_ev *ev, size_t nev,
                        irx_ev_counts *c) {
    for (size_t i = 0; i < nev; i++) irx_ev_apply(ix, r, &ev[i], c);
}
EOF
    cc "${flags[@]}" -c "$dir/shim.c" -o "$dir/shim.o"
    objs+=("$dir/shim.o")
    flags+=(-include "$dir/shim.h")
fi
cc "${flags[@]}" -c "$root/bench/events/bench_events.c" -o "$dir/bench.o"
cc -o "$dir/evbench" "$dir/bench.o" "${objs[@]}" "$root/build/libir_core.a" \
    -lutf8proc -ljansson -lyaml -lxxhash -lm -lurcu-common -lurcu-bp -lmsgpackc -lpthread

echo "{\"machine\":\"$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)\",\"load\":\"$(cut -d' ' -f1-3 /proc/loadavg)\",\"base\":\"$(git -C "$root" rev-parse --short "$base")\",\"commit\":\"$(git -C "$root" rev-parse --short HEAD)\"}"
# one PER_EVENT BATCH READERS CHAINS: 1 = one irx_ev_apply per event; 2048 chains of 64 = 131,072 blocks held
cases=("1 1 0 2048" "1 64 0 2048" "16 1 0 2048" "16 64 0 2048" "1 64 1 2048" "16 64 1 2048"
    "1 64 0 16384" "16 64 0 16384")
for c in "${cases[@]}"; do
    for ((i = 0; i < reps; i++)); do
        for b in base new; do
            bin="$new"
            [ "$b" = base ] && bin="$dir/evbench"
            # shellcheck disable=SC2086
            "$bin" one $c "$secs" | sed "s/^{/{\"build\":\"$b\",/"
        done
    done
done
# ingest ENCODING HASH PER READERS: msgpack payloads decoded and applied (bench_events.c)
ingest=("map int 16 0" "array int 16 0" "map bytes 16 0" "array bytes 16 0" "map int 16 1")
for c in "${ingest[@]}"; do
    for ((i = 0; i < reps; i++)); do
        for b in base new; do
            bin="$new"
            [ "$b" = base ] && bin="$dir/evbench"
            # shellcheck disable=SC2086
            "$bin" ingest $c "$secs" | sed "s/^{/{\"build\":\"$b\",/"
        done
    done
done
for b in base new; do
    bin="$new"
    [ "$b" = base ] && bin="$dir/evbench"
    "$bin" memory | sed "s/^{/{\"build\":\"$b\",/"
    "$bin" decode "$secs" | sed "s/^{/{\"build\":\"$b\",/"
done
