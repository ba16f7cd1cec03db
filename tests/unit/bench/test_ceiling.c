/* test_ceiling.c: the finite-cache reuse ceilings (src/bench/ceiling.c). Belady's
 * MIN with bypass on textbook reference strings and against an exhaustive search
 * over every demand-filled schedule; capacity 0 and capacity past the distinct
 * blocks; the warm-up cut; LRU in the simulator's order; MIN >= pooled LRU >= 0 and
 * MIN <= the infinite ceiling on random traces; and the ceilings of a built workload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* A trace of one-block requests. */
static void singles(bench_btrace *t, const uint32_t *ids, size_t n) {
    bench_btrace_init(t);
    for (size_t i = 0; i < n; i++) assert_int_equal(bench_btrace_add(t, &ids[i], 1), 0);
}

static size_t min_hits(const bench_btrace *t, size_t cap, size_t from) {
    size_t h = 99999;
    assert_int_equal(bench_min_hits(t, cap, from, &h), 0);
    return h;
}

static size_t lru_hits(const bench_btrace *t, size_t cap, size_t from) {
    size_t h = 99999;
    assert_int_equal(bench_lru_hits(t, cap, from, &h), 0);
    return h;
}

/* Accesses to a block seen before: what an infinite cache hits. */
static size_t repeats(const bench_btrace *t, size_t from) {
    bool *seen = calloc(t->n_ids + 1, 1);
    size_t h = 0, f = from < t->nreq ? t->start[from] : t->n;
    for (size_t i = 0; i < t->n; i++) {
        h += i >= f && seen[t->id[i]];
        seen[t->id[i]] = true;
    }
    free(seen);
    return h;
}

/* ---- exhaustive search: the most hits of any schedule that may admit a block only
 * when it is accessed (or not at all) and evict anything at any time ---- */
typedef struct search {
    const uint32_t *tr;
    size_t n, cap;
    int memo[24][256];
} search;

static int popcount(unsigned m) {
    int c = 0;
    for (; m; m &= m - 1) c++;
    return c;
}

static int best(search *s, size_t i, unsigned set) {
    if (i == s->n) return 0;
    if (s->memo[i][set] >= 0) return s->memo[i][set];
    unsigned b = 1u << s->tr[i];
    int v;
    if (set & b) {
        v = 1 + best(s, i + 1, set); /* keeping everything never hurts here */
    } else {
        v = best(s, i + 1, set); /* bypass */
        if ((size_t)popcount(set) < s->cap) {
            int w = best(s, i + 1, set | b);
            if (w > v) v = w;
        }
        for (unsigned m = set; s->cap && m; m &= m - 1) { /* replace one */
            int w = best(s, i + 1, (set & ~(m & -m)) | b);
            if (w > v) v = w;
        }
    }
    return s->memo[i][set] = v;
}

static int exhaustive(const uint32_t *tr, size_t n, size_t cap) {
    search *s = malloc(sizeof *s);
    s->tr = tr;
    s->n = n;
    s->cap = cap;
    memset(s->memo, -1, sizeof s->memo);
    int v = best(s, 0, 0);
    free(s);
    return v;
}

/* Textbook reference strings: OPT without bypass gives 9 faults in 20 with 3
 * frames, and 7 and 6 faults in Belady's anomaly string with 3 and 4 frames;
 * bypass can only add hits (12 and 13 here, from the exhaustive search and an
 * independent one in Python). */
static void test_min_textbook(void **st) {
    (void)st;
    static const uint32_t a[] = {7, 0, 1, 2, 0, 3, 0, 4, 2, 3, 0, 3, 2, 1, 2, 0, 1, 7, 0, 1};
    static const uint32_t b[] = {1, 2, 3, 4, 1, 2, 5, 1, 2, 3, 4, 5};
    bench_btrace t;
    singles(&t, a, 20);
    assert_int_equal(min_hits(&t, 3, 0), 12);
    assert_int_equal(min_hits(&t, 4, 0), 13);
    assert_int_equal(exhaustive(a, 20, 3), 12);
    bench_btrace_free(&t);
    singles(&t, b, 12);
    assert_int_equal(min_hits(&t, 3, 0), 5);
    assert_int_equal(min_hits(&t, 4, 0), 6);
    bench_btrace_free(&t);
}

/* Capacity 0 hits nothing; capacity at or past the distinct blocks hits every repeat. */
static void test_min_extremes(void **st) {
    (void)st;
    static const uint32_t a[] = {1, 2, 1, 3, 2, 1, 4, 4, 2};
    bench_btrace t;
    singles(&t, a, 9);
    assert_int_equal(min_hits(&t, 0, 0), 0);
    assert_int_equal(lru_hits(&t, 0, 0), 0);
    assert_int_equal(repeats(&t, 0), 5);
    assert_int_equal(min_hits(&t, 4, 0), 5);
    assert_int_equal(min_hits(&t, 1000, 0), 5);
    assert_int_equal(lru_hits(&t, 4, 0), 5);
    bench_btrace_free(&t);
    bench_btrace_init(&t); /* an empty trace */
    assert_int_equal(min_hits(&t, 8, 0), 0);
    assert_int_equal(lru_hits(&t, 8, 0), 0);
    bench_btrace_free(&t);
}

