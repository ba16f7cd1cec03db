/* prefix_hash.c: consistent hashing on the prompt's first blocks, with bounded
 * loads (Mirrokni, Thorup and Zadimoghaddam, "Consistent Hashing with Bounded
 * Loads", SODA 2018).
 *
 * The key. The hash of block min(nblocks, prefix_blocks) - 1 names the prefix
 * (chained hashes: that block's hash covers every token before it). A request
 * that was not tokenized is keyed by XXH3 of its text's first
 * prefix_blocks * block_size * 4 bytes (about the same span of text); one with
 * neither blocks nor text goes to the least loaded candidate (in flight, then
 * pending, ties at random). See irp_prefix_key in policy_util.h.
 *
 * The ring. Built once at create: `vnodes` points per replica slot for every
 * slot below IRP_MAX_REPLICAS, sorted. Only the candidates offered take part:
 * the walk skips points of replicas that are not offered, so a replica joining
 * or leaving moves only the keys of its own points (the consistent-hashing
 * property), and the ring never needs rebuilding. The ring is immutable after
 * create, so choose takes no lock.
 *
 * Bounded loads. Walking clockwise from the key's point, the first candidate
 * whose in_flight + 1 <= ceil(c * (total_in_flight + 1) / n) wins, c =
 * load_factor. A hot prefix therefore spills to the next replica on the ring
 * (and the one after) rather than melting one, and no replica is ever given a
 * request that takes it above c times the mean in flight. At least one
 * candidate always passes (the least loaded), so the walk ends. Candidates
 * whose replica index is at or above IRP_MAX_REPLICAS have no ring points; they
 * are reached only through the least-loaded fallback (never, with today's
 * fleet cap of 256).
 *
 * Knobs: load_factor (c, 1.25), prefix_blocks (4), vnodes (64, capped at 1024).
 * Cost: a binary search over 256 * vnodes points, then a walk of a few points
 * per distinct replica passed; no allocation.
 */
#include <stdlib.h>
#include <string.h>

#include "policy/ir_policy.h"
#include "policy/policy_util.h"

#define PH_MAX_VNODES 1024u

typedef struct ph_point {
    uint64_t pos;
    uint32_t replica;
} ph_point;

typedef struct ph_state {
    double load_factor;
    uint32_t prefix_blocks;
    size_t npoints;
    ph_point points[]; /* sorted by pos */
} ph_state;

static int point_cmp(const void *a, const void *b) {
    const ph_point *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->replica < y->replica ? -1 : x->replica > y->replica;
}

static void *ph_create(const irp_config *cfg) {
    uint32_t v = cfg->vnodes ? cfg->vnodes : 1;
    if (v > PH_MAX_VNODES) v = PH_MAX_VNODES;
    size_t np = (size_t)v * IRP_MAX_REPLICAS;
    ph_state *s = malloc(sizeof *s + np * sizeof(ph_point));
    if (!s) return NULL;
    s->load_factor = cfg->load_factor;
    s->prefix_blocks = cfg->prefix_blocks;
    s->npoints = np;
    for (uint32_t r = 0; r < IRP_MAX_REPLICAS; r++)
        for (uint32_t k = 0; k < v; k++)
            s->points[(size_t)r * v + k] = (ph_point){
                .pos = irp_mix64(((uint64_t)r << 32 | k) ^ 0x9e3779b97f4a7c15ULL), .replica = r};
    qsort(s->points, np, sizeof(ph_point), point_cmp);
    return s;
}

static void ph_destroy(void *state) {
    free(state);
}

/* The first point at or after pos (wrapping to 0). */
static size_t ring_start(const ph_state *s, uint64_t pos) {
    size_t lo = 0, hi = s->npoints;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->points[mid].pos < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == s->npoints ? 0 : lo;
}

static size_t ph_choose(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    ph_state *s = state;
    uint64_t key;
    if (!s || !irp_prefix_key(req, s->prefix_blocks, &key)) return irp_least_loaded(req, c, n);
    /* slot -> candidate index + 1 (0: not offered) */
    uint16_t where[IRP_MAX_REPLICAS];
    memset(where, 0, sizeof where);
    size_t on_ring = 0;
    for (size_t i = 0; i < n && i < UINT16_MAX; i++)
        if (c[i].replica < IRP_MAX_REPLICAS && !where[c[i].replica]) {
            where[c[i].replica] = (uint16_t)(i + 1);
            on_ring++;
        }
    uint64_t cap = irp_load_cap(s->load_factor, c, n);
    uint64_t seen[IRP_MAX_REPLICAS / 64] = {0};
    size_t tried = 0;
    for (size_t k = 0, p = ring_start(s, key); k < s->npoints && tried < on_ring; k++) {
        uint32_t r = s->points[p].replica;
        if (++p == s->npoints) p = 0;
        if (!where[r] || (seen[r / 64] >> (r % 64) & 1)) continue;
        seen[r / 64] |= 1ULL << (r % 64);
        tried++;
        size_t i = where[r] - 1u;
        if (irp_under_cap(&c[i], cap)) return i;
    }
    return irp_least_loaded(req, c, n);
}

const irp_vtable irp_prefix_hash = {
    .name = "prefix_hash", .create = ph_create, .destroy = ph_destroy, .choose = ph_choose};
