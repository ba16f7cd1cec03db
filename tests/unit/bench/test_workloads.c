/* test_workloads.c: --speedup (the schedule compressed by K with the same
 * bodies; the simulator's latency flags divided by K), the peers' workloads
 * (llmd-shared-prefix, sglang-gsp, prefix-repetition: their shape and
 * determinism) and the replay of a Mooncake trace (equal hash_ids give equal
 * builtin:sim tokens, block boundaries on token boundaries). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "tokenize/ir_tokenize.h"

static json_t *params(const char *const *kv) {
    json_t *p = json_object();
    for (size_t i = 0; kv && kv[i]; i++) assert_int_equal(bench_param_parse(p, kv[i]), 0);
    return p;
}

static void build(bench_workload *w, const char *name, double rate, size_t n, uint64_t seed,
                  const char *const *kv, double k) {
    json_t *p = params(kv);
    char err[512] = "";
    bench_wl_opts o = {.name = name, .rate = rate, .n = n, .seed = seed, .params = p, .speedup = k};
    int rc = bench_workload_build(&o, w, err, sizeof err);
    if (rc) fprintf(stderr, "%s: %s\n", name, err);
    assert_int_equal(rc, 0);
    json_decref(p);
}

/* The builtin:sim token ids of a request's rendered chat. */
static void tokens_of(const bench_req *q, irt_ids *ids) {
    json_t *body = json_loadb(q->body, q->body_len, 0, NULL);
    assert_non_null(body);
    ir_buf text;
    ir_buf_init(&text, 0);
    const char *e = NULL;
    assert_int_equal(irt_sim_render_chat(json_object_get(body, "messages"), true, &text, &e), 0);
    ids->len = 0;
    assert_int_equal(irt_sim_encode(text.data, text.len, ids), 0);
    ir_buf_free(&text);
    json_decref(body);
}

/* How many leading tokens two requests share. */
static size_t common_prefix(const bench_req *a, const bench_req *b) {
    irt_ids x, y;
    irt_ids_init(&x);
    irt_ids_init(&y);
    tokens_of(a, &x);
    tokens_of(b, &y);
    size_t n = 0;
    while (n < x.len && n < y.len && x.ids[n] == y.ids[n]) n++;
    irt_ids_free(&x);
    irt_ids_free(&y);
    return n;
}

/* ---- speed-up ---------------------------------------------------------------------- */

/* K = 10: the same bodies in the same order, every time divided by 10, think
 * times included (sessions keep their turns). */
static void test_speedup_schedule(void **st) {
    static const char *const w2[] = {"think_min_s=1", "think_max_s=2", NULL};
    static const char *const w1[] = {"sys_min=100", "sys_max=200", NULL};
    static const char *const gsp[] = {"groups=2",      "prompts=3",     "sys_tokens=100", "turns=3",
                                      "think_min_s=1", "think_max_s=1", "out_tokens=20",  NULL};
    const char *names[] = {"w1", "w2", "sglang-gsp"};
    const char *const *kvs[] = {w1, w2, gsp};
    for (size_t k = 0; k < 3; k++) {
        bench_workload a, b;
        build(&a, names[k], 4, 80, 7, kvs[k], 1);
        build(&b, names[k], 4, 80, 7, kvs[k], 10);
        assert_true(a.speedup == 1 && b.speedup == 10);
        assert_true(b.rate == 4); /* the rate stays in model time */
        size_t later = 0;
        for (size_t i = 0; i < a.n; i++) {
            assert_string_equal(a.reqs[i].body, b.reqs[i].body);
            assert_int_equal(a.reqs[i].turn, b.reqs[i].turn);
            later += a.reqs[i].turn > 0;
            double want = (double)a.reqs[i].at_ns / 10;
            assert_true(fabs((double)b.reqs[i].at_ns - want) <= 1.0);
        }
        if (k > 0) assert_true(later > 10); /* think times were scaled, not dropped */
        assert_true(a.reqs[a.n - 1].at_ns > 5000000000ull); /* 80 at 4/s: ~20 s */
        assert_true(a.reuse_ceiling == b.reuse_ceiling);
        bench_workload_free(&a);
        bench_workload_free(&b);
    }
}

