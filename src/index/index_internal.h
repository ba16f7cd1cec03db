/* index_internal.h: the pieces of the index, shared by its files only. */
#ifndef IR_INDEX_INTERNAL_H
#define IR_INDEX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"
#include "index/ir_index.h"

#define IRX_NIL   UINT32_MAX
#define IRX_FRESH 0x80000000u /* stamp bit: the block was added by that stamp's record */

#define IRX_PINNED     (UINT32_MAX - 1) /* prev of a pinned node (node numbers are < 2^30) */
#define IRX_ANON_STAMP UINT32_MAX       /* stamp of an anonymous node; records never use it */

/* One block in a replica's shadow: its key (the low 64 bits of its chained
 * hash, as in the map; docs/internals/index.md says why 64 bits are enough),
 * its LRU links (node numbers) and the stamp of the last record that touched it. A pinned block
 * (requests in flight use it) is in the table but not in the LRU list, so it cannot be evicted: its
 * prev is IRX_PINNED and its next counts the pins. An anonymous block (stamp IRX_ANON_STAMP) stands
 * for a block an engine spent on a request beyond its prompt's full blocks (the trailing partial
 * block, decode blocks): it is in the list, takes capacity, and is in neither the table nor the
 * map. */
typedef struct __attribute__((packed, aligned(4))) irx_node {
    uint64_t key;
    uint32_t prev, next; /* prev is towards the most recent end */
    uint32_t stamp;
} irx_node; /* 20 bytes */

static inline uint32_t irx_node_pins(const irx_node *n) {
    return n->prev == IRX_PINNED ? n->next : 0;
}
static inline bool irx_node_anon(const irx_node *n) {
    return n->stamp == IRX_ANON_STAMP;
}

/* A replica's shadow LRU: a fixed pool of cap nodes, an open-addressing table
 * of node numbers (linear probing, backward-shift deletion), and the LRU list
 * from head (most recent) to tail (oldest). Owned by its replica; guarded by
 * the replica's lock. */
typedef struct irx_shadow {
    irx_node *nodes;
    uint32_t *slots;
    uint32_t nslots;     /* about 1.5 * cap */
    uint32_t cap, count; /* count: nodes in use, = nlisted + npinned */
    uint32_t nlisted;    /* nodes in the LRU list (unpinned hashed ones and anonymous ones) */
    uint32_t npinned;    /* hashed nodes with pins > 0 */
    uint32_t nanon;      /* anonymous nodes (all listed) */
    uint32_t
        nreserved; /* blocks reserved by records in flight (no node): count + nreserved <= cap */
    uint32_t head, tail, free;
    uint32_t fresh; /* nodes[fresh..cap) were never used: taken in order, so untouched
                     * pages of a large cache cost no memory until blocks arrive */
} irx_shadow;

/* The slot table stores a node number plus one, so that an empty slot is 0 and a
 * new table is calloc's untouched zero pages: a cache of 300,000 blocks a replica
 * costs nothing until it fills. These read and write it (IRX_NIL for empty). */
static inline uint32_t irx_slot(const irx_shadow *s, uint32_t j) {
    return s->slots[j] - 1u; /* 0 - 1 == IRX_NIL */
}
static inline void irx_slot_set(irx_shadow *s, uint32_t j, uint32_t i) {
    s->slots[j] = i + 1u; /* IRX_NIL + 1 == 0 */
}

int irx_shadow_init(irx_shadow *s, uint32_t cap);
void irx_shadow_free(irx_shadow *s);
size_t irx_shadow_bytes(const irx_shadow *s);
/* Node number holding h (its key, h.lo), or IRX_NIL. */
uint32_t irx_shadow_find(const irx_shadow *s, ir_hash128 h);
/* Makes node i the most recent. */
void irx_shadow_touch(irx_shadow *s, uint32_t i);
/* Adds h as the most recent block; the shadow must have room (count < cap). */
uint32_t irx_shadow_add(irx_shadow *s, ir_hash128 h, uint32_t stamp);
/* Adds an anonymous block as the most recent; the shadow must have room. */
uint32_t irx_shadow_add_anon(irx_shadow *s);
/* Pins hashed node i (the first pin takes it out of the list). */
void irx_shadow_pin(irx_shadow *s, uint32_t i);
/* Unpins hashed node i (the last unpin makes it the most recent). */
void irx_shadow_unpin(irx_shadow *s, uint32_t i);
/* Removes node i, pinned, listed or anonymous. */
void irx_shadow_remove(irx_shadow *s, uint32_t i);
/* 0 when the table and the list agree; -1 otherwise. */
int irx_shadow_check(const irx_shadow *s);

/* ---- the shared map (map.c) ---------------------------------------------------- */
#include <pthread.h>
#include <stdatomic.h>

