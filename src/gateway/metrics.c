/* metrics.c: the gateway's metrics, in one obs registry (GET /metrics on the admin
 * port). Two kinds:
 *  - recorded where they happen, lock-free, through series handles each replica
 *    and model keeps (outcomes, TTFT and duration, routing decisions and their
 *    time, retries, disconnects, errors, prompt tokens);
 *  - read from the fleet's own atomics when a page is written (the collect hook:
 *    in flight, pending, health, the older per-replica counters, the KV index).
 * A replica's series are made when it joins and taken off the page when it leaves
 * (gw_metrics_replica_leave). */
#include "gateway/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obs/ir_obs.h"

/* The outcome classes of inferrail_requests_total. */
enum { ST_2XX, ST_3XX, ST_4XX, ST_5XX, ST_ABORTED, ST_CANCELLED, ST_CUT, ST_N };
static const char *const st_names[ST_N] = {"2xx",     "3xx",       "4xx", "5xx",
                                           "aborted", "cancelled", "cut"};

/* A replica's series for one model it serves. */
typedef struct rmodel {
    iro_series *status[ST_N];
    iro_series *ttft, *duration, *decisions, *prompt_tokens;
} rmodel;

typedef struct gw_rmetrics gw_rmetrics;
typedef struct gw_metrics gw_metrics;

struct gw_rmetrics {
    char id[GW_REPLICA_ID_MAX + 1]; /* whose series these are */
    gw_rmetrics *retired_next;      /* replaced handles, kept until gw_metrics_free */
    rmodel *models;                 /* fleet.nmodel_slots; zeroed for a model it does not serve */
    iro_series *in_flight, *pending, *prompt_tokens, *pending_tokens, *healthy, *ejected;
    iro_series *requests, *failures, *ejections;
    iro_series *predicted, *reported, *pred[3], *index_blocks, *index_capacity;
};

/* A model's series. */
typedef struct mmetrics {
    iro_series *retries, *disconnects, *tokenized[GW_PREDICT_STATES], *tokenize_s;
    iro_series *cache_lookups[2], *cache_held, *cache_bytes; /* hit, miss; NULL without a cache */
    iro_series *pcache[4]; /* parse cache: hit, miss, whole, bytes; NULL without one */
    _Atomic(iro_series *) unrouted[ST_N]; /* replica "none", made when first seen */
} mmetrics;

#define N_ERR     11
#define ERR_ROUTE 10 /* an unknown route's 404 (a model's is model_not_found) */
static const char *const err_names[N_ERR] = {
    "bad_request",      "model_not_found", "method_not_allowed", "timeout",
    "too_large",        "rate_limited",    "upstream_error",     "unavailable",
    "upstream_timeout", "other",           "route_not_found"};

struct gw_metrics {
    iro_registry *reg;
    iro_family *requests, *ttft, *duration, *decisions, *decision_s, *errors, *prompt_tokens;
    iro_series **decision_by_policy;  /* per model: its policy's decision time */
    _Atomic(iro_series *) *errors_by; /* (nmodel_slots + 1) times N_ERR, made when first seen */
    mmetrics *models;
    mmetrics none; /* requests whose model is not known */
    /* the gateway's totals and the index, read when a page is written */
    iro_series *received, *responses[3], *retries_all, *disconnects_all, *rejected, *upstream_err;
    iro_series *moved_hung, *stalled;
    iro_series *conns, *conns_total, *accept_pauses; /* the client port's connections */
    iro_series *index_entries, *index_bytes, *index_resets;
    iro_family *fam_rep[16];
    gw_rmetrics *retired; /* handles of slots that other replicas took */
};

static const double decision_buckets[] = {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5,
                                          1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3,   1e-2};

static const char *const L_REPLICA[] = {"replica", NULL};
static const char *const L_MODEL[] = {"model", NULL};

/* ---- the families --------------------------------------------------------------------- */

enum {
    F_IN_FLIGHT,
    F_PENDING,
    F_PROMPT_TOKENS,
    F_PENDING_TOKENS,
    F_HEALTHY,
    F_EJECTED,
    F_REQUESTS,
    F_FAILURES,
    F_EJECTIONS,
    F_PREDICTED,
    F_REPORTED,
    F_PREDICTIONS,
    F_INDEX_BLOCKS,
    F_INDEX_CAPACITY,
    F_N
};

