/* ev_decode.c: vLLM's KV event batches (vllm/distributed/kv_events.py) from
 * msgpack bytes into irx_ev_batch (see ir_index.h and docs/internals/kv-events.md).
 *
 * Two encodings are in the field. Older vLLM encodes msgspec structs with
 * array_like=True: a batch is [ts, events, dp_rank?] and an event is
 * [tag, field1, field2, ...]. Newer vLLM encodes maps: {"ts", "events",
 * "data_parallel_rank"} and each event {"type": tag, field: value, ...}. In
 * both, trailing fields that hold their default may be missing, and fields this
 * decoder does not know are skipped.
 *
 * msgpack-c does the parsing: its unpack template (msgpack/unpack_template.h,
 * the parser that msgpack-c's own msgpack_unpack_next instantiates to build
 * its object tree) is instantiated here with callbacks that write each value
 * where the batch needs it, as it is read: token ids straight into the event's
 * array, block hashes digested on the spot. No object tree is built, and no
 * walk of the bytes runs before it (ADR 0019). This file keeps, beside the
 * template's stack, a stack of its own frames that says what each container
 * is (the batch, its events, an event, a field) and so what each value means.
 *
 * What is accepted and refused is as when this file walked msgpack-c's object
 * tree: the first error in the tree's order is reported, a parse error first of
 * all; a map event's fields are read whatever its "type" (which may come last)
 * and kept or dropped when the event ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <msgpack/unpack.h> /* MSGPACK_UNPACK_*_ERROR, which the template returns */
#include <msgpack/unpack_define.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "index/ev_fields.h"

uint64_t irx_ekey_secret;

/* Draws the engine-key secret (ev_fields.h) once, before main. Without getrandom's
 * bytes, the clock and the address of the variable stand in. */
__attribute__((constructor)) static void ekey_secret_init(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s || !s)
        s = ir_now_ns() ^ (uint64_t)(uintptr_t)&irx_ekey_secret ^ 0x9e3779b97f4a7c15ull;
    irx_ekey_secret = s;
}
#include "index/index_internal.h"
#include "index/ir_index.h"

/* ---- what the template hands over ------------------------------------------------ */

/* A scalar: strings and binaries point into the payload (valid during the decode). */
typedef enum { V_NIL, V_BOOL, V_POS, V_NEG, V_FLOAT, V_STR, V_BIN, V_EXT, V_CONT } vkind;
typedef struct val {
    vkind k;
    uint32_t len;
    union {
        uint64_t u;
        int64_t i;
        double f;
        const char *p;
    } v;
} val;

/* ---- fields, frames and roles ------------------------------------------------------ */

/* What a container is. */
typedef enum {
    K_SKIP,      /* its values mean nothing here */
    K_BATCH_ARR, /* [ts, events, dp_rank, ...] */
    K_BATCH_MAP, /* {"ts", "events", "data_parallel_rank", ...} */
    K_EVENTS,    /* the events */
    K_EVENT_ARR, /* [tag, fields by position...] */
    K_EVENT_MAP, /* {"type": tag, field: value...} */
    K_HASHES,    /* block_hashes */
    K_TOKENS,    /* token_ids */
    K_EXTRA,     /* extra_keys: one entry per block */
    K_TUPLE      /* extra_keys' first entry */
} ckind;

/* What a value is, from its container and place. */
enum {
    R_SKIP,
    R_ROOT,
    R_TS,
    R_EVENTS,
    R_DP,
    R_BKEY, /* a key of the batch's map */
    R_EVENT,
    R_TAG,
    R_EKEY, /* a key of an event's map */
    R_HASH,
    R_TOKEN,
    R_EXTRA_FIRST,
    R_EXTRA_ITEM,
    R_FIELD /* R_FIELD + F_...: an event's field */
};

typedef struct frame {
    ckind kind;
    uint32_t left; /* children (a map's: pairs) not yet complete */
    uint32_t at;   /* children begun (a map's keys and values both count) */
    int key;       /* a map's: the role of the value after the last key */
    void *out;     /* K_TOKENS, K_HASHES: the event's array */
} frame;

/* The event being read. Its fields' first errors are kept with the place they came
 * from (an array's position, a map's pair), and the first in that order among the
 * fields its type reads is the event's error. */
