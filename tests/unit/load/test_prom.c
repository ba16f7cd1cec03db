/* The Prometheus text reader: sums over label sets, the grammar's corners,
 * malformed lines skipped and counted, labels read back unescaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "load/ir_load.h"

static double sum(const char *page, const char *family) {
    return irl_prom_sum(page, strlen(page), family);
}

/* Moved from tests/unit/bench/test_openloop.c with the reader; same assertions. */
static void test_prom_sum(void **st) {
    const char *page = "# HELP vllm:prefix_cache_hits_total x\n"
                       "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 48.0\n"
                       "vllm:prefix_cache_hits_total{engine=\"1\",model_name=\"m\"} 2\n"
                       "vllm:prefix_cache_hits_totalx 7\n"
                       "vllm:prefix_cache_queries_total 100.0\n";
    assert_true(sum(page, "vllm:prefix_cache_hits_total") == 50);
    assert_true(sum(page, "vllm:prefix_cache_queries_total") == 100);
    assert_true(sum(page, "vllm:nope") == -1);
}

typedef struct seen {
    irl_sample s[8];
    int n;
} seen;

static int keep(void *ud, const irl_sample *s) {
    seen *x = ud;
    if (x->n < 8) x->s[x->n] = *s;
    x->n++;
    return 0;
}

/* A '}' or an escaped quote inside a label value does not end the labels; a
 * timestamp, blanks, CRLF and a last line without '\n' are read. */
static void grammar_corners(void **st) {
    const char *page = "# TYPE a counter\n"
                       "\n"
                       "a{path=\"/x}\",q=\"say \\\"hi\\\"\\n\",} 1.5e3 1700000000000\r\n"
                       "  b   -2   \n"
                       "c{} +Inf\n"
                       "d NaN -5\n"
                       "e{le=\"0.5\"} 3";
    seen x = {0};
    size_t bad = 99;
    assert_int_equal(irl_prom_parse(page, strlen(page), keep, &x, &bad), 0);
    assert_int_equal(bad, 0);
    assert_int_equal(x.n, 5);
    assert_int_equal(x.s[0].name_len, 1);
    assert_true(x.s[0].value == 1500);
    assert_true(x.s[0].has_timestamp);
    assert_true(x.s[0].timestamp_ms == 1700000000000LL);
    char v[32];
    assert_true(irl_prom_label(&x.s[0], "path", v, sizeof v));
    assert_string_equal(v, "/x}");
    assert_true(irl_prom_label(&x.s[0], "q", v, sizeof v));
    assert_string_equal(v, "say \"hi\"\n");
    assert_false(irl_prom_label(&x.s[0], "pat", v, sizeof v));
    assert_true(irl_prom_label(&x.s[0], "path", v, 3)); /* cut to fit */
    assert_string_equal(v, "/x");
    assert_true(x.s[1].value == -2 && !x.s[1].has_timestamp);
    assert_int_equal(x.s[2].labels_len, 0);
    assert_true(isinf(x.s[2].value) && x.s[2].value > 0);
    assert_true(isnan(x.s[3].value) && x.s[3].timestamp_ms == -5);
    assert_true(x.s[4].value == 3);
    assert_false(irl_prom_label(&x.s[1], "le", v, sizeof v));
}

/* Each malformed line is skipped and counted; the good ones around it are read. */
static void malformed_lines_are_skipped(void **st) {
    const char *bad_lines[] = {
        "9starts_with_digit 1",
        "no_value",
        "no_value{a=\"1\"}",
        "unclosed{a=\"1\" 2",
        "unquoted{a=1} 2",
        "open_quote{a=\"1} 2",
        "junk_after 1 2 3",
        "not_a_number 1.2.3x",
        "hex 0x10",
        "bad_ts 1 12abc",
        "missing_eq{a\"1\"} 2",
        "inf_lower inf",
    };
    size_t nbad = sizeof bad_lines / sizeof *bad_lines;
    for (size_t i = 0; i < nbad; i++) {
        char page[256];
        int n = snprintf(page, sizeof page, "good 1\n%s\ngood 2\n", bad_lines[i]);
        size_t bad = 0;
        seen x = {0};
        irl_prom_parse(page, (size_t)n, keep, &x, &bad);
        if (bad != 1 || x.n != 2)
            fail_msg("line \"%s\": %zu malformed, %d read", bad_lines[i], bad, x.n);
    }
    /* A line past the cap is malformed, however well-formed it looks. */
    static char big[IRL_PROM_MAX_LINE + 64];
    memset(big, 0, sizeof big);
    strcpy(big, "long{a=\"");
    size_t at = strlen(big);
    memset(big + at, 'x', IRL_PROM_MAX_LINE);
    strcpy(big + at + IRL_PROM_MAX_LINE, "\"} 1\nshort 2\n");
    size_t bad = 0;
    seen x = {0};
    irl_prom_parse(big, strlen(big), keep, &x, &bad);
    assert_int_equal(bad, 1);
    assert_int_equal(x.n, 1);
}

static int stop_at_second(void *ud, const irl_sample *s) {
    return ++*(int *)ud == 2 ? 7 : 0;
}

/* The page is read by length: bytes past len are never looked at, and the
 * callback can stop the walk. */
static void bounded_and_stoppable(void **st) {
    const char page[] = "a 1\nb 2\nc 3\n";
    assert_true(irl_prom_sum(page, 4, "b") == -1); /* only "a 1\n" */
    assert_true(irl_prom_sum(page, 7, "b") == 2);  /* "b 2" without its newline */
    int calls = 0;
    assert_int_equal(irl_prom_parse(page, sizeof page - 1, stop_at_second, &calls, NULL), 7);
    assert_int_equal(calls, 2);
    assert_int_equal(irl_prom_parse("", 0, stop_at_second, &calls, NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prom_sum),
        cmocka_unit_test(grammar_corners),
        cmocka_unit_test(malformed_lines_are_skipped),
        cmocka_unit_test(bounded_and_stoppable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
