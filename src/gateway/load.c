/* load.c: the engines' load reports: the scraper of every replica's /metrics
 * (src/load), what each report changes in the fleet and the KV index, and the
 * freshness rule the policies see (docs/adr/0008-load-freshness.md). */
#include "gateway/gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the scraper's thread keeps of each slot: the previous report (restarts, and
 * capacity changes, are told from two reports) and the tag (the member's join
 * generation) it belongs to, and when its engine last seemed to restart. */
typedef struct slot_seen {
    irl_report prev;
    bool have_prev;
    bool flapping; /* restarts came within RESTART_QUIET_NS of each other: logged once */
    bool dp_told;  /* its engine has several data-parallel ranks, but it is one target */
    uint64_t tag;
    uint64_t restart_at;
} slot_seen;

struct gw_load {
    gw_app *app;
    slot_seen *slot;
};
typedef struct gw_load load_ctx;

/* Restarts closer together than this are one flapping episode: an engine in a crash
 * loop, or, more likely, a URL that reaches several engines in turn (a Service or a
 * load balancer), whose counters alternate. */
#define RESTART_QUIET_NS (60ull * 1000000000ull)

static void ctx_free(load_ctx *c) {
    if (!c) return;
    free(c->slot);
    free(c);
}

static uint32_t clamp_u32(double v) {
    return v >= 4294967295.0 ? UINT32_MAX : (uint32_t)v;
}
static uint64_t clamp_u64(double v) {
    return v >= 1.8e19 ? UINT64_MAX : (uint64_t)v;
}

/* The engine's capacity sizes the replica's shadow, unless the config fixes it. A
 * change is taken when two reports in a row give it (the first report of a member
 * counts alone), so that a URL whose pages alternate does not resize it each time. */
static void learn_capacity(gw_fleet *f, gw_replica *r, const slot_seen *seen,
                           const irl_report *rep) {
    uint64_t cap = irl_report_capacity_blocks(rep, f->block_size);
    atomic_store_explicit(&r->engine.capacity_blocks, cap, memory_order_relaxed);
    if (!cap || r->cfg->kv_capacity_blocks > 0 || !f->index) return;
    if (seen->have_prev && irl_report_capacity_blocks(&seen->prev, f->block_size) != cap) return;
    uint32_t want = (uint32_t)IR_MIN(cap, GW_MAX_CAPACITY_BLOCKS);
    if (irx_capacity(f->index, r->index) == want) return;
    if (want < cap)
        IR_WARN("load",
                "replica %s: its engine reports %llu KV blocks; the KV index takes it at %u "
                "(set kv_capacity_blocks to quiet this)",
                r->cfg->id, (unsigned long long)cap, want);
    if (irx_set_capacity(f->index, r->index, want) == 0)
        IR_INFO("load", "replica %s: the KV index now sizes it at %u blocks, as its engine says",
                r->cfg->id, want);
}

/* The engine's prefix cache counters went backwards: it restarted, and its cache with
 * it. Counted and cleared each time; logged once per flapping episode. */
static void restarted(gw_fleet *f, gw_replica *r, slot_seen *seen) {
    uint64_t now = ir_now_ns();
    bool quick = seen->restart_at && now - seen->restart_at < RESTART_QUIET_NS;
    seen->restart_at = now;
    atomic_fetch_add_explicit(&r->engine.restarts, 1, memory_order_relaxed);
    if (f->index) irx_reset_replica(f->index, r->index);
    if (!quick) {
        seen->flapping = false;
        IR_WARN("load",
                "replica %s: its engine restarted (prefix cache counters went backwards); its "
                "KV index view is cleared",
                r->cfg->id);
    } else if (!seen->flapping) {
        seen->flapping = true;
        IR_WARN("load",
                "replica %s: its prefix cache counters went backwards again within %llu s: a "
                "crash loop, or a URL that reaches several engines in turn (a Service or a load "
                "balancer; give the gateway each engine instead). Each time clears its KV index "
                "view; they are counted in inferrail_replica_engine_restarts_total, and not "
                "logged until %llu s pass without one",
                r->cfg->id, RESTART_QUIET_NS / 1000000000ull, RESTART_QUIET_NS / 1000000000ull);
    }
}

/* A data-parallel target whose rank its engine's page lacks (while it reports others)
 * is not offered: the engine would answer every request pinned to it with a 400. */
static void rank_seen(gw_replica *r, bool missing) {
    if (atomic_exchange(&r->no_rank, missing) == (int)missing) return;
    if (missing)
        IR_WARN("load",
                "replica %s: its engine's metrics page reports other data-parallel ranks but "
                "not %s (data_parallel_size is larger than the engine's): not offered until the "
                "page reports it",
                r->cfg->id, r->dp_value);
    else
        IR_INFO("load", "replica %s: its engine reports its data-parallel rank: offered again",
                r->cfg->id);
}

