/* kv_aware.c: a weighted score of the predicted cache hit against load.
 *
 *   score_i = hit_weight * hit_i - load_weight * load_i, the highest wins,
 *   hit_i   = predicted_cached_tokens_i / prompt_tokens        (0..1)
 *   load_i  = in_flight_i / max(max_j in_flight_j, load_floor)  (0..1)
 *
 * Load is requests in flight (the gateway's own counter, always current),
 * normalised by the busiest candidate, so the score compares like with like
 * whatever the fleet's scale. The floor (load_floor, default 4) keeps a
 * replica with one or two requests from looking "fully loaded" on an idle
 * fleet: below it, load counts as a fraction of the floor, so a cached
 * replica keeps its prompts until it really is busier. With the default
 * weights a cached replica wins while its excess in flight over a cold one
 * is below hit_i times the normaliser: a replica holding 90% of the prompt
 * and 10 in flight beats one holding nothing with 2 in flight, and loses to
 * an idle one. A request without a prediction (not tokenized) has hit 0
 * everywhere and goes to the least loaded candidate.
 *
 * Scores closer to the best than hit_tolerance * hit_weight (0.05: a hit of 5%
 * of the prompt) count as equal; equal scores go to the fewest in flight, and
 * what is still tied at random with req->rng. Without the tolerance a short
 * prefix that every request shares decides every miss: on w4 (a 100-token
 * system prompt before documents of thousands of tokens) the replicas holding
 * the system prompt won each new document by 2% of its tokens, and one replica
 * of three got no request at all (278, 122 and 0 of 400; hit rate 0.85 of the
 * ceiling). Stateless: choose reads only its arguments.
 *
 * Knobs: hit_weight (1.0), load_weight (1.0), load_floor (4), hit_tolerance (0.05).
 */
#include <math.h>
#include <stdlib.h>

#include "policy/ir_policy.h"
#include "policy/policy_util.h"

/* The busiest candidate's in flight, at least load_floor: what load is divided by. */
static uint32_t load_norm(const irp_config *cfg, const irp_candidate *c, size_t n) {
    uint32_t maxl = cfg->load_floor ? cfg->load_floor : 1;
    for (size_t i = 0; i < n; i++)
        if (c[i].in_flight > maxl) maxl = c[i].in_flight;
    return maxl;
}

static double score_of(const irp_config *cfg, const irp_request *req, const irp_candidate *c,
                       uint32_t maxl) {
    double pt = (double)req->prompt_tokens;
    double hit = pt > 0 ? (double)c->predicted_cached_tokens / pt : 0.0;
    if (hit > 1.0) hit = 1.0;
    double load = (double)c->in_flight / (double)maxl;
    return cfg->hit_weight * hit - cfg->load_weight * load;
}

/* The highest score wins, where scores within hit_tolerance * hit_weight of it
 * count as equal: among those the fewest in flight, then one at random. */
static size_t kv_choose(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    const irp_config *cfg = state;
    if (!cfg) return irp_least_loaded(req, c, n);
    uint32_t maxl = load_norm(cfg, c, n);
    double hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double s = score_of(cfg, req, &c[i], maxl);
        if (s > hi) hi = s;
    }
    double tol = irp_tie_band(hi, cfg->hit_tolerance * cfg->hit_weight);
    irp_argmin m;
    irp_argmin_init(&m);
    for (size_t i = 0; i < n; i++)
        if (score_of(cfg, req, &c[i], maxl) >= hi - tol)
            irp_argmin_offer(&m, req->rng, i, (double)c[i].in_flight);
    return m.pick;
}

/* For /admin/explain: each candidate's score (the highest wins). */
static void kv_explain(void *state, const irp_request *req, const irp_candidate *c, size_t n,
                       irp_explain *out) {
    const irp_config *cfg = state;
    if (!cfg) return;
    uint32_t maxl = load_norm(cfg, c, n);
    for (size_t i = 0; i < n; i++) out[i].score = score_of(cfg, req, &c[i], maxl);
}

static void *kv_create(const irp_config *cfg) {
    irp_config *copy = malloc(sizeof *copy);
    if (copy) *copy = *cfg;
    return copy;
}

static void kv_destroy(void *state) {
    free(state);
}

const irp_vtable irp_kv_aware = {.name = "kv_aware",
                                 .create = kv_create,
                                 .destroy = kv_destroy,
                                 .choose = kv_choose,
                                 .explain = kv_explain};
