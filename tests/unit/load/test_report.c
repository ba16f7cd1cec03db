/* The engine-report reader on realistic pages (tests/fixtures/metrics): the
 * engine told by prefix, data-parallel ranks summed, per-priority breakdowns
 * skipped, capacity from cache_config_info or SGLang's token pool, unreadable
 * pages with their reason, restarts from counters going backwards, and one
 * data-parallel rank's report. */
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

static int read_page(const char *page, irl_report *r, char *why) {
    return irl_report_parse(page, strlen(page), r, why, 256);
}

static void vllm_data_parallel(void **st) {
    size_t n;
    char *page = fixture("vllm_dp2.txt", &n);
    irl_report r;
    char why[256] = "";
    assert_int_equal(irl_report_parse(page, n, &r, why, sizeof why), 0);
    assert_int_equal(r.engine, IRL_ENGINE_VLLM);
    assert_string_equal(irl_engine_name(r.engine), "vllm");
    assert_int_equal(r.ranks, 2);
    assert_true(r.running == 12 && r.waiting == 3);
    assert_true(fabs(r.kv_usage - 0.5) < 1e-12); /* the mean of 0.625 and 0.375 */
    assert_true(r.has_prefix);
    assert_true(r.prefix_queries == 1500000 && r.prefix_hits == 750000);
    assert_true(r.has_preemptions && r.preemptions == 3);
    assert_int_equal(r.capacity_blocks, 2 * 27910);
    assert_int_equal(r.block_size, 16);
    assert_int_equal(r.capacity_tokens, 2 * 27910 * 16);
    assert_int_equal(r.malformed, 0);
    assert_int_equal(irl_report_capacity_blocks(&r, 16), 55820);
    assert_int_equal(irl_report_capacity_blocks(&r, 32), 27910); /* rescaled to the index's */
    free(page);
}

static void vllm_older_names(void **st) {
    size_t n;
    char *page = fixture("vllm_v0_names.txt", &n);
    irl_report r;
    assert_int_equal(irl_report_parse(page, n, &r, NULL, 0), 0);
    assert_int_equal(r.engine, IRL_ENGINE_VLLM);
    assert_int_equal(r.ranks, 1);
    assert_true(r.running == 2 && r.waiting == 1);
    assert_true(fabs(r.kv_usage - 0.1) < 1e-12);
    assert_false(r.has_prefix);
    assert_false(r.has_preemptions);
    assert_int_equal(r.capacity_blocks, 0); /* "None" while the engine starts */
    assert_int_equal(r.block_size, 32);
    assert_int_equal(irl_report_capacity_blocks(&r, 16), 0);
    free(page);
}

static void sglang_data_parallel(void **st) {
    size_t n;
    char *page = fixture("sglang_dp2.txt", &n);
    irl_report r;
    assert_int_equal(irl_report_parse(page, n, &r, NULL, 0), 0);
    assert_int_equal(r.engine, IRL_ENGINE_SGLANG);
    assert_int_equal(r.ranks, 2);
    assert_true(r.running == 10);
    assert_true(r.waiting == 3); /* the priority="0"/"1" breakdown is not added again */
    assert_true(fabs(r.kv_usage - 0.375) < 1e-12);
    assert_true(r.has_prefix);
    assert_true(r.prefix_queries == 8128902 && r.prefix_hits == 4000000);
    assert_int_equal(r.capacity_tokens, 640000);
    assert_int_equal(r.capacity_blocks, 0);
    assert_int_equal(irl_report_capacity_blocks(&r, 16), 40000);
    free(page);
}

/* --enable-metrics-for-all-schedulers: each tensor-parallel worker of a rank reports
 * the same scheduler; only tp_rank 0 counts (they were summed: running, waiting and
 * the capacity came out times the TP size, and TP workers counted as DP ranks). */