static bool has(const char *s, const char *sub) {
    return strstr(s, sub) != NULL;
}

/* The simulator flags: given ones divided, missing ones added at default / K. */
static void test_sim_args_scaled(void **st) {
    char out[1024];
    assert_int_equal(
        bench_sim_args_scaled("--decode-token-ms 10 --max-num-seqs 8", 10, out, sizeof out), 0);
    assert_true(has(out, "--decode-token-ms 1 "));
    assert_true(has(out, "--max-num-seqs 8"));
    assert_true(has(out, "--prefill-token-us 10"));
    assert_true(has(out, "--prefill-pair-ns 0.33"));
    assert_true(has(out, "--prefill-fixed-ms 0.5"));
    assert_true(has(out, "--decode-batch-us 10"));
    assert_true(has(out, "--cpu-transfer-token-us 0.5")); /* the CPU tier's load too */
    assert_false(has(out, "--decode-token-ms 2"));        /* not the default as well */
    /* --flag=V is understood too; K = 1 leaves everything as it was. */
    assert_int_equal(bench_sim_args_scaled("--prefill-fixed-ms=8", 4, out, sizeof out), 0);
    assert_true(has(out, "--prefill-fixed-ms 2"));
    assert_int_equal(
        bench_sim_args_scaled("--prefill-fixed-ms=8 --zero-latency", 1, out, sizeof out), 0);
    assert_string_equal(out, "--prefill-fixed-ms=8 --zero-latency");
    assert_int_equal(bench_sim_args_scaled(NULL, 1, out, sizeof out), 0);
    assert_string_equal(out, "");
    /* Bad values and a buffer too small are refused. */
    assert_int_equal(bench_sim_args_scaled("--decode-token-ms fast", 2, out, sizeof out), -1);
    assert_int_equal(bench_sim_args_scaled("--decode-token-ms", 2, out, sizeof out), -1);
    assert_int_equal(bench_sim_args_scaled("", 2, out, 20), -1);
    assert_int_equal(bench_sim_args_scaled("", 0, out, sizeof out), -1);
}

/* ---- the peers' workloads ----------------------------------------------------------------- */

/* llm-d: groups x users fixed prompts, replayed in turn: request i and i +
 * groups x users are the same prompt; a group's users share its system prompt. */
static void test_llmd_shape(void **st) {
    static const char *const kv[] = {"groups=3",    "users=2",      "sys_tokens=300",
                                     "q_tokens=50", "out_tokens=7", NULL};
    bench_workload w, again, other;
    build(&w, "llmd-shared-prefix", 5, 24, 1, kv, 1);
    build(&again, "llmd-shared-prefix", 5, 24, 1, kv, 1);
    build(&other, "llmd-shared-prefix", 5, 24, 2, kv, 1);
    size_t distinct = 0;
    for (size_t i = 0; i < w.n; i++) {
        assert_string_equal(w.reqs[i].body, again.reqs[i].body);
        assert_int_equal(w.reqs[i].max_tokens, 7);
        assert_true(w.reqs[i].session < 3);
        assert_true(w.reqs[i].prompt_tokens >= 350 && w.reqs[i].prompt_tokens <= 395);
        if (i >= 6) assert_string_equal(w.reqs[i].body, w.reqs[i - 6].body);
        bool seen = false;
        for (size_t j = 0; j < i; j++) seen |= strcmp(w.reqs[i].body, w.reqs[j].body) == 0;
        distinct += !seen;
        for (size_t j = 0; j < i; j++)
            if (w.reqs[j].session == w.reqs[i].session)
                assert_true(common_prefix(&w.reqs[i], &w.reqs[j]) >= 300);
            else
                assert_true(common_prefix(&w.reqs[i], &w.reqs[j]) < 20);
    }
    assert_int_equal(distinct, 6);
    size_t diff = 0;
    for (size_t i = 0; i < w.n; i++) diff += strcmp(w.reqs[i].body, other.reqs[i].body) != 0;
    assert_int_equal(diff, w.n);
    /* Every prompt after its first visit is reusable but for its last block or so. */
    assert_true(w.reuse_ceiling > 0.6);
    assert_true(w.reuse_ceiling == again.reuse_ceiling);
    json_t *g = json_object_get(w.params, "groups");
    assert_true(json_number_value(g) == 3);
    bench_workload_free(&w);
    bench_workload_free(&again);
    bench_workload_free(&other);
    /* The published defaults. */
    build(&w, "llmd-shared-prefix", 5, 2, 1, NULL, 1);
    assert_true(json_number_value(json_object_get(w.params, "groups")) == 150);
    assert_true(json_number_value(json_object_get(w.params, "users")) == 5);
    assert_true(json_number_value(json_object_get(w.params, "sys_tokens")) == 6000);
    assert_true(json_number_value(json_object_get(w.params, "q_tokens")) == 1200);
    assert_int_equal(w.reqs[0].max_tokens, 1000);
    assert_true(w.reqs[0].prompt_tokens > 7150 && w.reqs[0].prompt_tokens < 7250);
    bench_workload_free(&w);
}

