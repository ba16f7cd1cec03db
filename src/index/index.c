/* index.c: the API that keeps the shared map (map.c) equal to the union of the
 * replicas' shadows (shadow.c), and the lookup (see ir_index.h).
 *
 * A replica's shadow has its own mutex; a writer holds it while it changes the
 * shadow and the map's bits for that replica, so the two never disagree once
 * the call returns. The map's shards have their own mutexes, taken inside the
 * replica's (lock order: replica, then shard). There is no global lock. */
#include "index/ir_index.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/index_internal.h"

static int map_add(irx_index *ix, ir_hash128 h, uint32_t r) {
    return irx_map_add(&ix->map, h, r);
}
static void map_remove(irx_index *ix, ir_hash128 h, uint32_t r) {
    irx_map_remove(&ix->map, h, r);
}

/* ---- lifecycle ---------------------------------------------------------------- */

irx_index *irx_new(uint32_t max_replicas) {
    if (max_replicas == 0 || max_replicas > IRX_MAX_REPLICAS) return NULL;
    irx_index *ix = calloc(1, sizeof *ix + max_replicas * sizeof ix->rep[0]);
    if (!ix) return NULL;
    ix->nrep = max_replicas;
    ix->nwords = (max_replicas + 63) / 64;
    irx_map_init(&ix->map, ix->nwords);
    irx_map_init(&ix->cpu, ix->nwords);
    for (uint32_t r = 0; r < max_replicas; r++) pthread_mutex_init(&ix->rep[r].mu, NULL);
    return ix;
}

void irx_free(irx_index *ix) {
    if (!ix) return;
    for (uint32_t r = 0; r < ix->nrep; r++) irx_forget_replica(ix, r);
    irx_map_destroy(&ix->map);
    irx_map_destroy(&ix->cpu);
    for (uint32_t r = 0; r < ix->nrep; r++) {
        pthread_mutex_destroy(&ix->rep[r].mu);
        irx_doom_free(atomic_load(&ix->rep[r].doom));
    }
    free(ix);
}

/* ---- one replica's shadow (its lock held) ------------------------------------ */

static ir_hash128 node_hash(const irx_shadow *s, uint32_t i) {
    return (ir_hash128){s->nodes[i].key, 0}; /* the index keys blocks by lo */
}

/* An event-fed replica's shadow is the lookahead's mirror: none of it is in the map. */
static bool mirror(const irx_replica *rp) {
    return rp->ev != NULL;
}

/* How long a doom lasts: a few of the replica's publication intervals, as measured. */
static uint64_t doom_window(const irx_replica *rp) {
    uint64_t w = rp->batch_gap_ns ? 3 * rp->batch_gap_ns : 20000000u;
    return w < 1000000u ? 1000000u : w > 250000000u ? 250000000u : w;
}

/* The record `stamp` on r ended (released or undone): its dooms still standing were
 * wrong (index_internal.h). */
static void end_dooms(irx_replica *rp, uint32_t stamp) {
    irx_doom *d = atomic_load_explicit(&rp->doom, memory_order_relaxed);
    if (d && mirror(rp)) irx_doom_forget_ticket(d, stamp, ir_now_ns());
}

/* Marks hashed node t of r's mirror as evicted by a record, for the lookahead. */
static void doom(irx_index *ix, uint32_t r, uint32_t t) {
    irx_replica *rp = &ix->rep[r];
    irx_doom *d = atomic_load_explicit(&rp->doom, memory_order_relaxed);
    if (!d) return;
    uint64_t now = ir_now_ns();
    irx_doom_add(d, rp->sh.nodes[t].key, now, now + doom_window(rp), rp->stamp);
    atomic_fetch_or(&ix->doomed[r / 64], 1ull << (r % 64));
}

/* Evicts the least recent listed block (the caller checks nlisted > 0). An
 * approximate replica's block leaves the map; a mirror's is doomed when a record
 * evicts it (by_record), as the engine is about to. */
