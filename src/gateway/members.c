/* members.c: the fleet's membership at run time. Discovery (on the control
 * thread) is the only writer; workers read slots without waiting: a slot's
 * `active` flag is published last on join (release) and read first (acquire). */
#include "gateway/gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gw_replica_member(const gw_replica *r) {
    return atomic_load_explicit(&r->active, memory_order_acquire) != 0;
}

/* The KV index's capacity for a (re)joining member: its group's
 * kv_capacity_blocks, else the default. */
static void index_capacity(gw_fleet *f, gw_replica *r) {
    if (irx_set_capacity(f->index, r->index, gw_capacity_blocks(f, r->cfg->kv_capacity_blocks)))
        IR_WARN("fleet", "replica %s: out of memory for its KV index view", r->cfg->id);
}

static void zero_counters(gw_replica *r) {
    atomic_store(&r->requests, 0);
    atomic_store(&r->failures, 0);
    atomic_store(&r->predicted_tokens, 0);
    atomic_store(&r->reported_tokens, 0);
    atomic_store(&r->predictions_exact, 0);
    atomic_store(&r->predictions_over, 0);
    atomic_store(&r->predictions_under, 0);
    atomic_store(&r->reports_cached, 0);
    atomic_store(&r->ejections, 0);
    atomic_store(&r->ejections_total, 0);
}

/* Fills slot r (not a member, not in use) with cfg. */
static int fill_cfg(gw_fleet *f, gw_replica *r, uint32_t slot, const gw_replica_cfg *cfg) {
    ir_url u;
    if (ir_url_parse(cfg->url, &u)) return -1;
    free(r->extra);
    r->extra = NULL;
    r->nextra = 0;
    r->cfg = cfg;
    r->url = u;
    r->index = slot;
    gw_replica_models(f, r);
    zero_counters(r);
    return gw_replica_headers_init(r);
}

/* Copies endpoint ep (or NULL) into buf; false when it does not fit. */
static bool copy_endpoint(char *buf, const char *ep, char **out) {
    *out = NULL;
    if (!ep) return true;
    if (strlen(ep) >= GW_EV_ENDPOINT_MAX) return false;
    snprintf(buf, GW_EV_ENDPOINT_MAX, "%s", ep);
    *out = buf;
    return true;
}

/* Fills slot r as discovered replica id at url, with its group's settings. */
static int fill(gw_fleet *f, gw_replica *r, uint32_t slot, const char *id, const char *url,
                const gw_replica_cfg *tmpl) {
    if (strlen(id) >= sizeof r->dyn_id || strlen(url) >= sizeof r->dyn_url) return -1;
    snprintf(r->dyn_id, sizeof r->dyn_id, "%s", id);
    snprintf(r->dyn_url, sizeof r->dyn_url, "%s", url);
    r->dyn_cfg = *tmpl;
    r->dyn_cfg.id = r->dyn_id;
    r->dyn_cfg.url = r->dyn_url;
    gw_kv_events_cfg *e = &r->dyn_cfg.kv_events;
    if (!copy_endpoint(r->dyn_events[0], tmpl->kv_events.endpoint, &e->endpoint) ||
        !copy_endpoint(r->dyn_events[1], tmpl->kv_events.replay_endpoint, &e->replay_endpoint))
        return -1;
    r->dynamic = true;
    return fill_cfg(f, r, slot, &r->dyn_cfg);
}

