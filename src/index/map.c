/* map.c: the shared map from block hash to the set of replicas holding it.
 *
 * SHARDS open-addressing tables (linear probing from the first slot of a key's group
 * of GROUP slots: half a cache line with one bitset word), one per slice of the hash
 * space. A slot is (word, bits[nwords]). The word holds the low 64 bits of the
 * block's 128-bit chained hash (docs/internals/index.md: why 64 are enough), except
 * that its low IRX_SHARD_BITS, which pick the shard and so are the same for every key
 * of a shard, hold the slot's generation instead: it steps on each time the slot
 * changes hands. Readers take no lock: they load the shard's table pointer and probe
 * it inside an RCU read-side section (liburcu-bp). Writers take the shard's spinlock
 * (one exchange; held for a probe and a store or two, so a waiter spins briefly and
 * yields if the holder was preempted). A key never moves: a block that no replica
 * holds any more keeps its slot with empty bits (a tombstone), revived when the same
 * block comes back, or taken over by a new key that probes past it; a tombstone whose
 * next slot is empty becomes empty (keeping its generation). The table is rebuilt,
 * without tombstones, when slots ever used reach three quarters of the slots. The
 * rebuilt table is published with one atomic store; the old one is freed after a
 * grace period. Every field a reader loads is atomic.
 *
 * A reader validates like a seqlock reader, without waiting: it loads the slot's word,
 * the bits, and the word again, and takes the bits only when both words are equal
 * (same key, same generation) and the shard's lap count, loaded before and after, is
 * the same and even. A writer that steps a generation round to 0 (once every
 * IRX_SHARDS changes of hands of one slot) makes the lap count odd around that change,
 * so a slot that went a whole lap of generations and came back to the same key under a
 * stalled reader is caught too (ADR 0016). */
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
    size_t size;               /* slots, a multiple of GROUP */
    size_t used;               /* slots with a key: live and tombstones (writer only) */
    _Alignas(64) uint64_t w[]; /* size * (1 + nwords) words, from a cache line's start */
};

#define LOAD(p) atomic_load_explicit((_Atomic uint64_t *)(p), memory_order_relaxed)
/* Every store a reader may see is a release and every load of a reader an acquire (all
 * plain moves on x86), so that a reader that loads a value stored after a change of
 * hands, or inside a lap (claim), then loads the word or lap count that change stored
 * or a later one. */
#define STORE_REL(p, v) atomic_store_explicit((_Atomic uint64_t *)(p), (v), memory_order_release)
#define LOAD_ACQ(p)     atomic_load_explicit((_Atomic uint64_t *)(p), memory_order_acquire)

/* A slot's word: the key's bits above the shard bits, and the generation in them. */
#define GEN_MASK ((uint64_t)IRX_SHARDS - 1)
#define KEY_MASK (~GEN_MASK)

void irx_read_lock(void) {
    urcu_bp_read_lock();
}
void irx_read_unlock(void) {
    GRACE_RELEASE(); /* before the unlock: the grace period may end right after it */
    urcu_bp_read_unlock();
}

/* The key as a slot's word holds it, generation 0. Its shard bits are dropped: the
 * shard has them. A key part of 0 marks an empty slot, so a block whose bits above the
 * shard bits are all 0 is stored as if the lowest of them were 1 (a 2^-58 chance that
 * merges two blocks at worst). */
static uint64_t key_of(ir_hash128 h) {
    uint64_t k = h.lo & KEY_MASK;
    return k ? k : GEN_MASK + 1;
}

/* The key's low bits: home() takes its high ones, so a shard's keys still spread
 * over its whole table. */
static uint32_t shard_of(ir_hash128 h) {
    return (uint32_t)(h.lo & (IRX_SHARDS - 1));
}

/* A key's probe starts at the first slot of a group of GROUP slots: with one bitset word
 * (16-byte slots, a table starting on a cache line), at the start or the middle of a
 * line, so that the line the apply's lookahead prefetches holds most probes whole (from
 * any slot of a line, a probe ran into the next line, not prefetched, about half the
 * time). Groups of four (a probe from a line's start) kept more probes in one line
 * still, but clustered a line's keys at one start: the approximate index's lookups
 * that probe many present keys took 20-30% longer (bench/results/events/README.md). */
#define GROUP 2u
static size_t home(uint64_t lo, size_t size) {
    /* uniform lo: no modulo */
    return (size_t)(((unsigned __int128)lo * (size / GROUP)) >> 64) * GROUP;
}

static irx_table *table_new(const irx_map *m, size_t size) {
    size_t bytes = sizeof(irx_table) + size * m->stride * sizeof(uint64_t);
    irx_table *t = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (t) {
        memset(t, 0, bytes);
        t->size = size;
    }
    return t;
}

static size_t table_bytes(const irx_map *m, const irx_table *t) {
    return t ? sizeof *t + t->size * m->stride * sizeof(uint64_t) : 0;
}

