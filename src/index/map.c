/* map.c: the shared map from block hash to the set of replicas holding it.
 *
 * SHARDS open-addressing tables (linear probing), one per slice of the hash
 * space. A slot is (key, bits[nwords]), the key being the low 64 bits of the
 * block's 128-bit chained hash (docs/internals/index.md: why 64 are enough). Readers take no lock:
 * they load the shard's table pointer and probe it inside an RCU read-side section (liburcu-bp).
 * Writers take the shard's spinlock (one exchange; held for a probe and a store or two, so
 * a waiter spins briefly and yields if the holder was preempted). A key never moves: a block
 * that no replica holds any more keeps its slot with empty bits (a tombstone), revived when
 * the same block comes back, or taken over by a new key that probes past it; a slot never
 * becomes empty again, so no probe run breaks. The table is rebuilt, without tombstones, when
 * slots ever used reach three quarters of the slots. The rebuilt table is published with one
 * atomic store; the old one is freed after a grace period. Every field a reader loads is
 * atomic. A reader checks a slot's key again after loading its bits: a tombstone taken over
 * meanwhile reads as absent, which the block was when it was taken over (ADR 0014). */
#include <sched.h>
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

struct irx_table {
    struct rcu_head rcu;
    size_t size;  /* slots */
    size_t used;  /* slots with a key: live and tombstones (writer only) */
    uint64_t w[]; /* size * (1 + nwords) words */
};

#define LOAD(p)     atomic_load_explicit((_Atomic uint64_t *)(p), memory_order_relaxed)
#define STORE(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_relaxed)
/* Bit words: written with release, read by readers with acquire, so that a reader that
 * loads a word and then the slot's key again sees the key that word was written under
 * (see take_over; both are plain moves on x86). */
#define STORE_BITS(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_release)
#define LOAD_BITS(p)     atomic_load_explicit((_Atomic uint64_t *)(p), memory_order_acquire)

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

/* The hot helpers take the bitset's words as an argument and are always inlined, so
 * that the usual map of one word (64 replicas or fewer) gets code without loops. */
#define HOT static inline __attribute__((always_inline))

/* The slot of key, or NULL. Safe for readers. */
HOT uint64_t *find(irx_table *t, uint64_t key, uint32_t nw) {
    if (!t) return NULL;
    for (size_t j = home(key, t->size);;) {
        uint64_t *s = &t->w[j * (nw + 1)];
        uint64_t k = atomic_load_explicit((_Atomic uint64_t *)s, memory_order_acquire);
        if (k == 0) return NULL;
        if (k == key) return s;
        if (++j == t->size) j = 0;
    }
}

HOT bool is_tombstone(const uint64_t *s, uint32_t nw) {
    uint64_t any = 0;
    for (uint32_t k = 0; k < nw; k++) any |= LOAD(&s[1 + k]);
    return any == 0;
}

/* Writer: the slot of key (*found), or else the first tombstone on its probe run, or
 * else NULL (the run's end: the key would take an empty slot). */
HOT uint64_t *find_or_reuse(irx_table *t, uint64_t key, bool *found, uint32_t nw) {
    uint64_t *reuse = NULL;
    *found = false;
    if (!t) return NULL;
    for (size_t j = home(key, t->size);;) {
        uint64_t *s = &t->w[j * (nw + 1)], k = LOAD(s);
        if (k == 0) return reuse;
        if (k == key) {
            *found = true;
            return s;
        }
        if (!reuse && is_tombstone(s, nw)) reuse = s;
        if (++j == t->size) j = 0;
    }
}

/* Writer: a tombstone becomes key's slot. The key goes first and the bits after it,
 * by a release store, so a reader that loads the new bits (acquire) and then the key
 * again sees the new key (and takes the old one as absent). */
HOT void take_over(uint64_t *s, uint64_t key, uint32_t r) {
    STORE(s, key);
    STORE_BITS(&s[1 + r / 64], 1ull << (r % 64));
}