/* SGLang gsp: each turn resends the history with a new question; turn 0
 * starts with the group's system prompt; a conversation's turns keep their order. */
static void test_gsp_shape(void **st) {
    static const char *const kv[] = {"groups=2",        "prompts=3",       "sys_tokens=200",
                                     "q_tokens=40",     "out_tokens=30",   "turns=3",
                                     "think_min_s=0.5", "think_max_s=0.5", NULL};
    bench_workload w;
    build(&w, "sglang-gsp", 10, 40, 3, kv, 1);
    size_t later = 0;
    for (size_t i = 0; i < w.n; i++) {
        const bench_req *q = &w.reqs[i];
        assert_int_equal(q->max_tokens, 30);
        assert_true(q->turn < 3);
        if (q->turn == 0) {
            assert_true(q->prompt_tokens >= 240 && q->prompt_tokens <= 270);
            continue;
        }
        later++;
        for (size_t j = i; j-- > 0;) {
            if (w.reqs[j].session != q->session) continue;
            assert_int_equal(w.reqs[j].turn + 1, q->turn);
            assert_true(q->at_ns - w.reqs[j].at_ns >= 500000000ull);
            /* history + planned reply + a new question */
            assert_true(q->prompt_tokens >= w.reqs[j].prompt_tokens + 60);
            assert_true(common_prefix(q, &w.reqs[j]) >= w.reqs[j].prompt_tokens - 16);
            break;
        }
    }
    assert_true(later >= 20);
    assert_true(w.reuse_ceiling > 0.5);
    bench_workload_free(&w);
    build(&w, "sglang-gsp", 5, 2, 1, NULL, 1);
    assert_true(json_number_value(json_object_get(w.params, "groups")) == 64);
    assert_true(json_number_value(json_object_get(w.params, "prompts")) == 16);
    assert_true(json_number_value(json_object_get(w.params, "turns")) == 1);
    assert_int_equal(w.reqs[0].max_tokens, 256);
    assert_true(w.reqs[0].prompt_tokens > 2170 && w.reqs[0].prompt_tokens < 2220);
    bench_workload_free(&w);
}

/* vLLM prefix_repetition: requests split evenly over the prefixes; no two the same. */
static void test_prefix_repetition_shape(void **st) {
    static const char *const kv[] = {"prefixes=3", NULL};
    bench_workload w;
    build(&w, "prefix-repetition", 5, 30, 4, kv, 1);
    size_t per[3] = {0};
    for (size_t i = 0; i < w.n; i++) {
        const bench_req *q = &w.reqs[i];
        assert_true(q->session < 3);
        per[q->session]++;
        assert_int_equal(q->max_tokens, 128);
        assert_true(q->prompt_tokens >= 512 && q->prompt_tokens <= 540);
        for (size_t j = 0; j < i; j++) {
            assert_string_not_equal(q->body, w.reqs[j].body);
            size_t c = common_prefix(q, &w.reqs[j]);
            if (w.reqs[j].session == q->session)
                assert_true(c >= 256 && c < 300);
            else
                assert_true(c < 20);
        }
    }
    assert_int_equal(per[0], 10);
    assert_int_equal(per[1], 10);
    assert_int_equal(per[2], 10);
    /* about half of every prompt after each prefix's first visit */
    assert_true(w.reuse_ceiling > 0.35 && w.reuse_ceiling < 0.5);
    bench_workload_free(&w);
}

