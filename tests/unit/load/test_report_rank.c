/* One data-parallel rank's report (irl_report_parse_rank): only the samples of that
 * rank (vLLM's engine label, SGLang's dp_rank) and the unlabelled ones count; a
 * page without rank labels gives every rank the whole engine; a rank the page
 * lacks is unreadable, with the rank in the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/ir_load.h"

static char *fixture(const char *name, size_t *len) {
    const char *dir = getenv("IR_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/metrics/%s", dir ? dir : "tests/fixtures", name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 16);
    assert_non_null(buf);
    *len = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static void vllm_ranks(void **st) {
    (void)st;
    size_t n;
    char *page = fixture("vllm_dp2.txt", &n);
    irl_report r;
    char why[256] = "";
    assert_int_equal(irl_report_parse_rank(page, n, 0, &r, why, sizeof why), 0);
    assert_int_equal(r.ranks, 1);
    assert_true(r.running == 7 && r.waiting == 3);
    assert_true(fabs(r.kv_usage - 0.625) < 1e-12);
    assert_true(r.prefix_queries == 1012506);
    assert_int_equal(r.capacity_blocks, 27910); /* its own cache, not the sum */
    assert_int_equal(irl_report_parse_rank(page, n, 1, &r, why, sizeof why), 0);
    assert_true(r.running == 5 && r.waiting == 0);
    assert_true(fabs(r.kv_usage - 0.375) < 1e-12);
    assert_true(r.prefix_queries == 487494);
    assert_int_equal(r.capacity_blocks, 27910);
    /* The whole engine, as before. */
    assert_int_equal(irl_report_parse_rank(page, n, -1, &r, why, sizeof why), 0);
    assert_true(r.running == 12 && r.waiting == 3);
    /* A rank the engine does not have. */
    assert_int_equal(irl_report_parse_rank(page, n, 2, &r, why, sizeof why), -1);
    assert_non_null(strstr(why, "vllm:num_requests_running"));
    assert_non_null(strstr(why, "data-parallel rank 2"));
    free(page);
}

static void sglang_ranks(void **st) {
    (void)st;
    size_t n;
    char *page = fixture("sglang_dp2.txt", &n);
    irl_report r;
    assert_int_equal(irl_report_parse_rank(page, n, 1, &r, NULL, 0), 0);
    assert_int_equal(r.engine, IRL_ENGINE_SGLANG);
    assert_true(r.running == 6 && r.waiting == 1);
    assert_true(fabs(r.kv_usage - 0.25) < 1e-12);
    assert_int_equal(r.capacity_tokens, 320000);
    assert_int_equal(irl_report_parse_rank(page, n, 0, &r, NULL, 0), 0);
    assert_true(r.running == 4 && r.waiting == 2); /* the priority breakdown skipped */
    free(page);
}

/* No rank labels (an engine without DP, or an older one): every rank is handed the
 * whole engine's numbers. */
static void unlabelled_page(void **st) {
    (void)st;
    const char *page = "vllm:num_requests_running{model_name=\"m\"} 4\n"
                       "vllm:num_requests_waiting{model_name=\"m\"} 2\n"
                       "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n";
    irl_report r;
    for (int64_t rank = 0; rank < 3; rank++) {
        assert_int_equal(irl_report_parse_rank(page, strlen(page), rank, &r, NULL, 0), 0);
        assert_true(r.running == 4 && r.waiting == 2 && r.kv_usage == 0.5);
    }
    /* A label value that is not a rank is no rank's. */
    const char *odd = "vllm:num_requests_running{engine=\"x\"} 4\n"
                      "vllm:num_requests_waiting{engine=\"0\"} 2\n"
                      "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n";
    assert_int_equal(irl_report_parse_rank(odd, strlen(odd), 0, &r, NULL, 0), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vllm_ranks),
        cmocka_unit_test(sglang_ranks),
        cmocka_unit_test(unlabelled_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