static void evict_tail_for(irx_index *ix, uint32_t r, bool by_record) {
    irx_shadow *s = &ix->rep[r].sh;
    uint32_t t = s->tail;
    bool anon = irx_node_anon(&s->nodes[t]);
    if (!anon && mirror(&ix->rep[r])) {
        if (by_record) doom(ix, r, t);
        anon = true; /* nothing to count */
    } else if (!anon) {
        map_remove(ix, node_hash(s, t), r);
    }
    irx_shadow_remove(s, t);
    if (!anon) atomic_fetch_sub(&ix->held, 1);
}
static void evict_tail(irx_index *ix, uint32_t r) {
    evict_tail_for(ix, r, false);
}

/* Removes hashed node k (pinned or not) from the shadow and the map. */
static void drop_node(irx_index *ix, uint32_t r, uint32_t k) {
    irx_shadow *s = &ix->rep[r].sh;
    if (mirror(&ix->rep[r])) {
        irx_shadow_remove(s, k);
        return;
    }
    map_remove(ix, node_hash(s, k), r);
    irx_shadow_remove(s, k);
    atomic_fetch_sub(&ix->held, 1);
}

/* Drops every block and voids every record (their pins go with the blocks). */
static void drop_all(irx_index *ix, uint32_t r) {
    irx_replica *rp = &ix->rep[r];
    irx_shadow *s = &rp->sh;
    while (s->nlisted) evict_tail(ix, r); /* oldest first: children before parents */
    /* The pinned ones, slot by slot: a removal only shifts later entries into
     * the hole, so every slot before j stays empty. */
    for (uint32_t j = 0; s->npinned && j < s->nslots; j++)
        while (irx_slot(s, j) != IRX_NIL) drop_node(ix, r, irx_slot(s, j));
    s->nreserved = 0;
    rp->epoch++;
    rp->wrapped = false;
    irx_doom *d = atomic_load_explicit(&rp->doom, memory_order_relaxed);
    if (d) irx_doom_reset(d);
}
void irx_replica_drop(irx_index *ix, uint32_t r) {
    drop_all(ix, r);
}

void irx_ev_set_lookahead(irx_index *ix, bool on) {
    atomic_store(&ix->lookahead, on);
}

void irx_mirror_gone(irx_index *ix, uint32_t r, ir_hash128 h) {
    irx_replica *rp = &ix->rep[r];
    irx_shadow *s = &rp->sh;
    irx_doom *d = atomic_load_explicit(&rp->doom, memory_order_relaxed);
    if (d) irx_doom_clear(d, h.lo);
    uint32_t k = irx_shadow_find(s, h);
    if (k == IRX_NIL) return;
    /* The engine evicts its free queue in order: what the mirror lists before k
     * is gone too, or was never where the mirror put it. */
    if (irx_node_pins(&s->nodes[k]) == 0)
        while (s->tail != k) evict_tail(ix, r);
    irx_shadow_remove(s, k);
}

void irx_mirror_batch(irx_index *ix, uint32_t r) {
    irx_replica *rp = &ix->rep[r];
    if (rp->sh.count == 0) return; /* no lookahead here: no clock read either */
    uint64_t now = ir_now_ns(), gap = now - rp->last_batch_ns;
    if (rp->last_batch_ns && gap < 1000000000u)
        rp->batch_gap_ns = rp->batch_gap_ns ? (7 * rp->batch_gap_ns + gap) / 8 : gap;
    rp->last_batch_ns = now;
}

static void set_shadow_bytes(irx_index *ix, size_t before, size_t after) {
    atomic_fetch_add(&ix->shadow_bytes, after);
    atomic_fetch_sub(&ix->shadow_bytes, before);
}

/* Moves every node of rp->sh into a shadow of cap nodes, oldest evicted first.
 * When the pinned blocks alone exceed cap, everything is dropped. */
