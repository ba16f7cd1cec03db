/* Chained block hashing properties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "tokenize/ir_tokenize.h"

static void chain_properties(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 99);
    const char *salt[] = {"model-a", NULL, "salt"};
    irt_hash root = irt_hash_root(salt, 3);
    for (int iter = 0; iter < 500; iter++) {
        size_t bs = 1 + ir_rng_below(&r, 32);
        size_t n = ir_rng_below(&r, 400);
        uint32_t ids[400];
        for (size_t i = 0; i < n; i++) ids[i] = (uint32_t)ir_rng_below(&r, 50);
        irt_hash a[400], b[400];
        size_t na = irt_hash_blocks(root, ids, n, bs, a, 400);
        assert_int_equal(na, n / bs); /* partial blocks are never hashed */
        /* A prefix hashes the same alone as inside the longer prompt. */
        size_t k = n ? ir_rng_below(&r, n + 1) : 0;
        size_t nb = irt_hash_blocks(root, ids, k, bs, b, 400);
        for (size_t i = 0; i < nb; i++) assert_true(irt_hash_eq(a[i], b[i]));
        /* Changing one token changes its block and every later one, never an earlier one. */
        if (n) {
            size_t pos = ir_rng_below(&r, n);
            ids[pos] += 1000;
            size_t nc = irt_hash_blocks(root, ids, n, bs, b, 400);
            for (size_t i = 0; i < nc; i++) {
                if (i < pos / bs)
                    assert_true(irt_hash_eq(a[i], b[i]));
                else
                    assert_false(irt_hash_eq(a[i], b[i]));
            }
        }
    }
}

static void salts_separate_chains(void **state) {
    const char *s1[] = {"ab", "c"}, *s2[] = {"a", "bc"}, *s3[] = {"ab", "c"};
    irt_hash r1 = irt_hash_root(s1, 2), r2 = irt_hash_root(s2, 2), r3 = irt_hash_root(s3, 2);
    assert_false(irt_hash_eq(r1, r2));
    assert_true(irt_hash_eq(r1, r3));
    uint32_t ids[4] = {1, 2, 3, 4};
    assert_false(irt_hash_eq(irt_hash_block(r1, ids, 4), irt_hash_block(r2, ids, 4)));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_properties),
        cmocka_unit_test(salts_separate_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