typedef struct evstate {
    bool map, typed, tag_bad;
    uint32_t pos;   /* the place of the field being read */
    unsigned fmask; /* the fields with an error */
    const char *ferr[F_NONE + 1];
    uint32_t ferr_at[F_NONE + 1];
    /* extra_keys (a map's last): its first entry's last string (s1) and the last one
     * whose bytes differ from it (s2), the salt being the last that is not lora_name */
    bool extra, extra_bad;
    uint32_t extra_at;
    val s1, s2;
} evstate;

typedef struct dec {
    ir_arena *arena;
    char *err;
    size_t errlen;
    uint64_t budget; /* container elements the payload's bytes can still hold */
    frame st[MSGPACK_EMBED_STACK_SIZE + 1]; /* st[top]: the innermost; st[0]: none (K_SKIP) */
    unsigned top;
    irx_ev_batch *out;
    /* the batch: the last "ts", "events" and "data_parallel_rank" count */
    bool root_bad, has_ts, ts_ok, has_events;
    bool fast;          /* token arrays are read by tokens_fast (ADR 0024) */
    uint32_t tokens_at; /* > 0: the template stopped at a token array of that many ids */
    const char *dp_err, *events_err;
    irx_ev *evs; /* the events array, nevs long */
    uint32_t nevs;
    irx_ev *ev; /* the event being read */
    evstate es;
} dec;

static int fail(dec *d, const char *what) {
    if (d->err && d->errlen) snprintf(d->err, d->errlen, "%s", what);
    return -1;
}

static bool is_str(const val *o, const char *s, size_t n) {
    return o->k == V_STR && o->len == n && memcmp(o->v.p, s, n) == 0;
}
#define IS(o, lit) is_str((o), (lit), sizeof(lit) - 1)

/* ---- values ------------------------------------------------------------------------ */

/* An engine block hash (ev_fields.h): an integer or a byte string of 1 to
 * IRX_EV_MAX_KEY_BYTES. */
static const char *engine_key(const val *o, ir_hash128 *out) {
    if (o->k == V_POS || o->k == V_NEG) {
        *out = irx_ekey_int(o->v.u);
    } else if (o->k == V_BIN || o->k == V_STR) {
        if (o->len == 0 || o->len > IRX_EV_MAX_KEY_BYTES) return "block hash: bad length";
        *out = irx_ekey_bytes(o->v.p, o->len);
    } else {
        return "block hash: neither an integer nor bytes";
    }
    return NULL;
}

/* A string field's copy: NULL for nil; *bad for anything else that is not a string
 * of at most 4096 bytes without a NUL (or when out of memory). */
static const char *opt_str(dec *d, const val *o, bool *bad) {
    if (o->k == V_NIL) return NULL;
    if (o->k != V_STR || o->len > 4096) {
        *bad = true;
        return NULL;
    }
    char *s = ir_arena_strndup(d->arena, o->v.p, o->len);
    if (!s || strlen(s) != o->len) *bad = true; /* OOM, or a NUL inside */
    return s;
}

static bool number(const val *o, double *out) {
    if (o->k == V_FLOAT)
        *out = o->v.f;
    else if (o->k == V_POS)
        *out = (double)o->v.u;
    else if (o->k == V_NEG)
        *out = (double)o->v.i;
    else
        return false;
    return true;
}

/* ---- an event's fields ---------------------------------------------------------------- */

static void ferr(dec *d, int f, const char *msg) {
    if (d->es.fmask & 1u << f) return;
    d->es.fmask |= 1u << f;
    d->es.ferr[f] = msg, d->es.ferr_at[f] = d->es.pos;
}

/* The field after a map key (a string), or F_NONE; -1 for "type". By length first:
 * a key is compared with at most three names. */
static int name_field(const val *k) {
    if (k->k != V_STR) return F_NONE;
    switch (k->len) {
    case 4:
        return IS(k, "type") ? -1 : F_NONE;
    case 6:
        return IS(k, "medium") ? F_MEDIUM : F_NONE;
    case 7:
        return IS(k, "lora_id") ? F_LORA_ID : F_NONE;
    case 9:
        return IS(k, "token_ids")   ? F_TOKENS
               : IS(k, "lora_name") ? F_LORA_NAME
               : IS(k, "group_idx") ? F_GROUP
                                    : F_NONE;
    case 10:
        return IS(k, "block_size") ? F_BSIZE : IS(k, "extra_keys") ? F_EXTRA : F_NONE;
    case 12:
        return IS(k, "block_hashes") ? F_HASHES : F_NONE;
    case 17:
        return IS(k, "parent_block_hash") ? F_PARENT : F_NONE;
    case 18:
        return IS(k, "kv_cache_spec_kind") ? F_KIND : F_NONE;
    default:
        return F_NONE;
    }
}

