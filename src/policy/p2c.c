/* p2c.c: power of two choices: two distinct random candidates, the less loaded
 * one wins (in flight, then pending, then a coin). */
#include "policy/ir_policy.h"

static size_t p2c_choose(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    if (n < 2) return 0; /* two distinct candidates need two */
    size_t a = (size_t)ir_rng_below(req->rng, n);
    size_t b = (size_t)ir_rng_below(req->rng, n - 1);
    if (b >= a) b++;
    if (c[a].in_flight != c[b].in_flight) return c[a].in_flight < c[b].in_flight ? a : b;
    if (c[a].pending != c[b].pending) return c[a].pending < c[b].pending ? a : b;
    return ir_rng_below(req->rng, 2) ? a : b;
}

const irp_vtable irp_p2c = {.name = "p2c", .choose = p2c_choose};
