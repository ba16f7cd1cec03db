/* control.c: the control loop: the admin port, active health checks and the
 * model-card refresher. */
#include "gateway/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct probe probe;

struct gw_control {
    gw_app *app;
    uv_loop_t *loop;
    irn_server *admin;
    irn_pool *pool;
    uv_timer_t tick;
    probe *probes; /* one per replica */
    uint64_t cards_every, last_cards;
    bool started; /* the admin port is bound and the tick runs */
    bool stopping;
};

struct probe {
    gw_control *ctl;
    uint32_t replica;
    irn_client *health, *cards;
    int status;
    ir_buf body;
    uint32_t fails, passes;
};

/* ---- health probes --------------------------------------------------------------------------- */

static void on_probe_head(void *ud, int status, const irn_header *h, size_t n) {
    ((probe *)ud)->status = status;
}
static void on_probe_body(void *ud, const char *d, size_t n) {}

static void on_probe_done(void *ud, int err) {
    probe *p = ud;
    p->health = NULL;
    gw_app *app = p->ctl->app;
    gw_replica *r = &app->fleet.replicas[p->replica];
    bool ok = err == 0 && p->status == 200;
    const gw_health_cfg *h = &app->cfg.health;
    if (ok) {
        p->fails = 0;
        if (++p->passes >= (uint32_t)h->healthy_threshold && !atomic_load(&r->healthy)) {
            atomic_store(&r->healthy, 1);
            atomic_store(&r->ejections, 0);
            IR_INFO("health", "replica %s is healthy again", r->cfg->id);
        }
    } else {
        p->passes = 0;
        if (++p->fails >= (uint32_t)h->unhealthy_threshold && atomic_load(&r->healthy)) {
            atomic_store(&r->healthy, 0);
            IR_WARN("health", "replica %s is unhealthy: %s", r->cfg->id,
                    err ? irn_strerror(err) : "status not 200");
        }
    }
}

static const irn_client_cbs probe_cbs = {on_probe_head, on_probe_body, on_probe_done};

static void on_cards_head(void *ud, int status, const irn_header *h, size_t n) {
    ((probe *)ud)->status = status;
}
static void on_cards_body(void *ud, const char *d, size_t n) {
    ir_buf_append(&((probe *)ud)->body, d, n);
}
static void on_cards_done(void *ud, int err) {
    probe *p = ud;
    p->cards = NULL;
    if (err == 0 && p->status == 200 && p->body.len)
        gw_cards_update(p->ctl->app->cards, p->replica, p->body.data, p->body.len);
    ir_buf_reset(&p->body);
}

static const irn_client_cbs cards_cbs = {on_cards_head, on_cards_body, on_cards_done};

static void start_get(gw_control *c, probe *p, const char *suffix, const irn_client_cbs *cbs,
                      irn_client **out) {
    const gw_replica *r = &c->app->fleet.replicas[p->replica];
    char path[600];
    snprintf(path, sizeof path, "%s%s", r->url.path, suffix);
    uint64_t to = c->app->cfg.health.timeout;
    irn_client_req q = {.host = r->url.host,
                        .port = r->url.port,
                        .method = "GET",
                        .path = path,
                        .connect_timeout_ns = to,
                        .head_timeout_ns = to,
                        .idle_timeout_ns = to};
    p->status = 0;
    if (irn_client_request(c->pool, &q, cbs, p, out)) *out = NULL;
}

static void on_tick(uv_timer_t *t) {
    gw_control *c = t->data;
    if (c->stopping) return;
    uint64_t now = ir_now_ns();
    bool cards = now - c->last_cards >= c->cards_every || c->last_cards == 0;
    if (cards) c->last_cards = now;
    for (size_t i = 0; i < c->app->fleet.nreplicas; i++) {
        probe *p = &c->probes[i];
        if (!p->health) start_get(c, p, "/health", &probe_cbs, &p->health);
        if (cards && !p->cards) start_get(c, p, "/v1/models", &cards_cbs, &p->cards);
    }
}

/* ---- admin -------------------------------------------------------------------------------------
 */