/* An engine with several data-parallel ranks behind a replica that is one target:
 * its own balancer picks the rank, blind to their caches. Said once per member. */
static void ranks_seen(const gw_replica *r, slot_seen *seen, const irl_report *rep) {
    if (r->cfg->dp_target || rep->ranks < 2 || seen->dp_told) return;
    seen->dp_told = true;
    IR_WARN("load",
            "replica %s: its engine reports %u data-parallel ranks, and the replica is one "
            "target, so the engine picks the rank, blind to what each rank has cached; set "
            "data_parallel_size: %u to route to each rank's own cache",
            r->cfg->id, rep->ranks, rep->ranks);
}

static void on_report(void *ud, size_t i, uint64_t tag, irl_result res, const irl_report *rep,
                      uint64_t at) {
    load_ctx *c = ud;
    gw_fleet *f = &c->app->fleet;
    if (i >= f->nreplicas) return;
    gw_replica *r = &f->replicas[i];
    /* A report of a member that left, or of an earlier member of this slot. */
    if (!gw_replica_member(r) || tag != atomic_load(&r->gen)) return;
    if (res == IRL_SCRAPE_NO_RANK) rank_seen(r, true);
    if (res != IRL_SCRAPE_OK) return; /* the report just ages */
    rank_seen(r, false);
    slot_seen *seen = &c->slot[i];
    if (seen->tag != tag) /* a new member here: nothing seen of it yet */
        *seen = (slot_seen){.tag = tag};
    if (seen->have_prev && irl_report_restarted(&seen->prev, rep)) restarted(f, r, seen);
    learn_capacity(f, r, seen, rep);
    ranks_seen(r, seen, rep);
    seen->prev = *rep;
    seen->have_prev = true;
    gw_engine_load *e = &r->engine;
    atomic_store_explicit(&e->running, clamp_u32(rep->running), memory_order_relaxed);
    atomic_store_explicit(&e->waiting, clamp_u32(rep->waiting), memory_order_relaxed);
    atomic_store_explicit(&e->kv_usage_ppm, (uint32_t)(rep->kv_usage * 1e6 + 0.5),
                          memory_order_relaxed);
    atomic_store_explicit(&e->prefix_queries, clamp_u64(rep->prefix_queries), memory_order_relaxed);
    atomic_store_explicit(&e->prefix_hits, clamp_u64(rep->prefix_hits), memory_order_relaxed);
    atomic_store_explicit(&e->preemptions, clamp_u64(rep->preemptions), memory_order_relaxed);
    atomic_store_explicit(&e->at_ns, at ? at : ir_now_ns(), memory_order_release);
}

/* The scraper's target for member r (path: room for it). */
static irl_target target_of(const gw_replica *r, char (*path)[600]) {
    snprintf(*path, sizeof *path, "%s/metrics", r->url.path);
    return (irl_target){.id = r->cfg->id,
                        .host = r->url.host,
                        .port = r->url.port,
                        .path = *path,
                        .tag = atomic_load(&r->gen),
                        .ranked = r->cfg->dp_target,
                        .rank = (uint32_t)r->cfg->dp_rank};
}

/* A joining member starts with no report: a reused slot's last one was another
 * engine's. */
static void engine_reset(gw_engine_load *e) {
    atomic_store_explicit(&e->at_ns, 0, memory_order_release);
    atomic_store(&e->running, 0);
    atomic_store(&e->waiting, 0);
    atomic_store(&e->kv_usage_ppm, 0);
    atomic_store(&e->prefix_queries, 0);
    atomic_store(&e->prefix_hits, 0);
    atomic_store(&e->preemptions, 0);
    atomic_store(&e->capacity_blocks, 0);
    atomic_store(&e->restarts, 0);
    atomic_store(&e->max_age_seen_ns, 0);
}

/* The fleet's membership hook: the scraper follows members. */
static void on_member(void *ud, gw_replica *r, bool joined) {
    gw_app *app = ud;
    int rc;
    if (joined) {
        engine_reset(&r->engine);
        char path[600];
        irl_target t = target_of(r, &path);
        rc = irl_scraper_set(app->scraper, r->index, &t);
    } else {
        rc = irl_scraper_set(app->scraper, r->index, NULL);
    }
    if (rc) IR_WARN("load", "replica %s: out of memory for its scrape target", r->cfg->id);
}

static load_ctx *ctx_new(gw_app *app, size_t n) {
    load_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->app = app;
    c->slot = calloc(n, sizeof *c->slot);
    if (c->slot) return c;
    ctx_free(c);
    return NULL;
}

