/* Chained block hashing properties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/ir_core.h"
#include <stdlib.h>
#include <xxhash.h>

static void chain_properties(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 99);
    ir_hash128 root = ir_block_hash_root("model-a", NULL, "salt");
    for (int iter = 0; iter < 500; iter++) {
        size_t bs = 1 + ir_rng_below(&r, 32);
        size_t n = ir_rng_below(&r, 400);
        uint32_t ids[400];
        for (size_t i = 0; i < n; i++) ids[i] = (uint32_t)ir_rng_below(&r, 50);
        ir_hash128 a[400], b[400];
        size_t na = ir_block_hash_chain(root, ids, n, bs, a, 400);
        assert_int_equal(na, n / bs); /* partial blocks are never hashed */
        /* A prefix hashes the same alone as inside the longer prompt. */
        size_t k = n ? ir_rng_below(&r, n + 1) : 0;
        size_t nb = ir_block_hash_chain(root, ids, k, bs, b, 400);
        for (size_t i = 0; i < nb; i++) assert_true(ir_hash128_eq(a[i], b[i]));
        /* Changing one token changes its block and every later one, never an earlier one. */
        if (n) {
            size_t pos = ir_rng_below(&r, n);
            ids[pos] += 1000;
            size_t nc = ir_block_hash_chain(root, ids, n, bs, b, 400);
            for (size_t i = 0; i < nc; i++) {
                if (i < pos / bs)
                    assert_true(ir_hash128_eq(a[i], b[i]));
                else
                    assert_false(ir_hash128_eq(a[i], b[i]));
            }
        }
    }
}

static void salts_separate_chains(void **state) {
    ir_hash128 r1 = ir_block_hash_root("ab", "c", NULL), r2 = ir_block_hash_root("a", "bc", NULL),
               r3 = ir_block_hash_root("ab", "c", NULL);
    assert_false(ir_hash128_eq(r1, r2));
    assert_true(ir_hash128_eq(r1, r3));
    uint32_t ids[4] = {1, 2, 3, 4};
    assert_false(ir_hash128_eq(ir_block_hash_next(r1, ids, 4), ir_block_hash_next(r2, ids, 4)));
}

/* An absent salt is not the same as an empty one, and a cache_salt never
 * collides with an adapter of the same name (the old root skipped NULLs, so
 * (model, NULL, "x") and (model, "x", NULL) shared a chain). */
static void absent_salts_are_distinct(void **state) {
    ir_hash128 a = ir_block_hash_root("m", NULL, "x"), b = ir_block_hash_root("m", "x", NULL);
    assert_false(ir_hash128_eq(a, b));
    assert_false(
        ir_hash128_eq(ir_block_hash_root("m", NULL, NULL), ir_block_hash_root("m", "", NULL)));
    assert_false(
        ir_hash128_eq(ir_block_hash_root(NULL, NULL, NULL), ir_block_hash_root("", "", "")));
}

/* A salt is its bytes, NULs included: "a\0b" and "a\0c" are different salts, and
 * "a\0b" is not "a" (a salt cut at its NUL shared the chain of every salt with
 * the same first byte). Without NULs the _n form equals the plain one. */
static void salts_with_nuls(void **state) {
    ir_hash128 ab = ir_block_hash_root_n("m", NULL, "a\0b", 3);
    ir_hash128 ac = ir_block_hash_root_n("m", NULL, "a\0c", 3);
    assert_false(ir_hash128_eq(ab, ac));
    assert_false(ir_hash128_eq(ab, ir_block_hash_root("m", NULL, "a")));
    assert_true(ir_hash128_eq(ir_block_hash_root_n("m", NULL, "salt", 4),
                              ir_block_hash_root("m", NULL, "salt")));
    assert_true(ir_hash128_eq(ir_block_hash_root_n("m", NULL, NULL, 0),
                              ir_block_hash_root("m", NULL, NULL)));
}

/* The one-shot path (small blocks) and the streaming path (large ones) both
 * equal XXH3-128 over parent.lo, parent.hi and the ids, concatenated. */
static void matches_reference_digest(void **state) {
    size_t sizes[] = {1, 16, 32, 1019, 1020, 1021, 3000};
    ir_hash128 parent = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};
    for (size_t k = 0; k < IR_ARRAY_LEN(sizes); k++) {
        size_t bs = sizes[k];
        unsigned char *buf = malloc(16 + bs * 4);
        uint32_t *ids = malloc(bs * 4);
        assert_non_null(buf);
        assert_non_null(ids);
        for (size_t i = 0; i < bs; i++) ids[i] = (uint32_t)(i * 2654435761u);
        memcpy(buf, &parent.lo, 8);
        memcpy(buf + 8, &parent.hi, 8);
        memcpy(buf + 16, ids, bs * 4);
        XXH128_hash_t want = XXH3_128bits(buf, 16 + bs * 4);
        ir_hash128 got = ir_block_hash_next(parent, ids, bs);
        assert_true(got.lo == want.low64 && got.hi == want.high64);
        free(buf);
        free(ids);
    }
}

/* The 16-token path computes XXH3's rounds itself: it must equal the library's
 * digest of the same 80 bytes for any parent and ids, one block or a chain. */
static void sixteen_token_path_matches_xxh3(void **state) {
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    uint32_t ids[16 * 64];
    for (size_t i = 0; i < IR_ARRAY_LEN(ids); i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        ids[i] = (uint32_t)(x >> 32);
    }
    ir_hash128 parent = {x, ~x}, chain[64];
    assert_int_equal(ir_block_hash_chain(parent, ids, IR_ARRAY_LEN(ids), 16, chain, 64), 64);
    for (size_t b = 0; b < 64; b++) {
        unsigned char buf[80];
        memcpy(buf, &parent.lo, 8);
        memcpy(buf + 8, &parent.hi, 8);
        memcpy(buf + 16, ids + b * 16, 64);
        XXH128_hash_t want = XXH3_128bits(buf, sizeof buf);
        assert_true(chain[b].lo == want.low64 && chain[b].hi == want.high64);
        parent = chain[b];
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_properties),
        cmocka_unit_test(salts_separate_chains),
        cmocka_unit_test(absent_salts_are_distinct),
        cmocka_unit_test(salts_with_nuls),
        cmocka_unit_test(matches_reference_digest),
        cmocka_unit_test(sixteen_token_path_matches_xxh3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