static int resize_shadow(irx_index *ix, uint32_t r, uint32_t cap) {
    irx_replica *rp = &ix->rep[r];
    irx_shadow ns;
    if (irx_shadow_init(&ns, cap)) return -1;
    irx_shadow *s = &rp->sh;
    while (s->count + s->nreserved > cap && s->nlisted) evict_tail(ix, r);
    if (s->count + s->nreserved > cap) drop_all(ix, r);
    ns.nreserved = s->nreserved;
    for (uint32_t j = 0; s->npinned && j < s->nslots; j++) {
        uint32_t k = irx_slot(s, j);
        if (k == IRX_NIL || irx_node_pins(&s->nodes[k]) == 0) continue;
        uint32_t i = irx_shadow_add(&ns, node_hash(s, k), s->nodes[k].stamp);
        irx_shadow_pin(&ns, i);
        ns.nodes[i].next = irx_node_pins(&s->nodes[k]);
    }
    for (uint32_t i = s->nlisted ? s->tail : IRX_NIL; i != IRX_NIL; i = s->nodes[i].prev) {
        if (irx_node_anon(&s->nodes[i]))
            irx_shadow_add_anon(&ns);
        else
            irx_shadow_add(&ns, node_hash(s, i), s->nodes[i].stamp);
    }
    set_shadow_bytes(ix, irx_shadow_bytes(s), irx_shadow_bytes(&ns));
    irx_shadow_free(s);
    rp->sh = ns;
    return 0;
}

int irx_set_capacity(irx_index *ix, uint32_t r, uint32_t capacity_blocks) {
    if (r >= ix->nrep || capacity_blocks > (1u << 30)) return -1;
    if (capacity_blocks == 0) {
        irx_forget_replica(ix, r);
        return 0;
    }
    irx_replica *rp = &ix->rep[r];
    pthread_mutex_lock(&rp->mu);
    int rc = rp->sh.cap == capacity_blocks ? 0 : resize_shadow(ix, r, capacity_blocks);
    if (rc == 0 && rp->ev) irx_evrep_set_limit(rp->ev, capacity_blocks);
    pthread_mutex_unlock(&rp->mu);
    return rc;
}

static uint32_t locked_u32(irx_index *ix, uint32_t r, bool count) {
    if (r >= ix->nrep) return 0;
    pthread_mutex_lock(&ix->rep[r].mu);
    const irx_shadow *s = &ix->rep[r].sh;
    /* An event-fed replica's shadow is the lookahead's mirror: it holds no guesses. */
    uint32_t v = count ? (ix->rep[r].ev ? 0 : s->count - s->nanon) : s->cap;
    pthread_mutex_unlock(&ix->rep[r].mu);
    return v;
}
uint32_t irx_capacity(irx_index *ix, uint32_t r) {
    return locked_u32(ix, r, false);
}
uint32_t irx_replica_blocks(irx_index *ix, uint32_t r) {
    return locked_u32(ix, r, true);
}

void irx_forget_replica(irx_index *ix, uint32_t r) {
    if (r >= ix->nrep) return;
    irx_replica *rp = &ix->rep[r];
    pthread_mutex_lock(&rp->mu);
    if (rp->ev)
        irx_evrep_free(ix, r); /* its clear drops the mirror too */
    else
        drop_all(ix, r);
    set_shadow_bytes(ix, irx_shadow_bytes(&rp->sh), 0);
    irx_shadow_free(&rp->sh);
    pthread_mutex_unlock(&rp->mu);
    atomic_store(&rp->cleared_ns, ir_now_ns());
}

void irx_reset_replica(irx_index *ix, uint32_t r) {
    if (r >= ix->nrep) return;
    irx_replica *rp = &ix->rep[r];
    pthread_mutex_lock(&rp->mu);
    if (rp->ev)
        irx_evrep_clear(ix, r); /* the mirror with it */
    else
        drop_all(ix, r);
    pthread_mutex_unlock(&rp->mu);
    atomic_fetch_add(&rp->resets, 1);
    atomic_fetch_add(&ix->resets, 1);
    atomic_store(&rp->cleared_ns, ir_now_ns());
}

uint64_t irx_replica_resets(irx_index *ix, uint32_t r) {
    return r < ix->nrep ? atomic_load(&ix->rep[r].resets) : 0;
}

uint64_t irx_replica_cleared_ns(irx_index *ix, uint32_t r) {
    return r < ix->nrep ? atomic_load_explicit(&ix->rep[r].cleared_ns, memory_order_relaxed) : 0;
}

/* ---- record, undo, correct ---------------------------------------------------- */

/* Makes the present, unpinned blocks of h[0..m) the most recent, block 0 first
 * of all; returns how many were present (pinned ones included). Parents end up
 * more recent than children, which keeps the shadow prefix-closed under tail
 * eviction. */
