/* The simulator's metrics page: number format and families. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "sim/sim.h"

static void number_format_matches_prometheus_client(void **state) {
    struct {
        double v;
        const char *s;
    } cases[] = {
        {0, "0.0"},
        {1, "1.0"},
        {0.25, "0.25"},
        {2560, "2560.0"},
        {0.001, "0.001"},
        {1e-05, "1e-05"},
        {0.0001, "0.0001"},
        {123456, "123456.0"},
        {1012506, "1.012506e+06"},
        {1e7, "1e+07"},
        {10125000, "1.0125e+07"},
        {INFINITY, "+Inf"},
        {-2.5, "-2.5"},
        {0.1, "0.1"},
        {1e16, "1e+16"},
        {3.3, "3.3"},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) {
        char out[64];
        sim_metrics_format_value(cases[i].v, out, sizeof out);
        assert_string_equal(out, cases[i].s);
    }
}

static void families_present(void **state) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    sim_cfg c;
    sim_cfg_defaults(&c);
    c.model_names[0] = "m";
    c.nmodel_names = 1;
    sim_engine *e = sim_engine_new(&loop, &c);
    ir_buf out;
    ir_buf_init(&out, 0);
    sim_metrics_render(e, &out);
    const char *must[] = {
        "# TYPE vllm:num_requests_running "
        "gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n",
        "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.0\n",
        "# TYPE vllm:prefix_cache_queries_total counter\n",
        "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 0.0\n",
        "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"m\"} "
        "0.0\n",
        "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching="
        "\"True\","
        "engine=\"0\",num_gpu_blocks=\"4096\"} 1.0\n",
        "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"2560.0\"} "
        "0.0\n",
        "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"+Inf\"} 0.0\n",
        "vllm:inter_token_latency_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"0.01\"} 0.0\n",
        "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\"} 0.0\n",
        "# TYPE vllm:request_queue_time_seconds histogram\n",
        "# TYPE vllm:request_prefill_time_seconds histogram\n",
        "# TYPE vllm:request_decode_time_seconds histogram\n",
        "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} 0.0\n",
        "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 0.0\n",
        "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 0.0\n",
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(must); i++) {
        if (!strstr(out.data, must[i])) fail_msg("missing: %s", must[i]);
    }
    ir_buf_free(&out);
    sim_engine_free(e);
    c.engine = SIM_ENGINE_SGLANG;
    e = sim_engine_new(&loop, &c);
    ir_buf_init(&out, 0);
    sim_metrics_render(e, &out);
    const char *sg[] = {
        ("sglang:num_running_reqs{engine_type=\"unified\",model_name=\"m\",pp_rank=\"0\",tp_rank="
         "\"0\"} 0.0\n"), /* one line, split for width */
        "# TYPE sglang:num_queue_reqs gauge\n",
        "# TYPE sglang:token_usage gauge\n",
        "# TYPE sglang:cache_hit_rate gauge\n",
        "sglang:prompt_tokens_total{model_name=\"m\"} 0.0\n",
        "sglang:time_to_first_token_seconds_bucket{model_name=\"m\",le=\"400.0\"} 0.0\n",
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(sg); i++) {
        if (!strstr(out.data, sg[i])) fail_msg("missing: %s", sg[i]);
    }
    assert_null(strstr(out.data, "vllm:"));
    ir_buf_free(&out);
    sim_engine_free(e);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(number_format_matches_prometheus_client),
        cmocka_unit_test(families_present),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
