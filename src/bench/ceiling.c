/* ceiling.c: the finite-cache reuse ceiling of a workload (docs/bench-harness.md,
 * "Reuse ceilings"; ADR 0021). The workload's whole blocks, in arrival order, as
 * dense ids (bench_btrace), replayed through one pooled cache of the fleet's size:
 *   - Belady's MIN with bypass, hits counted per block: an upper bound on the hits
 *     of any routing over the fleet's caches;
 *   - LRU in the simulator's order, hits counted on the leading blocks: a reference
 *     (one engine with the fleet's memory), not a bound.
 * MIN runs in O(blocks x log cap) with a max-heap of the cached blocks keyed by
 * their next use; LRU in O(blocks). */
#include "bench/bench.h"

#include <stdlib.h>
#include <string.h>

void bench_btrace_init(bench_btrace *t) {
    memset(t, 0, sizeof *t);
}

void bench_btrace_free(bench_btrace *t) {
    free(t->id);
    free(t->start);
    memset(t, 0, sizeof *t);
}

/* Grows a to hold n items of size sz (doubling); -1 when out of memory. */
static int grow(void **a, size_t *cap, size_t n, size_t sz) {
    if (n <= *cap) return 0;
    size_t c = *cap ? *cap : 64;
    while (c < n) c *= 2;
    void *p = realloc(*a, c * sz);
    if (!p) return -1;
    *a = p;
    *cap = c;
    return 0;
}

int bench_btrace_add(bench_btrace *t, const uint32_t *ids, size_t n) {
    if (grow((void **)&t->start, &t->start_cap, t->nreq + 2, sizeof *t->start) ||
        grow((void **)&t->id, &t->cap, t->n + n, sizeof *t->id))
        return -1;
    t->start[t->nreq] = t->n;
    for (size_t i = 0; i < n; i++) {
        t->id[t->n + i] = ids[i];
        if (ids[i] >= t->n_ids) t->n_ids = ids[i] + 1;
    }
    t->n += n;
    t->nreq++;
    t->start[t->nreq] = t->n;
    return 0;
}

/* ---- Belady's MIN with bypass ---------------------------------------------------------
 * At each access: a cached block is a hit and its key moves to its next use. A missed
 * block is admitted only if it is used again sooner than the cached block used
 * furthest in the future, which it then replaces (or if there is room). */

#define NEVER SIZE_MAX /* the key of a block never used again */

typedef struct min_heap {
    size_t *key;  /* key[k]: next use of the block in slot k */
    uint32_t *id; /* id[k]: the block in slot k */
    int32_t *pos; /* pos[block]: its slot, -1 when not cached */
    size_t n, cap;
} min_heap;

static void heap_set(min_heap *h, size_t k, size_t key, uint32_t id) {
    h->key[k] = key;
    h->id[k] = id;
    h->pos[id] = (int32_t)k;
}

/* Restores the max-heap order around slot k, whose key just changed. */
static void heap_fix(min_heap *h, size_t k) {
    size_t key = h->key[k];
    uint32_t id = h->id[k];
    while (k > 0 && h->key[(k - 1) / 2] < key) { /* up */
        heap_set(h, k, h->key[(k - 1) / 2], h->id[(k - 1) / 2]);
        k = (k - 1) / 2;
    }
    for (;;) { /* down */
        size_t c = 2 * k + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->key[c + 1] > h->key[c]) c++;
        if (h->key[c] <= key) break;
        heap_set(h, k, h->key[c], h->id[c]);
        k = c;
    }
    heap_set(h, k, key, id);
}

/* next[i]: the next access of id[i]'s block after i, or NEVER. */
static size_t *next_uses(const bench_btrace *t) {
    size_t *next = malloc((t->n ? t->n : 1) * sizeof *next);
    size_t *last = malloc((t->n_ids ? t->n_ids : 1) * sizeof *last);
    if (next && last) {
        for (size_t b = 0; b < t->n_ids; b++) last[b] = NEVER;
        for (size_t i = t->n; i-- > 0;) {
            next[i] = last[t->id[i]];
            last[t->id[i]] = i;
        }
    } else {
        free(next);
        next = NULL;
    }
    free(last);
    return next;
}

static void min_access(min_heap *h, uint32_t b, size_t nx, bool count, size_t *hits) {
    if (h->pos[b] >= 0) { /* a hit: the block's key moves on to its next use */
        *hits += count;
        size_t k = (size_t)h->pos[b];
        h->key[k] = nx;
        heap_fix(h, k);
    } else if (nx == NEVER) { /* never used again: bypass */
    } else if (h->n < h->cap) {
        heap_set(h, h->n++, nx, b);
        heap_fix(h, h->n - 1);
    } else if (h->key[0] > nx) { /* replaces the block used furthest ahead */
        h->pos[h->id[0]] = -1;
        heap_set(h, 0, nx, b);
        heap_fix(h, 0);
    }
}