static uint32_t touch_present(irx_shadow *s, const ir_hash128 *h, size_t m) {
    uint32_t present = 0;
    for (size_t i = m; i-- > 0;) {
        uint32_t k = irx_shadow_find(s, h[i]);
        if (k == IRX_NIL) continue;
        if (irx_node_pins(&s->nodes[k]) == 0) irx_shadow_touch(s, k);
        present++;
    }
    return present;
}

/* How many leading blocks of h[0..m) can be pinned at once: the pinned blocks
 * after the record, npinned + (m - already pinned among them), and the reserved
 * ones fit in cap. */
static size_t pinnable(const irx_shadow *s, const ir_hash128 *h, size_t m) {
    size_t q = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t k = irx_shadow_find(s, h[i]);
        q += k != IRX_NIL && irx_node_pins(&s->nodes[k]) != 0;
    }
    while (m > 0 && s->npinned + s->nreserved + m - q > s->cap) {
        uint32_t k = irx_shadow_find(s, h[--m]);
        q -= k != IRX_NIL && irx_node_pins(&s->nodes[k]) != 0;
    }
    return m;
}

/* Unpins the present blocks of h[0..m), deepest first, so that block 0 ends up
 * the most recent of those that become free. */
static void unpin_all(irx_shadow *s, const ir_hash128 *h, size_t m) {
    for (size_t i = m; i-- > 0;) {
        uint32_t k = irx_shadow_find(s, h[i]);
        if (k != IRX_NIL) irx_shadow_unpin(s, k);
    }
}

irx_rec irx_record(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n) {
    return irx_record_reserve(ix, r, h, n, 0);
}

/* Whether a block the engine allocates now evicts the head of its free queue even
 * though the mirror has room: once the engine's never used blocks are spent, every
 * allocation takes the queue's head, whatever the mirror counts (it does not see
 * the blocks running requests have taken since their records). */
static bool takes_head(const irx_replica *rp) {
    return mirror(rp) && rp->wrapped && rp->sh.nlisted > 0;
}

/* Holds up to `want` blocks of capacity for rec, evicting listed blocks. */
static void reserve(irx_index *ix, uint32_t r, irx_rec *rec, size_t want) {
    irx_replica *rp = &ix->rep[r];
    irx_shadow *s = &rp->sh;
    uint32_t room = s->cap - s->npinned - s->nreserved;
    uint32_t k = want < room ? (uint32_t)want : room;
    for (uint32_t i = 0; i < k && takes_head(rp); i++) evict_tail_for(ix, r, true);
    while (s->count + s->nreserved + k > s->cap) evict_tail_for(ix, r, rp->wrapped);
    s->nreserved += k;
    rec->reserved = k;
}

/* For the lookahead's mirror, block i of a record is one the engine allocates (and
 * so takes its free queue's head for) when it lies past the hit the events predict;
 * without that prediction (hit == SIZE_MAX), when the mirror lacks it. */
static bool allocates(size_t i, size_t hit, bool present) {
    return hit == SIZE_MAX ? !present : i >= hit;
}

