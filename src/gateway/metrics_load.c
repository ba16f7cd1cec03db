/* metrics_load.c: the load signals' metrics: each replica's engine report (its
 * running, waiting, KV usage, prefix counters, age), the gateway's own prompt
 * token counts, and the scrapes by outcome. Rendered from the fleet's atomics
 * when /metrics is read. */
#include "gateway/gateway.h"

#include <math.h>
#include <string.h>

static void head(ir_buf *o, const char *name, const char *type, const char *help) {
    ir_buf_appendf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_start(ir_buf *o, const char *name, const gw_replica *r) {
    ir_buf_append_str(o, name);
    ir_buf_append_lit(o, "{replica=\"");
    gw_prom_label_value(o, r->cfg->id);
    ir_buf_append_lit(o, "\"");
}

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
    return gw_engine_report_age(r, now) <= a->cfg.load.max_age;
}
static double rd_prompt(gw_app *a, gw_replica *r, uint64_t now) {
    return (double)atomic_load(&r->prompt_tokens);
}
static double rd_pending_prompt(gw_app *a, gw_replica *r, uint64_t now) {
    return (double)atomic_load(&r->pending_tokens);
}

static const struct series {
    const char *name, *type, *help;
    read_fn read;
} series[] = {
    {"inferrail_replica_engine_running", "gauge",
     "Requests the engine runs, from its last metrics report (ranks summed).", rd_running},
    {"inferrail_replica_engine_waiting", "gauge",
     "Requests queued in the engine, from its last metrics report.", rd_waiting},
    {"inferrail_replica_engine_kv_usage", "gauge",
     "The engine's KV cache usage, 0 to 1, from its last metrics report.", rd_kv},
    {"inferrail_replica_engine_prefix_cache_queries_total", "counter",
     "Prompt tokens the engine looked up in its prefix cache, as it reports them.", rd_queries},
    {"inferrail_replica_engine_prefix_cache_hits_total", "counter",
     "Prompt tokens the engine found in its prefix cache, as it reports them.", rd_hits},
    {"inferrail_replica_engine_preemptions_total", "counter", "Preemptions the engine reports.",
     rd_preempt},
    {"inferrail_replica_engine_capacity_blocks", "gauge",
     "The engine's KV capacity in index blocks, as its metrics say (0: not said).", rd_capacity},
    {"inferrail_replica_engine_restarts_total", "counter",
     "Engine restarts seen (its prefix cache counters went backwards).", rd_restarts},
    {"inferrail_replica_report_age_seconds", "gauge",
     "Age of the engine's last readable metrics report (+Inf: none yet).", rd_age},
    {"inferrail_replica_report_age_max_seconds", "gauge",
     "The oldest engine report a policy was handed, capped at twice load.max_age.", rd_age_max},
    {"inferrail_replica_engine_fresh", "gauge",
     "1 when the engine's report is younger than load.max_age and policies use it.", rd_fresh},
    {"inferrail_replica_prompt_tokens_in_flight", "gauge",
     "Prompt tokens of the requests in flight to the replica (the gateway's own count).",
     rd_prompt},
    {"inferrail_replica_pending_prompt_tokens", "gauge",
     "Prompt tokens of the requests still waiting for the replica's first byte.",
     rd_pending_prompt},
};

static void value(ir_buf *o, double v) {
    if (isinf(v))
        ir_buf_append_lit(o, "} +Inf\n");
    else if (v == floor(v) && fabs(v) < 1e15)
        ir_buf_appendf(o, "} %.0f\n", v);
    else
        ir_buf_appendf(o, "} %.9g\n", v);
}

static void scrapes(gw_app *app, ir_buf *o) {
    head(o, "inferrail_load_scrapes_total", "counter",
         "Scrapes of the engines' metrics pages by result: ok, error, timeout, status (not "
         "200), too_large (past 4 MiB), unreadable (a required family missing).");
    for (size_t i = 0; i < app->fleet.nreplicas; i++) {
        if (!gw_replica_member(&app->fleet.replicas[i])) continue; /* departed: no series */
        irl_scrape_stats st;
        irl_scraper_stats(app->scraper, i, &st);
        for (int k = 0; k < IRL_SCRAPE_RESULTS; k++) {
            sample_start(o, "inferrail_load_scrapes_total", &app->fleet.replicas[i]);
            ir_buf_appendf(o, ",result=\"%s\"} %llu\n", irl_result_name((irl_result)k),
                           (unsigned long long)st.results[k]);
        }
    }
}

void gw_metrics_render_load(gw_app *app, ir_buf *o) {
    uint64_t now = ir_now_ns();
    for (size_t s = 0; s < IR_ARRAY_LEN(series); s++) {
        head(o, series[s].name, series[s].type, series[s].help);
        for (size_t i = 0; i < app->fleet.nreplicas; i++) {
            gw_replica *r = &app->fleet.replicas[i];
            if (!gw_replica_member(r)) continue; /* departed: no series */
            sample_start(o, series[s].name, r);
            value(o, series[s].read(app, r, now));
        }
    }
    scrapes(app, o);
}
