/* gw_reported_cached: the engine's cached tokens read from the tail of its body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "gateway/request.h"

static int64_t rc(const char *s) {
    return gw_reported_cached(s, strlen(s));
}

static void reads_usage_tails(void **state) {
    /* a JSON body */
    assert_int_equal(
        rc("\"usage\":{\"prompt_tokens\":40,\"prompt_tokens_details\":{\"cached_tokens\""
           ":32}},\"kv_transfer_params\":null}"),
        32);
    /* a stream's usage chunk, then [DONE] */
    assert_int_equal(
        rc("data: {\"usage\":{\"prompt_tokens_details\":{\"cached_tokens\": 1600}}}\n\n"
           "data: [DONE]\n\n"),
        1600);
    /* the last one wins (a tail may hold an earlier chunk's text) */
    assert_int_equal(rc("\"cached_tokens\":5 ... \"cached_tokens\":7}"), 7);
    /* details null: nothing cached, or the engine does not report them */
    assert_int_equal(rc("\"usage\":{\"prompt_tokens\":9,\"prompt_tokens_details\":null}"),
                     GW_USAGE_NO_DETAILS);
    /* no usage at all, or a value that is not a number */
    assert_int_equal(rc("data: [DONE]\n\n"), -1);
    assert_int_equal(rc("\"cached_tokens\":null"), -1);
    assert_int_equal(rc("\"cached_tokens\":"), -1);
    assert_int_equal(rc(""), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(reads_usage_tails)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