static irx_rec record(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n,
                      size_t reserve_blocks, size_t hit) {
    irx_rec rec = {r, 0, 0, 0, 0};
    if (r >= ix->nrep || n == 0) return rec;
    irx_replica *rp = &ix->rep[r];
    pthread_mutex_lock(&rp->mu);
    irx_shadow *s = &rp->sh;
    /* An event-tracked replica is not guessed at; with the lookahead, its mirror is kept. */
    if (s->cap == 0 || (rp->ev && !atomic_load_explicit(&ix->lookahead, memory_order_relaxed)))
        goto out;
    size_t m = pinnable(s, h, n < s->cap ? n : s->cap);
    if (m == 0) goto out;
    rp->stamp = (rp->stamp + 1) & ~IRX_FRESH;
    if (rp->stamp == 0 || (rp->stamp | IRX_FRESH) == IRX_ANON_STAMP) rp->stamp = 1;
    rec = (irx_rec){r, rp->epoch, rp->stamp, (uint32_t)m, 0};
    /* First the blocks already held are pinned, out of eviction's way; then,
     * deepest first, the missing ones are added pinned, evicting listed blocks
     * (pinnable() left enough of them). */
    for (size_t i = m; i-- > 0;) {
        uint32_t k = irx_shadow_find(s, h[i]);
        if (k == IRX_NIL) continue;
        irx_shadow_pin(s, k);
        s->nodes[k].stamp = rp->stamp;
    }
    bool mirrored = mirror(rp);
    for (size_t i = m; i-- > 0;) {
        bool present = irx_shadow_find(s, h[i]) != IRX_NIL;
        bool alloc = mirrored && allocates(i, hit, present);
        if (present) {
            if (alloc && takes_head(rp)) evict_tail_for(ix, r, true);
            continue;
        }
        if (s->count + s->nreserved == s->cap)
            evict_tail_for(ix, r, alloc && rp->wrapped); /* before: the engine has room */
        else if (alloc && takes_head(rp))
            evict_tail_for(ix, r, true);
        if (!mirrored && map_add(ix, h[i], r)) { /* OOM: unpin what is there; nothing to release */
            unpin_all(s, h, m);
            rec.n = 0;
            goto out;
        }
        irx_shadow_pin(s, irx_shadow_add(s, h[i], rp->stamp | IRX_FRESH));
        if (!mirrored) atomic_fetch_add(&ix->held, 1);
    }
    reserve(ix, r, &rec, reserve_blocks);
out:
    pthread_mutex_unlock(&rp->mu);
    return rec;
}

irx_rec irx_record_reserve(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n,
                           size_t reserve_blocks) {
    return record(ix, r, h, n, reserve_blocks, SIZE_MAX);
}

irx_rec irx_record_hit(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n,
                       size_t reserve_blocks, size_t hit_blocks) {
    return record(ix, r, h, n, reserve_blocks, hit_blocks);
}

void irx_undo(irx_index *ix, irx_rec rec, const ir_hash128 *h, size_t n) {
    if (rec.n == 0 || rec.replica >= ix->nrep) return;
    irx_replica *rp = &ix->rep[rec.replica];
    pthread_mutex_lock(&rp->mu);
    irx_shadow *s = &rp->sh;
    if (rp->epoch == rec.epoch) {
        size_t m = n < rec.n ? n : rec.n;
        end_dooms(rp, rec.stamp);
        s->nreserved -= rec.reserved;
        /* Deepest first, so that a reader never sees a child without its parent. */
        for (size_t i = m; i-- > 0;) {
            uint32_t k = irx_shadow_find(s, h[i]);
            if (k == IRX_NIL) continue;
            if (s->nodes[k].stamp == (rec.stamp | IRX_FRESH) && irx_node_pins(&s->nodes[k]) == 1)
                drop_node(ix, rec.replica, k);
            else
                irx_shadow_unpin(s, k);
        }
    }
    pthread_mutex_unlock(&rp->mu);
}

void irx_release(irx_index *ix, irx_rec rec, const ir_hash128 *h, size_t n, size_t extra_blocks) {
    if (rec.n == 0 || rec.replica >= ix->nrep) return;
    irx_replica *rp = &ix->rep[rec.replica];
    pthread_mutex_lock(&rp->mu);
    irx_shadow *s = &rp->sh;
    if (rp->epoch == rec.epoch) {
        end_dooms(rp, rec.stamp);
        /* The engine frees a sequence's blocks last-first to the free queue's
         * tail: its extra blocks first (the least recent of its blocks), then
         * the prompt's, deepest first. The reserved blocks are among the extra
         * ones. */
        s->nreserved -= rec.reserved;
        if (extra_blocks < rec.reserved) extra_blocks = rec.reserved;
        /* Past the capacity's worth, more extra blocks change nothing: every block
         * that is not pinned has gone for them (the count comes from the engine's
         * completion_tokens, which a misbehaving engine may make 10^18). */
        if (extra_blocks > s->cap) extra_blocks = s->cap;
        for (size_t i = 0; i < extra_blocks; i++) {
            if (s->count + s->nreserved == s->cap) {
                if (s->nlisted == 0) break;
                evict_tail(ix, rec.replica);
            }
            irx_shadow_add_anon(s);
        }
        unpin_all(s, h, n < rec.n ? n : rec.n);
    }
    pthread_mutex_unlock(&rp->mu);
}