static void replica_families(gw_metrics *m) {
    iro_registry *g = m->reg;
    m->fam_rep[F_IN_FLIGHT] = iro_gauge(g, "inferrail_replica_in_flight",
                                        "Requests in flight to the replica.", L_REPLICA);
    m->fam_rep[F_PENDING] =
        iro_gauge(g, "inferrail_replica_pending",
                  "Requests waiting for the replica's response head.", L_REPLICA);
    m->fam_rep[F_PROMPT_TOKENS] =
        iro_gauge(g, "inferrail_replica_prompt_tokens",
                  "Prompt tokens of the requests in flight to the replica.", L_REPLICA);
    m->fam_rep[F_PENDING_TOKENS] = iro_gauge(
        g, "inferrail_replica_pending_prompt_tokens",
        "Prompt tokens of the requests still waiting for the replica's first byte.", L_REPLICA);
    m->fam_rep[F_HEALTHY] =
        iro_gauge(g, "inferrail_replica_healthy",
                  "1 when the replica passes its health checks and is not ejected.", L_REPLICA);
    m->fam_rep[F_EJECTED] =
        iro_gauge(g, "inferrail_replica_ejected",
                  "1 while the replica is ejected for failing requests.", L_REPLICA);
    m->fam_rep[F_REQUESTS] = iro_counter(g, "inferrail_replica_requests_total",
                                         "Requests sent to the replica.", L_REPLICA);
    m->fam_rep[F_FAILURES] = iro_counter(g, "inferrail_replica_failures_total",
                                         "Failed attempts on the replica.", L_REPLICA);
    m->fam_rep[F_EJECTIONS] =
        iro_counter(g, "inferrail_ejections_total", "Passive ejections of the replica.", L_REPLICA);
}

static void index_families(gw_metrics *m) {
    iro_registry *g = m->reg;
    m->index_entries = iro_series_get(
        iro_gauge(g, "inferrail_index_entries", "Distinct blocks in the KV index.", NULL), NULL);
    m->index_bytes = iro_series_get(
        iro_gauge(g, "inferrail_index_bytes", "Memory the KV index holds.", NULL), NULL);
    m->index_resets = iro_series_get(
        iro_counter(g, "inferrail_index_resets_total",
                    "Replicas whose view was cleared because their engine restarted.", NULL),
        NULL);
    m->fam_rep[F_INDEX_BLOCKS] =
        iro_gauge(g, "inferrail_index_replica_blocks",
                  "Blocks the KV index believes the replica holds.", L_REPLICA);
    m->fam_rep[F_INDEX_CAPACITY] =
        iro_gauge(g, "inferrail_index_replica_capacity_blocks",
                  "The replica's KV cache size the index uses, in blocks.", L_REPLICA);
    m->fam_rep[F_PREDICTED] = iro_counter(
        g, "inferrail_predicted_cached_tokens_total",
        "Cached prompt tokens the KV index predicted for requests sent to the replica.", L_REPLICA);
    m->fam_rep[F_REPORTED] =
        iro_counter(g, "inferrail_reported_cached_tokens_total",
                    "Cached prompt tokens the replica's engine reported in usage.", L_REPLICA);
    const char *const lr[] = {"replica", "result", NULL};
    m->fam_rep[F_PREDICTIONS] = iro_counter(
        g, "inferrail_predictions_total",
        "Predictions compared with the engine's reported cached tokens, by result (over: the "
        "index predicted more than the engine had).",
        lr);
}

/* The client port's connections, every worker's listener together. */
static void connections(gw_metrics *m) {
    iro_registry *g = m->reg;
    m->conns = iro_series_get(
        iro_gauge(g, "inferrail_client_connections", "Client connections open now.", NULL), NULL);
    m->conns_total = iro_series_get(
        iro_counter(g, "inferrail_client_connections_total", "Client connections accepted.", NULL),
        NULL);
    m->accept_pauses = iro_series_get(
        iro_counter(g, "inferrail_accept_pauses_total",
                    "Times a worker stopped accepting for a while because the process was out "
                    "of file descriptors (EMFILE, ENFILE).",
                    NULL),
        NULL);
}

static void totals(gw_metrics *m) {
    iro_registry *g = m->reg;
    connections(m);
    m->received = iro_series_get(iro_counter(g, "inferrail_requests_received_total",
                                             "Requests received on the client port.", NULL),
                                 NULL);
    const char *const lc[] = {"class", NULL};
    iro_family *resp = iro_counter(g, "inferrail_responses_total",
                                   "Responses the client port gave, by status class.", lc);
    m->responses[0] = iro_series_of(resp, "2xx");
    m->responses[1] = iro_series_of(resp, "4xx");
    m->responses[2] = iro_series_of(resp, "5xx");
    m->rejected =
        iro_series_get(iro_counter(g, "inferrail_rejected_full_total",
                                   "Requests answered 503 because every replica was full.", NULL),
                       NULL);
    m->upstream_err = iro_series_get(
        iro_counter(g, "inferrail_upstream_errors_total", "Failed upstream attempts.", NULL), NULL);
    m->moved_hung = iro_series_get(
        iro_counter(g, "inferrail_upstream_moved_total",
                    "Attempts moved off a replica that its health checks marked down before it "
                    "answered.",
                    NULL),
        NULL);
    m->stalled = iro_series_get(
        iro_counter(g, "inferrail_upstream_stalls_total",
                    "Responses cut because the engine sent nothing for upstream.idle_timeout "
                    "mid-response.",
                    NULL),
        NULL);
}

static void model_series(gw_metrics *m, mmetrics *mm, const char *name) {
    iro_registry *g = m->reg;
    mm->retries = iro_series_of(
        iro_counter(g, "inferrail_upstream_retries_total",
                    "Attempts moved to another replica before the first byte.", L_MODEL),
        name);
    mm->disconnects =
        iro_series_of(iro_counter(g, "inferrail_client_disconnects_total",
                                  "Clients that left before their response ended.", L_MODEL),
                      name);
}

