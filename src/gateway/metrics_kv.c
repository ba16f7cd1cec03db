/* metrics_kv.c: the KV index's metrics: its size, and each replica's predictions
 * against what its engine reported. */
#include "gateway/gateway.h"

#include <string.h>

/* {replica="<id>" (the caller closes the brace), escaped by gw_prom_label_value. */
static void replica_label(ir_buf *o, const char *id) {
    ir_buf_append_str(o, "{replica=\"");
    gw_prom_label_value(o, id);
    ir_buf_append_str(o, "\"");
}

static void head(ir_buf *o, const char *name, const char *type, const char *help) {
    ir_buf_appendf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void per_replica(ir_buf *o, const gw_fleet *f, const char *name, const char *type,
                        const char *help, size_t field) {
    head(o, name, type, help);
    for (size_t i = 0; i < f->nreplicas; i++) {
        const gw_replica *r = &f->replicas[i];
        if (!gw_replica_member(r)) continue;
        ir_buf_append_str(o, name);
        replica_label(o, r->cfg->id);
        uint64_t v = atomic_load((_Atomic uint64_t *)((const char *)r + field));
        ir_buf_appendf(o, "} %llu\n", (unsigned long long)v);
    }
}

static void predictions(ir_buf *o, const gw_fleet *f) {
    static const char *results[] = {"exact", "over", "under"};
    head(o, "inferrail_predictions_total", "counter",
         "Predictions compared with the engine's reported cached tokens, by result (over: the "
         "index predicted more than the engine had).");
    for (size_t i = 0; i < f->nreplicas; i++) {
        const gw_replica *r = &f->replicas[i];
        if (!gw_replica_member(r)) continue;
        const _Atomic uint64_t *v[] = {&r->predictions_exact, &r->predictions_over,
                                       &r->predictions_under};
        for (size_t k = 0; k < 3; k++) {
            ir_buf_append_str(o, "inferrail_predictions_total");
            replica_label(o, r->cfg->id);
            ir_buf_appendf(o, ",result=\"%s\"} %llu\n", results[k],
                           (unsigned long long)atomic_load(v[k]));
        }
    }
}

static void index_size(ir_buf *o, const gw_fleet *f) {
    irx_stats st;
    irx_stats_get(f->index, &st);
    head(o, "inferrail_index_entries", "gauge", "Distinct blocks in the KV index.");
    ir_buf_appendf(o, "inferrail_index_entries %llu\n", (unsigned long long)st.entries);
    head(o, "inferrail_index_bytes", "gauge", "Memory the KV index holds.");
    ir_buf_appendf(o, "inferrail_index_bytes %llu\n", (unsigned long long)st.bytes);
    head(o, "inferrail_index_resets_total", "counter",
         "Replicas whose view was cleared because their engine restarted.");
    ir_buf_appendf(o, "inferrail_index_resets_total %llu\n", (unsigned long long)st.resets);
    head(o, "inferrail_index_replica_blocks", "gauge",
         "Blocks the KV index believes the replica holds.");
    for (size_t i = 0; i < f->nreplicas; i++) {
        if (!gw_replica_member(&f->replicas[i])) continue;
        ir_buf_append_str(o, "inferrail_index_replica_blocks");
        replica_label(o, f->replicas[i].cfg->id);
        ir_buf_appendf(o, "} %u\n", irx_replica_blocks(f->index, (uint32_t)i));
    }
    head(o, "inferrail_index_replica_capacity_blocks", "gauge",
         "The replica's KV cache size the index uses, in blocks.");
    for (size_t i = 0; i < f->nreplicas; i++) {
        if (!gw_replica_member(&f->replicas[i])) continue;
        ir_buf_append_str(o, "inferrail_index_replica_capacity_blocks");
        replica_label(o, f->replicas[i].cfg->id);
        ir_buf_appendf(o, "} %u\n", irx_capacity(f->index, (uint32_t)i));
    }
}

void gw_metrics_render_kv(const gw_fleet *f, ir_buf *o) {
    if (!f->index) return;
    index_size(o, f);
    per_replica(o, f, "inferrail_predicted_cached_tokens_total", "counter",
                "Cached prompt tokens the KV index predicted for requests sent to the replica.",
                offsetof(gw_replica, predicted_tokens));
    per_replica(o, f, "inferrail_reported_cached_tokens_total", "counter",
                "Cached prompt tokens the replica's engine reported in usage.",
                offsetof(gw_replica, reported_tokens));
    predictions(o, f);
    gw_kvsub_metrics(f, o);
}
