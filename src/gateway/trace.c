/* trace.c: the gateway's spans (observability.otlp_endpoint), exported by the obs
 * module's tracer and posted with libcurl, which curl_dl.c opens only here.
 *
 * A sampled request carries a gw_trace (r->tr, NULL otherwise, so tracing off
 * costs one branch per stage): a server span for the whole request, continuing
 * the client's traceparent when it sent a valid one; per attempt a route span
 * (the policy's choice) under it and an upstream client span under that, whose
 * id the engine receives as the parent in the traceparent header. Spans are
 * submitted as they end; the tracer's queue never makes a request wait. */
#include "gateway/curl_dl.h"
#include "gateway/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define POST_TIMEOUT_MS    5000
#define CONNECT_TIMEOUT_MS 2000

typedef struct gw_tracer gw_tracer;
struct gw_tracer {
    iro_tracer *t;
    CURL *h; /* the exporter thread's only */
    struct curl_slist *hdrs;
    char url[1024];
    iro_series *spans[3];     /* exported, dropped, failed */
    _Atomic uint64_t stop_ns; /* tracer_free's start: a post in flight gives up soon after */
};

struct gw_trace {
    iro_span_ctx server; /* trace id and the server span's id */
    uint8_t client_parent[8];
    uint64_t mono0, unix0;                   /* the request's arrival on both clocks */
    char method[16], path[IRO_ATTR_STR_MAX]; /* the client's request, kept at its start */
    iro_span up;                             /* the current attempt's upstream span */
    bool up_open;
};

static uint64_t unix_of(const gw_trace *t, uint64_t mono) {
    return t->unix0 + (mono > t->mono0 ? mono - t->mono0 : 0);
}

/* ---- configuration and the exporter ------------------------------------------------- */

/* The URL spans are posted to: a bare http://host:port gets /v1/traces. */
static int otlp_url(const char *ep, char *out, size_t n) {
    const char *p = strstr(ep, "://");
    const char *path = p ? strchr(p + 3, '/') : NULL;
    bool bare = !path || strcmp(path, "/") == 0;
    int k = snprintf(out, n, "%.*s%s", (int)(path ? (size_t)(path - ep) : strlen(ep)), ep,
                     bare ? "/v1/traces" : path);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}

void gw_check_otlp_endpoint(const char *ep, ir_cfg_errors *errs) {
    if (!ep) return;
    char url[1024];
    bool scheme = strncasecmp(ep, "http://", 7) == 0 || strncasecmp(ep, "https://", 8) == 0;
    const char *host = scheme ? strstr(ep, "://") + 3 : "";
    if (!scheme || !*host || *host == '/' || strpbrk(ep, " \t\r\n") ||
        otlp_url(ep, url, sizeof url))
        ir_cfg_errors_add(errs,
                          "observability.otlp_endpoint: '%s' is not an http:// or https:// URL "
                          "(a collector, e.g. http://127.0.0.1:4318)",
                          ep);
}

static size_t discard(char *p, size_t size, size_t n, void *ud) {
    (void)p, (void)ud;
    return size * n;
}

/* libcurl's progress callback, called about once a second while a post waits: a post
 * still waiting a grace after the tracer began to stop is cut (a hung collector). */
static int stop_check(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a, (void)b, (void)c, (void)d;
    uint64_t at = atomic_load(&((gw_tracer *)ud)->stop_ns);
    return at && ir_now_ns() - at > IRO_STOP_GRACE_NS;
}

