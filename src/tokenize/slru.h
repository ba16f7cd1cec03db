/* slru.h: the sharded LRU table under the tokenization cache (cache.c) and the
 * chat parse cache (parse_cache.c), internal to the tokenize module.
 *
 * Sixteen shards, each a mutex, a chained hash table and an LRU list, under one
 * budget in bytes and in units (the tokenization cache's token ids; SIZE_MAX
 * where there is no such budget), counted with atomics for the whole table. An
 * insert that goes over it evicts the least recently used entries of the whole
 * table (each use takes a tick of one clock), one shard lock at a time.
 *
 * The table is intrusive: an owner's entry starts with an irt_slru_node. The
 * owner locks the shard, walks its chain with its own key compare, and calls
 * irt_slru_touch / irt_slru_add under that lock; the table never frees an entry
 * itself but hands its own reference to the owner's release (under the shard's
 * lock), so an entry can outlive its eviction in the hands of its users. */
#ifndef IR_SLRU_H
#define IR_SLRU_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define IRT_SLRU_SHARDS 16

typedef struct irt_slru_node {
    struct irt_slru_node *hnext;       /* the bucket's chain */
    struct irt_slru_node *prev, *next; /* the shard's LRU list, most recent first */
    uint64_t h;                        /* the key's hash: picks the shard and the bucket */
    uint64_t stamp;                    /* the table's clock at its last use, under the lock */
    size_t bytes;                      /* what it counts against max_bytes */
    uint32_t units;                    /* and against max_units */
    atomic_uint refs;                  /* the owner's count: 1 while in the table, +1 per user; the
                                        * table only drops its own, through release */
} irt_slru_node;

typedef struct irt_slru_shard {
    pthread_mutex_t mu;
    irt_slru_node **buckets;
    size_t nbuckets, nentries;
    irt_slru_node *head, *tail;
} irt_slru_shard;

typedef struct irt_slru {
    size_t max_units, max_bytes;
    atomic_size_t units, entries, bytes;
    atomic_uint_fast64_t evictions;
    atomic_uint_fast64_t clock;        /* ticks at every use: the LRU order across shards */
    void (*release)(irt_slru_node *n); /* drops the table's reference to n */
    irt_slru_shard sh[IRT_SLRU_SHARDS];
} irt_slru;

/* Sets up l (zeroed by the caller) for these budgets; -1 when out of memory
 * (nothing is then held). */
int irt_slru_init(irt_slru *l, size_t max_units, size_t max_bytes,
                  void (*release)(irt_slru_node *n));
/* Releases every entry still in l and frees its shards; no thread may use l. */
void irt_slru_destroy(irt_slru *l);

static inline irt_slru_shard *irt_slru_shard_of(irt_slru *l, uint64_t h) {
    return &l->sh[h & (IRT_SLRU_SHARDS - 1)];
}

/* The first entry of h's chain in s, whose lock is held. */
static inline irt_slru_node *irt_slru_chain(irt_slru_shard *s, uint64_t h) {
    return s->buckets[(h >> 4) & (s->nbuckets - 1)];
}

/* n, found in s (whose lock is held), was used now: it becomes the most recent. */
void irt_slru_touch(irt_slru *l, irt_slru_shard *s, irt_slru_node *n);

/* Puts n (h, bytes, units and refs set; its key not in s) into s, whose lock is
 * held, as the most recent entry. Call irt_slru_shrink after unlocking. */
void irt_slru_add(irt_slru *l, irt_slru_shard *s, irt_slru_node *n);

/* Evicts the least recently used entries until l is within its budgets; no
 * shard lock held. The oldest tail found may be used again before its shard is
 * locked again; then a slightly younger entry goes: the order is LRU up to
 * such races. */
void irt_slru_shrink(irt_slru *l);

#endif
