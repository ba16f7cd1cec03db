/* doom.c: the blocks an event-fed replica is about to evict (see index_internal.h).
 *
 * A fixed table of key and expiry pairs, both atomic. Writers hold the replica's
 * lock; readers take none. A writer empties a slot (key 0) before it changes the
 * slot's expiry and then stores the new key, and a reader loads the key, the
 * expiry and the key again: a pair that changed in between is read as absent,
 * which costs at most one prediction its lookahead. Keys are probed in a short
 * run that readers always read whole, so an emptied slot never hides a later one. */
#include <stdlib.h>

#include "index/index_internal.h"

#define SLOTS  4096u
#define PROBES 8u

struct irx_doom {
    _Atomic uint64_t until; /* the latest expiry of any entry: readers stop here when past */
    struct {
        _Atomic uint64_t key, until;
        uint32_t ticket; /* the record that doomed it; read by writers only */
    } slot[SLOTS];
};

static uint64_t tag(uint64_t key) {
    return key ? key : 1; /* 0 marks an empty slot */
}
static uint32_t home(uint64_t key) {
    return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 54) & (SLOTS - 1);
}

irx_doom *irx_doom_new(void) {
    return calloc(1, sizeof(irx_doom));
}

void irx_doom_free(irx_doom *d) {
    free(d);
}

size_t irx_doom_bytes(void) {
    return sizeof(irx_doom);
}

static void put(irx_doom *d, uint32_t j, uint64_t key, uint64_t until) {
    atomic_store_explicit(&d->slot[j].key, 0, memory_order_release);
    atomic_store_explicit(&d->slot[j].until, until, memory_order_release);
    atomic_store_explicit(&d->slot[j].key, key, memory_order_release);
}

void irx_doom_add(irx_doom *d, uint64_t key, uint64_t now, uint64_t until, uint32_t ticket) {
    key = tag(key);
    uint32_t h = home(key), pick = h;
    uint64_t oldest = UINT64_MAX;
    for (uint32_t i = 0; i < PROBES; i++) {
        uint32_t j = (h + i) & (SLOTS - 1);
        uint64_t k = atomic_load_explicit(&d->slot[j].key, memory_order_relaxed);
        uint64_t u = atomic_load_explicit(&d->slot[j].until, memory_order_relaxed);
        if (k == key || k == 0 || u <= now) {
            pick = j;
            break;
        }
        if (u < oldest) oldest = u, pick = j; /* full run: the soonest to expire goes */
    }
    put(d, pick, key, until);
    d->slot[pick].ticket = ticket;
    if (atomic_load_explicit(&d->until, memory_order_relaxed) < until)
        atomic_store_explicit(&d->until, until, memory_order_release);
}

void irx_doom_clear(irx_doom *d, uint64_t key) {
    key = tag(key);
    uint32_t h = home(key);
    for (uint32_t i = 0; i < PROBES; i++) {
        uint32_t j = (h + i) & (SLOTS - 1);
        if (atomic_load_explicit(&d->slot[j].key, memory_order_relaxed) == key)
            atomic_store_explicit(&d->slot[j].key, 0, memory_order_release);
    }
}

void irx_doom_forget_ticket(irx_doom *d, uint32_t ticket, uint64_t now) {
    if (!irx_doom_live(d, now)) return;
    for (uint32_t j = 0; j < SLOTS; j++)
        if (d->slot[j].ticket == ticket &&
            atomic_load_explicit(&d->slot[j].key, memory_order_relaxed) != 0)
            atomic_store_explicit(&d->slot[j].key, 0, memory_order_release);
}

void irx_doom_reset(irx_doom *d) {
    atomic_store_explicit(&d->until, 0, memory_order_release);
    for (uint32_t j = 0; j < SLOTS; j++)
        atomic_store_explicit(&d->slot[j].key, 0, memory_order_relaxed);
}

bool irx_doom_live(const irx_doom *d, uint64_t now) {
    return atomic_load_explicit(&d->until, memory_order_acquire) > now;
}

bool irx_doom_has(const irx_doom *d, uint64_t key, uint64_t now) {
    key = tag(key);
    uint32_t h = home(key);
    for (uint32_t i = 0; i < PROBES; i++) {
        uint32_t j = (h + i) & (SLOTS - 1);
        if (atomic_load_explicit(&d->slot[j].key, memory_order_acquire) != key) continue;
        uint64_t u = atomic_load_explicit(&d->slot[j].until, memory_order_acquire);
        if (atomic_load_explicit(&d->slot[j].key, memory_order_acquire) != key) continue;
        if (u > now) return true;
    }
    return false;
}