static void medium(dec *d, const val *o) {
    if (o->k == V_NIL || IS(o, "GPU") || IS(o, "gpu"))
        d->ev->medium = IRX_MEDIUM_GPU;
    else if (IS(o, "CPU") || IS(o, "cpu"))
        d->ev->medium = IRX_MEDIUM_CPU;
    else if (o->k == V_STR)
        d->ev->medium = IRX_MEDIUM_OTHER;
    else
        ferr(d, F_MEDIUM, "medium: not a string");
}

/* kv_cache_spec_kind: the kinds whose blocks make a prefix hit are full attention's. */
static void kind(dec *d, const val *o) {
    if (o->k == V_NIL) return;
    if (o->k != V_STR) {
        ferr(d, F_KIND, "kv_cache_spec_kind: not a string");
        return;
    }
    bool full = IS(o, "full_attention") || IS(o, "mla_attention") || IS(o, "sink_full_attention");
    d->ev->kind = full ? IRX_KIND_FULL : IRX_KIND_OTHER;
}

/* A scalar field. */
static void field(dec *d, int f, const val *v) {
    irx_ev *ev = d->ev;
    bool bad = false;
    switch (f) {
    case F_HASHES:
        ferr(d, f, "block_hashes: not an array");
        return;
    case F_PARENT: {
        if (v->k == V_NIL) return;
        ev->has_parent = true;
        const char *e = engine_key(v, &ev->parent);
        if (e) ferr(d, f, e);
        return;
    }
    case F_TOKENS:
        ferr(d, f, "token_ids: not an array");
        return;
    case F_BSIZE:
        /* 0: newer vLLM's OffloadingConnector, on a CPU copy without token ids. */
        if (v->k != V_POS || v->v.u > 1u << 16)
            ferr(d, f, "block_size: not an integer in 0..65536");
        else
            ev->block_size = (uint32_t)v->v.u;
        return;
    case F_MEDIUM:
        medium(d, v);
        return;
    case F_LORA_NAME:
        ev->lora_name = opt_str(d, v, &bad);
        if (bad) ferr(d, f, "lora_name: not a string");
        return;
    case F_EXTRA: /* extra_keys: nil, or an array (a container: not here) */
        d->es.extra = true, d->es.extra_bad = v->k != V_NIL;
        d->es.s1.k = d->es.s2.k = V_NIL;
        d->es.extra_at = d->es.map ? UINT32_MAX : d->es.pos;
        return;
    case F_GROUP: /* nil, or a group's index */
        if (v->k == V_NIL) return;
        if (v->k != V_POS || v->v.u > INT32_MAX)
            ferr(d, f, "group_idx: not a group index");
        else
            ev->group_idx = (int32_t)v->v.u;
        return;
    case F_KIND:
        kind(d, v);
        return;
    default:
        return; /* lora_id (deprecated) and anything newer: ignored */
    }
}

/* A field that is a container: what its values are. n: its count. */
static ckind field_container(dec *d, int f, bool map, uint32_t n) {
    irx_ev *ev = d->ev;
    if (f == F_HASHES || f == F_TOKENS) {
        bool h = f == F_HASHES;
        if (map) {
            ferr(d, f, h ? "block_hashes: not an array" : "token_ids: not an array");
            return K_SKIP;
        }
        if (n > (h ? IRX_EV_MAX_BLOCKS : IRX_EV_MAX_TOKENS)) {
            ferr(d, f, h ? "block_hashes: too many" : "token_ids: too many");
            return K_SKIP;
        }
        void *a =
            ir_arena_alloc(d->arena, (n ? n : 1) * (h ? sizeof(ir_hash128) : sizeof(uint32_t)));
        if (!a) {
            ferr(d, f, "out of memory");
            return K_SKIP;
        }
        if (h)
            ev->blocks = a, ev->nblocks = n;
        else
            ev->tokens = a, ev->ntokens = n;
        return h ? K_HASHES : K_TOKENS;
    }
    /* extra_keys as an array begins as nil would; any other field here is refused */
    bool extra = f == F_EXTRA && !map;
    field(d, f, &(val){.k = extra ? V_NIL : V_CONT});
    return extra ? K_EXTRA : K_SKIP;
}

