/* calibrate.c: `inferrail-bench calibrate`, the cost model's engine shape measured
 * on a running engine (inferrail-sim or vLLM).
 *
 * cost_model estimates a prefill of u uncached tokens after c cached ones as
 * P(u, c) = a*u + b*u*(c + u/2) + d (src/policy/cost_model.c). This sends one
 * streamed completion at a time (so nothing queues), each with a prompt of fresh
 * text: cold ones of several lengths, and warm ones, where a prefix is sent first
 * on its own (one output token) and then the same prefix with a fresh suffix. The
 * time to the first body byte is the prefill plus the round trip; the usage the
 * engine reports gives the prompt's and the cached tokens (its tokenizer, not
 * ours). a, b and d are the least-squares fit over every measured point (linear
 * in them: the features are u, u*(c + u/2) and 1); the time per output token is
 * the median of (last byte - first byte) / (completion tokens - 1).
 *
 * With --cpu-tier, it then measures the CPU tier (vLLM's OffloadingConnector, the
 * simulator's --num-cpu-blocks): a prefix is sent, then enough fresh text to cycle
 * the GPU cache (its size from vllm:cache_config_info), then the prefix with a
 * fresh suffix; the engine's vllm:external_prefix_cache_hits_total says how many
 * tokens came from the CPU tier, and the time beyond the fitted P(u, c) over
 * those tokens is the transfer time per token (cost_model's
 * cpu_transfer_token_us), fitted through the origin over every point.
 *
 * The text is bench_trace_block_text's: a block id gives the same text anywhere,
 * so every fresh id is a prefix no engine has seen, and a prefix resent is the
 * same tokens. */
#include "bench/bench.h"
#include "load/ir_load.h"
#include "net/ir_net.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CAL_MAX_POINTS 256

typedef struct cal_opts {
    const char *base_url, *model, *out;
    int repeats;
    int max_tokens;
    double scale;  /* multiplies every prompt length (the defaults reach 4,096 tokens) */
    bool cpu_tier; /* also measure the CPU tier's transfer time per token */
} cal_opts;

/* ---- one request on a private loop ----------------------------------------- */

typedef struct cal_ctx {
    irn_pool *pool;
    uint64_t t0, t_first, t_last;
    int status, err;
    ir_buf body;
} cal_ctx;

static void c_head(void *ud, int status, const irn_header *h, size_t n) {
    ((cal_ctx *)ud)->status = status;
}

static void c_body(void *ud, const char *d, size_t n) {
    cal_ctx *c = ud;
    uint64_t now = ir_now_ns();
    if (!c->t_first && n) c->t_first = now;
    c->t_last = now;
    /* keep the tail: the usage chunk is last */
    if (c->body.len + n > 65536) ir_buf_reset(&c->body);
    ir_buf_append(&c->body, d, n < 65536 ? n : 65536);
}

static void c_done(void *ud, int err) {
    cal_ctx *c = ud;
    c->err = err;
    irn_pool_close(c->pool, NULL, NULL);
}

/* The integer after the last `"key"` and its colon in s[0..len) (read within those
 * bytes: s need not be NUL-terminated); -1 when none. */
double bench_cal_usage(const char *s, size_t len, const char *key) {
    char k[64];
    int kl = snprintf(k, sizeof k, "\"%s\"", key);
    double v = -1;
    const char *end = s + len;
    for (const char *p = s; p && p < end; p++) {
        p = memmem(p, (size_t)(end - p), k, (size_t)kl);
        if (!p) break;
        const char *q = p + kl;
        while (q < end && (*q == ' ' || *q == ':' || *q == '\t' || *q == '\n')) q++;
        if (q >= end || *q < '0' || *q > '9') continue;
        double n = 0;
        while (q < end && *q >= '0' && *q <= '9' && n < 1e15) n = n * 10 + (*q++ - '0');
        v = n;
    }
    return v;
}

typedef struct cal_point {
    double u, c, ttft_s, tpot_s;
} cal_point;

