/* ev_decode.c: vLLM's KV event batches (vllm/distributed/kv_events.py) from
 * msgpack bytes into irx_ev_batch (see ir_index.h and docs/internals/kv-events.md).
 *
 * Two encodings are in the field. Older vLLM encodes msgspec structs with
 * array_like=True: a batch is [ts, events, dp_rank?] and an event is
 * [tag, field1, field2, ...]. Newer vLLM encodes maps: {"ts", "events",
 * "data_parallel_rank"} and each event {"type": tag, field: value, ...}. In
 * both, trailing fields that hold their default may be missing, and fields this
 * decoder does not know are skipped. msgpack-c does the parsing; this file only
 * walks its object tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "index/index_internal.h"
#include "index/ir_index.h"

typedef struct dec {
    ir_arena *arena;
    char *err;
    size_t errlen;
} dec;

static int fail(dec *d, const char *what) {
    if (d->err && d->errlen) snprintf(d->err, d->errlen, "%s", what);
    return -1;
}

static bool is_str(const msgpack_object *o, const char *s) {
    size_t n = strlen(s);
    return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
           memcmp(o->via.str.ptr, s, n) == 0;
}

/* An engine block hash, opaque: an integer (its 64-bit pattern, so signed and
 * unsigned encodings of the same bits agree) or a byte string (sha256_cbor's 32
 * bytes), digested to 128 bits with its kind mixed in. */
static int engine_key(dec *d, const msgpack_object *o, ir_hash128 *out) {
    unsigned char buf[1 + IRX_EV_MAX_KEY_BYTES];
    size_t n;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        uint64_t v = o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? o->via.u64 : (uint64_t)o->via.i64;
        buf[0] = 'i';
        memcpy(buf + 1, &v, 8);
        n = 9;
    } else if (o->type == MSGPACK_OBJECT_BIN || o->type == MSGPACK_OBJECT_STR) {
        uint32_t len = o->type == MSGPACK_OBJECT_BIN ? o->via.bin.size : o->via.str.size;
        const char *p = o->type == MSGPACK_OBJECT_BIN ? o->via.bin.ptr : o->via.str.ptr;
        if (len == 0 || len > IRX_EV_MAX_KEY_BYTES) return fail(d, "block hash: bad length");
        buf[0] = 'b';
        memcpy(buf + 1, p, len);
        n = 1 + len;
    } else {
        return fail(d, "block hash: neither an integer nor bytes");
    }
    XXH128_hash_t h = XXH3_128bits(buf, n);
    *out = (ir_hash128){h.low64, h.high64};
    return 0;
}

static int hash_list(dec *d, const msgpack_object *o, irx_ev *ev) {
    if (o->type != MSGPACK_OBJECT_ARRAY) return fail(d, "block_hashes: not an array");
    uint32_t n = o->via.array.size;
    if (n > IRX_EV_MAX_BLOCKS) return fail(d, "block_hashes: too many");
    ir_hash128 *h = ir_arena_alloc(d->arena, (n ? n : 1) * sizeof *h);
    if (!h) return fail(d, "out of memory");
    for (uint32_t i = 0; i < n; i++)
        if (engine_key(d, &o->via.array.ptr[i], &h[i])) return -1;
    ev->blocks = h;
    ev->nblocks = n;
    return 0;
}

static int tokens(dec *d, const msgpack_object *o, irx_ev *ev) {
    if (o->type != MSGPACK_OBJECT_ARRAY) return fail(d, "token_ids: not an array");
    uint32_t n = o->via.array.size;
    if (n > IRX_EV_MAX_TOKENS) return fail(d, "token_ids: too many");
    uint32_t *t = ir_arena_alloc(d->arena, (n ? n : 1) * sizeof *t);
    if (!t) return fail(d, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *x = &o->via.array.ptr[i];
        if (x->type != MSGPACK_OBJECT_POSITIVE_INTEGER || x->via.u64 > UINT32_MAX)
            return fail(d, "token_ids: not a token id");
        t[i] = (uint32_t)x->via.u64;
    }
    ev->tokens = t;
    ev->ntokens = n;
    return 0;
}

