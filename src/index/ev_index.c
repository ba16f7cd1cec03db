/* ev_index.c: a replica tracked exactly, from its engine's KV events.
 *
 * Each block the engine reports is a node: its engine key (the low 64 bits of
 * an opaque digest), its own gateway hash (recomputed from its token ids,
 * chained from its parent's and grandparent's gateway hashes, or the root:
 * ir_block_chain_under), its parent, children
 * and tiers. A node is *attached* when it is on the GPU and so are all its
 * ancestors: exactly the blocks an engine's prefix lookup can hit. Attached
 * nodes set replica r's bit in the shared map under their gateway hash, so
 * irx_lookup sees r's GPU cache as the engine would hit it, prefix-closed as
 * the bisection needs. Two engine blocks can share one gateway hash (the engine
 * salts something the gateway does not): the first to attach sets the bit, each
 * further one counts in `dups`, and a detach takes a dup before it clears the
 * bit (dups is empty, and costs nothing, in the common case).
 *
 * A removed block that still has children stays as a placeholder (no tier), so
 * that its children keep their parent's hash and reattach when it comes back.
 * Blocks whose parent is unknown (their chain began before anything seen) are
 * orphans: they cannot be placed; their engine keys are kept so that their
 * removal ends the partial view.
 *
 * Layout (ADR 0014): nodes are 40 bytes in a pool, found through a table of
 * 8-byte slots (the key's high 32 bits beside the node number), so a probe
 * reads nodes only on a 32-bit match and the table, a fifth of the pool's
 * size, stays in cache. A batch is applied as a pipeline: while block b is
 * applied, the key slots of b + 12, the node of b + 8 and the map slot of b + 4
 * are prefetched, so the cache misses of a dozen blocks overlap. The lookahead
 * only prefetches and stashes hashes that the apply step checks: it never
 * changes the index.
 *
 * Everything here runs under replica r's lock (index.c's lock order: replica,
 * then map shard). Readers only see the map. */
#include <stdlib.h>
#include <string.h>

#include "index/index_internal.h"
#include "index/ir_index.h"

#define NIL         0x3ffffffu /* node numbers are 26 bits (sprev shares a word with flags) */
#define MAX_NODES   NIL        /* per replica: about 4 GiB of engine cache at 16 tokens */
#define MAX_ORPHANS (1u << 24)
#define GPU         1u
#define CPU         2u
#define ATTACHED    4u
#define NOBIT       8u  /* attached, but its bit could not be counted (OOM): leaves nothing */
#define CPUBIT      16u /* its bit is set in the CPU map (held, and not attached) */

#define MIN_NODES 1024u
#ifndef MAX_LOAD
#define MAX_LOAD 0.7 /* of the key table, before it grows by half (ADR 0014) */
#endif

typedef struct evnode {
    uint64_t ekey; /* the engine key's low 64 bits */
    ir_hash128 gkey;
    uint32_t parent, child, sib; /* tree links: first child, next sibling */
    uint32_t sprev : 26;         /* previous sibling */
    uint32_t flags : 6;
} evnode;
_Static_assert(sizeof(evnode) == 40, "an event node is 40 bytes (ADR 0014)");

struct irx_evrep {
    char *model;
    ir_hash128 root; /* ir_block_hash_root(model, NULL, NULL) */
    uint32_t block_size;
    evnode *nodes;
    uint32_t nnodes, cap, free;      /* nnodes: taken since the last clear; free: a list via .sib */
    uint32_t touched;                /* nodes whose memory was ever written (nnodes' high mark) */
    uint64_t *slots;                 /* key table: (ekey >> 32) << 32 | (node + 1); 0 is empty */
    uint32_t nslots, nkeys, grow_at; /* grow_at: MAX_LOAD of nslots */
    ir_map dups;             /* gateway hash (low 64 bits) -> attached nodes beyond the first */
    uint64_t bits;           /* bits set in the shared map */
    uint64_t cpubits;        /* nodes with CPUBIT */
    int64_t dbits, dcpubits; /* changes to bits and cpubits not yet added to the index's sums */
    ir_map orphans;          /* engine keys (low 64 bits) of orphan blocks */
    uint64_t unseen;         /* irx_ev_unseen: GPU blocks held unseen, at most */
    uint32_t *stack;         /* tree walks */
    uint32_t nstack, stackcap;
    uint64_t gpu, cpu, live;
    uint64_t max_live; /* irx_evrep_set_limit: blocks held at most (an engine that never
                        * removes cannot take the gateway's memory) */
};

/* ---- bookkeeping ----------------------------------------------------------------- */

static size_t evrep_bytes(const irx_evrep *e) {
    /* The pool's pages past `touched` were never written (nodes are taken in order,
     * and a grow copies the nodes taken only), so they hold no memory. */
    return sizeof *e + (size_t)e->touched * sizeof(evnode) + (size_t)e->nslots * sizeof(uint64_t) +
           ir_map_bytes(&e->dups) + ir_map_bytes(&e->orphans) + e->stackcap * sizeof(uint32_t);
}

/* Adds the changes to r's bit counts to the index's sums: once a batch, not once a
 * block (each is a locked instruction). */
static void flush_bits(irx_index *ix, irx_evrep *e) {
    if (e->dbits) atomic_fetch_add(&ix->ev_bits, (uint64_t)e->dbits);
    if (e->dcpubits) atomic_fetch_add(&ix->cpu_bits, (uint64_t)e->dcpubits);
    e->dbits = e->dcpubits = 0;
}

