/* ir_index.h: the approximate KV index (module `index`, prefix irx_).
 *
 * The gateway cannot see inside an engine's KV cache, so it remembers where it
 * sent each prompt. Every routed prompt's block hashes (ir_block_hash_chain)
 * are recorded on the replica it went to, in a per-replica shadow LRU as large
 * as that replica's KV cache. A shared map from block hash to the set of
 * replicas holding it (a bitset) answers, in one pass over a prompt's blocks,
 * how many leading blocks every replica holds. See docs/internals/index.md.
 *
 * Invariant: the shared map equals the union of the shadows, exactly: block b
 * maps to bit r if and only if replica r's shadow holds b (pinned or not).
 * Pinned blocks plus listed blocks (hashed or anonymous) never exceed capacity. Within one shadow
 * the blocks are prefix-closed (a block is evicted before its parent), which lets irx_lookup bisect
 * instead of probing every block.
 *
 * Threads: every function except irx_new and irx_free may be called from any
 * thread at any time. irx_lookup takes no lock and never waits on a writer
 * (RCU); writers lock one replica and one shard of the map at a time. Threads
 * need no registration (liburcu-bp).
 *
 * Ownership: the index copies what it keeps; callers own every array they pass.
 */
#ifndef IR_INDEX_H
#define IR_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Matches GW_MAX_REPLICAS: a replica is a slot number below this. */
#define IRX_MAX_REPLICAS 256u

typedef struct irx_index irx_index;

/* An index for replica slots 0..max_replicas-1 (1..IRX_MAX_REPLICAS; the
 * bitset per block is max_replicas bits rounded up to 64, so a fleet of 64
 * holds less memory per block than one of 256). NULL on a bad argument or OOM. */
irx_index *irx_new(uint32_t max_replicas);
/* Frees everything. No other call may run on ix, or start, meanwhile. */
void irx_free(irx_index *ix);

/* Sets replica r's capacity in blocks, the size of its shadow LRU: the caller
 * picks kv_capacity_blocks, else the engine's num_gpu_blocks, else
 * index.default_capacity_blocks. Shrinking evicts the oldest blocks; 0 is
 * irx_forget_replica. Returns 0, or -1 on a bad replica or OOM (the shadow is
 * then unchanged). Capacity is capped at 1<<30 blocks. */
int irx_set_capacity(irx_index *ix, uint32_t r, uint32_t capacity_blocks);
uint32_t irx_capacity(irx_index *ix, uint32_t r);
/* Hashed blocks replica r's shadow holds now (pinned or not; anonymous blocks
 * are not counted; 0 for a replica tracked from its events). */
uint32_t irx_replica_blocks(irx_index *ix, uint32_t r);

/* What one attempt recorded, so that it can be taken back. Plain data: keep it
 * with the attempt. n == 0 means nothing was recorded. */
typedef struct irx_rec {
    uint32_t replica;
    uint32_t epoch;    /* the shadow's generation; a reset or forget voids the record */
    uint32_t stamp;    /* the attempt's mark on the blocks it touched */
    uint32_t n;        /* blocks recorded (the prompt's first n) */
    uint32_t reserved; /* anonymous blocks of capacity held until release or undo */
} irx_rec;

/* Records that replica r was sent a prompt whose full blocks hash to h[0..n):
 * the blocks are added (evicting the least recent unpinned blocks to stay
 * within capacity) and pinned: a pinned block is in use by a request in flight,
 * as in the engine, so it is never evicted and sits outside the LRU order until
 * irx_release. Pins count: a block shared by several requests in flight is
 * unpinned by the last release. Only the first blocks that fit are recorded
 * (at most `capacity` pinned blocks in all); rec.n says how many. A replica
 * without capacity records nothing. Every record with rec.n > 0 must end in
 * exactly one irx_release or irx_undo, or its blocks stay pinned until a reset. */