size_t irx_correct(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n, size_t predicted,
                   size_t engine_cached) {
    if (r >= ix->nrep || engine_cached >= predicted) return 0;
    irx_replica *rp = &ix->rep[r];
    size_t evicted = 0, excess = predicted - engine_cached;
    pthread_mutex_lock(&rp->mu);
    irx_shadow *s = &rp->sh;
    if (s->cap && !rp->ev) {
        size_t m = n < s->cap ? n : s->cap;
        touch_present(s, h, m);
        /* The prompt's listed blocks are now the most recent: never evict them. */
        uint32_t keep = 0;
        for (size_t i = 0; i < m; i++) {
            uint32_t k = irx_shadow_find(s, h[i]);
            keep += k != IRX_NIL && irx_node_pins(&s->nodes[k]) == 0;
        }
        while (evicted < excess && s->nlisted > keep) {
            if (!irx_node_anon(&s->nodes[s->tail])) evicted++;
            evict_tail(ix, r);
        }
    }
    pthread_mutex_unlock(&rp->mu);
    return evicted;
}

/* ---- lookup --------------------------------------------------------------------- */

typedef struct lookup_ctx {
    irx_index *ix;
    const ir_hash128 *h;
    uint32_t *out;
    uint32_t nwords;
} lookup_ctx;

static void bits_of(const lookup_ctx *c, size_t i, uint64_t *w) {
    irx_map_bits(&c->ix->map, c->h[i], w);
}

static void assign(const lookup_ctx *c, const uint64_t *set, uint32_t depth) {
    for (uint32_t k = 0; k < c->nwords; k++)
        for (uint64_t b = set[k]; b; b &= b - 1)
            c->out[k * 64 + (uint32_t)__builtin_ctzll(b)] = depth;
}

/* Replicas in lo_set hold block lo; those in hi_set hold block hi (hi_set is a
 * subset of lo_set). Each replica in lo_set but not hi_set has its depth in
 * [lo + 1, hi]: bisect. Sets are clamped to stay nested, so a reader that
 * races a writer still gets a prefix the map held at some point. */
static void bisect(const lookup_ctx *c, size_t lo, size_t hi, const uint64_t *lo_set,
                   const uint64_t *hi_set) {
    uint64_t diff = 0, mid_set[IRX_WORDS], only[IRX_WORDS];
    for (uint32_t k = 0; k < c->nwords; k++) {
        only[k] = lo_set[k] & ~hi_set[k];
        diff |= only[k];
    }
    if (!diff) return;
    if (hi == lo + 1) {
        assign(c, only, (uint32_t)hi);
        return;
    }
    size_t mid = lo + (hi - lo) / 2;
    bits_of(c, mid, mid_set);
    for (uint32_t k = 0; k < c->nwords; k++) mid_set[k] = (mid_set[k] & lo_set[k]) | hi_set[k];
    bisect(c, lo, mid, lo_set, mid_set);
    bisect(c, mid, hi, mid_set, hi_set);
}

/* The lookahead: an event-fed replica's prefix stops before the blocks at its end
 * that its mirror has just evicted for a request on its way (index_internal.h).
 * The engine frees a prefix tail first, so the doomed blocks of a prefix are its
 * last ones: the walk goes back from the end and stops at the first block that
 * is not doomed. */
static void cut_doomed(irx_index *ix, const ir_hash128 *h, uint32_t *out) {
    uint64_t now = 0;
    for (uint32_t w = 0; w < ix->nwords; w++) {
        uint64_t b = atomic_load_explicit(&ix->doomed[w], memory_order_relaxed);
        for (; b; b &= b - 1) {
            uint32_t r = w * 64 + (uint32_t)__builtin_ctzll(b);
            irx_doom *d = atomic_load_explicit(&ix->rep[r].doom, memory_order_acquire);
            if (out[r] == 0 || !d) continue;
            if (!now) now = ir_now_ns();
            if (!irx_doom_live(d, now)) continue;
            while (out[r] > 0 && irx_doom_has(d, h[out[r] - 1].lo, now)) out[r]--;
        }
    }
}

