/* The approximate KV index: semantics of record, undo, lookup, correct,
 * forget and reset, and a randomized comparison with a naive model. */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "index/ir_index.h"

/* A prompt of n blocks: prefix `shared` blocks of chain a, then chain b. */
static void chain(ir_hash128 *out, size_t n, uint32_t tag, size_t from) {
    ir_block_chain c = ir_block_chain_at(ir_block_hash_root("m", NULL, NULL), out, from);
    for (size_t i = from; i < n; i++) {
        uint32_t ids[4] = {tag, (uint32_t)i, 7, 9};
        out[i] = ir_block_hash_next(&c, ids, 4);
    }
}

static void check(irx_index *ix) {
    char err[200];
    if (irx_check(ix, err, sizeof err)) fail_msg("%s", err);
}

/* A request that completes at once: recorded, then released with no extra blocks. */
static irx_rec done(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n) {
    irx_rec rec = irx_record(ix, r, h, n);
    irx_release(ix, rec, h, n, 0);
    return rec;
}

static void record_and_lookup(void **state) {
    irx_index *ix = irx_new(8);
    assert_non_null(ix);
    ir_hash128 a[10], b[10];
    chain(a, 10, 1, 0);
    memcpy(b, a, 4 * sizeof *a);
    chain(b, 10, 2, 4); /* b shares a's first 4 blocks */
    uint32_t out[8];
    assert_int_equal(irx_set_capacity(ix, 2, 100), 0);
    assert_int_equal(irx_set_capacity(ix, 5, 100), 0);
    irx_rec r1 = irx_record(ix, 2, a, 10);
    assert_int_equal(r1.n, 10);
    irx_record(ix, 5, b, 6);
    irx_lookup(ix, a, 10, out);
    assert_int_equal(out[2], 10);
    assert_int_equal(out[5], 4);
    assert_int_equal(out[0], 0);
    irx_lookup(ix, b, 10, out);
    assert_int_equal(out[2], 4);
    assert_int_equal(out[5], 6);
    /* A replica without capacity records nothing. */
    assert_int_equal(irx_record(ix, 3, a, 10).n, 0);
    irx_lookup(ix, a, 3, out);
    assert_int_equal(out[3], 0);
    assert_int_equal(out[2], 3);
    irx_stats st;
    irx_stats_get(ix, &st);
    assert_int_equal(st.entries, 12); /* 10 of a, 6 of b of which 4 shared */
    assert_int_equal(st.held, 16);
    assert_true(st.bytes > 0);
    check(ix);
    irx_free(ix);
}

/* Tail first: a prompt's last blocks leave before its first, oldest prompt first. */
static void eviction_keeps_prefixes(void **state) {
    irx_index *ix = irx_new(1);
    ir_hash128 a[6], b[6];
    chain(a, 6, 1, 0);
    chain(b, 6, 2, 0);
    uint32_t out[1];
    irx_set_capacity(ix, 0, 8);
    done(ix, 0, a, 6);
    done(ix, 0, b, 4); /* 10 blocks wanted, 8 fit: a loses its last 2 */
    irx_lookup(ix, a, 6, out);
    assert_int_equal(out[0], 4);
    irx_lookup(ix, b, 4, out);
    assert_int_equal(out[0], 4);
    /* Now, most recent first: b0 b1 b2 b3 a0 a1 a2 a3. Touching a's head puts
     * it in front; c's 3 blocks then evict a3, a2 and b3. */
    done(ix, 0, a, 2);
    ir_hash128 c[3];
    chain(c, 3, 3, 0);
    done(ix, 0, c, 3);
    irx_lookup(ix, b, 4, out);
    assert_int_equal(out[0], 3);
    irx_lookup(ix, a, 6, out);
    assert_int_equal(out[0], 2);
    /* A prompt longer than the cache records its first capacity blocks. */
    ir_hash128 d[20];
    chain(d, 20, 4, 0);
    assert_int_equal(done(ix, 0, d, 20).n, 8);
    irx_lookup(ix, d, 20, out);
    assert_int_equal(out[0], 8);
    assert_int_equal(irx_replica_blocks(ix, 0), 8);
    check(ix);
    irx_free(ix);
}