irx_rec irx_record(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n);
/* irx_record that also reserves up to reserve_blocks anonymous blocks of capacity
 * (evicting for them now): the blocks the engine takes at admission beyond the
 * prompt's full blocks (the trailing partial block, and the first output
 * token's block). They hold no hash and are not in the LRU order until release
 * turns them into extra blocks. rec.reserved says how many fit (those not
 * pinned or reserved by others). Nothing is reserved when nothing is recorded. */
irx_rec irx_record_reserve(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n,
                           size_t reserve_blocks);
/* irx_record_reserve with the prediction the route was chosen on: hit_blocks, the
 * leading blocks irx_lookup said r holds. It matters only to an event-fed replica's
 * lookahead mirror (irx_ev_set_lookahead): the blocks past hit_blocks are the ones
 * the engine allocates, each taking the head of its free queue, and the ones before
 * it are hits even where the mirror has lost track of them. */
irx_rec irx_record_hit(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n,
                       size_t reserve_blocks, size_t hit_blocks);
/* Takes back what rec recorded, for an attempt that the engine refused, that
 * answered with an error or that failed before answering: its pins go, and the
 * blocks that this attempt added and that no later record touched leave the
 * shadow. Blocks that were already there stay and, once unpinned, become the
 * most recent; blocks it evicted do not come back. h and n are the ones given
 * to irx_record. */
void irx_undo(irx_index *ix, irx_rec rec, const ir_hash128 *h, size_t n);
/* The request of rec completed (or was aborted after the engine started it):
 * as the engine frees a sequence's blocks last-first to its free queue's most
 * recent end, first extra_blocks anonymous blocks are added as the most recent
 * (the blocks it spent beyond the prompt's recorded full blocks: the trailing
 * partial block and the decode blocks; they take capacity, hold no hash, and
 * are evicted before this request's prompt blocks), then the prompt's blocks
 * are unpinned deepest first, so block 0 ends up the most recent. The record's
 * reserved blocks count among the extra ones (at least rec.reserved are
 * added). irx_undo drops the reservation. A record that
 * a reset or forget voided releases nothing. h and n as given to irx_record. */
void irx_release(irx_index *ix, irx_rec rec, const ir_hash128 *h, size_t n, size_t extra_blocks);

/* For every replica slot r < max_replicas, out[r] = how many leading blocks of
 * h[0..n) replica r holds. One pass for all replicas, lock-free. The index
 * counts blocks as held; it does NOT apply the engine's last-token rule: the
 * caller passes n = irx_usable_blocks(...) so that a fully cached prompt is
 * predicted one block short, as the engine reports it. */
void irx_lookup(irx_index *ix, const ir_hash128 *h, size_t n, uint32_t *out);

/* How many of a prompt's nhashes full blocks an engine can report cached: it
 * always computes the last token, so a prompt of exactly k full blocks reports
 * at most k - 1 of them (vLLM recomputes the last token; a partial trailing
 * block leaves every full block usable). */
static inline size_t irx_usable_blocks(size_t nhashes, size_t prompt_tokens, size_t block_size) {
    if (block_size == 0 || prompt_tokens == 0) return 0;
    size_t cap = (prompt_tokens - 1) / block_size;
    return nhashes < cap ? nhashes : cap;
}

/* Closed loop: the engine reported engine_cached blocks for a prompt h[0..n)
 * that the index predicted predicted blocks for (both already through
 * irx_usable_blocks). When engine_cached < predicted, r's shadow held blocks
 * the engine had already evicted: the prompt's blocks are made the most recent
 * (the engine has just computed them) and the difference is evicted from the
 * oldest end of r's shadow, never this prompt's blocks. Returns the number of
 * blocks evicted. */
size_t irx_correct(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n, size_t predicted,
                   size_t engine_cached);

/* Replica r left the fleet: its blocks and its capacity are dropped. */
void irx_forget_replica(irx_index *ix, uint32_t r);
/* Replica r's engine restarted (its prefix cache counters went backwards): its
 * blocks are dropped, its capacity kept, and resets counted. */
