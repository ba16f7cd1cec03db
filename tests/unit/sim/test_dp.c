/* The simulator's data-parallel ranks: each rank's series in rank 0's registry
 * (engine="r", one family per name), and each rank's KV event endpoints on the
 * configured ports plus its rank, as vLLM's offset_endpoint_port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "sim/sim.h"

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static void ranks_share_one_page(void **state) {
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    sim_cfg c;
    sim_cfg_defaults(&c);
    c.model_names[0] = "m";
    c.nmodel_names = 1;
    c.data_parallel_size = 3;
    sim_engine *e[3];
    for (uint32_t r = 0; r < 3; r++) {
        c.dp_rank = r;
        c.num_gpu_blocks = 100 + r;
        e[r] = sim_engine_new_rank(&loop, &c, r ? e[0] : NULL);
        assert_non_null(e[r]);
    }
    ir_buf out;
    ir_buf_init(&out, 0);
    assert_int_equal(sim_metrics_render_ranks(e, 3, &out), 0);
    assert_int_equal(count(out.data, "# TYPE vllm:num_requests_running gauge\n"), 1);
    assert_int_equal(count(out.data, "# TYPE vllm:time_to_first_token_seconds histogram\n"), 1);
    const char *must[] = {
        "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n",
        "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 0.0\n",
        "vllm:num_requests_running{engine=\"2\",model_name=\"m\"} 0.0\n",
        "engine=\"1\",num_gpu_blocks=\"101\"} 1.0\n",
        "engine=\"2\",num_gpu_blocks=\"102\"} 1.0\n",
        "vllm:request_success_total{engine=\"2\",finished_reason=\"stop\",model_name=\"m\"} 0.0\n",
        "vllm:e2e_request_latency_seconds_count{engine=\"1\",model_name=\"m\"} 0.0\n",
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(must); i++)
        if (!strstr(out.data, must[i])) fail_msg("missing: %s\n%s", must[i], out.data);
    ir_buf_free(&out);
    for (int r = 2; r >= 0; r--) sim_engine_free(e[r]);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

static void endpoints_per_rank(void **state) {
    (void)state;
    sim_kvpub_cfg c;
    char err[256];
    assert_int_equal(
        sim_kvpub_parse("{\"enable_kv_cache_events\": true, \"endpoint\": "
                        "\"tcp://*:5557\", \"replay_endpoint\": \"tcp://127.0.0.1:6000\"}",
                        &c, err, sizeof err),
        0);
    sim_kvpub_cfg r0 = c, r3 = c;
    assert_int_equal(sim_kvpub_cfg_rank(&r0, 0, err, sizeof err), 0);
    assert_string_equal(r0.endpoint, "tcp://*:5557");
    assert_int_equal(r0.rank, 0);
    assert_int_equal(sim_kvpub_cfg_rank(&r3, 3, err, sizeof err), 0);
    assert_string_equal(r3.endpoint, "tcp://*:5560");
    assert_string_equal(r3.replay_endpoint, "tcp://127.0.0.1:6003");
    assert_int_equal(r3.rank, 3);
    sim_kvpub_cfg ipc;
    assert_int_equal(sim_kvpub_parse("{\"endpoint\": \"ipc:///tmp/kv\"}", &ipc, err, sizeof err),
                     0);
    assert_int_equal(sim_kvpub_cfg_rank(&ipc, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "--data-parallel-size"));
    sim_kvpub_cfg high;
    assert_int_equal(sim_kvpub_parse("{\"endpoint\": \"tcp://h:65535\"}", &high, err, sizeof err),
                     0);
    assert_int_equal(sim_kvpub_cfg_rank(&high, 1, err, sizeof err), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranks_share_one_page),
        cmocka_unit_test(endpoints_per_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
