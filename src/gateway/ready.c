/* ready.c: readiness (/ready) and the admin state page (/admin/state), on the
 * admin port and, through gw_ready_answer, on the client port. */
#include "gateway/gateway.h"

#include <string.h>

bool gw_app_ready(gw_app *app, uint64_t now, ir_buf *why) {
    if (atomic_load(&app->stopping)) {
        if (why) ir_buf_append_lit(why, "{\"ready\":false,\"reason\":\"draining\"}");
        return false;
    }
    bool ready = true;
    const gw_fleet *f = &app->fleet;
    const gw_model_list *ml = gw_fleet_models(f);
    for (size_t m = 0; m < ml->n; m++) {
        bool any = false;
        for (size_t i = 0; i < f->nreplicas && !any; i++)
            any = gw_replica_serves(&f->replicas[i], ml->items[m]->index) &&
                  gw_replica_available(&f->replicas[i], now);
        if (any) continue;
        if (why) {
            ir_buf_append_str(why, ready ? "{\"ready\":false,\"reason\":\"no healthy replica\","
                                           "\"models\":["
                                         : ",");
            const char *name = ml->items[m]->cfg->name;
            ir_json_append_string(why, name, strlen(name));
        }
        ready = false;
    }
    if (why) ir_buf_append_str(why, ready ? "{\"ready\":true}" : "]}");
    return ready;
}

int gw_ready_answer(gw_app *app, irn_resp *resp, const irn_header *headers, size_t nheaders) {
    ir_buf b;
    ir_buf_init(&b, 64 * 1024);
    bool ok = gw_app_ready(app, ir_now_ns(), &b);
    int rc =
        irn_resp_send(resp, ok ? 200 : 503, "application/json", b.data, b.len, headers, nheaders);
    ir_buf_free(&b);
    return rc;
}

static void json_str(ir_buf *o, const char *s) {
    ir_json_append_string(o, s, strlen(s));
}

static void state_model(gw_app *app, const gw_model *m, ir_buf *o) {
    ir_buf_append_lit(o, "{\"name\":");
    json_str(o, m->cfg->name);
    ir_buf_append_lit(o, ",\"policy\":");
    json_str(o, m->policy ? irp_policy_name(m->policy) : "none");
    ir_buf_append_lit(o, ",\"replicas\":[");
    bool first = true;
    for (size_t i = 0; i < app->fleet.nreplicas; i++) {
        const gw_replica *r = &app->fleet.replicas[i];
        /* A slot whose replica left (a reload, DNS) keeps its old config: not listed. */
        if (!gw_replica_member(r) || !gw_replica_serves(r, m->index)) continue;
        if (!first) ir_buf_append_lit(o, ",");
        json_str(o, r->cfg->id);
        first = false;
    }
    ir_buf_append_lit(o, "]");
    gw_metrics_state_model(app, m, o);
    ir_buf_append_lit(o, "}");
}

static void state_replica(gw_app *app, gw_replica *r, uint64_t now, ir_buf *o) {
    ir_buf_append_lit(o, "{\"id\":");
    json_str(o, r->cfg->id);
    ir_buf_append_lit(o, ",\"url\":");
    json_str(o, r->cfg->url);
    ir_buf_append_lit(o, ",\"models\":[");
    bool first = true;
    const gw_model_list *ml = gw_fleet_models(&app->fleet);
    for (size_t m = 0; m < ml->n; m++) {
        if (!gw_replica_serves(r, ml->items[m]->index)) continue;
        if (!first) ir_buf_append_lit(o, ",");
        json_str(o, ml->items[m]->cfg->name);
        first = false;
    }
    uint64_t until = atomic_load(&r->ejected_until);
    ir_buf_appendf(o,
                   "],\"healthy\":%s,\"probes_pass\":%s,\"ejected\":%s,\"ejected_ms\":%llu,"
                   "\"in_flight\":%u,\"pending\":%u,\"prompt_tokens\":%llu,"
                   "\"pending_prompt_tokens\":%llu,\"attempts\":%llu,\"failures\":%llu,"
                   "\"predicted_cached_tokens\":%llu,\"reported_cached_tokens\":%llu",
                   gw_replica_available(r, now) ? "true" : "false",
                   atomic_load(&r->healthy) ? "true" : "false", until > now ? "true" : "false",
                   (unsigned long long)(until > now ? (until - now) / 1000000 : 0),
                   (unsigned)atomic_load(&r->in_flight), (unsigned)atomic_load(&r->pending),
                   (unsigned long long)atomic_load(&r->prompt_tokens),
                   (unsigned long long)atomic_load(&r->pending_tokens),
                   (unsigned long long)atomic_load(&r->requests),
                   (unsigned long long)atomic_load(&r->failures),
                   (unsigned long long)atomic_load(&r->predicted_tokens),
                   (unsigned long long)atomic_load(&r->reported_tokens));
    gw_metrics_state_replica(app, r, o);
    gw_engine_state_json(app, r, now, o); /* the engine's own load report (load.c) */
    ir_buf_append_lit(o, "}");
}

void gw_state_render(gw_app *app, ir_buf *o) {
    uint64_t now = ir_now_ns();
    ir_buf_append_lit(o, "{\"version\":");
    json_str(o, ir_version());
    ir_buf_append_lit(o, ",\"commit\":");
    json_str(o, ir_commit());
    ir_buf_appendf(o, ",\"time_ms\":%.0f,\"draining\":%s,\"ready\":%s,\"workers\":%zu",
                   ir_wall_time() * 1000, atomic_load(&app->stopping) ? "true" : "false",
                   gw_app_ready(app, now, NULL) ? "true" : "false", app->nworkers);
    ir_buf_append_lit(o, ",\"models\":[");
    const gw_model_list *ml = gw_fleet_models(&app->fleet);
    for (size_t m = 0; m < ml->n; m++) {
        if (m) ir_buf_append_lit(o, ",");
        state_model(app, ml->items[m], o);
    }
    ir_buf_append_lit(o, "],\"replicas\":[");
    bool first = true;
    for (size_t i = 0; i < app->fleet.nreplicas; i++) {
        gw_replica *r = &app->fleet.replicas[i];
        if (!gw_replica_member(r)) continue;
        if (!first) ir_buf_append_lit(o, ",");
        first = false;
        state_replica(app, r, now, o);
    }
    ir_buf_append_lit(o, "]}");
}