void irx_reset_replica(irx_index *ix, uint32_t r);

typedef struct irx_stats {
    uint64_t entries; /* distinct blocks in the shared map */
    uint64_t held;    /* blocks held, summed over the shadows */
    uint64_t bytes;   /* memory the index holds (map tables and shadows) */
    uint64_t resets;  /* irx_reset_replica calls, all replicas */
} irx_stats;
void irx_stats_get(irx_index *ix, irx_stats *out);
uint64_t irx_replica_resets(irx_index *ix, uint32_t r);
/* When replica r's view was last emptied (ir_now_ns(); 0: never): a reset, a forget,
 * or, for an event-fed replica, AllBlocksCleared, a gap that could not be replayed
 * or irx_ev_clear. Policies read it to tell a prefix lost to a clear from one
 * evicted under pressure. */
uint64_t irx_replica_cleared_ns(irx_index *ix, uint32_t r);

/* ---- prefix placement (a pure function for the prefix_hash policy) ------------
 * Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2018),
 * in its rendezvous form: each replica's weight for a key is a hash of (key,
 * replica id); the key's preference order is by weight, so a replica joining or
 * leaving moves only the keys it wins or held, as on a ring. With loads, a
 * replica is eligible when load + 1 <= ceil(c * (total + 1) / n); the key goes
 * to its most preferred eligible replica, so a hot prefix spills over to its
 * next replica instead of melting one. At least one replica is always eligible
 * for c >= 1. The key is a block hash of the prompt's first blocks, e.g.
 * h[min(k, n) - 1].lo for a configured k (the caller's choice: a prompt shorter
 * than one block has no key and should go to the least loaded replica).
 * ids[0..n) are stable replica identities (not slots that get reused), loads
 * the requests in flight. Returns an index into ids, or SIZE_MAX when n == 0.
 * c below 1 is taken as 1. */
size_t irx_bounded_hash_pick(uint64_t key, const uint64_t *ids, const uint32_t *loads, size_t n,
                             double c);

/* ---- exact tracking from engine KV events (docs/internals/kv-events.md) -------
 * vLLM publishes what its prefix cache stores and evicts (--kv-events-config):
 * msgpack event batches over ZMQ, in the format of vllm/distributed/kv_events.py.
 * irx_ev_decode reads one batch; irx_ev_apply applies its events to a replica
 * that irx_ev_track switched to event tracking. */
#define IRX_EV_MAX_PAYLOAD   (64u << 20) /* bytes of one batch */
#define IRX_EV_MAX_EVENTS    (1u << 20)  /* events in one batch */
#define IRX_EV_MAX_BLOCKS    (1u << 20)  /* block hashes in one event */
#define IRX_EV_MAX_TOKENS    (1u << 24)  /* token ids in one event */
#define IRX_EV_MAX_KEY_BYTES 64          /* a byte-string block hash (sha256_cbor: 32) */

typedef enum { IRX_EV_STORED = 1, IRX_EV_REMOVED = 2, IRX_EV_CLEARED = 3 } irx_ev_type;
typedef enum { IRX_MEDIUM_GPU = 0, IRX_MEDIUM_CPU = 1, IRX_MEDIUM_OTHER = 2 } irx_medium;
/* kv_cache_spec_kind: absent, one whose blocks decide a prefix hit (full
 * attention), or another (sliding window, Mamba, chunked local, cross, ...). */
typedef enum { IRX_KIND_NONE = 0, IRX_KIND_FULL = 1, IRX_KIND_OTHER = 2 } irx_group_kind;

/* One event. Engine block hashes are opaque: each is digested (with its kind,
 * integer or bytes) to 128 bits, never compared with the gateway's hashes. */
