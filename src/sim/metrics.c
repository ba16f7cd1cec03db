/* metrics.c: the simulator's Prometheus page, in vLLM V1's or SGLang's names,
 * rendered as prometheus_client renders text format 0.0.4. */
#include "sim/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Python's repr() of a float, then prometheus_client's switch to Go-style
 * exponents for large values. */
static void fmt_value(double d, char *out, size_t n) {
    if (isinf(d)) {
        snprintf(out, n, d > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(d)) {
        snprintf(out, n, "NaN");
        return;
    }
    /* The shortest %e form that reads back exactly, as repr() picks. */
    char e[40];
    int prec = 0;
    for (prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, d);
        if (strtod(e, NULL) == d) break;
    }
    /* e is "[-]D.DDDDe[+-]XX": split digits and exponent. */
    char digits[24];
    size_t nd = 0;
    const char *p = e;
    bool neg = false;
    if (*p == '-') neg = true, p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    digits[nd] = '\0';
    int exp = atoi(p + 1);
    char s[64];
    size_t k = 0;
    if (neg) s[k++] = '-';
    if (exp >= -5 + 1 && exp < 16) {
        /* Fixed notation, at least one digit after the point. */
        if (exp < 0) {
            s[k++] = '0';
            s[k++] = '.';
            for (int i = 0; i < -exp - 1; i++) s[k++] = '0';
            for (size_t i = 0; i < nd; i++) s[k++] = digits[i];
        } else {
            for (int i = 0; i <= exp; i++) s[k++] = (size_t)i < nd ? digits[i] : '0';
            s[k++] = '.';
            if ((size_t)exp + 1 < nd)
                for (size_t i = (size_t)exp + 1; i < nd; i++) s[k++] = digits[i];
            else
                s[k++] = '0';
        }
        s[k] = '\0';
    } else {
        s[k++] = digits[0];
        if (nd > 1) {
            s[k++] = '.';
            for (size_t i = 1; i < nd; i++) s[k++] = digits[i];
        }
        k += (size_t)snprintf(s + k, sizeof s - k, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
    }
    /* prometheus_client: positive values with more than six integer digits
     * switch to Go's exponent form. */
    const char *dot = strchr(s, '.');
    if (d > 0 && dot && !strchr(s, 'e') && dot - s > 6) {
        size_t ip = (size_t)(dot - s);
        char m[64];
        size_t mk = 0;
        m[mk++] = s[0];
        m[mk++] = '.';
        for (size_t i = 1; i < ip; i++) m[mk++] = s[i];
        for (const char *q = dot + 1; *q; q++) m[mk++] = *q;
        m[mk] = '\0';
        while (mk > 0 && (m[mk - 1] == '0' || m[mk - 1] == '.')) m[--mk] = '\0';
        snprintf(out, n, "%se+0%zu", m, ip - 1);
        return;
    }
    snprintf(out, n, "%s", s);
}

static void head(ir_buf *o, const char *name, const char *type, const char *help) {
    ir_buf_appendf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample(ir_buf *o, const char *name, const char *labels, double v) {
    char num[64];
    fmt_value(v, num, sizeof num);
    ir_buf_appendf(o, "%s{%s} %s\n", name, labels, num);
}

static void metric(ir_buf *o, const char *name, const char *type, const char *help,
                   const char *labels, double v) {
    head(o, name, type, help);
    sample(o, name, labels, v);
}

static void histogram(ir_buf *o, const char *name, const char *help, const char *labels,
                      const sim_hist *h) {
    head(o, name, "histogram", help);
    uint64_t cum = 0;
    char num[64];
    for (size_t i = 0; i <= h->nb; i++) {
        cum += h->counts[i];
        if (i < h->nb)
            fmt_value(h->bounds[i], num, sizeof num);
        else
            strcpy(num, "+Inf");
        char cnt[64];
        fmt_value((double)cum, cnt, sizeof cnt);
        ir_buf_appendf(o, "%s_bucket{%s,le=\"%s\"} %s\n", name, labels, num, cnt);
    }
    ir_buf_appendf(o, "%s_count{%s} ", name, labels);
    fmt_value((double)h->total, num, sizeof num);
    ir_buf_appendf(o, "%s\n", num);
    ir_buf_appendf(o, "%s_sum{%s} ", name, labels);
    fmt_value(h->sum, num, sizeof num);
    ir_buf_appendf(o, "%s\n", num);
}

/* Label values are written as Prometheus escapes them. */
static void label_escape(const char *in, char *out, size_t n) {
    size_t k = 0;
    for (; *in && k + 3 < n; in++) {
        if (*in == '\\' || *in == '"') {
            out[k++] = '\\';
            out[k++] = *in;
        } else if (*in == '\n') {
            out[k++] = '\\';
            out[k++] = 'n';
        } else {
            out[k++] = *in;
        }
    }
    out[k] = '\0';
}

static void render_vllm(const sim_engine *e, ir_buf *o, const char *model) {
    const sim_cfg *c = sim_engine_cfg(e);
    const sim_stats *st = sim_engine_stats(e);
    char l[600];
    snprintf(l, sizeof l, "engine=\"0\",model_name=\"%s\"", model);
    metric(o, "vllm:num_requests_running", "gauge",
           "Number of requests in model execution batches.", l, sim_engine_running(e));
    metric(o, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
           l, sim_engine_waiting(e));
    metric(o, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", l,
           sim_engine_kv_usage(e));
    metric(o, "vllm:prefix_cache_queries_total", "counter",
           "Prefix cache queries, in terms of number of queried tokens.", l,
           (double)st->prefix_queries);
    metric(o, "vllm:prefix_cache_hits_total", "counter",
           "Prefix cache hits, in terms of number of cached tokens.", l, (double)st->prefix_hits);
    metric(o, "vllm:num_preemptions_total", "counter",
           "Cumulative number of preemption from the engine.", l, (double)st->preemptions);
    metric(o, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", l,
           (double)st->prompt_tokens);
    metric(o, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
           l, (double)st->generation_tokens);
    head(o, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
    static const char *reasons[SIM_FINISH_COUNT] = {"stop", "length", "abort"};
    for (int i = 0; i < SIM_FINISH_COUNT; i++) {
        char lr[700];
        snprintf(lr, sizeof lr, "engine=\"0\",finished_reason=\"%s\",model_name=\"%s\"", reasons[i],
                 model);
        sample(o, "vllm:request_success_total", lr, (double)st->finished[i]);
    }
    char info[256];
    snprintf(info, sizeof info,
             "block_size=\"%u\",cache_dtype=\"auto\",enable_prefix_caching=\"True\",engine=\"0\","
             "num_gpu_blocks=\"%u\"",
             c->block_size, c->num_gpu_blocks);
    metric(o, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig", info,
           1.0);
    histogram(o, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              l, &st->ttft);
    histogram(o, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              l, &st->itl);
    histogram(o, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              l, &st->e2e);
    histogram(o, "vllm:request_queue_time_seconds",
              "Histogram of time spent in WAITING phase for request.", l, &st->queue);
    histogram(o, "vllm:request_inference_time_seconds",
              "Histogram of time spent in RUNNING phase for request.", l, &st->inference);
    histogram(o, "vllm:request_prefill_time_seconds",
              "Histogram of time spent in PREFILL phase for request.", l, &st->prefill);
    histogram(o, "vllm:request_decode_time_seconds",
              "Histogram of time spent in DECODE phase for request.", l, &st->decode);
    histogram(o, "vllm:request_prompt_tokens", "Number of prefill tokens processed.", l,
              &st->prompt_len);
    histogram(o, "vllm:request_generation_tokens", "Number of generation tokens processed.", l,
              &st->gen_len);
}

static void render_sglang(const sim_engine *e, ir_buf *o, const char *model) {
    const sim_cfg *c = sim_engine_cfg(e);
    const sim_stats *st = sim_engine_stats(e);
    char g[600], r[600];
    snprintf(g, sizeof g, "engine_type=\"unified\",model_name=\"%s\",pp_rank=\"0\",tp_rank=\"0\"",
             model);
    snprintf(r, sizeof r, "model_name=\"%s\"", model);
    double total_tokens = (double)c->num_gpu_blocks * c->block_size;
    double usage = sim_engine_kv_usage(e);
    metric(o, "sglang:num_running_reqs", "gauge", "The number of running requests.", g,
           sim_engine_running(e));
    metric(o, "sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", g,
           sim_engine_waiting(e));
    metric(o, "sglang:token_usage", "gauge", "The token usage.", g, usage);
    metric(o, "sglang:num_used_tokens", "gauge", "The number of used tokens.", g,
           usage * total_tokens);
    metric(o, "sglang:max_total_num_tokens", "gauge",
           "Maximum total number of tokens in the KV cache pool.", g, total_tokens);
    metric(o, "sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.", g,
           st->prefix_queries ? (double)st->prefix_hits / (double)st->prefix_queries : 0.0);
    metric(o, "sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.", r,
           (double)st->prompt_tokens);
    metric(o, "sglang:generation_tokens_total", "counter", "Number of generation tokens processed.",
           r, (double)st->generation_tokens);
    metric(o, "sglang:cached_tokens_total", "counter", "Number of cached prompt tokens.", r,
           (double)st->prefix_hits);
    metric(o, "sglang:num_requests_total", "counter", "Number of requests processed.", r,
           (double)(st->finished[SIM_FINISH_STOP] + st->finished[SIM_FINISH_LENGTH] +
                    st->finished[SIM_FINISH_ABORT]));
    metric(o, "sglang:num_aborted_requests_total", "counter", "Number of requests aborted.", r,
           (double)st->finished[SIM_FINISH_ABORT]);
    histogram(o, "sglang:time_to_first_token_seconds",
              "Histogram of time to first token in seconds.", r, &st->ttft);
    histogram(o, "sglang:inter_token_latency_seconds",
              "Histogram of inter-token latency in seconds.", r, &st->itl);
    histogram(o, "sglang:e2e_request_latency_seconds",
              "Histogram of End-to-end request latency in seconds", r, &st->e2e);
}

int sim_metrics_render(const sim_engine *e, ir_buf *out) {
    const sim_cfg *c = sim_engine_cfg(e);
    char model[512];
    label_escape(c->nmodel_names ? c->model_names[0] : "inferrail/sim-8b", model, sizeof model);
    if (c->engine == SIM_ENGINE_SGLANG)
        render_sglang(e, out, model);
    else
        render_vllm(e, out, model);
    return 0;
}

/* Exposed for tests of the number format. */
void sim_metrics_format_value(double d, char *out, size_t n) {
    fmt_value(d, out, n);
}