static void sglang_tensor_parallel_copies(void **st) {
    (void)st;
    const char *page = "sglang:num_running_reqs{dp_rank=\"0\",tp_rank=\"0\"} 4\n"
                       "sglang:num_running_reqs{dp_rank=\"0\",tp_rank=\"1\"} 4\n"
                       "sglang:num_queue_reqs{dp_rank=\"0\",tp_rank=\"0\"} 2\n"
                       "sglang:num_queue_reqs{dp_rank=\"0\",tp_rank=\"1\"} 2\n"
                       "sglang:token_usage{dp_rank=\"0\",tp_rank=\"0\"} 0.5\n"
                       "sglang:token_usage{dp_rank=\"0\",tp_rank=\"1\"} 0.5\n"
                       "sglang:max_total_num_tokens{dp_rank=\"0\",tp_rank=\"0\"} 1600\n"
                       "sglang:max_total_num_tokens{dp_rank=\"0\",tp_rank=\"1\"} 1600\n";
    irl_report r;
    char why[256];
    assert_int_equal(read_page(page, &r, why), 0);
    assert_int_equal(r.ranks, 1);
    assert_true(r.running == 4 && r.waiting == 2);
    assert_int_equal(r.capacity_tokens, 1600);
}

static void renamed_family_is_unreadable(void **st) {
    size_t n;
    char *page = fixture("vllm_renamed.txt", &n);
    irl_report r;
    char why[256] = "";
    assert_int_equal(irl_report_parse(page, n, &r, why, sizeof why), -1);
    assert_string_equal(why, "the page lacks vllm:num_requests_waiting");
    free(page);
}

static void unreadable_pages(void **st) {
    irl_report r;
    char why[256];
    assert_int_equal(read_page("", &r, why), -1);
    assert_string_equal(why, "no vllm: or sglang: metrics");
    assert_int_equal(read_page("<html>502 Bad Gateway</html>\n", &r, why), -1);
    assert_string_equal(why, "no vllm: or sglang: metrics");
    /* SGLang without its queue gauge. */
    assert_int_equal(read_page("sglang:num_running_reqs 1\nsglang:token_usage 0.1\n", &r, why), -1);
    assert_string_equal(why, "the page lacks sglang:num_queue_reqs");
    /* A vLLM page without any KV usage name. */
    assert_int_equal(
        read_page("vllm:num_requests_running 1\nvllm:num_requests_waiting 0\n", &r, why), -1);
    assert_string_equal(why, "the page lacks vllm:kv_cache_usage_perc");
    /* A required value that is not a count. */
    assert_int_equal(read_page("vllm:num_requests_running{engine=\"0\"} NaN\n"
                               "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0\n",
                               &r, why),
                     -1);
    assert_string_equal(why,
                        "a value that is not a finite number >= 0 in vllm:num_requests_running");
    assert_int_equal(read_page("vllm:num_requests_running 1\nvllm:num_requests_waiting -3\n"
                               "vllm:kv_cache_usage_perc 0\n",
                               &r, why),
                     -1);
    assert_string_equal(why,
                        "a value that is not a finite number >= 0 in vllm:num_requests_waiting");
    /* Cut mid-line: the last family is gone, so the page is unreadable, not idle. */
    const char *cut = "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\nvllm:kv_cache_us";
    assert_int_equal(read_page(cut, &r, why), -1);
}