/* Time to tokenize and hash a prompt, its wait for a tokenizer thread included. */
static const double tokenize_buckets[] = {1e-5,   2.5e-5, 5e-5, 1e-4,   2.5e-4, 5e-4, 1e-3,
                                          2.5e-3, 5e-3,   1e-2, 2.5e-2, 5e-2,   0.1,  0.25};

/* A tokenizer.json model's cache: its lookups by result, and the ids it holds. */
static void cache_series(iro_registry *g, mmetrics *mm, const char *name) {
    const char *const lr[] = {"model", "result", NULL};
    const char *const l[] = {"model", NULL};
    iro_family *c = iro_counter(g, "inferrail_tokenize_cache_lookups_total",
                                "Prompt pieces (text between special tokens, 32 bytes or more) "
                                "looked up in the model's tokenization cache, by result: hit "
                                "(ids reused) or miss (encoded, then kept).",
                                lr);
    mm->cache_lookups[0] = iro_series_of(c, name, "hit");
    mm->cache_lookups[1] = iro_series_of(c, name, "miss");
    mm->cache_held = iro_series_of(
        iro_gauge(
            g, "inferrail_tokenize_cache_tokens",
            "Token ids the model's tokenization cache holds (at most tokenizer.cache_tokens).", l),
        name);
    mm->cache_bytes = iro_series_of(
        iro_gauge(g, "inferrail_tokenize_cache_bytes",
                  "Bytes of ids, text and bookkeeping the model's tokenization cache holds (at "
                  "most 16 per token of tokenizer.cache_tokens).",
                  l),
        name);
}

/* A tokenizer.json model's chat parse cache: its lookups by result, the chat
 * bodies read whole, and the bytes it holds. */
static void pcache_series(iro_registry *g, mmetrics *mm, const char *name) {
    const char *const lr[] = {"model", "result", NULL};
    const char *const l[] = {"model", NULL};
    iro_family *c = iro_counter(g, "inferrail_tokenize_parse_cache_lookups_total",
                                "Chat messages (64 bytes or more) looked up in the model's parse "
                                "cache, by result: hit (reused parsed) or miss (parsed, then "
                                "kept).",
                                lr);
    mm->pcache[0] = iro_series_of(c, name, "hit");
    mm->pcache[1] = iro_series_of(c, name, "miss");
    mm->pcache[2] = iro_series_of(
        iro_counter(g, "inferrail_tokenize_parse_cache_whole_total",
                    "Chat bodies parsed whole instead of message by message: no messages list, "
                    "a shape the parse cache's scanner does not split, or a message that "
                    "needs Python's number rules.",
                    l),
        name);
    mm->pcache[3] =
        iro_series_of(iro_gauge(g, "inferrail_tokenize_parse_cache_bytes",
                                "Bytes the model's chat parse cache holds, as estimated (at most "
                                "tokenizer.parse_cache_bytes).",
                                l),
                      name);
}

static void model_token_series(gw_metrics *m, mmetrics *mm, const gw_model *md) {
    iro_registry *g = m->reg;
    const char *name = md->cfg->name;
    const char *const lr[] = {"model", "result", NULL};
    const char *const l[] = {"model", NULL};
    iro_family *t = iro_counter(g, "inferrail_tokenized_requests_total",
                                "Prompts tokenized, or why a request got no prediction: invalid, "
                                "unsupported, template, busy, slow, unavailable (no tokenizer).",
                                lr);
    for (int i = 0; i < GW_PREDICT_STATES; i++)
        mm->tokenized[i] = iro_series_of(t, name, gw_predict_state_name((gw_predict_state)i));
    mm->tokenize_s = iro_series_of(
        iro_histogram(g, "inferrail_tokenize_seconds",
                      "Time to tokenize and hash a prompt, the wait for a tokenizer thread "
                      "included (models with a tokenizer).",
                      l, tokenize_buckets, IR_ARRAY_LEN(tokenize_buckets)),
        name);
    iro_set(iro_series_of(iro_gauge(g, "inferrail_model_predictions_enabled",
                                    "1 when the model's tokenizer loaded and its requests get "
                                    "cache predictions; 0 when it routes without them (no "
                                    "tokenizer, or tokenizer_optional and it failed to load).",
                                    l),
                          name),
            atomic_load(&md->tok) != GW_TOK_NONE);
    gw_tokset *ts = gw_model_toks_take(md);
    if (ts && ts->tcache) cache_series(g, mm, name);
    if (ts && ts->pcache) pcache_series(g, mm, name);
    gw_tokset_put(ts);
}

/* ---- the collect hook: what the fleet counts itself ----------------------------------------- */

/* Control thread: a model's cache is its tokenizer's, which a reload may replace
 * (the counters then start again from zero). */