static void account(irx_index *ix, irx_evrep *e, size_t before) {
    size_t after = evrep_bytes(e);
    if (after != before) {
        atomic_fetch_add(&ix->ev_bytes, after);
        atomic_fetch_sub(&ix->ev_bytes, before);
    }
    flush_bits(ix, e);
}

uint64_t irx_evrep_bits(const irx_evrep *e) {
    return e->bits;
}
uint64_t irx_evrep_cpu_bits(const irx_evrep *e) {
    return e->cpubits;
}

/* ---- the key table: open addressing, linear probing, backward-shift deletion ------ */

static uint32_t kt_home(const irx_evrep *e, uint32_t fp) {
    return (uint32_t)(((uint64_t)fp * e->nslots) >> 32); /* fp is uniform: no modulo */
}
static uint32_t kt_next(const irx_evrep *e, uint32_t j) {
    return j + 1 == e->nslots ? 0 : j + 1;
}
static uint32_t fp_of(uint64_t key) {
    return (uint32_t)(key >> 32);
}
static uint32_t slot_node(uint64_t s) {
    return (uint32_t)s - 1u;
}

static void kt_prefetch(const irx_evrep *e, uint64_t key) {
    if (e->nslots) __builtin_prefetch(&e->slots[kt_home(e, fp_of(key))], 1);
}

/* The slot holding key, or the empty slot where it would go. */
static uint32_t kt_probe(const irx_evrep *e, uint64_t key) {
    uint32_t fp = fp_of(key);
    for (uint32_t j = kt_home(e, fp);; j = kt_next(e, j)) {
        uint64_t s = e->slots[j];
        if (s == 0) return j;
        if ((uint32_t)(s >> 32) == fp && e->nodes[slot_node(s)].ekey == key) return j;
    }
}

static uint32_t find(const irx_evrep *e, uint64_t key) {
    if (!e->nslots) return NIL;
    uint64_t s = e->slots[kt_probe(e, key)];
    return s ? slot_node(s) : NIL;
}

/* The first slot that matches key's high 32 bits, NIL if none: a probe that reads no
 * node (the lookahead prefetches the node that the slot gives). */
static uint32_t kt_candidate(const irx_evrep *e, uint64_t key) {
    if (!e->nslots) return NIL;
    uint32_t fp = fp_of(key);
    for (uint32_t j = kt_home(e, fp);; j = kt_next(e, j)) {
        uint64_t s = e->slots[j];
        if (s == 0) return NIL;
        if ((uint32_t)(s >> 32) == fp) return j;
    }
}

/* find, trying slot `hint` (the lookahead's kt_candidate, perhaps stale) first; the
 * key's slot in *at. */
IR_INLINE uint32_t find_at(const irx_evrep *e, uint64_t key, uint32_t hint, uint32_t *at) {
    if (!e->nslots) return NIL;
    uint32_t j = hint;
    uint64_t s = hint < e->nslots ? e->slots[hint] : 0;
    if (!s || (uint32_t)(s >> 32) != fp_of(key) || e->nodes[slot_node(s)].ekey != key) {
        j = kt_probe(e, key);
        s = e->slots[j];
    }
    *at = j;
    return s ? slot_node(s) : NIL;
}

static int kt_grow(irx_evrep *e) {
    uint64_t n = (uint64_t)e->nslots + e->nslots / 2;
    if (n < 2 * MIN_NODES) n = 2 * MIN_NODES;
    if (n > UINT32_MAX) return -1;
    uint64_t *fresh = ir_big_calloc(n * sizeof *fresh), *old = e->slots;
    if (!fresh) return -1;
    uint32_t oldn = e->nslots;
    e->slots = fresh, e->nslots = (uint32_t)n;
    e->grow_at = (uint32_t)((double)n * MAX_LOAD);
    for (uint32_t i = 0; i < oldn; i++) {
        if (!old[i]) continue;
        uint32_t j = kt_home(e, (uint32_t)(old[i] >> 32));
        while (fresh[j]) j = kt_next(e, j);
        fresh[j] = old[i];
    }
    ir_big_free(old);
    return 0;
}

/* Empties slot hole (a key's), moving up the entries after it that may fill it. */
static void kt_delete_at(irx_evrep *e, uint32_t hole) {
    for (uint32_t j = kt_next(e, hole);; j = kt_next(e, j)) {
        uint64_t s = e->slots[j];
        if (!s) break;
        uint32_t want = kt_home(e, (uint32_t)(s >> 32));
        /* s may fill the hole when its home is not in (hole, j], cyclically. */
        bool stays = hole <= j ? (want > hole && want <= j) : (want > hole || want <= j);
        if (stays) continue;
        e->slots[hole] = s;
        hole = j;
    }
    e->slots[hole] = 0;
    e->nkeys--;
}

static void kt_delete(irx_evrep *e, uint64_t key) {
    uint32_t j = kt_probe(e, key);
    if (e->slots[j]) kt_delete_at(e, j);
}

/* ---- the CPU map and the GPU map's bits ---------------------------------------------- */

/* Node n's bit in the CPU map follows its state: held in a tier and not attached.
 * (Two nodes with one gateway hash share the bit; the first to go clears it: a CPU
 * hit can be under-counted then, never over-counted.) */
