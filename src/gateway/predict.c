/* predict.c: the KV index's side of an attempt: what it records when a request is
 * sent, what it takes back when the engine refuses or fails, and the closed loop:
 * the engine's reported cached tokens against the prediction. */
#include "gateway/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A prompt of whole blocks whose every block the replica holds: the engine
 * reports one block short and recomputes the last one in a fresh block, leaving
 * the cached copy of that block untouched. */
static bool last_block_recomputed(const gw_req *r) {
    const gw_prompt *p = &r->prompt;
    const gw_fleet *f = &r->w->app->fleet;
    uint32_t slot = r->rep->index;
    if (!p->cached || p->ids.len % f->block_size != 0 || p->usable + 1 != p->nhashes ||
        p->cached[slot] != p->usable)
        return false;
    uint32_t out[GW_MAX_REPLICAS];
    irx_lookup(f->index, p->hashes, p->nhashes, out);
    return out[slot] == p->nhashes;
}

void gw_predict_record(gw_req *r) {
    const gw_prompt *p = &r->prompt;
    r->rec = (irx_rec){0};
    if (p->state != GW_PREDICT_OK || p->nhashes == 0) return;
    size_t n = p->nhashes - (last_block_recomputed(r) ? 1 : 0);
    if (n == 0) return;
    /* At admission the engine also takes the trailing partial block, and the
     * block of the first output token: reserve them now, as it evicts for them. */
    size_t bs = r->w->app->fleet.block_size;
    size_t at_admission = (p->ids.len + 1 + bs - 1) / bs;
    size_t hit = p->cached ? p->cached[r->rep->index] : SIZE_MAX; /* what the route assumed */
    r->rec = irx_record_hit(r->w->app->fleet.index, r->rep->index, p->hashes, n,
                            at_admission > n ? at_admission - n : 0, hit);
}

void gw_predict_release(gw_req *r) {
    if (r->rec.n == 0) return;
    size_t bs = r->w->app->fleet.block_size;
    int64_t done = gw_reported_completion(r->tail, r->tail_len);
    size_t gen = done > 0 ? (size_t)done : 1;
    size_t total = (r->prompt.ids.len + gen + bs - 1) / bs;
    size_t extra = total > r->rec.n ? total - r->rec.n : 0;
    irx_release(r->w->app->fleet.index, r->rec, r->prompt.hashes, r->prompt.nhashes, extra);
    r->rec = (irx_rec){0};
}

void gw_predict_undo(gw_req *r) {
    if (r->rec.n == 0) return;
    irx_undo(r->w->app->fleet.index, r->rec, r->prompt.hashes, r->prompt.nhashes);
    r->rec = (irx_rec){0};
}

void gw_predict_keep_tail(gw_req *r, const char *data, size_t len) {
    if (r->prompt.state != GW_PREDICT_OK) return;
    if (len >= GW_TAIL_BYTES) {
        memcpy(r->tail, data + len - GW_TAIL_BYTES, GW_TAIL_BYTES);
        r->tail_len = GW_TAIL_BYTES;
        return;
    }
    size_t keep = IR_MIN(r->tail_len, GW_TAIL_BYTES - len);
    memmove(r->tail, r->tail + r->tail_len - keep, keep);
    memcpy(r->tail + keep, data, len);
    r->tail_len = keep + len;
}

static bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Where the value of `"key"` starts when v points just past the key's closing
 * quote: JSON allows whitespace on both sides of the colon. NULL when no colon
 * follows (the key's name as a value, or cut). */
static const char *value_at(const char *v, const char *end) {
    while (v < end && is_ws(*v)) v++;
    if (v >= end || *v != ':') return NULL;
    for (v++; v < end && is_ws(*v);) v++;
    return v;
}

/* The value of the last `"key"` (key given with its quotes) in the tail that is
 * followed by a colon; NULL when there is none. */
static const char *last_value(const char *hay, size_t len, const char *key, size_t klen) {
    const char *found = NULL, *end = hay + len;
    for (const char *s = hay; (s = memmem(s, len - (size_t)(s - hay), key, klen)); s++) {
        const char *v = value_at(s + klen, end);
        if (v) found = v;
    }
    return found;
}

/* The number that is the value of the last `key` in the tail; -1 when absent or
 * not a number. */
static int64_t last_number(const char *tail, size_t len, const char *key, size_t klen) {
    const char *v = last_value(tail, len, key, klen), *end = tail + len;
    if (!v || v >= end || *v < '0' || *v > '9') return -1;
    int64_t n = 0;
    while (v < end && *v >= '0' && *v <= '9' && n < INT64_MAX / 10) n = n * 10 + (*v++ - '0');
    return n;
}

int64_t gw_reported_completion(const char *tail, size_t len) {
    static const char key[] = "\"completion_tokens\"";
    return last_number(tail, len, key, sizeof key - 1);
}

/* The last `"cached_tokens": N` in the tail: vLLM's usage.prompt_tokens_details, in a
 * JSON body or in the stream's usage chunk, with or without whitespace around the
 * colon. GW_USAGE_NO_DETAILS when the usage has `"prompt_tokens_details": null`
 * (vLLM writes that when nothing was cached, and when it runs without
 * --enable-prompt-tokens-details); -1 when there is no usage. */
int64_t gw_reported_cached(const char *tail, size_t len) {
    static const char key[] = "\"cached_tokens\"";
    static const char details[] = "\"prompt_tokens_details\"";
    const char *found = last_value(tail, len, key, sizeof key - 1);
    const char *d = last_value(tail, len, details, sizeof details - 1);
    bool null_at = d && (size_t)(tail + len - d) >= 4 && memcmp(d, "null", 4) == 0;
    if (null_at && (!found || d > found)) return GW_USAGE_NO_DETAILS;
    return found ? last_number(tail, len, key, sizeof key - 1) : -1;
}

/* The parity self-test, for a replica tracked from its events: the engine has just
 * computed this prompt, so its events should show every full block of it stored,
 * under the gateway's own hashes of the gateway's own tokens. When they do not,
 * the gateway tokenizes (or templates) differently from the engine, or its block
 * size differs: predictions for that replica cannot hit. The events may still be
 * on their way, so a check that fails now is left to the subscriber thread
 * (kvsub_parity.c), which looks again as batches arrive. */
static void parity(gw_req *r) {
    const gw_fleet *f = &r->w->app->fleet;
    gw_kvsub_stats *st = gw_kvsub_replica(f, r->rep->index);
    if (!st || r->prompt.nhashes == 0) return;
    int src = atomic_load_explicit(&st->source, memory_order_relaxed);
    if (src != GW_KV_SOURCE_EVENTS && src != GW_KV_SOURCE_PARTIAL) return;
    size_t n = r->prompt.nhashes;
    gw_parity *p = malloc(sizeof *p + n * sizeof p->h[0]);
    if (!p) return;
    p->deadline_ns = ir_now_ns() + GW_PARITY_WAIT_NS;
    p->slot = r->rep->index;
    p->n = (uint32_t)n;
    snprintf(p->rid, sizeof p->rid, "%s", r->rid);
    memcpy(p->h, r->prompt.hashes, n * sizeof p->h[0]);
    if (!gw_parity_settle(f, st, p, false)) gw_parity_defer(f, st, p);
}

/* A finished attempt: the prediction against what the engine said it had cached.
 * When the engine had less, the shadow held blocks it had evicted: correct it. */
void gw_predict_feedback(gw_req *r) {
    if (r->prompt.state != GW_PREDICT_OK || !r->rep) return;
    /* An engine that refused the request (a 4xx: too long, a bad parameter) ran none of
     * it: its answer says nothing of the prediction, and must not count as a miss of
     * the parity self-test, which a client could otherwise drive to 0. */
    if (r->up_status < 200 || r->up_status >= 300) return;
    gw_replica *rep = r->rep;
    parity(r);
    uint64_t predicted = r->predicted_cached;
    atomic_fetch_add_explicit(&rep->predicted_tokens, predicted, memory_order_relaxed);
    int64_t reported = gw_reported_cached(r->tail, r->tail_len);
    if (reported >= 0) atomic_store_explicit(&rep->reports_cached, 1, memory_order_relaxed);
    /* No details: nothing cached, from an engine known to report them; else unknown. */
    if (reported == GW_USAGE_NO_DETAILS &&
        atomic_load_explicit(&rep->reports_cached, memory_order_relaxed))
        reported = 0;
    if (reported < 0) return;
    /* No engine caches more than the prompt: a larger count is garbage, not a counter
     * to add (it would wrap the total). */
    if ((uint64_t)reported > r->prompt.ids.len) reported = (int64_t)r->prompt.ids.len;
    atomic_fetch_add_explicit(&rep->reported_tokens, (uint64_t)reported, memory_order_relaxed);
    _Atomic uint64_t *bucket = (uint64_t)reported == predicted  ? &rep->predictions_exact
                               : (uint64_t)reported < predicted ? &rep->predictions_over
                                                                : &rep->predictions_under;
    atomic_fetch_add_explicit(bucket, 1, memory_order_relaxed);
    uint32_t bs = r->w->app->fleet.block_size;
    if ((uint64_t)reported < predicted)
        irx_correct(r->w->app->fleet.index, rep->index, r->prompt.hashes, r->prompt.usable,
                    predicted / bs, (size_t)reported / bs);
}
