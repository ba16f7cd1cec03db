/* workload.c: the seeded workloads of the open-loop harness: w1..w6, the
 * peers' published ones (llmd-shared-prefix, sglang-gsp, prefix-repetition)
 * and the replay of a Mooncake trace.
 *
 * Every workload is a pure function of its options: text comes from a
 * splitmix64 stream seeded with --seed, arrival times from a second stream,
 * so the same seed gives the same bodies at any rate. Token lengths are
 * measured with builtin:sim over the rendered chat template, exactly what
 * the simulator counts. docs/bench-workloads.md documents the parameters. */
#include "bench/bench.h"
#include "tokenize/ir_tokenize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parameters ------------------------------------------------------------ */

typedef struct wl_param {
    const char *key;
    double def;
    const char *doc;
} wl_param;

static const wl_param w1_params[] = {
    {"prompts", 32, "system prompts shared by every user"},
    {"sys_min", 2000, "system prompt length, tokens (uniform min)"},
    {"sys_max", 8000, "system prompt length, tokens (uniform max)"},
    {"q_min", 50, "question length, tokens"},
    {"q_max", 500, "question length, tokens"},
    {"out_min", 16, "max_tokens (uniform min)"},
    {"out_max", 128, "max_tokens (uniform max)"},
};
static const wl_param w2_params[] = {
    {"sys_tokens", 200, "one system prompt shared by all chats"},
    {"turns_min", 2, "user turns per chat"},
    {"turns_max", 8, "user turns per chat"},
    {"user_min", 30, "user message length, tokens"},
    {"user_max", 300, "user message length, tokens"},
    {"out_min", 32, "reply length (max_tokens; the same text is resent as history)"},
    {"out_max", 256, "reply length"},
    {"think_min_s", 10, "think time between a turn and the next, seconds"},
    {"think_max_s", 20, "think time, seconds"},
    {"max_out", 1024, "ShareGPT replay: cap on a reply's max_tokens"},
};
static const wl_param w3_params[] = {
    {"agents", 4, "distinct agent system prompts (tool definitions)"},
    {"sys_min", 1000, "agent system prompt length, tokens"},
    {"sys_max", 2000, "agent system prompt length, tokens"},
    {"task_min", 100, "task length, tokens"},
    {"task_max", 300, "task length, tokens"},
    {"steps_min", 3, "steps per agent loop"},
    {"steps_max", 10, "steps per agent loop"},
    {"tool_min", 200, "tool output appended per step, tokens"},
    {"tool_max", 1500, "tool output appended per step, tokens"},
    {"out_min", 20, "tool call length (max_tokens)"},
    {"out_max", 80, "tool call length (max_tokens)"},
    {"think_min_s", 0.5, "tool run time between steps, seconds"},
    {"think_max_s", 2, "tool run time between steps, seconds"},
};
static const wl_param w4_params[] = {
    {"docs", 200, "corpus size"},
    {"doc_min", 1000, "document length, tokens"},
    {"doc_max", 4000, "document length, tokens"},
    {"k_min", 2, "documents per query"},
    {"k_max", 5, "documents per query"},
    {"zipf_s", 1.1, "Zipf exponent of document popularity"},
    {"sys_tokens", 100, "shared system prompt"},
    {"q_min", 20, "question length, tokens"},
    {"q_max", 100, "question length, tokens"},
    {"out_min", 32, "max_tokens"},
    {"out_max", 128, "max_tokens"},
};
static const wl_param w5_params[] = {
    {"hot_share", 0.5, "share of requests on the hot system prompt"},
    {"hot_tokens", 4000, "hot system prompt length, tokens"},
    {"prompts", 64, "other system prompts (the cold 50%)"},
    {"sys_min", 1000, "cold system prompt length, tokens"},
    {"sys_max", 4000, "cold system prompt length, tokens"},
    {"q_min", 50, "question length, tokens"},
    {"q_max", 500, "question length, tokens"},
    {"out_min", 16, "max_tokens"},
    {"out_max", 128, "max_tokens"},
};
static const wl_param w6_params[] = {
    {"p_min", 500, "prompt length, tokens (each prompt unique from its first block)"},
    {"p_max", 4000, "prompt length, tokens"},
    {"out_min", 16, "max_tokens"},
    {"out_max", 128, "max_tokens"},
};

/* llm-d's shared-prefix benchmark (inference-perf `shared_prefix`, as in
 * llm-d's precise-prefix-cache-aware guide): groups x users fixed prompts,
 * shuffled once, then replayed in turn. */
static const wl_param llmd_params[] = {
    {"groups", 150, "system prompts (num_groups)"},
    {"users", 5, "users per group, each with a fixed question (num_prompts_per_group)"},
    {"sys_tokens", 6000, "system prompt length, tokens (system_prompt_len)"},
    {"q_tokens", 1200, "question length, tokens (question_len)"},
    {"out_tokens", 1000, "max_tokens (output_len)"},
};
/* SGLang's generated-shared-prefix (bench_serving --dataset-name
 * generated-shared-prefix). */
static const wl_param gsp_params[] = {
    {"groups", 64, "system prompts (--gsp-num-groups)"},
    {"prompts", 16, "conversations per group (--gsp-prompts-per-group)"},
    {"sys_tokens", 2048, "system prompt length, tokens (--gsp-system-prompt-len)"},
    {"q_tokens", 128, "question length, tokens (--gsp-question-len)"},
    {"out_tokens", 256, "max_tokens (--gsp-output-len)"},
    {"turns", 1, "questions per conversation, each resending the history (--gsp-num-turns)"},
    {"think_min_s", 0, "time between a turn and the next, seconds"},
    {"think_max_s", 0, "time between a turn and the next, seconds"},
};
/* vLLM's prefix_repetition dataset (vllm bench serve). */
static const wl_param prefrep_params[] = {
    {"prefixes", 10, "distinct prefixes (--prefix-repetition-num-prefixes)"},
    {"prefix_tokens", 256, "prefix length, tokens (--prefix-repetition-prefix-len)"},
    {"suffix_tokens", 256, "unique suffix length, tokens (--prefix-repetition-suffix-len)"},
    {"out_tokens", 128, "max_tokens (--prefix-repetition-output-len)"},
};
/* A Mooncake (FAST '25) JSONL trace, --trace FILE. */
static const wl_param trace_params[] = {
    {"block_tokens", 512, "tokens per hash_ids entry"},
    {"max_out", 0, "cap on output_length (0: none)"},
};

