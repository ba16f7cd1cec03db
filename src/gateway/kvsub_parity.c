/* kvsub_parity.c: the parity self-test's checks (see predict.c): did the
 * engine's KV events show every full block of a prompt it just computed? A
 * check that cannot settle when the response ends waits in its replica's
 * single parity_pending slot, which the subscriber thread looks at after each
 * round of batches; a newer check pushes an older one out, which is then
 * settled as it stands. */
#include "gateway/gateway.h"

#include <stdlib.h>

bool gw_parity_settle(const gw_fleet *f, gw_kvsub_stats *st, gw_parity *p, bool final) {
    uint32_t out[GW_MAX_REPLICAS];
    irx_lookup(f->index, p->h, p->n, out);
    bool agree = out[p->slot] == p->n;
    if (!agree && !final && ir_now_ns() < p->deadline_ns) return false;
    uint64_t n = atomic_fetch_add_explicit(&st->parity_checks, 1, memory_order_relaxed);
    if (agree) {
        atomic_fetch_add_explicit(&st->parity_agree, 1, memory_order_relaxed);
    } else {
        gw_decision_log_parity(f, p, out[p->slot]);
        if (n - atomic_load_explicit(&st->parity_agree, memory_order_relaxed) < 2 ||
            n % 1000 == 0) /* sampled: the first mismatches, then one check in a thousand */
            IR_WARN("parity",
                    "replica %s: the engine's KV events show %u of the %u full blocks the "
                    "gateway predicted it would store for request %s (a tokenizer, chat "
                    "template or block size that differs from the engine's?)",
                    f->replicas[p->slot].cfg->id, out[p->slot], p->n, p->rid);
    }
    free(p);
    return true;
}

void gw_parity_defer(const gw_fleet *f, gw_kvsub_stats *st, gw_parity *p) {
    gw_parity *old = atomic_exchange_explicit(&st->parity_pending, p, memory_order_acq_rel);
    if (old) gw_parity_settle(f, st, old, true);
}

/* The subscriber thread, after a round of batches (and at stop, with final). */
void gw_parity_poll(const gw_fleet *f, gw_kvsub_stats *st, bool final) {
    gw_parity *p = atomic_exchange_explicit(&st->parity_pending, NULL, memory_order_acq_rel);
    if (!p || gw_parity_settle(f, st, p, final)) return;
    gw_parity *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&st->parity_pending, &expected, p,
                                                 memory_order_acq_rel, memory_order_acquire))
        gw_parity_settle(f, st, p, true); /* a newer one took the slot meanwhile */
}
