/* ev_index.c: a replica tracked exactly, from its engine's KV events.
 *
 * Each block the engine reports is a node: its engine key (an opaque digest),
 * its own gateway hash (recomputed from its token ids, chained from its
 * parent's gateway hash or the root), its parent, children and tiers. A node is
 * *attached* when it is on the GPU and so are all its ancestors: exactly the
 * blocks an engine's prefix lookup can hit. Attached nodes set replica r's bit
 * in the shared map under their gateway hash, so irx_lookup sees r's GPU cache
 * as the engine would hit it, prefix-closed as the bisection needs. Two engine
 * blocks can share one gateway hash (the engine salts something the gateway
 * does not): the first to attach sets the bit, each further one counts in
 * `dups`, and a detach takes a dup before it clears the bit (dups is empty, and
 * costs nothing, in the common case).
 *
 * A removed block that still has children stays as a placeholder (no tier), so
 * that its children keep their parent's hash and reattach when it comes back.
 * Blocks whose parent is unknown (their chain began before anything seen) are
 * orphans: they cannot be placed; their engine keys are kept so that their
 * removal ends the partial view.
 *
 * Everything here runs under replica r's lock (index.c's lock order: replica,
 * then map shard). Readers only see the map. */
#include <stdlib.h>
#include <string.h>

#include "index/index_internal.h"
#include "index/ir_index.h"

#define NIL         UINT32_MAX
#define MAX_NODES   (1u << 26) /* per replica: about 4 GiB of engine cache at 16 tokens */
#define MAX_ORPHANS (1u << 24)
#define GPU         1u
#define CPU         2u
#define ATTACHED    4u
#define NOBIT       8u  /* attached, but its bit could not be counted (OOM): leaves nothing */
#define CPUBIT      16u /* its bit is set in the CPU map (held, and not attached) */

typedef struct evnode {
    ir_hash128 ekey, gkey;
    uint32_t parent, child, sib, sprev; /* tree links: first child, siblings both ways */
    uint32_t flags;
} evnode;

struct irx_evrep {
    char *model;
    uint32_t block_size;
    evnode *nodes;
    uint32_t nnodes, cap, free; /* free: a list through .sib */
    ir_map byekey;              /* engine key -> node */
    ir_map dups;                /* gateway hash -> attached nodes beyond the bit's first */
    uint64_t bits;              /* bits set in the shared map */
    uint64_t cpubits;           /* nodes with CPUBIT */
    ir_map orphans;             /* engine keys of orphan blocks */
    uint32_t *stack;            /* tree walks */
    uint32_t nstack, stackcap;
    uint64_t gpu, cpu, live;
};

/* ---- bookkeeping ----------------------------------------------------------------- */

static size_t evrep_bytes(const irx_evrep *e) {
    return sizeof *e + (size_t)e->cap * sizeof(evnode) + ir_map_bytes(&e->byekey) +
           ir_map_bytes(&e->dups) + ir_map_bytes(&e->orphans) + e->stackcap * sizeof(uint32_t);
}

static void account(irx_index *ix, irx_evrep *e, size_t before) {
    size_t after = evrep_bytes(e);
    atomic_fetch_add(&ix->ev_bytes, after);
    atomic_fetch_sub(&ix->ev_bytes, before);
}

uint64_t irx_evrep_bits(const irx_evrep *e) {
    return e->bits;
}
uint64_t irx_evrep_cpu_bits(const irx_evrep *e) {
    return e->cpubits;
}

/* Node k's bit in the CPU map follows its state: held in a tier and not attached.
 * (Two nodes with one gateway hash share the bit; the first to go clears it: a CPU
 * hit can be under-counted then, never over-counted.) */
static void cpu_sync(irx_index *ix, uint32_t r, irx_evrep *e, evnode *n) {
    bool want = (n->flags & (GPU | CPU)) && !(n->flags & ATTACHED);
    bool has = n->flags & CPUBIT;
    if (want == has) return;
    if (want) {
        bool was;
        /* OOM, or another node with this gateway hash holds the bit: not counted. */
        if (irx_map_add_bit(&ix->cpu, n->gkey, r, &was) || was) return;
        n->flags |= CPUBIT;
        e->cpubits++;
        atomic_fetch_add(&ix->cpu_bits, 1);
    } else {
        irx_map_remove(&ix->cpu, n->gkey, r);
        n->flags &= ~CPUBIT;
        e->cpubits--;
        atomic_fetch_sub(&ix->cpu_bits, 1);
    }
}

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