typedef struct wl_def {
    const char *name;
    const char *doc;
    const wl_param *params;
    size_t nparams;
} wl_def;

static const wl_def wl_defs[] = {
    {"w1", "shared system prompts, short questions", w1_params, IR_ARRAY_LEN(w1_params)},
    {"w2", "multi-turn chats resending their history", w2_params, IR_ARRAY_LEN(w2_params)},
    {"w3", "agent loops with growing tool output", w3_params, IR_ARRAY_LEN(w3_params)},
    {"w4", "RAG over a Zipf-popular corpus", w4_params, IR_ARRAY_LEN(w4_params)},
    {"w5", "one hot prefix carries half the traffic", w5_params, IR_ARRAY_LEN(w5_params)},
    {"w6", "prompts that share nothing (control)", w6_params, IR_ARRAY_LEN(w6_params)},
    {"llmd-shared-prefix", "llm-d's shared-prefix benchmark", llmd_params,
     IR_ARRAY_LEN(llmd_params)},
    {"sglang-gsp", "SGLang's generated-shared-prefix", gsp_params, IR_ARRAY_LEN(gsp_params)},
    {"prefix-repetition", "vLLM's prefix_repetition", prefrep_params, IR_ARRAY_LEN(prefrep_params)},
    {"trace", "replay of a Mooncake JSONL trace (--trace FILE)", trace_params,
     IR_ARRAY_LEN(trace_params)},
};

static const wl_def *wl_find(const char *name) {
    for (size_t i = 0; i < IR_ARRAY_LEN(wl_defs); i++)
        if (strcmp(wl_defs[i].name, name) == 0) return &wl_defs[i];
    return NULL;
}

int bench_param_parse(json_t *params, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv || eq - kv > 63) return -1;
    char key[64];
    memcpy(key, kv, (size_t)(eq - kv));
    key[eq - kv] = 0;
    char *end;
    double v = strtod(eq + 1, &end);
    if (end == eq + 1 || *end || !isfinite(v)) return -1;
    return json_object_set_new(params, key, json_real(v));
}

int bench_parse_ms(const char *s, double *ms) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0) return -1;
    if (*end == 0 || strcmp(end, "ms") == 0)
        *ms = v;
    else if (strcmp(end, "s") == 0)
        *ms = v * 1000;
    else if (strcmp(end, "us") == 0)
        *ms = v / 1000;
    else
        return -1;
    return 0;
}

int bench_parse_real(const char *s, double lo, double hi, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

int bench_parse_uint(const char *s, double max, size_t *out) {
    double v;
    if (bench_parse_real(s, 0, max, &v) || v != floor(v) || strchr(s, '.') || strchr(s, 'e') ||
        strchr(s, 'E'))
        return -1;
    *out = (size_t)v;
    return 0;
}

/* ---- text ------------------------------------------------------------------ */

struct gsp_data;

typedef struct gen {
    ir_rng text;  /* content */
    ir_rng shape; /* lengths and choices */
    json_t *params;
    const struct gsp_data *gsp; /* sglang-gsp: the conversations */
    char *err;
    size_t errlen;
} gen;

/* A number of the workload's parameters (its JSON object), by name. */
static double param(const gen *g, const char *k) {
    return json_number_value(json_object_get(g->params, k));
}

static long uni(ir_rng *r, double lo, double hi) {
    long a = (long)lo, b = (long)hi;
    if (b <= a) return a;
    return a + (long)ir_rng_below(r, (uint64_t)(b - a + 1));
}

static double unif(ir_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ir_rng_double(r);
}

/* Appends random words until about `tokens` builtin:sim tokens were added.
 * Pieces break only on local context, so the sum of the words' counts is the
 * count of their concatenation to within a token or two. */
static int gen_text(ir_rng *r, size_t tokens, ir_buf *out) {
    static const char cons[] = "bcdfghjklmnprstvwz";
    static const char vow[] = "aeiou";
    size_t have = 0;
    while (have < tokens) {
        char w[16];
        size_t n = 0;
        if (out->len) w[n++] = ir_rng_below(r, 12) ? ' ' : '\n';
        int syl = 1 + (int)ir_rng_below(r, 3);
        for (int s = 0; s < syl; s++) {
            w[n++] = cons[ir_rng_below(r, sizeof cons - 1)];
            w[n++] = vow[ir_rng_below(r, sizeof vow - 1)];
            if (ir_rng_below(r, 3) == 0) w[n++] = cons[ir_rng_below(r, sizeof cons - 1)];
        }
        if (ir_rng_below(r, 10) == 0) w[n++] = ir_rng_below(r, 2) ? ',' : '.';
        have += irt_sim_count(w, n);
        if (ir_buf_append(out, w, n)) return -1;
    }
    return 0;
}

static char *gen_str(ir_rng *r, const char *lead, size_t tokens) {
    ir_buf b;
    ir_buf_init(&b, 64u << 20);
    ir_buf_append_str(&b, lead);
    if (gen_text(r, tokens, &b)) {
        ir_buf_free(&b);
        return NULL;
    }
    return ir_buf_steal(&b, NULL);
}

static json_t *msg(const char *role, const char *content) {
    return json_pack("{s:s, s:s}", "role", role, "content", content);
}

static json_t *msg_new(const char *role, char *content) {
    json_t *m = json_pack("{s:s, s:s}", "role", role, "content", content ? content : "");
    free(content);
    return m;
}

/* ---- requests -------------------------------------------------------------- */

typedef struct wl_build {
    bench_req *reqs;
    size_t n, cap;
    const char *model;
    bool unary; /* --param stream=0: bodies without "stream" (answers come whole) */
} wl_build;

/* Renders messages into a body, measuring the prompt with builtin:sim. */
static int add_req(wl_build *b, json_t *messages, long max_tokens, uint32_t session,
                   uint32_t turn) {
    if (b->n == b->cap) return -1;
    bench_req *q = &b->reqs[b->n];
    memset(q, 0, sizeof *q);
    ir_buf text;
    ir_buf_init(&text, 0);
    const char *err = NULL;
    if (irt_sim_render_chat(messages, true, &text, &err)) {
        ir_buf_free(&text);
        return -1;
    }
    q->prompt_tokens = (uint32_t)irt_sim_count(text.data ? text.data : "", text.len);
    ir_buf_free(&text);
    if (max_tokens < 1) max_tokens = 1;
    q->max_tokens = (uint32_t)max_tokens;
    q->session = session;
    q->turn = turn;
    json_t *body = b->unary ? json_pack("{s:s, s:O, s:I}", "model", b->model, "messages", messages,
                                        "max_tokens", (json_int_t)max_tokens)
                            : json_pack("{s:s, s:O, s:I, s:b, s:{s:b}}", "model", b->model,
                                        "messages", messages, "max_tokens", (json_int_t)max_tokens,
                                        "stream", 1, "stream_options", "include_usage", 1);
    if (!body) return -1;
    q->body = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!q->body) return -1;
    q->body_len = strlen(q->body);
    b->n++;
    return 0;
}

