/* report.c: a vLLM or SGLang metrics page read into one engine report (see
 * ir_load.h for the rules). One pass of the text reader; each sample is
 * matched against the few families a report needs, the rest are ignored. */
#include "load/ir_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The families a report reads, for both engines. */
typedef enum fam {
    F_RUNNING,
    F_WAITING,
    F_KV,
    F_KV_OLD, /* vllm:gpu_cache_usage_perc, read when the newer name is absent */
    F_QUERIES,
    F_HITS,
    F_PREEMPT,
    F_CACHE_INFO, /* vllm:cache_config_info: labels, not a value */
    F_MAX_TOKENS, /* sglang:max_total_num_tokens */
    F_COUNT
} fam;

static const char *const vllm_names[F_COUNT] = {
    "vllm:num_requests_running",  "vllm:num_requests_waiting",       "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",  "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
    "vllm:num_preemptions_total", "vllm:cache_config_info",          NULL,
};
static const char *const sglang_names[F_COUNT] = {
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    NULL,
    "sglang:prompt_tokens_total",
    "sglang:cached_tokens_total",
    NULL,
    NULL,
    "sglang:max_total_num_tokens",
};

typedef struct acc {
    double sum[F_COUNT];
    uint32_t n[F_COUNT];
    bool bad[F_COUNT]; /* a sample whose value is not a finite number >= 0 */
    uint64_t gpu_blocks;
    uint32_t block_size;
} acc;

typedef struct ctx {
    acc e[2]; /* [0] vLLM, [1] SGLang */
    size_t prefixed[2];
    size_t mine[2], others[2]; /* samples labelled with this rank, with another */
    int64_t rank;              /* the data-parallel rank read; -1: all of them */
} ctx;

/* The label that names a sample's data-parallel rank, by engine. */
static const char *const rank_label[2] = {"engine", "dp_rank"};

/* Whether sample s is rank c->rank's: it names that rank, or none (then it is
 * the whole engine's, and every rank sees it). Counts the labelled samples of this
 * rank and of others. */
static bool of_rank(ctx *c, int e, const irl_sample *s) {
    char v[24];
    if (c->rank < 0 || !s->labels_len || !irl_prom_label(s, rank_label[e], v, sizeof v))
        return true;
    char *end;
    long long r = strtoll(v, &end, 10);
    if (!v[0] || *end) return false; /* not a rank: no rank's */
    if (r != c->rank)
        c->others[e]++;
    else
        c->mine[e]++;
    return r == c->rank;
}

static bool name_is(const irl_sample *s, const char *want) {
    size_t n = strlen(want);
    return s->name_len == n && memcmp(s->name, want, n) == 0;
}

static bool starts(const irl_sample *s, const char *pre, size_t n) {
    return s->name_len > n && memcmp(s->name, pre, n) == 0;
}

/* A label value as an unsigned count; false for "None", junk or overflow. */
static bool label_count(const irl_sample *s, const char *key, uint64_t *out) {
    char v[32];
    if (!irl_prom_label(s, key, v, sizeof v) || !v[0]) return false;
    for (const char *p = v; *p; p++)
        if (*p < '0' || *p > '9') return false;
    if (strlen(v) > 12) return false; /* a trillion blocks is junk */
    *out = strtoull(v, NULL, 10);
    return true;
}

static void cache_info(acc *a, const irl_sample *s) {
    uint64_t blocks, bs;
    if (label_count(s, "num_gpu_blocks", &blocks))
        a->gpu_blocks = IR_MIN(a->gpu_blocks + blocks, (uint64_t)1 << 40); /* blocks < 10^12 */
    if (label_count(s, "block_size", &bs) && bs > 0 && bs <= 1u << 20) a->block_size = (uint32_t)bs;
}

static void add(acc *a, fam f, const irl_sample *s) {
    if (s->labels_len) {
        char pr[8];
        if (irl_prom_label(s, "priority", pr, sizeof pr)) return; /* a breakdown */
    }
    if (f == F_CACHE_INFO) {
        cache_info(a, s);
        a->n[f]++;
        return;
    }
    if (!isfinite(s->value) || s->value < 0) {
        a->bad[f] = true;
        return;
    }
    a->sum[f] += s->value;
    a->n[f]++;
}

static int on_sample(void *ud, const irl_sample *s) {
    ctx *c = ud;
    int e;
    const char *const *names;
    if (starts(s, "vllm:", 5))
        e = 0, names = vllm_names;
    else if (starts(s, "sglang:", 7))
        e = 1, names = sglang_names;
    else
        return 0;
    c->prefixed[e]++;
    /* SGLang with --enable-metrics-for-all-schedulers: every tensor-parallel worker
     * reports its scheduler's numbers, copies of rank 0's; one counts */
    char tp[24];
    if (s->labels_len && irl_prom_label(s, "tp_rank", tp, sizeof tp) && strcmp(tp, "0") != 0)
        return 0;
    if (!of_rank(c, e, s)) return 0;
    for (int f = 0; f < F_COUNT; f++)
        if (names[f] && name_is(s, names[f])) {
            add(&c->e[e], (fam)f, s);
            break;
        }
    return 0;
}

