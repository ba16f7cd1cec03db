/* explain.c: POST /admin/explain, the routing decision for a body, with every
 * replica's state and prediction, without forwarding or recording anything. It runs
 * the same pure steps as the request path (resolve, tokenize, hash, match, offer,
 * choose), on the admin thread. Stateful policies do advance (round_robin's turn,
 * sglang_cache_aware's trees), as one more request would. */
#include "gateway/request.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The value of the query's parameter `path` (a whole parameter name, after `?` or
 * `&`), or NULL. */
static const char *path_param(const char *target) {
    const char *q = strchr(target, '?');
    for (const char *p = q; p; p = strchr(p + 1, '&'))
        if (strncmp(p + 1, "path=", 5) == 0) return p + 1;
    return NULL;
}

bool gw_query_value(const char *v, size_t n, char *out, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        if (c == '%') {
            if (i + 2 >= n) return false;
            int hi = ir_hexval(v[i + 1]), lo = ir_hexval(v[i + 2]);
            if (hi < 0 || lo < 0) return false;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (!c) return false; /* a NUL (%00) would end the value early */
        if (o + 1 >= cap) return false;
        out[o++] = c;
    }
    out[o] = '\0';
    return true;
}

/* chat or completions: ?path= when given, else whether the body has `messages`. */
static int which_path(const char *target, const char *body, size_t len, bool *chat) {
    const char *p = path_param(target);
    if (p) {
        p += 5;
        char v[32];
        if (!gw_query_value(p, strcspn(p, "&"), v, sizeof v)) return -1;
        if (strcmp(v, "/v1/chat/completions") == 0)
            *chat = true;
        else if (strcmp(v, "/v1/completions") == 0)
            *chat = false;
        else
            return -1;
        return 0;
    }
    ir_json_span sp;
    *chat = ir_json_scan_key(body, len, "messages", &sp, GW_JSON_MAX_DEPTH) == IR_JSON_FOUND;
    return 0;
}

/* Why replica r cannot take the request now; NULL when it can. */
static json_t *number_or_null(double v) {
    return isnan(v) ? json_null() : json_real(v);
}

static json_t *candidate_json(const gw_fleet *f, const gw_replica *r, const char *why,
                              const irp_candidate *c, const irp_explain *ex) {
    json_t *o = json_object();
    json_object_set_new(o, "replica", json_string(r->cfg->id));
    json_object_set_new(o, "eligible", json_boolean(why == NULL));
    if (why) json_object_set_new(o, "reason", json_string(why));
    json_object_set_new(o, "predicted_cached_tokens",
                        json_integer(c ? (json_int_t)c->predicted_cached_tokens : 0));
    json_object_set_new(o, "predicted_cpu_tokens",
                        json_integer(c ? (json_int_t)c->predicted_cpu_tokens : 0));
    gw_index_source_json(f, r->index, o);
    json_object_set_new(o, "in_flight", json_integer(atomic_load(&r->in_flight)));
    json_object_set_new(o, "pending", json_integer(atomic_load(&r->pending)));
    json_object_set_new(o, "pending_prompt_tokens",
                        json_integer((json_int_t)atomic_load(&r->pending_tokens)));
    /* The engine's numbers when its report is fresh (null: stale, none yet, or not a candidate). */
    bool fresh = c && c->engine_fresh;
    json_object_set_new(o, "engine_waiting", fresh ? json_integer(c->engine_waiting) : json_null());
    json_object_set_new(o, "engine_running", fresh ? json_integer(c->engine_running) : json_null());
    json_object_set_new(o, "engine_kv_usage", fresh ? json_real(c->engine_kv_usage) : json_null());
    json_object_set_new(o, "index_blocks", json_integer(irx_replica_blocks(f->index, r->index)));
    json_object_set_new(o, "estimated_ttft_ms", number_or_null(ex ? ex->estimated_ttft_ms : NAN));
    json_object_set_new(o, "score", number_or_null(ex ? ex->score : NAN));
    return o;
}