/* ---- Poisson arrivals -------------------------------------------------------- */

static void poisson_times(uint64_t seed, double rate, size_t n, uint64_t *t) {
    ir_rng r;
    ir_rng_seed(&r, seed ^ 0x9e3779b97f4a7c15ull);
    double now = 0;
    for (size_t i = 0; i < n; i++) {
        t[i] = (uint64_t)(now * 1e9);
        double u = ir_rng_double(&r);
        now += -log1p(-u) / rate; /* exponential gap, mean 1/rate */
    }
}

/* ---- single-shot workloads: w1, w4, w5, w6 ------------------------------------- */

static int build_w1(gen *g, wl_build *b, size_t n, bool hot) {
    size_t np = (size_t)param(g, "prompts");
    if (np < 1 || np > 100000) return -1;
    char **sys = calloc(np + 1, sizeof *sys);
    int rc = 0;
    for (size_t i = 0; i <= np && rc == 0; i++) {
        if (i == np && !hot) break;
        char lead[48];
        snprintf(lead, sizeof lead, "You are assistant %zu. ", i);
        size_t len = i == np ? (size_t)param(g, "hot_tokens")
                             : (size_t)uni(&g->shape, param(g, "sys_min"), param(g, "sys_max"));
        sys[i] = gen_str(&g->text, lead, len);
        if (!sys[i]) rc = -1;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t p;
        if (hot && ir_rng_double(&g->shape) < param(g, "hot_share"))
            p = np;
        else
            p = (size_t)ir_rng_below(&g->shape, np);
        char *q =
            gen_str(&g->text, "", (size_t)uni(&g->shape, param(g, "q_min"), param(g, "q_max")));
        json_t *m = json_pack("[o,o]", msg("system", sys[p]), msg_new("user", q));
        rc =
            add_req(b, m, uni(&g->shape, param(g, "out_min"), param(g, "out_max")), (uint32_t)p, 0);
        json_decref(m);
    }
    for (size_t i = 0; i <= np; i++) free(sys[i]);
    free(sys);
    return rc;
}

static int build_w4(gen *g, wl_build *b, size_t n) {
    size_t nd = (size_t)param(g, "docs");
    if (nd < 1 || nd > 100000) return -1;
    char **docs = calloc(nd, sizeof *docs);
    double *cdf = calloc(nd, sizeof *cdf);
    int rc = 0;
    double total = 0;
    for (size_t i = 0; i < nd && rc == 0; i++) {
        char lead[48];
        snprintf(lead, sizeof lead, "Document %zu.\n", i);
        docs[i] = gen_str(&g->text, lead,
                          (size_t)uni(&g->shape, param(g, "doc_min"), param(g, "doc_max")));
        if (!docs[i]) rc = -1;
        total += 1.0 / pow((double)(i + 1), param(g, "zipf_s"));
        cdf[i] = total;
    }
    char *sys = gen_str(&g->text, "Answer from the documents. ", (size_t)param(g, "sys_tokens"));
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t k = (size_t)uni(&g->shape, param(g, "k_min"), param(g, "k_max"));
        if (k > nd) k = nd;
        size_t pick[64];
        if (k > 64) k = 64;
        ir_buf ctx;
        ir_buf_init(&ctx, 64u << 20);
        for (size_t j = 0; j < k; j++) {
            size_t d;
            for (int tries = 0;; tries++) { /* Zipf draw, without replacement */
                double u = ir_rng_double(&g->shape) * total;
                size_t lo = 0, hi = nd - 1;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (cdf[mid] < u)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                d = lo;
                bool dup = false;
                for (size_t x = 0; x < j; x++) dup |= pick[x] == d;
                if (!dup || tries > 100) break;
            }
            pick[j] = d;
            ir_buf_append_str(&ctx, docs[d]);
            ir_buf_append_str(&ctx, "\n\n");
        }
        char *q = gen_str(
            &g->text, "Question: ", (size_t)uni(&g->shape, param(g, "q_min"), param(g, "q_max")));
        ir_buf_append_str(&ctx, q ? q : "");
        free(q);
        json_t *m = json_pack("[o,o]", msg("system", sys ? sys : ""),
                              msg("user", ctx.data ? ctx.data : ""));
        ir_buf_free(&ctx);
        rc = add_req(b, m, uni(&g->shape, param(g, "out_min"), param(g, "out_max")),
                     (uint32_t)pick[0], 0);
        json_decref(m);
    }
    for (size_t i = 0; i < nd; i++) free(docs[i]);
    free(docs);
    free(cdf);
    free(sys);
    return rc;
}

static int build_w6(gen *g, wl_build *b, size_t n, uint64_t seed) {
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        /* A unique lead fills the first block, so no two prompts share one. */
        char lead[96];
        snprintf(lead, sizeof lead, "Request %zu of run %016llx, unique: %016llx. ", i,
                 (unsigned long long)seed, (unsigned long long)ir_rng_next(&g->text));
        char *p =
            gen_str(&g->text, lead, (size_t)uni(&g->shape, param(g, "p_min"), param(g, "p_max")));
        json_t *m = json_pack("[o]", msg_new("user", p));
        rc =
            add_req(b, m, uni(&g->shape, param(g, "out_min"), param(g, "out_max")), (uint32_t)i, 0);
        json_decref(m);
    }
    return rc;
}

/* ---- the peers' workloads -------------------------------------------------------- */

static void shuffle(ir_rng *r, size_t *a, size_t n) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)ir_rng_below(r, i), x = a[i - 1];
        a[i - 1] = a[j];
        a[j] = x;
    }
}

static void free_strs(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i]);
    free(v);
}

/* `n` strings of about `tokens` tokens each, led by "<lead> <i>. " when lead is set. */
static char **gen_strs(gen *g, size_t n, const char *lead, size_t tokens) {
    char **v = calloc(n, sizeof *v);
    for (size_t i = 0; v && i < n; i++) {
        char l[64] = "";
        if (lead) snprintf(l, sizeof l, "%s %zu. ", lead, i);
        v[i] = gen_str(&g->text, l, tokens);
        if (!v[i]) {
            free_strs(v, n);
            return NULL;
        }
    }
    return v;
}