static const char *opt_str(dec *d, const msgpack_object *o, bool *bad) {
    if (o->type == MSGPACK_OBJECT_NIL) return NULL;
    if (o->type != MSGPACK_OBJECT_STR || o->via.str.size > 4096) {
        *bad = true;
        return NULL;
    }
    char *s = ir_arena_strndup(d->arena, o->via.str.ptr, o->via.str.size);
    if (!s || strlen(s) != o->via.str.size) *bad = true; /* OOM, or a NUL inside */
    return s;
}

static int medium(dec *d, const msgpack_object *o, irx_ev *ev) {
    if (o->type == MSGPACK_OBJECT_NIL || is_str(o, "GPU") || is_str(o, "gpu"))
        ev->medium = IRX_MEDIUM_GPU;
    else if (is_str(o, "CPU") || is_str(o, "cpu"))
        ev->medium = IRX_MEDIUM_CPU;
    else if (o->type == MSGPACK_OBJECT_STR)
        ev->medium = IRX_MEDIUM_OTHER;
    else
        return fail(d, "medium: not a string");
    return 0;
}

/* extra_keys: one entry per block, each a tuple (array) or nil. The first block's
 * entry of a chain that starts at the root carries cache_salt when one was given
 * (vLLM puts the LoRA name, multimodal hashes, cache_salt and prompt-embedding
 * hashes there, in that order): the last string that is not the LoRA name. */
static int extra_keys(dec *d, const msgpack_object *o, irx_ev *ev) {
    if (o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_ARRAY) return fail(d, "extra_keys: not an array");
    if (o->via.array.size == 0) return 0;
    const msgpack_object *first = &o->via.array.ptr[0];
    if (first->type != MSGPACK_OBJECT_ARRAY) return 0;
    bool bad = false;
    for (uint32_t i = first->via.array.size; i-- > 0;) {
        const msgpack_object *k = &first->via.array.ptr[i];
        if (k->type != MSGPACK_OBJECT_STR) continue;
        const char *s = opt_str(d, k, &bad);
        if (bad) return fail(d, "extra_keys: bad string");
        if (ev->lora_name && strcmp(s, ev->lora_name) == 0) continue;
        ev->cache_salt = s;
        break;
    }
    return 0;
}

/* Field i (0-based, after the tag) of BlockStored / BlockRemoved, by its
 * position in the array encoding; the map encoding names it. */
enum {
    F_HASHES,
    F_PARENT,
    F_TOKENS,
    F_BSIZE,
    F_LORA_ID,
    F_MEDIUM,
    F_LORA_NAME,
    F_EXTRA,
    F_GROUP,
    F_KIND,
    F_NONE
};
static const char *const stored_names[] = {
    "block_hashes", "parent_block_hash", "token_ids",  "block_size", "lora_id",
    "medium",       "lora_name",         "extra_keys", "group_idx",  "kv_cache_spec_kind"};

/* group_idx: nil, or a group's index. */
static int group(dec *d, const msgpack_object *o, irx_ev *ev) {
    if (o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > INT32_MAX)
        return fail(d, "group_idx: not a group index");
    ev->group_idx = (int32_t)o->via.u64;
    return 0;
}

/* kv_cache_spec_kind: the kinds whose blocks make a prefix hit are full attention's. */
static int kind(dec *d, const msgpack_object *o, irx_ev *ev) {
    if (o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_STR) return fail(d, "kv_cache_spec_kind: not a string");
    bool full = is_str(o, "full_attention") || is_str(o, "mla_attention") ||
                is_str(o, "sink_full_attention");
    ev->kind = full ? IRX_KIND_FULL : IRX_KIND_OTHER;
    return 0;
}