/* An element of extra_keys' first entry: the strings are candidates for the salt. */
static void extra_item(dec *d, const val *v) {
    if (v->k != V_STR) return;
    evstate *s = &d->es;
    bool same = s->s1.k == V_STR && s->s1.len == v->len && memcmp(s->s1.v.p, v->v.p, v->len) == 0;
    if (!same) s->s2 = s->s1;
    s->s1 = *v;
}

/* ---- events ----------------------------------------------------------------------------- */

static void event_begin(dec *d, bool map) {
    irx_ev *ev = d->ev = &d->evs[d->st[d->top].at - 1];
    memset(ev, 0, sizeof *ev);
    ev->medium = IRX_MEDIUM_GPU;
    ev->group_idx = -1;
    d->es.map = map, d->es.typed = d->es.tag_bad = d->es.extra = false;
    d->es.fmask = 0;
}

static const char *tag(const val *o, irx_ev_type *t) {
    if (IS(o, "BlockStored"))
        *t = IRX_EV_STORED;
    else if (IS(o, "BlockRemoved"))
        *t = IRX_EV_REMOVED;
    else if (IS(o, "AllBlocksCleared"))
        *t = IRX_EV_CLEARED;
    else
        return "event: unknown type";
    return NULL;
}

/* The salt: the last string of extra_keys' first entry that is not the LoRA name
 * (vLLM puts the LoRA name, multimodal hashes, cache_salt and prompt-embedding
 * hashes there, in that order). */
static const char *salt(dec *d) {
    evstate *s = &d->es;
    irx_ev *ev = d->ev;
    if (s->extra_bad) return "extra_keys: not an array";
    const val *c = &s->s1;
    if (c->k == V_STR && ev->lora_name && c->len == strlen(ev->lora_name) &&
        memcmp(c->v.p, ev->lora_name, c->len) == 0)
        c = &s->s2;
    if (c->k != V_STR) return NULL;
    bool bad = false;
    ev->cache_salt = opt_str(d, c, &bad);
    return bad ? "extra_keys: bad string" : NULL;
}

static const char *check_stored(const irx_ev *ev) {
    if (ev->type == IRX_EV_CLEARED) return NULL;
    if (!ev->blocks) return "event: no block_hashes";
    if (ev->type == IRX_EV_REMOVED) return NULL;
    if (!ev->tokens || (ev->block_size == 0 && ev->ntokens))
        return "BlockStored: no token_ids or block_size";
    return NULL;
}

/* The event's error, if any, in the order the fields were read. */
static const char *event_error(dec *d) {
    evstate *s = &d->es;
    if (s->tag_bad) return "event: unknown type";
    if (!s->typed) return s->map ? "event: no type" : "event: empty";
    unsigned fields = irx_ev_read_by(d->ev->type);
    irx_ev_keep_read(d->ev, fields);
    if (s->extra && (fields & 1u << F_EXTRA)) {
        const char *e = salt(d);
        if (e) s->ferr[F_NONE] = e, s->ferr_at[F_NONE] = s->extra_at, s->fmask |= 1u << F_NONE;
    }
    unsigned errs = s->fmask & (fields | 1u << F_NONE);
    const char *first = NULL;
    uint32_t at = 0;
    for (int f = 0; errs && f <= F_NONE; f++)
        if ((errs & 1u << f) && (!first || s->ferr_at[f] < at))
            first = s->ferr[f], at = s->ferr_at[f];
    return first ? first : check_stored(d->ev);
}

static void event_end(dec *d) {
    const char *e = event_error(d);
    if (e && !d->events_err) d->events_err = e;
}

/* ---- the roles of values, as containers begin and end --------------------------------- */