/* llm-d (inference-perf shared_prefix): groups x users fixed prompts, each a
 * group's system prompt and the user's own question, shuffled once and then
 * replayed in turn, so request i is prompt i mod (groups x users). */
static int build_llmd(gen *g, wl_build *b, size_t n) {
    size_t ng = (size_t)param(g, "groups"), nu = (size_t)param(g, "users");
    if (ng < 1 || nu < 1 || ng > 100000 || nu > 1000 || ng * nu > 200000) return -1;
    size_t np = ng * nu;
    char **sys = gen_strs(g, ng, "Group", (size_t)param(g, "sys_tokens"));
    char **q = sys ? gen_strs(g, np, NULL, (size_t)param(g, "q_tokens")) : NULL;
    size_t *order = calloc(np, sizeof *order);
    int rc = q && order ? 0 : -1;
    for (size_t i = 0; i < np && order; i++) order[i] = i;
    if (rc == 0) shuffle(&g->shape, order, np);
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t p = order[i % np];
        json_t *m = json_pack("[o,o]", msg("system", sys[p / nu]), msg("user", q[p]));
        rc = add_req(b, m, (long)param(g, "out_tokens"), (uint32_t)(p / nu), 0);
        json_decref(m);
    }
    free(order);
    free_strs(q, np);
    free_strs(sys, ng);
    return rc;
}

/* vLLM prefix_repetition: the requests are split evenly over the prefixes
 * (then shuffled); each is a prefix followed by a suffix of its own. */
static int build_prefrep(gen *g, wl_build *b, size_t n) {
    size_t np = (size_t)param(g, "prefixes");
    if (np < 1 || np > 100000) return -1;
    char **pre = gen_strs(g, np, "Prefix", (size_t)param(g, "prefix_tokens"));
    size_t *order = calloc(n, sizeof *order);
    int rc = pre && order ? 0 : -1;
    for (size_t i = 0; i < n && order; i++) order[i] = i % np;
    if (rc == 0) shuffle(&g->shape, order, n);
    for (size_t i = 0; i < n && rc == 0; i++) {
        ir_buf u;
        ir_buf_init(&u, 64u << 20);
        ir_buf_append_str(&u, pre[order[i]]);
        ir_buf_append_str(&u, " "); /* a space starts a token: the prefix's tokens stay whole */
        rc = gen_text(&g->text, (size_t)param(g, "suffix_tokens"), &u);
        json_t *m = json_pack("[o]", msg("user", u.data ? u.data : ""));
        ir_buf_free(&u);
        if (rc == 0) rc = add_req(b, m, (long)param(g, "out_tokens"), (uint32_t)order[i], 0);
        json_decref(m);
    }
    free(order);
    free_strs(pre, np);
    return rc;
}

/* SGLang generated-shared-prefix: groups x prompts conversations, shuffled
 * once; turn 0 is the group's system prompt, a blank line and a question, in
 * one user message; each later turn resends the history (the planned reply
 * included) with a new question. Conversations are replayed in turn. */
typedef struct gsp_data {
    size_t ng, np, nconv, turns;
    char **sys;    /* [ng] */
    char **q;      /* [nconv * turns] */
    char **reply;  /* [nconv * turns], the last turn's unused (NULL) */
    size_t *order; /* [nconv], the shuffled conversations */
    size_t next;   /* conversations started so far */
} gsp_data;

static void gsp_free(gsp_data *d) {
    free_strs(d->sys, d->ng);
    free_strs(d->q, d->nconv * d->turns);
    free_strs(d->reply, d->nconv * d->turns);
    free(d->order);
}

static int gsp_init(gen *g, gsp_data *d) {
    memset(d, 0, sizeof *d);
    d->ng = (size_t)param(g, "groups");
    d->np = (size_t)param(g, "prompts");
    d->turns = (size_t)param(g, "turns");
    if (d->ng < 1 || d->np < 1 || d->turns < 1 || d->ng > 100000 || d->np > 10000 ||
        d->turns > 64 || d->ng * d->np * d->turns > 1000000)
        return -1;
    d->nconv = d->ng * d->np;
    size_t nq = d->nconv * d->turns;
    d->sys = gen_strs(g, d->ng, "System prompt", (size_t)param(g, "sys_tokens"));
    d->q = d->sys ? gen_strs(g, nq, NULL, (size_t)param(g, "q_tokens")) : NULL;
    d->reply = calloc(nq, sizeof *d->reply);
    d->order = calloc(d->nconv, sizeof *d->order);
    if (!d->q || !d->reply || !d->order) return -1;
    for (size_t c = 0; c < d->nconv; c++)
        for (size_t t = 0; t + 1 < d->turns; t++)
            if (!(d->reply[c * d->turns + t] =
                      gen_str(&g->text, "", (size_t)param(g, "out_tokens"))))
                return -1;
    for (size_t c = 0; c < d->nconv; c++) d->order[c] = c;
    shuffle(&g->shape, d->order, d->nconv);
    return 0;
}

static int gsp_turn(gen *g, wl_build *b, json_t *msgs, size_t convo, uint32_t turn, uint32_t id) {
    const gsp_data *d = g->gsp;
    const char *q = d->q[convo * d->turns + turn];
    if (turn == 0) {
        ir_buf u;
        ir_buf_init(&u, 64u << 20);
        ir_buf_append_str(&u, d->sys[convo / d->np]);
        ir_buf_append_str(&u, "\n\n");
        ir_buf_append_str(&u, q);
        json_array_append_new(msgs, msg("user", u.data ? u.data : ""));
        ir_buf_free(&u);
    } else {
        json_array_append_new(msgs, msg("user", q));
    }
    int rc = add_req(b, msgs, (long)param(g, "out_tokens"), id, turn);
    const char *r = d->reply[convo * d->turns + turn];
    if (r) json_array_append_new(msgs, msg("assistant", r));
    return rc;
}

/* ---- trace replay (Mooncake JSONL) ----------------------------------------------- */

