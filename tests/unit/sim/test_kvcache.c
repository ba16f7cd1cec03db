/* The simulator's prefix-cache LRU and its CPU tier against a naive reference
 * model; the CPU tier's eviction order, touches, pins, events and reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "sim/sim.h"

#define NB 24
#define NC 5 /* the CPU tier's slots, when it has one */

/* The reference: arrays and linear scans, obviously right. */
typedef struct {
    int32_t freeq[NB]; /* free queue, oldest first */
    int nfree;
    uint32_t ref[NB];
    bool hashed[NB];
    uint64_t key[NB];
    uint32_t nc;      /* the CPU tier's capacity, 0: none */
    uint64_t cpu[NC]; /* its keys, least recently used first */
    int ncpu;
} ref_model;

static ir_hash128 H(uint64_t k) {
    return (ir_hash128){k, k * 31 + 7};
}

static void ref_init(ref_model *m, uint32_t nc) {
    memset(m, 0, sizeof *m);
    m->nc = nc;
    for (int i = 0; i < NB; i++) m->freeq[i] = i;
    m->nfree = NB;
}

static int ref_lookup(const ref_model *m, uint64_t k) {
    for (int i = 0; i < NB; i++)
        if (m->hashed[i] && m->key[i] == k) return i;
    return -1;
}

static void ref_unfree(ref_model *m, int32_t b) {
    for (int i = 0; i < m->nfree; i++) {
        if (m->freeq[i] == b) {
            memmove(&m->freeq[i], &m->freeq[i + 1], (size_t)(m->nfree - i - 1) * sizeof(int32_t));
            m->nfree--;
            return;
        }
    }
}

static int ref_cpu_find(const ref_model *m, uint64_t k) {
    for (int i = 0; i < m->ncpu; i++)
        if (m->cpu[i] == k) return i;
    return -1;
}

/* An evicted hash goes to the CPU tier's tail unless there already; when the tier
 * is full its head (least recently used) goes first. */
static void ref_cpu_put(ref_model *m, uint64_t k) {
    if (m->nc == 0 || ref_cpu_find(m, k) >= 0) return;
    if (m->ncpu == (int)m->nc) {
        memmove(&m->cpu[0], &m->cpu[1], (size_t)(m->ncpu - 1) * sizeof m->cpu[0]);
        m->ncpu--;
    }
    m->cpu[m->ncpu++] = k;
}

static void ref_cpu_touch(ref_model *m, uint64_t k) {
    int i = ref_cpu_find(m, k);
    if (i < 0) return;
    memmove(&m->cpu[i], &m->cpu[i + 1], (size_t)(m->ncpu - i - 1) * sizeof m->cpu[0]);
    m->cpu[m->ncpu - 1] = k;
}

static int32_t ref_alloc(ref_model *m) {
    if (m->nfree == 0) return -1;
    int32_t b = m->freeq[0];
    ref_unfree(m, b);
    if (m->hashed[b]) ref_cpu_put(m, m->key[b]);
    m->hashed[b] = false;
    m->ref[b] = 1;
    return b;
}

static void check_same(const sim_kv *kv, const ref_model *m) {
    assert_int_equal(kv->nfree, m->nfree);
    int32_t i = kv->free_head;
    for (int k = 0; k < m->nfree; k++) {
        assert_int_equal(i, m->freeq[k]);
        i = kv->b[i].next;
    }
    assert_int_equal(i, -1);
    for (uint64_t k = 0; k < 40; k++) assert_int_equal(sim_kv_lookup(kv, H(k)), ref_lookup(m, k));
    for (int b = 0; b < NB; b++) assert_int_equal(kv->b[b].ref, m->ref[b]);
    /* The CPU tier, in LRU order. */
    assert_int_equal(kv->ncused, m->ncpu);
    int32_t c = kv->lru_head;
    for (int k = 0; k < m->ncpu; k++) {
        assert_true(c >= 0);
        assert_true(ir_hash128_eq(kv->c[c].hash, H(m->cpu[k])));
        c = kv->c[c].next;
    }
    assert_int_equal(c, -1);
    for (uint64_t k = 0; k < 40; k++)
        assert_int_equal(sim_kv_cpu_has(kv, H(k)), ref_cpu_find(m, k) >= 0);
}

