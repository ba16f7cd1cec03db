/* config.c: the cross-checks' limits. A file of many thousands of entries is refused by
 * its lists' sizes before any pair is compared (a reload runs these checks on the control
 * loop: found taking minutes), and the problems reported stop at 100. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "config_fixture.h"
#include "core/ir_core.h"

/* n replicas (with ids that are not allowed when bad_ids), as one flow-style list. */
static char *many_replicas(size_t n, bool bad_ids) {
    ir_buf b;
    ir_buf_init(&b, 0);
    ir_buf_appendf(&b, "models: [{name: m}]\nreplicas:\n");
    for (size_t i = 0; i < n; i++)
        ir_buf_appendf(&b, "- {id: \"r%s%zu\", url: \"http://a:1%s\", models: [x]}\n",
                       bad_ids ? "!" : "", i, bad_ids ? "/v1" : "");
    return b.data;
}

static void too_many_replicas(void **state) {
    char *text = many_replicas(20000, false);
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(text, &c, &e);
    assert_non_null(owner);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.msgs[0], "replicas: at most 256 replicas");
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
    free(text);
}

static void too_many_aliases(void **state) {
    ir_buf b;
    ir_buf_init(&b, 0);
    ir_buf_appendf(&b, "replicas: [{id: a, url: \"http://a:1\"}]\nmodels: [{name: m, aliases: [");
    for (int i = 0; i < 30000; i++) ir_buf_appendf(&b, "%sa%d", i ? "," : "", i);
    ir_buf_appendf(&b, "]}]\n");
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(b.data, &c, &e);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.msgs[0], "models: at most 4096 names and aliases in all");
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
    ir_buf_free(&b);
}

/* 256 replicas, each with three problems: 100 reported, then one line that says so. */
static void problems_stop_at_100(void **state) {
    char *text = many_replicas(256, true);
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(text, &c, &e);
    assert_int_equal(e.n, 101);
    assert_string_equal(e.msgs[100], "config: more than 100 problems; stopped reporting");
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
    free(text);
}

/* The largest lists within the limits load (4,096 names and aliases, 256 replicas). */
static void largest_within_limits(void **state) {
    ir_buf b;
    ir_buf_init(&b, 0);
    ir_buf_appendf(&b, "models:\n");
    for (int m = 0; m < 256; m++) {
        ir_buf_appendf(&b, "- {name: m%d, aliases: [", m);
        for (int a = 0; a < 15; a++) ir_buf_appendf(&b, "%sm%d-a%d", a ? "," : "", m, a);
        ir_buf_appendf(&b, "]}\n");
    }
    ir_buf_appendf(&b, "replicas:\n");
    for (int i = 0; i < 256; i++)
        ir_buf_appendf(&b, "- {id: r%d, url: \"http://a:%d\"}\n", i, i + 1);
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(b.data, &c, &e);
    for (size_t k = 0; k < e.n; k++) fprintf(stderr, "  got: %s\n", e.msgs[k]);
    assert_int_equal(e.n, 0);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
    ir_buf_free(&b);
}

/* A KV cache of more than 2^24 blocks is a config error; none of that size reaches the
 * index from the config (the engine's own number is taken at 2^24, with a warning). */
static void capacity_bounded(void **state) {
    fx_expect_error(0,
                    "models: [{name: m}]\nreplicas: [{id: a, url: \"http://a:1\", "
                    "kv_capacity_blocks: 16777217}]\n",
                    "replicas[0].kv_capacity_blocks");
    fx_expect_error(1,
                    "models: [{name: m}]\nreplicas: [{id: a, url: \"http://a:1\"}]\n"
                    "index: {default_capacity_blocks: 1073741824}\n",
                    "index.default_capacity_blocks");
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load("models: [{name: m}]\nreplicas: [{id: a, url: \"http://a:1\", "
                            "kv_capacity_blocks: 16777216}]\n",
                            &c, &e);
    assert_int_equal(e.n, 0);
    gw_fleet f = {.cfg = &c};
    assert_int_equal(gw_capacity_blocks(&f, 0), 16384);
    assert_int_equal(gw_capacity_blocks(&f, 16777216), 16777216);
    assert_int_equal(gw_capacity_blocks(&f, (int64_t)1 << 40), GW_MAX_CAPACITY_BLOCKS);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(too_many_replicas),    cmocka_unit_test(too_many_aliases),
        cmocka_unit_test(problems_stop_at_100), cmocka_unit_test(largest_within_limits),
        cmocka_unit_test(capacity_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