int bench_min_hits(const bench_btrace *t, size_t cap, size_t from_req, size_t *hits) {
    *hits = 0;
    if (cap == 0 || t->n == 0) return 0;
    if (cap > t->n_ids) cap = t->n_ids; /* more room than blocks changes nothing */
    size_t from = from_req < t->nreq ? t->start[from_req] : t->n;
    min_heap h = {malloc(cap * sizeof *h.key), malloc(cap * sizeof *h.id),
                  malloc(t->n_ids * sizeof *h.pos), 0, cap};
    size_t *next = next_uses(t);
    int rc = h.key && h.id && h.pos && next ? 0 : -1;
    if (rc == 0) {
        for (size_t b = 0; b < t->n_ids; b++) h.pos[b] = -1;
        for (size_t i = 0; i < t->n; i++) min_access(&h, t->id[i], next[i], i >= from, hits);
    }
    free(next);
    free(h.key);
    free(h.id);
    free(h.pos);
    return rc;
}

/* ---- LRU in the simulator's order ------------------------------------------------------
 * One engine (src/sim/kvcache.c) holding cap blocks, requests one at a time: a request
 * hits its leading cached blocks and takes them out of the LRU list; past the first
 * miss a cached block is left where it is (the engine computes it again in a block of
 * its own, which it does not cache twice), a missing one gets a block, evicting the
 * least recently used one; at the end the request's blocks go back last-first, so a
 * prefix's tail is evicted before its head. */

enum { LRU_OUT, LRU_LISTED, LRU_IN_USE };

typedef struct lru {
    int32_t *prev, *next;
    uint8_t *state;
    int32_t head, tail; /* head: evicted first */
    size_t used, cap;   /* blocks listed or in use */
} lru;

static void lru_unlink(lru *l, uint32_t b) {
    if (l->prev[b] >= 0)
        l->next[l->prev[b]] = l->next[b];
    else
        l->head = l->next[b];
    if (l->next[b] >= 0)
        l->prev[l->next[b]] = l->prev[b];
    else
        l->tail = l->prev[b];
}

static void lru_push_tail(lru *l, uint32_t b) {
    l->prev[b] = l->tail;
    l->next[b] = -1;
    if (l->tail >= 0)
        l->next[l->tail] = (int32_t)b;
    else
        l->head = (int32_t)b;
    l->tail = (int32_t)b;
    l->state[b] = LRU_LISTED;
}

/* A block for b: a free one, or the least recently used; false when every block is
 * in use by this request. */
static bool lru_take(lru *l, uint32_t b) {
    if (l->used == l->cap) {
        if (l->head < 0) return false;
        uint32_t v = (uint32_t)l->head;
        lru_unlink(l, v);
        l->state[v] = LRU_OUT;
        l->used--;
    }
    l->used++;
    l->state[b] = LRU_IN_USE;
    return true;
}

static size_t lru_request(lru *l, const uint32_t *ids, size_t n) {
    size_t m = 0;
    while (m < n && l->state[ids[m]] == LRU_LISTED) {
        lru_unlink(l, ids[m]);
        l->state[ids[m++]] = LRU_IN_USE;
    }
    for (size_t j = m; j < n; j++)
        if (l->state[ids[j]] == LRU_OUT) lru_take(l, ids[j]);
    for (size_t j = n; j-- > 0;)
        if (l->state[ids[j]] == LRU_IN_USE) lru_push_tail(l, ids[j]);
    return m;
}

int bench_lru_hits(const bench_btrace *t, size_t cap, size_t from_req, size_t *hits) {
    *hits = 0;
    if (cap == 0 || t->n == 0) return 0;
    size_t nb = t->n_ids;
    lru l = {
        malloc(nb * sizeof *l.prev), malloc(nb * sizeof *l.next), calloc(nb, 1), -1, -1, 0, cap};
    int rc = l.prev && l.next && l.state ? 0 : -1;
    for (size_t r = 0; r < t->nreq && rc == 0; r++) {
        size_t m = lru_request(&l, t->id + t->start[r], t->start[r + 1] - t->start[r]);
        if (r >= from_req) *hits += m;
    }
    free(l.prev);
    free(l.next);
    free(l.state);
    return rc;
}
