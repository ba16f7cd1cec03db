/* decision.c: the decision log's side in the gateway: one JSON line per routing
 * decision of a sampled request (observability.decision_log), written to the
 * obs module's queue. Never the prompt: counts, ids and loads only. */
#include "gateway/request.h"

#include <string.h>

int gw_decisions_open(gw_app *app) {
    const gw_decision_log_cfg *c = &app->cfg.observability.decision_log;
    if (c->sample_rate <= 0 || !c->path) return 0;
    char err[512];
    iro_dlog_cfg dc = {.path = c->path, .sample_rate = c->sample_rate};
    app->dlog = iro_dlog_open(&dc, err, sizeof err);
    if (!app->dlog) {
        IR_ERROR("decisions", "observability.decision_log.path: %s", err);
        return -1;
    }
    IR_INFO("decisions", "logging %.4g of the routing decisions to %s", c->sample_rate, c->path);
    atomic_store_explicit(&app->fleet.dlog, app->dlog, memory_order_release);
    return 0;
}

void gw_decisions_close(gw_app *app) {
    atomic_store_explicit(&app->fleet.dlog, NULL, memory_order_release);
    iro_dlog_close(app->dlog);
    app->dlog = NULL;
}

static void str(ir_buf *o, const char *key, const char *v) {
    ir_buf_appendf(o, ",\"%s\":", key);
    ir_json_append_string(o, v, strlen(v));
}

static void candidate(ir_buf *o, const gw_fleet *f, const irp_candidate *c, bool first) {
    const gw_replica *r = &f->replicas[c->replica];
    ir_buf_append_str(o, first ? "{\"replica\":" : ",{\"replica\":");
    ir_json_append_string(o, r->cfg->id, strlen(r->cfg->id));
    ir_buf_appendf(o,
                   ",\"in_flight\":%u,\"pending\":%u,\"prompt_tokens_in_flight\":%llu,"
                   "\"pending_prompt_tokens\":%llu,\"predicted_cached_tokens\":%llu,"
                   "\"kv_capacity_blocks\":%llu,\"engine\":",
                   c->in_flight, c->pending, (unsigned long long)c->prompt_tokens_in_flight,
                   (unsigned long long)c->pending_prompt_tokens,
                   (unsigned long long)c->predicted_cached_tokens,
                   (unsigned long long)c->kv_capacity_blocks);
    if (c->engine_fresh)
        ir_buf_appendf(o, "{\"running\":%u,\"waiting\":%u,\"kv_usage\":%.4f}}", c->engine_running,
                       c->engine_waiting, c->engine_kv_usage);
    else
        ir_buf_append_lit(o, "null}");
}

/* The replicas of the model that were not offered, and why. */
static void left_out(ir_buf *o, const gw_req *r, const irp_candidate *cand, size_t n,
                     uint64_t now) {
    const gw_fleet *f = &r->w->app->fleet;
    ir_buf_append_lit(o, ",\"left_out\":[");
    bool first = true;
    for (size_t i = 0; i < f->nreplicas; i++) {
        const gw_replica *rep = &f->replicas[i];
        if (!gw_replica_serves(rep, r->model->index)) continue;
        bool offered = false;
        for (size_t k = 0; k < n && !offered; k++) offered = cand[k].replica == i;
        if (offered) continue;
        const char *why = !atomic_load(&rep->healthy)              ? "unhealthy"
                          : atomic_load(&rep->no_rank)             ? "no such rank"
                          : atomic_load(&rep->ejected_until) > now ? "ejected"
                          : (r->tried[i / 64] >> (i % 64)) & 1     ? "tried"
                                                                   : "full";
        ir_buf_append_str(o, first ? "{\"replica\":" : ",{\"replica\":");
        ir_json_append_string(o, rep->cfg->id, strlen(rep->cfg->id));
        str(o, "state", why);
        ir_buf_append_lit(o, "}");
        first = false;
    }
    ir_buf_append_lit(o, "]");
}

void gw_decision_log(gw_req *r, const irp_candidate *cand, size_t n, size_t winner) {
    gw_app *app = r->w->app;
    if (!app->dlog || !iro_dlog_sampled(app->dlog, r->rid, strlen(r->rid))) return;
    const gw_fleet *f = &app->fleet;
    uint64_t now = ir_now_ns();
    ir_buf o;
    ir_buf_init(&o, 1 << 20);
    ir_buf_appendf(&o, "{\"ts\":%.6f", ir_wall_time());
    str(&o, "request_id", r->rid);
    str(&o, "model", r->model->cfg->name);
    str(&o, "policy", irp_policy_name(r->policy));
    ir_buf_appendf(&o, ",\"attempt\":%d,\"prompt_tokens\":%llu,\"predicted\":%s", r->attempt + 1,
                   (unsigned long long)r->prompt_tokens,
                   r->prompt.state == GW_PREDICT_OK ? "true" : "false");
    str(&o, "winner", f->replicas[cand[winner].replica].cfg->id);
    ir_buf_appendf(&o, ",\"winner_predicted_cached_tokens\":%llu,\"candidates\":[",
                   (unsigned long long)cand[winner].predicted_cached_tokens);
    for (size_t i = 0; i < n; i++) candidate(&o, f, &cand[i], i == 0);
    ir_buf_append_lit(&o, "]");
    left_out(&o, r, cand, n, now);
    if (ir_buf_append_lit(&o, "}") == 0)
        iro_dlog_write(app->dlog, o.data, o.len);
    else
        iro_dlog_write(app->dlog, "", SIZE_MAX); /* too large: counted as dropped */
    ir_buf_free(&o);
}

/* One line per mismatch of a sampled request: {"ts", "event": "parity_mismatch",
 * "request_id", "replica", "predicted_blocks", "shown_blocks"}. */
void gw_decision_log_parity(const gw_fleet *f, const gw_parity *p, uint32_t shown) {
    iro_dlog *d = atomic_load_explicit(&((gw_fleet *)f)->dlog, memory_order_acquire);
    if (!d || !iro_dlog_sampled(d, p->rid, strlen(p->rid))) return;
    ir_buf o;
    ir_buf_init(&o, 4096);
    ir_buf_appendf(&o, "{\"ts\":%.6f,\"event\":\"parity_mismatch\"", ir_wall_time());
    str(&o, "request_id", p->rid);
    str(&o, "replica", f->replicas[p->slot].cfg->id);
    ir_buf_appendf(&o, ",\"predicted_blocks\":%u,\"shown_blocks\":%u}", p->n, shown);
    iro_dlog_write(d, o.data, o.len);
    ir_buf_free(&o);
}
