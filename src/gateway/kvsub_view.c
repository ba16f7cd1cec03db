/* kvsub_view.c: what the KV event subscriber shows: each replica's index source
 * in /admin/explain, and its counters in /metrics. */
#include "gateway/gateway.h"

#include <stddef.h>
#include <string.h>

static const char *source_name(int s) {
    static const char *names[] = {"approximate", "events", "events-partial",
                                  "approximate-after-gap", "events-stale"};
    return s >= 0 && s <= GW_KV_SOURCE_STALE ? names[s] : "approximate";
}

int gw_index_source(const gw_fleet *f, uint32_t slot) {
    const gw_kvsub_stats *st = gw_kvsub_replica(f, slot);
    if (!st) return GW_KV_SOURCE_APPROX;
    int src = atomic_load_explicit(&st->source, memory_order_relaxed);
    if (src != GW_KV_SOURCE_FALLBACK && !atomic_load_explicit(&st->connected, memory_order_relaxed))
        return GW_KV_SOURCE_STALE;
    return src;
}

double gw_prediction_trust(const gw_fleet *f, uint32_t slot) {
    const gw_index_cfg *c = &f->cfg->index;
    switch (gw_index_source(f, slot)) {
    case GW_KV_SOURCE_EVENTS:
    case GW_KV_SOURCE_PARTIAL:
        return 1.0; /* a partial view only lacks blocks */
    case GW_KV_SOURCE_FALLBACK:
        return c->fallback_trust;
    case GW_KV_SOURCE_STALE:
        return c->stale_trust;
    default:
        return c->approximate_trust;
    }
}

void gw_index_source_json(const gw_fleet *f, uint32_t slot, json_t *row) {
    const gw_kvsub_stats *st = gw_kvsub_replica(f, slot);
    json_object_set_new(row, "index_source", json_string(source_name(gw_index_source(f, slot))));
    json_object_set_new(row, "prediction_trust", json_real(gw_prediction_trust(f, slot)));
    if (!st) return;
    uint64_t last = atomic_load_explicit(&st->last_batch_ns, memory_order_relaxed);
    uint64_t now = ir_now_ns();
    json_object_set_new(row, "index_view_age_ms",
                        last ? json_integer((json_int_t)((now > last ? now - last : 0) / 1000000))
                             : json_null());
    irx_ev_view v;
    irx_ev_view_get(f->index, slot, &v);
    json_object_set_new(row, "index_event_blocks", json_integer((json_int_t)v.gpu_blocks));
    json_object_set_new(row, "index_cpu_blocks", json_integer((json_int_t)v.cpu_blocks));
    json_object_set_new(row, "index_orphan_blocks", json_integer((json_int_t)v.orphans));
}

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

static void labelled(ir_buf *o, const char *name, const char *id) {
    ir_buf_append_str(o, name);
    ir_buf_append_str(o, "{replica=\"");
    gw_prom_label_value(o, id);
    ir_buf_append_str(o, "\"} ");
}

void gw_kvsub_metrics(const gw_fleet *f, ir_buf *o) {
    if (!f->kvsub) return;
    for (size_t c = 0; c < IR_ARRAY_LEN(counters); c++) {
        ir_buf_appendf(o, "# HELP %s %s\n# TYPE %s counter\n", counters[c].name, counters[c].help,
                       counters[c].name);
        for (size_t i = 0; i < f->nreplicas; i++) {
            const gw_kvsub_stats *st = gw_kvsub_replica(f, (uint32_t)i);
            if (!st) continue;
            labelled(o, counters[c].name, f->replicas[i].cfg->id);
            const _Atomic uint64_t *v =
                (const _Atomic uint64_t *)((const char *)st + counters[c].off);
            ir_buf_appendf(o, "%llu\n", (unsigned long long)atomic_load(v));
        }
    }
    ir_buf_append_str(o,
                      "# HELP inferrail_index_parity_ratio Of the requests an event-fed "
                      "replica answered, the share whose every full prompt block its events "
                      "then showed stored (1 when none yet).\n# TYPE inferrail_index_parity_ratio "
                      "gauge\n");
    for (size_t i = 0; i < f->nreplicas; i++) {
        const gw_kvsub_stats *st = gw_kvsub_replica(f, (uint32_t)i);
        if (!st) continue;
        uint64_t n = atomic_load(&st->parity_checks), ok = atomic_load(&st->parity_agree);
        labelled(o, "inferrail_index_parity_ratio", f->replicas[i].cfg->id);
        ir_buf_appendf(o, "%.6f\n", n ? (double)ok / (double)n : 1.0);
    }
    ir_buf_append_str(o, "# HELP inferrail_kv_events_lag_seconds The last batch's arrival time "
                         "minus its engine timestamp.\n# TYPE inferrail_kv_events_lag_seconds "
                         "gauge\n");
    for (size_t i = 0; i < f->nreplicas; i++) {
        const gw_kvsub_stats *st = gw_kvsub_replica(f, (uint32_t)i);
        if (!st) continue;
        labelled(o, "inferrail_kv_events_lag_seconds", f->replicas[i].cfg->id);
        ir_buf_appendf(o, "%.6f\n", (double)atomic_load(&st->lag_us) * 1e-6);
    }
}