static void __attribute__((noinline))
cpu_flip(irx_index *ix, uint32_t r, irx_evrep *e, evnode *n, bool want) {
    if (want) {
        bool was;
        /* OOM, or another node with this gateway hash holds the bit: not counted. */
        if (irx_map_add_bit(&ix->cpu, n->gkey, r, &was) || was) return;
        n->flags |= CPUBIT;
        e->cpubits++, e->dcpubits++;
    } else {
        irx_map_remove(&ix->cpu, n->gkey, r);
        n->flags &= ~CPUBIT;
        e->cpubits--, e->dcpubits--;
    }
}

static inline void cpu_sync(irx_index *ix, uint32_t r, irx_evrep *e, evnode *n) {
    uint32_t f = n->flags;
    bool want = (f & (GPU | CPU)) && !(f & ATTACHED);
    if (want != ((f & CPUBIT) != 0)) cpu_flip(ix, r, e, n, want);
}

IR_INLINE void bit_on(irx_index *ix, uint32_t r, irx_evrep *e, evnode *n) {
    bool was;
    if (irx_map_add_bit(&ix->map, n->gkey, r, &was)) { /* OOM: the block stays invisible */
        n->flags |= NOBIT;
        return;
    }
    if (!was) {
        e->bits++, e->dbits++;
        return;
    }
    uint64_t c = 0, lo = n->gkey.lo;
    ir_map_get(&e->dups, &lo, sizeof lo, &c);
    if (ir_map_put(&e->dups, &lo, sizeof lo, c + 1)) n->flags |= NOBIT;
}

IR_INLINE void bit_off(irx_index *ix, uint32_t r, irx_evrep *e, evnode *n) {
    if (n->flags & NOBIT) {
        n->flags &= ~NOBIT;
        return;
    }
    uint64_t c = 0, lo = n->gkey.lo;
    if (ir_map_count(&e->dups) && ir_map_get(&e->dups, &lo, sizeof lo, &c)) {
        if (c > 1)
            ir_map_put(&e->dups, &lo, sizeof lo, c - 1); /* an existing key */
        else
            ir_map_del(&e->dups, &lo, sizeof lo);
        return;
    }
    irx_map_remove(&ix->map, n->gkey, r);
    e->bits--, e->dbits--;
}

/* ---- the tree ---------------------------------------------------------------------- */

static int push(irx_evrep *e, uint32_t k) {
    if (e->nstack == e->stackcap) {
        uint32_t nc = e->stackcap ? e->stackcap * 2 : 256;
        uint32_t *ns = realloc(e->stack, nc * sizeof *ns);
        if (!ns) return -1;
        e->stack = ns, e->stackcap = nc;
    }
    e->stack[e->nstack++] = k;
    return 0;
}

/* Attaches k (on the GPU, its parent attached or none) and, parents first, every
 * descendant on the GPU that was waiting for it. */
static void attach(irx_index *ix, uint32_t r, irx_evrep *e, uint32_t k) {
    evnode *leaf = &e->nodes[k];
    if (leaf->child == NIL) { /* a block stored at the end of its chain: no walk */
        if ((leaf->flags & (GPU | ATTACHED)) != GPU) return;
        leaf->flags |= ATTACHED;
        bit_on(ix, r, e, leaf);
        cpu_sync(ix, r, e, leaf);
        return;
    }
    e->nstack = 0;
    if (push(e, k)) return;
    while (e->nstack) {
        uint32_t i = e->stack[--e->nstack];
        evnode *n = &e->nodes[i];
        if ((n->flags & (GPU | ATTACHED)) != GPU) continue;
        n->flags |= ATTACHED;
        bit_on(ix, r, e, n);
        cpu_sync(ix, r, e, n);
        for (uint32_t c = n->child; c != NIL; c = e->nodes[c].sib)
            if (push(e, c)) return;
    }
}

/* Undoes one node's attachment. */
static void unattach(irx_index *ix, uint32_t r, irx_evrep *e, evnode *n) {
    n->flags &= ~ATTACHED;
    bit_off(ix, r, e, n);
    cpu_sync(ix, r, e, n);
}

/* Detaches k and every attached descendant, deepest first, so that a lookup
 * never sees a child without its parent. */
static void detach(irx_index *ix, uint32_t r, irx_evrep *e, uint32_t k) {
    if (!(e->nodes[k].flags & ATTACHED)) return;
    e->nstack = 0;
    if (e->nodes[k].child == NIL || push(e, k)) { /* a leaf (or OOM: at least k itself) */
        unattach(ix, r, e, &e->nodes[k]);
        return;
    }
    /* Preorder into the stack (attached nodes only), then undo it in reverse. */
    for (uint32_t at = 0; at < e->nstack; at++) {
        const evnode *n = &e->nodes[e->stack[at]];
        for (uint32_t c = n->child; c != NIL; c = e->nodes[c].sib)
            if ((e->nodes[c].flags & ATTACHED) && push(e, c)) break;
    }
    for (uint32_t at = e->nstack; at-- > 0;) unattach(ix, r, e, &e->nodes[e->stack[at]]);
}

/* ---- nodes --------------------------------------------------------------------------- */

/* A node number to give out: the free list's first, or a fresh one. NIL at the cap or OOM. */
static uint32_t spare(irx_evrep *e) {
    if (e->free != NIL) return e->free;
    if (e->nnodes == e->cap) {
        if (e->cap >= MAX_NODES) return NIL;
        uint64_t nc = e->cap ? (uint64_t)e->cap + e->cap / 2 : MIN_NODES;
        if (nc > MAX_NODES) nc = MAX_NODES;
        /* Only the nodes taken are copied: the rest of the new pool stays untouched. */
        evnode *nn = ir_big_grow(e->nodes, (size_t)e->nnodes * sizeof *nn, (size_t)nc * sizeof *nn);
        if (!nn) return NIL;
        e->nodes = nn, e->cap = (uint32_t)nc, e->touched = e->nnodes;
    }
    uint32_t k = e->nnodes++;
    if (e->nnodes > e->touched) e->touched = e->nnodes;
    e->nodes[k].sib = NIL;
    e->free = k;
    return k;
}