int bench_trace_block_text(uint64_t id, size_t tokens, ir_buf *out) {
    static const char az[] = "abcdefghijklmnopqrstuvwxyz";
    ir_rng r;
    ir_rng_seed(&r, id ^ 0x6a09e667f3bcc909ull);
    size_t left = 0; /* pieces left in the current word */
    for (size_t i = 0; i < tokens; i++) {
        char p[3];
        if (left == 0) {
            left = 1 + (size_t)ir_rng_below(&r, 4);
            p[0] = ' '; /* whitespace always starts a piece */
        } else {
            p[0] = az[ir_rng_below(&r, 26)];
        }
        p[1] = az[ir_rng_below(&r, 26)];
        p[2] = az[ir_rng_below(&r, 26)]; /* three letters: a piece is full */
        left--;
        if (ir_buf_append(out, p, 3)) return -1;
    }
    return 0;
}

/* Timestamps past this (about 31 years in ms) would overflow the arrival times in ns. */
#define TRACE_MAX_MS 1e12

typedef struct trace_rec {
    double ts_ms;
    size_t line;
    json_t *j;
} trace_rec;

static int trace_cmp(const void *a, const void *b) {
    const trace_rec *x = a, *y = b;
    if (x->ts_ms != y->ts_ms) return x->ts_ms < y->ts_ms ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

/* Reads the first n records; -1 with a message on bad input. */
static int trace_read(const char *path, size_t n, trace_rec *recs, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--trace %s: cannot open", path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, have = 0, ln = 0;
    ssize_t len;
    int rc = 0;
    while (have < n && rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        ln++;
        if ((size_t)len > (64u << 20)) {
            snprintf(err, errlen, "--trace %s:%zu: a line over 64 MiB", path, ln);
            rc = -1;
            break;
        }
        size_t k = 0;
        while (k < (size_t)len &&
               (line[k] == ' ' || line[k] == '\t' || line[k] == '\n' || line[k] == '\r'))
            k++;
        if (k == (size_t)len) continue; /* blank */
        json_error_t je;
        json_t *j = json_loadb(line, (size_t)len, 0, &je);
        json_t *ts = json_object_get(j, "timestamp"), *in = json_object_get(j, "input_length"),
               *out = json_object_get(j, "output_length"), *h = json_object_get(j, "hash_ids");
        bool ok = j && json_is_number(ts) && json_number_value(ts) >= 0 &&
                  json_number_value(ts) <= TRACE_MAX_MS && json_is_integer(in) &&
                  json_integer_value(in) >= 1 && json_integer_value(in) <= 10000000 &&
                  json_is_integer(out) && json_integer_value(out) >= 0 && json_is_array(h);
        size_t i;
        json_t *v;
        json_array_foreach(h, i, v) ok &= json_is_integer(v) && json_integer_value(v) >= 0;
        if (!ok) {
            snprintf(err, errlen,
                     "--trace %s:%zu: need timestamp (ms, 0 to 1e12), input_length >= 1, "
                     "output_length >= 0 and hash_ids (integers >= 0)%s%s",
                     path, ln, j ? "" : ": ", j ? "" : je.text);
            json_decref(j);
            rc = -1;
            break;
        }
        recs[have++] = (trace_rec){json_number_value(ts), ln, j};
    }
    free(line);
    fclose(f);
    if (rc == 0 && have < n) {
        snprintf(err, errlen, "--trace %s: %zu records, the run needs %zu (--requests + --warmup)",
                 path, have, n);
        rc = -1;
    }
    if (rc)
        for (size_t i = 0; i < have; i++) json_decref(recs[i].j);
    return rc;
}

/* One record's prompt: the blocks of its hash_ids, then unique filler when
 * input_length is longer than the blocks it names. */
static int trace_text(const trace_rec *r, size_t bs, uint64_t seed, ir_buf *u) {
    size_t in = (size_t)json_integer_value(json_object_get(r->j, "input_length"));
    json_t *h = json_object_get(r->j, "hash_ids");
    size_t done = 0;
    for (size_t k = 0; done < in && k < json_array_size(h); k++) {
        size_t take = in - done < bs ? in - done : bs;
        if (bench_trace_block_text((uint64_t)json_integer_value(json_array_get(h, k)), take, u))
            return -1;
        done += take;
    }
    for (uint64_t k = 0; done < in; k++) { /* the high bit keeps filler apart from hash ids */
        size_t take = in - done < bs ? in - done : bs;
        uint64_t id = (1ull << 63) | ((seed << 40) ^ ((uint64_t)r->line << 16) ^ k);
        if (bench_trace_block_text(id, take, u)) return -1;
        done += take;
    }
    return 0;
}

static int build_trace(gen *g, wl_build *b, size_t n, const char *path, uint64_t seed, uint64_t *t,
                       char *err, size_t errlen) {
    size_t bs = (size_t)param(g, "block_tokens");
    if (bs < 1 || bs > 1000000) return -1;
    trace_rec *recs = calloc(n, sizeof *recs);
    if (!recs || trace_read(path, n, recs, err, errlen)) {
        free(recs);
        return -1;
    }
    qsort(recs, n, sizeof *recs, trace_cmp);
    int rc = 0;
    long cap = (long)param(g, "max_out");
    for (size_t i = 0; i < n && rc == 0; i++) {
        t[i] = (uint64_t)((recs[i].ts_ms - recs[0].ts_ms) * 1e6);
        ir_buf u;
        ir_buf_init(&u, 256u << 20);
        rc = trace_text(&recs[i], bs, seed, &u);
        long out = (long)json_integer_value(json_object_get(recs[i].j, "output_length"));
        if (cap > 0 && out > cap) out = cap;
        json_t *m = json_pack("[o]", msg("user", u.data ? u.data : ""));
        ir_buf_free(&u);
        json_t *h = json_object_get(recs[i].j, "hash_ids");
        uint32_t first =
            json_array_size(h) ? (uint32_t)json_integer_value(json_array_get(h, 0)) : 0;
        if (rc == 0) rc = add_req(b, m, out, first, 0);
        json_decref(m);
    }
    for (size_t i = 0; i < n; i++) json_decref(recs[i].j);
    free(recs);
    return rc;
}

/* ---- sessions: w2, w3, ShareGPT ---------------------------------------------------
 * Arrival slots stay Poisson: each slot goes to the session that has been
 * ready (its think time over) the longest, else a new session starts. So
 * turns never come sooner than the think time after the previous turn's
 * scheduled time, and the overall rate is the one asked for. */

typedef struct session {
    json_t *msgs; /* the history resent every turn */
    uint32_t id;
    uint32_t turn, turns;
    double ready_s; /* earliest next turn */
    size_t convo;   /* ShareGPT conversation index */
    size_t pos;     /* ShareGPT: next message */
} session;

typedef struct sharegpt {
    json_t *root; /* the array of conversations with a human turn */
} sharegpt;

static const char *sg_from(json_t *m) {
    const char *f = ir_json_str(m, "from");
    return f ? f : ir_json_str(m, "role");
}
static const char *sg_value(json_t *m) {
    const char *v = ir_json_str(m, "value");
    return v ? v : ir_json_str(m, "content");
}

static int sharegpt_load(const char *path, sharegpt *s, char *err, size_t errlen) {
    json_error_t je;
    json_t *all = json_load_file(path, 0, &je);
    if (!all || !json_is_array(all)) {
        snprintf(err, errlen, "--sharegpt %s: %s", path, all ? "not a JSON array" : je.text);
        json_decref(all);
        return -1;
    }
    s->root = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(all, i, c) {
        json_t *conv = json_object_get(c, "conversations");
        if (!json_is_array(conv)) conv = json_object_get(c, "messages");
        if (!json_is_array(conv)) continue;
        size_t j;
        json_t *m;
        bool human = false;
        json_array_foreach(conv, j, m) {
            const char *f = sg_from(m);
            human |= f && (strcmp(f, "human") == 0 || strcmp(f, "user") == 0) && sg_value(m);
        }
        if (human) json_array_append(s->root, conv);
    }
    json_decref(all);
    if (json_array_size(s->root) == 0) {
        snprintf(err, errlen, "--sharegpt %s: no conversation with a human turn", path);
        json_decref(s->root);
        return -1;
    }
    return 0;
}

static bool sg_is(json_t *m, const char *a, const char *b) {
    const char *f = sg_from(m);
    return f && (strcmp(f, a) == 0 || strcmp(f, b) == 0);
}

/* Emits the session's next request and appends its reply to the history. */
static int session_turn(gen *g, wl_build *b, session *s, const char *kind, sharegpt *sg,
                        const char *const *agents) {
    long out;
    if (g->gsp) return gsp_turn(g, b, s->msgs, s->convo, s->turn, s->id);
    if (sg && sg->root) {
        json_t *conv = json_array_get(sg->root, s->convo);
        if (s->turn == 0) s->pos = 0;
        /* Copy messages up to and including the next human one. */
        while (s->pos < json_array_size(conv)) {
            json_t *m = json_array_get(conv, s->pos++);
            if (!sg_value(m)) continue;
            bool human = sg_is(m, "human", "user");
            const char *role = human                          ? "user"
                               : sg_is(m, "system", "system") ? "system"
                                                              : "assistant";
            json_array_append_new(s->msgs, msg(role, sg_value(m)));
            if (human) break;
        }
        json_t *reply = NULL;
        if (s->pos < json_array_size(conv) &&
            sg_is(json_array_get(conv, s->pos), "gpt", "assistant"))
            reply = json_array_get(conv, s->pos);
        out = reply ? (long)irt_sim_count(sg_value(reply), strlen(sg_value(reply))) : 128;
        if (out > (long)param(g, "max_out")) out = (long)param(g, "max_out");
        int rc = add_req(b, s->msgs, out, s->id, s->turn);
        if (reply) {
            json_array_append_new(s->msgs, msg("assistant", sg_value(reply)));
            s->pos++;
        }
        /* Ends when no human turn is left. */
        bool more = false;
        for (size_t j = s->pos; j < json_array_size(conv); j++)
            more |= sg_is(json_array_get(conv, j), "human", "user");
        s->turns = more ? s->turn + 2 : s->turn + 1;
        return rc;
    }
    if (strcmp(kind, "w2") == 0) {
        char *u = gen_str(&g->text, "",
                          (size_t)uni(&g->shape, param(g, "user_min"), param(g, "user_max")));
        json_array_append_new(s->msgs, msg_new("user", u));
        out = uni(&g->shape, param(g, "out_min"), param(g, "out_max"));
    } else { /* w3 */
        if (s->turn == 0) {
            size_t a = s->id % (size_t)param(g, "agents");
            json_array_append_new(s->msgs, msg("system", agents[a]));
            char *t = gen_str(&g->text, "Task: ",
                              (size_t)uni(&g->shape, param(g, "task_min"), param(g, "task_max")));
            json_array_append_new(s->msgs, msg_new("user", t));
        } else {
            char *t = gen_str(&g->text, "Tool output:\n",
                              (size_t)uni(&g->shape, param(g, "tool_min"), param(g, "tool_max")));
            json_array_append_new(s->msgs, msg_new("tool", t));
        }
        out = uni(&g->shape, param(g, "out_min"), param(g, "out_max"));
    }
    int rc = add_req(b, s->msgs, out, s->id, s->turn);
    /* The reply this turn is assumed to produce, resent as history next turn. */
    char *r = gen_str(&g->text, strcmp(kind, "w3") == 0 ? "Call tool: " : "", (size_t)out);
    json_array_append_new(s->msgs, msg_new("assistant", r));
    return rc;
}

static int build_sessions(gen *g, wl_build *b, const uint64_t *t, size_t n, const char *kind,
                          sharegpt *sg) {
    const char *agents[64] = {0};
    char *shared_sys = NULL;
    size_t nag = 0;
    if (!sg->root && strcmp(kind, "w3") == 0) {
        nag = (size_t)param(g, "agents");
        if (nag < 1 || nag > 64) return -1;
        for (size_t i = 0; i < nag; i++) {
            char lead[64];
            snprintf(lead, sizeof lead, "You are agent %zu. Tools:\n", i);
            agents[i] = gen_str(&g->text, lead,
                                (size_t)uni(&g->shape, param(g, "sys_min"), param(g, "sys_max")));
        }
    } else if (!sg->root && !g->gsp) {
        shared_sys =
            gen_str(&g->text, "You are a helpful assistant. ", (size_t)param(g, "sys_tokens"));
    }
    size_t cap = 1024, nact = 0;
    session *act = calloc(cap, sizeof *act);
    uint32_t next_id = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        double now = (double)t[i] / 1e9;
        size_t best = SIZE_MAX;
        for (size_t j = 0; j < nact; j++)
            if (act[j].ready_s <= now && (best == SIZE_MAX || act[j].ready_s < act[best].ready_s))
                best = j;
        if (best == SIZE_MAX) {
            if (nact == cap) {
                cap *= 2;
                act = realloc(act, cap * sizeof *act);
            }
            session *s = &act[nact];
            memset(s, 0, sizeof *s);
            s->id = next_id++;
            s->msgs = json_array();
            if (g->gsp) {
                s->convo = g->gsp->order[s->id % g->gsp->nconv];
                s->turns = (uint32_t)g->gsp->turns;
            } else if (sg->root) {
                s->convo = (size_t)ir_rng_below(&g->shape, json_array_size(sg->root));
                s->turns = 1;
            } else if (strcmp(kind, "w2") == 0) {
                json_array_append_new(s->msgs, msg("system", shared_sys ? shared_sys : ""));
                s->turns = (uint32_t)uni(&g->shape, param(g, "turns_min"), param(g, "turns_max"));
            } else {
                s->turns = (uint32_t)uni(&g->shape, param(g, "steps_min"), param(g, "steps_max"));
            }
            best = nact++;
        }
        session *s = &act[best];
        rc = session_turn(g, b, s, kind, sg, agents);
        s->turn++;
        s->ready_s = now + unif(&g->shape, param(g, "think_min_s"), param(g, "think_max_s"));
        if (s->turn >= s->turns) { /* done: drop it */
            json_decref(s->msgs);
            act[best] = act[--nact];
        }
    }
    for (size_t j = 0; j < nact; j++) json_decref(act[j].msgs);
    free(act);
    for (size_t i = 0; i < nag; i++) free((char *)agents[i]);
    free(shared_sys);
    return rc;
}

