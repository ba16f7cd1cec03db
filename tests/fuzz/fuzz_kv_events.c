/* fuzz_kv_events: the KV event decoder (src/index/ev_decode.c) on arbitrary
 * bytes, and what it decodes applied to an exact index. A decoded batch must
 * be self-consistent (every array it points to readable, stored events with
 * whole blocks of tokens or refused by the index), and the index's invariant
 * must hold after applying it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/ir_index.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static irx_index *ix;

static void touch(const irx_ev *ev) {
    volatile uint64_t sink = 0;
    for (uint32_t i = 0; i < ev->nblocks; i++) sink += ev->blocks[i].lo;
    for (uint32_t i = 0; i < ev->ntokens; i++) sink += ev->tokens[i];
    if (ev->lora_name) sink += strlen(ev->lora_name);
    if (ev->cache_salt) sink += strlen(ev->cache_salt);
    (void)sink;
}

static int32_t group = IRX_GROUP_UNKNOWN; /* the KV cache group followed, as kvsub.c does */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ix) {
        ix = irx_new(2);
        if (!ix || irx_ev_track(ix, 0, "m", 16)) abort();
    }
    uint8_t *copy = malloc(size ? size : 1); /* exact size, no NUL after it */
    if (!copy) return 0;
    memcpy(copy, data, size);
    irx_ev_batch b;
    char err[128];
    if (irx_ev_decode(copy, size, &b, err, sizeof err) == 0) {
        if (b.nev && !b.ev) abort();
        irx_ev_counts c = {0};
        size_t n = 0; /* the followed events, applied as one batch as kvsub.c does */
        for (size_t i = 0; i < b.nev; i++) {
            const irx_ev *ev = &b.ev[i];
            if (ev->type < IRX_EV_STORED || ev->type > IRX_EV_CLEARED) abort();
            touch(ev);
            if (ev->group_idx < -1 || ev->kind > IRX_KIND_OTHER) abort();
            int32_t was = group;
            if (irx_ev_group_follow(&group, ev)) b.ev[n++] = *ev;
            if (was != IRX_GROUP_UNKNOWN && group != was) abort(); /* learned once */
        }
        irx_ev_apply_batch(ix, 0, b.ev, n, &c);
        irx_ev_batch_free(&b);
        char msg[200];
        if (irx_check(ix, msg, sizeof msg)) abort();
    } else if (b.nev || b.mem || !err[0]) {
        abort();
    }
    free(copy);
    return 0;
}