static void tolerant_reading(void **st) {
    irl_report r;
    /* Extra labels, unknown families, malformed lines and an optional family
     * with a bad value (dropped) leave a readable page. */
    const char *page = "vllm:num_requests_running{engine=\"0\",model_name=\"m\",zone=\"a\"} 3\n"
                       "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 4 1700000000000\n"
                       "vllm:kv_cache_usage_perc{engine=\"0\"} 1.5\n"
                       "this line is junk\n"
                       "vllm:num_preemptions_total{engine=\"0\"} +Inf\n"
                       "vllm:something_new_total 9\n";
    assert_int_equal(irl_report_parse(page, strlen(page), &r, NULL, 0), 0);
    assert_true(r.running == 3 && r.waiting == 4);
    assert_true(r.kv_usage == 1); /* above 1 reads as 1 */
    assert_false(r.has_preemptions);
    assert_int_equal(r.malformed, 1);
    /* Both engines' families on one page (a pass-through exporter): vLLM wins. */
    const char *both = "sglang:num_running_reqs 1\nsglang:num_queue_reqs 1\nsglang:token_usage 0\n"
                       "vllm:num_requests_running 2\nvllm:num_requests_waiting 2\n"
                       "vllm:kv_cache_usage_perc 0.2\n";
    assert_int_equal(irl_report_parse(both, strlen(both), &r, NULL, 0), 0);
    assert_int_equal(r.engine, IRL_ENGINE_VLLM);
    assert_true(r.running == 2);
    /* A name that only starts like a family is another family. */
    const char *near = "vllm:num_requests_running_x 5\nvllm:num_requests_running 1\n"
                       "vllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0\n";
    assert_int_equal(irl_report_parse(near, strlen(near), &r, NULL, 0), 0);
    assert_true(r.running == 1);
    /* Absurd capacity labels are ignored, not overflowed. */
    const char *cap = "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n"
                      "vllm:kv_cache_usage_perc 0\n"
                      "vllm:cache_config_info{num_gpu_blocks=\"99999999999999999999\","
                      "block_size=\"x\"} 1\n";
    assert_int_equal(irl_report_parse(cap, strlen(cap), &r, NULL, 0), 0);
    assert_int_equal(r.capacity_blocks, 0);
    assert_int_equal(r.block_size, 0);
}

static void restart_detection(void **st) {
    irl_report a = {
        .engine = IRL_ENGINE_VLLM, .has_prefix = true, .prefix_queries = 100, .prefix_hits = 50};
    irl_report b = a;
    assert_false(irl_report_restarted(&a, &b));
    b.prefix_queries = 200, b.prefix_hits = 60;
    assert_false(irl_report_restarted(&a, &b));
    b.prefix_queries = 20, b.prefix_hits = 0;
    assert_true(irl_report_restarted(&a, &b));
    b = a;
    b.prefix_hits = 49;
    assert_true(irl_report_restarted(&a, &b));
    b.has_prefix = false; /* no counters: nothing to compare */
    assert_false(irl_report_restarted(&a, &b));
}

/* ---- one data-parallel rank's report (irl_report_parse_rank) ----------------------
 * Only the samples of that rank (vLLM's engine label, SGLang's dp_rank) and the
 * unlabelled ones count; a page without rank labels gives every rank the whole
 * engine; a rank the page lacks, when it labels others, is IRL_REPORT_NO_RANK (one
 * that lacks a family for every rank stays unreadable). */

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
    /* A rank the engine does not have: told apart from an unreadable page. */
    assert_int_equal(irl_report_parse_rank(page, n, 2, &r, why, sizeof why), IRL_REPORT_NO_RANK);
    assert_non_null(strstr(why, "other data-parallel ranks but not 2"));
    assert_non_null(strstr(why, "fewer ranks than the replica's data_parallel_size"));
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
    /* Rank 1 is on the page but lacks a family: unreadable, not a missing rank. */
    const char *gap = "vllm:num_requests_running{engine=\"0\"} 4\n"
                      "vllm:num_requests_running{engine=\"1\"} 4\n"
                      "vllm:num_requests_waiting{engine=\"0\"} 2\n"
                      "vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n";
    assert_int_equal(irl_report_parse_rank(gap, strlen(gap), 1, &r, NULL, 0), -1);
    assert_int_equal(irl_report_parse_rank(gap, strlen(gap), 2, &r, NULL, 0), IRL_REPORT_NO_RANK);
    assert_int_equal(irl_report_parse_rank(gap, strlen(gap), 0, &r, NULL, 0), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vllm_data_parallel),
        cmocka_unit_test(vllm_older_names),
        cmocka_unit_test(sglang_data_parallel),
        cmocka_unit_test(sglang_tensor_parallel_copies),
        cmocka_unit_test(renamed_family_is_unreadable),
        cmocka_unit_test(unreadable_pages),
        cmocka_unit_test(tolerant_reading),
        cmocka_unit_test(restart_detection),
        cmocka_unit_test(vllm_ranks),
        cmocka_unit_test(sglang_ranks),
        cmocka_unit_test(unlabelled_page),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