/* Bypass: with one block of room, A B A hits once, by not admitting B (used never
 * again); admitting every miss would hit nothing. And a block used again later than
 * every cached one stays out: cap 2, A B C A B C... keeps two of three. */
static void test_min_bypass(void **st) {
    (void)st;
    static const uint32_t a[] = {1, 2, 1};
    static const uint32_t b[] = {1, 2, 3, 1, 2, 3, 1, 2, 3};
    bench_btrace t;
    singles(&t, a, 3);
    assert_int_equal(min_hits(&t, 1, 0), 1);
    assert_int_equal(lru_hits(&t, 1, 0), 0);
    bench_btrace_free(&t);
    singles(&t, b, 9);
    /* LRU on a loop one larger than the cache hits nothing; MIN hits 4 of the 6
     * repeats (the exhaustive search and the Python one agree). */
    assert_int_equal(lru_hits(&t, 2, 0), 0);
    assert_int_equal(min_hits(&t, 2, 0), (size_t)exhaustive(b, 9, 2));
    assert_int_equal(min_hits(&t, 2, 0), 4);
    bench_btrace_free(&t);
}

/* Requests before from_req fill the cache but are not counted. */
static void test_warmup_cut(void **st) {
    (void)st;
    bench_btrace t;
    bench_btrace_init(&t);
    static const uint32_t r0[] = {1, 2, 3}, r1[] = {1, 2, 4}, r2[] = {1, 2, 3};
    assert_int_equal(bench_btrace_add(&t, r0, 3), 0);
    assert_int_equal(bench_btrace_add(&t, r1, 3), 0);
    assert_int_equal(bench_btrace_add(&t, r2, 3), 0);
    assert_int_equal(t.nreq, 3);
    assert_int_equal(min_hits(&t, 10, 0), 5);
    assert_int_equal(min_hits(&t, 10, 1), 5);
    assert_int_equal(min_hits(&t, 10, 2), 3);
    assert_int_equal(min_hits(&t, 10, 3), 0);
    assert_int_equal(lru_hits(&t, 10, 2), 3);
    bench_btrace_free(&t);
}

/* LRU as the simulator: a request's blocks go back last-first, so its tail is
 * evicted before its head; only leading cached blocks count. */
static void test_lru_order(void **st) {
    (void)st;
    bench_btrace t;
    bench_btrace_init(&t);
    static const uint32_t abc[] = {1, 2, 3}, d[] = {4}, xb[] = {5, 2};
    assert_int_equal(bench_btrace_add(&t, abc, 3), 0);
    assert_int_equal(bench_btrace_add(&t, d, 1), 0);   /* evicts 3, the tail */
    assert_int_equal(bench_btrace_add(&t, abc, 3), 0); /* hits 1 and 2 */
    assert_int_equal(lru_hits(&t, 3, 0), 2);
    assert_int_equal(min_hits(&t, 3, 0), 3); /* MIN never admits 4 */
    /* 2 is cached but not leading: LRU counts nothing, MIN per block counts it. */
    assert_int_equal(bench_btrace_add(&t, xb, 2), 0);
    assert_int_equal(lru_hits(&t, 3, 3), 0);
    assert_int_equal(min_hits(&t, 3, 3), 1);
    bench_btrace_free(&t);
    /* Single blocks: plain LRU. Cap 2, 1 2 1 3 2: one hit (1), 3 evicts 2. */
    static const uint32_t s[] = {1, 2, 1, 3, 2};
    singles(&t, s, 5);
    assert_int_equal(lru_hits(&t, 2, 0), 1);
    bench_btrace_free(&t);
}

/* MIN equals the exhaustive optimum on random small traces, for every capacity. */
static void test_min_is_optimal(void **st) {
    (void)st;
    ir_rng r;
    ir_rng_seed(&r, 14);
    uint32_t tr[16];
    for (int k = 0; k < 400; k++) {
        size_t n = 1 + (size_t)ir_rng_below(&r, 16), ids = 1 + (size_t)ir_rng_below(&r, 8);
        for (size_t i = 0; i < n; i++) tr[i] = (uint32_t)ir_rng_below(&r, ids);
        bench_btrace t;
        singles(&t, tr, n);
        for (size_t cap = 0; cap <= 5; cap++)
            assert_int_equal(min_hits(&t, cap, 0), (size_t)exhaustive(tr, n, cap));
        bench_btrace_free(&t);
    }
}

/* A random trace shaped like a workload's: requests walk down a trie of blocks
 * (equal ids have equal prefixes), some following a known path, some branching. */