/* The node of engine key ekey, made (with gkey, under parent) when it is new: one
 * probe of the key table either way. NIL at the cap or OOM. */
static uint32_t node_get(irx_evrep *e, uint64_t ekey, ir_hash128 gkey, uint32_t parent) {
    if (e->nkeys + 1 > e->grow_at && kt_grow(e)) return find(e, ekey);
    uint32_t j = kt_probe(e, ekey);
    if (e->slots[j]) return slot_node(e->slots[j]); /* known */
    if (e->live >= e->max_live) return NIL;
    uint32_t k = spare(e);
    if (k == NIL) return NIL;
    e->free = e->nodes[k].sib;
    e->slots[j] = (uint64_t)fp_of(ekey) << 32 | (k + 1u);
    e->nkeys++;
    evnode *n = &e->nodes[k];
    *n = (evnode){.ekey = ekey, .gkey = gkey, .parent = parent, .child = NIL, .sib = NIL};
    n->sprev = NIL;
    if (parent != NIL) {
        evnode *p = &e->nodes[parent];
        n->sib = p->child;
        if (p->child != NIL) e->nodes[p->child].sprev = k;
        p->child = k;
    }
    e->live++;
    return k;
}

static void unlink_child(irx_evrep *e, uint32_t k) {
    evnode *n = &e->nodes[k];
    if (n->sprev != NIL)
        e->nodes[n->sprev].sib = n->sib;
    else if (n->parent != NIL)
        e->nodes[n->parent].child = n->sib;
    if (n->sib != NIL) e->nodes[n->sib].sprev = n->sprev;
}

/* Frees k if it holds no tier and no children, then its parent likewise. k's key is
 * in slot at. */
static void collect(irx_evrep *e, uint32_t k, uint32_t at) {
    for (bool first = true; k != NIL; first = false) {
        evnode *n = &e->nodes[k];
        if ((n->flags & (GPU | CPU)) || n->child != NIL) return;
        uint32_t parent = n->parent;
        unlink_child(e, k);
        if (first)
            kt_delete_at(e, at);
        else
            kt_delete(e, n->ekey);
        n->sib = e->free;
        n->flags = 0;
        e->free = k;
        e->live--;
        k = parent;
    }
}

/* Gives node k the tier `t`. */
IR_INLINE void tier_on(irx_index *ix, uint32_t r, irx_evrep *e, uint32_t k, uint32_t t) {
    evnode *n = &e->nodes[k];
    if (n->flags & t) return;
    n->flags |= t;
    if (t == CPU) {
        e->cpu++;
        cpu_sync(ix, r, e, n);
        return;
    }
    e->gpu++;
    uint32_t p = n->parent;
    if (p == NIL || (e->nodes[p].flags & ATTACHED))
        attach(ix, r, e, k);
    else
        cpu_sync(ix, r, e, n); /* on the GPU below a block that is not: a CPU-hit block */
}

/* Takes tier t from node k, whose key is in slot at. */
static void tier_off(irx_index *ix, uint32_t r, irx_evrep *e, uint32_t k, uint32_t at, uint32_t t) {
    evnode *n = &e->nodes[k];
    if (!(n->flags & t)) return;
    /* The tier goes first, so that detach's cpu_sync sees the node as it ends: a block
     * leaving the GPU does not pass through the CPU map on its way out. */
    n->flags &= ~t;
    if (t == GPU) {
        detach(ix, r, e, k);
        e->gpu--;
        ix->rep[r].wrapped = true; /* the lookahead's mirror: see irx_mirror_gone */
        if (ix->rep[r].sh.count) irx_mirror_gone(ix, r, n->gkey);
    } else {
        e->cpu--;
    }
    cpu_sync(ix, r, e, n);
    collect(e, k, at);
}

/* ---- the lookahead: prefetches for the blocks ahead of the one being applied -------- */

/* The lookahead's steps run once per block: always inlined (as the hot helpers of
 * map.c and ev_shapes.c are), so that a step costs no call. */

/* How far ahead of the block being applied each stage runs, in blocks of the batch.
 * Each stage needs what the one before it brought into the cache. */
#ifndef AHEAD_KEY      /* (-D for experiments) */
#define AHEAD_KEY  12u /* the key slot (and a stored head's parent's) */
#define AHEAD_NODE 8u  /* the node: a removed block's, a stored head's parent */
#define AHEAD_MAP  4u  /* a stored block's hash (stashed), and its map slot */
#define RING       16u /* > AHEAD_KEY, a power of two */
#endif

typedef struct stage_slot { /* one block of the batch in the lookahead's ring */
    const irx_ev *ev;
    uint32_t i;     /* block i of ev */
    uint32_t kslot; /* AHEAD_NODE's guess of the key slot: a removed block's, a stored head's
                     * parent's (NIL: none) */
    bool has_g;     /* AHEAD_MAP hashed this stored block (engine key ekey) */
    uint64_t ekey;  /* from chain pc (its parent's and grandparent's hashes) to its own hash g */
    ir_block_chain pc;
    ir_hash128 g;
} stage_slot;

