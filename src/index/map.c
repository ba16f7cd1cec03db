/* map.c: the shared map from block hash to the set of replicas holding it.
 *
 * SHARDS open-addressing tables (linear probing), one per slice of the hash
 * space. A slot is (key, bits[nwords]), the key being the low 64 bits of the
 * block's 128-bit chained hash (docs/internals/index.md: why 64 are enough). Readers take no lock:
 * they load the shard's table pointer and probe it inside an RCU read-side section (liburcu-bp).
 * Writers lock the shard. A slot's key, once written, never changes and never moves: a block that
 * no replica holds any more keeps its slot with empty bits (a tombstone, reused when the same block
 * comes back), and the table is rebuilt, without tombstones, when live and dead slots reach
 * MAX_LOAD. The rebuilt table is published with one atomic store; the old one
 * is freed after a grace period. Every field a reader loads is atomic. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <urcu-bp.h>

#include "index/index_internal.h"
#include "index/ir_index.h"

/* ThreadSanitizer cannot see liburcu's grace periods (the library is not
 * instrumented): the read side releases, the deferred free acquires. */
#if defined(__SANITIZE_THREAD__)
#define IRX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IRX_TSAN 1
#endif
#endif
#ifdef IRX_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static int tsan_grace;
#define GRACE_RELEASE() __tsan_release(&tsan_grace)
#define GRACE_ACQUIRE() __tsan_acquire(&tsan_grace)
#else
#define GRACE_RELEASE() ((void)0)
#define GRACE_ACQUIRE() ((void)0)
#endif

#define MIN_SLOTS 64u
#define MAX_LOAD  0.75 /* live + tombstones, of all slots, before a rebuild */

struct irx_table {
    struct rcu_head rcu;
    size_t size;  /* slots */
    size_t used;  /* slots with a key: live and tombstones (writer only) */
    uint64_t w[]; /* size * (1 + nwords) words */
};

#define LOAD(p)     atomic_load_explicit((_Atomic uint64_t *)(p), memory_order_relaxed)
#define STORE(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_relaxed)

void irx_read_lock(void) {
    urcu_bp_read_lock();
}
void irx_read_unlock(void) {
    GRACE_RELEASE(); /* before the unlock: the grace period may end right after it */
    urcu_bp_read_unlock();
}

static uint64_t key_of(ir_hash128 h) {
    return h.lo ? h.lo : 1;
} /* 0 marks an empty slot */

/* The key's low bits: home() takes its high ones, so a shard's keys still spread
 * over its whole table. */
static uint32_t shard_of(ir_hash128 h) {
    return (uint32_t)(h.lo & (IRX_SHARDS - 1));
}

static size_t home(uint64_t lo, size_t size) {
    return (size_t)(((unsigned __int128)lo * size) >> 64); /* uniform lo: no modulo */
}

static irx_table *table_new(const irx_map *m, size_t size) {
    irx_table *t = calloc(1, sizeof *t + size * m->stride * sizeof(uint64_t));
    if (t) t->size = size;
    return t;
}

static size_t table_bytes(const irx_map *m, const irx_table *t) {
    return t ? sizeof *t + t->size * m->stride * sizeof(uint64_t) : 0;
}

/* The slot of key, or NULL. Safe for readers. */
static uint64_t *find(const irx_map *m, irx_table *t, uint64_t key) {
    if (!t) return NULL;
    for (size_t j = home(key, t->size);;) {
        uint64_t *s = &t->w[j * m->stride];
        uint64_t k = atomic_load_explicit((_Atomic uint64_t *)s, memory_order_acquire);
        if (k == 0) return NULL;
        if (k == key) return s;
        if (++j == t->size) j = 0;
    }
}

/* Writer only: claims an empty slot for key with bits already set. */
static void place(const irx_map *m, irx_table *t, uint64_t key, const uint64_t *bits) {
    size_t j = home(key, t->size);
    while (LOAD(&t->w[j * m->stride])) j = j + 1 == t->size ? 0 : j + 1;
    uint64_t *s = &t->w[j * m->stride];
    for (uint32_t k = 0; k < m->nwords; k++) STORE(&s[1 + k], bits[k]);
    atomic_store_explicit((_Atomic uint64_t *)s, key, memory_order_release); /* publishes */
    t->used++;
}

static void free_table(struct rcu_head *head) {
    GRACE_ACQUIRE();
    free(caa_container_of(head, irx_table, rcu));
}

/* Writer (shard locked): a new table for `live` entries at half load, holding
 * every live entry of the old one; the old one is freed after a grace period. */
