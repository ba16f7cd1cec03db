/* policy.c: the registry of routing policies, and the calls into them. */
#include "policy/ir_policy.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct irp_policy {
    const irp_vtable *vt;
    void *state;
    _Atomic uint64_t out_of_range; /* answers of choose outside [0, n) */
    _Atomic uint32_t holders;      /* the user's count (irp_policy_hold) */
};

static const irp_vtable *const all[] = {
    &irp_round_robin, &irp_random,     &irp_least_request,      &irp_p2c, &irp_prefix_hash,
    &irp_kv_aware,    &irp_cost_model, &irp_sglang_cache_aware, NULL};

const irp_vtable *const *irp_all(void) {
    return all;
}

const irp_vtable *irp_find(const char *name) {
    for (size_t i = 0; all[i]; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

/* "round_robin, random, ...": policy names are short, so 256 bytes hold many;
 * a name that would not fit is left out rather than cut. */
static char names[256];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void build_names(void) {
    ir_buf b;
    ir_buf_fixed(&b, names, sizeof names);
    for (size_t i = 0; all[i]; i++) {
        size_t before = b.len;
        if ((i && ir_buf_append(&b, ", ", 2)) ||
            ir_buf_append(&b, all[i]->name, strlen(all[i]->name))) {
            b.len = before;
            names[before] = '\0';
            break;
        }
    }
}

const char *irp_names(void) {
    pthread_once(&names_once, build_names);
    return names;
}

void irp_config_defaults(irp_config *c) {
    *c = (irp_config){.load_factor = 1.25,
                      .cost_load_factor = 2.0,
                      .cost_load_floor = 8,
                      .work_weight = 1.0,
                      .tie_tolerance = 0.05,
                      .prefix_blocks = 4,
                      .vnodes = 64,
                      .hit_weight = 1.0,
                      .load_weight = 1.0,
                      .load_floor = 4,
                      .hit_tolerance = 0.05,
                      .prefill_a = 100e-6,
                      .prefill_b = 3.3e-9,
                      .prefill_d = 5e-3,
                      .tpot = 20e-3,
                      .cpu_token_s = 5e-6,
                      .kv_pressure = 0.95,
                      .hot_replicas = 0,
                      .hot_util = 0.7,
                      .hot_window_s = 10.0,
                      .session_affinity = false,
                      .cache_threshold = 0.3,
                      .balance_abs_threshold = 64,
                      .balance_rel_threshold = 1.5,
                      .max_tree_chars = 1u << 26};
}

irp_policy *irp_policy_new_from(const irp_vtable *vt, const irp_config *cfg) {
    if (!vt || !vt->choose) return NULL;
    irp_config defaults;
    if (!cfg) {
        irp_config_defaults(&defaults);
        cfg = &defaults;
    }
    irp_policy *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->vt = vt;
    p->state = vt->create ? vt->create(cfg) : NULL;
    return p;
}

irp_policy *irp_policy_new(const char *name, const irp_config *cfg) {
    return irp_policy_new_from(irp_find(name), cfg);
}

void irp_policy_free(irp_policy *p) {
    if (!p) return;
    if (p->vt->destroy) p->vt->destroy(p->state);
    free(p);
}

void irp_policy_hold(irp_policy *p) {
    atomic_fetch_add_explicit(&p->holders, 1, memory_order_relaxed);
}

void irp_policy_drop(irp_policy *p) {
    atomic_fetch_sub_explicit(&p->holders, 1, memory_order_release);
}

uint32_t irp_policy_holders(const irp_policy *p) {
    return atomic_load_explicit(&((irp_policy *)p)->holders, memory_order_acquire);
}

const char *irp_policy_name(const irp_policy *p) {
    return p->vt->name;
}

size_t irp_choose(irp_policy *p, const irp_request *req, const irp_candidate *c, size_t n) {
    if (n <= 1) return 0;
    size_t i = p->vt->choose(p->state, req, c, n);
    if (i < n) return i;
    assert(!"a policy chose outside [0, n)");
    if (atomic_fetch_add_explicit(&p->out_of_range, 1, memory_order_relaxed) == 0)
        IR_LOG(IR_LOG_ERROR, "policy", "%s chose %zu of %zu candidates (a bug; first seen)",
               p->vt->name, i, n);
    return 0;
}

uint64_t irp_policy_out_of_range(const irp_policy *p) {
    return atomic_load_explicit(&p->out_of_range, memory_order_relaxed);
}

void irp_policy_assigned(irp_policy *p, uint32_t replica, const irp_request *req) {
    if (p->vt->assigned) p->vt->assigned(p->state, replica, req);
}

void irp_policy_released(irp_policy *p, uint32_t replica, const irp_request *req) {
    if (p->vt->released) p->vt->released(p->state, replica, req);
}

void irp_policy_replica_up(irp_policy *p, uint32_t replica) {
    if (p->vt->replica_up) p->vt->replica_up(p->state, replica);
}

void irp_policy_replica_down(irp_policy *p, uint32_t replica) {
    if (p->vt->replica_down) p->vt->replica_down(p->state, replica);
}

void irp_policy_replica_added(irp_policy *p, uint32_t replica) {
    if (p->vt->replica_added) p->vt->replica_added(p->state, replica);
}

void irp_policy_replica_removed(irp_policy *p, uint32_t replica) {
    if (p->vt->replica_removed) p->vt->replica_removed(p->state, replica);
}

void irp_policy_explain(irp_policy *p, const irp_request *req, const irp_candidate *c, size_t n,
                        irp_explain *out) {
    for (size_t i = 0; i < n; i++) out[i] = (irp_explain){NAN, NAN};
    if (p->vt->explain && n > 0) p->vt->explain(p->state, req, c, n, out);
}