static uint32_t find(const irx_evrep *e, ir_hash128 key) {
    uint64_t v;
    return ir_map_get(&e->byekey, &key, sizeof key, &v) ? (uint32_t)v : NIL;
}

/* ---- the map's bits ----------------------------------------------------------------- */

static void bit_on(irx_index *ix, uint32_t r, irx_evrep *e, evnode *n) {
    bool was;
    if (irx_map_add_bit(&ix->map, n->gkey, r, &was)) { /* OOM: the block stays invisible */
        n->flags |= NOBIT;
        return;
    }
    if (!was) {
        e->bits++;
        atomic_fetch_add(&ix->ev_bits, 1);
        return;
    }
    uint64_t c = 0;
    ir_map_get(&e->dups, &n->gkey, sizeof n->gkey, &c);
    if (ir_map_put(&e->dups, &n->gkey, sizeof n->gkey, c + 1)) n->flags |= NOBIT;
}

static void bit_off(irx_index *ix, uint32_t r, irx_evrep *e, evnode *n) {
    if (n->flags & NOBIT) {
        n->flags &= ~NOBIT;
        return;
    }
    uint64_t c = 0;
    if (ir_map_count(&e->dups) && ir_map_get(&e->dups, &n->gkey, sizeof n->gkey, &c)) {
        if (c > 1)
            ir_map_put(&e->dups, &n->gkey, sizeof n->gkey, c - 1); /* an existing key */
        else
            ir_map_del(&e->dups, &n->gkey, sizeof n->gkey);
        return;
    }
    irx_map_remove(&ix->map, n->gkey, r);
    e->bits--;
    atomic_fetch_sub(&ix->ev_bits, 1);
}

/* Attaches k (on the GPU, its parent attached or none) and, parents first, every
 * descendant on the GPU that was waiting for it. */