IR_INLINE int child_role(dec *d, frame *fr) {
    uint32_t at = fr->at++;
    switch (fr->kind) {
    case K_TOKENS:
        return R_TOKEN;
    case K_HASHES:
        return R_HASH;
    case K_EVENTS:
        return d->events_err ? R_SKIP : R_EVENT;
    case K_EVENT_MAP:
        d->es.pos = at / 2;
        return at & 1 ? fr->key : R_EKEY;
    case K_EVENT_ARR:
        d->es.pos = at;
        if (at == 0) return R_TAG;
        return d->es.typed ? R_FIELD + irx_ev_pos_field(d->ev->type, at - 1) : R_SKIP;
    case K_BATCH_ARR:
        return at == 0 ? R_TS : at == 1 ? R_EVENTS : at == 2 ? R_DP : R_SKIP;
    case K_BATCH_MAP:
        return at & 1 ? fr->key : R_BKEY;
    case K_EXTRA:
        return at == 0 ? R_EXTRA_FIRST : R_SKIP;
    case K_TUPLE:
        return R_EXTRA_ITEM;
    default:
        return R_SKIP;
    }
}

IR_INLINE int begin(dec *d) {
    return d->top ? child_role(d, &d->st[d->top]) : R_ROOT;
}

static void events_begin(dec *d, uint32_t n) {
    d->has_events = true;
    d->events_err = NULL;
    d->evs = NULL, d->nevs = 0;
    if (n > IRX_EV_MAX_EVENTS) {
        d->events_err = "events: too many";
        return;
    }
    d->evs = ir_arena_alloc(d->arena, (n ? n : 1) * sizeof *d->evs);
    if (!d->evs)
        d->events_err = "out of memory";
    else
        d->nevs = n;
}

/* A container begins in role r: what its values are. */
static ckind container_begin(dec *d, int r, bool map, uint32_t n) {
    switch (r) {
    case R_ROOT:
        return map ? K_BATCH_MAP : K_BATCH_ARR;
    case R_EVENTS:
        if (map) {
            d->has_events = true, d->events_err = "events: not an array";
            d->evs = NULL, d->nevs = 0;
            return K_SKIP;
        }
        events_begin(d, n);
        return d->events_err ? K_SKIP : K_EVENTS;
    case R_EVENT:
        event_begin(d, map);
        return map ? K_EVENT_MAP : K_EVENT_ARR;
    case R_TS:
        d->has_ts = true, d->ts_ok = false;
        return K_SKIP;
    case R_DP:
        d->dp_err = "data_parallel_rank: not a rank", d->out->dp_rank = -1;
        return K_SKIP;
    case R_BKEY:
    case R_EKEY:
        d->st[d->top].key = R_SKIP;
        return K_SKIP;
    case R_TAG:
        d->es.tag_bad = true;
        return K_SKIP;
    case R_HASH:
        ferr(d, F_HASHES, "block hash: neither an integer nor bytes");
        return K_SKIP;
    case R_TOKEN:
        ferr(d, F_TOKENS, "token_ids: not a token id");
        return K_SKIP;
    case R_EXTRA_FIRST:
        return map ? K_SKIP : K_TUPLE;
    default:
        return r >= R_FIELD ? field_container(d, r - R_FIELD, map, n) : K_SKIP;
    }
}

static void container_end(dec *d, ckind k) {
    if (k == K_EVENT_ARR || k == K_EVENT_MAP) event_end(d);
}

/* A scalar in role r. */
static void scalar(dec *d, int r, const val *v) {
    frame *fr = d->top ? &d->st[d->top] : NULL;
    switch (r) {
    case R_ROOT:
        d->root_bad = true;
        return;
    case R_TS:
        d->has_ts = true, d->ts_ok = number(v, &d->out->ts);
        return;
    case R_EVENTS:
        d->has_events = true, d->events_err = "events: not an array";
        d->evs = NULL, d->nevs = 0;
        return;
    case R_DP:
        d->dp_err = NULL, d->out->dp_rank = -1;
        if (v->k == V_NIL) return;
        if (v->k != V_POS || v->v.u > INT32_MAX)
            d->dp_err = "data_parallel_rank: not a rank";
        else
            d->out->dp_rank = (int64_t)v->v.u;
        return;
    case R_BKEY:
        fr->key = IS(v, "ts")                   ? R_TS
                  : IS(v, "events")             ? R_EVENTS
                  : IS(v, "data_parallel_rank") ? R_DP
                                                : R_SKIP;
        return;
    case R_EVENT:
        d->events_err = "event: neither an array nor a map";
        return;
    case R_EKEY: {
        int f = name_field(v);
        fr->key = f < 0 ? R_TAG : f == F_NONE ? R_SKIP : R_FIELD + f;
        return;
    }
    case R_TAG: {
        irx_ev_type t;
        if (tag(v, &t))
            d->es.tag_bad = true;
        else
            d->ev->type = t, d->es.typed = true;
        return;
    }
    case R_HASH: {
        const char *e = engine_key(v, (ir_hash128 *)fr->out + fr->at - 1);
        if (e) ferr(d, F_HASHES, e);
        return;
    }
    case R_TOKEN:
        if (v->k != V_POS || v->v.u > UINT32_MAX)
            ferr(d, F_TOKENS, "token_ids: not a token id");
        else
            ((uint32_t *)fr->out)[fr->at - 1] = (uint32_t)v->v.u;
        return;
    case R_EXTRA_ITEM:
        extra_item(d, v);
        return;
    default:
        if (r >= R_FIELD) field(d, r - R_FIELD, v);
        return;
    }
}