/* Sends prompt; fills p (ttft, u, c from the usage). 0 or -1. */
static int send_one(const ir_url *url, const cal_opts *o, const char *prompt, int max_tokens,
                    cal_point *p, char *err, size_t errlen) {
    json_t *b = json_pack("{s:s, s:s, s:i, s:b, s:{s:b}, s:f}", "model", o->model, "prompt", prompt,
                          "max_tokens", max_tokens, "stream", 1, "stream_options", "include_usage",
                          1, "temperature", 0.0);
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    if (!body) return snprintf(err, errlen, "out of memory"), -1;
    uv_loop_t loop;
    uv_loop_init(&loop);
    cal_ctx c = {.pool = irn_pool_new(&loop, NULL)};
    ir_buf_init(&c.body, 1 << 20);
    irn_header hs[] = {{"content-type", 12, "application/json", 16}};
    char path[600];
    snprintf(path, sizeof path, "%s/v1/completions", strcmp(url->path, "/") == 0 ? "" : url->path);
    irn_client_req q = {.host = url->host,
                        .port = url->port,
                        .method = "POST",
                        .path = path,
                        .headers = hs,
                        .nheaders = 1,
                        .body = body,
                        .body_len = strlen(body),
                        .connect_timeout_ns = 10000000000ULL,
                        /* an engine that takes the request and never answers is an error
                         * after 2 minutes, not a hang (the longest prefill is seconds) */
                        .head_timeout_ns = 120000000000ULL,
                        .idle_timeout_ns = 120000000000ULL};
    static const irn_client_cbs cbs = {c_head, c_body, c_done};
    irn_client *cl;
    c.t0 = ir_now_ns();
    int rc = irn_client_request(c.pool, &q, &cbs, &c, &cl);
    if (rc) c.err = rc, irn_pool_close(c.pool, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free(body);
    int ret = 0;
    double pt = bench_cal_usage(c.body.data, c.body.len, "prompt_tokens");
    double ct = bench_cal_usage(c.body.data, c.body.len, "cached_tokens");
    double done = bench_cal_usage(c.body.data, c.body.len, "completion_tokens");
    if (c.err || c.status != 200 || !c.t_first) {
        snprintf(err, errlen, "%.200s: status %d, %s", path, c.status,
                 c.err ? irn_strerror(c.err) : "no body");
        ret = -1;
    } else if (pt <= 0) {
        snprintf(err, errlen,
                 "the answer has no usage.prompt_tokens (stream_options."
                 "include_usage not honoured?)");
        ret = -1;
    } else {
        if (ct < 0) ct = 0; /* no prompt_tokens_details: nothing cached, or not reported */
        p->u = pt - ct, p->c = ct;
        p->ttft_s = (double)(c.t_first - c.t0) * 1e-9;
        p->tpot_s = done > 1 ? (double)(c.t_last - c.t_first) * 1e-9 / (done - 1) : NAN;
    }
    ir_buf_free(&c.body);
    return ret;
}

/* ---- prompts ------------------------------------------------------------------- */

static uint64_t next_id;

/* Appends `tokens` tokens of fresh text (never sent before in this process). */
static int fresh_text(ir_buf *out, size_t tokens) {
    while (tokens > 0) {
        size_t t = tokens < 256 ? tokens : 256;
        if (bench_trace_block_text(next_id++, t, out)) return -1;
        tokens -= t;
    }
    return 0;
}

/* ---- the fit ------------------------------------------------------------------- */

/* Solves the 3x3 system m x = v by Gaussian elimination with partial pivoting.
 * -1 when singular. */
static int solve3(double m[3][3], double v[3], double x[3]) {
    for (int col = 0; col < 3; col++) {
        int piv = col;
        for (int r = col + 1; r < 3; r++)
            if (fabs(m[r][col]) > fabs(m[piv][col])) piv = r;
        if (fabs(m[piv][col]) < 1e-300) return -1;
        for (int k = 0; k < 3; k++) {
            double t = m[col][k];
            m[col][k] = m[piv][k], m[piv][k] = t;
        }
        double t = v[col];
        v[col] = v[piv], v[piv] = t;
        for (int r = col + 1; r < 3; r++) {
            double f = m[r][col] / m[col][col];
            for (int k = col; k < 3; k++) m[r][k] -= f * m[col][k];
            v[r] -= f * v[col];
        }
    }
    for (int r = 2; r >= 0; r--) {
        double s = v[r];
        for (int k = r + 1; k < 3; k++) s -= m[r][k] * x[k];
        x[r] = s / m[r][r];
    }
    return 0;
}

int bench_cal_fit(const double *u, const double *c, const double *t, size_t n, double *a, double *b,
                  double *d) {
    if (n < 3) return -1;
    /* Scaled features keep the normal equations well conditioned: u in thousands
     * of tokens, the pair term in millions. */
    double m[3][3] = {{0}}, v[3] = {0}, x[3] = {0};
    for (size_t i = 0; i < n; i++) {
        double f[3] = {u[i] / 1e3, u[i] * (c[i] + u[i] / 2) / 1e6, 1};
        for (int r = 0; r < 3; r++) {
            for (int k = 0; k < 3; k++) m[r][k] += f[r] * f[k];
            v[r] += f[r] * t[i];
        }
    }
    if (solve3(m, v, x)) return -1;
    *a = x[0] / 1e3, *b = x[1] / 1e6, *d = x[2];
    return 0;
}

int bench_cal_fit_rate(const double *tokens, const double *extra, size_t n, double *rate) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) num += tokens[i] * extra[i], den += tokens[i] * tokens[i];
    if (!(den > 0)) return -1;
    *rate = num / den;
    return 0;
}