static void answer_explain(gw_control *c, irn_request *req, irn_resp *resp) {
    if (strcmp(req->method, "POST") != 0) {
        irn_header allow = {"allow", 5, "POST", 4};
        ir_buf b;
        ir_buf_init(&b, 0);
        irn_error_body(&b, 405, "Method Not Allowed", "POST a request body to explain");
        irn_resp_send(resp, 405, "application/json", b.data, b.len, &allow, 1);
        ir_buf_free(&b);
        return;
    }
    ir_buf b;
    ir_buf_init(&b, 0);
    int status =
        gw_explain(c->app, req->target, req->body.data ? req->body.data : "", req->body.len, &b);
    irn_resp_send(resp, status, "application/json", b.data, b.len, NULL, 0);
    ir_buf_free(&b);
}

static void on_admin(void *ud, irn_request *req, irn_resp *resp) {
    gw_control *c = ud;
    if (strcmp(req->path, "/health") == 0) {
        irn_resp_send(resp, 200, NULL, "", 0, NULL, 0);
    } else if (strcmp(req->path, "/ready") == 0) {
        gw_ready_answer(c->app, resp, NULL, 0);
    } else if (strcmp(req->path, "/admin/explain") == 0) {
        answer_explain(c, req, resp);
    } else if (strcmp(req->path, "/admin/state") == 0) {
        ir_buf b;
        ir_buf_init(&b, 0);
        gw_state_render(c->app, &b);
        irn_resp_send(resp, 200, "application/json", b.data, b.len, NULL, 0);
        ir_buf_free(&b);
    } else if (strcmp(req->path, "/metrics") == 0) {
        ir_buf b;
        ir_buf_init(&b, 0);
        gw_metrics_render(c->app, &b);
        irn_resp_send(resp, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, NULL,
                      0);
        ir_buf_free(&b);
    } else {
        irn_resp_send_error(resp, 404, "Not Found", "Not Found");
    }
}

int gw_metrics_render(gw_app *app, ir_buf *o) {
    gw_stats *s = &app->stats;
    ir_buf_append_lit(o, "# HELP inferrail_build_info The gateway's version and git commit.\n"
                         "# TYPE inferrail_build_info gauge\n"
                         "inferrail_build_info{version=\"");
    gw_prom_label_value(o, ir_version());
    ir_buf_append_lit(o, "\",commit=\"");
    gw_prom_label_value(o, ir_commit());
    ir_buf_append_lit(o, "\"} 1\n");
#define C(name, help, v)                                                                           \
    ir_buf_appendf(o, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name,        \
                   (unsigned long long)atomic_load(&(v)))
    C("inferrail_requests_received_total", "Requests received on the client port.", s->requests);
    ir_buf_appendf(o, "# HELP inferrail_responses_total Responses by status class.\n"
                      "# TYPE inferrail_responses_total counter\n");
    ir_buf_appendf(o, "inferrail_responses_total{class=\"2xx\"} %llu\n",
                   (unsigned long long)atomic_load(&s->responses_2xx));
    ir_buf_appendf(o, "inferrail_responses_total{class=\"4xx\"} %llu\n",
                   (unsigned long long)atomic_load(&s->responses_4xx));
    ir_buf_appendf(o, "inferrail_responses_total{class=\"5xx\"} %llu\n",
                   (unsigned long long)atomic_load(&s->responses_5xx));
    C("inferrail_upstream_retries_total",
      "Attempts moved to another replica before the first byte.", s->retries);
    C("inferrail_client_disconnects_total", "Clients that left before their response ended.",
      s->client_disconnects);
    C("inferrail_rejected_full_total", "Requests answered 503 because every replica was full.",
      s->rejected_full);
    C("inferrail_upstream_errors_total", "Failed upstream attempts.", s->upstream_errors);
#undef C
    const char *gauges[][2] = {
        {"inferrail_replica_in_flight", "Requests in flight to the replica."},
        {"inferrail_replica_pending", "Requests waiting for the replica's response head."},
        {"inferrail_replica_healthy",
         "1 when the replica passes its health checks and is not ejected."},
        {"inferrail_replica_requests_total", "Requests sent to the replica."},
        {"inferrail_replica_failures_total", "Failed attempts on the replica."},
    };
    uint64_t now = ir_now_ns();
    for (size_t g = 0; g < IR_ARRAY_LEN(gauges); g++) {
        bool counter = strstr(gauges[g][0], "_total") != NULL;
        ir_buf_appendf(o, "# HELP %s %s\n# TYPE %s %s\n", gauges[g][0], gauges[g][1], gauges[g][0],
                       counter ? "counter" : "gauge");
        for (size_t i = 0; i < app->fleet.nreplicas; i++) {
            gw_replica *r = &app->fleet.replicas[i];
            unsigned long long v = 0;
            switch (g) {
            case 0:
                v = atomic_load(&r->in_flight);
                break;
            case 1:
                v = atomic_load(&r->pending);
                break;
            case 2:
                v = gw_replica_available(r, now);
                break;
            case 3:
                v = atomic_load(&r->requests);
                break;
            case 4:
                v = atomic_load(&r->failures);
                break;
            }
            ir_buf_appendf(o, "%s{replica=\"", gauges[g][0]);
            gw_prom_label_value(o, r->cfg->id);
            ir_buf_appendf(o, "\"} %llu\n", v);
        }
    }
    gw_metrics_render_kv(&app->fleet, o);
    gw_metrics_render_load(app, o);
    return 0;
}

