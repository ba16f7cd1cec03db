/* ir_policy.h: the policy module's public header.
 *
 * A routing policy is a table of function pointers (one file per policy).
 * The gateway only ever offers a policy candidates that serve the model, are
 * healthy and have room; the policy picks one of them.
 *
 * Threading: a policy instance is shared by every worker thread. Its state is
 * either immutable or atomic; per-call randomness comes from the caller's
 * generator (one per worker), so a fixed routing.seed replays the same choices
 * for the same sequence of calls on a worker.
 */
#ifndef IR_POLICY_H
#define IR_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a policy knows about one candidate replica. */
typedef struct irp_candidate {
    uint32_t replica;                 /* the fleet's index of the replica */
    uint32_t in_flight;               /* requests sent and not finished */
    uint32_t pending;                 /* requests still waiting for a response head */
    uint64_t prompt_tokens_in_flight; /* estimated until a tokenizer exists */
    uint64_t predicted_cached_tokens; /* filled by the KV index; 0 without one */
} irp_candidate;

/* The request being routed. */
typedef struct irp_request {
    uint64_t prompt_tokens; /* estimated */
    ir_rng *rng;            /* the calling worker's generator */
} irp_request;

typedef struct irp_vtable {
    const char *name;
    /* Creates the shared state (may return NULL when stateless). */
    void *(*create)(void);
    void (*destroy)(void *state);
    /* Returns an index into c[0..n), n >= 1. */
    size_t (*choose)(void *state, const irp_request *req, const irp_candidate *c, size_t n);
} irp_vtable;

typedef struct irp_policy irp_policy;

/* The policies this build has, NULL-terminated. */
const irp_vtable *const *irp_all(void);
const irp_vtable *irp_find(const char *name);
/* A comma-separated list of the names, for error messages. */
const char *irp_names(void);

irp_policy *irp_policy_new(const char *name); /* NULL when unknown */
void irp_policy_free(irp_policy *p);
const char *irp_policy_name(const irp_policy *p);
size_t irp_choose(irp_policy *p, const irp_request *req, const irp_candidate *c, size_t n);

/* The tables, one per file. */
extern const irp_vtable irp_round_robin;
extern const irp_vtable irp_random;
extern const irp_vtable irp_least_request;
extern const irp_vtable irp_p2c;

#ifdef __cplusplus
}
#endif
#endif