/* ---- the CPU tier ---------------------------------------------------------------- */

/* The engine's /metrics: its GPU cache in tokens and its CPU-tier hits so far
 * (-1 when the page lacks them). 0, or -1 when the page cannot be read. */
static int engine_page(const char *base, double *gpu_tokens, double *cpu_hits) {
    char url[1024];
    snprintf(url, sizeof url, "%s/metrics", base);
    ir_buf page;
    ir_buf_init(&page, 8u << 20);
    int st = bench_http_get(url, &page, 10);
    irl_report r;
    int rc =
        st == 200 && page.data && irl_report_parse(page.data, page.len, &r, NULL, 0) == 0 ? 0 : -1;
    if (rc == 0) {
        *gpu_tokens = r.capacity_tokens ? (double)r.capacity_tokens : -1;
        *cpu_hits = irl_prom_sum(page.data, page.len, "vllm:external_prefix_cache_hits_total");
    }
    ir_buf_free(&page);
    return rc;
}

/* Fresh prompts of up to 1,024 tokens with one output token each, until the engine
 * has taken `tokens` prompt tokens (its count): every block cached before is pushed
 * out of a GPU cache of that size. */
static int cycle_gpu(const ir_url *url, const cal_opts *o, double tokens, char *err,
                     size_t errlen) {
    ir_buf text;
    ir_buf_init(&text, 1 << 20);
    int rc = 0;
    for (double sent = 0; sent < tokens && rc == 0;) {
        cal_point p = {0};
        ir_buf_reset(&text);
        rc = fresh_text(&text, 1024) ? -1 : send_one(url, o, text.data, 1, &p, err, errlen);
        sent += p.u + p.c;
    }
    ir_buf_free(&text);
    return rc;
}

typedef struct cpu_point {
    double loaded, extra_s; /* tokens from the CPU tier; seconds beyond P(u, c) */
    cal_point p;
} cpu_point;

/* One point: prefix c, the GPU cycled, then prefix + fresh suffix u. 1 when the
 * engine loaded nothing from its CPU tier (the point is left out), 0, or -1. */
static int cpu_one(const ir_url *url, const cal_opts *o, size_t c, size_t u, double gpu_tokens,
                   const double shape[3], cpu_point *out, char *err, size_t errlen) {
    ir_buf text;
    ir_buf_init(&text, 64u << 20);
    cal_point warm;
    double h0, h1, g;
    int rc = fresh_text(&text, c) || send_one(url, o, text.data, 1, &warm, err, errlen) ||
                     cycle_gpu(url, o, gpu_tokens + (double)c, err, errlen) ||
                     engine_page(o->base_url, &g, &h0) || fresh_text(&text, u) ||
                     send_one(url, o, text.data, 1, &out->p, err, errlen) ||
                     engine_page(o->base_url, &g, &h1)
                 ? -1
                 : 0;
    ir_buf_free(&text);
    if (rc) return -1;
    out->loaded = h1 - h0;
    const cal_point *p = &out->p;
    out->extra_s = p->ttft_s - (shape[0] * p->u + shape[1] * p->u * (p->c + p->u / 2) + shape[2]);
    return out->loaded > 0 ? 0 : 1;
}

#define CPU_POINTS 16

