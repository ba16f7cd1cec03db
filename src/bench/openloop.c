/* openloop.c: the open-loop runner behind `inferrail-bench run`.
 *
 * Each request goes out at its scheduled time whatever earlier ones are
 * doing: a timerfd (ns resolution, unlike libuv's ms timers) polled by the
 * loop fires at the next due time and everything due is sent at once. TTFT
 * and e2e count from the scheduled time, so a server that falls behind (or a
 * client loop that stalls) shows up in the latencies; the gap between the
 * scheduled time and the hand-off to the client is recorded as send lag. */
#include "bench/bench.h"
#include "load/ir_load.h"
#include "net/ir_net.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_ITL_SAMPLES (16u << 20) /* cap on stored inter-token gaps */
#define MAX_SSE_EVENT   (1u << 20)

static const char *err_names[BENCH_E_COUNT] = {"ok",         "http_4xx", "http_5xx", "http_other",
                                               "connect",    "timeout",  "closed",   "parse",
                                               "incomplete", "send"};

const char *bench_err_name(bench_err_kind k) {
    return k < BENCH_E_COUNT ? err_names[k] : "unknown";
}

typedef struct ol_run ol_run;

/* A timed action (bench_action) of the measured phase, and what came of it. */
typedef struct ol_action {
    ol_run *run;
    const bench_action *a;
    uv_timer_t timer;
    ir_url url;
    double sent_s; /* from the phase's start; -1 while not sent */
    int status;    /* the HTTP status; 0 while none */
    int err;       /* an IRN_E* code when it failed */
} ol_action;

typedef struct ol_call {
    ol_run *run;
    size_t i; /* index into the phase's records */
    irn_client *h;
    ir_sse_decoder sse;
    uint64_t last_ns; /* last content chunk, absolute */
    bool saw_done, saw_usage, bad;
    bool whole; /* a JSON answer, not a stream (a body without "stream"): kept in body */
    ir_buf body;
} ol_call;

struct ol_run {
    uv_loop_t *loop;
    irn_pool *pool;
    uv_poll_t poll;
    uv_timer_t tick, stall;
    int tfd;
    const bench_run_cfg *cfg;
    /* the base URLs (gateways) requests are spread over */
    const char *base_url[BENCH_MAX_GATEWAYS];
    ir_url url[BENCH_MAX_GATEWAYS];
    char path[BENCH_MAX_GATEWAYS][600];
    size_t n_url;
    ir_url durl; /* direct_url */
    char dpath[600];
    char rid_prefix[48];
    /* the phase being run */
    const bench_req *reqs;
    size_t n, first; /* reqs[first .. first+n) */
    bench_rec *recs;
    uint64_t t0, base; /* absolute start; schedule offset subtracted */
    size_t next, done, inflight;
    double stall_at_s, stall_ms;
    ol_action actions[BENCH_MAX_ACTIONS];
    size_t n_actions;
    /* every inter-token gap of the phase, ms */
    double *itl;
    size_t n_itl, cap_itl;
};

static uint64_t due_abs(const ol_run *r, size_t k) {
    return r->t0 + (r->reqs[r->first + k].at_ns - r->base);
}