static void lru_matches_reference(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 5);
    for (int round = 0; round < 400; round++) {
        sim_kv kv;
        ref_model m;
        uint32_t nc = round % 2 ? NC : 0; /* every other round with a CPU tier */
        assert_int_equal(sim_kv_init(&kv, NB), 0);
        assert_int_equal(sim_kv_init_cpu(&kv, nc), 0);
        ref_init(&m, nc);
        for (int op = 0; op < 400; op++) {
            switch (ir_rng_below(&r, 7)) {
            case 0:
            case 1: { /* allocate */
                int32_t a = sim_kv_alloc(&kv), b = ref_alloc(&m);
                assert_int_equal(a, b);
                break;
            }
            case 2: { /* register a hash on a held block */
                int32_t b = (int32_t)ir_rng_below(&r, NB);
                if (m.ref[b] == 0) break;
                uint64_t k = ir_rng_below(&r, 40);
                sim_kv_set_hash(&kv, b, H(k));
                if (!m.hashed[b] && ref_lookup(&m, k) < 0) {
                    m.hashed[b] = true;
                    m.key[b] = k;
                }
                break;
            }
            case 3: { /* release */
                int32_t b = (int32_t)ir_rng_below(&r, NB);
                if (m.ref[b] == 0) break;
                sim_kv_release(&kv, b);
                if (--m.ref[b] == 0) m.freeq[m.nfree++] = b;
                break;
            }
            case 4: { /* hit: acquire a cached block */
                uint64_t k = ir_rng_below(&r, 40);
                int32_t a = sim_kv_lookup(&kv, H(k)), b = ref_lookup(&m, k);
                assert_int_equal(a, b);
                if (a < 0) break;
                sim_kv_acquire(&kv, a);
                if (m.ref[b]++ == 0) ref_unfree(&m, b);
                break;
            }
            case 5:
                if (ir_rng_below(&r, 20) == 0) { /* reset the prefix cache */
                    sim_kv_reset(&kv);
                    for (int i = 0; i < m.nfree; i++) m.hashed[m.freeq[i]] = false;
                    m.ncpu = 0;
                }
                break;
            case 6: { /* a prompt looked up in the CPU tier, then touched */
                ir_hash128 hs[4];
                uint64_t ks[4];
                for (int i = 0; i < 4; i++) ks[i] = ir_rng_below(&r, 40), hs[i] = H(ks[i]);
                uint32_t from = (uint32_t)ir_rng_below(&r, 4), want = 0;
                while (from + want < 4 && ref_cpu_find(&m, ks[from + want]) >= 0) want++;
                assert_int_equal(sim_kv_match_cpu(&kv, hs, from, 4), want);
                sim_kv_cpu_touch(&kv, hs, 4);
                for (int i = 4; i-- > 0;) ref_cpu_touch(&m, ks[i]);
                break;
            }
            }
            check_same(&kv, &m);
        }
        sim_kv_free(&kv);
    }
}

/* The events a tier change reports, in order: +k stored on the CPU, -k removed
 * from the CPU, 100+k removed from the GPU. */
typedef struct {
    int64_t ev[64];
    int n;
} trace;

static void on_cpu(void *ud, ir_hash128 h, bool stored) {
    trace *t = ud;
    if (t->n < 64) t->ev[t->n++] = stored ? (int64_t)h.lo : -(int64_t)h.lo;
}

static void on_gpu_removed(void *ud, ir_hash128 h) {
    trace *t = ud;
    if (t->n < 64) t->ev[t->n++] = 100 + (int64_t)h.lo;
}

/* A GPU cache of 4 blocks holding hashes 1..4 (1 oldest), a CPU tier of 3. */
static void two_tiers(sim_kv *kv, trace *t) {
    assert_int_equal(sim_kv_init(kv, 4), 0);
    assert_int_equal(sim_kv_init_cpu(kv, 3), 0);
    memset(t, 0, sizeof *t);
    kv->on_cpu = on_cpu, kv->cpu_ud = t;
    kv->on_removed = on_gpu_removed, kv->removed_ud = t;
    int32_t b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = sim_kv_alloc(kv);
        sim_kv_set_hash(kv, b[i], H((uint64_t)i + 1));
    }
    for (int i = 0; i < 4; i++) sim_kv_release(kv, b[i]);
}