/* ---- the template's callbacks ------------------------------------------------------ */

typedef dec evp_user;

static __attribute__((noinline)) int value_slow(dec *d, val v) {
    scalar(d, begin(d), &v);
    return 0;
}

/* Token ids and block hashes are most of a payload's values: they go straight into
 * their arrays; every other value through scalar(). */
static inline int value(dec *d, val v) {
    frame *fr = &d->st[d->top];
    if (fr->kind == K_TOKENS && v.k == V_POS && v.v.u <= UINT32_MAX) {
        ((uint32_t *)fr->out)[fr->at++] = (uint32_t)v.v.u;
        return 0;
    }
    if (fr->kind == K_HASHES && !engine_key(&v, (ir_hash128 *)fr->out + fr->at)) {
        fr->at++;
        return 0;
    }
    return value_slow(d, v);
}

static inline int container(dec *d, bool map, unsigned n) {
    uint64_t elems = map ? 2ull * n : n;
    if (elems > d->budget) return -1; /* more elements than the bytes can hold */
    d->budget -= elems;
    ckind k = container_begin(d, begin(d), map, n);
    if (n == 0) {
        container_end(d, k);
        return 0;
    }
    void *out = k == K_TOKENS   ? (void *)d->ev->tokens
                : k == K_HASHES ? (void *)d->ev->blocks
                                : NULL;
    d->st[++d->top] = (frame){.kind = k, .left = n, .key = R_SKIP, .out = out};
    return 0;
}

/* A child of the top container is complete. */
static inline int item_done(dec *d) {
    frame *fr = &d->st[d->top];
    if (--fr->left == 0) {
        d->top--;
        container_end(d, fr->kind);
    }
    return 0;
}

/* An unsigned of at most 32 bits (most are token ids): no range check on the way. */
static inline int value_u32(dec *d, uint32_t x) {
    frame *fr = &d->st[d->top];
    if (fr->kind == K_TOKENS) {
        ((uint32_t *)fr->out)[fr->at++] = x;
        return 0;
    }
    return value(d, (val){.k = V_POS, .v.u = x});
}

static inline val evp_cb_root(dec *d) {
    (void)d;
    return (val){.k = V_NIL};
}
#define UINT_CB(name, type)                                                                        \
    static inline int evp_cb_##name(dec *d, type x, val *o) {                                      \
        (void)o;                                                                                   \
        return value(d, (val){.k = V_POS, .v.u = x});                                              \
    }
#define INT_CB(name, type)                                                                         \
    static inline int evp_cb_##name(dec *d, type x, val *o) {                                      \
        (void)o;                                                                                   \
        return value(d, x >= 0 ? (val){.k = V_POS, .v.u = (uint64_t)x}                             \
                               : (val){.k = V_NEG, .v.i = x});                                     \
    }
#define U32_CB(name, type)                                                                         \
    static inline int evp_cb_##name(dec *d, type x, val *o) {                                      \
        (void)o;                                                                                   \
        return value_u32(d, x);                                                                    \
    }
U32_CB(uint8, uint8_t)
U32_CB(uint16, uint16_t)
U32_CB(uint32, uint32_t)
UINT_CB(uint64, uint64_t)
INT_CB(int8, int8_t)
INT_CB(int16, int16_t)
INT_CB(int32, int32_t)
INT_CB(int64, int64_t)