static int field(dec *d, irx_ev *ev, int f, const msgpack_object *v) {
    bool bad = false;
    switch (f) {
    case F_HASHES:
        return hash_list(d, v, ev);
    case F_PARENT:
        if (v->type == MSGPACK_OBJECT_NIL) return 0;
        ev->has_parent = true;
        return engine_key(d, v, &ev->parent);
    case F_TOKENS:
        return tokens(d, v, ev);
    case F_BSIZE:
        /* 0: newer vLLM's OffloadingConnector, on a CPU copy without token ids. */
        if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 > 1u << 16)
            return fail(d, "block_size: not an integer in 0..65536");
        ev->block_size = (uint32_t)v->via.u64;
        return 0;
    case F_MEDIUM:
        return medium(d, v, ev);
    case F_LORA_NAME:
        ev->lora_name = opt_str(d, v, &bad);
        return bad ? fail(d, "lora_name: not a string") : 0;
    case F_EXTRA:
        return extra_keys(d, v, ev);
    case F_GROUP:
        return group(d, v, ev);
    case F_KIND:
        return kind(d, v, ev);
    default:
        return 0; /* lora_id (deprecated) and anything newer: ignored */
    }
}

/* BlockRemoved's fields by position: block_hashes, medium, group_idx. */
static int removed_field(int pos) {
    return pos == 0 ? F_HASHES : pos == 1 ? F_MEDIUM : pos == 2 ? F_GROUP : F_NONE;
}
static int stored_field(int pos) {
    return pos < F_NONE ? pos : F_NONE;
}

static int name_field(const msgpack_object *k, irx_ev_type t) {
    for (int f = 0; f < F_NONE; f++)
        if (is_str(k, stored_names[f])) {
            if (t == IRX_EV_REMOVED && f != F_HASHES && f != F_MEDIUM && f != F_GROUP)
                return F_NONE;
            return t == IRX_EV_CLEARED ? F_NONE : f;
        }
    return F_NONE;
}

static int tag(dec *d, const msgpack_object *o, irx_ev_type *t) {
    if (is_str(o, "BlockStored"))
        *t = IRX_EV_STORED;
    else if (is_str(o, "BlockRemoved"))
        *t = IRX_EV_REMOVED;
    else if (is_str(o, "AllBlocksCleared"))
        *t = IRX_EV_CLEARED;
    else
        return fail(d, "event: unknown type");
    return 0;
}

static int check_stored(dec *d, irx_ev *ev) {
    if (ev->type == IRX_EV_CLEARED) return 0;
    if (!ev->blocks) return fail(d, "event: no block_hashes");
    if (ev->type == IRX_EV_REMOVED) return 0;
    if (!ev->tokens || (ev->block_size == 0 && ev->ntokens))
        return fail(d, "BlockStored: no token_ids or block_size");
    return 0;
}

static int event(dec *d, const msgpack_object *o, irx_ev *ev) {
    memset(ev, 0, sizeof *ev);
    ev->medium = IRX_MEDIUM_GPU;
    ev->group_idx = -1;
    if (o->type == MSGPACK_OBJECT_ARRAY) {
        const msgpack_object_array *a = &o->via.array;
        if (a->size == 0 || tag(d, &a->ptr[0], &ev->type))
            return a->size ? -1 : fail(d, "event: empty");
        /* lora_name comes before extra_keys, so cache_salt can skip it. */
        for (uint32_t i = 1; i < a->size; i++) {
            int f = ev->type == IRX_EV_STORED    ? stored_field((int)i - 1)
                    : ev->type == IRX_EV_REMOVED ? removed_field((int)i - 1)
                                                 : F_NONE;
            if (field(d, ev, f, &a->ptr[i])) return -1;
        }
        return check_stored(d, ev);
    }
    if (o->type != MSGPACK_OBJECT_MAP) return fail(d, "event: neither an array nor a map");
    const msgpack_object_map *m = &o->via.map;
    const msgpack_object *extra = NULL;
    bool typed = false;
    for (uint32_t i = 0; i < m->size; i++)
        if (is_str(&m->ptr[i].key, "type")) {
            if (tag(d, &m->ptr[i].val, &ev->type)) return -1;
            typed = true;
        }
    if (!typed) return fail(d, "event: no type");
    for (uint32_t i = 0; i < m->size; i++) {
        int f = name_field(&m->ptr[i].key, ev->type);
        if (f == F_EXTRA)
            extra = &m->ptr[i].val; /* after lora_name, wherever it sits */
        else if (field(d, ev, f, &m->ptr[i].val))
            return -1;
    }
    if (extra && field(d, ev, F_EXTRA, extra)) return -1;
    return check_stored(d, ev);
}