/* ---- the reuse ceiling ------------------------------------------------------------
 * What one replica with an infinite cache would hit: for each request, the
 * leading whole blocks whose chained hash some earlier request produced. On
 * the way, the working set: the distinct blocks of the whole schedule, and
 * those of them that a later request hits (what a cache must hold to reach the
 * ceiling). */

/* Every block hash the workload can produce: the cap of the set of seen ones. */
static size_t max_blocks(const bench_workload *w, size_t bs) {
    size_t n = 1;
    for (size_t i = 0; i < w->n; i++) n += w->reqs[i].prompt_tokens / bs;
    return n;
}

/* The map's value for a block: its dense id (bench_btrace) and, in bit 0, whether
 * a later request has hit it. */
#define SEEN_HIT 1u

/* The leading blocks of hs[0..nb) that an earlier request produced; each one
 * hit for the first time counts in w->reused_blocks. Writes every block's id to
 * ids, giving new blocks the next ids from *n_ids. */
static size_t count_reused(bench_workload *w, ir_map *seen, const ir_hash128 *hs, size_t nb,
                           uint32_t *ids, uint32_t *n_ids, int *rc) {
    size_t m = 0;
    uint64_t v;
    while (m < nb && *rc == 0 && ir_map_get(seen, &hs[m], sizeof hs[m], &v)) {
        if (!(v & SEEN_HIT)) {
            *rc = ir_map_put(seen, &hs[m], sizeof hs[m], v | SEEN_HIT);
            w->reused_blocks++;
        }
        ids[m++] = (uint32_t)(v >> 1);
    }
    /* Past the first miss every chained hash is new. */
    for (size_t j = m; j < nb && *rc == 0; j++) {
        ids[j] = (*n_ids)++;
        *rc = ir_map_put(seen, &hs[j], sizeof hs[j], (uint64_t)ids[j] << 1);
    }
    return m;
}