/* Writer: a tombstone at slot j whose next slot is empty ends its probe run, so no key
 * is found by probing past it: it becomes empty, and so do the tombstones before it.
 * (A reader on its way through reads it empty and stops: its key is absent, and was.) */
HOT void trim_run(irx_table *t, size_t j, uint32_t nw) {
    for (;;) {
        uint64_t *s = &t->w[j * (nw + 1)];
        size_t next = j + 1 == t->size ? 0 : j + 1;
        if (!LOAD(s) || !is_tombstone(s, nw) || LOAD(&t->w[next * (nw + 1)])) return;
        STORE(s, 0);
        t->used--;
        j = j ? j - 1 : t->size - 1;
    }
}

/* Writer only: claims an empty slot for key with bits already set. */
HOT void place(irx_table *t, uint64_t key, const uint64_t *bits, uint32_t nw) {
    size_t j = home(key, t->size);
    while (LOAD(&t->w[j * (nw + 1)])) j = j + 1 == t->size ? 0 : j + 1;
    uint64_t *s = &t->w[j * (nw + 1)];
    for (uint32_t k = 0; k < nw; k++) STORE(&s[1 + k], bits[k]);
    atomic_store_explicit((_Atomic uint64_t *)s, key, memory_order_release); /* publishes */
    t->used++;
}

static size_t live_of(const irx_map_shard *sh) {
    return atomic_load_explicit(&sh->live, memory_order_relaxed);
}
static void shard_lock(irx_map_shard *sh) {
    while (atomic_exchange_explicit(&sh->lock, 1, memory_order_acquire)) {
        /* Spin on a plain load (no bus traffic); a holder preempted on a busy machine
         * gets the core back by a yield. */
        for (unsigned n = 0; atomic_load_explicit(&sh->lock, memory_order_relaxed); n++) {
            if (n < 128)
                __builtin_ia32_pause();
            else
                sched_yield();
        }
    }
}

static void shard_unlock(irx_map_shard *sh) {
    atomic_store_explicit(&sh->lock, 0, memory_order_release);
}

/* Writer (shard locked): live += d. A plain store, not a locked add: only the
 * shard's writer changes it. */
static void live_add(irx_map_shard *sh, long d) {
    atomic_store_explicit(&sh->live, live_of(sh) + (size_t)d, memory_order_relaxed);
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
        uint64_t *s = &old->w[j * m->stride];
        if (LOAD(&s[0]) && !is_tombstone(s, m->nwords)) place(t, LOAD(&s[0]), &s[1], m->nwords);
    }
    atomic_store_explicit(&sh->size, t->size, memory_order_relaxed);
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
    return 0;
}

void irx_map_destroy(irx_map *m) {
    urcu_bp_barrier(); /* every deferred free has run */
    for (uint32_t i = 0; i < IRX_SHARDS; i++) {
        free(atomic_load(&m->shard[i].tab));
    }
}

int irx_map_add(irx_map *m, ir_hash128 h, uint32_t r) {
    bool was;
    return irx_map_add_bit(m, h, r, &was);
}

HOT int add_bit(irx_map *m, ir_hash128 h, uint32_t r, bool *was_set, uint32_t nw) {
    irx_map_shard *sh = &m->shard[shard_of(h)];
    uint64_t key = key_of(h), bit = 1ull << (r % 64);
    int rc = 0;
    *was_set = false;
    shard_lock(sh);
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_relaxed);
    bool found;
    uint64_t *s = find_or_reuse(t, key, &found, nw);
    if (found) {
        /* Only writers, under the lock, change bits: a load and a store, no locked or. */
        bool revived = is_tombstone(s, nw);
        uint64_t old = LOAD(&s[1 + r / 64]);
        if (!(old & bit)) STORE_BITS(&s[1 + r / 64], old | bit);
        *was_set = (old & bit) != 0;
        if (revived) live_add(sh, 1);
    } else if (s) {
        take_over(s, key, r);
        live_add(sh, 1);
    } else if ((!t || t->used + 1 > t->size / 4 * 3) && rebuild(m, sh, live_of(sh) + 1)) {
        rc = -1;
    } else {
        uint64_t bits[IRX_MAX_REPLICAS / 64] = {0};
        bits[r / 64] = bit;
        place(atomic_load_explicit(&sh->tab, memory_order_relaxed), key, bits, nw);
        live_add(sh, 1);
    }
    shard_unlock(sh);
    return rc;
}