static void attach(irx_index *ix, uint32_t r, irx_evrep *e, uint32_t k) {
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

/* Detaches k and every attached descendant, deepest first, so that a lookup
 * never sees a child without its parent. */
static void detach(irx_index *ix, uint32_t r, irx_evrep *e, uint32_t k) {
    if (!(e->nodes[k].flags & ATTACHED)) return;
    e->nstack = 0;
    if (push(e, k)) { /* OOM: at least k itself */
        e->nodes[k].flags &= ~ATTACHED;
        bit_off(ix, r, e, &e->nodes[k]);
        cpu_sync(ix, r, e, &e->nodes[k]);
        return;
    }
    /* Preorder into the stack (attached nodes only), then undo it in reverse. */
    for (uint32_t at = 0; at < e->nstack; at++) {
        const evnode *n = &e->nodes[e->stack[at]];
        for (uint32_t c = n->child; c != NIL; c = e->nodes[c].sib)
            if ((e->nodes[c].flags & ATTACHED) && push(e, c)) break;
    }
    for (uint32_t at = e->nstack; at-- > 0;) {
        evnode *n = &e->nodes[e->stack[at]];
        n->flags &= ~ATTACHED;
        bit_off(ix, r, e, n);
        cpu_sync(ix, r, e, n);
    }
}

/* ---- nodes --------------------------------------------------------------------------- */

/* The node of engine key ekey, made (with gkey, under parent) when it is new: one
 * probe of the engine-key table either way for a new block. NIL at the cap or OOM. */
static uint32_t node_get(irx_evrep *e, ir_hash128 ekey, ir_hash128 gkey, uint32_t parent) {
    if (e->free == NIL) {
        if (e->nnodes == e->cap) {
            if (e->cap >= MAX_NODES) return find(e, ekey);
            uint32_t nc = e->cap ? e->cap * 2 : 1024;
            evnode *nn = realloc(e->nodes, (size_t)nc * sizeof *nn);
            if (!nn) return find(e, ekey);
            e->nodes = nn, e->cap = nc;
        }
        e->free = e->nnodes++;
        e->nodes[e->free].sib = NIL;
        e->nodes[e->free].flags = 0;
    }
    uint32_t k = e->free;
    int added = ir_map_add(&e->byekey, &ekey, sizeof ekey, k);
    if (added == 1) return find(e, ekey); /* known: the spare node stays free */
    if (added < 0) return NIL;
    e->free = e->nodes[k].sib;
    evnode *n = &e->nodes[k];
    *n = (evnode){ekey, gkey, parent, NIL, NIL, NIL, 0};
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

/* Frees k if it holds no tier and no children, then its parent likewise. */
static void collect(irx_evrep *e, uint32_t k) {
    while (k != NIL) {
        evnode *n = &e->nodes[k];
        if ((n->flags & (GPU | CPU)) || n->child != NIL) return;
        uint32_t parent = n->parent;
        unlink_child(e, k);
        ir_map_del(&e->byekey, &n->ekey, sizeof n->ekey);
        n->sib = e->free;
        n->flags = 0;
        e->free = k;
        e->live--;
        k = parent;
    }
}

/* Gives node k the tier `t`. */
static void tier_on(irx_index *ix, uint32_t r, irx_evrep *e, uint32_t k, uint32_t t) {
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

static void tier_off(irx_index *ix, uint32_t r, irx_evrep *e, uint32_t k, uint32_t t) {
    evnode *n = &e->nodes[k];
    if (!(n->flags & t)) return;
    if (t == GPU) {
        detach(ix, r, e, k);
        e->gpu--;
    } else {
        e->cpu--;
    }
    e->nodes[k].flags &= ~t;
    cpu_sync(ix, r, e, &e->nodes[k]);
    collect(e, k);
}

/* ---- events ----------------------------------------------------------------------------- */

static uint32_t tier_of(irx_medium m) {
    return m == IRX_MEDIUM_CPU ? CPU : m == IRX_MEDIUM_GPU ? GPU : 0;
}

static void orphan(irx_evrep *e, const irx_ev *ev, irx_ev_counts *c) {
    for (uint32_t i = 0; i < ev->nblocks; i++)
        if (ir_map_count(&e->orphans) < MAX_ORPHANS)
            ir_map_put(&e->orphans, &ev->blocks[i], sizeof ev->blocks[i], 1);
    c->orphans += ev->nblocks;
}

/* A copy into another tier that names its blocks only (vLLM's OffloadingConnector:
 * no parent, no token ids, block_size the offloaded block's or 0): each block the
 * index knows gains the tier; one it never saw cannot be placed (an orphan).
 * Offloaded blocks larger than the engine's (block_size a multiple of it) are
 * refused: their keys name only the last engine block of each. */
static void stored_copy(irx_index *ix, uint32_t r, irx_evrep *e, const irx_ev *ev, uint32_t t,
                        irx_ev_counts *c) {
    if (ev->block_size != 0 && ev->block_size != e->block_size) {
        c->refused++;
        return;
    }
    for (uint32_t i = 0; i < ev->nblocks; i++) {
        uint32_t k = find(e, ev->blocks[i]);
        if (k == NIL) {
            irx_ev one = *ev;
            one.blocks = &ev->blocks[i], one.nblocks = 1;
            orphan(e, &one, c);
            continue;
        }
        tier_on(ix, r, e, k, t);
        c->stored++;
    }
}

static void stored(irx_index *ix, uint32_t r, irx_evrep *e, const irx_ev *ev, irx_ev_counts *c) {
    uint32_t t = tier_of(ev->medium), parent = NIL;
    if (t != 0 && t != GPU && ev->ntokens == 0 && !ev->has_parent && ev->nblocks) {
        stored_copy(ix, r, e, ev, t, c);
        return;
    }
    if (t == 0 || ev->block_size != e->block_size ||
        (uint64_t)ev->nblocks * ev->block_size != ev->ntokens) {
        c->refused++;
        return;
    }
    ir_hash128 g;
    if (ev->has_parent) {
        parent = find(e, ev->parent);
        if (parent == NIL) {
            orphan(e, ev, c);
            return;
        }
        g = e->nodes[parent].gkey;
    } else {
        g = ir_block_hash_root(e->model, ev->lora_name, ev->cache_salt);
    }
    for (uint32_t i = 0; i < ev->nblocks; i++) {
        g = ir_block_hash_next(g, ev->tokens + (size_t)i * ev->block_size, ev->block_size);
        uint32_t k = node_get(e, ev->blocks[i], g, parent);
        if (k == NIL) { /* the cap or OOM: the rest of the chain cannot be placed */
            c->refused++;
            return;
        }
        if (ir_map_count(&e->orphans))
            ir_map_del(&e->orphans, &ev->blocks[i], sizeof ev->blocks[i]);
        tier_on(ix, r, e, k, t);
        c->stored++;
        parent = k;
        g = e->nodes[k].gkey; /* a known block keeps the hash it was placed with */
    }
}

static void removed(irx_index *ix, uint32_t r, irx_evrep *e, const irx_ev *ev, irx_ev_counts *c) {
    uint32_t t = tier_of(ev->medium);
    for (uint32_t i = 0; i < ev->nblocks; i++) {
        uint32_t k = find(e, ev->blocks[i]);
        if (k == NIL) {
            if (ir_map_count(&e->orphans))
                ir_map_del(&e->orphans, &ev->blocks[i], sizeof ev->blocks[i]);
            continue;
        }
        if (t) tier_off(ix, r, e, k, t);
        c->removed++;
    }
}

void irx_evrep_clear(irx_index *ix, uint32_t r) {
    irx_evrep *e = ix->rep[r].ev;
    /* Every bit goes (a duplicate's second removal finds it gone: a no-op). */
    for (uint32_t k = 0; k < e->nnodes; k++) {
        if ((e->nodes[k].flags & (ATTACHED | NOBIT)) == ATTACHED)
            irx_map_remove(&ix->map, e->nodes[k].gkey, r);
        if (e->nodes[k].flags & CPUBIT) irx_map_remove(&ix->cpu, e->nodes[k].gkey, r);
    }
    atomic_fetch_sub(&ix->ev_bits, e->bits);
    atomic_fetch_sub(&ix->cpu_bits, e->cpubits);
    e->bits = e->cpubits = 0;
    ir_map_clear(&e->dups);
    ir_map_clear(&e->byekey);
    ir_map_clear(&e->orphans);
    e->nnodes = 0, e->free = NIL, e->gpu = e->cpu = e->live = 0; /* the memory stays */
}

void irx_evrep_free(irx_index *ix, uint32_t r) {
    irx_evrep *e = ix->rep[r].ev;
    if (!e) return;
    irx_evrep_clear(ix, r);
    atomic_fetch_sub(&ix->ev_bytes, evrep_bytes(e));
    ir_map_free(&e->byekey);
    ir_map_free(&e->dups);
    ir_map_free(&e->orphans);
    free(e->nodes);
    free(e->stack);
    free(e->model);
    free(e);
    ix->rep[r].ev = NULL;
}

/* ---- the API ------------------------------------------------------------------------------ */

static irx_evrep *evrep_new(const char *model, uint32_t block_size) {
    irx_evrep *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->model = strdup(model);
    e->block_size = block_size;
    e->free = NIL;
    if (!e->model || ir_map_init(&e->byekey, 1024, MAX_NODES) ||
        ir_map_init(&e->dups, 16, MAX_NODES) || ir_map_init(&e->orphans, 16, MAX_ORPHANS)) {
        ir_map_free(&e->byekey);
        ir_map_free(&e->dups);
        free(e->model);
        free(e);
        return NULL;
    }
    return e;
}

int irx_ev_track(irx_index *ix, uint32_t r, const char *model, uint32_t block_size) {
    if (r >= ix->nrep || !model || block_size == 0) return -1;
    irx_replica *rp = &ix->rep[r];
    pthread_mutex_lock(&rp->mu);
    int rc = 0;
    if (!rp->ev) {
        irx_evrep *e = evrep_new(model, block_size);
        if (e) {
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

void irx_ev_apply(irx_index *ix, uint32_t r, const irx_ev *ev, irx_ev_counts *c) {
    if (r >= ix->nrep) return;
    irx_replica *rp = &ix->rep[r];
    pthread_mutex_lock(&rp->mu);
    irx_evrep *e = rp->ev;
    if (e) {
        size_t before = evrep_bytes(e);
        if (ev->type == IRX_EV_STORED)
            stored(ix, r, e, ev, c);
        else if (ev->type == IRX_EV_REMOVED)
            removed(ix, r, e, ev, c);
        else if (ev->type == IRX_EV_CLEARED)
            irx_evrep_clear(ix, r), c->cleared++;
        account(ix, e, before);
    }
    pthread_mutex_unlock(&rp->mu);
}

void irx_ev_clear(irx_index *ix, uint32_t r) {
    if (r >= ix->nrep) return;
    pthread_mutex_lock(&ix->rep[r].mu);
    if (ix->rep[r].ev) irx_evrep_clear(ix, r);
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
        out->bytes = evrep_bytes(e);
        out->partial = out->orphans > 0;
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
