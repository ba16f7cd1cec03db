/* arena.c: the bump allocator, its cap and its growing chunks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"

static void arena_alloc_and_cap(void **state) {
    ir_arena *a = ir_arena_new(128, 1024);
    char *s = ir_arena_strdup(a, "abc");
    assert_string_equal(s, "abc");
    void *big = ir_arena_alloc(a, 600); /* larger than a chunk */
    assert_non_null(big);
    assert_int_equal(((uintptr_t)big) % 16, 0);
    assert_null(ir_arena_alloc(a, 600)); /* would pass the 1024 cap */
    ir_arena_reset(a);
    assert_int_equal(ir_arena_used(a), 0);
    assert_non_null(ir_arena_alloc(a, 600));
    ir_arena_free(a);
}

/* Under growth each new chunk doubles, up to the ceiling (big chunks come
 * from ir_big_calloc); without it every chunk has the fixed size. */
static void arena_chunks_grow(void **state) {
    ir_arena *fixed = ir_arena_new(1024, 0), *grow = ir_arena_new(1024, 0);
    ir_arena_set_growth(grow, (size_t)1 << 20);
    size_t last_f = ir_arena_held(fixed), last_g = ir_arena_held(grow), prev_chunk = 1024;
    int grown = 0;
    for (int i = 0; i < 8192; i++) {
        char *a = ir_arena_alloc(fixed, 1000), *b = ir_arena_alloc(grow, 1000);
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal((uintptr_t)b % 16, 0);
        memset(b, i & 0xff, 1000); /* all of it is writable */
        size_t hf = ir_arena_held(fixed), hg = ir_arena_held(grow);
        if (hf != last_f) assert_in_range(hf - last_f, 1024, 1024 + 64); /* one fixed chunk */
        if (hg != last_g) {
            size_t chunk = prev_chunk * 2 > ((size_t)1 << 20) ? (size_t)1 << 20 : prev_chunk * 2;
            assert_in_range(hg - last_g, chunk, chunk + 64); /* header included */
            prev_chunk = chunk;
            grown++;
        }
        last_f = hf, last_g = hg;
    }
    assert_int_equal(prev_chunk, 1 << 20); /* reached the ceiling */
    assert_in_range(grown, 10, 20);
    assert_int_equal(ir_arena_used(grow), ir_arena_used(fixed));
    ir_arena_free(fixed);
    ir_arena_free(grow);

    /* The cap still holds under growth. */
    ir_arena *capped = ir_arena_new(64, 4096);
    ir_arena_set_growth(capped, 1 << 20);
    size_t got = 0;
    while (ir_arena_alloc(capped, 100)) got += 112; /* rounded to 16 */
    assert_true(got <= 4096 && got > 4096 - 112);
    ir_arena_reset(capped);
    assert_non_null(ir_arena_calloc(capped, 100));
    ir_arena_free(capped);
}

/* Big blocks are zeroed, aligned for any use, and grow by copying. */
static void big_blocks(void **state) {
    size_t sizes[] = {1, 4096, (size_t)1 << 20, ((size_t)3 << 20) + 5};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        unsigned char *p = ir_big_calloc(sizes[i]);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        for (size_t k = 0; k < sizes[i]; k += 4093) assert_int_equal(p[k], 0);
        assert_int_equal(p[sizes[i] - 1], 0);
        memset(p, 0xab, sizes[i]);
        unsigned char *q = ir_big_grow(p, sizes[i], sizes[i] * 2);
        assert_non_null(q);
        assert_int_equal(q[sizes[i] - 1], 0xab);
        assert_int_equal(q[2 * sizes[i] - 1], 0);
        ir_big_free(q);
    }
    ir_big_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(arena_alloc_and_cap),
        cmocka_unit_test(arena_chunks_grow),
        cmocka_unit_test(big_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
