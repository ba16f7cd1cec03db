/* metrics.c: the simulator's Prometheus page, in vLLM V1's or SGLang's names, kept
 * in an obs registry that writes numbers as prometheus_client does (text format
 * 0.0.4). The engine records its histograms through the series made here; the
 * gauges and counters it keeps in sim_stats are copied in when a page is written. */
#include "sim/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obs/ir_obs.h"

/* The series written from sim_stats and the engine's state at each page. */
enum {
    G_RUNNING,
    G_WAITING,
    G_KV_USAGE,
    G_USED_TOKENS,
    G_MAX_TOKENS,
    G_HIT_RATE,
    C_QUERIES,
    C_HITS,
    C_EXT_QUERIES,
    C_EXT_HITS,
    C_PREEMPTIONS,
    C_PROMPT,
    C_GENERATION,
    C_REQUESTS,
    C_ABORTED,
    C_FINISHED, /* SIM_FINISH_COUNT of them */
    S_N = C_FINISHED + SIM_FINISH_COUNT
};

struct sim_metrics {
    iro_registry *reg;
    bool owns; /* rank 0's; the other ranks' series live in it too */
    iro_series *s[S_N];
};

static iro_series *one(iro_family *f, const char *const *values) {
    return iro_series_get(f, values);
}

static void hist(iro_registry *r, sim_hist *h, const char *name, const char *help,
                 const char *const *labels, const char *const *values) {
    h->s = one(iro_histogram(r, name, help, labels, h->bounds, h->nb), values);
}