static void say(char *why, size_t whylen, const char *what, const char *family) {
    if (why && whylen) snprintf(why, whylen, "%s%s", what, family);
}

/* The first required family the page lacks for engine e, or NULL. */
static const char *missing(const acc *a, const char *const *names) {
    for (fam f = F_RUNNING; f <= F_KV; f++) {
        bool seen = a->n[f] || a->bad[f];
        if (f == F_KV && names[F_KV_OLD]) seen |= a->n[F_KV_OLD] || a->bad[F_KV_OLD];
        if (!seen) return names[f];
    }
    return NULL;
}

/* The required family of engine e with a bad value, or NULL; an optional
 * family with one is dropped, as if absent. */
static const char *bad_value(acc *a, const char *const *names) {
    fam kv = a->n[F_KV] || a->bad[F_KV] ? F_KV : F_KV_OLD;
    for (int f = 0; f < F_COUNT; f++)
        a->bad[f] |= !isfinite(a->sum[f]); /* samples that overflow when summed */
    fam req[] = {F_RUNNING, F_WAITING, kv};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++)
        if (a->bad[req[i]]) return names[req[i]];
    for (int f = 0; f < F_COUNT; f++)
        if (a->bad[f]) a->n[f] = 0;
    return NULL;
}

static void fill(const acc *a, irl_engine engine, irl_report *r) {
    r->engine = engine;
    r->ranks = a->n[F_RUNNING];
    r->running = a->sum[F_RUNNING];
    r->waiting = a->sum[F_WAITING];
    fam kv = a->n[F_KV] ? F_KV : F_KV_OLD;
    r->kv_usage = a->sum[kv] / a->n[kv];
    if (r->kv_usage > 1) r->kv_usage = 1;
    r->has_prefix = a->n[F_QUERIES] && a->n[F_HITS];
    if (r->has_prefix) {
        r->prefix_queries = a->sum[F_QUERIES];
        r->prefix_hits = a->sum[F_HITS];
    }
    r->has_preemptions = a->n[F_PREEMPT] > 0;
    r->preemptions = a->sum[F_PREEMPT];
    r->capacity_blocks = a->gpu_blocks;
    r->block_size = a->block_size;
    if (engine == IRL_ENGINE_SGLANG && a->n[F_MAX_TOKENS])
        r->capacity_tokens = (uint64_t)fmin(a->sum[F_MAX_TOKENS], 1e15);
    else if (a->gpu_blocks && a->block_size)
        r->capacity_tokens = a->gpu_blocks * a->block_size;
}

int irl_report_parse(const char *page, size_t len, irl_report *out, char *why, size_t whylen) {
    return irl_report_parse_rank(page, len, -1, out, why, whylen);
}

int irl_report_parse_rank(const char *page, size_t len, int64_t rank, irl_report *out, char *why,
                          size_t whylen) {
    memset(out, 0, sizeof *out);
    ctx c;
    memset(&c, 0, sizeof c);
    c.rank = rank;
    irl_prom_parse(page, len, on_sample, &c, &out->malformed);
    const char *lack[2] = {missing(&c.e[0], vllm_names), missing(&c.e[1], sglang_names)};
    int e = -1;
    if (!lack[0])
        e = 0;
    else if (!lack[1])
        e = 1;
    if (e < 0) {
        if (!c.prefixed[0] && !c.prefixed[1])
            say(why, whylen, "no vllm: or sglang: metrics", "");
        else
            say(why, whylen, "the page lacks ", lack[c.prefixed[1] > c.prefixed[0]]);
        int which = c.prefixed[1] > c.prefixed[0];
        if (rank >= 0 && c.others[which] && !c.mine[which]) {
            if (why && whylen)
                snprintf(why, whylen,
                         "the page reports other data-parallel ranks but not %lld: the engine has "
                         "fewer ranks than the replica's data_parallel_size",
                         (long long)rank);
            return IRL_REPORT_NO_RANK;
        }
        return -1;
    }
    const char *bad = bad_value(&c.e[e], e == 0 ? vllm_names : sglang_names);
    if (bad) {
        say(why, whylen, "a value that is not a finite number >= 0 in ", bad);
        return -1;
    }
    size_t mal = out->malformed;
    fill(&c.e[e], e == 0 ? IRL_ENGINE_VLLM : IRL_ENGINE_SGLANG, out);
    out->malformed = mal;
    return 0;
}

bool irl_report_restarted(const irl_report *prev, const irl_report *cur) {
    if (!prev->has_prefix || !cur->has_prefix || prev->engine != cur->engine) return false;
    return cur->prefix_queries < prev->prefix_queries || cur->prefix_hits < prev->prefix_hits;
}

uint64_t irl_report_capacity_blocks(const irl_report *r, uint32_t block_size) {
    if (block_size == 0) return 0;
    if (r->capacity_blocks) {
        if (!r->block_size || r->block_size == block_size) return r->capacity_blocks;
        return r->capacity_blocks * r->block_size / block_size;
    }
    return r->capacity_tokens / block_size;
}

const char *irl_engine_name(irl_engine e) {
    switch (e) {
    case IRL_ENGINE_VLLM:
        return "vllm";
    case IRL_ENGINE_SGLANG:
        return "sglang";
    default:
        return "none";
    }
}