static inline int evp_cb_float(dec *d, float x, val *o) {
    (void)o;
    return value(d, (val){.k = V_FLOAT, .v.f = x});
}
static inline int evp_cb_double(dec *d, double x, val *o) {
    (void)o;
    return value(d, (val){.k = V_FLOAT, .v.f = x});
}
static inline int evp_cb_nil(dec *d, val *o) {
    (void)o;
    return value(d, (val){.k = V_NIL});
}
static inline int evp_cb_true(dec *d, val *o) {
    (void)o;
    return value(d, (val){.k = V_BOOL, .v.u = 1});
}
static inline int evp_cb_false(dec *d, val *o) {
    (void)o;
    return value(d, (val){.k = V_BOOL});
}
static inline int evp_cb_array(dec *d, unsigned n, val *o) {
    (void)o;
    if (container(d, false, n)) return -1;
    if (d->fast && n && d->st[d->top].kind == K_TOKENS) {
        d->tokens_at = n; /* the template stops here; tokens_fast reads the ids */
        return -1;
    }
    return 0;
}
static inline int evp_cb_map(dec *d, unsigned n, val *o) {
    (void)o;
    return container(d, true, n);
}
static inline int evp_cb_array_item(dec *d, val *c, val o) {
    (void)c, (void)o;
    return item_done(d);
}
static inline int evp_cb_map_item(dec *d, val *c, val k, val v) {
    (void)c, (void)k, (void)v;
    return item_done(d);
}
static inline int evp_cb_str(dec *d, const char *b, const char *p, unsigned l, val *o) {
    (void)b, (void)o;
    return value(d, (val){.k = V_STR, .len = l, .v.p = p});
}
static inline int evp_cb_bin(dec *d, const char *b, const char *p, unsigned l, val *o) {
    (void)b, (void)o;
    return value(d, (val){.k = V_BIN, .len = l, .v.p = p});
}
/* l counts the ext's type byte, so it is never 0, except when an ext 32's length of
 * 2^32 - 1 wrapped round in the template's "+ 1": refused (no such value fits). */
static inline int evp_cb_ext(dec *d, const char *b, const char *p, unsigned l, val *o) {
    (void)b, (void)o;
    if (l == 0) return -1;
    return value(d, (val){.k = V_EXT, .len = l, .v.p = p});
}

#define msgpack_unpack_struct(name)    struct evp##name
#define msgpack_unpack_func(ret, name) static inline ret evp##name
#define msgpack_unpack_callback(name)  evp_cb##name
#define msgpack_unpack_object          val
#define msgpack_unpack_user            evp_user
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <msgpack/unpack_template.h>
#pragma GCC diagnostic pop

/* ---- the batch ----------------------------------------------------------------------- */

/* The batch's error, in the order the object tree was walked. */
static int batch_end(dec *d) {
    if (d->root_bad) return fail(d, "batch: neither an array nor a map");
    if (!d->has_ts || !d->ts_ok) return fail(d, "batch: no ts");
    if (!d->has_events) return fail(d, "batch: no events");
    if (d->dp_err) return fail(d, d->dp_err);
    if (d->events_err) return fail(d, d->events_err);
    d->out->ev = d->evs;
    d->out->nev = d->nevs;
    return 0;
}

/* ---- token ids without the template (ADR 0024) ----------------------------------- */

/* The ids of the token array the template stopped at, whose header ends at byte
 * *off: read here, each a positive fixint, uint 8, uint 16 or uint 32, which the
 * template would hand to the same place. false (nothing to undo: the decode starts
 * again without this path) at any other form or at the payload's end. */
static bool tokens_fast(dec *d, const unsigned char *b, size_t len, size_t *off) {
    frame *fr = &d->st[d->top];
    uint32_t *t = fr->out, n = d->tokens_at;
    size_t i = *off + 1;
    for (uint32_t k = 0; k < n; k++) {
        if (i >= len) return false;
        unsigned c = b[i];
        if (c < 0x80) {
            t[k] = c, i += 1;
        } else if (c == 0xcc && len - i > 1) {
            t[k] = b[i + 1], i += 2;
        } else if (c == 0xcd && len - i > 2) {
            t[k] = (uint32_t)b[i + 1] << 8 | b[i + 2], i += 3;
        } else if (c == 0xce && len - i > 4) {
            t[k] = (uint32_t)b[i + 1] << 24 | (uint32_t)b[i + 2] << 16 | (uint32_t)b[i + 3] << 8 |
                   b[i + 4];
            i += 5;
        } else {
            return false;
        }
    }
    fr->at = n;
    *off = i;
    return true;
}