typedef struct pipe {
    const irx_ev *ev;
    size_t nev, fj; /* the feeder: event fj, block fi goes into the ring next */
    uint32_t fi;
    uint64_t fed, seq; /* blocks fed into the ring; the block being applied */
    stage_slot ring[RING];
} pipe;

static bool has_blocks(const irx_ev *ev) {
    return ev->type == IRX_EV_STORED || ev->type == IRX_EV_REMOVED;
}

static uint32_t tier_of(irx_medium m) {
    return m == IRX_MEDIUM_CPU ? CPU : m == IRX_MEDIUM_GPU ? GPU : 0;
}
/* A BlockStored that can be placed: a tier, and whole blocks of the index's size. */
static bool stored_ok(const irx_evrep *e, const irx_ev *ev) {
    return tier_of(ev->medium) && ev->block_size == e->block_size &&
           (uint64_t)ev->nblocks * ev->block_size == ev->ntokens;
}

/* Skips the feeder to a block (past events without any); fj == nev at the end. */
IR_INLINE void feeder_settle(pipe *p) {
    while (p->fj < p->nev && (!has_blocks(&p->ev[p->fj]) || p->fi >= p->ev[p->fj].nblocks))
        p->fj++, p->fi = 0;
}

/* The next block enters the ring, and its key slot (and a head's parent's) is fetched. */
IR_INLINE void ahead_key(const irx_evrep *e, pipe *p) {
    const irx_ev *ev = &p->ev[p->fj];
    stage_slot *s = &p->ring[p->fed++ % RING];
    s->ev = ev, s->i = p->fi;
    kt_prefetch(e, ev->blocks[p->fi].lo);
    if (p->fi == 0 && ev->type == IRX_EV_STORED && ev->has_parent) kt_prefetch(e, ev->parent.lo);
    if (++p->fi < ev->nblocks) return; /* the same event's next block */
    p->fj++, p->fi = 0;
    feeder_settle(p);
}

IR_INLINE void ahead_node(const irx_evrep *e, stage_slot *s) {
    uint32_t j = NIL;
    if (s->ev->type == IRX_EV_REMOVED)
        j = kt_candidate(e, s->ev->blocks[s->i].lo);
    else if (s->i == 0 && s->ev->has_parent)
        j = kt_candidate(e, s->ev->parent.lo);
    if (j != NIL) __builtin_prefetch(&e->nodes[slot_node(e->slots[j])], 1);
    s->kslot = j;
}

/* The node the lookahead found for s (NIL if none, or gone meanwhile). */
static uint32_t ahead_found(const irx_evrep *e, const stage_slot *s) {
    uint64_t v = s->kslot < e->nslots ? e->slots[s->kslot] : 0;
    return v && slot_node(v) < e->nnodes ? slot_node(v) : NIL;
}

/* The chain of node k's children: its hash and its parent's (ir_block_chain_under). */
static ir_block_chain child_chain(const irx_evrep *e, uint32_t k) {
    const evnode *n = &e->nodes[k];
    return ir_block_chain_under(e->root, n->parent != NIL ? &e->nodes[n->parent].gkey : NULL,
                                &n->gkey);
}

static bool chain_eq(ir_block_chain a, ir_block_chain b) {
    return ir_hash128_eq(a.one, b.one) && ir_hash128_eq(a.two, b.two);
}

/* The chain a stored block will hash under, as far as the lookahead can tell (the
 * apply step checks it): past the block before it, when that is the parent (same
 * event, or stored earlier in this batch and not applied yet), else its parent's
 * node's children's, else the root's. */
static bool ahead_parent(const irx_evrep *e, const stage_slot *s, const stage_slot *prev,
                         ir_block_chain *pc) {
    const irx_ev *ev = s->ev;
    if (s->i > 0 || (ev->has_parent && prev->has_g && prev->ekey == ev->parent.lo)) {
        if (prev->has_g) *pc = (ir_block_chain){.two = prev->pc.one, .one = prev->g};
        return prev->has_g;
    }
    if (!ev->has_parent) {
        *pc = ir_block_chain_at(e->root, NULL, 0);
        return !ev->lora_name && !ev->cache_salt;
    }
    uint32_t k = ahead_found(e, s);
    if (k == NIL || e->nodes[k].ekey != ev->parent.lo) return false;
    *pc = child_chain(e, k);
    return true;
}

IR_INLINE void ahead_map(irx_index *ix, const irx_evrep *e, stage_slot *s, const stage_slot *prev) {
    const irx_ev *ev = s->ev;
    s->has_g = false;
    if (ev->type == IRX_EV_REMOVED) {
        uint32_t k = ahead_found(e, s);
        if (k == NIL) return;
        const evnode *n = &e->nodes[k];
        irx_map_prefetch(&ix->map, n->gkey);
        if (n->parent != NIL) __builtin_prefetch(&e->nodes[n->parent], 1); /* unlinked next */
        return;
    }
    if (!stored_ok(e, ev) || !ahead_parent(e, s, prev, &s->pc)) return;
    ir_block_chain c = s->pc;
    s->g = ir_block_hash_next(&c, ev->tokens + (size_t)s->i * ev->block_size, ev->block_size);
    s->ekey = ev->blocks[s->i].lo;
    s->has_g = true;
    irx_map_prefetch(&ix->map, s->g);
}