static void undo_takes_back_only_its_own(void **state) {
    irx_index *ix = irx_new(2);
    ir_hash128 a[8], b[10];
    chain(a, 8, 1, 0);
    memcpy(b, a, 8 * sizeof *a);
    chain(b, 10, 2, 8);
    uint32_t out[2];
    irx_set_capacity(ix, 1, 64);
    irx_record(ix, 1, a, 3);
    irx_rec rec = irx_record(ix, 1, a, 8); /* adds blocks 3..7 */
    irx_undo(ix, rec, a, 8);
    irx_lookup(ix, a, 8, out);
    assert_int_equal(out[1], 3); /* what was there before stays */
    /* A later record that touches the blocks keeps them. */
    rec = irx_record(ix, 1, a, 8);
    irx_record(ix, 1, b, 10);
    irx_undo(ix, rec, a, 8);
    irx_lookup(ix, b, 10, out);
    assert_int_equal(out[1], 10);
    /* After a reset the old record is void. */
    rec = irx_record(ix, 1, a, 8);
    irx_reset_replica(ix, 1);
    irx_record(ix, 1, a, 8);
    irx_undo(ix, rec, a, 8);
    irx_lookup(ix, a, 8, out);
    assert_int_equal(out[1], 8);
    irx_stats st;
    irx_stats_get(ix, &st);
    assert_int_equal(st.resets, 1);
    assert_int_equal(irx_replica_resets(ix, 1), 1);
    check(ix);
    irx_free(ix);
}

static void usable_blocks_one_short(void **state) {
    assert_int_equal(irx_usable_blocks(4, 64, 16), 3); /* exactly 4 blocks: the last recomputes */
    assert_int_equal(irx_usable_blocks(4, 65, 16), 4); /* a partial block follows */
    assert_int_equal(irx_usable_blocks(0, 15, 16), 0);
    assert_int_equal(irx_usable_blocks(1, 16, 16), 0);
    assert_int_equal(irx_usable_blocks(3, 1000, 16), 3);
    assert_int_equal(irx_usable_blocks(3, 0, 16), 0);
    assert_int_equal(irx_usable_blocks(3, 10, 0), 0);
}