/* ---- trace replay ---------------------------------------------------------------------- */

/* A block's text is exactly its tokens, whatever surrounds it, and shorter is a prefix. */
static void test_trace_block_text(void **st) {
    static const size_t lens[] = {1, 2, 17, 511, 512};
    for (uint64_t id = 0; id < 40; id++) {
        ir_buf full;
        ir_buf_init(&full, 0);
        assert_int_equal(bench_trace_block_text(id, 512, &full), 0);
        assert_int_equal(irt_sim_count(full.data, full.len), 512);
        for (size_t k = 0; k < IR_ARRAY_LEN(lens); k++) {
            ir_buf b;
            ir_buf_init(&b, 0);
            assert_int_equal(bench_trace_block_text(id, lens[k], &b), 0);
            assert_int_equal(irt_sim_count(b.data, b.len), lens[k]);
            assert_true(b.len <= full.len && memcmp(b.data, full.data, b.len) == 0);
            ir_buf_free(&b);
        }
        /* Between a newline and another block, or after another block: the same ids. */
        ir_buf alone, mixed;
        ir_buf_init(&alone, 0);
        ir_buf_init(&mixed, 0);
        ir_buf_append_str(&alone, "\n");
        bench_trace_block_text(id, 512, &alone);
        ir_buf_append_str(&alone, "\n");
        bench_trace_block_text(id + 1000, 300, &mixed);
        bench_trace_block_text(id, 512, &mixed);
        bench_trace_block_text(id + 2000, 5, &mixed);
        irt_ids a, m;
        irt_ids_init(&a);
        irt_ids_init(&m);
        assert_int_equal(irt_sim_encode(alone.data, alone.len, &a), 0);
        assert_int_equal(irt_sim_encode(mixed.data, mixed.len, &m), 0);
        assert_int_equal(a.len, 514);
        assert_int_equal(m.len, 817);
        assert_memory_equal(a.ids + 1, m.ids + 300, 512 * sizeof(uint32_t));
        irt_ids_free(&a);
        irt_ids_free(&m);
        ir_buf_free(&alone);
        ir_buf_free(&mixed);
        ir_buf_free(&full);
    }
    ir_buf x, y;
    ir_buf_init(&x, 0);
    ir_buf_init(&y, 0);
    bench_trace_block_text(1, 512, &x);
    bench_trace_block_text(2, 512, &y);
    assert_true(x.len == y.len && memcmp(x.data, y.data, x.len) != 0);
    ir_buf_free(&x);
    ir_buf_free(&y);
}

/* A workload without sharing reuses no block; one that shares reuses some, and its
 * working set grows with the schedule. */
static void test_working_set(void **st) {
    bench_workload a, b;
    build(&a, "w1", 4, 40, 1, NULL, 1);
    build(&b, "w1", 4, 80, 1, NULL, 1);
    size_t all = 0;
    for (size_t i = 0; i < a.n; i++) all += a.reqs[i].prompt_tokens / 16;
    assert_true(a.reused_blocks > 0 && a.reused_blocks < a.distinct_blocks);
    assert_true(a.distinct_blocks < all);
    assert_true(b.distinct_blocks > a.distinct_blocks && b.reused_blocks >= a.reused_blocks);
    bench_workload_free(&a);
    bench_workload_free(&b);
    static const char *const kv[] = {"p_min=40", "p_max=80", NULL};
    build(&a, "w6", 4, 30, 1, kv, 1);
    assert_int_equal(a.reused_blocks, 0);
    all = 0;
    for (size_t i = 0; i < a.n; i++) all += a.reqs[i].prompt_tokens / 16;
    assert_int_equal(a.distinct_blocks, all);
    bench_workload_free(&a);
}