/* Measures the CPU tier after the fit (shape: a, b, d). 0 with *rate_s in seconds
 * per token and the points kept in pts[0..*np), or -1 with the reason printed. */
static int measure_cpu(const ir_url *url, const cal_opts *o, const double shape[3], cpu_point *pts,
                       size_t *np, double *rate_s) {
    static const size_t prefixes[] = {512, 1024, 2048};
    double gpu_tokens, hits;
    char err[512] = "";
    if (engine_page(o->base_url, &gpu_tokens, &hits)) {
        fprintf(stderr, "calibrate: --cpu-tier: cannot read %s/metrics\n", o->base_url);
        return -1;
    }
    if (gpu_tokens <= 0 || hits < 0) {
        fprintf(stderr, "calibrate: --cpu-tier: %s/metrics has no %s\n", o->base_url,
                gpu_tokens <= 0 ? "vllm:cache_config_info num_gpu_blocks (the GPU cache size)"
                                : "vllm:external_prefix_cache_hits_total: no CPU tier");
        return -1;
    }
    size_t missed = 0;
    for (int rep = 0; rep < o->repeats; rep++) {
        for (size_t i = 0; i < IR_ARRAY_LEN(prefixes) && *np < CPU_POINTS; i++) {
            size_t c = (size_t)llround((double)prefixes[i] * o->scale);
            size_t u = (size_t)llround(128 * o->scale);
            int r = cpu_one(url, o, c ? c : 16, u ? u : 1, gpu_tokens, shape, &pts[*np], err,
                            sizeof err);
            if (r < 0) {
                fprintf(stderr, "calibrate: --cpu-tier: %s\n", err);
                return -1;
            }
            if (r == 1) {
                missed++;
                continue;
            }
            const cpu_point *q = &pts[(*np)++];
            fprintf(stderr, "calibrate: cpu tier: %.0f tokens loaded, %.2f ms beyond the fit\n",
                    q->loaded, q->extra_s * 1e3);
        }
    }
    double tok[CPU_POINTS], ex[CPU_POINTS];
    for (size_t i = 0; i < *np; i++) tok[i] = pts[i].loaded, ex[i] = pts[i].extra_s;
    if (bench_cal_fit_rate(tok, ex, *np, rate_s)) {
        fprintf(stderr,
                "calibrate: --cpu-tier: no prefix came back from the CPU tier (%zu tries): "
                "it must hold more than the GPU cache plus the prefix\n",
                missed);
        return -1;
    }
    if (*rate_s < 0) {
        fprintf(stderr, "calibrate: --cpu-tier: the loads took less than the fit predicts for "
                        "computing the rest (noise): rate taken as 0\n");
        *rate_s = 0;
    }
    return 0;
}

static json_t *cpu_points_json(const cpu_point *pts, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a,
                              json_pack("{s:f, s:f, s:f, s:f}", "loaded_tokens", pts[i].loaded,
                                        "uncached_tokens", pts[i].p.u, "ttft_ms",
                                        pts[i].p.ttft_s * 1e3, "extra_ms", pts[i].extra_s * 1e3));
    return a;
}

/* ---- the command --------------------------------------------------------------- */

static int model_of(const char *base, char *out, size_t len) {
    char url[1024];
    snprintf(url, sizeof url, "%s/v1/models", base);
    ir_buf page;
    ir_buf_init(&page, 1 << 20);
    int st = bench_http_get(url, &page, 10);
    json_t *doc = st == 200 ? json_loadb(page.data, page.len, 0, NULL) : NULL;
    json_t *id = json_object_get(json_array_get(json_object_get(doc, "data"), 0), "id");
    int rc = json_is_string(id) ? (snprintf(out, len, "%s", json_string_value(id)), 0) : -1;
    json_decref(doc);
    ir_buf_free(&page);
    return rc;
}