static void forget_reset_and_capacity(void **state) {
    irx_index *ix = irx_new(70); /* two bitset words */
    ir_hash128 a[5];
    chain(a, 5, 1, 0);
    uint32_t out[70];
    irx_set_capacity(ix, 3, 10);
    irx_set_capacity(ix, 69, 10);
    done(ix, 3, a, 5);
    done(ix, 69, a, 5);
    irx_lookup(ix, a, 5, out);
    assert_int_equal(out[3], 5);
    assert_int_equal(out[69], 5);
    irx_forget_replica(ix, 3);
    assert_int_equal(irx_capacity(ix, 3), 0);
    assert_int_equal(irx_record(ix, 3, a, 5).n, 0);
    irx_lookup(ix, a, 5, out);
    assert_int_equal(out[3], 0);
    assert_int_equal(out[69], 5);
    irx_set_capacity(ix, 69, 2); /* shrinking evicts the deepest blocks */
    irx_lookup(ix, a, 5, out);
    assert_int_equal(out[69], 2);
    irx_set_capacity(ix, 69, 50);
    irx_lookup(ix, a, 5, out);
    assert_int_equal(out[69], 2);
    irx_reset_replica(ix, 69);
    assert_int_equal(irx_capacity(ix, 69), 50);
    irx_lookup(ix, a, 5, out);
    assert_int_equal(out[69], 0);
    irx_stats st;
    irx_stats_get(ix, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(irx_set_capacity(ix, 70, 5), -1);
    assert_null(irx_new(0));
    assert_null(irx_new(IRX_MAX_REPLICAS + 1));
    check(ix);
    irx_free(ix);
}

/* The engine reported less than predicted: the oldest blocks go, the prompt stays. */
static void correct_shrinks_the_oldest(void **state) {
    irx_index *ix = irx_new(1);
    ir_hash128 a[4], b[4], c[4];
    chain(a, 4, 1, 0);
    chain(b, 4, 2, 0);
    chain(c, 4, 3, 0);
    uint32_t out[1];
    irx_set_capacity(ix, 0, 12);
    done(ix, 0, a, 4);
    done(ix, 0, b, 4);
    done(ix, 0, c, 4);
    assert_int_equal(irx_correct(ix, 0, c, 4, 3, 3), 0);
    /* c was predicted 3 and the engine had 1: two blocks of the oldest go (a's tail). */
    assert_int_equal(irx_correct(ix, 0, c, 4, 3, 1), 2);
    irx_lookup(ix, a, 4, out);
    assert_int_equal(out[0], 2);
    irx_lookup(ix, c, 4, out);
    assert_int_equal(out[0], 4);
    /* Never the prompt's own blocks, even when asked for more. */
    assert_int_equal(irx_correct(ix, 0, c, 4, 100, 0), 6);
    irx_lookup(ix, c, 4, out);
    assert_int_equal(out[0], 4);
    assert_int_equal(irx_replica_blocks(ix, 0), 4);
    check(ix);
    irx_free(ix);
}

/* ---- pins and release --------------------------------------------------------- */

/* Pinned blocks are never evicted; a release puts the extra blocks behind the
 * prompt's, which come back block 0 most recent. */
static void pins_and_release(void **state) {
    irx_index *ix = irx_new(1);
    ir_hash128 a[4], b[4], c[6];
    chain(a, 4, 1, 0);
    chain(b, 4, 2, 0);
    chain(c, 6, 3, 0);
    uint32_t out[1];
    irx_set_capacity(ix, 0, 8);
    irx_rec ra = irx_record(ix, 0, a, 4); /* a in flight: pinned */
    done(ix, 0, b, 4);
    done(ix, 0, c, 4); /* evicts b (unpinned), never a */
    irx_lookup(ix, a, 4, out);
    assert_int_equal(out[0], 4);
    irx_lookup(ix, b, 4, out);
    assert_int_equal(out[0], 0);
    /* All 8 blocks are in use by a and c... c is done: a's release with 2 extra
     * blocks evicts c's two deepest blocks; the extras are then the oldest. */
    irx_release(ix, ra, a, 4, 2);
    irx_lookup(ix, c, 4, out);
    assert_int_equal(out[0], 2);
    assert_int_equal(irx_replica_blocks(ix, 0), 6); /* hashed; the 2 extras are not */
    check(ix);
    /* Now: a0 a1 a2 a3 x x c0 c1 (most recent first). A 3-block prompt evicts
     * c1, c0 and one extra, and leaves a alone. */
    done(ix, 0, b, 3);
    irx_lookup(ix, a, 4, out);
    assert_int_equal(out[0], 4);
    irx_lookup(ix, c, 4, out);
    assert_int_equal(out[0], 0);
    /* A record that cannot pin all its blocks pins the prefix that fits. */
    irx_rec r1 = irx_record(ix, 0, a, 4);
    irx_rec r2 = irx_record(ix, 0, c, 6);
    assert_int_equal(r2.n, 4);
    irx_rec r3 = irx_record(ix, 0, b, 4);
    assert_int_equal(r3.n, 0);
    /* Shared pins: a released once is still pinned by the second record. */
    irx_rec r4 = irx_record(ix, 0, a, 2);
    irx_release(ix, r1, a, 4, 0);
    irx_undo(ix, r2, c, 6); /* c's blocks were all fresh: they go */
    irx_lookup(ix, c, 6, out);
    assert_int_equal(out[0], 0);
    done(ix, 0, b, 4);
    done(ix, 0, c, 4); /* 8 blocks: a2, a3 evicted, a0 a1 pinned */
    irx_lookup(ix, a, 4, out);
    assert_int_equal(out[0], 2);
    irx_release(ix, r4, a, 2, 0);
    check(ix);
    /* A reset voids records in flight: their release does nothing. */
    irx_rec r5 = irx_record(ix, 0, a, 4);
    irx_reset_replica(ix, 0);
    irx_release(ix, r5, a, 4, 3);
    assert_int_equal(irx_replica_blocks(ix, 0), 0);
    check(ix);
    irx_free(ix);
}

/* An engine's completion_tokens sets a release's extra blocks: an absurd count (a
 * misbehaving engine's 10^18) leaves the replica's view as its capacity's worth of
 * extra blocks does, at once (it was one step per block under the replica's lock:
 * the gateway's worker never came back). */
typedef struct release_job {
    irx_index *ix;
    irx_rec rec;
    const ir_hash128 *h;
    size_t extra;
    atomic_bool done;
} release_job;

static void *release_thread(void *arg) {
    release_job *j = arg;
    irx_release(j->ix, j->rec, j->h, 4, j->extra);
    atomic_store(&j->done, true);
    return NULL;
}

static void huge_extra_is_bounded(void **state) {
    (void)state;
    ir_hash128 a[4], b[3];
    chain(a, 4, 1, 0);
    chain(b, 3, 2, 0);
    irx_index *ix[2];
    uint32_t out[2][2];
    for (int k = 0; k < 2; k++) {
        ix[k] = irx_new(1);
        irx_set_capacity(ix[k], 0, 8);
        done(ix[k], 0, b, 3);
        release_job j = {.ix = ix[k], .rec = irx_record(ix[k], 0, a, 4), .h = a};
        j.extra = k ? SIZE_MAX / 2 : 8;
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, release_thread, &j), 0);
        /* a generous bound: the bounded release takes microseconds */
        for (int ms = 0; ms < 60000 && !atomic_load(&j.done); ms++) usleep(1000);
        if (!atomic_load(&j.done))
            fail_msg("irx_release with %zu extra blocks is still running", j.extra);
        pthread_join(t, NULL);
        irx_lookup(ix[k], a, 4, &out[k][0]);
        irx_lookup(ix[k], b, 3, &out[k][1]);
        check(ix[k]);
    }
    assert_int_equal(out[1][0], out[0][0]);
    assert_int_equal(out[1][1], out[0][1]);
    assert_int_equal(out[1][1], 0); /* b went for the extras */
    assert_int_equal(irx_replica_blocks(ix[1], 0), irx_replica_blocks(ix[0], 0));
    for (int k = 0; k < 2; k++) irx_free(ix[k]);
}

