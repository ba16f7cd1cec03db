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
    for (size_t m = 0; m < f->nmodels; m++) {
        bool any = false;
        for (size_t i = 0; i < f->nreplicas && !any; i++)
            any = gw_replica_serves(&f->replicas[i], (uint32_t)m) &&
                  gw_replica_available(&f->replicas[i], now);
        if (any) continue;
        if (why) {
            ir_buf_append_str(why, ready ? "{\"ready\":false,\"reason\":\"no healthy replica\","
                                           "\"models\":["
                                         : ",");
            const char *name = f->models[m].cfg->name;
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

void gw_state_render(gw_app *app, ir_buf *o) {
    uint64_t now = ir_now_ns();
    ir_buf_append_lit(o, "{\"version\":");
    ir_json_append_string(o, ir_version(), strlen(ir_version()));
    ir_buf_append_lit(o, ",\"commit\":");
    ir_json_append_string(o, ir_commit(), strlen(ir_commit()));
    ir_buf_appendf(o, ",\"draining\":%s,\"ready\":%s,\"workers\":%zu,\"replicas\":[",
                   atomic_load(&app->stopping) ? "true" : "false",
                   gw_app_ready(app, now, NULL) ? "true" : "false", app->nworkers);
    bool first = true;
    for (size_t i = 0; i < app->fleet.nreplicas; i++) {
        gw_replica *r = &app->fleet.replicas[i];
        if (!gw_replica_member(r)) continue;
        ir_buf_append_str(o, first ? "{\"id\":" : ",{\"id\":");
        first = false;
        ir_json_append_string(o, r->cfg->id, strlen(r->cfg->id));
        ir_buf_append_lit(o, ",\"url\":");
        ir_json_append_string(o, r->cfg->url, strlen(r->cfg->url));
        ir_buf_appendf(o, ",\"healthy\":%s,\"in_flight\":%u,\"pending\":%u",
                       gw_replica_available(r, now) ? "true" : "false",
                       (unsigned)atomic_load(&r->in_flight), (unsigned)atomic_load(&r->pending));
        gw_engine_state_json(app, r, now, o);
        ir_buf_append_lit(o, "}");
    }
    ir_buf_append_lit(o, "]}");
}

void gw_prom_label_value(ir_buf *o, const char *s) {
    for (; *s; s++) {
        if (*s == '\\')
            ir_buf_append_lit(o, "\\\\");
        else if (*s == '"')
            ir_buf_append_lit(o, "\\\"");
        else if (*s == '\n')
            ir_buf_append_lit(o, "\\n");
        else
            ir_buf_append(o, s, 1);
    }
}
