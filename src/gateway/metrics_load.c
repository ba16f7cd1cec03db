/* metrics_load.c: the load signals' metrics: each replica's engine report (its
 * running, waiting, KV usage, prefix counters, age), the scrapes by outcome, and
 * the decision log's records. Families of the gateway's registry, their values
 * read from the fleet's atomics by a collect hook when /metrics is read; a
 * replica's series go when it leaves (metrics.c removes every series with its
 * `replica` label), and the hook makes series for members only. */
#include "gateway/gateway.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What one series shows of a replica. */
typedef double (*read_fn)(gw_app *app, gw_replica *r, uint64_t now);

static double rd_running(gw_app *a, gw_replica *r, uint64_t now) {
    return atomic_load(&r->engine.running);
}
static double rd_waiting(gw_app *a, gw_replica *r, uint64_t now) {
    return atomic_load(&r->engine.waiting);
}
static double rd_kv(gw_app *a, gw_replica *r, uint64_t now) {
    return atomic_load(&r->engine.kv_usage_ppm) / 1e6;
}
static double rd_queries(gw_app *a, gw_replica *r, uint64_t now) {
    return (double)atomic_load(&r->engine.prefix_queries);
}
static double rd_hits(gw_app *a, gw_replica *r, uint64_t now) {
    return (double)atomic_load(&r->engine.prefix_hits);
}
static double rd_preempt(gw_app *a, gw_replica *r, uint64_t now) {
    return (double)atomic_load(&r->engine.preemptions);
}
static double rd_capacity(gw_app *a, gw_replica *r, uint64_t now) {
    return (double)atomic_load(&r->engine.capacity_blocks);
}
static double rd_restarts(gw_app *a, gw_replica *r, uint64_t now) {
    return (double)atomic_load(&r->engine.restarts);
}
static double rd_age(gw_app *a, gw_replica *r, uint64_t now) {
    uint64_t age = gw_engine_report_age(r, now);
    return age == UINT64_MAX ? INFINITY : age / 1e9;
}
static double rd_age_max(gw_app *a, gw_replica *r, uint64_t now) {
    return atomic_load(&r->engine.max_age_seen_ns) / 1e9;
}
static double rd_fresh(gw_app *a, gw_replica *r, uint64_t now) {
    return gw_engine_report_age(r, now) <= a->cfg.load.max_age_ns;
}
static const struct series {
    const char *name;
    bool counter;
    const char *help;
    read_fn read;
} series[] = {
    {"inferrail_replica_engine_running", false,
     "Requests the engine runs, from its last metrics report (ranks summed).", rd_running},
    {"inferrail_replica_engine_waiting", false,
     "Requests queued in the engine, from its last metrics report.", rd_waiting},
    {"inferrail_replica_engine_kv_usage", false,
     "The engine's KV cache usage, 0 to 1, from its last metrics report.", rd_kv},
    {"inferrail_replica_engine_prefix_cache_queries_total", true,
     "Prompt tokens the engine looked up in its prefix cache, as it reports them.", rd_queries},
    {"inferrail_replica_engine_prefix_cache_hits_total", true,
     "Prompt tokens the engine found in its prefix cache, as it reports them.", rd_hits},
    {"inferrail_replica_engine_preemptions_total", true, "Preemptions the engine reports.",
     rd_preempt},
    {"inferrail_replica_engine_capacity_blocks", false,
     "The engine's KV capacity in index blocks, as its metrics say (0: not said).", rd_capacity},
    {"inferrail_replica_engine_restarts_total", true,
     "Engine restarts seen (its prefix cache counters went backwards).", rd_restarts},
    {"inferrail_replica_report_age_seconds", false,
     "Age of the engine's last readable metrics report (+Inf: none yet).", rd_age},
    {"inferrail_replica_report_age_max_seconds", false,
     "The oldest engine report a policy was handed, capped at twice load.max_age.", rd_age_max},
    {"inferrail_replica_engine_fresh", false,
     "1 when the engine's report is younger than load.max_age and policies use it.", rd_fresh},
};
#define NSERIES IR_ARRAY_LEN(series)

struct gw_load_metrics {
    gw_app *app;
    iro_family *fam[NSERIES];
    iro_family *scrapes, *dlog, *log_dropped;
};

static void collect_replica(struct gw_load_metrics *lm, gw_replica *r, uint64_t now) {
    const char *id = r->cfg->id;
    for (size_t s = 0; s < NSERIES; s++)
        iro_set(iro_series_of(lm->fam[s], id), series[s].read(lm->app, r, now));
    irl_scrape_stats st;
    irl_scraper_stats(lm->app->scraper, r->index, &st);
    for (int k = 0; k < IRL_SCRAPE_RESULTS; k++)
        iro_set(iro_series_of(lm->scrapes, id, irl_result_name((irl_result)k)),
                (double)st.results[k]);
}

/* The collect hook: on the thread that renders /metrics. */
static void collect(void *ud) {
    struct gw_load_metrics *lm = ud;
    gw_fleet *f = &lm->app->fleet;
    uint64_t now = ir_now_ns();
    size_t n = atomic_load(&f->nreplicas);
    for (size_t i = 0; i < n; i++)
        if (gw_replica_member(&f->replicas[i])) collect_replica(lm, &f->replicas[i], now);
    iro_dlog_stats st;
    iro_dlog_stats_get(lm->app->dlog, &st);
    iro_set(iro_series_of(lm->dlog, "written"), (double)st.written);
    iro_set(iro_series_of(lm->dlog, "dropped"), (double)st.dropped);
    iro_set(iro_series_get(lm->log_dropped, NULL), (double)ir_log_dropped());
}

int gw_metrics_load_init(gw_app *app) {
    iro_registry *g = gw_metrics_registry(app);
    struct gw_load_metrics *lm = calloc(1, sizeof *lm);
    if (!g || !lm) {
        free(lm);
        return -1;
    }
    app->load_metrics = lm;
    lm->app = app;
    const char *const rep[] = {"replica", NULL};
    const char *const rr[] = {"replica", "result", NULL};
    const char *const res[] = {"result", NULL};
    for (size_t s = 0; s < NSERIES; s++) {
        lm->fam[s] = series[s].counter ? iro_counter(g, series[s].name, series[s].help, rep)
                                       : iro_gauge(g, series[s].name, series[s].help, rep);
        if (!lm->fam[s]) return -1;
    }
    lm->scrapes = iro_counter(g, "inferrail_load_scrapes_total",
                              "Scrapes of the engines' metrics pages by result: ok, error, "
                              "timeout, status (not 200), too_large (past 4 MiB), unreadable (a "
                              "required family missing), no_rank (a data-parallel rank the "
                              "engine does not have).",
                              rr);
    lm->dlog = iro_counter(g, "inferrail_decision_log_records_total",
                           "Routing decisions of sampled requests, written to "
                           "observability.decision_log.path or dropped (the disk fell behind).",
                           res);
    lm->log_dropped = iro_counter(g, "inferrail_log_lines_dropped_total",
                                  "Log lines dropped because stderr did not take them in time "
                                  "(a log collector that stalls): the gateway never waits on it.",
                                  NULL);
    if (!lm->scrapes || !lm->dlog || !lm->log_dropped) return -1;
    return iro_registry_on_collect(g, collect, lm);
}

void gw_metrics_load_free(gw_app *app) {
    free(app->load_metrics);
    app->load_metrics = NULL;
}