int irx_map_add_bit(irx_map *m, ir_hash128 h, uint32_t r, bool *was_set) {
    return m->nwords == 1 ? add_bit(m, h, r, was_set, 1) : add_bit(m, h, r, was_set, m->nwords);
}

HOT void remove_bit(irx_map *m, ir_hash128 h, uint32_t r, uint32_t nw) {
    irx_map_shard *sh = &m->shard[shard_of(h)];
    shard_lock(sh);
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_relaxed);
    uint64_t *s = find(t, key_of(h), nw);
    if (s) {
        uint64_t bit = 1ull << (r % 64), was = LOAD(&s[1 + r / 64]);
        if (was & bit) STORE_BITS(&s[1 + r / 64], was & ~bit);
        if ((was & bit) && is_tombstone(s, nw)) {
            live_add(sh, -1);
            trim_run(t, (size_t)(s - t->w) / (nw + 1), nw);
            /* Mostly tombstones: shrink (a failed allocation just keeps the table). */
            if (t->size > MIN_SLOTS && live_of(sh) * 8 < t->size) rebuild(m, sh, live_of(sh));
        }
    }
    shard_unlock(sh);
}

void irx_map_remove(irx_map *m, ir_hash128 h, uint32_t r) {
    if (m->nwords == 1)
        remove_bit(m, h, r, 1);
    else
        remove_bit(m, h, r, m->nwords);
}

void irx_map_prefetch(const irx_map *m, ir_hash128 h) {
    const irx_map_shard *sh = &m->shard[shard_of(h)];
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_relaxed);
    size_t size = atomic_load_explicit(&sh->size, memory_order_relaxed);
    /* size may be another table's (a rebuild in between): then the address is only
     * wrong, and a prefetch never faults. */
    if (t && size) __builtin_prefetch(&t->w[home(key_of(h), size) * m->stride], 1);
}

uint64_t irx_map_entries(const irx_map *m) {
    uint64_t n = 0;
    for (uint32_t i = 0; i < IRX_SHARDS; i++) n += live_of(&m->shard[i]);
    return n;
}

void irx_map_bits(const irx_map *m, ir_hash128 h, uint64_t *out) {
    const irx_map_shard *sh = &m->shard[shard_of(h)];
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_acquire);
    uint64_t key = key_of(h);
    const uint64_t *s = m->nwords == 1 ? find(t, key, 1) : find(t, key, m->nwords);
    for (uint32_t k = 0; k < m->nwords; k++) out[k] = s ? LOAD_BITS(&s[1 + k]) : 0;
    /* The slot is still key's: bits of a new key that took it over are not key's. */
    if (s && LOAD(s) != key) memset(out, 0, m->nwords * sizeof *out);
}

void irx_map_census(irx_map *m, uint64_t *entries, uint64_t *bits) {
    *entries = *bits = 0;
    for (uint32_t i = 0; i < IRX_SHARDS; i++) {
        irx_map_shard *sh = &m->shard[i];
        shard_lock(sh);
        irx_table *t = atomic_load(&sh->tab);
        for (size_t j = 0; t && j < t->size; j++) {
            uint64_t *s = &t->w[j * m->stride], n = 0;
            for (uint32_t k = 0; k < m->nwords; k++)
                n += (uint64_t)__builtin_popcountll(LOAD(&s[1 + k]));
            *entries += n > 0;
            *bits += n;
        }
        shard_unlock(sh);
    }
}