/* The map's shards, by a key's low bits; in a slot's word those bits hold the slot's
 * generation instead (map.c, ADR 0016). */
#define IRX_SHARD_BITS 6
#define IRX_SHARDS     (1u << IRX_SHARD_BITS)

typedef struct irx_table irx_table;
/* What readers load (tab) and what every write changes (lock, live) are on separate
 * cache lines, so that lookups do not take the line from the writer at each block. */
typedef struct irx_map_shard {
    _Alignas(64) _Atomic(irx_table *) tab; /* published by writers, read lock-free */
    _Atomic size_t size;                   /* tab's slots, for prefetches without reading tab */
    _Atomic uint64_t laps;              /* odd while a slot's generation steps round to 0 (map.c) */
    _Alignas(64) _Atomic uint32_t lock; /* writers' spinlock (map.c) */
    _Atomic size_t live;                /* keys with a bit set (written under lock) */
} irx_map_shard;

typedef struct irx_map {
    uint32_t nwords, stride; /* bitset words; words per slot */
    _Atomic uint64_t bytes;
    irx_map_shard shard[IRX_SHARDS];
} irx_map;

int irx_map_init(irx_map *m, uint32_t nwords);
/* No reader or writer may run, or start. */
void irx_map_destroy(irx_map *m);
/* Sets bit r of block h, creating its entry. -1 on OOM (nothing changed). */
int irx_map_add(irx_map *m, ir_hash128 h, uint32_t r);
/* irx_map_add that says whether the bit was set already. */
int irx_map_add_bit(irx_map *m, ir_hash128 h, uint32_t r, bool *was_set);
/* Brings the slot where h would be into the cache, to be written soon: no lock, no
 * read of the table (a table freed meanwhile costs only a wasted prefetch). */
void irx_map_prefetch(const irx_map *m, ir_hash128 h);
/* Clears bit r of block h. */
void irx_map_remove(irx_map *m, ir_hash128 h, uint32_t r);
/* Reader: h's bitset (zeros when absent) into out[nwords]. Call inside
 * irx_read_lock/irx_read_unlock. */
void irx_map_bits(const irx_map *m, ir_hash128 h, uint64_t *out);
void irx_read_lock(void);
void irx_read_unlock(void);
/* irx_map_bits in its steps, so that tests can run writers between them: begin finds
 * h's slot (false: absent), bits loads its bitset into out[nwords], end says whether
 * those bits were h's (false: the slot changed hands, or a shard's lap was under way,
 * in between). Inside irx_read_lock/irx_read_unlock. */
typedef struct irx_map_read {
    const uint64_t *slot;
    uint64_t word, laps; /* the slot's word and the shard's lap count, as begin loaded them */
} irx_map_read;
bool irx_map_read_begin(const irx_map *m, ir_hash128 h, irx_map_read *rd);
void irx_map_read_bits(const irx_map *m, const irx_map_read *rd, uint64_t *out);
bool irx_map_read_end(const irx_map *m, ir_hash128 h, const irx_map_read *rd);
/* Keys with a bit set, summed over the shards (a moment's sum while writers run). */
uint64_t irx_map_entries(const irx_map *m);
/* Counts live entries and set bits, shard by shard (for irx_check). */
void irx_map_census(irx_map *m, uint64_t *entries, uint64_t *bits);

/* ---- the index itself (index.c), shared with ev_index.c ---------------------------- */
#define IRX_WORDS (IRX_MAX_REPLICAS / 64u)

typedef struct irx_evrep irx_evrep; /* a replica tracked from its events (ev_index.c) */

/* ---- eviction lookahead (doom.c), for event-fed replicas ---------------------------
 * An engine publishes an eviction at the end of the step that made it, so for about
 * one step the events still show a block that is gone. With the lookahead on, an
 * event-fed replica's shadow mirrors the engine's free queue (records and releases
 * as for an approximate replica, none of its blocks in the map, and every eviction
 * the events report drops the mirror's blocks up to it, as the engine's queue would
 * have); the hashed blocks a record evicts from the mirror are *doomed* until the
 * events confirm them or a few publication intervals pass, and irx_lookup stops a
 * replica's prefix before its doomed blocks. A doom table is made once per replica
 * slot and freed with the index (readers never wait, so it is never freed under
 * them). Writers hold the replica's lock; irx_doom_has and irx_doom_live take none. */
typedef struct irx_doom irx_doom;
irx_doom *irx_doom_new(void);
void irx_doom_free(irx_doom *d);
size_t irx_doom_bytes(void);
/* Dooms key until `until` (ns) for the record `ticket` (its stamp); a full probe run
 * loses its soonest to expire. */
