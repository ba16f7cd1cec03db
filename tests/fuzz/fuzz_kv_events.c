/* fuzz_kv_events: the KV event decoder (src/index/ev_decode.c) on arbitrary
 * bytes, and what it decodes applied to an exact index. A decoded batch must
 * be self-consistent (every array it points to readable, stored events with
 * whole blocks of tokens or refused by the index), and the index's invariant
 * must hold after applying it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "index/index_internal.h"
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

static bool str_eq(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

static bool ev_eq(const irx_ev *a, const irx_ev *b) {
    return a->type == b->type && a->nblocks == b->nblocks && a->has_parent == b->has_parent &&
           memcmp(&a->parent, &b->parent, sizeof a->parent) == 0 && a->ntokens == b->ntokens &&
           a->block_size == b->block_size && a->medium == b->medium &&
           a->group_idx == b->group_idx && a->kind == b->kind && !a->blocks == !b->blocks &&
           !a->tokens == !b->tokens &&
           (!a->nblocks || memcmp(a->blocks, b->blocks, a->nblocks * sizeof *a->blocks) == 0) &&
           (!a->ntokens || memcmp(a->tokens, b->tokens, a->ntokens * sizeof *a->tokens) == 0) &&
           str_eq(a->lora_name, b->lora_name) && str_eq(a->cache_salt, b->cache_salt);
}

/* The decoder (the usual shapes read straight from the bytes, ADR 0026, else the token
 * path, ADR 0024) against msgpack-c's template reading every value. */
static void differential(const uint8_t *p, size_t size, int rc, const irx_ev_batch *b,
                         const char *err) {
    irx_ev_batch t;
    char terr[128];
    int trc = irx_ev_decode_template(p, size, &t, terr, sizeof terr);
    if (trc != rc || t.nev != b->nev || t.dp_rank != b->dp_rank ||
        memcmp(&t.ts, &b->ts, sizeof t.ts) || (rc && strcmp(terr, err)))
        abort();
    for (size_t i = 0; i < t.nev; i++)
        if (!ev_eq(&t.ev[i], &b->ev[i])) abort();
    irx_ev_batch_free(&t);
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
    int rc = irx_ev_decode(copy, size, &b, err, sizeof err);
    differential(copy, size, rc, &b, err);
    if (rc == 0) {
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