/* Reserved blocks take capacity at once (evicting for it) and become extra blocks at
 * release; an undo gives them back. */
static void reserve_then_release_or_undo(void **state) {
    irx_index *ix = irx_new(1);
    ir_hash128 a[4], b[2], c[1];
    chain(a, 4, 1, 0);
    chain(b, 2, 2, 0);
    chain(c, 1, 3, 0);
    uint32_t out[1];
    irx_set_capacity(ix, 0, 8);
    done(ix, 0, a, 4);
    irx_rec rb = irx_record_reserve(ix, 0, b, 2, 3); /* 4 + 2 + 3 > 8: a3 goes */
    assert_int_equal(rb.n, 2);
    assert_int_equal(rb.reserved, 3);
    irx_lookup(ix, a, 4, out);
    assert_int_equal(out[0], 3);
    irx_release(ix, rb, b, 2, 1); /* at least the 3 reserved become extras: no eviction */
    irx_lookup(ix, a, 4, out);
    assert_int_equal(out[0], 3);
    check(ix);
    /* Now b0 b1 x x x a0 a1 a2. c pins one block (a2 goes) and reserves 2 (a1, a0). */
    irx_rec rc = irx_record_reserve(ix, 0, c, 1, 2);
    assert_int_equal(rc.reserved, 2);
    irx_lookup(ix, a, 4, out);
    assert_int_equal(out[0], 0);
    irx_undo(ix, rc, c, 1);
    assert_int_equal(irx_replica_blocks(ix, 0), 2);
    /* The reservation is gone: 5 blocks of 8 used, so 3 new ones evict nothing. */
    done(ix, 0, a, 3);
    irx_lookup(ix, b, 2, out);
    assert_int_equal(out[0], 2);
    /* A reservation is capped by the room that pins leave. */
    irx_rec big = irx_record_reserve(ix, 0, c, 1, 100);
    assert_int_equal(big.reserved, 7);
    irx_release(ix, big, c, 1, 0);
    check(ix);
    irx_free(ix);
}

/* ---- randomized comparison with a reference model -------------------------------- */

#define NR  5
#define CAP 24
typedef struct mnode {
    ir_hash128 h;
    uint32_t stamp, pins; /* pins == UINT32_MAX: anonymous */
} mnode;
typedef struct naive {
    mnode list[CAP]; /* list[0] most recent; unpinned blocks and anonymous ones */
    mnode pin[CAP];  /* pinned blocks, in no order */
    uint32_t nl, np, nres, cap, epoch, next_stamp;
} naive;