/* ---- lifetime
 * ------------------------------------------------------------------------------------ */

gw_control *gw_control_new(gw_app *app, uv_loop_t *loop) {
    gw_control *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->app = app;
    c->loop = loop;
    c->probes = calloc(app->fleet.nreplicas ? app->fleet.nreplicas : 1, sizeof *c->probes);
    if (!c->probes) {
        free(c);
        return NULL;
    }
    for (size_t i = 0; i < app->fleet.nreplicas; i++) {
        c->probes[i].ctl = c;
        c->probes[i].replica = (uint32_t)i;
        ir_buf_init(&c->probes[i].body, 4 << 20);
    }
    c->cards_every = 10ull * 1000000000ull; /* model cards change rarely */
    return c;
}

int gw_control_start(gw_control *c) {
    irn_server_cfg sc;
    irn_server_cfg_init(&sc);
    sc.host = c->app->admin_host;
    sc.port = c->app->admin_port;
    sc.on_request = on_admin;
    sc.ud = c;
    int rc = irn_server_new(c->loop, &sc, &c->admin);
    if (rc) return rc;
    c->pool = irn_pool_new(c->loop, NULL);
    uv_timer_init(c->loop, &c->tick);
    c->tick.data = c;
    uint64_t every = c->app->cfg.health.interval / 1000000;
    uv_timer_start(&c->tick, on_tick, 0, every ? every : 1);
    c->started = true;
    rc = gw_load_start(c->app);
    if (rc) IR_WARN("load", "cannot start the engine scraper: %s", irn_strerror(rc));
    return gw_decisions_open(c->app) ? UV_EINVAL : 0;
}

void gw_control_stop(gw_control *c) {
    if (c->stopping) return;
    c->stopping = true;
    if (!c->started) return; /* gw_control_start failed: nothing to close */
    uv_timer_stop(&c->tick);
    uv_close((uv_handle_t *)&c->tick, NULL);
    gw_load_stop(c->app);
    if (c->admin) {
        irn_server_close(c->admin, NULL, NULL);
        irn_server_close_all(c->admin);
        c->admin = NULL;
    }
    if (c->pool) irn_pool_close(c->pool, NULL, NULL);
    c->pool = NULL;
}

void gw_control_free(gw_control *c) {
    if (!c) return;
    gw_load_stop(c->app);
    gw_decisions_close(c->app); /* the workers are joined: no decision comes after */
    for (size_t i = 0; i < c->app->fleet.nreplicas; i++) ir_buf_free(&c->probes[i].body);
    free(c->probes);
    free(c);
}