static int post(void *ud, const char *body, size_t len, char *err, size_t errlen) {
    gw_tracer *g = ud;
    gw_curl.easy_setopt(g->h, CURLOPT_POSTFIELDS, body);
    gw_curl.easy_setopt(g->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode rc = gw_curl.easy_perform(g->h);
    if (rc != CURLE_OK) {
        snprintf(err, errlen, "%s: %s", g->url, gw_curl.easy_strerror(rc));
        return -1;
    }
    long status = 0;
    gw_curl.easy_getinfo(g->h, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        snprintf(err, errlen, "%s answered %ld", g->url, status);
        return -1;
    }
    return 0;
}

static void collect(void *ud) {
    gw_tracer *g = ud;
    iro_tracer_stats st;
    iro_tracer_stats_get(g->t, &st);
    iro_set(g->spans[0], (double)st.exported);
    iro_set(g->spans[1], (double)st.dropped);
    iro_set(g->spans[2], (double)st.failed);
}

static void metrics(gw_app *app, gw_tracer *g) {
    iro_registry *reg = gw_metrics_registry(app);
    if (!reg) return;
    const char *const l[] = {"result", NULL};
    iro_family *f = iro_counter(reg, "inferrail_trace_spans_total",
                                "Spans of sampled requests: exported to "
                                "observability.otlp_endpoint, dropped (the queue was full) or "
                                "failed (the collector refused them or could not be reached).",
                                l);
    g->spans[0] = iro_series_of(f, "exported");
    g->spans[1] = iro_series_of(f, "dropped");
    g->spans[2] = iro_series_of(f, "failed");
    iro_registry_on_collect(reg, collect, g);
}

static int curl_setup(gw_tracer *g, char *err, size_t errlen) {
    if (gw_curl_load(err, errlen)) return -1;
    g->h = gw_curl.easy_init();
    g->hdrs = gw_curl.slist_append(NULL, "Content-Type: application/json");
    if (!g->h || !g->hdrs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gw_curl.easy_setopt(g->h, CURLOPT_URL, g->url);
    gw_curl.easy_setopt(g->h, CURLOPT_HTTPHEADER, g->hdrs);
    gw_curl.easy_setopt(g->h, CURLOPT_NOSIGNAL, 1L);
    gw_curl.easy_setopt(g->h, CURLOPT_TIMEOUT_MS, (long)POST_TIMEOUT_MS);
    gw_curl.easy_setopt(g->h, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
    gw_curl.easy_setopt(g->h, CURLOPT_WRITEFUNCTION, discard);
    gw_curl.easy_setopt(g->h, CURLOPT_XFERINFOFUNCTION, stop_check);
    gw_curl.easy_setopt(g->h, CURLOPT_XFERINFODATA, g);
    gw_curl.easy_setopt(g->h, CURLOPT_NOPROGRESS, 0L);
    return 0;
}

static void tracer_free(gw_tracer *g) {
    if (!g) return;
    atomic_store(&g->stop_ns, ir_now_ns());
    iro_tracer_free(g->t); /* joins the exporter: nothing posts after this */
    if (g->h) gw_curl.easy_cleanup(g->h);
    if (g->hdrs) gw_curl.slist_free_all(g->hdrs);
    free(g);
}

int gw_trace_open(gw_app *app) {
    const gw_observability_cfg *c = &app->cfg.observability;
    if (!c->otlp_endpoint) return 0;
    char err[512];
    gw_tracer *g = calloc(1, sizeof *g);
    if (!g || otlp_url(c->otlp_endpoint, g->url, sizeof g->url)) {
        free(g);
        IR_ERROR("trace", "observability.otlp_endpoint: out of memory or too long");
        return -1;
    }
    if (curl_setup(g, err, sizeof err)) {
        IR_ERROR("trace", "observability.otlp_endpoint: %s", err);
        tracer_free(g);
        return -1;
    }
    iro_tracer_cfg tc = {.sample_ratio = c->trace_sample_ratio,
                         .service = "inferrail-gateway",
                         .post = post,
                         .post_ud = g};
    g->t = iro_tracer_new(&tc, err, sizeof err);
    if (!g->t) {
        IR_ERROR("trace", "observability.otlp_endpoint: %s", err);
        tracer_free(g);
        return -1;
    }
    metrics(app, g);
    app->tracer = g;
    IR_INFO("trace", "exporting %.4g of the traces to %s", c->trace_sample_ratio, g->url);
    return 0;
}

void gw_trace_close(gw_app *app) {
    tracer_free(app->tracer);
    app->tracer = NULL;
}

/* ---- the spans of one request -------------------------------------------------------- */

void gw_trace_begin(gw_req *r) {
    gw_tracer *g = r->w->app->tracer;
    iro_span_ctx c = {0};
    uint8_t parent[8] = {0};
    const char *tp = irn_request_header(r->req, "traceparent");
    if (tp && iro_traceparent_parse(tp, strlen(tp), &c) == 0)
        memcpy(parent, c.span_id, 8);
    else
        iro_trace_random_id(c.trace_id, 16);
    if (!iro_tracer_sampled(g->t, c.trace_id)) return;
    gw_trace *t = calloc(1, sizeof *t);
    if (!t) return;
    t->server = c;
    t->server.flags = 1;
    iro_trace_random_id(t->server.span_id, 8);
    memcpy(t->client_parent, parent, 8);
    snprintf(t->method, sizeof t->method, "%s", r->req->method);
    snprintf(t->path, sizeof t->path, "%s", r->req->path ? r->req->path : "");
    t->mono0 = r->arrival;
    t->unix0 = iro_unix_ns() - (ir_now_ns() - r->arrival);
    r->tr = t;
}

static void span_init(const gw_trace *t, iro_span *s, const char *name, iro_span_kind kind,
                      const uint8_t parent[8]) {
    memset(s, 0, offsetof(iro_span, attrs));
    s->nattrs = 0;
    memcpy(s->trace_id, t->server.trace_id, 16);
    iro_trace_random_id(s->span_id, 8);
    memcpy(s->parent_id, parent, 8);
    s->name = name;
    s->kind = kind;
}

static void upstream_end(gw_req *r, bool ok) {
    gw_trace *t = r->tr;
    if (!t->up_open) return;
    t->up_open = false;
    t->up.end_ns = unix_of(t, ir_now_ns());
    t->up.status = ok ? IRO_STATUS_OK : IRO_STATUS_ERROR;
    iro_tracer_submit(r->w->app->tracer->t, &t->up);
}

void gw_trace_route(gw_req *r, const irp_candidate *cand, size_t n, size_t k, uint64_t since) {
    gw_trace *t = r->tr;
    /* a new attempt: the last one failed, with the engine's answer if it gave one */
    if (t->up_open && r->up_status) iro_span_int(&t->up, "http.response.status_code", r->up_status);
    upstream_end(r, false);
    const gw_replica *rep = &r->w->app->fleet.replicas[cand[k].replica];
    uint64_t now = ir_now_ns();
    iro_span s;
    span_init(t, &s, "route", IRO_SPAN_INTERNAL, t->server.span_id);
    s.start_ns = unix_of(t, since);
    s.end_ns = unix_of(t, now);
    iro_span_str(&s, "inferrail.policy", irp_policy_name(r->policy));
    iro_span_int(&s, "inferrail.attempt", r->attempt + 1);
    iro_span_int(&s, "inferrail.candidates", (int64_t)n);
    iro_span_str(&s, "inferrail.replica", rep->cfg->id);
    iro_span_int(&s, "inferrail.replica.in_flight", cand[k].in_flight);
    if (cand[k].engine_fresh) {
        iro_span_int(&s, "inferrail.engine.running", cand[k].engine_running);
        iro_span_int(&s, "inferrail.engine.waiting", cand[k].engine_waiting);
        iro_span_double(&s, "inferrail.engine.kv_usage", cand[k].engine_kv_usage);
    }
    iro_span_double(&s, "inferrail.decision_us", (double)(now - since) / 1e3);
    iro_span_int(&s, "inferrail.prompt_tokens", (int64_t)r->prompt_tokens);
    iro_span_int(&s, "inferrail.predicted_cached_tokens", (int64_t)r->predicted_cached);
    s.status = IRO_STATUS_OK;
    iro_tracer_submit(r->w->app->tracer->t, &s);
    /* the attempt's upstream span hangs under this one */
    span_init(t, &t->up, "upstream", IRO_SPAN_CLIENT, s.span_id);
}

irn_header *gw_trace_headers(gw_req *r, irn_header *hs, size_t *nh) {
    gw_trace *t = r->tr;
    t->up.start_ns = unix_of(t, ir_now_ns());
    iro_span_str(&t->up, "server.address", r->rep->url.host);
    iro_span_int(&t->up, "server.port", r->rep->url.port);
    iro_span_str(&t->up, "inferrail.replica", r->rep->cfg->id);
    iro_span_str(&t->up, "http.request.method", r->req->method);
    t->up_open = true;
    irn_header *out = ir_arena_alloc(r->req->arena, (*nh + 1) * sizeof *out);
    char *v = ir_arena_alloc(r->req->arena, 56);
    if (!out || !v) return hs;
    iro_span_ctx c = t->server;
    memcpy(c.span_id, t->up.span_id, 8);
    iro_traceparent_format(&c, v);
    size_t k = 0;
    for (size_t i = 0; i < *nh; i++)
        if (!(hs[i].name_len == 11 && strncasecmp(hs[i].name, "traceparent", 11) == 0))
            out[k++] = hs[i];
    out[k++] = (irn_header){"traceparent", 11, v, 55};
    *nh = k;
    return out;
}

void gw_trace_finish(gw_req *r) {
    gw_trace *t = r->tr;
    bool ok = r->status > 0 && r->status < 500 && !r->aborted;
    if (t->up_open) { /* the engine's status, when it answered (not the gateway's 502) */
        if (r->up_status) iro_span_int(&t->up, "http.response.status_code", r->up_status);
        upstream_end(r, ok && r->up_status > 0);
    }
    iro_span s;
    span_init(t, &s, "request", IRO_SPAN_SERVER, t->client_parent);
    memcpy(s.span_id, t->server.span_id, 8);
    s.start_ns = t->unix0;
    s.end_ns = unix_of(t, ir_now_ns());
    s.status = ok ? IRO_STATUS_UNSET : IRO_STATUS_ERROR;
    iro_span_str(&s, "http.request.method", t->method);
    iro_span_str(&s, "url.path", t->path);
    iro_span_int(&s, "http.response.status_code", r->status);
    iro_span_str(&s, "inferrail.request_id", r->rid);
    if (r->model) iro_span_str(&s, "gen_ai.request.model", r->model->cfg->name);
    iro_span_int(&s, "inferrail.attempts", r->attempt);
    iro_span_int(&s, "inferrail.prompt_tokens", (int64_t)r->prompt_tokens);
    if (r->last_replica) iro_span_str(&s, "inferrail.replica", r->last_replica);
    iro_tracer_submit(r->w->app->tracer->t, &s);
    r->tr = NULL;
    free(t);
}
