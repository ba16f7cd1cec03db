/* placement.c: consistent hashing with bounded loads (see ir_index.h). */
#include <math.h>

#include "index/ir_index.h"

/* A 64-bit mixer (the finalizer of splitmix64): the rendezvous weight. */
static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

size_t irx_bounded_hash_pick(uint64_t key, const uint64_t *ids, const uint32_t *loads, size_t n,
                             double c) {
    if (n == 0) return SIZE_MAX;
    if (!(c >= 1.0)) c = 1.0;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += loads[i];
    double bound = ceil(c * (double)(total + 1) / (double)n);
    size_t best = SIZE_MAX, least = 0;
    uint64_t best_w = 0;
    for (size_t i = 0; i < n; i++) {
        if (loads[i] < loads[least]) least = i;
        if ((double)loads[i] + 1.0 > bound) continue;
        uint64_t w = mix(key ^ mix(ids[i]));
        if (best == SIZE_MAX || w > best_w || (w == best_w && ids[i] < ids[best])) {
            best = i;
            best_w = w;
        }
    }
    return best == SIZE_MAX ? least : best; /* unreachable for c >= 1; kept for NaN loads */
}