void irx_doom_add(irx_doom *d, uint64_t key, uint64_t now, uint64_t until, uint32_t ticket);
void irx_doom_clear(irx_doom *d, uint64_t key);
/* The record `ticket` ended: the engine admitted it long since, and what it evicted
 * for it has been reported, so its dooms still standing were wrong. */
void irx_doom_forget_ticket(irx_doom *d, uint32_t ticket, uint64_t now);
void irx_doom_reset(irx_doom *d);
/* Whether any entry may still be live at now: lookups skip the table otherwise. */
bool irx_doom_live(const irx_doom *d, uint64_t now);
bool irx_doom_has(const irx_doom *d, uint64_t key, uint64_t now);

typedef struct irx_replica {
    pthread_mutex_t mu;
    irx_shadow sh;
    uint32_t epoch, stamp;
    _Atomic uint64_t resets;
    _Atomic uint64_t cleared_ns; /* ir_now_ns() of the last time its view was emptied */
    /* Non-NULL: tracked from events. The shadow is then the lookahead's mirror of the
     * engine's free queue (empty unless the lookahead is on), none of it in the map. */
    irx_evrep *ev;
    _Atomic(irx_doom *) doom; /* made when first tracked from events; freed by irx_free */
    uint64_t last_batch_ns, batch_gap_ns; /* when events were last applied; a mean of the gaps */
    bool wrapped; /* the events reported an eviction since the last clear: the engine's never
                   * used blocks are spent, so each block it allocates evicts its queue's head */
} irx_replica;

struct irx_index {
    irx_map map;
    /* Event-fed replicas' blocks held in some tier but not reachable on the GPU (on the
     * CPU, or on the GPU below a block that is not): what a CPU hit would load. */
    irx_map cpu;
    uint32_t nrep, nwords; /* read by every lookup: a cache line apart from the sums below */
    _Alignas(64) _Atomic uint64_t cpu_bits;
    _Atomic uint64_t held, shadow_bytes, resets;
    _Atomic uint64_t ev_bits, ev_bytes; /* map bits and memory of the event replicas */
    _Atomic bool lookahead;             /* irx_ev_set_lookahead */
    _Atomic uint64_t doom_bytes;        /* the doom tables made */
    _Atomic uint64_t doomed[IRX_WORDS]; /* replicas whose doom table had entries since a reset */
    irx_replica rep[];
};

/* ev_decode.c: irx_ev_decode with msgpack-c's template reading every value, token
 * ids included (irx_ev_decode reads token arrays itself, ADR 0024). For tests and
 * fuzzing: the two must agree on every input. */
int irx_ev_decode_template(const void *payload, size_t len, irx_ev_batch *out, char *err,
                           size_t errlen);

/* ev_shapes.c: the usual shapes of a batch read straight from the bytes into out
 * (ts, dp_rank, ev, nev; arrays from arena), as the template would decode them.
 * false: not one of them, or one that the template would refuse (out and arena
 * then hold what was read so far; ADR 0026). */
bool irx_ev_decode_shapes(const void *payload, size_t len, ir_arena *arena, irx_ev_batch *out);

/* index.c, with r's lock held: drops r's shadow blocks and voids its records. */
void irx_replica_drop(struct irx_index *ix, uint32_t r);
/* index.c, with r's lock held: the events say block h left r's GPU (the lookahead's
 * mirror and doom table follow). The caller sets r's `wrapped` first, mirror or not,
 * and calls it only while the mirror holds blocks (ev_index.c's apply loop). */
void irx_mirror_gone(struct irx_index *ix, uint32_t r, ir_hash128 h);
/* index.c, with r's lock held: events are being applied to r now (the mean gap). */
void irx_mirror_batch(struct irx_index *ix, uint32_t r);
/* ev_index.c, with r's lock held. */
/* The blocks an event-fed replica may hold (GPU, CPU tier, and parents kept for their
 * children): IRX_EV_LIMIT_FACTOR times its capacity, at least IRX_EV_LIMIT_MIN; new
 * blocks past it are refused (counted). 0: no capacity known, only the pool's own cap. */
#define IRX_EV_LIMIT_FACTOR 16u
#define IRX_EV_LIMIT_MIN    4096u
void irx_evrep_set_limit(irx_evrep *e, uint32_t capacity_blocks);
void irx_evrep_free(struct irx_index *ix, uint32_t r);
void irx_evrep_clear(struct irx_index *ix, uint32_t r);
/* 0 when r's key table and node pool agree. */
int irx_evrep_check(const irx_evrep *e);
/* Map bits r's event state owns (for irx_check), in the GPU map and the CPU one. */
uint64_t irx_evrep_bits(const irx_evrep *e);
uint64_t irx_evrep_cpu_bits(const irx_evrep *e);

#endif