/* The hot helpers take the bitset's words as an argument and are always inlined, so
 * that the usual map of one word (64 replicas or fewer) gets code without loops. */

/* The slot of key, or NULL; *word is the slot's word as loaded. Safe for readers. */
IR_INLINE uint64_t *find(irx_table *t, uint64_t key, uint32_t nw, uint64_t *word) {
    if (!t) return NULL;
    for (size_t j = home(key, t->size);;) {
        uint64_t *s = &t->w[j * (nw + 1)], w = LOAD_ACQ(s);
        if ((w & KEY_MASK) == 0) return NULL;
        if ((w & KEY_MASK) == key) {
            *word = w;
            return s;
        }
        if (++j == t->size) j = 0;
    }
}

IR_INLINE bool is_empty(const uint64_t *s) {
    return (LOAD(s) & KEY_MASK) == 0;
}

IR_INLINE bool is_tombstone(const uint64_t *s, uint32_t nw) {
    uint64_t any = 0;
    for (uint32_t k = 0; k < nw; k++) any |= LOAD(&s[1 + k]);
    return any == 0;
}

/* Writer: the slot of key (*found), or else the first tombstone on its probe run, or
 * else the empty slot that ends the run; NULL without a table. */
IR_INLINE uint64_t *find_or_reuse(irx_table *t, uint64_t key, bool *found, uint32_t nw) {
    uint64_t *reuse = NULL;
    *found = false;
    if (!t) return NULL;
    for (size_t j = home(key, t->size);;) {
        uint64_t *s = &t->w[j * (nw + 1)], k = LOAD(s) & KEY_MASK;
        if (k == 0) return reuse ? reuse : s;
        if (k == key) {
            *found = true;
            return s;
        }
        if (!reuse && is_tombstone(s, nw)) reuse = s;
        if (++j == t->size) j = 0;
    }
}

/* Writer: the empty slot that ends key's probe run (key is not in t). */
IR_INLINE uint64_t *run_end(irx_table *t, uint64_t key, uint32_t nw) {
    size_t j = home(key, t->size);
    while (!is_empty(&t->w[j * (nw + 1)])) j = j + 1 == t->size ? 0 : j + 1;
    return &t->w[j * (nw + 1)];
}

/* Writer: slot s (a tombstone or an empty slot: its bits are 0) becomes key's, with bit
 * r, and its generation steps on. The word goes first and the bits after it, so a reader
 * that loads the new bits then loads the new word (and takes the old key as absent).
 * The step round to generation 0 is made inside an odd lap count: a reader whose two
 * loads of the word span a whole lap of generations spans that step, and then sees the
 * count change (or odd). */
IR_INLINE void claim(irx_map_shard *sh, uint64_t *s, uint64_t key, uint32_t r) {
    uint64_t gen = (LOAD(s) + 1) & GEN_MASK, laps = 0;
    if (gen == 0) {
        laps = atomic_load_explicit(&sh->laps, memory_order_relaxed) + 1;
        atomic_store_explicit(&sh->laps, laps, memory_order_relaxed); /* odd */
    }
    STORE_REL(s, key | gen);
    STORE_REL(&s[1 + r / 64], 1ull << (r % 64));
    if (gen == 0) atomic_store_explicit(&sh->laps, laps + 1, memory_order_release); /* even */
}

/* Writer: a tombstone at slot j whose next slot is empty ends its probe run, so no key
 * is found by probing past it: it becomes empty (keeping its generation), and so do the
 * tombstones before it. (A reader on its way through reads it empty and stops: its key
 * is absent, and was.) */
IR_INLINE void trim_run(irx_table *t, size_t j, uint32_t nw) {
    for (;;) {
        uint64_t *s = &t->w[j * (nw + 1)];
        size_t next = j + 1 == t->size ? 0 : j + 1;
        if (is_empty(s) || !is_tombstone(s, nw) || !is_empty(&t->w[next * (nw + 1)])) return;
        STORE_REL(s, LOAD(s) & GEN_MASK);
        t->used--;
        j = j ? j - 1 : t->size - 1;
    }
}

