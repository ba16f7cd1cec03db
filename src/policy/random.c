/* random.c: a uniform choice. */
#include "policy/ir_policy.h"

static size_t random_choose(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    return (size_t)ir_rng_below(req->rng, n);
}

const irp_vtable irp_random = {.name = "random", .choose = random_choose};