static const char *prediction_name(gw_predict_state s) {
    static const char *names[GW_PREDICT_STATES] = {"none",     "ok",   "unsupported", "invalid",
                                                   "template", "busy", "slow",        "too_large"};
    return names[s];
}

/* The decision over the eligible candidates, and every replica's row. pends: the
 * request streams, so max_pending applies to it (gw_lease_tokens). */
static json_t *decide(gw_app *app, const gw_model *m, const gw_prompt *p, uint64_t tokens,
                      bool pends) {
    gw_fleet *f = &app->fleet;
    uint64_t now = ir_now_ns();
    irp_candidate cand[GW_MAX_REPLICAS];
    irp_explain ex[GW_MAX_REPLICAS];
    const char *why[GW_MAX_REPLICAS];
    /* Slots only grow, so the candidates' read covers every slot below this one. */
    size_t slots = atomic_load_explicit(&f->nreplicas, memory_order_acquire);
    size_t healthy, n = gw_fleet_candidates_why(f, m->index, now, pends, NULL, cand, &healthy, why);
    gw_predictions(f, p, cand, n);
    ir_rng rng;
    ir_rng_seed(&rng, now);
    irp_request q;
    gw_policy_request_of(p, tokens, f->block_size, &rng, &q);
    q.dry_run = true;
    irp_policy_explain(m->policy, &q, cand, n, ex);
    size_t win = n ? irp_choose(m->policy, &q, cand, n) : 0;
    json_t *rows = json_array();
    for (size_t i = 0; i < slots; i++) {
        const gw_replica *r = &f->replicas[i];
        if (!gw_replica_member(r)) continue;
        size_t k = 0;
        while (k < n && cand[k].replica != i) k++;
        json_array_append_new(
            rows, candidate_json(f, r, why[i], k < n ? &cand[k] : NULL, k < n ? &ex[k] : NULL));
    }
    json_t *o = json_object();
    json_object_set_new(o, "winner",
                        n ? json_string(f->replicas[cand[win].replica].cfg->id) : json_null());
    json_object_set_new(o, "candidates", rows);
    return o;
}

static int fail(ir_buf *out, int status, const char *msg) {
    irn_error_body(out, status, NULL, msg);
    return status;
}

int gw_explain(gw_app *app, const char *target, const char *body, size_t len, ir_buf *out) {
    bool chat;
    if (which_path(target, body, len, &chat))
        return fail(out, 400, "?path= must be /v1/chat/completions or /v1/completions");
    gw_resolution res;
    gw_resolve_model(&app->fleet, body, len, &res);
    if (!res.model) return fail(out, res.status, res.message);
    const gw_model *m = res.model;
    gw_prompt p;
    memset(&p, 0, sizeof p);
    p.state = GW_PREDICT_TOO_LARGE;
    gw_tokset *toks = gw_model_toks_take(m);
    if (!gw_prompt_too_large(app, toks, len)) gw_prompt_tokenize(toks, body, len, chat, &p);
    gw_tokset_put(toks);
    gw_prompt_hash(&app->fleet, m, &p);
    gw_prompt_match(&app->fleet, &p);
    uint64_t tokens = p.state == GW_PREDICT_OK ? p.ids.len : len / 4;
    json_t *o = decide(app, m, &p, tokens, res.streams);
    json_object_set_new(o, "model", json_string(m->cfg->name));
    json_object_set_new(o, "policy", json_string(irp_policy_name(m->policy)));
    json_object_set_new(o, "path", json_string(chat ? "/v1/chat/completions" : "/v1/completions"));
    json_object_set_new(o, "prompt_tokens", json_integer((json_int_t)tokens));
    json_object_set_new(o, "prompt_tokens_exact", json_boolean(p.state == GW_PREDICT_OK));
    json_object_set_new(o, "prediction", json_string(prediction_name(p.state)));
    json_object_set_new(o, "block_size", json_integer(app->fleet.block_size));
    gw_prompt_free(&p);
    int rc = ir_json_append_readable(out, o);
    json_decref(o);
    return rc ? fail(out, 500, "out of memory") : 200;
}