/* compare's policy names: P, or P+events (that policy on the exact index). */
static void test_policy_variant(void **st) {
    char base[16];
    bool ev = true;
    assert_int_equal(bench_policy_variant("cost_model", base, sizeof base, &ev), 0);
    assert_string_equal(base, "cost_model");
    assert_false(ev);
    assert_int_equal(bench_policy_variant("cost_model+events", base, sizeof base, &ev), 0);
    assert_string_equal(base, "cost_model");
    assert_true(ev);
    assert_false(bench_policy_no_lookahead("cost_model+events"));
    ev = false;
    assert_int_equal(bench_policy_variant("cost_model+events-nolookahead", base, sizeof base, &ev),
                     0);
    assert_string_equal(base, "cost_model");
    assert_true(ev);
    assert_true(bench_policy_no_lookahead("cost_model+events-nolookahead"));
    assert_false(bench_policy_no_lookahead("cost_model"));
    assert_int_equal(bench_policy_variant("cost_model+events-no", base, sizeof base, &ev), -1);
    assert_int_equal(bench_policy_variant("cost_model+event", base, sizeof base, &ev), -1);
    assert_int_equal(bench_policy_variant("cost_model+events+events", base, sizeof base, &ev), -1);
    assert_int_equal(bench_policy_variant("+events", base, sizeof base, &ev), -1);
    assert_int_equal(bench_policy_variant("", base, sizeof base, &ev), -1);
    assert_int_equal(bench_policy_variant("sglang_cache_aware", base, sizeof base, &ev), -1);
}