typedef struct irx_ev {
    irx_ev_type type;
    uint32_t nblocks;
    const ir_hash128 *blocks; /* engine keys, parent first (STORED, REMOVED) */
    bool has_parent;          /* STORED: parent_block_hash was not nil */
    ir_hash128 parent;
    uint32_t ntokens, block_size; /* STORED */
    const uint32_t *tokens;
    irx_medium medium;      /* nil or absent: GPU */
    const char *lora_name;  /* STORED, or NULL */
    const char *cache_salt; /* STORED: from the first block's extra_keys, or NULL */
    int32_t group_idx;      /* the KV cache group (hybrid models); -1: absent or nil */
    irx_group_kind kind;    /* STORED: kv_cache_spec_kind, sorted */
} irx_ev;

/* KV cache groups. A hybrid model (sliding-window or Mamba layers beside full
 * attention) keeps one KV cache group per kind of layer, and vLLM publishes each
 * group's blocks with its group_idx (BlockStored also with kv_cache_spec_kind):
 * the same token blocks, stored and evicted at other times (a sliding window
 * drops blocks that fall out of it while full attention keeps them). The index
 * follows one group per replica, the one whose blocks decide a prefix hit: the
 * first group announced as full attention (full_attention, mla_attention,
 * sink_full_attention), else group 0 when no kind is ever given. *followed is
 * the replica's group (IRX_GROUP_UNKNOWN at first): returns whether ev is to be
 * applied, learning the group from it. Events without group_idx (older vLLM,
 * one group) and AllBlocksCleared always apply. */
#define IRX_GROUP_UNKNOWN (-1)
bool irx_ev_group_follow(int32_t *followed, const irx_ev *ev);

typedef struct irx_ev_batch {
    double ts;       /* the engine's clock, seconds since the epoch */
    int64_t dp_rank; /* data_parallel_rank, or -1 when absent */
    size_t nev;
    irx_ev *ev;
    void *mem; /* owned: irx_ev_batch_free */
} irx_ev_batch;

/* Decodes one payload, in either encoding (arrays with the tag first, or maps
 * with "type"). Missing trailing fields take their defaults; unknown fields
 * are ignored. Returns 0, or -1 with a reason in err (the batch is then empty
 * and needs no free). The batch owns copies of everything it points to. */
int irx_ev_decode(const void *payload, size_t len, irx_ev_batch *out, char *err, size_t errlen);
void irx_ev_batch_free(irx_ev_batch *b);

/* Replica r is tracked from its events from now on: its approximate blocks are
 * dropped, records on it change no prediction (with the lookahead on, they keep
 * a mirror of its free queue: irx_ev_set_lookahead), and its chains start at
 * ir_block_hash_root(model, lora_name, cache_salt) with block_size tokens per
 * block (events with another block size are refused). -1 on a bad argument or OOM. */
int irx_ev_track(irx_index *ix, uint32_t r, const char *model, uint32_t block_size);
/* Back to approximate tracking (events stopped or a gap could not be replayed):
 * r's event blocks, and the lookahead's mirror, are dropped. */
void irx_ev_untrack(irx_index *ix, uint32_t r);
bool irx_ev_tracked(irx_index *ix, uint32_t r);

/* What one irx_ev_apply did (added to the caller's counters). */
typedef struct irx_ev_counts {
    uint64_t stored, removed, cleared; /* blocks stored, blocks removed, clears */
    uint64_t orphans;                  /* stored blocks whose chain began unseen */
    uint64_t refused;                  /* events that could not be applied */
} irx_ev_counts;

/* Applies one event to replica r (a no-op unless r is tracked). A stored
 * block's own hash is recomputed from its token ids, chained from its parent's
 * (or the root), and mapped from its engine key; it is visible to irx_lookup
 * while it and all its ancestors are on the GPU, so what a lookup reports is
 * the prefix the engine would hit. A CPU store without token ids or parent (a
 * copy, as vLLM's OffloadingConnector reports it) gives the blocks it names the
 * CPU tier, if known. Removed blocks leave; AllBlocksCleared drops everything.
 * Writers lock r; lookups never wait. */
