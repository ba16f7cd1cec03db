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

/* One GET out to a replica: its request, when it went out (bounded whole: bound_gets)
 * and the status of its answer. */
typedef struct probe_get {
    irn_client *c;
    uint64_t since;
    int status;
} probe_get;

struct probe {
    gw_control *ctl;
    uint32_t replica;
    probe_get health, cards;
    ir_buf body;
    bool body_over; /* the cards' page passed GW_CARDS_MAX_BYTES: not read at all */
    uint32_t fails, passes;
    uint32_t gen; /* the replica's gen the counts are for */
};

/* ---- health probes --------------------------------------------------------------------------- */

static void on_probe_head(void *ud, int status, const irn_header *h, size_t n) {
    ((probe *)ud)->health.status = status;
}
static void on_probe_body(void *ud, const char *d, size_t n) {}

static void on_probe_done(void *ud, int err) {
    probe *p = ud;
    p->health.c = NULL;
    gw_app *app = p->ctl->app;
    gw_replica *r = &app->fleet.replicas[p->replica];
    if (!gw_replica_member(r) || p->gen != atomic_load(&r->gen)) return; /* left meanwhile */
    bool ok = err == 0 && p->health.status == 200;
    const gw_health_cfg *h = &gw_live(app)->health;
    if (ok) {
        p->fails = 0;
        if (++p->passes >= (uint32_t)h->healthy_threshold && !atomic_load(&r->healthy)) {
            atomic_store(&r->healthy, 1);
            atomic_store(&r->ejections, 0);
            /* Its probes say it is back (a restart, say): a passive ejection ends too. */
            atomic_store(&r->ejected_until, 0);
            IR_INFO("health", "replica %s is healthy again", r->cfg->id);
        }
    } else {
        p->passes = 0;
        if (++p->fails >= (uint32_t)h->unhealthy_threshold && atomic_load(&r->healthy)) {
            atomic_store(&r->healthy, 0);
            IR_WARN("health", "replica %s is unhealthy: %s", r->cfg->id,
                    err ? irn_strerror(err) : "status not 200");
            if (!p->ctl->stopping) gw_app_replica_down(app);
        }
    }
}

static const irn_client_cbs probe_cbs = {on_probe_head, on_probe_body, on_probe_done};

static void on_cards_head(void *ud, int status, const irn_header *h, size_t n) {
    ((probe *)ud)->cards.status = status;
}
/* Past the cap the page is dropped whole: a later, smaller piece appended after a refused
 * one would splice the page into other JSON (an ASan run read such a page's card). */
static void on_cards_body(void *ud, const char *d, size_t n) {
    probe *p = ud;
    if (!p->body_over && ir_buf_append(&p->body, d, n)) p->body_over = true;
}
static void on_cards_done(void *ud, int err) {
    probe *p = ud;
    p->cards.c = NULL;
    if (err == 0 && p->cards.status == 200 && p->body.len && !p->body_over)
        gw_cards_update(p->ctl->app->cards, p->replica, p->body.data, p->body.len);
    ir_buf_reset(&p->body);
    p->body_over = false;
}

static const irn_client_cbs cards_cbs = {on_cards_head, on_cards_body, on_cards_done};

static void start_get(gw_control *c, probe *p, const char *suffix, const irn_client_cbs *cbs,
                      probe_get *g) {
    const gw_replica *r = &c->app->fleet.replicas[p->replica];
    char path[600];
    snprintf(path, sizeof path, "%s%s", r->url.path, suffix);
    uint64_t to = gw_live(c->app)->health.timeout_ns;
    irn_client_req q = {.host = r->url.host,
                        .port = r->url.port,
                        .method = "GET",
                        .path = path,
                        /* its configured headers too: vLLM's --api-key guards /v1/models */
                        .headers = r->extra,
                        .nheaders = r->nextra,
                        .connect_timeout_ns = to,
                        .head_timeout_ns = to,
                        .idle_timeout_ns = to};
    g->status = 0;
    g->since = ir_now_ns();
    if (irn_client_request(c->pool, &q, cbs, p, &g->c)) g->c = NULL;
}

/* The timeouts of a GET bound its connect, its head and each gap between bytes, not its
 * whole: an engine that answers /health or /v1/models with an endless body would hold
 * the probe (and the control loop's CPU) for good, and a replica could never be marked
 * down. A probe gets health.timeout whole; the model cards, ten times that. */