static void collect_caches(gw_metrics *m, const gw_fleet *f) {
    for (size_t i = 0; i < f->nmodels; i++) {
        mmetrics *mm = &m->models[i];
        if ((!mm->cache_held && !mm->pcache[0]) || !atomic_load(&f->models[i].active)) continue;
        gw_tokset *t = gw_model_toks_take(&f->models[i]);
        irt_cache_stats st = {0};
        irt_parse_cache_stats ps = {0};
        if (t && t->tcache) irt_cache_get_stats(t->tcache, &st);
        if (t && t->pcache) irt_parse_cache_get_stats(t->pcache, &ps);
        gw_tokset_put(t);
        if (mm->cache_held) {
            iro_set(mm->cache_lookups[0], (double)st.hits);
            iro_set(mm->cache_lookups[1], (double)st.misses);
            iro_set(mm->cache_held, (double)st.tokens);
            iro_set(mm->cache_bytes, (double)st.bytes);
        }
        if (mm->pcache[0]) {
            iro_set(mm->pcache[0], (double)ps.hits);
            iro_set(mm->pcache[1], (double)ps.misses);
            iro_set(mm->pcache[2], (double)ps.whole);
            iro_set(mm->pcache[3], (double)ps.bytes);
        }
    }
}

static void collect(void *ud) {
    gw_app *app = ud;
    gw_metrics *m = app->metrics;
    const gw_stats *s = &app->stats;
    iro_set(m->received, (double)atomic_load(&s->requests));
    iro_set(m->responses[0], (double)atomic_load(&s->responses_2xx));
    iro_set(m->responses[1], (double)atomic_load(&s->responses_4xx));
    iro_set(m->responses[2], (double)atomic_load(&s->responses_5xx));
    iro_set(m->rejected, (double)atomic_load(&s->rejected_full));
    iro_set(m->upstream_err, (double)atomic_load(&s->upstream_errors));
    iro_set(m->moved_hung, (double)atomic_load(&s->moved_hung));
    iro_set(m->stalled, (double)atomic_load(&s->stalled_streams));
    iro_set(m->conns, (double)atomic_load_explicit(&s->clients.conns_active, memory_order_relaxed));
    iro_set(m->conns_total, (double)atomic_load(&s->clients.conns_accepted));
    iro_set(m->accept_pauses, (double)atomic_load(&s->clients.accept_pauses));
    gw_fleet *f = &app->fleet;
    collect_caches(m, f);
    if (f->index) {
        irx_stats st;
        irx_stats_get(f->index, &st);
        iro_set(m->index_entries, (double)st.entries);
        iro_set(m->index_bytes, (double)st.bytes);
        iro_set(m->index_resets, (double)st.resets);
    }
    uint64_t now = ir_now_ns();
    for (size_t i = 0; i < f->nreplicas; i++) {
        gw_replica *r = &f->replicas[i];
        gw_rmetrics *x = r->metrics;
        if (!x) continue;
        iro_set(x->in_flight, atomic_load(&r->in_flight));
        iro_set(x->pending, atomic_load(&r->pending));
        iro_set(x->prompt_tokens, (double)atomic_load(&r->prompt_tokens));
        iro_set(x->pending_tokens, (double)atomic_load(&r->pending_tokens));
        iro_set(x->healthy, gw_replica_available(r, now));
        iro_set(x->ejected, atomic_load(&r->ejected_until) > now);
        iro_set(x->requests, (double)atomic_load(&r->requests));
        iro_set(x->failures, (double)atomic_load(&r->failures));
        iro_set(x->ejections, (double)atomic_load(&r->ejections_total));
        if (!f->index) continue;
        iro_set(x->predicted, (double)atomic_load(&r->predicted_tokens));
        iro_set(x->reported, (double)atomic_load(&r->reported_tokens));
        iro_set(x->pred[0], (double)atomic_load(&r->predictions_exact));
        iro_set(x->pred[1], (double)atomic_load(&r->predictions_over));
        iro_set(x->pred[2], (double)atomic_load(&r->predictions_under));
        iro_set(x->index_blocks, irx_replica_blocks(f->index, (uint32_t)i));
        iro_set(x->index_capacity, irx_capacity(f->index, (uint32_t)i));
    }
}

/* ---- lifetime ------------------------------------------------------------------------------ */

static const char *policy_of(const gw_model *md) {
    return md->policy ? irp_policy_name(md->policy) : "none";
}

/* Asks the registry for one model's series of replica id into rm. */
static void rmodel_series(gw_metrics *m, const gw_model *md, const char *id, rmodel *rm) {
    const char *name = md->cfg->name, *pol = policy_of(md);
    for (int k = 0; k < ST_N; k++)
        rm->status[k] = iro_series_of(m->requests, name, id, st_names[k]);
    rm->ttft = iro_series_of(m->ttft, name, pol, id);
    rm->duration = iro_series_of(m->duration, name, pol, id);
    rm->decisions = iro_series_of(m->decisions, name, pol, id);
    rm->prompt_tokens = iro_series_of(m->prompt_tokens, name, id);
}