static void arm(ol_run *r, uint64_t abs_ns) {
    struct itimerspec its = {0};
    if (abs_ns == 0) abs_ns = 1;
    its.it_value.tv_sec = (time_t)(abs_ns / 1000000000ull);
    its.it_value.tv_nsec = (long)(abs_ns % 1000000000ull);
    timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void phase_maybe_done(ol_run *r) {
    if (r->next == r->n && r->done == r->n) uv_stop(r->loop);
}

/* ---- the response ------------------------------------------------------------ */

static long json_long(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (long)json_integer_value(v) : -1;
}

/* A content delta or completion text that is not empty. */
static bool has_content(const char *d, size_t n) {
    static const char *keys[] = {"\"content\":\"", "\"text\":\"", "\"content\": \"",
                                 "\"text\": \""};
    for (size_t k = 0; k < IR_ARRAY_LEN(keys); k++) {
        const char *p = memmem(d, n, keys[k], strlen(keys[k]));
        if (p && p + strlen(keys[k]) < d + n && p[strlen(keys[k])] != '"') return true;
    }
    return false;
}

static int on_sse(void *ud, const ir_sse_event *ev) {
    ol_call *c = ud;
    ol_run *r = c->run;
    bench_rec *rec = &r->recs[c->i];
    if (ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0) {
        c->saw_done = true;
        return 0;
    }
    uint64_t now = ir_now_ns();
    if (has_content(ev->data, ev->data_len)) {
        if (!rec->first_ns) {
            rec->first_ns = now - r->t0;
        } else {
            double gap = (double)(now - c->last_ns) / 1e6;
            if (gap > rec->itl_max_ms) rec->itl_max_ms = gap;
            if (rec->direct) {
                /* not the routed traffic's */
            } else if (r->n_itl == r->cap_itl && r->cap_itl < MAX_ITL_SAMPLES) {
                size_t cap = r->cap_itl ? r->cap_itl * 2 : 65536;
                double *p = realloc(r->itl, cap * sizeof *p);
                if (p) r->itl = p, r->cap_itl = cap;
            }
            if (r->n_itl < r->cap_itl) r->itl[r->n_itl++] = gap;
        }
        c->last_ns = now;
        rec->chunks++;
    }
    if (memmem(ev->data, ev->data_len, "\"usage\":{", 9) ||
        memmem(ev->data, ev->data_len, "\"usage\": {", 10)) {
        json_t *j = json_loadb(ev->data, ev->data_len, 0, NULL);
        json_t *u = json_object_get(j, "usage");
        if (json_is_object(u)) {
            c->saw_usage = true;
            rec->prompt_tokens = json_long(u, "prompt_tokens");
            rec->completion_tokens = json_long(u, "completion_tokens");
            long ct = json_long(json_object_get(u, "prompt_tokens_details"), "cached_tokens");
            rec->cached_tokens = ct > 0 ? ct : 0;
        } else if (!j) {
            c->bad = true;
        }
        json_decref(j);
    }
    return 0;
}

static long header_long(const irn_header *h, size_t n, const char *name) {
    const irn_header *x = irn_headers_find(h, n, name);
    if (!x) return -1;
    char *end;
    long v = strtol(x->value, &end, 10);
    return end == x->value ? -1 : v;
}

static void on_head(void *ud, int status, const irn_header *h, size_t n) {
    ol_call *c = ud;
    bench_rec *rec = &c->run->recs[c->i];
    rec->status = status;
    const irn_header *rep = irn_headers_find(h, n, "x-inferrail-replica");
    if (rep)
        snprintf(rec->replica, sizeof rec->replica, "%.*s", (int)IR_MIN(rep->value_len, 47),
                 rep->value);
    rec->hdr_prompt_tokens = header_long(h, n, "x-inferrail-prompt-tokens");
    rec->hdr_cached_tokens = header_long(h, n, "x-inferrail-cached-tokens");
    const irn_header *ct = irn_headers_find(h, n, "content-type");
    c->whole = ct && ct->value_len >= 16 && strncasecmp(ct->value, "application/json", 16) == 0;
    if (c->whole) ir_buf_init(&c->body, 4u << 20);
}

/* A whole answer: its first byte is its first token's time (the engine sends it all at
 * the end: TTFT is the whole latency), and its usage is read at the end. */
static void whole_body(ol_call *c, const char *data, size_t len) {
    bench_rec *rec = &c->run->recs[c->i];
    if (!rec->first_ns) rec->first_ns = ir_now_ns() - c->run->t0;
    if (ir_buf_append(&c->body, data, len)) c->bad = true;
}

static void whole_usage(ol_call *c) {
    bench_rec *rec = &c->run->recs[c->i];
    json_t *j = c->body.data ? json_loadb(c->body.data, c->body.len, 0, NULL) : NULL;
    json_t *u = json_object_get(j, "usage");
    if (json_is_object(u)) {
        c->saw_usage = c->saw_done = true;
        rec->prompt_tokens = json_long(u, "prompt_tokens");
        rec->completion_tokens = json_long(u, "completion_tokens");
        long ct = json_long(json_object_get(u, "prompt_tokens_details"), "cached_tokens");
        rec->cached_tokens = ct > 0 ? ct : 0;
        rec->chunks = 1;
    }
    json_decref(j);
}

static void on_body(void *ud, const char *data, size_t len) {
    ol_call *c = ud;
    if (c->run->recs[c->i].status != 200 || c->bad) return;
    if (c->whole) {
        whole_body(c, data, len);
        return;
    }
    if (ir_sse_feed(&c->sse, data, len) < 0) {
        c->bad = true;
        irn_client_cancel(c->h);
    }
}

static bench_err_kind classify(int err) {
    switch (err) {
    case IRN_ERESOLVE:
    case IRN_ECONNECT:
    case IRN_ECONNECT_TIMEOUT:
        return BENCH_E_CONNECT;
    case IRN_EHEAD_TIMEOUT:
    case IRN_EIDLE_TIMEOUT:
        return BENCH_E_TIMEOUT;
    case IRN_ECLOSED_EARLY:
    case IRN_ECLOSED_MID:
        return BENCH_E_CLOSED;
    case IRN_EPARSE:
        return BENCH_E_PARSE;
    default:
        return BENCH_E_CLOSED;
    }
}

static void on_done(void *ud, int err) {
    ol_call *c = ud;
    ol_run *r = c->run;
    bench_rec *rec = &r->recs[c->i];
    rec->end_ns = ir_now_ns() - r->t0;
    if (c->whole && !err && !c->bad && rec->status == 200) whole_usage(c);
    if (c->whole) ir_buf_free(&c->body);
    if (c->bad)
        rec->err = BENCH_E_PARSE;
    else if (err)
        rec->err = classify(err);
    else if (rec->status / 100 == 4)
        rec->err = BENCH_E_HTTP4;
    else if (rec->status / 100 == 5)
        rec->err = BENCH_E_HTTP5;
    else if (rec->status != 200)
        rec->err = BENCH_E_HTTP;
    else if (!c->saw_usage || !c->saw_done)
        rec->err = BENCH_E_INCOMPLETE;
    ir_sse_free(&c->sse);
    free(c);
    r->done++;
    r->inflight--;
    phase_maybe_done(r);
}

static const irn_client_cbs call_cbs = {on_head, on_body, on_done};

/* ---- sending ------------------------------------------------------------------- */

size_t bench_spread_pick(bench_spread s, size_t i, uint32_t session, size_t n) {
    if (n <= 1) return 0;
    return s == BENCH_SPREAD_SESSION ? (size_t)session % n : i % n;
}

int bench_spread_parse(const char *name, bench_spread *out) {
    if (strcmp(name, "alternate") == 0)
        *out = BENCH_SPREAD_ALTERNATE;
    else if (strcmp(name, "session") == 0)
        *out = BENCH_SPREAD_SESSION;
    else
        return -1;
    return 0;
}

const char *bench_spread_name(bench_spread s) {
    return s == BENCH_SPREAD_SESSION ? "session" : "alternate";
}

static void send_one(ol_run *r, size_t k, uint64_t now) {
    const bench_req *q = &r->reqs[r->first + k];
    bench_rec *rec = &r->recs[k];
    rec->sched_ns = q->at_ns - r->base;
    rec->send_ns = now - r->t0;
    rec->prompt_tokens = rec->completion_tokens = -1;
    rec->hdr_prompt_tokens = rec->hdr_cached_tokens = -1;
    ol_call *c = calloc(1, sizeof *c);
    if (!c) {
        rec->err = BENCH_E_SEND;
        rec->end_ns = rec->send_ns;
        r->done++;
        return;
    }
    c->run = r;
    c->i = k;
    ir_sse_init(&c->sse, MAX_SSE_EVENT, on_sse, c);
    rec->direct =
        r->cfg->direct_url && bench_direct_pick(r->cfg->seed, r->first + k, r->cfg->direct_share);
    char rid[96];
    int rl = snprintf(rid, sizeof rid, "%s-%zu", r->rid_prefix, r->first + k);
    irn_header h[2] = {{"content-type", 12, "application/json", 16},
                       {"x-request-id", 12, rid, (size_t)rl}};
    uint64_t to = (uint64_t)((r->cfg->timeout_s > 0 ? r->cfg->timeout_s : 300) * 1e9);
    size_t g = bench_spread_pick(r->cfg->spread, r->first + k, q->session, r->n_url);
    rec->gateway = (uint8_t)g; /* the direct client's requests bypass every gateway */
    const ir_url *u = rec->direct ? &r->durl : &r->url[g];
    irn_client_req req = {.host = u->host,
                          .port = u->port,
                          .method = "POST",
                          .path = rec->direct ? r->dpath : r->path[g],
                          .headers = h,
                          .nheaders = 2,
                          .body = q->body,
                          .body_len = q->body_len,
                          .connect_timeout_ns = 10000000000ull,
                          .head_timeout_ns = to,
                          .idle_timeout_ns = to};
    r->inflight++;
    if (irn_client_request(r->pool, &req, &call_cbs, c, &c->h) != 0) {
        ir_sse_free(&c->sse);
        free(c);
        rec->err = BENCH_E_SEND;
        rec->end_ns = rec->send_ns;
        r->inflight--;
        r->done++;
    }
}

/* Sends everything due, then arms the timer for the next one. */
static void send_due(ol_run *r) {
    uint64_t now = ir_now_ns();
    while (r->next < r->n && due_abs(r, r->next) <= now) {
        send_one(r, r->next++, now);
        now = ir_now_ns();
    }
    if (r->next < r->n) arm(r, due_abs(r, r->next));
    phase_maybe_done(r);
}

static void on_timer_fd(uv_poll_t *p, int status, int events) {
    ol_run *r = p->data;
    uint64_t expirations;
    while (read(r->tfd, &expirations, sizeof expirations) > 0) {}
    send_due(r);
}

static void on_tick(uv_timer_t *t) {
    ol_run *r = t->data;
    fprintf(stderr, "run: sent %zu/%zu, done %zu, in flight %zu\n", r->next, r->n, r->done,
            r->inflight);
}

/* The test hook: the loop blocks once, as a slow callback would. */
static void on_stall(uv_timer_t *t) {
    ol_run *r = t->data;
    struct timespec ts = {(time_t)(r->stall_ms / 1000), (long)(fmod(r->stall_ms, 1000) * 1e6)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

/* ---- timed actions ------------------------------------------------------------- */

static void action_head(void *ud, int status, const irn_header *h, size_t n) {
    ((ol_action *)ud)->status = status;
}

static void action_body(void *ud, const char *data, size_t len) {}

static void action_done(void *ud, int err) {
    ((ol_action *)ud)->err = err;
}

static const irn_client_cbs action_cbs = {action_head, action_body, action_done};

static void on_action(uv_timer_t *t) {
    ol_action *x = t->data;
    ol_run *r = x->run;
    x->sent_s = (double)(ir_now_ns() - r->t0) / 1e9;
    irn_client_req req = {.host = x->url.host,
                          .port = x->url.port,
                          .method = "POST",
                          .path = x->url.path[0] ? x->url.path : "/",
                          .body = "",
                          .body_len = 0,
                          .connect_timeout_ns = 10000000000ull,
                          .head_timeout_ns = 30000000000ull,
                          .idle_timeout_ns = 30000000000ull};
    irn_client *h;
    int rc = irn_client_request(r->pool, &req, &action_cbs, x, &h);
    if (rc) x->err = rc;
}

/* Arms every action (unsent, with a URL that parsed) for the measured phase. */
static void actions_start(ol_run *r) {
    uv_update_time(r->loop); /* the loop's clock may be as old as the warmup's end */
    for (size_t i = 0; i < r->n_actions; i++) {
        ol_action *x = &r->actions[i];
        if (x->sent_s < 0 && !x->err)
            uv_timer_start(&x->timer, on_action, (uint64_t)(x->a->at_s * 1000), 0);
    }
}

static void actions_stop(ol_run *r) {
    for (size_t i = 0; i < r->n_actions; i++) uv_timer_stop(&r->actions[i].timer);
}

static json_t *actions_json(const ol_run *r) {
    json_t *arr = json_array();
    for (size_t i = 0; i < r->n_actions; i++) {
        const ol_action *x = &r->actions[i];
        json_t *o = json_pack("{s:f, s:s}", "at_s", x->a->at_s, "url", x->a->url);
        json_object_set_new(o, "sent_s", x->sent_s >= 0 ? json_real(x->sent_s) : json_null());
        json_object_set_new(o, "status", x->status ? json_integer(x->status) : json_null());
        if (x->err) json_object_set_new(o, "error", json_string(irn_strerror(x->err)));
        json_array_append_new(arr, o);
    }
    return arr;
}

static void actions_init(ol_run *r, uv_loop_t *loop) {
    r->n_actions = r->cfg->n_actions < BENCH_MAX_ACTIONS ? r->cfg->n_actions : BENCH_MAX_ACTIONS;
    for (size_t i = 0; i < r->n_actions; i++) {
        ol_action *x = &r->actions[i];
        x->run = r;
        x->a = &r->cfg->actions[i];
        x->sent_s = -1;
        if (ir_url_parse(x->a->url, &x->url)) x->err = IRN_EPARSE;
        uv_timer_init(loop, &x->timer);
        x->timer.data = x;
    }
}

static void run_phase(ol_run *r, size_t first, size_t n, bench_rec *recs, bool measured) {
    r->first = first;
    r->n = n;
    r->recs = recs;
    r->next = r->done = r->inflight = 0;
    r->n_itl = 0;
    if (n == 0) return;
    r->base = r->reqs[first].at_ns;
    r->t0 = ir_now_ns();
    if (measured && r->stall_ms > 0)
        uv_timer_start(&r->stall, on_stall, (uint64_t)(r->stall_at_s * 1000), 0);
    if (measured) actions_start(r);
    if (r->cfg->progress) uv_timer_start(&r->tick, on_tick, 1000, 1000);
    send_due(r);
    uv_run(r->loop, UV_RUN_DEFAULT);
    uv_timer_stop(&r->tick);
    uv_timer_stop(&r->stall);
    actions_stop(r);
}

/* ---- engine counters ---------------------------------------------------------------- */

typedef struct engine_counts {
    double queries, hits; /* -1 when unavailable */
    double cpu_hits;      /* vllm:external_prefix_cache_hits_total (a CPU tier); -1: none */
} engine_counts;

static void scrape(const bench_run_cfg *cfg, engine_counts *out) {
    for (size_t i = 0; i < cfg->n_engine; i++) {
        char url[600];
        const char *u = cfg->engine_urls[i];
        size_t l = strlen(u);
        while (l && u[l - 1] == '/') l--;
        if (l >= 8 && memcmp(u + l - 8, "/metrics", 8) == 0)
            snprintf(url, sizeof url, "%.*s", (int)l, u);
        else
            snprintf(url, sizeof url, "%.*s/metrics", (int)l, u);
        ir_buf page;
        ir_buf_init(&page, 8u << 20);
        int st = bench_http_get(url, &page, 5);
        out[i].queries = out[i].hits = out[i].cpu_hits = -1;
        if (st == 200 && page.data) {
            out[i].queries = irl_prom_sum(page.data, page.len, "vllm:prefix_cache_queries_total");
            out[i].hits = irl_prom_sum(page.data, page.len, "vllm:prefix_cache_hits_total");
            out[i].cpu_hits =
                irl_prom_sum(page.data, page.len, "vllm:external_prefix_cache_hits_total");
        } else {
            fprintf(stderr, "run: scraping %s failed (%d)\n", url, st);
        }
        ir_buf_free(&page);
    }
}

/* ---- results --------------------------------------------------------------------------- */

static json_t *num_or_null(double v) {
    return isfinite(v) ? json_real(round(v * 1000) / 1000) : json_null();
}

static json_t *long_or_null(long v) {
    return v >= 0 ? json_integer(v) : json_null();
}

static json_t *rec_json(const bench_rec *x, const bench_req *q, size_t i, size_t n_gateways) {
    double ttft = x->first_ns ? (double)(x->first_ns - x->sched_ns) / 1e6 : NAN;
    double tpot = NAN;
    if (x->err == BENCH_OK && x->first_ns && x->completion_tokens > 1)
        tpot = (double)(x->end_ns - x->first_ns) / 1e6 / (double)(x->completion_tokens - 1);
    json_t *o = json_object();
    json_object_set_new(o, "i", json_integer((json_int_t)i));
    json_object_set_new(o, "session", json_integer(q->session));
    json_object_set_new(o, "turn", json_integer(q->turn));
    json_object_set_new(o, "sched_ms", num_or_null((double)x->sched_ns / 1e6));
    json_object_set_new(o, "send_lag_ms",
                        num_or_null((double)((int64_t)x->send_ns - (int64_t)x->sched_ns) / 1e6));
    json_object_set_new(o, "ttft_ms", num_or_null(ttft));
    json_object_set_new(o, "tpot_ms", num_or_null(tpot));
    json_object_set_new(o, "itl_max_ms", x->chunks > 1 ? num_or_null(x->itl_max_ms) : json_null());
    json_object_set_new(o, "e2e_ms", num_or_null((double)(x->end_ns - x->sched_ns) / 1e6));
    json_object_set_new(o, "end_ms", num_or_null((double)x->end_ns / 1e6));
    json_object_set_new(o, "status", json_integer(x->status));
    json_object_set_new(o, "error", x->err ? json_string(bench_err_name(x->err)) : json_null());
    json_object_set_new(o, "expected_prompt_tokens", json_integer(q->prompt_tokens));
    json_object_set_new(o, "reusable_tokens", json_integer(q->reused_tokens));
    json_object_set_new(o, "max_tokens", json_integer(q->max_tokens));
    json_object_set_new(o, "prompt_tokens", long_or_null(x->prompt_tokens));
    json_object_set_new(o, "completion_tokens", long_or_null(x->completion_tokens));
    json_object_set_new(o, "cached_tokens", json_integer(x->cached_tokens));
    json_object_set_new(o, "chunks", json_integer(x->chunks));
    json_object_set_new(o, "replica", x->replica[0] ? json_string(x->replica) : json_null());
    if (n_gateways > 1 && !x->direct) json_object_set_new(o, "gateway", json_integer(x->gateway));
    json_object_set_new(o, "hdr_prompt_tokens", long_or_null(x->hdr_prompt_tokens));
    json_object_set_new(o, "hdr_cached_tokens", long_or_null(x->hdr_cached_tokens));
    if (x->direct) json_object_set_new(o, "direct", json_true());
    return o;
}

static json_t *dist(double *v, size_t n) {
    json_t *o = json_object();
    qsort(v, n, sizeof *v, bench_cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    json_object_set_new(o, "mean", num_or_null(n ? sum / (double)n : NAN));
    json_object_set_new(o, "p50", num_or_null(bench_percentile(v, n, 50)));
    json_object_set_new(o, "p90", num_or_null(bench_percentile(v, n, 90)));
    json_object_set_new(o, "p99", num_or_null(bench_percentile(v, n, 99)));
    json_object_set_new(o, "p99_9", num_or_null(bench_percentile(v, n, 99.9)));
    json_object_set_new(o, "max", num_or_null(n ? v[n - 1] : NAN));
    return o;
}

json_t *bench_prediction(const long *pred, const long *actual, size_t n) {
    size_t m = 0, exact = 0, over = 0, under = 0;
    double err = 0, aerr = 0;
    for (size_t i = 0; i < n; i++) {
        if (pred[i] < 0 || actual[i] < 0) continue;
        m++;
        long d = pred[i] - actual[i];
        exact += d == 0;
        over += d > 0;
        under += d < 0;
        err += (double)d;
        aerr += (double)labs(d);
    }
    if (m == 0) return NULL;
    return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "n", (json_int_t)m, "exact",
                     (double)exact / (double)m, "over", (double)over / (double)m, "under",
                     (double)under / (double)m, "mean_error", err / (double)m, "mean_abs_error",
                     aerr / (double)m);
}

/* Each replica's mean number of requests in flight over the run (the time
 * from hand-off to the end of each request it served, summed, over the span),
 * and the busiest one's against the mean of all that served: the balance the
 * proof's hot-prefix target bounds (1.3). Replicas that served nothing are not
 * seen here, so the ratio can only understate an imbalance. */
static void in_flight_balance(const bench_sum_in *in, double span_s, json_t *s) {
    json_t *per = json_object();
    for (size_t i = 0; i < in->n; i++) {
        const bench_rec *x = &in->recs[i];
        if (!x->replica[0] || x->end_ns <= x->send_ns) continue;
        json_t *c = json_object_get(per, x->replica);
        double busy = (double)(x->end_ns - x->send_ns) / 1e9;
        json_object_set_new(per, x->replica, json_real((c ? json_real_value(c) : 0) + busy));
    }
    const char *k;
    json_t *v;
    double max = 0, sum = 0;
    size_t n = 0;
    json_object_foreach(per, k, v) {
        double m = json_real_value(v) / span_s;
        json_real_set(v, m);
        sum += m;
        n++;
        if (m > max) max = m;
    }
    bool ok = n && isfinite(span_s) && sum > 0;
    json_object_set_new(s, "per_replica_in_flight", per);
    json_object_set_new(s, "in_flight_max_over_mean",
                        num_or_null(ok ? max / (sum / (double)n) : NAN));
}

/* With several gateways: each one's share of the requests, errors and hit rate. */
static void per_gateway(const bench_sum_in *in, json_t *s) {
    if (in->n_gateways <= 1) return;
    json_t *arr = json_array();
    for (size_t g = 0; g < in->n_gateways; g++) {
        size_t n = 0, errs = 0;
        double prompt = 0, cached = 0;
        for (size_t i = 0; i < in->n; i++) {
            const bench_rec *x = &in->recs[i];
            if (x->gateway != g) continue;
            n++;
            errs += x->err != BENCH_OK;
            if (x->err == BENCH_OK && x->prompt_tokens > 0) {
                prompt += (double)x->prompt_tokens;
                cached += (double)x->cached_tokens;
            }
        }
        json_array_append_new(arr, json_pack("{s:I, s:I, s:o}", "requests", (json_int_t)n, "errors",
                                             (json_int_t)errs, "hit_rate",
                                             num_or_null(prompt > 0 ? cached / prompt : NAN)));
    }
    json_object_set_new(s, "per_gateway", arr);
}

json_t *bench_summarize(const bench_sum_in *in) {
    size_t n = in->n;
    double *ttft = calloc(n + 1, sizeof(double)), *tpot = calloc(n + 1, sizeof(double));
    double *e2e = calloc(n + 1, sizeof(double)), *lag = calloc(n + 1, sizeof(double));
    long *pp = calloc(n + 1, sizeof(long)), *pa = calloc(n + 1, sizeof(long));
    long *cp = calloc(n + 1, sizeof(long)), *ca = calloc(n + 1, sizeof(long));
    size_t nt = 0, np = 0, ne = 0, ok = 0, good = 0;
    size_t by_kind[BENCH_E_COUNT] = {0};
    double prompt = 0, cached = 0, out_tok = 0;
    uint64_t t_first = UINT64_MAX, t_last = 0;
    json_t *per_rep = json_object();
    for (size_t i = 0; i < n; i++) {
        const bench_rec *x = &in->recs[i];
        lag[i] = (double)((int64_t)x->send_ns - (int64_t)x->sched_ns) / 1e6;
        if (x->sched_ns < t_first) t_first = x->sched_ns;
        if (x->end_ns > t_last) t_last = x->end_ns;
        if (x->replica[0]) {
            json_t *c = json_object_get(per_rep, x->replica);
            json_object_set_new(per_rep, x->replica,
                                json_integer(c ? json_integer_value(c) + 1 : 1));
        }
        pp[i] = cp[i] = pa[i] = ca[i] = -1;
        by_kind[x->err]++;
        if (x->err != BENCH_OK) continue;
        ok++;
        double tt = x->first_ns ? (double)(x->first_ns - x->sched_ns) / 1e6 : NAN;
        double tp = 0;
        if (isfinite(tt)) ttft[nt++] = tt;
        if (x->first_ns && x->completion_tokens > 1) {
            tp = (double)(x->end_ns - x->first_ns) / 1e6 / (double)(x->completion_tokens - 1);
            tpot[np++] = tp;
        }
        e2e[ne++] = (double)(x->end_ns - x->sched_ns) / 1e6;
        if (isfinite(tt) && tt <= in->slo_ttft_ms && tp <= in->slo_tpot_ms) good++;
        if (x->prompt_tokens > 0) {
            prompt += (double)x->prompt_tokens;
            cached += (double)x->cached_tokens;
        }
        if (x->completion_tokens > 0) out_tok += (double)x->completion_tokens;
        pp[i] = x->hdr_prompt_tokens;
        pa[i] = x->prompt_tokens;
        cp[i] = x->hdr_cached_tokens;
        ca[i] = x->hdr_cached_tokens >= 0 ? x->cached_tokens : -1;
    }
    double span = n && t_last > t_first ? (double)(t_last - t_first) / 1e9 : NAN;
    json_t *s = json_object();
    json_object_set_new(s, "requests", json_integer((json_int_t)n));
    json_object_set_new(s, "ok", json_integer((json_int_t)ok));
    json_object_set_new(s, "errors", json_integer((json_int_t)(n - ok)));
    json_t *ek = json_object();
    for (int k = 1; k < BENCH_E_COUNT; k++)
        if (by_kind[k])
            json_object_set_new(ek, bench_err_name(k), json_integer((json_int_t)by_kind[k]));
    json_object_set_new(s, "errors_by_kind", ek);
    json_object_set_new(s, "duration_s", num_or_null(span));
    json_object_set_new(s, "throughput_rps", num_or_null((double)ok / span));
    json_object_set_new(s, "output_tokens_per_s", num_or_null(out_tok / span));
    json_object_set_new(s, "goodput_rps", num_or_null((double)good / span));
    json_object_set_new(s, "goodput", num_or_null(n ? (double)good / (double)n : NAN));
    json_object_set_new(s, "ttft_ms", dist(ttft, nt));
    json_object_set_new(s, "tpot_ms", dist(tpot, np));
    double *itl = malloc((in->n_itl + 1) * sizeof(double));
    if (in->n_itl) memcpy(itl, in->itl_ms, in->n_itl * sizeof(double));
    json_object_set_new(s, "itl_ms", dist(itl, in->n_itl));
    free(itl);
    json_object_set_new(s, "e2e_ms", dist(e2e, ne));
    json_object_set_new(s, "send_lag_ms", dist(lag, n));
    json_object_set_new(s, "prompt_tokens", json_integer((json_int_t)prompt));
    json_object_set_new(s, "cached_tokens", json_integer((json_int_t)cached));
    json_object_set_new(s, "hit_rate", num_or_null(prompt > 0 ? cached / prompt : NAN));
    json_object_set_new(s, "per_replica", per_rep);
    in_flight_balance(in, span, s);
    per_gateway(in, s);
    json_t *pred = json_object();
    json_t *a = bench_prediction(pp, pa, n), *b = bench_prediction(cp, ca, n);
    if (a) json_object_set_new(pred, "prompt_tokens", a);
    if (b) json_object_set_new(pred, "cached_tokens", b);
    json_object_set_new(s, "prediction", json_object_size(pred) ? pred : json_null());
    if (!json_object_size(pred)) json_decref(pred);
    free(ttft);
    free(tpot);
    free(e2e);
    free(lag);
    free(pp);
    free(pa);
    free(cp);
    free(ca);
    return s;
}

/* ---- entry ------------------------------------------------------------------------------ */

static void close_cb(uv_handle_t *h) {}

/* The chat completions path under a base URL's path (which may end in /v1). */
static void chat_path(const ir_url *u, char *out, size_t len) {
    size_t pl = strlen(u->path);
    while (pl && u->path[pl - 1] == '/') pl--;
    if (pl >= 3 && memcmp(u->path + pl - 3, "/v1", 3) == 0)
        snprintf(out, len, "%.*s/chat/completions", (int)pl, u->path);
    else
        snprintf(out, len, "%.*s/v1/chat/completions", (int)pl, u->path);
}

bool bench_direct_pick(uint64_t seed, size_t i, double share) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + (uint64_t)i + 0x2545f4914f6cdd1dull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull; /* splitmix64's finaliser */
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (double)(x >> 11) / 9007199254740992.0 < share;
}

/* The measured records the summary reads: those of the routed traffic (the
 * direct client's left out), copied into out (n entries). Returns the count. */
static size_t routed_recs(const bench_rec *recs, size_t n, bench_rec *out, size_t *direct,
                          size_t *direct_err) {
    size_t m = 0;
    *direct = *direct_err = 0;
    for (size_t i = 0; i < n; i++) {
        if (!recs[i].direct) {
            out[m++] = recs[i];
            continue;
        }
        (*direct)++;
        *direct_err += recs[i].err != BENCH_OK;
    }
    return m;
}

/* The base URLs and each one's chat completions path; -1 with err on a bad URL. */
static int run_urls(ol_run *r, const bench_run_cfg *cfg, char *err, size_t errlen) {
    r->n_url = cfg->n_base ? cfg->n_base : 1;
    if (r->n_url > BENCH_MAX_GATEWAYS) {
        snprintf(err, errlen, "at most %d base URLs", BENCH_MAX_GATEWAYS);
        return -1;
    }
    for (size_t g = 0; g < r->n_url; g++) {
        r->base_url[g] = cfg->n_base ? cfg->base_urls[g] : cfg->base_url;
        if (!r->base_url[g] || ir_url_parse(r->base_url[g], &r->url[g])) {
            snprintf(err, errlen, "--base-url: not an http URL: %s",
                     r->base_url[g] ? r->base_url[g] : "");
            return -1;
        }
        chat_path(&r->url[g], r->path[g], sizeof r->path[g]);
    }
    return 0;
}

/* The results document's "workload": its parameters, ceilings and working set. */
static json_t *workload_json(const bench_workload *wl) {
    json_t *w =
        json_pack("{s:s, s:O, s:o, s:o, s:o, s:I, s:I}", "name", wl->name, "params", wl->params,
                  "reuse_ceiling", num_or_null(wl->reuse_ceiling), "reuse_ceiling_finite",
                  num_or_null(wl->reuse_ceiling_finite), "pooled_lru_hit_rate",
                  num_or_null(wl->pooled_lru_hit_rate), "distinct_blocks",
                  (json_int_t)wl->distinct_blocks, "reused_blocks", (json_int_t)wl->reused_blocks);
    if (wl->cache_blocks && wl->cache_replicas)
        json_object_set_new(w, "cache",
                            json_pack("{s:I, s:I, s:I}", "replicas", (json_int_t)wl->cache_replicas,
                                      "blocks_per_replica", (json_int_t)wl->cache_blocks,
                                      "pooled_blocks",
                                      (json_int_t)(wl->cache_blocks * wl->cache_replicas)));
    return w;
}

json_t *bench_run(const bench_run_cfg *cfg, char *err, size_t errlen) {
    const bench_workload *wl = cfg->wl;
    ol_run r = {0};
    r.cfg = cfg;
    r.reqs = wl->reqs;
    r.stall_at_s = cfg->stall_at_s;
    r.stall_ms = cfg->stall_ms;
    if (run_urls(&r, cfg, err, errlen)) return NULL;
    if (cfg->direct_url) {
        if (ir_url_parse(cfg->direct_url, &r.durl)) {
            snprintf(err, errlen, "direct client: not an http URL: %s", cfg->direct_url);
            return NULL;
        }
        chat_path(&r.durl, r.dpath, sizeof r.dpath);
    }
    snprintf(r.rid_prefix, sizeof r.rid_prefix, "bench-%s-%llu", wl->name,
             (unsigned long long)cfg->seed);
    r.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (r.tfd < 0) {
        snprintf(err, errlen, "timerfd_create: %s", strerror(errno));
        return NULL;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    r.loop = &loop;
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.max_idle_per_host = 4096;
    r.pool = irn_pool_new(&loop, &pc);
    uv_poll_init(&loop, &r.poll, r.tfd);
    r.poll.data = &r;
    uv_poll_start(&r.poll, UV_READABLE, on_timer_fd);
    uv_timer_init(&loop, &r.tick);
    uv_timer_init(&loop, &r.stall);
    r.tick.data = r.stall.data = &r;
    actions_init(&r, &loop);

    bench_rec *recs = calloc(wl->n, sizeof *recs);
    engine_counts *before = calloc(cfg->n_engine + 1, sizeof *before);
    engine_counts *after = calloc(cfg->n_engine + 1, sizeof *after);
    double wall0 = ir_wall_time();
    /* Warmup: the first requests of the schedule, then a clean cut. */
    run_phase(&r, 0, wl->warmup, recs, false);
    size_t warm_err = 0;
    for (size_t i = 0; i < wl->warmup; i++) warm_err += recs[i].err != BENCH_OK;
    scrape(cfg, before);
    size_t nm = wl->n - wl->warmup;
    run_phase(&r, wl->warmup, nm, recs + wl->warmup, true);
    scrape(cfg, after);

    /* Tear down the loop. */
    uv_poll_stop(&r.poll);
    uv_close((uv_handle_t *)&r.poll, close_cb);
    uv_close((uv_handle_t *)&r.tick, close_cb);
    uv_close((uv_handle_t *)&r.stall, close_cb);
    for (size_t i = 0; i < r.n_actions; i++) uv_close((uv_handle_t *)&r.actions[i].timer, close_cb);
    irn_pool_close(r.pool, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    close(r.tfd);

    bench_rec *routed = calloc(nm + 1, sizeof *routed);
    size_t n_direct, direct_err;
    size_t nr = routed_recs(recs + wl->warmup, nm, routed, &n_direct, &direct_err);
    bench_sum_in si = {routed, nr, cfg->slo_ttft_ms, cfg->slo_tpot_ms, r.itl, r.n_itl, r.n_url};
    json_t *sum = bench_summarize(&si);
    free(routed);
    if (cfg->direct_url)
        json_object_set_new(sum, "direct",
                            json_pack("{s:s, s:f, s:I, s:I}", "url", cfg->direct_url, "share",
                                      cfg->direct_share, "requests", (json_int_t)n_direct, "errors",
                                      (json_int_t)direct_err));
    json_object_set_new(sum, "reuse_ceiling", num_or_null(wl->reuse_ceiling));
    json_object_set_new(sum, "reuse_ceiling_finite", num_or_null(wl->reuse_ceiling_finite));
    json_object_set_new(sum, "pooled_lru_hit_rate", num_or_null(wl->pooled_lru_hit_rate));
    json_object_set_new(sum, "warmup",
                        json_pack("{s:I, s:I}", "requests", (json_int_t)wl->warmup, "errors",
                                  (json_int_t)warm_err));
    /* The engines' own prefix-cache counters, measured phase only. */
    json_t *eng = json_array();
    double dq = 0, dh = 0, dc = 0;
    bool any_cpu = false;
    bool all = cfg->n_engine > 0;
    for (size_t i = 0; i < cfg->n_engine; i++) {
        bool ok = before[i].queries >= 0 && after[i].queries >= 0 && before[i].hits >= 0 &&
                  after[i].hits >= 0;
        all &= ok;
        double q = ok ? after[i].queries - before[i].queries : NAN;
        double h = ok ? after[i].hits - before[i].hits : NAN;
        if (ok) dq += q, dh += h;
        json_t *e =
            json_pack("{s:s, s:o, s:o, s:o}", "url", cfg->engine_urls[i], "queries", num_or_null(q),
                      "hits", num_or_null(h), "hit_rate", num_or_null(q > 0 ? h / q : NAN));
        /* A CPU tier's hits (vLLM counts them apart from the GPU's): tokens loaded. */
        if (before[i].cpu_hits >= 0 && after[i].cpu_hits >= 0) {
            double c = after[i].cpu_hits - before[i].cpu_hits;
            json_object_set_new(e, "cpu_hits", json_real(c));
            dc += c, any_cpu = true;
        }
        json_array_append_new(eng, e);
    }
    if (any_cpu) json_object_set_new(sum, "engine_cpu_hits", json_real(dc));
    json_object_set_new(sum, "engine_hit_rate", num_or_null(all && dq > 0 ? dh / dq : NAN));
    json_object_set_new(sum, "engines", eng);

    json_t *doc = json_object();
    json_object_set_new(doc, "schema", json_string("inferrail-bench/run/1"));
    json_t *c = json_object();
    json_object_set_new(c, "base_url", json_string(r.base_url[0]));
    json_object_set_new(c, "gateways", json_integer((json_int_t)r.n_url));
    if (r.n_url > 1) {
        json_t *bu = json_array();
        for (size_t g = 0; g < r.n_url; g++) json_array_append_new(bu, json_string(r.base_url[g]));
        json_object_set_new(c, "base_urls", bu);
        json_object_set_new(c, "spread", json_string(bench_spread_name(cfg->spread)));
    }
    json_object_set_new(c, "workload", json_string(wl->name));
    json_object_set_new(c, "rate", json_real(cfg->rate));
    json_object_set_new(c, "speedup", json_real(wl->speedup > 0 ? wl->speedup : 1));
    json_object_set_new(c, "requests", json_integer((json_int_t)nm));
    json_object_set_new(c, "warmup", json_integer((json_int_t)wl->warmup));
    json_object_set_new(c, "seed", json_integer((json_int_t)cfg->seed));
    json_object_set_new(c, "slo_ttft_ms", json_real(cfg->slo_ttft_ms));
    json_object_set_new(c, "slo_tpot_ms", json_real(cfg->slo_tpot_ms));
    json_object_set_new(c, "started_at", json_real(wall0));
    json_object_set_new(doc, "config", c);
    json_object_set_new(doc, "workload", workload_json(wl));
    json_object_set_new(doc, "summary", sum);
    if (r.n_actions) json_object_set_new(doc, "actions", actions_json(&r));
    json_t *rs = json_array();
    for (size_t i = wl->warmup; i < wl->n; i++)
        json_array_append_new(rs, rec_json(&recs[i], &wl->reqs[i], i, r.n_url));
    json_object_set_new(doc, "requests", rs);
    free(recs);
    free(before);
    free(after);
    free(r.itl);
    return doc;
}

int bench_write_json(const json_t *doc, const char *path) {
    if (strcmp(path, "-") == 0) return json_dumpf(doc, stdout, JSON_INDENT(1)) || puts("") < 0;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (json_dump_file(doc, tmp, JSON_INDENT(1))) return -1;
    return rename(tmp, path);
}