static bool heq(ir_hash128 a, ir_hash128 b) {
    return a.lo == b.lo && a.hi == b.hi;
}
static int lfind(naive *m, ir_hash128 h) {
    for (uint32_t i = 0; i < m->nl; i++)
        if (m->list[i].pins == 0 && heq(m->list[i].h, h)) return (int)i;
    return -1;
}
static int pfind(naive *m, ir_hash128 h) {
    for (uint32_t i = 0; i < m->np; i++)
        if (heq(m->pin[i].h, h)) return (int)i;
    return -1;
}
static bool holds(naive *m, ir_hash128 h) {
    return lfind(m, h) >= 0 || pfind(m, h) >= 0;
}
static mnode ltake(naive *m, int i) {
    mnode x = m->list[i];
    memmove(m->list + i, m->list + i + 1, (m->nl - (uint32_t)i - 1) * sizeof *m->list);
    m->nl--;
    return x;
}
static void lfront(naive *m, mnode x) {
    memmove(m->list + 1, m->list, m->nl * sizeof *m->list);
    m->list[0] = x;
    m->nl++;
}
static mnode ptake(naive *m, int i) {
    mnode x = m->pin[i];
    m->pin[i] = m->pin[--m->np];
    return x;
}
static uint32_t hashed(naive *m) {
    uint32_t k = m->np;
    for (uint32_t i = 0; i < m->nl; i++) k += m->list[i].pins == 0;
    return k;
}
static uint32_t nrecord(naive *m, const ir_hash128 *h, size_t n, uint32_t want, uint32_t *got,
                        uint32_t *res) {
    *got = *res = 0;
    if (!m->cap) return 0;
    size_t k = n < m->cap ? n : m->cap;
    while (k > 0) { /* the prefix whose pins fit */
        size_t q = 0;
        for (size_t i = 0; i < k; i++) q += pfind(m, h[i]) >= 0;
        if (m->np + m->nres + k - q <= m->cap) break;
        k--;
    }
    if (k == 0) return 0;
    uint32_t st = ++m->next_stamp;
    for (size_t i = k; i-- > 0;) {
        int j = pfind(m, h[i]);
        if (j >= 0) {
            m->pin[j].pins++, m->pin[j].stamp = st;
        } else if ((j = lfind(m, h[i])) >= 0) {
            mnode x = ltake(m, j);
            x.pins = 1, x.stamp = st;
            m->pin[m->np++] = x;
        }
    }
    for (size_t i = k; i-- > 0;) {
        if (holds(m, h[i])) continue;
        if (m->nl + m->np + m->nres == m->cap) m->nl--;
        m->pin[m->np++] = (mnode){h[i], st | 0x80000000u, 1};
    }
    uint32_t room = m->cap - m->np - m->nres;
    *res = want < room ? want : room;
    while (m->nl + m->np + m->nres + *res > m->cap) m->nl--;
    m->nres += *res;
    *got = (uint32_t)k;
    return st;
}
static void nunpin(naive *m, const ir_hash128 *h, size_t k) {
    for (size_t i = k; i-- > 0;) {
        int j = pfind(m, h[i]);
        if (j >= 0 && --m->pin[j].pins == 0) lfront(m, ptake(m, j));
    }
}
static void nrelease(naive *m, const ir_hash128 *h, size_t k, uint32_t extra, uint32_t res) {
    m->nres -= res;
    if (extra < res) extra = res;
    for (uint32_t i = 0; i < extra; i++) {
        if (m->nl + m->np + m->nres == m->cap) {
            if (m->nl == 0) break;
            m->nl--;
        }
        lfront(m, (mnode){{0, 0}, 0, UINT32_MAX});
    }
    nunpin(m, h, k);
}
static void nundo(naive *m, const ir_hash128 *h, size_t k, uint32_t st, uint32_t res) {
    m->nres -= res;
    for (size_t i = k; i-- > 0;) {
        int j = pfind(m, h[i]);
        if (j < 0) continue;
        if (m->pin[j].stamp == (st | 0x80000000u) && m->pin[j].pins == 1)
            ptake(m, j);
        else if (--m->pin[j].pins == 0)
            lfront(m, ptake(m, j));
    }
}
static size_t ncorrect(naive *m, const ir_hash128 *h, size_t n, size_t pred, size_t eng) {
    size_t want = 0;
    if (!m->cap || eng >= pred) return 0;
    size_t k = n < m->cap ? n : m->cap, keep = 0;
    for (size_t i = k; i-- > 0;) {
        int j = lfind(m, h[i]);
        if (j >= 0) lfront(m, ltake(m, j)), keep++;
    }
    while (want < pred - eng && m->nl > keep) {
        if (m->list[m->nl - 1].pins == 0) want++;
        m->nl--;
    }
    return want;
}
static void nclear(naive *m) {
    m->nl = m->np = m->nres = 0;
    m->epoch++;
}

typedef struct pending {
    irx_rec rec;
    uint32_t prompt, n, epoch, stamp, got, res;
} pending;

