/* freelist.c: per-loop recycling of fixed-size blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"

/* LIFO reuse up to the cap; under ASan (max forced to 0) nothing is kept. */
static void freelist_recycles_up_to_cap(void **state) {
    (void)state;
    ir_freelist f;
    ir_freelist_init(&f, 2);
    void *a = malloc(32), *b = malloc(32), *c = malloc(32);
    assert_null(ir_freelist_pop(&f));
    if (f.max == 0) { /* AddressSanitizer build */
        assert_false(ir_freelist_push(&f, a));
        free(a), free(b), free(c);
        return;
    }
    assert_true(ir_freelist_push(&f, a));
    assert_true(ir_freelist_push(&f, b));
    assert_false(ir_freelist_push(&f, c)); /* full: the caller frees it */
    free(c);
    assert_ptr_equal(ir_freelist_pop(&f), b);
    assert_true(ir_freelist_push(&f, b));
    assert_ptr_equal(ir_freelist_pop(&f), b);
    assert_ptr_equal(ir_freelist_pop(&f), a);
    assert_null(ir_freelist_pop(&f));
    assert_int_equal(f.n, 0);
    free(a), free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(freelist_recycles_up_to_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
