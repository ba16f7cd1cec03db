/* The simulator's prefix-cache LRU against a naive reference model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "sim/sim.h"

#define NB 24

/* The reference: arrays and linear scans, obviously right. */
typedef struct {
    int32_t freeq[NB]; /* free queue, oldest first */
    int nfree;
    uint32_t ref[NB];
    bool hashed[NB];
    uint64_t key[NB];
} ref_model;

static ir_hash128 H(uint64_t k) {
    return (ir_hash128){k, k * 31 + 7};
}

static void ref_init(ref_model *m) {
    memset(m, 0, sizeof *m);
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

static int32_t ref_alloc(ref_model *m) {
    if (m->nfree == 0) return -1;
    int32_t b = m->freeq[0];
    ref_unfree(m, b);
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
}

static void lru_matches_reference(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 5);
    for (int round = 0; round < 200; round++) {
        sim_kv kv;
        ref_model m;
        assert_int_equal(sim_kv_init(&kv, NB), 0);
        ref_init(&m);
        for (int op = 0; op < 400; op++) {
            switch (ir_rng_below(&r, 6)) {
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
                }
                break;
            }
            check_same(&kv, &m);
        }
        sim_kv_free(&kv);
    }
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