static void cal_usage(FILE *f) {
    fprintf(f, "Usage: inferrail-bench calibrate --base-url URL [--model M] [--repeats 3]\n"
               "         [--scale 1] [--max-tokens 33] [--out FILE]\n"
               "Profiles one engine (inferrail-sim or vLLM), one request at a time: cold\n"
               "prompts of 128 to 4,096 tokens, then warm ones (a prefix sent first, then the\n"
               "prefix and a fresh suffix), timing the first token of each. Fits cost_model's\n"
               "prefill P(u, c) = a*u + b*u*(c + u/2) + d and the time per output token, and\n"
               "prints them as routing.cost_model keys. --scale multiplies every prompt\n"
               "length; --model defaults to the first of /v1/models. Run it on an idle\n"
               "engine: anything else it serves meanwhile adds to the times.\n"
               "  --cpu-tier  also measure the CPU tier (vLLM's OffloadingConnector, or\n"
               "              inferrail-sim --num-cpu-blocks): a prefix is sent, fresh text\n"
               "              cycles the GPU cache (its size from /metrics), then the prefix\n"
               "              comes back; the time beyond the fit per token the engine counts\n"
               "              in vllm:external_prefix_cache_hits_total is printed as\n"
               "              cpu_transfer_token_us. The CPU tier must hold more than the GPU\n"
               "              cache plus the prefix; each point sends a GPU cache of text.\n");
}

/* The measured points: cold (c = 0) and warm (c, u) pairs, in tokens of ours. */
static const struct {
    size_t c, u;
} plan[] = {{0, 128},    {0, 512},    {0, 1024},    {0, 2048},    {0, 4096},    {1024, 128},
            {2048, 256}, {4096, 128}, {2048, 1024}, {1024, 2048}, {3072, 1024}, {512, 3072}};

static json_t *point_json(const cal_point *p) {
    return json_pack("{s:f, s:f, s:f}", "uncached_tokens", p->u, "cached_tokens", p->c, "ttft_ms",
                     p->ttft_s * 1e3);
}

static int measure(const ir_url *url, const cal_opts *o, cal_point *pts, size_t *np, double *tpots,
                   size_t *nt) {
    char err[512];
    ir_buf text;
    ir_buf_init(&text, 64u << 20);
    for (int rep = 0; rep < o->repeats; rep++) {
        for (size_t i = 0; i < IR_ARRAY_LEN(plan) && *np < CAL_MAX_POINTS; i++) {
            size_t c = (size_t)llround((double)plan[i].c * o->scale);
            size_t u = (size_t)llround((double)plan[i].u * o->scale);
            if (u == 0) u = 1;
            ir_buf_reset(&text);
            cal_point warm, p;
            if (c &&
                (fresh_text(&text, c) || send_one(url, o, text.data, 1, &warm, err, sizeof err)))
                goto fail;
            if (fresh_text(&text, u) ||
                send_one(url, o, text.data, o->max_tokens, &p, err, sizeof err))
                goto fail;
            pts[(*np)++] = p;
            if (!isnan(p.tpot_s)) tpots[(*nt)++] = p.tpot_s;
            fprintf(stderr, "calibrate: u %.0f c %.0f: ttft %.2f ms\n", p.u, p.c, p.ttft_s * 1e3);
        }
    }
    ir_buf_free(&text);
    return 0;
fail:
    fprintf(stderr, "calibrate: %s\n", err[0] ? err : "prompt text too long");
    ir_buf_free(&text);
    return -1;
}

static int parse(int argc, char **argv, cal_opts *o) {
    static const struct option opts[] = {{"base-url", required_argument, 0, 'u'},
                                         {"model", required_argument, 0, 'm'},
                                         {"repeats", required_argument, 0, 'r'},
                                         {"scale", required_argument, 0, 's'},
                                         {"max-tokens", required_argument, 0, 't'},
                                         {"out", required_argument, 0, 'o'},
                                         {"cpu-tier", no_argument, 0, 'c'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    *o = (cal_opts){.repeats = 3, .max_tokens = 33, .scale = 1};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'u':
            o->base_url = optarg;
            break;
        case 'm':
            o->model = optarg;
            break;
        case 'r':
            o->repeats = atoi(optarg);
            break;
        case 's':
            o->scale = strtod(optarg, NULL);
            break;
        case 't':
            o->max_tokens = atoi(optarg);
            break;
        case 'o':
            o->out = optarg;
            break;
        case 'c':
            o->cpu_tier = true;
            break;
        case 'h':
            cal_usage(stdout);
            exit(0);
        default:
            cal_usage(stderr);
            return -1;
        }
    }
    if (!o->base_url || o->repeats < 1 || o->repeats > 20 || !(o->scale > 0 && o->scale <= 8) ||
        o->max_tokens < 2 || o->max_tokens > 4096) {
        fprintf(stderr, "calibrate: --base-url is required; --repeats 1..20, --scale (0, 8], "
                        "--max-tokens 2..4096\n");
        cal_usage(stderr);
        return -1;
    }
    return 0;
}

