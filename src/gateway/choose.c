/* choose.c: stages 6 and 7: the candidates a request is offered, with what the KV
 * index predicts each holds of its prompt, and the lease on the policy's pick. */
#include "gateway/request.h"

void gw_policy_request_of(const gw_prompt *p, uint64_t prompt_tokens, uint32_t block_size,
                          ir_rng *rng, irp_request *q) {
    bool ok = p->state == GW_PREDICT_OK;
    *q = (irp_request){.prompt_tokens = prompt_tokens,
                       .rng = rng,
                       .predicted = ok && p->cached,
                       .blocks = ok ? p->hashes : NULL,
                       .nblocks = ok ? p->nhashes : 0,
                       .block_size = block_size,
                       .text = p->text.len ? p->text.data : NULL,
                       .text_len = p->text.len,
                       .session = p->user,
                       .session_len = p->user ? p->user_len : 0};
}

void gw_session_of(const irn_header *hs, size_t n, const gw_prompt *p, const char **s,
                   size_t *len) {
    const irn_header *h = hs ? irn_headers_find(hs, n, GW_SESSION_HEADER) : NULL;
    if (h && h->value_len) {
        *s = h->value, *len = h->value_len;
        return;
    }
    *s = p->user, *len = p->user ? p->user_len : 0;
}

/* What the policy is told of the request. */
void gw_policy_request(gw_req *r, irp_request *q) {
    gw_policy_request_of(&r->prompt, r->prompt_tokens, r->w->app->fleet.block_size, &r->w->rng, q);
    gw_session_of(r->req->headers, r->req->nheaders, &r->prompt, &q->session, &q->session_len);
}

/* Each candidate's predicted cached tokens, from stage 5's match. */
void gw_predictions(const gw_fleet *f, const gw_prompt *p, irp_candidate *cand, size_t n) {
    if (p->state != GW_PREDICT_OK || !p->cached) return;
    /* The policies see each prediction scaled by how far its source is trusted
     * (events 1, else index.*_trust); the attempt keeps the raw one (leased()). */
    for (size_t i = 0; i < n; i++) {
        uint32_t slot = cand[i].replica;
        uint64_t raw = (uint64_t)p->cached[slot] * f->block_size;
        double t = f->kvsub ? gw_prediction_trust(f, slot) : f->cfg->index.approximate_trust;
        cand[i].predicted_cached_tokens = t >= 1.0 ? raw : (uint64_t)((double)raw * t);
        /* cached[n + slot]: its CPU-tier blocks after those (prepare.c) */
        uint64_t cpu = (uint64_t)p->cached[f->nslots + slot] * f->block_size;
        cand[i].predicted_cpu_tokens = t >= 1.0 ? cpu : (uint64_t)((double)cpu * t);
    }
}

static void leased(gw_req *r, gw_replica *rep, const irp_candidate *c, const irp_request *q,
                   uint64_t since) {
    r->rep = rep;
    gw_metrics_decision(r, rep, ir_now_ns() - since);
    r->lease_pending = r->lease.pends;
    const gw_prompt *p = &r->prompt;
    const gw_fleet *f = &r->w->app->fleet;
    /* The engine counts what it loads from its CPU tier as cached too (vLLM's
     * num_cached_tokens), so the prediction it is checked against includes it. The
     * policy's assigned hook hears the GPU part alone, undiscounted: the rest of the
     * prompt is what the engine will compute and store. */
    irp_request a = *q;
    a.assigned_cached_tokens = c->predicted_cached_tokens;
    r->predicted_cached = c->predicted_cached_tokens;
    if (p->state == GW_PREDICT_OK && p->cached) {
        a.assigned_cached_tokens = (uint64_t)p->cached[rep->index] * f->block_size;
        r->predicted_cached =
            a.assigned_cached_tokens + (uint64_t)p->cached[f->nslots + rep->index] * f->block_size;
    }
    irp_policy_assigned(r->policy, rep->index, &a);
}

gw_choice gw_choose(gw_req *r) {
    gw_fleet *f = &r->w->app->fleet;
    uint64_t now = ir_now_ns();
    irp_candidate cand[GW_MAX_REPLICAS];
    irp_request q;
    gw_policy_request(r, &q);
    gw_policy_put(r->policy); /* a retry's choice: the earlier attempt has released */
    r->policy = gw_model_policy_take(r->model);
    for (int pass = 0; pass < 2; pass++) { /* untried replicas first, then any */
        size_t healthy = 0;
        size_t n = gw_fleet_candidates(f, r->model->index, now, !r->unary,
                                       pass == 0 ? r->tried : NULL, cand, &healthy);
        if (healthy == 0) return GW_NONE_HEALTHY;
        gw_predictions(f, &r->prompt, cand, n);
        while (n > 0) {
            size_t k = irp_choose(r->policy, &q, cand, n);
            gw_replica *rep = &f->replicas[cand[k].replica];
            uint64_t cached = IR_MIN(cand[k].predicted_cached_tokens, r->prompt_tokens);
            r->lease = (gw_lease_tokens){r->prompt_tokens, r->prompt_tokens - cached, !r->unary};
            if (gw_lease_take(rep, r->lease)) {
                leased(r, rep, &cand[k], &q, now);
                gw_decision_log(r, cand, n, k);
                if (r->tr) gw_trace_route(r, cand, n, k, now);
                return GW_CHOSEN;
            }
            cand[k] = cand[--n]; /* lost the race for its last slot */
        }
    }
    return GW_ALL_FULL;
}