int gw_load_start(gw_app *app) {
    gw_fleet *f = &app->fleet;
    size_t used = f->nreplicas, slots = f->nslots ? f->nslots : 1;
    load_ctx *c = ctx_new(app, slots);
    irl_target *t = calloc(used ? used : 1, sizeof *t);
    char(*paths)[600] = calloc(used ? used : 1, sizeof *paths);
    int rc = UV_ENOMEM;
    if (!c || !t || !paths) goto out;
    for (size_t i = 0; i < used; i++) /* members now; the hook tells the rest */
        if (gw_replica_member(&f->replicas[i])) t[i] = target_of(&f->replicas[i], &paths[i]);
    irl_scraper_cfg sc = {.interval_ns = app->cfg.load.scrape_interval_ns,
                          .timeout_ns = app->cfg.load.scrape_timeout_ns,
                          .max_page = IRL_MAX_PAGE,
                          .on_report = on_report,
                          .ud = c};
    app->scraper = irl_scraper_new(&sc, t, used, f->nslots);
    if (!app->scraper || gw_fleet_listen(f, on_member, app)) goto fail;
    rc = irl_scraper_start(app->scraper);
    if (rc) {
        gw_fleet_unlisten(f, on_member, app);
        goto fail;
    }
    app->load = c;
    c = NULL;
    goto out;
fail:
    irl_scraper_free(app->scraper);
    app->scraper = NULL;
    if (!rc) rc = UV_ENOMEM;
out:
    ctx_free(c);
    free(t);
    free(paths);
    return rc;
}

void gw_load_stop(gw_app *app) {
    if (app->scraper) gw_fleet_unlisten(&app->fleet, on_member, app);
    irl_scraper_free(app->scraper); /* joins: no report after this */
    app->scraper = NULL;
    ctx_free(app->load);
    app->load = NULL;
}

uint64_t gw_engine_report_age(const gw_replica *r, uint64_t now) {
    uint64_t at = atomic_load_explicit(&r->engine.at_ns, memory_order_acquire);
    if (!at) return UINT64_MAX;
    return now > at ? now - at : 0;
}

void gw_engine_fill(gw_replica *r, uint64_t now, uint64_t max_age, irp_candidate *c) {
    uint64_t age = gw_engine_report_age(r, now);
    c->engine_fresh = false;
    if (age == UINT64_MAX) return;
    /* The oldest report any policy was handed: a relaxed read, written only when
     * it grows, and saturated at twice max_age (stale is stale) so that a dead
     * engine's ever older report stops writing it. */
    _Atomic uint64_t *seen = &r->engine.max_age_seen_ns;
    uint64_t rec = IR_MIN(age, 2 * max_age);
    uint64_t old = atomic_load_explicit(seen, memory_order_relaxed);
    while (rec > old && !atomic_compare_exchange_weak_explicit(
                            seen, &old, rec, memory_order_relaxed, memory_order_relaxed)) {}
    if (age > max_age) return; /* stale: the gateway's own counters only */
    c->engine_fresh = true;
    c->engine_running = atomic_load_explicit(&r->engine.running, memory_order_relaxed);
    c->engine_waiting = atomic_load_explicit(&r->engine.waiting, memory_order_relaxed);
    c->engine_kv_usage = atomic_load_explicit(&r->engine.kv_usage_ppm, memory_order_relaxed) / 1e6;
}

void gw_engine_state_json(gw_app *app, gw_replica *r, uint64_t now, ir_buf *o) {
    uint64_t age = gw_engine_report_age(r, now);
    const gw_engine_load *e = &r->engine;
    ir_buf_append_lit(o, ",\"engine\":{\"age_ms\":");
    if (age == UINT64_MAX)
        ir_buf_append_lit(o, "null");
    else
        ir_buf_appendf(o, "%.3f", age / 1e6);
    ir_buf_appendf(o,
                   ",\"fresh\":%s,\"running\":%u,\"waiting\":%u,\"kv_usage\":%.6f,"
                   "\"prefix_queries\":%llu,\"prefix_hits\":%llu,\"capacity_blocks\":%llu,"
                   "\"max_age_seen_ms\":%.3f,\"scrapes\":{",
                   age <= app->cfg.load.max_age_ns ? "true" : "false",
                   (unsigned)atomic_load(&e->running), (unsigned)atomic_load(&e->waiting),
                   atomic_load(&e->kv_usage_ppm) / 1e6,
                   (unsigned long long)atomic_load(&e->prefix_queries),
                   (unsigned long long)atomic_load(&e->prefix_hits),
                   (unsigned long long)atomic_load(&e->capacity_blocks),
                   atomic_load(&e->max_age_seen_ns) / 1e6);
    irl_scrape_stats st;
    irl_scraper_stats(app->scraper, r->index, &st);
    for (int k = 0; k < IRL_SCRAPE_RESULTS; k++)
        ir_buf_appendf(o, "%s\"%s\":%llu", k ? "," : "", irl_result_name((irl_result)k),
                       (unsigned long long)st.results[k]);
    ir_buf_append_lit(o, "}}");
}
