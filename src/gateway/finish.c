/* finish.c: stage 10, once per request just before it is freed: the access log.
 * The KV index's feedback and per-request metrics join here as they land. */
#include "gateway/request.h"

void gw_finish(gw_req *r) {
    if (!r->w->app->cfg.logging.access_log) return;
    IR_INFO("access", "id=%s model=%s replica=%s status=%d attempts=%d ms=%.3f%s", r->rid,
            r->model ? r->model->cfg->name : "-", r->last_replica ? r->last_replica : "-",
            r->status, r->attempt, (double)(ir_now_ns() - r->arrival) / 1e6,
            r->client_gone ? " client_gone=1" : "");
}