static bool str_same(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

bool gw_replica_same_target(const gw_replica *r, const char *url, const gw_replica_cfg *tmpl) {
    const gw_kv_events_cfg *a = &r->cfg->kv_events, *b = &tmpl->kv_events;
    return strcmp(r->dyn_url, url) == 0 && r->cfg->dp_target == tmpl->dp_target &&
           r->cfg->dp_rank == tmpl->dp_rank && str_same(a->endpoint, b->endpoint) &&
           str_same(a->replay_endpoint, b->replay_endpoint) &&
           str_same(a->endpoint ? a->topic : NULL, b->endpoint ? b->topic : NULL);
}

int gw_fleet_listen(gw_fleet *f, gw_member_fn fn, void *ud) {
    if (f->nlisteners >= GW_MEMBER_LISTENERS) return -1;
    f->listeners[f->nlisteners++] = (struct gw_member_listener){fn, ud};
    return 0;
}

void gw_fleet_unlisten(gw_fleet *f, gw_member_fn fn, void *ud) {
    for (size_t i = 0; i < f->nlisteners; i++) {
        if (f->listeners[i].fn != fn || f->listeners[i].ud != ud) continue;
        memmove(&f->listeners[i], &f->listeners[i + 1],
                (f->nlisteners - i - 1) * sizeof f->listeners[0]);
        f->nlisteners--;
        return;
    }
}

/* Tells the listeners, then every model's policy (its replica_added and
 * replica_removed hooks: what it keeps per replica slot starts again). */
static void tell(gw_fleet *f, gw_replica *r, bool joined) {
    for (size_t i = 0; i < f->nlisteners; i++) f->listeners[i].fn(f->listeners[i].ud, r, joined);
    size_t n = atomic_load(&f->nmodels);
    for (size_t i = 0; i < n; i++) {
        irp_policy *p = atomic_load(&f->models[i].policy);
        if (!p) continue;
        if (joined)
            irp_policy_replica_added(p, r->index);
        else
            irp_policy_replica_removed(p, r->index);
    }
}

/* Publishes r as a member: optimistic health until its first probes. */
static void activate(gw_fleet *f, gw_replica *r) {
    atomic_store(&r->healthy, 1);
    atomic_store(&r->no_rank, 0);
    atomic_store(&r->ejected_until, 0);
    atomic_store(&r->consecutive_failures, 0);
    atomic_store(&r->left_at, 0);
    atomic_fetch_add(&r->gen, 1);
    index_capacity(f, r);
    atomic_store_explicit(&r->active, 1, memory_order_release);
    gw_kvsub_member(f, r, true);
    tell(f, r, true);
}

static bool reusable(const gw_replica *r, uint64_t now) {
    uint64_t left = atomic_load(&r->left_at);
    return !gw_replica_member(r) && left && now - left >= GW_SLOT_QUARANTINE_NS &&
           atomic_load(&r->in_flight) == 0 && atomic_load(&r->pending) == 0;
}

/* A slot never used, else a departed member's whose quarantine is over; -1: none. */
static int free_slot(gw_fleet *f) {
    size_t used = atomic_load(&f->nreplicas);
    if (used < f->nslots) return (int)used;
    uint64_t now = ir_now_ns();
    for (size_t slot = 0; slot < used; slot++)
        if (reusable(&f->replicas[slot], now)) return (int)slot;
    return -1;
}

static void publish(gw_fleet *f, gw_replica *r, size_t slot) {
    activate(f, r);
    if (slot == atomic_load(&f->nreplicas)) atomic_store(&f->nreplicas, slot + 1);
}

int gw_fleet_join(gw_fleet *f, const char *id, const char *url, const gw_replica_cfg *tmpl) {
    size_t used = atomic_load(&f->nreplicas);
    for (size_t i = 0; i < used; i++) { /* the same id at the same url again: its own slot */
        gw_replica *r = &f->replicas[i];
        if (!r->dynamic || strcmp(r->dyn_id, id) != 0) continue;
        /* a reload gave its group another base path or KV events: a new slot (this
         * one's settings may still be read by the requests it finishes) */
        if (!gw_replica_member(r) && !gw_replica_same_target(r, url, tmpl)) continue;
        if (!gw_replica_member(r)) activate(f, r);
        return (int)i;
    }
    int slot = free_slot(f);
    if (slot < 0) return -1;
    gw_replica *r = &f->replicas[slot];
    if (fill(f, r, (uint32_t)slot, id, url, tmpl)) return -1;
    publish(f, r, (size_t)slot);
    return slot;
}

int gw_fleet_rejoin(gw_fleet *f, uint32_t slot, const gw_replica_cfg *cfg) {
    if (slot >= atomic_load(&f->nreplicas)) return -1;
    gw_replica *r = &f->replicas[slot];
    if (r->dynamic || gw_replica_member(r)) return -1;
    r->cfg = cfg; /* the same target: its url, headers and events are the old ones' */
    gw_replica_models(f, r);
    activate(f, r);
    return (int)slot;
}

int gw_fleet_add(gw_fleet *f, const gw_replica_cfg *cfg) {
    int slot = free_slot(f);
    if (slot < 0) return -1;
    gw_replica *r = &f->replicas[slot];
    r->dynamic = false;
    r->dyn_id[0] = '\0';
    if (fill_cfg(f, r, (uint32_t)slot, cfg)) return -1;
    publish(f, r, (size_t)slot);
    return slot;
}

void gw_fleet_leave(gw_fleet *f, uint32_t slot) {
    if (slot >= atomic_load(&f->nreplicas)) return;
    gw_replica *r = &f->replicas[slot];
    if (!gw_replica_member(r)) return;
    atomic_store_explicit(&r->active, 0, memory_order_release);
    atomic_store(&r->healthy, 0);
    atomic_store(&r->left_at, ir_now_ns());
    irx_forget_replica(f->index, slot);
    gw_kvsub_member(f, r, false);
    tell(f, r, false);
}