/* Asks the registry for replica r's series (made, or revived after it left). */
static int fill_rmetrics(gw_metrics *m, gw_fleet *f, const gw_replica *r, gw_rmetrics *x) {
    const char *id = r->cfg->id;
    iro_series **g[] = {&x->in_flight,      &x->pending,  &x->prompt_tokens,
                        &x->pending_tokens, &x->healthy,  &x->ejected,
                        &x->requests,       &x->failures, &x->ejections};
    for (size_t k = 0; k < IR_ARRAY_LEN(g); k++) *g[k] = iro_series_of(m->fam_rep[k], id);
    if (f->index) {
        x->predicted = iro_series_of(m->fam_rep[F_PREDICTED], id);
        x->reported = iro_series_of(m->fam_rep[F_REPORTED], id);
        static const char *const res[3] = {"exact", "over", "under"};
        for (int k = 0; k < 3; k++)
            x->pred[k] = iro_series_of(m->fam_rep[F_PREDICTIONS], id, res[k]);
        x->index_blocks = iro_series_of(m->fam_rep[F_INDEX_BLOCKS], id);
        x->index_capacity = iro_series_of(m->fam_rep[F_INDEX_CAPACITY], id);
    }
    for (size_t mi = 0; mi < f->nmodels; mi++) {
        const gw_model *md = &f->models[mi];
        if (!gw_replica_serves(r, (uint32_t)mi) || !atomic_load(&md->active)) continue;
        rmodel_series(m, md, id, &x->models[mi]);
    }
    snprintf(x->id, sizeof x->id, "%s", id);
    return 0;
}

/* On the control thread. A replica that comes back under its own name revives the
 * series it had (the same pointers: nothing to write that a worker could be
 * reading). A slot that another replica takes gets a new set of handles, published
 * whole; the old set stays allocated until gw_metrics_free, since a worker may
 * still hold it. */
int gw_metrics_replica_join(gw_app *app, gw_replica *r) {
    gw_metrics *m = app->metrics;
    if (!m) return 0;
    gw_fleet *f = &app->fleet;
    gw_rmetrics *old = atomic_load(&r->metrics);
    if (old && strcmp(old->id, r->cfg->id) == 0) {
        /* revive into a scratch set: the handles come back equal to old's */
        gw_rmetrics scratch = {0};
        scratch.models = calloc(f->nmodel_slots, sizeof *scratch.models);
        if (!scratch.models) return -1;
        fill_rmetrics(m, f, r, &scratch);
        free(scratch.models);
        return 0;
    }
    gw_rmetrics *x = calloc(1, sizeof *x);
    if (!x || !(x->models = calloc(f->nmodel_slots, sizeof *x->models))) {
        free(x);
        return -1;
    }
    fill_rmetrics(m, f, r, x);
    if (old) {
        old->retired_next = m->retired;
        m->retired = old;
    }
    atomic_store(&r->metrics, x);
    return 0;
}

void gw_metrics_replica_leave(gw_app *app, gw_replica *r) {
    if (!app->metrics) return;
    iro_remove_label(app->metrics->reg, "replica", r->cfg->id);
}

/* The fleet's membership hook. */
static void on_member(void *ud, gw_replica *r, bool joined) {
    gw_app *app = ud;
    if (!joined) {
        gw_metrics_replica_leave(app, r);
        return;
    }
    if (gw_metrics_replica_join(app, r))
        IR_WARN("metrics", "replica %s: out of memory for its metric series", r->cfg->id);
}

void gw_metrics_replica_free(gw_replica *r) {
    gw_rmetrics *x = atomic_exchange(&r->metrics, NULL);
    if (!x) return;
    free(x->models);
    free(x);
}

/* ---- models that a reload adds, changes or removes (control thread) ---------------------- */

/* The series a replica has for model md: written in its slot when the slot is empty
 * and may_write (no worker can be recording there: the replica's mask does not route
 * md to it yet), else asked again into a scratch (reviving them, writing nothing a
 * worker may read). */
static void join_rmodel(gw_metrics *m, const gw_model *md, gw_rmetrics *x, bool may_write) {
    rmodel scratch, *rm = &x->models[md->index];
    if (rm->ttft || !may_write) rm = &scratch;
    rmodel_series(m, md, x->id, rm);
}

/* The series made when first seen come back too (a model removed, then added again). */
static void revive_lazy(gw_metrics *m, const gw_model *md) {
    mmetrics *mm = &m->models[md->index];
    const char *name = md->cfg->name;
    for (int k = 0; k < ST_N; k++)
        if (atomic_load(&mm->unrouted[k])) iro_series_of(m->requests, name, "none", st_names[k]);
    for (int k = 0; k < N_ERR; k++)
        if (atomic_load(&m->errors_by[md->index * N_ERR + (size_t)k]))
            iro_series_of(m->errors, name, err_names[k]);
}

