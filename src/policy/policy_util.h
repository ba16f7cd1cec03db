/* policy_util.h: helpers the cache-aware policies share (internal to src/policy).
 *
 * - irp_prefix_key: the 64-bit key that names a request's prefix, from its block
 *   hashes when it was tokenized, else from the first bytes of its text.
 * - irp_load_cap: the bounded-load ceiling of Mirrokni, Thorup and Zadimoghaddam.
 * - irp_pick_min: argmin with ties broken at random.
 */
#ifndef IRP_POLICY_UTIL_H
#define IRP_POLICY_UTIL_H

#include <math.h>
#include <stdint.h>
#include <xxhash.h>

#include "policy/ir_policy.h"

/* Replica slots the policies keep state for (matches GW_MAX_REPLICAS and
 * IRX_MAX_REPLICAS). A candidate whose replica index is at or above this has no
 * per-replica state: each policy says how it treats one. */
#define IRP_MAX_REPLICAS 256u

/* Tokens per block assumed when a request carries none, and characters per
 * token assumed when the text stands in for the tokens. */
#define IRP_DEFAULT_BLOCK   16u
#define IRP_CHARS_PER_TOKEN 4u

static inline uint64_t irp_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The key that names the prefix of `req`: the hash of block
 * min(nblocks, prefix_blocks) - 1 when the request has blocks (a block's hash
 * names its whole prefix); else XXH3 of the first prefix_blocks * block_size *
 * IRP_CHARS_PER_TOKEN bytes of the text. Returns false when the request has
 * neither (the caller falls back on load alone). */
static inline bool irp_prefix_key(const irp_request *req, uint32_t prefix_blocks, uint64_t *key) {
    uint32_t pb = prefix_blocks ? prefix_blocks : 1;
    if (req->blocks && req->nblocks) {
        size_t k = req->nblocks < pb ? req->nblocks : pb;
        ir_hash128 h = req->blocks[k - 1];
        *key = h.lo ^ irp_mix64(h.hi);
        return true;
    }
    if (req->text && req->text_len) {
        uint32_t bs = req->block_size ? req->block_size : IRP_DEFAULT_BLOCK;
        size_t len = (size_t)pb * bs * IRP_CHARS_PER_TOKEN;
        if (len > req->text_len) len = req->text_len;
        *key = XXH3_64bits(req->text, len);
        return true;
    }
    return false;
}

/* Bounded loads: a candidate may take the request only if its in_flight + 1 is
 * at most ceil(c * (total_in_flight + 1) / n). With c >= 1 at least one
 * candidate always qualifies (the least loaded one), so the bound never
 * leaves a request without a replica. c below 1 is treated as 1. */
static inline uint64_t irp_load_cap(double c, const irp_candidate *cand, size_t n) {
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += cand[i].in_flight;
    if (!(c >= 1.0)) c = 1.0;
    return (uint64_t)ceil(c * (double)(total + 1) / (double)n);
}

static inline bool irp_under_cap(const irp_candidate *c, uint64_t cap) {
    return (uint64_t)c->in_flight + 1 <= cap;
}

/* How far from the best score another still counts as equal: `tol`, but at least a
 * relative 1e-9 of the best (floating-point noise), as irp_argmin_offer takes it. */
static inline double irp_tie_band(double best, double tol) {
    double eps = 1e-9 * (fabs(best) > 1.0 ? fabs(best) : 1.0);
    return tol > eps ? tol : eps;
}

/* Keeps a running argmin of `score` over candidates with ties (within eps,
 * relative) broken uniformly at random by reservoir sampling. */
typedef struct irp_argmin {
    double best;
    size_t pick, ties;
} irp_argmin;

static inline void irp_argmin_init(irp_argmin *m) {
    m->best = INFINITY;
    m->pick = 0;
    m->ties = 0;
}

static inline void irp_argmin_offer(irp_argmin *m, ir_rng *rng, size_t i, double score) {
    double eps = irp_tie_band(m->best, 0.0);
    if (m->ties == 0 || score < m->best - eps) {
        m->best = score;
        m->pick = i;
        m->ties = 1;
    } else if (score <= m->best + eps) {
        m->ties++;
        if (ir_rng_below(rng, m->ties) == 0) m->pick = i;
    }
}

/* The least loaded candidate (in flight, then pending), ties at random. */
static inline size_t irp_least_loaded(const irp_request *req, const irp_candidate *c, size_t n) {
    irp_argmin m;
    irp_argmin_init(&m);
    for (size_t i = 0; i < n; i++)
        irp_argmin_offer(&m, req->rng, i, (double)c[i].in_flight + 1e-3 * (double)c[i].pending);
    return m.pick;
}

#endif