int bench_calibrate_main(int argc, char **argv) {
    cal_opts o;
    if (parse(argc, argv, &o)) return 2;
    ir_url url;
    if (ir_url_parse(o.base_url, &url)) {
        fprintf(stderr, "calibrate: --base-url: not an http URL: %s\n", o.base_url);
        return 2;
    }
    char model[256];
    if (!o.model) {
        if (model_of(o.base_url, model, sizeof model)) {
            fprintf(stderr, "calibrate: no model in %s/v1/models; give --model\n", o.base_url);
            return 1;
        }
        o.model = model;
    }
    cal_point pts[CAL_MAX_POINTS];
    double tp[CAL_MAX_POINTS], u[CAL_MAX_POINTS], c[CAL_MAX_POINTS], t[CAL_MAX_POINTS];
    size_t np = 0, nt = 0;
    char err[256];
    cal_point warmup;
    ir_buf w;
    ir_buf_init(&w, 1 << 16);
    int wr = fresh_text(&w, 16) ? -1 : send_one(&url, &o, w.data, 2, &warmup, err, sizeof err);
    ir_buf_free(&w);
    if (wr) { /* the first connection and the engine's first request */
        fprintf(stderr, "calibrate: %s\n", err);
        return 1;
    }
    if (measure(&url, &o, pts, &np, tp, &nt)) return 1;
    for (size_t i = 0; i < np; i++) u[i] = pts[i].u, c[i] = pts[i].c, t[i] = pts[i].ttft_s;
    double a, b, d;
    if (bench_cal_fit(u, c, t, np, &a, &b, &d)) {
        fprintf(stderr, "calibrate: the points do not determine a, b and d\n");
        return 1;
    }
    double rss = 0;
    for (size_t i = 0; i < np; i++) {
        double e = t[i] - (a * u[i] + b * u[i] * (c[i] + u[i] / 2) + d);
        rss += e * e;
    }
    qsort(tp, nt, sizeof *tp, bench_cmp_double);
    double tpot = nt ? bench_percentile(tp, nt, 0.5) : NAN;
    cpu_point cpts[CPU_POINTS];
    size_t ncpu = 0;
    double rate = NAN, shape[3] = {a, b, d};
    if (o.cpu_tier && measure_cpu(&url, &o, shape, cpts, &ncpu, &rate)) return 1;
    json_t *doc =
        json_pack("{s:s, s:s, s:s, s:{s:f, s:f, s:f, s:f}, s:f, s:[]}", "schema",
                  "inferrail-bench/calibrate/1", "base_url", o.base_url, "model", o.model,
                  "cost_model", "prefill_token_us", a * 1e6, "prefill_pair_ns", b * 1e9,
                  "prefill_fixed_ms", d * 1e3, "decode_token_ms", isnan(tpot) ? 0.0 : tpot * 1e3,
                  "rms_error_ms", sqrt(rss / (double)np) * 1e3, "points");
    for (size_t i = 0; i < np; i++)
        json_array_append_new(json_object_get(doc, "points"), point_json(&pts[i]));
    if (o.cpu_tier) {
        json_object_set_new(json_object_get(doc, "cost_model"), "cpu_transfer_token_us",
                            json_real(rate * 1e6));
        json_object_set_new(doc, "cpu_points", cpu_points_json(cpts, ncpu));
    }
    printf("# inferrail-bench calibrate: %zu points, rms error %.2f ms\n"
           "routing:\n  cost_model:\n    prefill_token_us: %.4g\n    prefill_pair_ns: %.4g\n"
           "    prefill_fixed_ms: %.4g\n    decode_token_ms: %.4g\n",
           np, sqrt(rss / (double)np) * 1e3, a * 1e6, b * 1e9, d * 1e3,
           isnan(tpot) ? 0.0 : tpot * 1e3);
    if (o.cpu_tier) printf("    cpu_transfer_token_us: %.4g\n", rate * 1e6);
    int rc = o.out && bench_write_json(doc, o.out) ? 1 : 0;
    if (rc) fprintf(stderr, "calibrate: cannot write %s\n", o.out);
    json_decref(doc);
    return rc;
}