void gw_metrics_model_join(gw_app *app, const gw_model *md) {
    gw_metrics *m = app->metrics;
    if (!m) return;
    /* a fresh slot: no request names the model before the list that holds it */
    mmetrics scratch, *mm = m->models[md->index].retries ? &scratch : &m->models[md->index];
    if (mm == &scratch) memset(&scratch, 0, sizeof scratch);
    model_series(m, mm, md->cfg->name);
    model_token_series(m, mm, md);
    revive_lazy(m, md);
    if (mm == &scratch) { /* its cache's series follow its tokenizer's (control thread only) */
        mmetrics *real = &m->models[md->index];
        if (real->cache_held && !scratch.cache_held) {
            iro_series_remove(real->cache_lookups[0]);
            iro_series_remove(real->cache_lookups[1]);
            iro_series_remove(real->cache_held);
            iro_series_remove(real->cache_bytes);
        }
        memcpy(real->cache_lookups, scratch.cache_lookups, sizeof real->cache_lookups);
        real->cache_held = scratch.cache_held;
        real->cache_bytes = scratch.cache_bytes;
        if (real->pcache[0] && !scratch.pcache[0])
            for (int k = 0; k < 4; k++) iro_series_remove(real->pcache[k]);
        memcpy(real->pcache, scratch.pcache, sizeof real->pcache);
    }
    if (!m->decision_by_policy[md->index])
        m->decision_by_policy[md->index] = iro_series_of(m->decision_s, policy_of(md));
}

void gw_metrics_replica_models(gw_app *app, gw_replica *r) {
    gw_metrics *m = app->metrics;
    gw_rmetrics *x = r ? atomic_load(&r->metrics) : NULL;
    if (!m || !x || !gw_replica_member(r)) return;
    gw_fleet *f = &app->fleet;
    for (size_t i = 0; i < f->nmodels; i++) {
        const gw_model *md = &f->models[i];
        if (atomic_load(&md->active) && gw_replica_cfg_serves(r->cfg, md->cfg->name))
            join_rmodel(m, md, x, !gw_replica_serves(r, md->index));
    }
}

void gw_metrics_model_leave(gw_app *app, const gw_model *md) {
    if (app->metrics) iro_remove_label(app->metrics->reg, "model", md->cfg->name);
}

static void request_families(gw_metrics *m) {
    iro_registry *g = m->reg;
    const char *const mrs[] = {"model", "replica", "status", NULL};
    const char *const mpr[] = {"model", "policy", "replica", NULL};
    const char *const pol[] = {"policy", NULL};
    const char *const mr[] = {"model", "reason", NULL};
    m->requests = iro_counter(g, "inferrail_requests_total",
                              "Inference requests by outcome: a status class, aborted when the "
                              "engine broke a started response, cancelled when the client left.",
                              mrs);
    m->ttft = iro_histogram(g, "inferrail_ttft_seconds",
                            "Arrival to the first byte of a streamed response.", mpr,
                            iro_latency_buckets, iro_latency_nbuckets);
    m->duration = iro_histogram(g, "inferrail_request_duration_seconds",
                                "Arrival to the end of the response.", mpr, iro_latency_buckets,
                                iro_latency_nbuckets);
    m->decisions = iro_counter(g, "inferrail_routing_decisions_total",
                               "The policy's choices, one per attempt.", mpr);
    m->decision_s =
        iro_histogram(g, "inferrail_routing_decision_seconds", "Time to choose and take a lease.",
                      pol, decision_buckets, IR_ARRAY_LEN(decision_buckets));
    m->errors = iro_counter(g, "inferrail_request_errors_total",
                            "Errors the gateway answered itself, by reason.", mr);
    const char *const lmr[] = {"model", "replica", NULL};
    m->prompt_tokens = iro_counter(
        g, "inferrail_prompt_tokens_total",
        "Prompt tokens of the requests routed to the replica, per routing decision.", lmr);
}

int gw_metrics_init(gw_app *app) {
    gw_metrics *m = calloc(1, sizeof *m);
    if (!m) return -1;
    app->metrics = m;
    gw_fleet *f = &app->fleet;
    size_t nm = f->nmodel_slots;
    m->reg = iro_registry_new(IRO_FMT_PLAIN);
    m->models = calloc(nm, sizeof *m->models);
    m->decision_by_policy = calloc(nm, sizeof *m->decision_by_policy);
    m->errors_by = calloc((nm + 1) * N_ERR, sizeof *m->errors_by);
    if (!m->reg || !m->models || !m->decision_by_policy || !m->errors_by) return -1;
    const char *const lb[] = {"version", "commit", NULL};
    iro_set(iro_series_of(iro_gauge(m->reg, "inferrail_build_info",
                                    "The gateway's version and git commit.", lb),
                          ir_version(), ir_commit()),
            1);
    totals(m);
    request_families(m);
    for (size_t i = 0; i < f->nmodels; i++) model_series(m, &m->models[i], f->models[i].cfg->name);
    for (size_t i = 0; i < f->nmodels; i++) model_token_series(m, &m->models[i], &f->models[i]);
    for (size_t i = 0; i < f->nmodels; i++)
        m->decision_by_policy[i] = iro_series_of(m->decision_s, policy_of(&f->models[i]));
    replica_families(m);
    index_families(m);
    for (size_t i = 0; i < f->nreplicas; i++)
        if (gw_replica_member(&f->replicas[i]) && gw_metrics_replica_join(app, &f->replicas[i]))
            return -1;
    if (gw_fleet_listen(f, on_member, app)) return -1;
    if (iro_registry_on_collect(m->reg, collect, app)) return -1;
    if (gw_metrics_load_init(app)) return -1;
    return gw_metrics_kv_init(app);
}

