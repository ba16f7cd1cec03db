/* finish.c: stage 10, once per request just before it is freed: the access log.
 * The KV index's feedback and per-request metrics join here as they land. */
#include "gateway/request.h"

/* The engine's share of the request's time: from the last attempt's send to its
 * response head, in ms; -1 when no engine answered. The rest of `ms` is the
 * gateway's (and its loop's) own time, and the body's transfer. */
static double engine_ms(const gw_req *r) {
    if (!r->up_sent || r->up_head < r->up_sent) return -1;
    return (double)(r->up_head - r->up_sent) / 1e6;
}

/* In the json format, each of the access log's values is a field of its own. */
static void access_json(const gw_req *r, double ms) {
    ir_log_field f[] = {
        {"request_id", r->rid, 0},
        {"model", r->model ? r->model->cfg->name : "-", 0},
        {"replica", r->last_replica ? r->last_replica : "-", 0},
        {"status", NULL, r->status},
        {"attempts", NULL, r->attempt},
        {"ms", NULL, ms},
        {"engine_ms", NULL, engine_ms(r)},
        {"prompt_tokens", NULL, (double)r->prompt_tokens},
        {"client_gone", NULL, r->client_gone && !r->cut},
        {"cut", NULL, r->cut},
    };
    ir_log_fields(IR_LOG_INFO, "access", "request", f, IR_ARRAY_LEN(f));
}

void gw_finish(gw_req *r) {
    gw_metrics_finish(r, r->last_rep);
    if (r->tr) gw_trace_finish(r);
    if (!gw_live(r->w->app)->logging.access_log) return;
    double ms = (double)(ir_now_ns() - r->arrival) / 1e6;
    if (ir_log_is_json()) {
        access_json(r, ms);
        return;
    }
    IR_INFO("access",
            "id=%s model=%s replica=%s status=%d attempts=%d ms=%.3f engine_ms=%.3f "
            "prompt_tokens=%llu%s",
            r->rid, r->model ? r->model->cfg->name : "-", r->last_replica ? r->last_replica : "-",
            r->status, r->attempt, ms, engine_ms(r), (unsigned long long)r->prompt_tokens,
            r->cut           ? " cut=1"
            : r->client_gone ? " client_gone=1"
                             : "");
}