IR_INLINE void stage_node(const irx_evrep *e, pipe *p, uint64_t q) {
    if (q < p->fed) ahead_node(e, &p->ring[q % RING]);
}
IR_INLINE void stage_map(irx_index *ix, const irx_evrep *e, pipe *p, uint64_t q) {
    if (q < p->fed) ahead_map(ix, e, &p->ring[q % RING], &p->ring[(q - 1) % RING]);
}

static void pipe_init(irx_index *ix, const irx_evrep *e, pipe *p, const irx_ev *ev, size_t nev) {
    p->ev = ev, p->nev = nev, p->fj = 0, p->fi = 0, p->fed = 0, p->seq = 0;
    p->ring[RING - 1].has_g = false; /* the "previous block" of the first */
    feeder_settle(p);
    for (uint32_t b = 0; b < AHEAD_KEY && p->fj < nev; b++) ahead_key(e, p);
    for (uint64_t q = 0; q < AHEAD_NODE; q++) stage_node(e, p, q);
    for (uint64_t q = 0; q < AHEAD_MAP; q++) stage_map(ix, e, p, q);
}

/* Called once per block of the batch, in order, applied or not: runs every stage one
 * block further and returns the ring slot of the block now applied. */
IR_INLINE const stage_slot *pipe_step(irx_index *ix, const irx_evrep *e, pipe *p) {
    if (p->fj < p->nev) ahead_key(e, p);
    stage_node(e, p, p->seq + AHEAD_NODE);
    stage_map(ix, e, p, p->seq + AHEAD_MAP);
    return &p->ring[p->seq++ % RING];
}

/* ---- events ----------------------------------------------------------------------------- */

typedef struct chain { /* a BlockStored being applied */
    bool ok;           /* false: the rest of its blocks are skipped */
    uint32_t t, parent;
    ir_block_chain c; /* the next block's: its parent's and grandparent's hashes (or the root) */
} chain;

static void orphan(irx_evrep *e, const irx_ev *ev, irx_ev_counts *c) {
    for (uint32_t i = 0; i < ev->nblocks; i++)
        if (ir_map_count(&e->orphans) < MAX_ORPHANS)
            ir_map_put(&e->orphans, &ev->blocks[i].lo, sizeof ev->blocks[i].lo, 1);
    c->orphans += ev->nblocks;
}

static bool orphan_gone(irx_evrep *e, uint64_t key) {
    return ir_map_count(&e->orphans) && ir_map_del(&e->orphans, &key, sizeof key);
}

/* A copy into another tier that names its blocks only (vLLM's OffloadingConnector:
 * no parent, no token ids, block_size the offloaded block's or 0). */
static bool is_copy(const irx_ev *ev) {
    uint32_t t = tier_of(ev->medium);
    return t != 0 && t != GPU && ev->ntokens == 0 && !ev->has_parent && ev->nblocks;
}

/* A copy: each block the index knows gains the tier; one it never saw cannot be placed
 * (an orphan). Offloaded blocks larger than the engine's (block_size a multiple of it)
 * are refused: their keys name only the last engine block of each. */
static void stored_copy(irx_index *ix, uint32_t r, irx_evrep *e, const irx_ev *ev, pipe *p,
                        irx_ev_counts *c) {
    bool ok = ev->block_size == 0 || ev->block_size == e->block_size;
    if (!ok) c->refused++;
    for (uint32_t i = 0; i < ev->nblocks; i++) {
        pipe_step(ix, e, p);
        if (!ok) continue;
        uint32_t k = find(e, ev->blocks[i].lo);
        if (k == NIL) {
            irx_ev one = *ev;
            one.blocks = &ev->blocks[i], one.nblocks = 1;
            orphan(e, &one, c);
            continue;
        }
        tier_on(ix, r, e, k, tier_of(ev->medium));
        c->stored++;
    }
}

static chain stored_start(irx_evrep *e, const irx_ev *ev, const stage_slot *s, irx_ev_counts *c) {
    chain ch = {.ok = false, .t = tier_of(ev->medium), .parent = NIL};
    if (!stored_ok(e, ev)) {
        c->refused++;
        return ch;
    }
    if (ev->has_parent) {
        uint32_t at;
        ch.parent = find_at(e, ev->parent.lo, s->kslot, &at);
        if (ch.parent == NIL) {
            orphan(e, ev, c);
            return ch;
        }
        ch.c = child_chain(e, ch.parent);
    } else if (!ev->lora_name && !ev->cache_salt) {
        ch.c = ir_block_chain_at(e->root, NULL, 0);
    } else {
        ch.c =
            ir_block_chain_at(ir_block_hash_root(e->model, ev->lora_name, ev->cache_salt), NULL, 0);
    }
    ch.ok = true;
    return ch;
}

static void stored_block(irx_index *ix, uint32_t r, irx_evrep *e, const irx_ev *ev, uint32_t i,
                         const stage_slot *s, chain *ch, irx_ev_counts *c) {
    ir_block_chain next = ch->c;
    ir_hash128 g =
        s->has_g && chain_eq(s->pc, ch->c)
            ? s->g
            : ir_block_hash_next(&next, ev->tokens + (size_t)i * ev->block_size, ev->block_size);
    uint32_t k = node_get(e, ev->blocks[i].lo, g, ch->parent);
    if (k == NIL) { /* the cap or OOM: the rest of the chain cannot be placed */
        c->refused++;
        ch->ok = false;
        return;
    }
    orphan_gone(e, ev->blocks[i].lo);
    tier_on(ix, r, e, k, ch->t);
    c->stored++;
    /* A known block keeps the hash it was placed with (and its parent); under the
     * chain's parent, its children's chain is that parent's hash and its own. */
    const evnode *n = &e->nodes[k];
    ch->c = n->parent == ch->parent ? (ir_block_chain){.two = ch->c.one, .one = n->gkey}
                                    : child_chain(e, k);
    ch->parent = k;
}