static int rebuild(irx_map *m, irx_map_shard *sh, size_t live) {
    irx_table *old = atomic_load_explicit(&sh->tab, memory_order_relaxed);
    size_t size = live * 2 < MIN_SLOTS ? MIN_SLOTS : live * 2;
    irx_table *t = table_new(m, size);
    if (!t) return -1;
    for (size_t j = 0; old && j < old->size; j++) {
        uint64_t *s = &old->w[j * m->stride], any = 0;
        for (uint32_t k = 0; k < m->nwords; k++) any |= LOAD(&s[1 + k]);
        if (any) place(m, t, LOAD(&s[0]), &s[1]);
    }
    atomic_store_explicit(&sh->tab, t, memory_order_release);
    atomic_fetch_add(&m->bytes, table_bytes(m, t));
    if (old) {
        atomic_fetch_sub(&m->bytes, table_bytes(m, old));
        GRACE_RELEASE(); /* the writer's own reads of old come before its free, too */
        urcu_bp_call_rcu(&old->rcu, free_table);
    }
    return 0;
}

int irx_map_init(irx_map *m, uint32_t nwords) {
    memset(m, 0, sizeof *m);
    m->nwords = nwords;
    m->stride = 1 + nwords;
    for (uint32_t i = 0; i < IRX_SHARDS; i++) pthread_mutex_init(&m->shard[i].mu, NULL);
    return 0;
}

void irx_map_destroy(irx_map *m) {
    urcu_bp_barrier(); /* every deferred free has run */
    for (uint32_t i = 0; i < IRX_SHARDS; i++) {
        free(atomic_load(&m->shard[i].tab));
        pthread_mutex_destroy(&m->shard[i].mu);
    }
}

int irx_map_add(irx_map *m, ir_hash128 h, uint32_t r) {
    bool was;
    return irx_map_add_bit(m, h, r, &was);
}

int irx_map_add_bit(irx_map *m, ir_hash128 h, uint32_t r, bool *was_set) {
    irx_map_shard *sh = &m->shard[shard_of(h)];
    uint64_t key = key_of(h), bit = 1ull << (r % 64);
    int rc = 0;
    *was_set = false;
    pthread_mutex_lock(&sh->mu);
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_relaxed);
    uint64_t *s = find(m, t, key);
    if (s) {
        uint64_t any = 0;
        for (uint32_t k = 0; k < m->nwords; k++) any |= LOAD(&s[1 + k]);
        uint64_t old =
            atomic_fetch_or_explicit((_Atomic uint64_t *)&s[1 + r / 64], bit, memory_order_relaxed);
        *was_set = (old & bit) != 0;
        if (!any) sh->live++, atomic_fetch_add(&m->entries, 1); /* a tombstone revived */
    } else if ((!t || (double)(t->used + 1) > MAX_LOAD * (double)t->size) &&
               rebuild(m, sh, sh->live + 1)) {
        rc = -1;
    } else {
        uint64_t bits[IRX_MAX_REPLICAS / 64] = {0};
        bits[r / 64] = bit;
        place(m, atomic_load_explicit(&sh->tab, memory_order_relaxed), key, bits);
        sh->live++;
        atomic_fetch_add(&m->entries, 1);
    }
    pthread_mutex_unlock(&sh->mu);
    return rc;
}

void irx_map_remove(irx_map *m, ir_hash128 h, uint32_t r) {
    irx_map_shard *sh = &m->shard[shard_of(h)];
    pthread_mutex_lock(&sh->mu);
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_relaxed);
    uint64_t *s = find(m, t, key_of(h));
    if (s) {
        uint64_t bit = 1ull << (r % 64), any = 0;
        uint64_t was = atomic_fetch_and_explicit((_Atomic uint64_t *)&s[1 + r / 64], ~bit,
                                                 memory_order_relaxed);
        for (uint32_t k = 0; k < m->nwords; k++) any |= LOAD(&s[1 + k]);
        if ((was & bit) && !any) {
            sh->live--;
            atomic_fetch_sub(&m->entries, 1);
            /* Mostly tombstones: shrink (a failed allocation just keeps the table). */
            if (t->size > MIN_SLOTS && sh->live * 8 < t->size) rebuild(m, sh, sh->live);
        }
    }
    pthread_mutex_unlock(&sh->mu);
}

void irx_map_bits(const irx_map *m, ir_hash128 h, uint64_t *out) {
    const irx_map_shard *sh = &m->shard[shard_of(h)];
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_acquire);
    const uint64_t *s = find(m, t, key_of(h));
    for (uint32_t k = 0; k < m->nwords; k++) out[k] = s ? LOAD(&s[1 + k]) : 0;
}

void irx_map_census(irx_map *m, uint64_t *entries, uint64_t *bits) {
    *entries = *bits = 0;
    for (uint32_t i = 0; i < IRX_SHARDS; i++) {
        irx_map_shard *sh = &m->shard[i];
        pthread_mutex_lock(&sh->mu);
        irx_table *t = atomic_load(&sh->tab);
        for (size_t j = 0; t && j < t->size; j++) {
            uint64_t *s = &t->w[j * m->stride], n = 0;
            for (uint32_t k = 0; k < m->nwords; k++)
                n += (uint64_t)__builtin_popcountll(LOAD(&s[1 + k]));
            *entries += n > 0;
            *bits += n;
        }
        pthread_mutex_unlock(&sh->mu);
    }
}
