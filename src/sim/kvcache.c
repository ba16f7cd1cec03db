/* kvcache.c: the simulator's prefix cache, an O(1) LRU of hashed blocks (the
 * hash -> block map is core's ir_map). */
#include "sim/sim.h"

#include <stdlib.h>
#include <string.h>

/* The map's key is the hash's 16 bytes (ir_hash128 has no padding). */
_Static_assert(sizeof(ir_hash128) == 16, "ir_hash128 is two uint64_t");

int sim_kv_init(sim_kv *kv, uint32_t n) {
    memset(kv, 0, sizeof *kv);
    if (n == 0) return -1;
    kv->b = calloc(n, sizeof *kv->b);
    /* Each block registers at most one hash, so n entries is the cap. */
    if (!kv->b || ir_map_init(&kv->hashed, n, n)) {
        free(kv->b);
        kv->b = NULL;
        return -1;
    }
    kv->n = n;
    /* Every block starts free, in index order. */
    for (uint32_t i = 0; i < n; i++) {
        kv->b[i].prev = (int32_t)i - 1;
        kv->b[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        kv->b[i].in_free = true;
    }
    kv->free_head = 0;
    kv->free_tail = (int32_t)n - 1;
    kv->nfree = n;
    return 0;
}

void sim_kv_free(sim_kv *kv) {
    free(kv->b);
    kv->b = NULL;
    ir_map_free(&kv->hashed);
}

static void free_unlink(sim_kv *kv, int32_t i) {
    sim_block *b = &kv->b[i];
    if (b->prev >= 0)
        kv->b[b->prev].next = b->next;
    else
        kv->free_head = b->next;
    if (b->next >= 0)
        kv->b[b->next].prev = b->prev;
    else
        kv->free_tail = b->prev;
    b->prev = b->next = -1;
    b->in_free = false;
    kv->nfree--;
}

static void free_push_tail(sim_kv *kv, int32_t i) {
    sim_block *b = &kv->b[i];
    b->prev = kv->free_tail;
    b->next = -1;
    if (kv->free_tail >= 0)
        kv->b[kv->free_tail].next = i;
    else
        kv->free_head = i;
    kv->free_tail = i;
    b->in_free = true;
    kv->nfree++;
}

static void unhash(sim_kv *kv, int32_t i) {
    sim_block *b = &kv->b[i];
    if (!b->hashed) return;
    ir_map_del(&kv->hashed, &b->hash, sizeof b->hash);
    b->hashed = false;
    kv->nhashed--;
    if (kv->on_removed) kv->on_removed(kv->removed_ud, b->hash);
}

int32_t sim_kv_lookup(const sim_kv *kv, ir_hash128 h) {
    uint64_t i;
    return ir_map_get(&kv->hashed, &h, sizeof h, &i) ? (int32_t)i : -1;
}

uint32_t sim_kv_match(const sim_kv *kv, const ir_hash128 *hs, uint32_t n) {
    uint32_t k = 0;
    while (k < n && sim_kv_lookup(kv, hs[k]) >= 0) k++;
    return k;
}

void sim_kv_acquire(sim_kv *kv, int32_t i) {
    if (kv->b[i].in_free) free_unlink(kv, i);
    kv->b[i].ref++;
}

int32_t sim_kv_alloc(sim_kv *kv) {
    int32_t i = kv->free_head;
    if (i < 0) return -1;
    free_unlink(kv, i);
    unhash(kv, i); /* eviction */
    kv->b[i].ref = 1;
    return i;
}

void sim_kv_release(sim_kv *kv, int32_t i) {
    sim_block *b = &kv->b[i];
    if (b->ref == 0) return;
    /* As in vLLM, a freed block joins the tail whether or not it is cached;
     * callers free a sequence's blocks last-first, so a prefix's tail is
     * evicted before its head. */
    if (--b->ref == 0) free_push_tail(kv, i);
}

bool sim_kv_set_hash(sim_kv *kv, int32_t i, ir_hash128 h) {
    sim_block *b = &kv->b[i];
    if (b->hashed) return false;
    /* A hash already cached keeps its first block. The map holds at most one
     * entry per block and was sized for all, so it cannot be full. */
    if (ir_map_add(&kv->hashed, &h, sizeof h, (uint64_t)i) != 0) return false;
    b->hash = h;
    b->hashed = true;
    kv->nhashed++;
    return true;
}

uint32_t sim_kv_reset(sim_kv *kv) {
    uint32_t n = 0;
    for (int32_t i = kv->free_head; i >= 0; i = kv->b[i].next) {
        if (kv->b[i].hashed) {
            unhash(kv, i);
            n++;
        }
    }
    return n;
}