static void random_trace(ir_rng *r, bench_btrace *t, size_t nreq) {
    enum { MAXN = 4096 };
    static uint32_t child[MAXN][4]; /* up to 4 children per node, 0: none */
    memset(child, 0, sizeof child);
    uint32_t next = 1, ids[64];
    bench_btrace_init(t);
    for (size_t q = 0; q < nreq; q++) {
        size_t len = 1 + (size_t)ir_rng_below(r, 40), n = 0;
        uint32_t at = 0;
        for (; n < len; n++) {
            uint32_t c = (uint32_t)ir_rng_below(r, 4);
            if (!child[at][c]) {
                if (next >= MAXN) break;
                child[at][c] = next++;
            }
            at = child[at][c];
            ids[n] = at;
        }
        assert_int_equal(bench_btrace_add(t, ids, n), 0);
    }
}

/* MIN >= pooled LRU >= 0, MIN <= the infinite ceiling, MIN grows with the cache. */
static void test_properties(void **st) {
    (void)st;
    ir_rng r;
    ir_rng_seed(&r, 2026);
    for (int k = 0; k < 60; k++) {
        bench_btrace t;
        random_trace(&r, &t, 20 + (size_t)ir_rng_below(&r, 200));
        size_t from = (size_t)ir_rng_below(&r, 10), inf = repeats(&t, from), prev = 0;
        for (size_t cap = 0; cap <= t.n_ids + 2; cap += 1 + cap / 3) {
            size_t m = min_hits(&t, cap, from), l = lru_hits(&t, cap, from);
            assert_true(m >= l);
            assert_true(m <= inf);
            assert_true(m >= prev);
            prev = m;
        }
        assert_int_equal(min_hits(&t, t.n_ids, from), inf);
        bench_btrace_free(&t);
    }
    /* Any ids at all (no trie): MIN still dominates LRU. */
    for (int k = 0; k < 60; k++) {
        bench_btrace t;
        bench_btrace_init(&t);
        uint32_t ids[12];
        for (size_t q = 0; q < 50; q++) {
            size_t n = (size_t)ir_rng_below(&r, 12);
            for (size_t i = 0; i < n; i++) ids[i] = (uint32_t)ir_rng_below(&r, 30);
            assert_int_equal(bench_btrace_add(&t, ids, n), 0);
        }
        for (size_t cap = 0; cap < 32; cap += 3)
            assert_true(min_hits(&t, cap, 0) >= lru_hits(&t, cap, 0));
        bench_btrace_free(&t);
    }
}

static void build(bench_workload *w, const char *name, size_t n, size_t blocks, size_t replicas) {
    char err[512] = "";
    bench_wl_opts o = {.name = name,
                       .rate = 2,
                       .n = n,
                       .warmup = 10,
                       .seed = 3,
                       .cache_blocks = blocks,
                       .cache_replicas = replicas};
    int rc = bench_workload_build(&o, w, err, sizeof err);
    if (rc) fprintf(stderr, "%s: %s\n", name, err);
    assert_int_equal(rc, 0);
}

/* A workload's ceilings: NaN without a cache size; equal to the infinite one with
 * room for everything; between 0 and it, growing with the cache, above pooled LRU;
 * only the pooled size matters. */
static void test_workload_ceilings(void **st) {
    (void)st;
    static const char *const names[] = {"w1", "w4"};
    for (size_t k = 0; k < 2; k++) {
        bench_workload none, big, a, b, c;
        build(&none, names[k], 120, 0, 0);
        assert_true(isnan(none.reuse_ceiling_finite) && isnan(none.pooled_lru_hit_rate));
        assert_true(none.reuse_ceiling > 0.1);
        build(&big, names[k], 120, 1u << 24, 3);
        assert_true(big.reuse_ceiling_finite == none.reuse_ceiling);
        assert_true(big.pooled_lru_hit_rate <= big.reuse_ceiling_finite);
        build(&a, names[k], 120, 100, 3);
        build(&b, names[k], 120, 300, 1);
        build(&c, names[k], 120, 1000, 3);
        assert_true(a.reuse_ceiling_finite == b.reuse_ceiling_finite);
        assert_true(a.reuse_ceiling_finite <= c.reuse_ceiling_finite);
        assert_true(c.reuse_ceiling_finite <= none.reuse_ceiling);
        assert_true(a.reuse_ceiling_finite < none.reuse_ceiling);
        assert_true(a.pooled_lru_hit_rate >= 0 && a.pooled_lru_hit_rate <= a.reuse_ceiling_finite);
        assert_true(c.pooled_lru_hit_rate <= c.reuse_ceiling_finite);
        assert_true(a.reuse_ceiling == none.reuse_ceiling); /* the infinite one is untouched */
        bench_workload_free(&none);
        bench_workload_free(&big);
        bench_workload_free(&a);
        bench_workload_free(&b);
        bench_workload_free(&c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_min_textbook), cmocka_unit_test(test_min_extremes),
        cmocka_unit_test(test_min_bypass),   cmocka_unit_test(test_warmup_cut),
        cmocka_unit_test(test_lru_order),    cmocka_unit_test(test_min_is_optimal),
        cmocka_unit_test(test_properties),   cmocka_unit_test(test_workload_ceilings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