void gw_metrics_free(gw_app *app) {
    gw_metrics *m = app->metrics;
    if (!m) return;
    gw_fleet_unlisten(&app->fleet, on_member, app);
    gw_metrics_load_free(app);
    gw_metrics_kv_free(app);
    for (size_t i = 0; i < app->fleet.nreplicas; i++)
        gw_metrics_replica_free(&app->fleet.replicas[i]);
    while (m->retired) {
        gw_rmetrics *x = m->retired;
        m->retired = x->retired_next;
        free(x->models);
        free(x);
    }
    iro_registry_free(m->reg);
    free(m->models);
    free(m->decision_by_policy);
    free(m->errors_by);
    free(m);
    app->metrics = NULL;
}

/* 10 us to 1 s: a turn over 100 us is one client holding the loop while the others wait. */
static const double turn_buckets[] = {1e-5,   2.5e-5, 5e-5, 1e-4,   2.5e-4, 5e-4, 1e-3,
                                      2.5e-3, 5e-3,   1e-2, 2.5e-2, 0.1,    1};

struct iro_series *gw_metrics_loop_turn(gw_app *app, uint32_t worker) {
    if (!app->metrics) return NULL;
    const char *const lw[] = {"worker", NULL};
    iro_family *f = iro_histogram(
        app->metrics->reg, "inferrail_loop_turn_cpu_seconds",
        "CPU time of each turn of a worker's event loop: every callback between two polls.", lw,
        turn_buckets, IR_ARRAY_LEN(turn_buckets));
    char id[16];
    snprintf(id, sizeof id, "%u", worker);
    return iro_series_of(f, id);
}

struct iro_registry *gw_metrics_registry(gw_app *app) {
    return app->metrics ? app->metrics->reg : NULL;
}

int gw_metrics_render(gw_app *app, ir_buf *out) {
    return app->metrics ? iro_write(app->metrics->reg, out) : 0;
}

/* ---- recording (worker threads) ---------------------------------------------------------------
 */

static rmodel *rmodel_of(const gw_replica *rep, const gw_model *md) {
    if (!rep || !md || !rep->metrics) return NULL;
    return &rep->metrics->models[md->index];
}

static mmetrics *mmetrics_of(gw_metrics *m, const gw_model *md) {
    return md ? &m->models[md->index] : &m->none;
}

void gw_metrics_decision(gw_req *r, const gw_replica *rep, uint64_t ns) {
    gw_metrics *m = r->w->app->metrics;
    if (!m) return;
    rmodel *rm = rmodel_of(rep, r->model);
    if (rm) {
        iro_inc(rm->decisions, 1);
        iro_inc(rm->prompt_tokens, r->prompt_tokens);
    }
    iro_observe(m->decision_by_policy[r->model->index], (double)ns / 1e9);
}

void gw_metrics_first_byte(gw_req *r) {
    if (!r->w->app->metrics) return;
    rmodel *rm = rmodel_of(r->rep, r->model);
    if (rm) iro_observe(rm->ttft, (double)(ir_now_ns() - r->arrival) / 1e9);
}

void gw_metrics_retry(gw_req *r) {
    gw_metrics *m = r->w->app->metrics;
    if (m) iro_inc(mmetrics_of(m, r->model)->retries, 1);
}

void gw_metrics_disconnect(gw_req *r) {
    gw_metrics *m = r->w->app->metrics;
    if (!m) return;
    if (r->model) iro_inc(m->models[r->model->index].disconnects, 1);
}

void gw_metrics_tokenized(gw_req *r) {
    gw_metrics *m = r->w->app->metrics;
    /* the routes routed by load alone never meet the tokenizer */
    if (!m || !r->model || !gw_route_predicts(r->req->path)) return;
    mmetrics *mm = &m->models[r->model->index];
    unsigned k = (unsigned)r->prompt.state;
    if (k < GW_PREDICT_STATES) iro_inc(mm->tokenized[k], 1);
    if (atomic_load_explicit(&r->model->tok, memory_order_relaxed) != GW_TOK_NONE)
        iro_observe(mm->tokenize_s, (double)(ir_now_ns() - r->prepare_start) * 1e-9);
}

static int err_reason(int status) {
    switch (status) {
    case 400:
        return 0;
    case 404:
        return 1;
    case 405:
        return 2;
    case 408:
        return 3;
    case 413:
    case 431: /* headers too large */
        return 4;
    case 429:
        return 5;
    case 502:
        return 6;
    case 503:
        return 7;
    case 504:
        return 8;
    default:
        return 9;
    }
}

