/* metrics_kv.c: the KV event subscriber's metrics (one series per event-fed
 * replica): its counters, the parity self-test's ratio, the event lag and
 * the view's source.
 * Families of the gateway's registry whose values a collect hook reads from
 * each replica's gw_kvsub_stats atomics when /metrics is read; series are made
 * for members only, and go when a replica leaves (metrics.c removes every
 * series with its `replica` label). */
#include "gateway/gateway.h"

#include <stddef.h>
#include <stdlib.h>

typedef struct counter {
    const char *name, *help;
    size_t off;
} counter;

#define C(n, field, help)                                                                          \
    { "inferrail_kv_events_" n, help, offsetof(gw_kvsub_stats, field) }
static const counter counters[] = {
    C("batches_total", batches, "Event batches applied to the index."),
    C("received_total", events, "Engine KV events applied to the index."),
    C("blocks_stored_total", blocks_stored, "Blocks the engine reported stored."),
    C("blocks_removed_total", blocks_removed, "Blocks the engine reported removed."),
    C("clears_total", clears, "AllBlocksCleared events."),
    C("orphan_blocks_total", orphans,
      "Stored blocks whose chain began before anything the gateway saw (not placed)."),
    C("refused_total", refused, "Events that could not be applied (another block size, caps)."),
    C("other_group_total", other_group,
      "Events of a KV cache group the index does not follow (a hybrid model's sliding-window or "
      "Mamba layers)."),
    C("other_rank_batches_total", other_rank,
      "Batches whose data_parallel_rank is not the target's (another rank's stream or replay; "
      "skipped)."),
    C("replayed_batches_total", replayed, "Batches received from the engine's replay socket."),
    C("gaps_total", gaps, "Jumps in the batch sequence."),
    C("fallbacks_total", fallbacks,
      "Gaps no replay could fill: the view was cleared and tracked approximately."),
    C("decode_errors_total", decode_errors, "Messages or payloads that did not decode (skipped)."),
    C("restarts_total", restarts, "Sequences that went back: the engine restarted."),
    C("reconnects_total", reconnects,
      "Reconnections to the engine's event socket (the view is cleared and replayed from 0)."),
    C("parity_checks_total", parity_checks,
      "Requests answered by the replica whose stored blocks the parity self-test checked."),
};
#define NCOUNTERS IR_ARRAY_LEN(counters)

struct gw_kv_metrics {
    gw_app *app;
    iro_family *counter[NCOUNTERS];
    iro_family *parity, *lag, *source;
};

static uint64_t stat_of(const gw_kvsub_stats *st, size_t c) {
    return atomic_load((const _Atomic uint64_t *)((const char *)st + counters[c].off));
}

static void collect_replica(struct gw_kv_metrics *km, const char *id, const gw_kvsub_stats *st,
                            int source) {
    for (size_t c = 0; c < NCOUNTERS; c++)
        iro_set(iro_series_of(km->counter[c], id), (double)stat_of(st, c));
    uint64_t n = atomic_load(&st->parity_checks), ok = atomic_load(&st->parity_agree);
    iro_set(iro_series_of(km->parity, id), n ? (double)ok / (double)n : 1.0);
    iro_set(iro_series_of(km->lag, id),
            (double)atomic_load(&st->lag_us) / 1e6); /* 0.00236, not 0.0023599999999999997 */
    /* One series per source, 1 for the one in force (a state set). */
    for (int s = GW_KV_SOURCE_EVENTS; s <= GW_KV_SOURCE_STALE; s++)
        iro_set(iro_series_of(km->source, id, gw_index_source_name(s)), s == source ? 1.0 : 0.0);
}

/* The collect hook: on the thread that renders /metrics. */
static void collect(void *ud) {
    struct gw_kv_metrics *km = ud;
    gw_fleet *f = &km->app->fleet;
    if (!f->kvsub) return;
    size_t n = atomic_load(&f->nreplicas);
    for (size_t i = 0; i < n; i++) {
        const gw_kvsub_stats *st = gw_kvsub_replica(f, (uint32_t)i);
        if (st && gw_replica_member(&f->replicas[i]))
            collect_replica(km, f->replicas[i].cfg->id, st, gw_index_source(f, (uint32_t)i));
    }
}

int gw_metrics_kv_init(gw_app *app) {
    iro_registry *g = gw_metrics_registry(app);
    struct gw_kv_metrics *km = calloc(1, sizeof *km);
    if (!g || !km) {
        free(km);
        return -1;
    }
    app->kv_metrics = km;
    km->app = app;
    const char *const rep[] = {"replica", NULL};
    for (size_t c = 0; c < NCOUNTERS; c++)
        if (!(km->counter[c] = iro_counter(g, counters[c].name, counters[c].help, rep))) return -1;
    km->parity = iro_gauge(g, "inferrail_index_parity_ratio",
                           "Of the requests an event-fed replica answered, the share whose every "
                           "full prompt block its events then showed stored (1 when none yet).",
                           rep);
    km->lag = iro_gauge(g, "inferrail_kv_events_lag_seconds",
                        "The last batch's arrival time minus its engine timestamp.", rep);
    const char *const rep_source[] = {"replica", "source", NULL};
    km->source = iro_gauge(g, "inferrail_index_source",
                           "1 for the view an event-fed replica's predictions come from now "
                           "(source: events, events-partial, approximate-after-gap, "
                           "events-stale), 0 for the others.",
                           rep_source);
    if (!km->parity || !km->lag || !km->source) return -1;
    return iro_registry_on_collect(g, collect, km);
}

void gw_metrics_kv_free(gw_app *app) {
    free(app->kv_metrics);
    app->kv_metrics = NULL;
}