static void bound_gets(gw_control *c, probe *p, uint64_t now) {
    uint64_t to = gw_live(c->app)->health.timeout_ns;
    if (p->health.c && now - p->health.since > to) irn_client_cancel(p->health.c);
    if (p->cards.c && now - p->cards.since > 10 * to) irn_client_cancel(p->cards.c);
}

static void on_tick(uv_timer_t *t) {
    gw_control *c = t->data;
    if (c->stopping) return;
    gw_fleet_sweep(&c->app->fleet); /* tokenizers a reload replaced, once unused */
    uint64_t now = ir_now_ns();
    bool cards = now - c->last_cards >= c->cards_every || c->last_cards == 0;
    if (cards) c->last_cards = now;
    for (size_t i = 0; i < c->app->fleet.nreplicas; i++) {
        probe *p = &c->probes[i];
        gw_replica *r = &c->app->fleet.replicas[i];
        bound_gets(c, p, now); /* a member's or not: a slot waits for its probes to end */
        if (!gw_replica_member(r)) continue;
        uint32_t gen = atomic_load(&r->gen);
        if (p->gen != gen && !p->health.c && !p->cards.c) { /* a new member in this slot */
            p->gen = gen;
            p->fails = p->passes = 0;
        }
        if (p->gen != gen) continue; /* the old member's probes are still out */
        if (!p->health.c) start_get(c, p, gw_live(c->app)->health.path, &probe_cbs, &p->health);
        if (cards && !p->cards.c) start_get(c, p, "/v1/models", &cards_cbs, &p->cards);
    }
}

/* ---- admin -------------------------------------------------------------------------------------
 */

static void answer_explain(gw_control *c, irn_request *req, irn_resp *resp) {
    ir_buf b;
    ir_buf_init(&b, 0);
    int status =
        gw_explain(c->app, req->target, req->body.data ? req->body.data : "", req->body.len, &b);
    irn_resp_send(resp, status, "application/json", b.data, b.len, NULL, 0);
    ir_buf_free(&b);
}

/* GET /: the console, one self-contained page (src/gateway/console/index.html, compiled
 * in by cmake/embed.cmake); it reaches nothing but this port. */
static void answer_console(gw_control *c, irn_request *req, irn_resp *resp) {
    (void)c, (void)req;
    static const char csp[] = "default-src 'none'; script-src 'unsafe-inline'; "
                              "style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'";
    irn_header hs[] = {{"content-security-policy", 23, csp, sizeof csp - 1},
                       {"cache-control", 13, "no-store", 8}};
    irn_resp_send(resp, 200, "text/html; charset=utf-8", gw_console_html, gw_console_html_len, hs,
                  IR_ARRAY_LEN(hs));
}

static void answer_health(gw_control *c, irn_request *req, irn_resp *resp) {
    (void)c, (void)req;
    irn_resp_send(resp, 200, NULL, "", 0, NULL, 0);
}

static void answer_ready(gw_control *c, irn_request *req, irn_resp *resp) {
    (void)req;
    gw_ready_answer(c->app, resp, NULL, 0);
}

static void answer_state(gw_control *c, irn_request *req, irn_resp *resp) {
    (void)req;
    ir_buf b;
    ir_buf_init(&b, 0);
    gw_state_render(c->app, &b);
    irn_resp_send(resp, 200, "application/json", b.data, b.len, NULL, 0);
    ir_buf_free(&b);
}

static void answer_metrics(gw_control *c, irn_request *req, irn_resp *resp) {
    (void)req;
    ir_buf b;
    ir_buf_init(&b, 0);
    gw_metrics_render(c->app, &b);
    irn_resp_send(resp, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, NULL, 0);
    ir_buf_free(&b);
}

/* The admin port's routes: every one read-only (GET, and HEAD) but explain. */
typedef struct admin_route {
    const char *path;
    bool post; /* POST only; else GET and HEAD */
    void (*answer)(gw_control *c, irn_request *req, irn_resp *resp);
} admin_route;

static const admin_route admin_routes[] = {
    {"/", false, answer_console},        {"/health", false, answer_health},
    {"/ready", false, answer_ready},     {"/admin/state", false, answer_state},
    {"/metrics", false, answer_metrics}, {"/admin/explain", true, answer_explain},
};