static int number(const msgpack_object *o, double *out) {
    switch (o->type) {
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *out = o->via.f64;
        return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        *out = (double)o->via.u64;
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *out = (double)o->via.i64;
        return 0;
    default:
        return -1;
    }
}

static int dp_rank(dec *d, const msgpack_object *o, irx_ev_batch *b) {
    if (o->type == MSGPACK_OBJECT_NIL) return 0;
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > INT32_MAX)
        return fail(d, "data_parallel_rank: not a rank");
    b->dp_rank = (int64_t)o->via.u64;
    return 0;
}

static int events(dec *d, const msgpack_object *o, irx_ev_batch *b) {
    if (o->type != MSGPACK_OBJECT_ARRAY) return fail(d, "events: not an array");
    uint32_t n = o->via.array.size;
    if (n > IRX_EV_MAX_EVENTS) return fail(d, "events: too many");
    b->ev = ir_arena_alloc(d->arena, (n ? n : 1) * sizeof *b->ev);
    if (!b->ev) return fail(d, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        if (event(d, &o->via.array.ptr[i], &b->ev[i])) return -1;
        b->nev = i + 1;
    }
    return 0;
}

static int batch(dec *d, const msgpack_object *o, irx_ev_batch *b) {
    const msgpack_object *ts = NULL, *evs = NULL, *dp = NULL;
    if (o->type == MSGPACK_OBJECT_ARRAY) {
        const msgpack_object_array *a = &o->via.array;
        ts = a->size > 0 ? &a->ptr[0] : NULL;
        evs = a->size > 1 ? &a->ptr[1] : NULL;
        dp = a->size > 2 ? &a->ptr[2] : NULL;
    } else if (o->type == MSGPACK_OBJECT_MAP) {
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            if (is_str(&kv->key, "ts")) ts = &kv->val;
            if (is_str(&kv->key, "events")) evs = &kv->val;
            if (is_str(&kv->key, "data_parallel_rank")) dp = &kv->val;
        }
    } else {
        return fail(d, "batch: neither an array nor a map");
    }
    if (!ts || number(ts, &b->ts)) return fail(d, "batch: no ts");
    if (!evs) return fail(d, "batch: no events");
    if (dp && dp_rank(d, dp, b)) return -1;
    return events(d, evs, b);
}

int irx_ev_decode(const void *payload, size_t len, irx_ev_batch *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->dp_rank = -1;
    dec d = {NULL, err, errlen};
    if (len > IRX_EV_MAX_PAYLOAD) return fail(&d, "payload too large");
    /* msgpack-c allocates a container's elements as soon as it reads the count:
     * refuse counts that the bytes cannot hold before handing it the payload. */
    if (irx_msgpack_sane(payload, len)) return fail(&d, "not one well-formed msgpack value");
    d.arena = ir_arena_new(64 * 1024, 16 * (size_t)len + (1u << 20));
    if (!d.arena) return fail(&d, "out of memory");
    out->mem = d.arena;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    size_t off = 0;
    int rc = msgpack_unpack_next(&u, payload, len, &off) == MSGPACK_UNPACK_SUCCESS && off == len
                 ? batch(&d, &u.data, out)
                 : fail(&d, "not one msgpack value");
    msgpack_unpacked_destroy(&u);
    if (rc) {
        irx_ev_batch_free(out);
        out->dp_rank = -1;
    }
    return rc;
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
