/* kvsub_view.c: what the KV event subscriber shows in /admin/explain: each
 * replica's index source and view (its counters in /metrics: metrics_kv.c). */
#include "gateway/gateway.h"

#include <stddef.h>
#include <string.h>

const char *gw_index_source_name(int s) {
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
    json_object_set_new(row, "index_source",
                        json_string(gw_index_source_name(gw_index_source(f, slot))));
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
    json_object_set_new(row, "index_unseen_blocks", json_integer((json_int_t)v.unseen));
}