/* The template's own step after a value completes (its _push), for the token array
 * read outside it: the containers it completes end, in the template's stack and in
 * ours. true: it was the last value of the root. */
static bool value_done(struct evp_context *ctx) {
    dec *d = &ctx->user;
    d->top--; /* the token array's frame (container_end: nothing for its kind) */
    while (ctx->top) {
        struct evp_stack *c = &ctx->stack[ctx->top - 1];
        if (c->ct == MSGPACK_CT_MAP_KEY) {
            c->ct = MSGPACK_CT_MAP_VALUE;
            return false;
        }
        item_done(d);
        if (--c->count) {
            if (c->ct == MSGPACK_CT_MAP_VALUE) c->ct = MSGPACK_CT_MAP_KEY;
            return false;
        }
        ctx->top--;
    }
    return true;
}

/* The template over the payload, token arrays read by tokens_fast: 1 decoded, 0 not
 * one well-formed value, -1 to start again without tokens_fast. */
static int run(struct evp_context *ctx, const char *payload, size_t len) {
    dec *d = &ctx->user;
    size_t off = 0;
    for (;;) {
        d->tokens_at = 0;
        int r = evp_execute(ctx, payload, len, &off);
        if (!d->tokens_at) return r == 1 && off == len;
        if (!tokens_fast(d, (const unsigned char *)payload, len, &off)) return -1;
        ctx->cs = MSGPACK_CS_HEADER, ctx->trail = 0;
        if (value_done(ctx)) return off == len;
    }
}

static int decode(const void *payload, size_t len, irx_ev_batch *out, char *err, size_t errlen,
                  bool fast) {
    memset(out, 0, sizeof *out);
    out->dp_rank = -1;
    ir_arena *arena = ir_arena_new(64 * 1024, 16 * (size_t)len + (1u << 20));
    if (!arena) return fail(&(dec){.err = err, .errlen = errlen}, "out of memory");
    out->mem = arena;
    if (fast && irx_ev_decode_shapes(payload, len, arena, out)) return 0;
    if (fast) { /* not one of the usual shapes: what it read goes (ADR 0026) */
        ir_arena_reset(arena);
        out->ev = NULL, out->nev = 0, out->ts = 0, out->dp_rank = -1;
    }
    struct evp_context ctx;
    evp_init(&ctx);
    dec *d = &ctx.user;
    *d = (dec){
        .arena = arena, .err = err, .errlen = errlen, .budget = len, .out = out, .fast = fast};
    int r = run(&ctx, payload, len);
    if (r < 0) {
        irx_ev_batch_free(out);
        return decode(payload, len, out, err, errlen, false);
    }
    int rc = r ? batch_end(d) : fail(d, "not one well-formed msgpack value");
    if (rc) {
        irx_ev_batch_free(out);
        out->dp_rank = -1;
        out->ts = 0;
    }
    return rc;
}

static int decode_checked(const void *payload, size_t len, irx_ev_batch *out, char *err,
                          size_t errlen, bool fast) {
    if (len > IRX_EV_MAX_PAYLOAD) {
        memset(out, 0, sizeof *out);
        out->dp_rank = -1;
        return fail(&(dec){.err = err, .errlen = errlen}, "payload too large");
    }
    return decode(payload, len, out, err, errlen, fast);
}

int irx_ev_decode(const void *payload, size_t len, irx_ev_batch *out, char *err, size_t errlen) {
    return decode_checked(payload, len, out, err, errlen, true);
}

int irx_ev_decode_template(const void *payload, size_t len, irx_ev_batch *out, char *err,
                           size_t errlen) {
    return decode_checked(payload, len, out, err, errlen, false);
}

void irx_ev_batch_free(irx_ev_batch *b) {
    if (b->mem) ir_arena_free(b->mem);
    b->mem = NULL;
    b->ev = NULL;
    b->nev = 0;
}

bool irx_ev_group_follow(int32_t *followed, const irx_ev *ev) {
    if (ev->type == IRX_EV_CLEARED || ev->group_idx < 0) return true;
    if (ev->type == IRX_EV_STORED && ev->kind == IRX_KIND_FULL && *followed == IRX_GROUP_UNKNOWN)
        *followed = ev->group_idx; /* announced: full attention's group */
    if (ev->kind == IRX_KIND_OTHER) return false;
    if (*followed == IRX_GROUP_UNKNOWN) return ev->group_idx == 0;
    return ev->group_idx == *followed;
}
