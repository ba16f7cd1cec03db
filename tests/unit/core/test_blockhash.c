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
    /* Every block of a chain depends on its salts, not the first one only. */
    uint32_t ids[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    ir_hash128 a[3], b[3];
    assert_int_equal(ir_block_hash_chain(r1, ids, 12, 4, a, 3), 3);
    assert_int_equal(ir_block_hash_chain(r2, ids, 12, 4, b, 3), 3);
    for (int i = 0; i < 3; i++) assert_false(ir_hash128_eq(a[i], b[i]));
    const char *salts[] = {"s1", "s2"};
    for (int k = 0; k < 2; k++) {
        ir_hash128 r = ir_block_hash_root("m", NULL, salts[k]);
        ir_block_hash_chain(r, ids, 12, 4, k ? b : a, 3);
    }
    for (int i = 0; i < 3; i++) assert_false(ir_hash128_eq(a[i], b[i]));
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

/* The rule of ir_core.h, written out with the library's XXH3_128bits over a
 * message built byte by byte: H[-2] = root, H[-1] = 0, H[i] = XXH3_128(m[i]) ^
 * H[i-1], m[i] = the block's bytes zero-padded to 16, H[i-2] XORed into the
 * first 16 (lo then hi, little-endian). */
static void reference_chain(ir_hash128 root, const uint32_t *ids, size_t nb, size_t bs,
                            ir_hash128 *out) {
    ir_hash128 two = root, one = {0, 0};
    size_t nbytes = bs * 4, mlen = nbytes < 16 ? 16 : nbytes;
    unsigned char *m = calloc(mlen, 1);
    assert_non_null(m);
    for (size_t i = 0; i < nb; i++) {
        memset(m, 0, mlen);
        for (size_t t = 0; t < bs; t++)
            for (int k = 0; k < 4; k++) m[t * 4 + k] = (unsigned char)(ids[i * bs + t] >> (8 * k));
        for (int k = 0; k < 8; k++) {
            m[k] ^= (unsigned char)(two.lo >> (8 * k));
            m[8 + k] ^= (unsigned char)(two.hi >> (8 * k));
        }
        XXH128_hash_t x = XXH3_128bits(m, mlen);
        out[i] = (ir_hash128){x.low64 ^ one.lo, x.high64 ^ one.hi};
        two = one;
        one = out[i];
    }
    free(m);
}

static void fill_ids(uint32_t *ids, size_t n, uint64_t x) {
    for (size_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        ids[i] = (uint32_t)(x >> 32);
    }
}

/* Every path (16 tokens written out, small messages padded, one-shot copies,
 * streamed large blocks) gives the rule's hashes, over chains of several blocks
 * so that the grandparent and parent terms are both exercised. */
static void matches_reference_rule(void **state) {
    size_t sizes[] = {1, 2, 3, 4, 5, 15, 16, 17, 32, 1019, 1020, 1021, 3000};
    ir_hash128 root = ir_block_hash_root("m", "lora", "salt");
    for (size_t k = 0; k < IR_ARRAY_LEN(sizes); k++) {
        size_t bs = sizes[k], nb = bs >= 1000 ? 5 : 40;
        uint32_t *ids = malloc(nb * bs * sizeof *ids);
        ir_hash128 *got = malloc(nb * sizeof *got), *want = malloc(nb * sizeof *want);
        assert_true(ids && got && want);
        fill_ids(ids, nb * bs, bs);
        assert_int_equal(ir_block_hash_chain(root, ids, nb * bs, bs, got, nb), nb);
        reference_chain(root, ids, nb, bs, want);
        for (size_t i = 0; i < nb; i++) assert_true(ir_hash128_eq(got[i], want[i]));
        free(ids);
        free(got);
        free(want);
    }
}

/* Block by block (the simulator, the event index) equals the whole chain (the
 * gateway), and a chain resumed after k blocks (ir_block_chain_at) or under a
 * block's parent and grandparent (ir_block_chain_under) goes on identically. */
static void incremental_equals_chain(void **state) {
    size_t sizes[] = {1, 4, 16, 33};
    ir_hash128 root = ir_block_hash_root("m", NULL, "x");
    for (size_t s = 0; s < IR_ARRAY_LEN(sizes); s++) {
        size_t bs = sizes[s];
        enum { NB = 24 };
        uint32_t ids[NB * 33];
        ir_hash128 all[NB];
        fill_ids(ids, NB * bs, 7 + bs);
        assert_int_equal(ir_block_hash_chain(root, ids, NB * bs, bs, all, NB), NB);
        ir_block_chain c = ir_block_chain_at(root, NULL, 0);
        for (size_t i = 0; i < NB; i++)
            assert_true(ir_hash128_eq(ir_block_hash_next(&c, ids + i * bs, bs), all[i]));
        for (size_t k = 0; k < NB; k++) {
            ir_block_chain at = ir_block_chain_at(root, all, k);
            ir_block_chain under = ir_block_chain_under(root, k >= 2 ? &all[k - 2] : NULL,
                                                        k >= 1 ? &all[k - 1] : NULL);
            ir_hash128 h1 = ir_block_hash_next(&at, ids + k * bs, bs);
            ir_hash128 h2 = ir_block_hash_next(&under, ids + k * bs, bs);
            assert_true(ir_hash128_eq(h1, all[k]));
            assert_true(ir_hash128_eq(h2, all[k]));
        }
    }
}

/* A trailing partial block is never hashed: its tokens change nothing, and
 * nothing is written past the full blocks. */
static void partial_block_never_hashed(void **state) {
    ir_hash128 root = ir_block_hash_root("m", NULL, NULL);
    uint32_t ids[16 * 3 + 15];
    fill_ids(ids, IR_ARRAY_LEN(ids), 3);
    ir_hash128 a[5], b[5];
    memset(a, 0xab, sizeof a);
    assert_int_equal(ir_block_hash_chain(root, ids, IR_ARRAY_LEN(ids), 16, a, 5), 3);
    for (int i = 3; i < 5; i++) assert_true(a[i].lo == 0xababababababababULL);
    for (size_t t = 16 * 3; t < IR_ARRAY_LEN(ids); t++) ids[t] ^= 0x5555u;
    assert_int_equal(ir_block_hash_chain(root, ids, IR_ARRAY_LEN(ids), 16, b, 5), 3);
    for (int i = 0; i < 3; i++) assert_true(ir_hash128_eq(a[i], b[i]));
    assert_int_equal(ir_block_hash_chain(root, ids, 15, 16, b, 5), 0);
    assert_int_equal(ir_block_hash_chain(root, ids, 64, 0, b, 5), 0);
}

/* Two prompts that differ in one block i differ in every block from i on, for
 * a change anywhere in the block, the grandparent-keyed first 16 bytes
 * included; and moving a block or swapping two changes the hashes too. */
static void every_token_position_counts(void **state) {
    ir_hash128 root = ir_block_hash_root("m", NULL, NULL);
    enum { NB = 8 };
    uint32_t ids[NB * 16], mod[NB * 16];
    ir_hash128 a[NB], b[NB];
    fill_ids(ids, NB * 16, 11);
    ir_block_hash_chain(root, ids, NB * 16, 16, a, NB);
    for (size_t t = 0; t < NB * 16; t++) {
        memcpy(mod, ids, sizeof ids);
        mod[t] ^= 1u << (t % 32);
        ir_block_hash_chain(root, mod, NB * 16, 16, b, NB);
        for (size_t i = 0; i < NB; i++) assert_int_equal(ir_hash128_eq(a[i], b[i]), i < t / 16);
    }
    memcpy(mod, ids, sizeof ids); /* swap blocks 2 and 3 */
    memcpy(mod + 32, ids + 48, 64);
    memcpy(mod + 48, ids + 32, 64);
    ir_block_hash_chain(root, mod, NB * 16, 16, b, NB);
    for (size_t i = 2; i < NB; i++) assert_false(ir_hash128_eq(a[i], b[i]));
}

/* Every chain of 5 blocks drawn from 4 token blocks (repeats and swaps
 * included): prompts with the same first k blocks share exactly their first k
 * hashes, and no two distinct prefixes, at the same depth or not, share one. */
static void no_collisions_among_related_chains(void **state) {
    enum { NCH = 1024, NB = 5 }; /* chain c's block i is token block (c >> 2i) & 3 */
    static ir_hash128 all[NCH * NB], uniq[NCH * NB];
    uint32_t blocks[4][16];
    for (int k = 0; k < 4; k++) fill_ids(blocks[k], 16, (uint64_t)k + 100);
    ir_hash128 root = ir_block_hash_root("m", NULL, NULL);
    for (uint32_t c = 0; c < NCH; c++) {
        uint32_t ids[NB * 16];
        for (int i = 0; i < NB; i++) memcpy(ids + i * 16, blocks[(c >> (2 * i)) & 3], 64);
        assert_int_equal(ir_block_hash_chain(root, ids, NB * 16, 16, all + c * NB, NB), NB);
    }
    size_t n = 0;
    for (uint32_t i = 0; i < NB; i++) {
        uint32_t mask = (1u << (2 * (i + 1))) - 1; /* blocks 0..i: c & mask */
        for (uint32_t c = 0; c < NCH; c++) {
            assert_true(ir_hash128_eq(all[c * NB + i], all[(c & mask) * NB + i]));
            if (c <= mask) uniq[n++] = all[c * NB + i]; /* one per distinct prefix */
        }
    }
    assert_int_equal(n, 4 + 16 + 64 + 256 + 1024);
    for (size_t x = 0; x < n; x++)
        for (size_t y = x + 1; y < n; y++) assert_false(ir_hash128_eq(uniq[x], uniq[y]));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(chain_properties),
        cmocka_unit_test(salts_separate_chains),
        cmocka_unit_test(absent_salts_are_distinct),
        cmocka_unit_test(salts_with_nuls),
        cmocka_unit_test(matches_reference_rule),
        cmocka_unit_test(incremental_equals_chain),
        cmocka_unit_test(partial_block_never_hashed),
        cmocka_unit_test(every_token_position_counts),
        cmocka_unit_test(no_collisions_among_related_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