/* The builtin:sim tokens of request q's rendered chat into ids; -1 on failure. */
static int request_tokens(const bench_req *q, irt_ids *ids) {
    json_t *body = json_loadb(q->body, q->body_len, 0, NULL);
    ir_buf text;
    ir_buf_init(&text, 0);
    const char *e;
    ids->len = 0;
    int rc = !body || irt_sim_render_chat(json_object_get(body, "messages"), true, &text, &e) ||
                     irt_sim_encode(text.data ? text.data : "", text.len, ids)
                 ? -1
                 : 0;
    json_decref(body);
    ir_buf_free(&text);
    return rc;
}

/* The finite-cache ceilings over trace t (ceiling.c): NaN when no cache size was given. */
static int finite_ceilings(bench_workload *w, const bench_btrace *t, size_t bs, double all) {
    w->reuse_ceiling_finite = w->pooled_lru_hit_rate = NAN;
    if (!w->cache_blocks || !w->cache_replicas) return 0;
    size_t pool = w->cache_blocks * w->cache_replicas, min_hits, lru_hits;
    if (bench_min_hits(t, pool, w->warmup, &min_hits) ||
        bench_lru_hits(t, pool, w->warmup, &lru_hits))
        return -1;
    w->reuse_ceiling_finite = all > 0 ? (double)(min_hits * bs) / all : 0;
    w->pooled_lru_hit_rate = all > 0 ? (double)(lru_hits * bs) / all : 0;
    return 0;
}

/* Room for nb blocks' hashes and ids. -1 when out of memory. */
static int grow_blocks(ir_hash128 **hs, uint32_t **bid, size_t *cap, size_t nb) {
    ir_hash128 *h = realloc(*hs, nb * 2 * sizeof *h);
    if (h) *hs = h;
    uint32_t *b = realloc(*bid, nb * 2 * sizeof *b);
    if (b) *bid = b;
    if (!h || !b) return -1;
    *cap = nb * 2;
    return 0;
}

static int reuse_ceiling(bench_workload *w, size_t bs) {
    ir_map seen; /* block hashes produced so far -> id << 1 | SEEN_HIT */
    if (ir_map_init(&seen, 1024, max_blocks(w, bs))) return -1;
    ir_hash128 root = ir_block_hash_root(NULL, NULL, NULL);
    irt_ids ids;
    irt_ids_init(&ids);
    ir_hash128 *hs = NULL;
    uint32_t *bid = NULL, n_ids = 0;
    size_t hcap = 0;
    bench_btrace t;
    bench_btrace_init(&t);
    double hit = 0, all = 0;
    int rc = 0;
    for (size_t i = 0; i < w->n && rc == 0; i++) {
        bench_req *q = &w->reqs[i];
        if ((rc = request_tokens(q, &ids))) break;
        size_t nb = ids.len / bs;
        if (nb > hcap && (rc = grow_blocks(&hs, &bid, &hcap, nb))) break;
        nb = ir_block_hash_chain(root, ids.ids, ids.len, bs, hs, nb);
        size_t m = count_reused(w, &seen, hs, nb, bid, &n_ids, &rc);
        q->reused_tokens = (uint32_t)(m * bs);
        w->distinct_blocks += nb - m;
        if (rc == 0) rc = bench_btrace_add(&t, bid, nb);
        if (i >= w->warmup) {
            hit += (double)q->reused_tokens;
            all += (double)q->prompt_tokens;
        }
    }
    w->reuse_ceiling = all > 0 ? hit / all : 0;
    if (rc == 0) rc = finite_ceilings(w, &t, bs, all);
    bench_btrace_free(&t);
    irt_ids_free(&ids);
    free(hs);
    free(bid);
    ir_map_free(&seen);
    return rc;
}