/* --reset-prefix-cache-at S[@E][,..] */
static void test_reset_parse(void **st) {
    double at[4];
    int e[4];
    assert_int_equal(bench_reset_parse("30", at, e, 4), 1);
    assert_true(at[0] == 30 && e[0] == 1);
    assert_int_equal(bench_reset_parse("10@2,20.5@3,0", at, e, 4), 3);
    assert_true(at[0] == 10 && e[0] == 2 && at[1] == 20.5 && e[1] == 3 && at[2] == 0 && e[2] == 1);
    static const char *const bad[] = {"",    "x",   "-1",        "10@0",  "10@", "10@2x",
                                      "10,", ",10", "1,2,3,4,5", "10@99", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(bench_reset_parse(bad[i], at, e, 4), -1);
}

static const char *fixtures(void) {
    const char *f = getenv("IR_FIXTURES");
    return f && *f ? f : "tests/fixtures";
}

/* tests/fixtures/traces/mooncake_small.jsonl, replayed at K = 4. */
static void test_trace_replay(void **st) {
    char path[1024];
    snprintf(path, sizeof path, "%s/traces/mooncake_small.jsonl", fixtures());
    bench_workload w;
    char err[512] = "";
    bench_wl_opts o = {
        .name = "trace", .n = 6, .warmup = 1, .seed = 1, .trace = path, .speedup = 4};
    assert_int_equal(bench_workload_build(&o, &w, err, sizeof err), 0);
    /* Sorted by timestamp (ties in file order); the blank line skipped. */
    static const uint64_t at_ms[] = {0, 250, 250, 1000, 1500, 2000};
    static const uint32_t in[] = {1100, 1024, 700, 600, 1300, 1536};
    static const uint32_t out[] = {10, 20, 5, 8, 12, 1};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(w.reqs[i].at_ns, at_ms[i] * 1000000ull / 4);
        /* the prompt is input_length tokens plus 16 of the chat template */
        assert_int_equal(w.reqs[i].prompt_tokens, in[i] + 16);
        assert_int_equal(w.reqs[i].max_tokens, out[i]);
    }
    /* Equal hash_ids, equal tokens: exactly the shared blocks (after the
     * template's 7 leading tokens), and not one token more. */
    assert_int_equal(common_prefix(&w.reqs[0], &w.reqs[1]), 7 + 1024);
    assert_int_equal(common_prefix(&w.reqs[0], &w.reqs[2]), 7 + 512);
    assert_int_equal(common_prefix(&w.reqs[0], &w.reqs[4]), 7 + 1024);
    assert_int_equal(common_prefix(&w.reqs[3], &w.reqs[5]), 7 + 512);
    assert_true(common_prefix(&w.reqs[0], &w.reqs[3]) < 7 + 16);
    /* The reuse ceiling sees it too: whole 16-token blocks of the shared prefix. */
    assert_int_equal(w.reqs[1].reused_tokens, 1024);
    assert_int_equal(w.reqs[2].reused_tokens, 512);
    assert_int_equal(w.reqs[5].reused_tokens, 512);
    assert_true(w.reuse_ceiling > 0.4);
    /* The working set, in 16-token blocks of (input + 16) tokens each: 69 new; 65 of
     * which 64 shared (those 64 now reused); 44, 32 shared; 38 new; 82, 64 shared;
     * 97, 32 shared with the fifth request (32 more reused). */
    assert_int_equal(w.distinct_blocks, 69 + 1 + 12 + 38 + 18 + 65);
    assert_int_equal(w.reused_blocks, 64 + 32);
    assert_true(fabs(w.rate - 5 / 2.0) < 1e-9); /* 5 gaps over 2 s */
    assert_string_equal(json_string_value(json_object_get(w.params, "trace")), path);
    bench_workload_free(&w);
    /* Deterministic: the same text again. */
    bench_workload v;
    o.speedup = 1;
    assert_int_equal(bench_workload_build(&o, &v, err, sizeof err), 0);
    assert_int_equal(bench_workload_build(&o, &w, err, sizeof err), 0);
    for (size_t i = 0; i < 6; i++) assert_string_equal(v.reqs[i].body, w.reqs[i].body);
    bench_workload_free(&v);
    bench_workload_free(&w);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Clear errors: too few records, a bad line, a missing file, --trace without trace. */
static void test_trace_errors(void **st) {
    char path[1024], tmp[] = "/tmp/ir-trace-XXXXXX";
    snprintf(path, sizeof path, "%s/traces/mooncake_small.jsonl", fixtures());
    bench_workload w;
    char err[512] = "";
    bench_wl_opts o = {.name = "trace", .n = 7, .seed = 1, .trace = path};
    assert_int_equal(bench_workload_build(&o, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "6 records"));
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    close(fd);
    write_file(tmp, "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, "
                    "\"hash_ids\": [1]}\n{\"timestamp\": 5, \"input_length\": -3, "
                    "\"output_length\": 1, \"hash_ids\": [1]}\n");
    o.trace = tmp;
    o.n = 2;
    err[0] = 0;
    assert_int_equal(bench_workload_build(&o, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, ":2:"));
    write_file(tmp, "not json\n");
    err[0] = 0;
    o.n = 1;
    assert_int_equal(bench_workload_build(&o, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, ":1:"));
    unlink(tmp);
    o.trace = "/nonexistent/trace.jsonl";
    err[0] = 0;
    assert_int_equal(bench_workload_build(&o, &w, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
    bench_wl_opts p = {.name = "w1", .rate = 1, .n = 2, .seed = 1, .trace = path};
    assert_int_equal(bench_workload_build(&p, &w, err, sizeof err), -1);
    bench_wl_opts q = {.name = "trace", .rate = 1, .n = 2, .seed = 1};
    assert_int_equal(bench_workload_build(&q, &w, err, sizeof err), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_speedup_schedule),
        cmocka_unit_test(test_sim_args_scaled),
        cmocka_unit_test(test_llmd_shape),
        cmocka_unit_test(test_gsp_shape),
        cmocka_unit_test(test_prefix_repetition_shape),
        cmocka_unit_test(test_working_set),
        cmocka_unit_test(test_policy_variant),
        cmocka_unit_test(test_reset_parse),
        cmocka_unit_test(test_trace_block_text),
        cmocka_unit_test(test_trace_replay),
        cmocka_unit_test(test_trace_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