void irx_ev_apply(irx_index *ix, uint32_t r, const irx_ev *ev, irx_ev_counts *c);
/* irx_ev_apply of ev[0..nev), in order, locking r once per about 1024 blocks: while
 * one block is applied, the memory of the blocks after it is prefetched (ADR 0014),
 * so a batch goes faster than its events one by one. Lookups see each block as soon
 * as it is applied, as with irx_ev_apply. */
void irx_ev_apply_batch(irx_index *ix, uint32_t r, const irx_ev *ev, size_t nev, irx_ev_counts *c);
/* Drops r's event blocks, still tracked (a restart, a clear, a gap). */
void irx_ev_clear(irx_index *ix, uint32_t r);

/* Eviction lookahead (index.eviction_lookahead; off until set). An engine publishes
 * the blocks it evicts once per step, after the step, so a prompt routed within
 * that step can be predicted a block or more that the engine no longer holds. With
 * the lookahead on, irx_record_reserve and irx_release on an event-fed replica keep
 * a mirror of the engine's free queue (as they keep an approximate replica's
 * shadow, but outside the shared map), every removal the events report drops the
 * mirror's blocks up to it (the engine evicts its queue in order), and the blocks a
 * record evicts from the mirror (what the engine is about to evict to admit that
 * request) are left out of irx_lookup's answer for r until the events report them
 * gone, or for three of r's publication intervals (measured; 1 to 250 ms). Only the
 * doomed blocks at the end of a prefix are cut (engines free a prefix tail first).
 * Records made while it was off are mirrored as nothing; turning it off leaves the
 * mirror to age out of use (dooms expire). */
void irx_ev_set_lookahead(irx_index *ix, bool on);

typedef struct irx_ev_view {
    uint64_t gpu_blocks; /* blocks on the GPU that lookups see */
    uint64_t cpu_blocks; /* blocks in the CPU tier */
    uint64_t nodes;      /* blocks known (GPU, CPU or parents kept for their children) */
    uint64_t orphans;    /* blocks held whose parents are unknown */
    uint64_t unseen;     /* blocks the engine may hold that no event named (irx_ev_unseen) */
    uint64_t bytes;      /* memory of r's event tables */
    bool partial;        /* orphans > 0 or unseen > 0: index_source "events-partial" */
} irx_ev_view;
void irx_ev_view_get(irx_index *ix, uint32_t r, irx_ev_view *out);
/* Says that r's view began after its engine had started (a late join, or events
 * followed again after a fallback): the engine may hold blocks stored before the
 * first batch applied, which no event will name until it evicts them. Until then
 * the view is partial, and irx_ev_view's `unseen` bounds them: r's capacity at first,
 * less one for each GPU removal of a block the view never held (neither placed nor an
 * orphan), and never more than the capacity its known GPU blocks leave. A clear
 * (AllBlocksCleared, irx_ev_clear: a restart) ends it. A no-op unless r is tracked;
 * irx_ev_untrack forgets it. */
void irx_ev_unseen(irx_index *ix, uint32_t r);
/* The CPU tier: for every slot r, out[r] = how many blocks of h[0..n) after its
 * GPU prefix gpu[r] (irx_lookup's answer) r holds elsewhere: on the CPU, or on the
 * GPU below a block that is not (what an engine with KV offloading would load
 * instead of recomputing). 0 for approximate replicas. Lock-free; one probe per
 * block counted plus one per replica, when any replica has such blocks. */
void irx_ev_lookup_cpu(irx_index *ix, const ir_hash128 *h, size_t n, const uint32_t *gpu,
                       uint32_t *out);

/* Test and benchmark hook: checks the invariant (shared map == union of the
 * shadows, each shadow's LRU and table consistent). Returns 0 when it holds,
 * or -1 and writes the first difference into err. Call it with no writer
 * running. */
int irx_check(irx_index *ix, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
