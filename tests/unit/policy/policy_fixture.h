/* policy_fixture.h: prompts and fleets for the policy tests (header-only). */
#ifndef POLICY_FIXTURE_H
#define POLICY_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "policy/ir_policy.h"

#define FX_BLOCK 16u

/* A prompt of nblocks full blocks whose first `shared` blocks come from
 * prefix_seed and the rest from tail_seed: two prompts with the same
 * prefix_seed share exactly their first `shared` blocks. */
static inline size_t fx_blocks(ir_hash128 *out, size_t nblocks, uint64_t prefix_seed, size_t shared,
                               uint64_t tail_seed) {
    ir_block_chain c = ir_block_chain_at(ir_block_hash_root("m", NULL, NULL), NULL, 0);
    uint32_t ids[FX_BLOCK];
    for (size_t b = 0; b < nblocks; b++) {
        for (uint32_t t = 0; t < FX_BLOCK; t++)
            ids[t] = (uint32_t)((b < shared ? prefix_seed : tail_seed) * 1000003u + b * 31u + t);
        out[b] = ir_block_hash_next(&c, ids, FX_BLOCK);
    }
    return nblocks;
}

static inline irp_request fx_request(ir_rng *r, const ir_hash128 *blocks, size_t nblocks) {
    return (irp_request){.prompt_tokens = nblocks * FX_BLOCK + 5,
                         .rng = r,
                         .predicted = blocks != NULL,
                         .blocks = blocks,
                         .nblocks = nblocks,
                         .block_size = FX_BLOCK};
}

/* n idle candidates for replicas 0..n-1. */
static inline void fx_fleet(irp_candidate *c, size_t n) {
    for (size_t i = 0; i < n; i++)
        c[i] = (irp_candidate){.replica = (uint32_t)i, .max_concurrency = 256};
}

static inline uint32_t fx_max_in_flight(const irp_candidate *c, size_t n) {
    uint32_t m = 0;
    for (size_t i = 0; i < n; i++) m = c[i].in_flight > m ? c[i].in_flight : m;
    return m;
}

static inline uint64_t fx_total_in_flight(const irp_candidate *c, size_t n) {
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++) t += c[i].in_flight;
    return t;
}

/* The bounded-load promise at an assignment: the chosen replica's new load is
 * at most ceil(c * the new mean). */
static inline bool fx_within_bound(const irp_candidate *c, size_t n, size_t chosen, double lf) {
    double mean = (double)fx_total_in_flight(c, n) / (double)n;
    return (double)c[chosen].in_flight <= ceil(lf * mean);
}

#endif