/* ---- entry ---------------------------------------------------------------------- */

int bench_workload_build(const bench_wl_opts *o, bench_workload *w, char *err, size_t errlen) {
    memset(w, 0, sizeof *w);
    const wl_def *d = wl_find(o->name ? o->name : "");
    if (!d) {
        snprintf(err, errlen,
                 "unknown workload '%s' (w1..w6, llmd-shared-prefix, sglang-gsp, "
                 "prefix-repetition, trace)",
                 o->name ? o->name : "");
        return -1;
    }
    bool trace = strcmp(d->name, "trace") == 0;
    if (trace != (o->trace != NULL)) {
        snprintf(err, errlen,
                 trace ? "the workload trace needs --trace FILE"
                       : "--trace FILE replays a trace: leave out --workload %s (or give "
                         "--workload trace)",
                 d->name);
        return -1;
    }
    if (trace && o->rate > 0) {
        snprintf(err, errlen,
                 "--rate goes without --trace: a trace's timestamps set its arrivals "
                 "(--speedup K replays it K times faster)");
        return -1;
    }
    double speedup = o->speedup > 0 ? o->speedup : 1;
    if (o->n < 1 || o->n > BENCH_MAX_REQUESTS || (!trace && !(o->rate > 0)) || o->warmup >= o->n ||
        !isfinite(speedup)) {
        snprintf(err, errlen, "need 0 <= warmup < requests <= %d, rate > 0 and speedup > 0",
                 BENCH_MAX_REQUESTS);
        return -1;
    }
    snprintf(w->name, sizeof w->name, "%s", d->name);
    w->warmup = o->warmup;
    w->cache_blocks = o->cache_blocks;
    w->cache_replicas = o->cache_replicas;
    w->params = json_object();
    for (size_t i = 0; i < d->nparams; i++) {
        json_t *v = o->params ? json_object_get(o->params, d->params[i].key) : NULL;
        json_object_set_new(w->params, d->params[i].key,
                            json_real(v ? json_number_value(v) : d->params[i].def));
    }
    /* stream, any workload's: 0 sends every request without "stream" (the OpenAI SDKs'
     * default), whose answer comes whole; kept in the params only when given */
    json_t *stream = o->params ? json_object_get(o->params, "stream") : NULL;
    if (stream) json_object_set_new(w->params, "stream", json_real(json_number_value(stream)));
    if (o->params) {
        const char *k;
        json_t *v;
        json_object_foreach(o->params, k, v) {
            if (!json_object_get(w->params, k)) {
                snprintf(err, errlen, "workload %s has no parameter '%s'", d->name, k);
                bench_workload_free(w);
                return -1;
            }
        }
    }
    gen g = {.params = w->params};
    ir_rng_seed(&g.text, o->seed * 2 + 1);
    ir_rng_seed(&g.shape, o->seed ^ 0x5bd1e995ull);
    uint64_t *t = calloc(o->n, sizeof *t);
    if (!trace) poisson_times(o->seed, o->rate, o->n, t); /* model time; divided by K below */
    wl_build b = {calloc(o->n, sizeof(bench_req)), 0, o->n,
                  o->model ? o->model : "inferrail/sim-8b",
                  stream && json_number_value(stream) == 0};
    sharegpt sg = {0};
    int rc = 0;
    if (o->sharegpt && strcmp(d->name, "w2") != 0) {
        snprintf(err, errlen, "--sharegpt goes with w2 only");
        rc = -1;
    } else if (o->sharegpt) {
        rc = sharegpt_load(o->sharegpt, &sg, err, errlen);
        if (rc == 0) json_object_set_new(w->params, "sharegpt", json_string(o->sharegpt));
        if (rc == 0) rc = build_sessions(&g, &b, t, o->n, "w2", &sg);
        json_decref(sg.root);
    } else if (strcmp(d->name, "w1") == 0)
        rc = build_w1(&g, &b, o->n, false);
    else if (strcmp(d->name, "w5") == 0)
        rc = build_w1(&g, &b, o->n, true);
    else if (strcmp(d->name, "w4") == 0)
        rc = build_w4(&g, &b, o->n);
    else if (strcmp(d->name, "w6") == 0)
        rc = build_w6(&g, &b, o->n, o->seed);
    else if (strcmp(d->name, "llmd-shared-prefix") == 0)
        rc = build_llmd(&g, &b, o->n);
    else if (strcmp(d->name, "prefix-repetition") == 0)
        rc = build_prefrep(&g, &b, o->n);
    else if (trace)
        rc = build_trace(&g, &b, o->n, o->trace, o->seed, t, err, errlen);
    else if (strcmp(d->name, "sglang-gsp") == 0) {
        gsp_data gd;
        rc = gsp_init(&g, &gd);
        g.gsp = &gd;
        if (rc == 0) rc = build_sessions(&g, &b, t, o->n, d->name, &sg);
        gsp_free(&gd);
    } else
        rc = build_sessions(&g, &b, t, o->n, d->name, &sg);
    w->reqs = b.reqs;
    w->n = b.n;
    if (rc == 0 && b.n != o->n) rc = -1;
    /* The schedule was built in model time (think times included); --speedup
     * compresses it, so every K gives the same bodies in the same order. */
    w->speedup = speedup;
    w->rate = o->rate;
    if (trace && o->n > 1 && t[o->n - 1] > 0)
        w->rate = (double)(o->n - 1) / ((double)t[o->n - 1] / 1e9);
    if (trace) json_object_set_new(w->params, "trace", json_string(o->trace));
    for (size_t i = 0; i < w->n; i++) w->reqs[i].at_ns = (uint64_t)((double)t[i] / speedup);
    free(t);
    if (rc == 0) rc = reuse_ceiling(w, o->block_size ? o->block_size : 16);
    if (rc) {
        if (!err[0]) snprintf(err, errlen, "workload %s: generation failed", d->name);
        bench_workload_free(w);
        return -1;
    }
    return 0;
}

void bench_workload_free(bench_workload *w) {
    for (size_t i = 0; i < w->n; i++) free(w->reqs[i].body);
    free(w->reqs);
    json_decref(w->params);
    memset(w, 0, sizeof *w);
}