static void init_vllm(sim_metrics *m, sim_stats *st, const sim_cfg *c, const char *model) {
    iro_registry *r = m->reg;
    char rank[16];
    snprintf(rank, sizeof rank, "%u", c->dp_rank);
    const char *const l[] = {"engine", "model_name", NULL};
    const char *const v[] = {rank, model};
    m->s[G_RUNNING] = one(iro_gauge(r, "vllm:num_requests_running",
                                    "Number of requests in model execution batches.", l),
                          v);
    m->s[G_WAITING] = one(
        iro_gauge(r, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", l),
        v);
    m->s[G_KV_USAGE] = one(
        iro_gauge(r, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", l),
        v);
    m->s[C_QUERIES] =
        one(iro_counter(r, "vllm:prefix_cache_queries_total",
                        "Prefix cache queries, in terms of number of queried tokens.", l),
            v);
    m->s[C_HITS] = one(iro_counter(r, "vllm:prefix_cache_hits_total",
                                   "Prefix cache hits, in terms of number of cached tokens.", l),
                       v);
    if (c->num_cpu_blocks) { /* vLLM has them with a KV connector */
        m->s[C_EXT_QUERIES] = one(iro_counter(r, "vllm:external_prefix_cache_queries_total",
                                              "External prefix cache queries from KV connector "
                                              "cross-instance cache sharing, in terms of number "
                                              "of queried tokens.",
                                              l),
                                  v);
        m->s[C_EXT_HITS] = one(iro_counter(r, "vllm:external_prefix_cache_hits_total",
                                           "External prefix cache hits from KV connector "
                                           "cross-instance cache sharing, in terms of number of "
                                           "cached tokens.",
                                           l),
                               v);
    }
    m->s[C_PREEMPTIONS] = one(iro_counter(r, "vllm:num_preemptions_total",
                                          "Cumulative number of preemption from the engine.", l),
                              v);
    m->s[C_PROMPT] = one(
        iro_counter(r, "vllm:prompt_tokens_total", "Number of prefill tokens processed.", l), v);
    m->s[C_GENERATION] = one(
        iro_counter(r, "vllm:generation_tokens_total", "Number of generation tokens processed.", l),
        v);
    const char *const lr[] = {"engine", "finished_reason", "model_name", NULL};
    iro_family *succ = iro_counter(r, "vllm:request_success_total",
                                   "Count of successfully processed requests.", lr);
    static const char *const reasons[SIM_FINISH_COUNT] = {"stop", "length", "abort"};
    for (int i = 0; i < SIM_FINISH_COUNT; i++)
        m->s[C_FINISHED + i] = iro_series_of(succ, rank, reasons[i], model);
    const char *const li[] = {"block_size", "cache_dtype",    "enable_prefix_caching",
                              "engine",     "num_gpu_blocks", NULL};
    char bs[24], nb[24];
    snprintf(bs, sizeof bs, "%u", c->block_size);
    snprintf(nb, sizeof nb, "%u", c->num_gpu_blocks);
    iro_set(iro_series_of(iro_gauge(r, "vllm:cache_config_info",
                                    "Information of the LLMEngine CacheConfig", li),
                          bs, "auto", "True", rank, nb),
            1.0);
    hist(r, &st->ttft, "vllm:time_to_first_token_seconds",
         "Histogram of time to first token in seconds.", l, v);
    hist(r, &st->itl, "vllm:inter_token_latency_seconds",
         "Histogram of inter-token latency in seconds.", l, v);
    hist(r, &st->e2e, "vllm:e2e_request_latency_seconds",
         "Histogram of e2e request latency in seconds.", l, v);
    hist(r, &st->queue, "vllm:request_queue_time_seconds",
         "Histogram of time spent in WAITING phase for request.", l, v);
    hist(r, &st->inference, "vllm:request_inference_time_seconds",
         "Histogram of time spent in RUNNING phase for request.", l, v);
    hist(r, &st->prefill, "vllm:request_prefill_time_seconds",
         "Histogram of time spent in PREFILL phase for request.", l, v);
    hist(r, &st->decode, "vllm:request_decode_time_seconds",
         "Histogram of time spent in DECODE phase for request.", l, v);
    hist(r, &st->prompt_len, "vllm:request_prompt_tokens", "Number of prefill tokens processed.", l,
         v);
    hist(r, &st->gen_len, "vllm:request_generation_tokens",
         "Number of generation tokens processed.", l, v);
}

static void init_sglang(sim_metrics *m, sim_stats *st, const char *model) {
    iro_registry *r = m->reg;
    const char *const lg[] = {"engine_type", "model_name", "pp_rank", "tp_rank", NULL};
    const char *const vg[] = {"unified", model, "0", "0"};
    const char *const lm[] = {"model_name", NULL};
    const char *const vm[] = {model};
    struct {
        int k;
        const char *name, *help;
    } gauges[] =
        {
            {G_RUNNING, "sglang:num_running_reqs", "The number of running requests."},
            {G_WAITING, "sglang:num_queue_reqs", "The number of requests in the waiting queue."},
            {G_KV_USAGE, "sglang:token_usage", "The token usage."},
            {G_USED_TOKENS, "sglang:num_used_tokens", "The number of used tokens."},
            {G_MAX_TOKENS, "sglang:max_total_num_tokens",
             "Maximum total number of tokens in the KV cache pool."},
            {G_HIT_RATE, "sglang:cache_hit_rate", "The prefix cache hit rate."},
        },
      counters[] = {
          {C_PROMPT, "sglang:prompt_tokens_total", "Number of prefill tokens processed."},
          {C_GENERATION, "sglang:generation_tokens_total",
           "Number of generation tokens processed."},
          {C_HITS, "sglang:cached_tokens_total", "Number of cached prompt tokens."},
          {C_REQUESTS, "sglang:num_requests_total", "Number of requests processed."},
          {C_ABORTED, "sglang:num_aborted_requests_total", "Number of requests aborted."},
      };
    for (size_t i = 0; i < IR_ARRAY_LEN(gauges); i++)
        m->s[gauges[i].k] = one(iro_gauge(r, gauges[i].name, gauges[i].help, lg), vg);
    for (size_t i = 0; i < IR_ARRAY_LEN(counters); i++)
        m->s[counters[i].k] = one(iro_counter(r, counters[i].name, counters[i].help, lm), vm);
    hist(r, &st->ttft, "sglang:time_to_first_token_seconds",
         "Histogram of time to first token in seconds.", lm, vm);
    hist(r, &st->itl, "sglang:inter_token_latency_seconds",
         "Histogram of inter-token latency in seconds.", lm, vm);
    hist(r, &st->e2e, "sglang:e2e_request_latency_seconds",
         "Histogram of End-to-end request latency in seconds", lm, vm);
}

int sim_metrics_init(sim_stats *st, const sim_cfg *c, iro_registry *shared) {
    sim_metrics *m = calloc(1, sizeof *m);
    if (m) {
        m->owns = !shared;
        m->reg = shared ? shared : iro_registry_new(IRO_FMT_PYTHON);
    }
    if (!m || !m->reg) {
        free(m);
        return -1;
    }
    const char *model = c->nmodel_names ? c->model_names[0] : "inferrail/sim-8b";
    if (c->engine == SIM_ENGINE_SGLANG)
        init_sglang(m, st, model);
    else
        init_vllm(m, st, c, model);
    st->metrics = m;
    return 0;
}

void sim_metrics_free(sim_stats *st) {
    if (!st->metrics) return;
    if (st->metrics->owns) iro_registry_free(st->metrics->reg);
    free(st->metrics);
    st->metrics = NULL;
}

/* The engine's gauges and counters into their series (a NULL series, one this
 * engine's names do not have, ignores the value). */
static void copy_stats(const sim_engine *e, sim_metrics *m) {
    const sim_cfg *c = sim_engine_cfg(e);
    const sim_stats *st = sim_engine_stats(e);
    double total_tokens = (double)c->num_gpu_blocks * c->block_size;
    double usage = sim_engine_kv_usage(e);
    iro_set(m->s[G_RUNNING], sim_engine_running(e));
    iro_set(m->s[G_WAITING], sim_engine_waiting(e));
    iro_set(m->s[G_KV_USAGE], usage);
    iro_set(m->s[G_USED_TOKENS], usage * total_tokens);
    iro_set(m->s[G_MAX_TOKENS], total_tokens);
    iro_set(m->s[G_HIT_RATE],
            st->prefix_queries ? (double)st->prefix_hits / (double)st->prefix_queries : 0.0);
    iro_set(m->s[C_QUERIES], (double)st->prefix_queries);
    iro_set(m->s[C_HITS], (double)st->prefix_hits);
    iro_set(m->s[C_EXT_QUERIES], (double)st->cpu_queries);
    iro_set(m->s[C_EXT_HITS], (double)st->cpu_hits);
    iro_set(m->s[C_PREEMPTIONS], (double)st->preemptions);
    iro_set(m->s[C_PROMPT], (double)st->prompt_tokens);
    iro_set(m->s[C_GENERATION], (double)st->generation_tokens);
    uint64_t done = 0;
    for (int i = 0; i < SIM_FINISH_COUNT; i++) {
        iro_set(m->s[C_FINISHED + i], (double)st->finished[i]);
        done += st->finished[i];
    }
    iro_set(m->s[C_REQUESTS], (double)done);
    iro_set(m->s[C_ABORTED], (double)st->finished[SIM_FINISH_ABORT]);
}

int sim_metrics_render(const sim_engine *e, ir_buf *out) {
    return sim_metrics_render_ranks((sim_engine *const *)&e, 1, out);
}

int sim_metrics_render_ranks(sim_engine *const *e, size_t n, ir_buf *out) {
    for (size_t i = 0; i < n; i++) {
        sim_metrics *m = sim_engine_stats(e[i])->metrics;
        if (!m) return -1;
        copy_stats(e[i], m);
    }
    return iro_write(sim_engine_stats(e[0])->metrics->reg, out);
}

iro_registry *sim_metrics_registry(const sim_stats *st) {
    return st->metrics ? st->metrics->reg : NULL;
}

void sim_metrics_format_value(double d, char *out, size_t n) {
    iro_format_value(d, IRO_FMT_PYTHON, out, n);
}