static void against_naive_model(void **state) {
    ir_rng rng;
    ir_rng_seed(&rng, 4242);
    irx_index *ix = irx_new(NR);
    naive model[NR] = {0};
    /* Prompts from a small tree of prefixes, so that they share and diverge. */
    enum { NP = 12, LEN = 16 };
    ir_hash128 p[NP][LEN];
    for (uint32_t i = 0; i < NP; i++) {
        size_t share = i ? ir_rng_below(&rng, LEN) : 0;
        uint32_t from = i ? (uint32_t)ir_rng_below(&rng, i) : 0;
        memcpy(p[i], p[from], share * sizeof(ir_hash128));
        chain(p[i], LEN, 100 + i, share);
    }
    pending pend[8] = {0};
    for (int step = 0; step < 20000; step++) {
        uint32_t r = (uint32_t)ir_rng_below(&rng, NR), pi = (uint32_t)ir_rng_below(&rng, NP);
        uint32_t n = 1 + (uint32_t)ir_rng_below(&rng, LEN);
        naive *m = &model[r];
        uint64_t op = ir_rng_below(&rng, 100);
        uint32_t slot = (uint32_t)ir_rng_below(&rng, 8);
        pending *pd = &pend[slot];
        naive *pm = &model[pd->rec.replica];
        bool live = pd->rec.n && pm->epoch == pd->epoch;
        if (op < 40) {
            if (live) { /* the slot's request completes first */
                irx_release(ix, pd->rec, p[pd->prompt], pd->n, 0);
                nrelease(pm, p[pd->prompt], pd->got, 0, pd->res);
            }
            uint32_t want = (uint32_t)ir_rng_below(&rng, 3);
            irx_rec rec = irx_record_reserve(ix, r, p[pi], n, want);
            uint32_t got, res;
            uint32_t st = nrecord(m, p[pi], n, want, &got, &res);
            assert_int_equal(rec.n, got);
            assert_int_equal(rec.reserved, res);
            *pd = (pending){rec, pi, n, m->epoch, st, got, res};
        } else if (op < 55) {
            if (live) nundo(pm, p[pd->prompt], pd->got, pd->stamp, pd->res);
            irx_undo(ix, pd->rec, p[pd->prompt], pd->n);
            pd->rec.n = 0;
        } else if (op < 75) {
            uint32_t extra = (uint32_t)ir_rng_below(&rng, 5);
            if (live) nrelease(pm, p[pd->prompt], pd->got, extra, pd->res);
            irx_release(ix, pd->rec, p[pd->prompt], pd->n, extra);
            pd->rec.n = 0;
        } else if (op < 85) {
            uint32_t pred = (uint32_t)ir_rng_below(&rng, n + 1),
                     eng = (uint32_t)ir_rng_below(&rng, n + 1);
            size_t got = irx_correct(ix, r, p[pi], n, pred, eng);
            assert_int_equal(got, ncorrect(m, p[pi], n, pred, eng));
        } else if (op < 90) {
            uint32_t cap = 1 + (uint32_t)ir_rng_below(&rng, CAP);
            assert_int_equal(irx_set_capacity(ix, r, cap), 0);
            if (cap != m->cap) {
                while (m->nl + m->np + m->nres > cap && m->nl) m->nl--;
                if (m->nl + m->np + m->nres > cap) nclear(m);
            }
            m->cap = cap;
        } else if (op < 95) {
            irx_reset_replica(ix, r);
            nclear(m);
        } else {
            irx_forget_replica(ix, r);
            nclear(m);
            m->cap = 0;
        }
        /* Every prompt's depth on every replica equals the model's leading run. */
        uint32_t out[NR];
        uint32_t q = (uint32_t)ir_rng_below(&rng, NP), qn = (uint32_t)ir_rng_below(&rng, LEN + 1);
        irx_lookup(ix, p[q], qn, out);
        for (uint32_t k = 0; k < NR; k++) {
            uint32_t d = 0;
            while (d < qn && holds(&model[k], p[q][d])) d++;
            if (out[k] != d)
                fail_msg("step %d replica %u: index says %u, model %u", step, k, out[k], d);
            assert_int_equal(irx_replica_blocks(ix, k), hashed(&model[k]));
        }
        if (step % 500 == 0) check(ix);
    }
    check(ix);
    irx_free(ix);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(record_and_lookup),
        cmocka_unit_test(eviction_keeps_prefixes),
        cmocka_unit_test(undo_takes_back_only_its_own),
        cmocka_unit_test(usable_blocks_one_short),
        cmocka_unit_test(forget_reset_and_capacity),
        cmocka_unit_test(correct_shrinks_the_oldest),
        cmocka_unit_test(pins_and_release),
        cmocka_unit_test(reserve_then_release_or_undo),
        cmocka_unit_test(huge_extra_is_bounded),
        cmocka_unit_test(against_naive_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
