/* choose.c: stages 6 and 7: the candidates a request is offered, and the lease on
 * the policy's pick. */
#include "gateway/request.h"

gw_choice gw_choose(gw_req *r) {
    gw_fleet *f = &r->w->app->fleet;
    uint64_t now = ir_now_ns();
    irp_candidate cand[GW_MAX_REPLICAS];
    for (int pass = 0; pass < 2; pass++) { /* untried replicas first, then any */
        size_t healthy = 0;
        size_t n = gw_fleet_candidates(f, r->model->index, now, pass == 0 ? r->tried : NULL, cand,
                                       &healthy);
        if (healthy == 0) return GW_NONE_HEALTHY;
        irp_request q = {.prompt_tokens = r->prompt_tokens, .rng = &r->w->rng};
        while (n > 0) {
            size_t k = irp_choose(r->model->policy, &q, cand, n);
            gw_replica *rep = &f->replicas[cand[k].replica];
            if (gw_lease_take(rep, r->prompt_tokens)) {
                r->rep = rep;
                r->lease_pending = true;
                return GW_CHOSEN;
            }
            cand[k] = cand[--n]; /* lost the race for its last slot */
        }
    }
    return GW_ALL_FULL;
}