static bool method_fits(const admin_route *r, const char *method) {
    if (r->post) return strcmp(method, "POST") == 0;
    return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

static void on_admin(void *ud, irn_request *req, irn_resp *resp) {
    gw_control *c = ud;
    for (size_t i = 0; i < IR_ARRAY_LEN(admin_routes); i++) {
        const admin_route *r = &admin_routes[i];
        if (strcmp(req->path, r->path) != 0) continue;
        if (method_fits(r, req->method)) {
            r->answer(c, req, resp);
            return;
        }
        const char *allow = r->post ? "POST" : "GET, HEAD";
        irn_header h = {"allow", 5, allow, strlen(allow)};
        ir_buf b;
        ir_buf_init(&b, 0);
        irn_error_body(&b, 405, "Method Not Allowed",
                       r->post ? "POST a request body to explain" : "Method Not Allowed");
        irn_resp_send(resp, 405, "application/json", b.data, b.len, &h, 1);
        ir_buf_free(&b);
        return;
    }
    irn_resp_send_error(resp, 404, "Not Found", "Not Found");
}

/* ---- lifetime
 * ------------------------------------------------------------------------------------ */

gw_control *gw_control_new(gw_app *app, uv_loop_t *loop) {
    gw_control *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->app = app;
    c->loop = loop;
    c->probes = calloc(app->fleet.nslots, sizeof *c->probes);
    if (!c->probes) {
        free(c);
        return NULL;
    }
    for (size_t i = 0; i < app->fleet.nslots; i++) {
        c->probes[i].ctl = c;
        c->probes[i].replica = (uint32_t)i;
        ir_buf_init(&c->probes[i].body, GW_CARDS_MAX_BYTES);
    }
    c->cards_every = 10ull * 1000000000ull; /* model cards change rarely */
    return c;
}

/* The admin port takes server.*'s limits (a probe, a scraper or an explain is a
 * client too), with a body cap of its own and a fixed number of connections, so
 * that no number of idle or half-sent admin requests takes the process's files or
 * memory from the client port. */
#define ADMIN_MAX_CONNECTIONS 64
#define ADMIN_MAX_BODY        (16u << 20)

int gw_control_start(gw_control *c) {
    const gw_server_cfg *s = &c->app->cfg.server;
    irn_server_cfg sc;
    irn_server_cfg_init(&sc);
    sc.host = c->app->admin_host;
    sc.port = c->app->admin_port;
    sc.max_header_bytes = s->max_header_bytes;
    sc.max_headers = (size_t)s->max_headers;
    sc.max_body_bytes = IR_MIN(s->max_body_bytes, ADMIN_MAX_BODY);
    sc.header_timeout_ns = s->header_read_timeout_ns;
    sc.body_timeout_ns = s->request_timeout_ns;
    sc.max_connections = ADMIN_MAX_CONNECTIONS;
    sc.on_request = on_admin;
    sc.ud = c;
    int rc = irn_server_new(c->loop, &sc, &c->admin);
    if (rc) return rc;
    c->pool = irn_pool_new(c->loop, NULL);
    uv_timer_init(c->loop, &c->tick);
    c->tick.data = c;
    uint64_t every = c->app->cfg.health.interval_ns / 1000000;
    uv_timer_start(&c->tick, on_tick, 0, every ? every : 1);
    c->started = true;
    rc = gw_load_start(c->app);
    if (rc) IR_WARN("load", "cannot start the engine scraper: %s", irn_strerror(rc));
    return 0;
}

void gw_control_drain(gw_control *c) {
    if (c->stopping) return;
    c->stopping = true;
    if (!c->started) return; /* gw_control_start failed: nothing to close */
    uv_timer_stop(&c->tick);
    uv_close((uv_handle_t *)&c->tick, NULL);
    gw_load_stop(c->app);
    if (c->pool) irn_pool_close(c->pool, NULL, NULL);
    c->pool = NULL;
}

void gw_control_stop(gw_control *c) {
    gw_control_drain(c);
    if (c->admin) {
        irn_server_close(c->admin, NULL, NULL);
        irn_server_close_all(c->admin);
        c->admin = NULL;
    }
}

void gw_control_free(gw_control *c) {
    if (!c) return;
    gw_load_stop(c->app);
    gw_decisions_close(c->app); /* the workers are joined: no decision comes after */
    gw_trace_close(c->app);
    for (size_t i = 0; i < c->app->fleet.nslots; i++) ir_buf_free(&c->probes[i].body);
    free(c->probes);
    free(c);
}