static void stored(irx_index *ix, uint32_t r, irx_evrep *e, const irx_ev *ev, pipe *p,
                   irx_ev_counts *c) {
    if (is_copy(ev)) {
        stored_copy(ix, r, e, ev, p, c);
        return;
    }
    chain ch = {.ok = false};
    if (ev->nblocks == 0) { /* not in the lookahead's ring: counted all the same */
        const stage_slot none = {.kslot = NIL};
        stored_start(e, ev, &none, c);
        return;
    }
    for (uint32_t i = 0; i < ev->nblocks; i++) {
        const stage_slot *s = pipe_step(ix, e, p);
        if (i == 0) ch = stored_start(e, ev, s, c);
        if (ch.ok) stored_block(ix, r, e, ev, i, s, &ch, c);
    }
}

static void removed(irx_index *ix, uint32_t r, irx_evrep *e, const irx_ev *ev, pipe *p,
                    irx_ev_counts *c) {
    uint32_t t = tier_of(ev->medium);
    for (uint32_t i = 0; i < ev->nblocks; i++) {
        const stage_slot *s = pipe_step(ix, e, p);
        uint32_t at, k = find_at(e, ev->blocks[i].lo, s->kslot, &at);
        if (k == NIL) { /* an orphan, else a block stored before the view began */
            if (!orphan_gone(e, ev->blocks[i].lo) && t == GPU && e->unseen) e->unseen--;
            continue;
        }
        if (t) tier_off(ix, r, e, k, at, t);
        c->removed++;
    }
}

static void apply_all(irx_index *ix, uint32_t r, irx_evrep *e, const irx_ev *ev, size_t nev,
                      irx_ev_counts *c) {
    pipe p;
    pipe_init(ix, e, &p, ev, nev);
    for (size_t j = 0; j < nev; j++) {
        if (ev[j].type == IRX_EV_STORED)
            stored(ix, r, e, &ev[j], &p, c);
        else if (ev[j].type == IRX_EV_REMOVED)
            removed(ix, r, e, &ev[j], &p, c);
        else if (ev[j].type == IRX_EV_CLEARED)
            irx_evrep_clear(ix, r), c->cleared++;
    }
}

void irx_evrep_clear(irx_index *ix, uint32_t r) {
    atomic_store_explicit(&ix->rep[r].cleared_ns, ir_now_ns(), memory_order_relaxed);
    irx_replica_drop(ix, r); /* the lookahead's mirror and dooms, and records in flight */
    irx_evrep *e = ix->rep[r].ev;
    /* Every bit goes (a duplicate's second removal finds it gone: a no-op). */
    for (uint32_t k = 0; k < e->nnodes; k++) {
        if ((e->nodes[k].flags & (ATTACHED | NOBIT)) == ATTACHED)
            irx_map_remove(&ix->map, e->nodes[k].gkey, r);
        if (e->nodes[k].flags & CPUBIT) irx_map_remove(&ix->cpu, e->nodes[k].gkey, r);
    }
    e->dbits -= (int64_t)e->bits, e->dcpubits -= (int64_t)e->cpubits;
    flush_bits(ix, e);
    e->bits = e->cpubits = 0;
    ir_map_clear(&e->dups);
    ir_map_clear(&e->orphans);
    e->unseen = 0; /* the engine's cache is empty */
    if (e->nslots) memset(e->slots, 0, (size_t)e->nslots * sizeof *e->slots);
    e->nkeys = 0;
    e->nnodes = 0, e->free = NIL, e->gpu = e->cpu = e->live = 0; /* the memory stays */
}

/* Key table and pool agree: every live node is found under its key. */
int irx_evrep_check(const irx_evrep *e) {
    uint64_t live = 0;
    for (uint32_t k = 0; k < e->nnodes; k++) {
        const evnode *n = &e->nodes[k];
        if (find(e, n->ekey) != k) continue; /* a free node */
        live++;
        if (n->parent != NIL && e->nodes[n->parent].child == NIL) return -1;
        if (!(n->flags & (GPU | CPU)) && n->child == NIL) return -1; /* should be collected */
    }
    return live == e->live && live == e->nkeys ? 0 : -1;
}

void irx_evrep_free(irx_index *ix, uint32_t r) {
    irx_evrep *e = ix->rep[r].ev;
    if (!e) return;
    irx_evrep_clear(ix, r);
    atomic_fetch_sub(&ix->ev_bytes, evrep_bytes(e));
    ir_map_free(&e->dups);
    ir_map_free(&e->orphans);
    ir_big_free(e->nodes);
    ir_big_free(e->slots);
    free(e->stack);
    free(e->model);
    free(e);
    ix->rep[r].ev = NULL;
}

void irx_evrep_set_limit(irx_evrep *e, uint32_t capacity_blocks) {
    uint64_t lim = (uint64_t)capacity_blocks * IRX_EV_LIMIT_FACTOR;
    if (lim < IRX_EV_LIMIT_MIN) lim = IRX_EV_LIMIT_MIN;
    e->max_live = capacity_blocks && lim < MAX_NODES ? lim : MAX_NODES;
}

/* ---- the API ------------------------------------------------------------------------------ */

