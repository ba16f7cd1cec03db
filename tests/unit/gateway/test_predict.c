/* gw_reported_cached and gw_reported_completion: the engine's cached and completion
 * tokens read from the tail of its body. */
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

/* JSON allows whitespace around the colon (Python's json.dumps(indent=...),
 * pretty-printing proxies): the readers take it. */
static void reads_spaced_colons(void **state) {
    assert_int_equal(rc("\"prompt_tokens_details\": {\"cached_tokens\" : 48}}"), 48);
    assert_int_equal(rc("\"cached_tokens\"\t:\n 7}"), 7);
    assert_int_equal(rc("\"usage\": {\"prompt_tokens_details\" : null}"), GW_USAGE_NO_DETAILS);
    static const char spaced[] = "\"completion_tokens\" :12,";
    assert_int_equal(gw_reported_completion(spaced, sizeof spaced - 1), 12);
    /* the key's name as a string value is not the key */
    assert_int_equal(rc("\"cached_tokens\":3, \"note\": \"cached_tokens\"}"), 3);
    assert_int_equal(rc("\"cached_tokens\" : null"), -1);
}

static int64_t cc(const char *s) {
    return gw_reported_completion(s, strlen(s));
}

static void reads_completion_tokens(void **state) {
    assert_int_equal(cc("\"usage\":{\"prompt_tokens\":40,\"total_tokens\":42,"
                        "\"completion_tokens\":2,\"prompt_tokens_details\":null}"),
                     2);
    assert_int_equal(cc("data: {\"usage\":{\"completion_tokens\": 812}}\n\ndata: [DONE]\n\n"), 812);
    assert_int_equal(cc("\"completion_tokens\":5 ... \"completion_tokens\":7}"), 7);
    assert_int_equal(cc("data: [DONE]\n\n"), -1);
    assert_int_equal(cc("\"completion_tokens\":null"), -1);
    assert_int_equal(cc(""), -1);
    /* the cached_tokens reader does not take it for its own key */
    assert_int_equal(rc("\"completion_tokens\":3"), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(reads_usage_tails),
                                       cmocka_unit_test(reads_completion_tokens),
                                       cmocka_unit_test(reads_spaced_colons)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