void irx_lookup(irx_index *ix, const ir_hash128 *h, size_t n, uint32_t *out) {
    memset(out, 0, ix->nrep * sizeof *out);
    if (n == 0) return;
    lookup_ctx c = {ix, h, out, ix->nwords};
    uint64_t first[IRX_WORDS], last[IRX_WORDS], any = 0;
    irx_read_lock();
    bits_of(&c, 0, first);
    for (uint32_t k = 0; k < c.nwords; k++) any |= first[k];
    if (any) {
        if (n == 1) {
            assign(&c, first, 1);
        } else {
            bits_of(&c, n - 1, last);
            for (uint32_t k = 0; k < c.nwords; k++) last[k] &= first[k];
            assign(&c, last, (uint32_t)n);
            bisect(&c, 0, n - 1, first, last);
        }
    }
    irx_read_unlock();
    if (any) cut_doomed(ix, h, out);
}

/* ---- stats and checks ------------------------------------------------------------ */

void irx_stats_get(irx_index *ix, irx_stats *out) {
    out->entries = irx_map_entries(&ix->map);
    out->held = atomic_load(&ix->held);
    out->bytes = atomic_load(&ix->map.bytes) + atomic_load(&ix->cpu.bytes) +
                 atomic_load(&ix->shadow_bytes) + atomic_load(&ix->ev_bytes) +
                 atomic_load(&ix->doom_bytes) + sizeof *ix + ix->nrep * sizeof ix->rep[0];
    out->resets = atomic_load(&ix->resets);
}

static int check_replica(irx_index *ix, uint32_t r, uint64_t *held, char *err, size_t errlen) {
    irx_shadow *s = &ix->rep[r].sh;
    if (irx_shadow_check(s)) {
        snprintf(err, errlen, "replica %u: shadow table and LRU disagree", r);
        return -1;
    }
    if (mirror(&ix->rep[r])) return 0; /* the lookahead's mirror is not in the map */
    int rc = 0;
    uint64_t bits[IRX_WORDS];
    irx_read_lock();
    for (uint32_t j = 0; j < s->nslots && !rc; j++) { /* every hashed block, pinned or not */
        uint32_t i = irx_slot(s, j);
        if (i == IRX_NIL) continue;
        irx_map_bits(&ix->map, node_hash(s, i), bits);
        if (!(bits[r / 64] >> (r % 64) & 1)) {
            snprintf(err, errlen, "replica %u holds a block the map lacks", r);
            rc = -1;
        }
    }
    irx_read_unlock();
    *held += s->count - s->nanon;
    return rc;
}

int irx_check(irx_index *ix, char *err, size_t errlen) {
    uint64_t held = 0, bits = 0, entries = 0, evbits = 0, cpubits = 0;
    for (uint32_t r = 0; r < ix->nrep; r++) {
        if (check_replica(ix, r, &held, err, errlen)) return -1;
        if (ix->rep[r].ev && irx_evrep_check(ix->rep[r].ev)) {
            snprintf(err, errlen, "replica %u: event key table and nodes disagree", r);
            return -1;
        }
        if (ix->rep[r].ev) evbits += irx_evrep_bits(ix->rep[r].ev);
        if (ix->rep[r].ev) cpubits += irx_evrep_cpu_bits(ix->rep[r].ev);
    }
    uint64_t cbits = 0, centries = 0;
    irx_map_census(&ix->cpu, &centries, &cbits);
    if (cbits != cpubits || cbits != atomic_load(&ix->cpu_bits)) {
        snprintf(err, errlen, "the CPU map has %llu bits; event replicas count %llu",
                 (unsigned long long)cbits, (unsigned long long)cpubits);
        return -1;
    }
    /* Every bit in the map is one held block: equal totals and the inclusion
     * above make the map the union of the shadows, exactly. */
    irx_map_census(&ix->map, &entries, &bits);
    if (bits != held + evbits || entries != irx_map_entries(&ix->map) ||
        held != atomic_load(&ix->held) || evbits != atomic_load(&ix->ev_bits)) {
        snprintf(err, errlen,
                 "map has %llu bits in %llu entries; shadows hold %llu blocks, events %llu",
                 (unsigned long long)bits, (unsigned long long)entries, (unsigned long long)held,
                 (unsigned long long)evbits);
        return -1;
    }
    return 0;
}