static irx_evrep *evrep_new(const char *model, uint32_t block_size) {
    irx_evrep *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->model = strdup(model);
    e->block_size = block_size;
    e->free = NIL;
    if (!e->model || ir_map_init(&e->dups, 16, MAX_NODES) ||
        ir_map_init(&e->orphans, 16, MAX_ORPHANS)) {
        ir_map_free(&e->dups);
        free(e->model);
        free(e);
        return NULL;
    }
    e->root = ir_block_hash_root(model, NULL, NULL);
    return e;
}

int irx_ev_track(irx_index *ix, uint32_t r, const char *model, uint32_t block_size) {
    if (r >= ix->nrep || !model || block_size == 0) return -1;
    irx_replica *rp = &ix->rep[r];
    pthread_mutex_lock(&rp->mu);
    int rc = 0;
    if (!rp->ev) {
        /* Kept for the slot's life, since readers never wait; on OOM, no lookahead here. */
        if (!atomic_load(&rp->doom)) {
            atomic_store(&rp->doom, irx_doom_new());
            if (atomic_load(&rp->doom)) atomic_fetch_add(&ix->doom_bytes, irx_doom_bytes());
        }
        irx_evrep *e = evrep_new(model, block_size);
        if (e) {
            irx_evrep_set_limit(e, rp->sh.cap);
            irx_replica_drop(ix, r); /* the guesses go; records in flight are voided */
            rp->ev = e;
            atomic_fetch_add(&ix->ev_bytes, evrep_bytes(e));
        } else {
            rc = -1;
        }
    }
    pthread_mutex_unlock(&rp->mu);
    return rc;
}

void irx_ev_untrack(irx_index *ix, uint32_t r) {
    if (r >= ix->nrep) return;
    pthread_mutex_lock(&ix->rep[r].mu);
    irx_evrep_free(ix, r);
    pthread_mutex_unlock(&ix->rep[r].mu);
}

bool irx_ev_tracked(irx_index *ix, uint32_t r) {
    if (r >= ix->nrep) return false;
    pthread_mutex_lock(&ix->rep[r].mu);
    bool t = ix->rep[r].ev != NULL;
    pthread_mutex_unlock(&ix->rep[r].mu);
    return t;
}

void irx_ev_apply_batch(irx_index *ix, uint32_t r, const irx_ev *ev, size_t nev, irx_ev_counts *c) {
    if (r >= ix->nrep || nev == 0) return;
    irx_replica *rp = &ix->rep[r];
    pthread_mutex_lock(&rp->mu);
    irx_evrep *e = rp->ev;
    if (e) {
        size_t before = evrep_bytes(e);
        apply_all(ix, r, e, ev, nev, c);
        irx_mirror_batch(ix, r);
        account(ix, e, before);
    }
    pthread_mutex_unlock(&rp->mu);
}

void irx_ev_apply(irx_index *ix, uint32_t r, const irx_ev *ev, irx_ev_counts *c) {
    irx_ev_apply_batch(ix, r, ev, 1, c);
}

void irx_ev_clear(irx_index *ix, uint32_t r) {
    if (r >= ix->nrep) return;
    pthread_mutex_lock(&ix->rep[r].mu);
    irx_evrep *e = ix->rep[r].ev;
    if (e) irx_evrep_clear(ix, r);
    pthread_mutex_unlock(&ix->rep[r].mu);
}

void irx_ev_unseen(irx_index *ix, uint32_t r) {
    if (r >= ix->nrep) return;
    pthread_mutex_lock(&ix->rep[r].mu);
    irx_evrep *e = ix->rep[r].ev;
    if (e) e->unseen = ix->rep[r].sh.cap ? ix->rep[r].sh.cap : UINT32_MAX;
    pthread_mutex_unlock(&ix->rep[r].mu);
}

void irx_ev_view_get(irx_index *ix, uint32_t r, irx_ev_view *out) {
    memset(out, 0, sizeof *out);
    if (r >= ix->nrep) return;
    pthread_mutex_lock(&ix->rep[r].mu);
    const irx_evrep *e = ix->rep[r].ev;
    if (e) {
        out->gpu_blocks = e->gpu;
        out->cpu_blocks = e->cpu;
        out->nodes = e->live;
        out->orphans = ir_map_count(&e->orphans);
        uint64_t cap = ix->rep[r].sh.cap, room = !cap           ? UINT64_MAX
                                                 : cap > e->gpu ? cap - e->gpu
                                                                : 0;
        out->unseen = e->unseen < room ? e->unseen : room;
        out->bytes = evrep_bytes(e);
        out->partial = out->orphans > 0 || out->unseen > 0;
    }
    pthread_mutex_unlock(&ix->rep[r].mu);
}

void irx_ev_lookup_cpu(irx_index *ix, const ir_hash128 *h, size_t n, const uint32_t *gpu,
                       uint32_t *out) {
    memset(out, 0, ix->nrep * sizeof *out);
    if (n == 0 || atomic_load_explicit(&ix->cpu_bits, memory_order_relaxed) == 0) return;
    uint64_t w[IRX_WORDS];
    irx_read_lock();
    for (uint32_t r = 0; r < ix->nrep; r++) {
        /* The run of blocks after r's GPU prefix that r holds somewhere else. */
        size_t j = gpu[r];
        while (j < n) {
            irx_map_bits(&ix->cpu, h[j], w);
            if (!(w[r / 64] >> (r % 64) & 1)) break;
            j++;
        }
        out[r] = (uint32_t)(j - gpu[r]);
    }
    irx_read_unlock();
}
