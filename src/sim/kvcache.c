/* kvcache.c: the simulator's prefix cache, an O(1) LRU of hashed blocks (the
 * hash -> block map is core's ir_map), and its CPU tier, an LRU of the hashes
 * that the GPU evicted (--num-cpu-blocks). */
#include "sim/sim.h"

#include <stdlib.h>
#include <string.h>

/* The map's key is the hash's 16 bytes (ir_hash128 has no padding). */
_Static_assert(sizeof(ir_hash128) == 16, "ir_hash128 is two uint64_t");

int sim_kv_init(sim_kv *kv, uint32_t n) {
    memset(kv, 0, sizeof *kv);
    kv->lru_head = kv->lru_tail = kv->cfree = -1; /* no CPU tier */
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
    if (kv->c) ir_map_free(&kv->cmap);
    free(kv->c);
    kv->c = NULL;
    kv->nc = 0;
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

static void cpu_put(sim_kv *kv, ir_hash128 h);

int32_t sim_kv_alloc(sim_kv *kv) {
    int32_t i = kv->free_head;
    if (i < 0) return -1;
    free_unlink(kv, i);
    /* Eviction: the copy reaches the CPU tier before the GPU block is reused. */
    if (kv->nc && kv->b[i].hashed) cpu_put(kv, kv->b[i].hash);
    unhash(kv, i);
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

static void cpu_drop(sim_kv *kv, int32_t i);

uint32_t sim_kv_reset(sim_kv *kv) {
    uint32_t n = 0;
    for (int32_t i = kv->free_head; i >= 0; i = kv->b[i].next) {
        if (kv->b[i].hashed) {
            unhash(kv, i);
            n++;
        }
    }
    /* Pins last only within one admission, so the whole tier goes. */
    while (kv->lru_head >= 0) cpu_drop(kv, kv->lru_head);
    return n;
}

/* ---- the CPU tier ------------------------------------------------------------------------ */

int sim_kv_init_cpu(sim_kv *kv, uint32_t ncpu) {
    if (ncpu == 0) return 0;
    kv->c = calloc(ncpu, sizeof *kv->c);
    if (!kv->c || ir_map_init(&kv->cmap, ncpu, ncpu)) {
        free(kv->c);
        kv->c = NULL;
        return -1;
    }
    kv->nc = ncpu;
    kv->lru_head = kv->lru_tail = -1;
    /* Free slots form a stack through next, slot 0 on top. */
    for (uint32_t i = 0; i < ncpu; i++) kv->c[i].next = i + 1 < ncpu ? (int32_t)i + 1 : -1;
    kv->cfree = 0;
    return 0;
}

static int32_t cpu_slot(const sim_kv *kv, ir_hash128 h) {
    uint64_t i;
    return kv->nc && ir_map_get(&kv->cmap, &h, sizeof h, &i) ? (int32_t)i : -1;
}

bool sim_kv_cpu_has(const sim_kv *kv, ir_hash128 h) {
    return cpu_slot(kv, h) >= 0;
}

static void lru_unlink(sim_kv *kv, int32_t i) {
    sim_cpu_slot *c = &kv->c[i];
    if (c->prev >= 0)
        kv->c[c->prev].next = c->next;
    else
        kv->lru_head = c->next;
    if (c->next >= 0)
        kv->c[c->next].prev = c->prev;
    else
        kv->lru_tail = c->prev;
    c->prev = c->next = -1;
}

static void lru_push_tail(sim_kv *kv, int32_t i) {
    sim_cpu_slot *c = &kv->c[i];
    c->prev = kv->lru_tail;
    c->next = -1;
    if (kv->lru_tail >= 0)
        kv->c[kv->lru_tail].next = i;
    else
        kv->lru_head = i;
    kv->lru_tail = i;
}

/* Slot i leaves the tier: its hash is forgotten and its slot freed. */
static void cpu_drop(sim_kv *kv, int32_t i) {
    sim_cpu_slot *c = &kv->c[i];
    lru_unlink(kv, i);
    ir_map_del(&kv->cmap, &c->hash, sizeof c->hash);
    c->pins = 0;
    c->next = kv->cfree;
    kv->cfree = i;
    kv->ncused--;
    if (kv->on_cpu) kv->on_cpu(kv->cpu_ud, c->hash, false);
}

/* The least recently used unpinned slot, or -1. */
static int32_t cpu_victim(const sim_kv *kv) {
    int32_t i = kv->lru_head;
    while (i >= 0 && kv->c[i].pins) i = kv->c[i].next;
    return i;
}

static void cpu_put(sim_kv *kv, ir_hash128 h) {
    if (cpu_slot(kv, h) >= 0) return; /* already there: stored once, as vLLM's prepare_store */
    if (kv->cfree < 0) {
        int32_t v = cpu_victim(kv);
        if (v < 0) { /* every copy is being loaded: this one is dropped */
            kv->cpu_dropped++;
            return;
        }
        cpu_drop(kv, v);
        kv->cpu_evicted++;
    }
    int32_t i = kv->cfree;
    kv->cfree = kv->c[i].next;
    kv->c[i] = (sim_cpu_slot){h, -1, -1, 0};
    /* Sized for every slot, so it cannot be full. */
    ir_map_put(&kv->cmap, &h, sizeof h, (uint64_t)i);
    lru_push_tail(kv, i);
    kv->ncused++;
    kv->cpu_stored++;
    if (kv->on_cpu) kv->on_cpu(kv->cpu_ud, h, true);
}

uint32_t sim_kv_match_cpu(const sim_kv *kv, const ir_hash128 *hs, uint32_t from, uint32_t n) {
    uint32_t k = from;
    while (k < n && cpu_slot(kv, hs[k]) >= 0) k++;
    return k - from;
}

void sim_kv_cpu_touch(sim_kv *kv, const ir_hash128 *hs, uint32_t n) {
    for (uint32_t k = n; k-- > 0;) {
        int32_t i = cpu_slot(kv, hs[k]);
        if (i < 0) continue;
        lru_unlink(kv, i);
        lru_push_tail(kv, i);
    }
}

void sim_kv_cpu_pin(sim_kv *kv, const ir_hash128 *hs, uint32_t n, bool pin) {
    for (uint32_t k = 0; k < n; k++) {
        int32_t i = cpu_slot(kv, hs[k]);
        if (i < 0) continue;
        if (pin)
            kv->c[i].pins++;
        else if (kv->c[i].pins)
            kv->c[i].pins--;
    }
}