static void cpu_tier_takes_evictions_in_order(void **state) {
    sim_kv kv;
    trace t;
    two_tiers(&kv, &t);
    /* Four fresh blocks evict 1..4 from the GPU, oldest first; each copy reaches the
     * CPU before its GPU block goes; the fourth pushes out the CPU's oldest (1). */
    for (int i = 0; i < 4; i++) assert_true(sim_kv_alloc(&kv) >= 0);
    const int64_t want[] = {1, 101, 2, 102, 3, 103, -1, 4, 104};
    assert_int_equal(t.n, 9);
    assert_memory_equal(t.ev, want, sizeof want);
    assert_false(sim_kv_cpu_has(&kv, H(1)));
    for (uint64_t k = 2; k <= 4; k++) assert_true(sim_kv_cpu_has(&kv, H(k)));
    assert_int_equal(kv.cpu_stored, 4);
    assert_int_equal(kv.cpu_evicted, 1);
    /* A prompt 2,3,4: nothing on the GPU, three blocks in the CPU tier; from block 1 on,
     * two. */
    ir_hash128 hs[4] = {H(2), H(3), H(4), H(9)};
    assert_int_equal(sim_kv_match(&kv, hs, 4), 0);
    assert_int_equal(sim_kv_match_cpu(&kv, hs, 0, 4), 3);
    assert_int_equal(sim_kv_match_cpu(&kv, hs, 1, 4), 2);
    sim_kv_free(&kv);
}

static void touch_and_pins_decide_cpu_evictions(void **state) {
    sim_kv kv;
    trace t;
    two_tiers(&kv, &t);
    int32_t held[4];
    for (int i = 0; i < 3; i++) held[i] = sim_kv_alloc(&kv); /* 1, 2, 3 to the CPU */
    /* Touching 3, 2 (vLLM's order: the prompt's head ends most recent) leaves 1 oldest,
     * then 3, then 2. */
    ir_hash128 hs[2] = {H(2), H(3)};
    sim_kv_cpu_touch(&kv, hs, 2);
    assert_true(ir_hash128_eq(kv.c[kv.lru_head].hash, H(1)));
    assert_true(ir_hash128_eq(kv.c[kv.lru_tail].hash, H(2)));
    /* 1 pinned (being loaded): the next eviction takes 3 instead. */
    ir_hash128 one = H(1);
    sim_kv_cpu_pin(&kv, &one, 1, true);
    t.n = 0;
    held[3] = sim_kv_alloc(&kv); /* evicts 4 from the GPU */
    const int64_t want[] = {-3, 4, 104};
    assert_int_equal(t.n, 3);
    assert_memory_equal(t.ev, want, sizeof want);
    assert_true(sim_kv_cpu_has(&kv, H(1)));
    /* Every copy pinned: a further eviction's copy is dropped, the GPU block still goes. */
    ir_hash128 rest[2] = {H(2), H(4)};
    sim_kv_cpu_pin(&kv, rest, 2, true);
    for (int i = 0; i < 4; i++) sim_kv_release(&kv, held[i]);
    int32_t b = sim_kv_alloc(&kv);
    sim_kv_set_hash(&kv, b, H(7));
    sim_kv_release(&kv, b);
    t.n = 0;
    for (int i = 0; i < 4; i++) sim_kv_alloc(&kv); /* 7 is among the evicted */
    assert_int_equal(kv.cpu_dropped, 1);
    assert_false(sim_kv_cpu_has(&kv, H(7)));
    assert_int_equal(t.n, 1);
    assert_int_equal(t.ev[0], 107);
    /* Unpinned, the tier evicts again; a reset empties it, one removal per copy. */
    sim_kv_cpu_pin(&kv, &one, 1, false);
    sim_kv_cpu_pin(&kv, rest, 2, false);
    t.n = 0;
    sim_kv_reset(&kv);
    assert_int_equal(kv.ncused, 0);
    assert_int_equal(t.n, 3);
    assert_int_equal(sim_kv_match_cpu(&kv, hs, 0, 2), 0);
    sim_kv_free(&kv);
}

static void match_counts_leading_hits(void **state) {
    sim_kv kv;
    assert_int_equal(sim_kv_init(&kv, 8), 0);
    ir_hash128 hs[4] = {H(1), H(2), H(3), H(4)};
    for (int i = 0; i < 2; i++) {
        int32_t b = sim_kv_alloc(&kv);
        sim_kv_set_hash(&kv, b, hs[i]);
        sim_kv_release(&kv, b);
    }
    int32_t b = sim_kv_alloc(&kv);
    sim_kv_set_hash(&kv, b, hs[3]); /* a later block alone does not count */
    assert_int_equal(sim_kv_match(&kv, hs, 4), 2);
    /* Freed cached blocks join the tail: never-used blocks go first. */
    assert_int_equal(kv.free_head, 3);
    assert_int_equal(kv.free_tail, 1);
    sim_kv_free(&kv);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lru_matches_reference),
        cmocka_unit_test(match_counts_leading_hits),
        cmocka_unit_test(cpu_tier_takes_evictions_in_order),
        cmocka_unit_test(touch_and_pins_decide_cpu_evictions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
