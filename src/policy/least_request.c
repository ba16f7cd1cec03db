/* least_request.c: fewest requests in flight, ties broken at random. */
#include "policy/ir_policy.h"

static size_t lr_choose(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    uint32_t best = UINT32_MAX;
    size_t ties = 0, pick = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].in_flight < best) {
            best = c[i].in_flight;
            ties = 1;
            pick = i;
        } else if (c[i].in_flight == best) {
            /* Reservoir sampling keeps each tied candidate equally likely. */
            ties++;
            if (ir_rng_below(req->rng, ties) == 0) pick = i;
        }
    }
    return pick;
}

const irp_vtable irp_least_request = {.name = "least_request", .choose = lr_choose};