static void count_error(gw_app *app, const gw_model *md, int k) {
    gw_metrics *m = app->metrics;
    if (!m) return;
    size_t mi = md ? md->index : app->fleet.nmodel_slots;
    _Atomic(iro_series *) *slot = &m->errors_by[mi * N_ERR + (size_t)k];
    iro_series *s = atomic_load_explicit(slot, memory_order_acquire);
    if (!s) { /* rare: made once, under the registry's mutex */
        s = iro_series_of(m->errors, md ? md->cfg->name : "none", err_names[k]);
        atomic_store_explicit(slot, s, memory_order_release);
    }
    iro_inc(s, 1);
}

void gw_metrics_error(gw_req *r, int status) {
    count_error(r->w->app, r->model, err_reason(status));
}

void gw_metrics_error_unrouted(gw_app *app, int status) {
    if (status >= 400) count_error(app, NULL, status == 404 ? ERR_ROUTE : err_reason(status));
}

/* Once per request, just before it is freed: its one outcome, and its duration. */
void gw_metrics_finish(gw_req *r, const gw_replica *last) {
    gw_metrics *m = r->w->app->metrics;
    if (!m || !r->model) return;
    int k = r->cut             ? ST_CUT
            : r->client_gone   ? ST_CANCELLED
            : r->aborted       ? ST_ABORTED
            : r->status >= 500 ? ST_5XX
            : r->status >= 400 ? ST_4XX
            : r->status >= 300 ? ST_3XX
                               : ST_2XX;
    rmodel *rm = rmodel_of(last, r->model);
    if (!rm) { /* never reached a replica: counted as replica "none" */
        _Atomic(iro_series *) *slot = &m->models[r->model->index].unrouted[k];
        iro_series *s = atomic_load_explicit(slot, memory_order_acquire);
        if (!s) { /* once per model and class, under the registry's mutex */
            s = iro_series_of(m->requests, r->model->cfg->name, "none", st_names[k]);
            atomic_store_explicit(slot, s, memory_order_release);
        }
        iro_inc(s, 1);
        return;
    }
    iro_inc(rm->status[k], 1);
    iro_observe(rm->duration, (double)(ir_now_ns() - r->arrival) / 1e9);
}

/* ---- GET /admin/state: what the registry knows of a replica and a model -------------------- */

static void json_num(ir_buf *o, const char *key, double v) {
    char num[64];
    iro_format_value(v, IRO_FMT_PLAIN, num, sizeof num);
    ir_buf_appendf(o, ",\"%s\":%s", key, num);
}

/* ,"outcomes":{...},"prompt_tokens_total":N,"ttft":{"count","sum","buckets":[[le,cum]..]} summed
 * over the models the replica serves (the +Inf bucket's le is null). */
void gw_metrics_state_replica(gw_app *app, const gw_replica *r, ir_buf *o) {
    const gw_rmetrics *x = r->metrics;
    if (!app->metrics || !x) return;
    double st[ST_N] = {0}, prompt = 0, sum = 0;
    uint64_t cum[IRO_MAX_BUCKETS + 1] = {0};
    size_t nb = 0;
    for (size_t mi = 0; mi < app->fleet.nmodels; mi++) {
        const rmodel *rm = &x->models[mi];
        if (!rm->ttft) continue;
        for (int k = 0; k < ST_N; k++) st[k] += iro_read(rm->status[k]);
        prompt += iro_read(rm->prompt_tokens);
        uint64_t c[IRO_MAX_BUCKETS + 1];
        double s = 0;
        nb = iro_read_hist(rm->ttft, c, IR_ARRAY_LEN(c), &s);
        for (size_t b = 0; b < nb; b++) cum[b] += c[b];
        sum += s;
    }
    ir_buf_append_lit(o, ",\"outcomes\":{");
    for (int k = 0; k < ST_N; k++)
        ir_buf_appendf(o, "%s\"%s\":%.0f", k ? "," : "", st_names[k], st[k]);
    ir_buf_append_lit(o, "}");
    json_num(o, "prompt_tokens_total", prompt);
    json_num(o, "ejections", iro_read(x->ejections));
    ir_buf_append_lit(o, ",\"ttft\":{");
    ir_buf_appendf(o, "\"count\":%llu", (unsigned long long)(nb ? cum[nb - 1] : 0));
    json_num(o, "sum", sum);
    ir_buf_append_lit(o, ",\"buckets\":[");
    for (size_t b = 0; b < nb; b++) {
        char le[64] = "null";
        if (b < iro_latency_nbuckets)
            iro_format_value(iro_latency_buckets[b], IRO_FMT_PLAIN, le, sizeof le);
        ir_buf_appendf(o, "%s[%s,%llu]", b ? "," : "", le, (unsigned long long)cum[b]);
    }
    ir_buf_append_lit(o, "]}");
}

/* ,"retries":N,"disconnects":N for a model. */
void gw_metrics_state_model(gw_app *app, const gw_model *md, ir_buf *o) {
    if (!app->metrics) return;
    const mmetrics *mm = &app->metrics->models[md->index];
    json_num(o, "retries", iro_read(mm->retries));
    json_num(o, "disconnects", iro_read(mm->disconnects));
}
