/* policy.c: the registry of routing policies. */
#include "policy/ir_policy.h"

#include <stdlib.h>
#include <string.h>

struct irp_policy {
    const irp_vtable *vt;
    void *state;
};

static const irp_vtable *const all[] = {&irp_round_robin, &irp_random, &irp_least_request, &irp_p2c,
                                        NULL};

const irp_vtable *const *irp_all(void) {
    return all;
}

const irp_vtable *irp_find(const char *name) {
    for (size_t i = 0; all[i]; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    return NULL;
}

const char *irp_names(void) {
    return "round_robin, random, least_request, p2c";
}

irp_policy *irp_policy_new(const char *name) {
    const irp_vtable *vt = irp_find(name);
    if (!vt) return NULL;
    irp_policy *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->vt = vt;
    p->state = vt->create ? vt->create() : NULL;
    return p;
}

void irp_policy_free(irp_policy *p) {
    if (!p) return;
    if (p->vt->destroy) p->vt->destroy(p->state);
    free(p);
}

const char *irp_policy_name(const irp_policy *p) {
    return p->vt->name;
}

size_t irp_choose(irp_policy *p, const irp_request *req, const irp_candidate *c, size_t n) {
    if (n <= 1) return 0;
    size_t i = p->vt->choose(p->state, req, c, n);
    return i < n ? i : n - 1;
}