/* Rebuild only: key with its bits into a table no reader has seen yet. */
IR_INLINE void place(irx_table *t, uint64_t key, const uint64_t *bits, uint32_t nw) {
    uint64_t *s = run_end(t, key, nw);
    for (uint32_t k = 0; k < nw; k++) STORE_REL(&s[1 + k], bits[k]);
    STORE_REL(s, key);
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
    size_t size = live * 2 < MIN_SLOTS ? MIN_SLOTS : live * 2 / GROUP * GROUP;
    irx_table *t = table_new(m, size);
    if (!t) return -1;
    for (size_t j = 0; old && j < old->size; j++) {
        uint64_t *s = &old->w[j * m->stride];
        if (!is_empty(s) && !is_tombstone(s, m->nwords))
            place(t, LOAD(s) & KEY_MASK, &s[1], m->nwords);
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

IR_INLINE int add_bit(irx_map *m, ir_hash128 h, uint32_t r, bool *was_set, uint32_t nw) {
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
        if (!(old & bit)) STORE_REL(&s[1 + r / 64], old | bit);
        *was_set = (old & bit) != 0;
        if (revived) live_add(sh, 1);
    } else if (s && !is_empty(s)) { /* a tombstone */
        claim(sh, s, key, r);
        live_add(sh, 1);
    } else if ((!t || t->used + 1 > t->size / 4 * 3) && rebuild(m, sh, live_of(sh) + 1)) {
        rc = -1;
    } else {
        if (!s || t != atomic_load_explicit(&sh->tab, memory_order_relaxed)) { /* rebuilt */
            t = atomic_load_explicit(&sh->tab, memory_order_relaxed);
            s = run_end(t, key, nw);
        }
        claim(sh, s, key, r);
        t->used++;
        live_add(sh, 1);
    }
    shard_unlock(sh);
    return rc;
}

int irx_map_add_bit(irx_map *m, ir_hash128 h, uint32_t r, bool *was_set) {
    return m->nwords == 1 ? add_bit(m, h, r, was_set, 1) : add_bit(m, h, r, was_set, m->nwords);
}

IR_INLINE void remove_bit(irx_map *m, ir_hash128 h, uint32_t r, uint32_t nw) {
    irx_map_shard *sh = &m->shard[shard_of(h)];
    shard_lock(sh);
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_relaxed);
    uint64_t word, *s = find(t, key_of(h), nw, &word);
    if (s) {
        uint64_t bit = 1ull << (r % 64), was = LOAD(&s[1 + r / 64]);
        if (was & bit) STORE_REL(&s[1 + r / 64], was & ~bit);
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

/* A reader's steps (irx_map_bits): begin finds h's slot and notes its word and the
 * shard's lap count; bits loads the slot's bits; end says whether the word and the lap
 * count are still the ones begin noted (and the count even): then the bits loaded in
 * between were h's at some moment, and no writer was waited for. */
IR_INLINE bool read_begin(const irx_map *m, ir_hash128 h, irx_map_read *rd, uint32_t nw) {
    const irx_map_shard *sh = &m->shard[shard_of(h)];
    rd->laps = atomic_load_explicit(&sh->laps, memory_order_acquire);
    irx_table *t = atomic_load_explicit(&sh->tab, memory_order_acquire);
    rd->slot = find(t, key_of(h), nw, &rd->word);
    return rd->slot != NULL;
}

IR_INLINE void read_bits(const irx_map_read *rd, uint64_t *out, uint32_t nw) {
    for (uint32_t k = 0; k < nw; k++) out[k] = LOAD_ACQ(&rd->slot[1 + k]);
}

IR_INLINE bool read_end(const irx_map *m, ir_hash128 h, const irx_map_read *rd) {
    uint64_t word = LOAD_ACQ(rd->slot); /* acquire: the lap count below is as new */
    uint64_t laps = atomic_load_explicit(&m->shard[shard_of(h)].laps, memory_order_relaxed);
    return ((word ^ rd->word) | (laps ^ rd->laps) | (laps & 1)) == 0;
}

/* A read that failed its check is tried once more, then answered absent: h's slot
 * changed hands while it was read, so h was absent at some moment of the read, or a
 * lap of some slot of h's shard was under way (rare: one change of hands in IRX_SHARDS
 * of a slot). Out of line: the lookup's path stays short. */
static __attribute__((noinline, cold)) void bits_again(const irx_map *m, ir_hash128 h,
                                                       uint64_t *out) {
    irx_map_read rd;
    if (read_begin(m, h, &rd, m->nwords)) {
        read_bits(&rd, out, m->nwords);
        if (read_end(m, h, &rd)) return;
    }
    memset(out, 0, m->nwords * sizeof *out);
}

IR_INLINE void bits_of(const irx_map *m, ir_hash128 h, uint64_t *out, uint32_t nw) {
    irx_map_read rd;
    if (!read_begin(m, h, &rd, nw)) {
        memset(out, 0, nw * sizeof *out);
        return;
    }
    read_bits(&rd, out, nw);
    if (__builtin_expect(!read_end(m, h, &rd), 0)) bits_again(m, h, out);
}

void irx_map_bits(const irx_map *m, ir_hash128 h, uint64_t *out) {
    if (m->nwords == 1)
        bits_of(m, h, out, 1);
    else
        bits_of(m, h, out, m->nwords);
}

bool irx_map_read_begin(const irx_map *m, ir_hash128 h, irx_map_read *rd) {
    return read_begin(m, h, rd, m->nwords);
}
void irx_map_read_bits(const irx_map *m, const irx_map_read *rd, uint64_t *out) {
    read_bits(rd, out, m->nwords);
}
bool irx_map_read_end(const irx_map *m, ir_hash128 h, const irx_map_read *rd) {
    return read_end(m, h, rd);
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
