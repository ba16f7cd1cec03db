/* round_robin.c: the next replica in turn, shared by all workers. */
#include "policy/ir_policy.h"

#include <stdatomic.h>
#include <stdlib.h>

typedef struct rr_state {
    _Atomic uint64_t next;
} rr_state;

static void *rr_create(const irp_config *cfg) {
    return calloc(1, sizeof(rr_state));
}
static void rr_destroy(void *s) {
    free(s);
}

/* The candidates come in fleet order, so turns rotate over the model's
 * replicas; one policy instance serves one model. A dry run names the next
 * turn without taking it. */
static size_t rr_choose(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    rr_state *s = state;
    if (req->dry_run) return (size_t)(atomic_load_explicit(&s->next, memory_order_relaxed) % n);
    return (size_t)(atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed) % n);
}

const irp_vtable irp_round_robin = {
    .name = "round_robin", .create = rr_create, .destroy = rr_destroy, .choose = rr_choose};
