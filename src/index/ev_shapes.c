/* ev_shapes.c: vLLM's KV event batches in their usual shapes, read straight from
 * the bytes (ADR 0026). irx_ev_decode tries this reader first; anything it does
 * not know, or that would be an error, makes it give up, and the payload is then
 * decoded by msgpack-c's template (ev_decode.c, ADRs 0019 and 0024), which stays
 * the reference: `fuzz_kv_events` checks on every input that both give the same
 * batch.
 *
 * What it reads: a batch as a map ("ts", "events", "data_parallel_rank", each at
 * most once) or an array ([ts, events, dp_rank?]); events as maps (the keys that
 * ev_decode.c knows, each at most once) or arrays (the tag, then fields by
 * position); every field in the forms that vLLM writes: block hashes as integers
 * of any width or 1 to 64 bytes (bin or str), token ids as non-negative integers
 * of at most 32 bits, medium, lora_name and kv_cache_spec_kind as strings or nil,
 * block_size and group_idx as non-negative integers, lora_id as an integer or nil,
 * extra_keys nil (or nil for every block), and values of unknown fields that are scalars. A decoded
 * event is kept or dropped field by field as ev_decode.c does, and one that
 * ev_decode.c would refuse (no block_hashes, no token_ids) makes this reader give
 * up, so it never has an error of its own to report. */
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "index/ev_fields.h"
#include "index/index_internal.h"
#include "index/ir_index.h"

typedef struct rd {
    const unsigned char *p, *end;
    ir_arena *arena;
    unsigned char *cur, *lim; /* a piece of the arena that small arrays are cut from */
} rd;

/* The hot helpers are always inlined: one call per msgpack value would cost more than
 * the reading. */

IR_INLINE size_t left(const rd *r) {
    return (size_t)(r->end - r->p);
}
IR_INLINE uint32_t be16(const unsigned char *p) {
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return __builtin_bswap16(v);
}
IR_INLINE uint32_t be32(const unsigned char *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return __builtin_bswap32(v);
}
IR_INLINE uint64_t be64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return __builtin_bswap64(v);
}

/* ---- msgpack's forms ------------------------------------------------------------- */

/* A container's header: fixarray / array 16 / array 32 (map: fixmap, map 16, 32). */
IR_INLINE bool header(rd *r, bool map, uint32_t *n) {
    if (r->p == r->end) return false;
    unsigned c = *r->p, fix = map ? 0x80 : 0x90, h16 = map ? 0xde : 0xdc;
    if ((c & 0xf0) == fix) {
        *n = c & 0x0f, r->p += 1;
    } else if (c == h16 && left(r) > 2) {
        *n = be16(r->p + 1), r->p += 3;
    } else if (c == h16 + 1 && left(r) > 4) {
        *n = be32(r->p + 1), r->p += 5;
    } else {
        return false;
    }
    return true;
}

/* A string (fixstr, str 8/16/32) or, with bin, a binary (bin 8/16/32). */
IR_INLINE bool bytes(rd *r, bool bin, const unsigned char **s, uint32_t *n) {
    if (r->p == r->end) return false;
    unsigned c = *r->p;
    size_t h;
    if ((c & 0xe0) == 0xa0)
        *n = c & 0x1f, h = 1;
    else if ((c == 0xd9 || (bin && c == 0xc4)) && left(r) > 1)
        *n = r->p[1], h = 2;
    else if ((c == 0xda || (bin && c == 0xc5)) && left(r) > 2)
        *n = be16(r->p + 1), h = 3;
    else if ((c == 0xdb || (bin && c == 0xc6)) && left(r) > 4)
        *n = be32(r->p + 1), h = 5;
    else
        return false;
    if (left(r) - h < *n) return false;
    *s = r->p + h;
    r->p += h + *n;
    return true;
}

IR_INLINE bool is_nil(rd *r) {
    if (r->p == r->end || *r->p != 0xc0) return false;
    r->p++;
    return true;
}

/* An unsigned integer (positive fixint, uint 8 to 64). */
IR_INLINE bool read_uint(rd *r, uint64_t *v) {
    if (r->p == r->end) return false;
    unsigned c = *r->p;
    size_t n = left(r);
    if (c < 0x80)
        *v = c, r->p += 1;
    else if (c == 0xcc && n > 1)
        *v = r->p[1], r->p += 2;
    else if (c == 0xcd && n > 2)
        *v = be16(r->p + 1), r->p += 3;
    else if (c == 0xce && n > 4)
        *v = be32(r->p + 1), r->p += 5;
    else if (c == 0xcf && n > 8)
        *v = be64(r->p + 1), r->p += 9;
    else
        return false;
    return true;
}

/* Any integer, as its 64-bit pattern (signed ones sign-extended). */
IR_INLINE bool int_bits(rd *r, uint64_t *v) {
    if (read_uint(r, v)) return true;
    if (r->p == r->end) return false;
    unsigned c = *r->p;
    size_t n = left(r);
    if (c >= 0xe0)
        *v = (uint64_t)(int64_t)(int8_t)c, r->p += 1;
    else if (c == 0xd0 && n > 1)
        *v = (uint64_t)(int64_t)(int8_t)r->p[1], r->p += 2;
    else if (c == 0xd1 && n > 2)
        *v = (uint64_t)(int64_t)(int16_t)be16(r->p + 1), r->p += 3;
    else if (c == 0xd2 && n > 4)
        *v = (uint64_t)(int64_t)(int32_t)be32(r->p + 1), r->p += 5;
    else if (c == 0xd3 && n > 8)
        *v = be64(r->p + 1), r->p += 9;
    else
        return false;
    return true;
}

/* A scalar of a field nobody reads: nil, a boolean, an integer, a float or a string. */
static bool skip_scalar(rd *r) {
    uint64_t v;
    const unsigned char *s;
    uint32_t n;
    if (r->p == r->end) return false;
    unsigned c = *r->p;
    if (c == 0xc0 || c == 0xc2 || c == 0xc3) return r->p++, true;
    if (c == 0xca && left(r) > 4) return r->p += 5, true;
    if (c == 0xcb && left(r) > 8) return r->p += 9, true;
    return int_bits(r, &v) || bytes(r, false, &s, &n);
}

static bool is_lit(const unsigned char *s, uint32_t n, const char *lit, uint32_t ln) {
    return n == ln && memcmp(s, lit, ln) == 0;
}
#define LIT(s, n, lit) is_lit((s), (n), (lit), sizeof(lit) - 1)

/* n bytes for an array, rounded up to 16: small ones are cut from pieces of the arena
 * taken 4 KiB at a time, so that most arrays cost no call. The template takes the same
 * arrays one by one, so no more of the arena than this: a batch read here within the
 * arena's cap is one the template would not refuse for memory (and where the cap stops
 * this reader, the template decides). */
#define PIECE 4096u
static void *grab_slow(rd *r, size_t n) {
    if (n >= PIECE / 4) return ir_arena_alloc(r->arena, n);
    unsigned char *p = ir_arena_alloc(r->arena, PIECE);
    if (!p) return ir_arena_alloc(r->arena, n);
    r->cur = p + n, r->lim = p + PIECE;
    return p;
}
IR_INLINE void *grab(rd *r, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if ((size_t)(r->lim - r->cur) < n) return grab_slow(r, n);
    void *p = r->cur;
    r->cur += n;
    return p;
}

/* ---- an event's fields -------------------------------------------------------------- */

IR_INLINE bool hash(rd *r, ir_hash128 *out) {
    uint64_t v;
    const unsigned char *s;
    uint32_t n;
    if (left(r) > 8 && *r->p == 0xcf) { /* uint 64: vLLM's integer hashes, mostly */
        *out = irx_ekey_int(be64(r->p + 1));
        r->p += 9;
        return true;
    }
    if (int_bits(r, &v)) {
        *out = irx_ekey_int(v);
        return true;
    }
    if (!bytes(r, true, &s, &n) || n == 0 || n > IRX_EV_MAX_KEY_BYTES) return false;
    *out = irx_ekey_bytes(s, n);
    return true;
}

IR_INLINE bool hashes(rd *r, irx_ev *ev) {
    uint32_t n;
    if (!header(r, false, &n) || n > IRX_EV_MAX_BLOCKS) return false;
    ir_hash128 *h = grab(r, (n ? n : 1) * sizeof *h);
    if (!h) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!hash(r, &h[i])) return false;
    ev->blocks = h, ev->nblocks = n;
    return true;
}

/* One token id at p (a positive fixint, uint 8, 16 or 32), with 5 bytes readable
 * there: the next id's place, or NULL for any other form. Branches, not a table of
 * forms: a table's load would sit on the chain from one id's place to the next. */
IR_INLINE const unsigned char *token(const unsigned char *p, uint32_t *t) {
    unsigned c = p[0]; /* ids of 16 and 32 bits first: most of a large vocabulary */
    if (c == 0xce) return *t = be32(p + 1), p + 5;
    if (c == 0xcd) return *t = be16(p + 1), p + 3;
    if (c < 0x80) return *t = c, p + 1;
    if (c == 0xcc) return *t = p[1], p + 2;
    return NULL;
}

/* The same near the end: fewer than 5 bytes may be left. */
static const unsigned char *token_near_end(const unsigned char *p, const unsigned char *end,
                                           uint32_t *t) {
    unsigned char tail[5] = {0};
    size_t have = (size_t)(end - p) < 5 ? (size_t)(end - p) : 5;
    memcpy(tail, p, have);
    const unsigned char *q = have ? token(tail, t) : NULL;
    return q && (size_t)(q - tail) <= have ? p + (q - tail) : NULL;
}

static bool tokens(rd *r, irx_ev *ev) {
    uint32_t n;
    if (!header(r, false, &n) || n > IRX_EV_MAX_TOKENS) return false;
    uint32_t *t = grab(r, (n ? n : 1) * sizeof *t);
    if (!t) return false;
    const unsigned char *p = r->p;
    for (uint32_t i = 0; i < n;) {
        /* While 5 bytes are left for each id of a run, no id runs past the end. */
        size_t run = (size_t)(r->end - p) / 5;
        if (run == 0) {
            if (!(p = token_near_end(p, r->end, &t[i++]))) return false;
            continue;
        }
        uint32_t stop = run < n - i ? i + (uint32_t)run : n;
        for (; i + 4 <= stop; i += 4) /* four at a time: one loop test for four ids */
            if (!(p = token(p, &t[i])) || !(p = token(p, &t[i + 1])) ||
                !(p = token(p, &t[i + 2])) || !(p = token(p, &t[i + 3])))
                return false;
        for (; i < stop; i++)
            if (!(p = token(p, &t[i]))) return false;
    }
    r->p = p;
    ev->tokens = t, ev->ntokens = n;
    return true;
}

IR_INLINE bool medium(rd *r, irx_ev *ev) {
    const unsigned char *s;
    uint32_t n;
    if (left(r) >= 4 && memcmp(r->p, "\xa3GPU", 4) == 0) { /* the usual one */
        ev->medium = IRX_MEDIUM_GPU;
        r->p += 4;
        return true;
    }
    if (is_nil(r)) {
        ev->medium = IRX_MEDIUM_GPU;
        return true;
    }
    if (!bytes(r, false, &s, &n)) return false;
    ev->medium = LIT(s, n, "GPU") || LIT(s, n, "gpu")   ? IRX_MEDIUM_GPU
                 : LIT(s, n, "CPU") || LIT(s, n, "cpu") ? IRX_MEDIUM_CPU
                                                        : IRX_MEDIUM_OTHER;
    return true;
}

static bool lora_name(rd *r, irx_ev *ev) {
    const unsigned char *s;
    uint32_t n;
    if (is_nil(r)) {
        ev->lora_name = NULL;
        return true;
    }
    if (!bytes(r, false, &s, &n) || n > 4096 || memchr(s, 0, n)) return false;
    char *c = ir_arena_alloc(r->arena, (size_t)n + 1);
    if (!c) return false;
    memcpy(c, s, n);
    c[n] = 0;
    ev->lora_name = c;
    return true;
}

static bool spec_kind(rd *r, irx_ev *ev) {
    const unsigned char *s;
    uint32_t n;
    if (is_nil(r)) return true;
    if (!bytes(r, false, &s, &n)) return false;
    bool full = LIT(s, n, "full_attention") || LIT(s, n, "mla_attention") ||
                LIT(s, n, "sink_full_attention");
    ev->kind = full ? IRX_KIND_FULL : IRX_KIND_OTHER;
    return true;
}

/* Field f's value (F_NONE: a field nobody reads). */
IR_INLINE bool field(rd *r, irx_ev *ev, int f) {
    uint64_t v;
    uint32_t v32;
    switch (f) {
    case F_HASHES:
        return hashes(r, ev);
    case F_PARENT:
        if (is_nil(r)) return true;
        ev->has_parent = true;
        return hash(r, &ev->parent);
    case F_TOKENS:
        return tokens(r, ev);
    case F_BSIZE:
        if (!read_uint(r, &v) || v > 1u << 16) return false;
        ev->block_size = (uint32_t)v;
        return true;
    case F_LORA_ID:
        return is_nil(r) || int_bits(r, &v);
    case F_MEDIUM:
        return medium(r, ev);
    case F_LORA_NAME:
        return lora_name(r, ev);
    case F_EXTRA: /* nil, or nil for every block: no salt (a tuple: the template's) */
        if (is_nil(r)) return true;
        if (!header(r, false, &v32)) return false;
        for (uint32_t i = 0; i < v32; i++)
            if (!is_nil(r)) return false;
        return true;
    case F_GROUP:
        if (is_nil(r)) return true;
        if (!read_uint(r, &v) || v > INT32_MAX) return false;
        ev->group_idx = (int32_t)v;
        return true;
    case F_KIND:
        return spec_kind(r, ev);
    default:
        return skip_scalar(r);
    }
}

/* ---- events ------------------------------------------------------------------------------ */

static bool tag(const unsigned char *s, uint32_t n, irx_ev_type *t) {
    if (LIT(s, n, "BlockStored"))
        *t = IRX_EV_STORED;
    else if (LIT(s, n, "BlockRemoved"))
        *t = IRX_EV_REMOVED;
    else if (LIT(s, n, "AllBlocksCleared"))
        *t = IRX_EV_CLEARED;
    else
        return false;
    return true;
}

/* A map key's field; -1 for "type". */
static int key_field(const unsigned char *s, uint32_t n) {
    switch (n) {
    case 4:
        return LIT(s, n, "type") ? -1 : F_NONE;
    case 6:
        return LIT(s, n, "medium") ? F_MEDIUM : F_NONE;
    case 7:
        return LIT(s, n, "lora_id") ? F_LORA_ID : F_NONE;
    case 9:
        return LIT(s, n, "token_ids")   ? F_TOKENS
               : LIT(s, n, "lora_name") ? F_LORA_NAME
               : LIT(s, n, "group_idx") ? F_GROUP
                                        : F_NONE;
    case 10:
        return LIT(s, n, "block_size") ? F_BSIZE : LIT(s, n, "extra_keys") ? F_EXTRA : F_NONE;
    case 12:
        return LIT(s, n, "block_hashes") ? F_HASHES : F_NONE;
    case 17:
        return LIT(s, n, "parent_block_hash") ? F_PARENT : F_NONE;
    case 18:
        return LIT(s, n, "kv_cache_spec_kind") ? F_KIND : F_NONE;
    default:
        return F_NONE;
    }
}

static bool event_map(rd *r, irx_ev *ev, uint32_t n) {
    unsigned seen = 0;
    bool typed = false;
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *s;
        uint32_t len;
        if (!bytes(r, false, &s, &len)) return false;
        int f = key_field(s, len);
        if (f < 0) {
            if (typed || !bytes(r, false, &s, &len) || !tag(s, len, &ev->type)) return false;
            typed = true;
            continue;
        }
        if (f != F_NONE && (seen & 1u << f)) return false; /* twice: the template's */
        seen |= 1u << f;
        if (!field(r, ev, f)) return false;
    }
    return typed;
}

static bool event_array(rd *r, irx_ev *ev, uint32_t n) {
    const unsigned char *s;
    uint32_t len;
    if (n == 0 || !bytes(r, false, &s, &len) || !tag(s, len, &ev->type)) return false;
    for (uint32_t pos = 0; pos + 1 < n; pos++)
        if (!field(r, ev, irx_ev_pos_field(ev->type, pos))) return false;
    return true;
}

/* The commonest event of all: vLLM evicts block by block, one BlockRemoved each, as
 * {"type": "BlockRemoved", "block_hashes": [h], "medium": "GPU"} (map) or
 * ["BlockRemoved", [h], "GPU"] (array). Its bytes are a fixed head, the hash and a
 * fixed tail; matched whole, the event takes about 240 instructions to read against
 * 410 key by key (bench/results/events). Anything else (another key order, more
 * blocks, other fields) is left to event_map and event_array, which give the same
 * event for these bytes. */
static const unsigned char RM_MAP_HEAD[] = "\x83\xa4type\xac"
                                           "BlockRemoved\xac"
                                           "block_hashes\x91";
static const unsigned char RM_MAP_TAIL[] = "\xa6medium\xa3GPU";
static const unsigned char RM_ARR_HEAD[] = "\x93\xac"
                                           "BlockRemoved\x91";
static const unsigned char RM_ARR_TAIL[] = "\xa3GPU";

IR_INLINE bool starts(const rd *r, const unsigned char *lit, size_t n) {
    return left(r) >= n && memcmp(r->p, lit, n) == 0;
}

IR_INLINE bool removed_one(rd *r, irx_ev *ev) {
    const unsigned char *tail, *at = r->p;
    size_t nt;
    if (starts(r, RM_MAP_HEAD, sizeof RM_MAP_HEAD - 1)) {
        r->p += sizeof RM_MAP_HEAD - 1, tail = RM_MAP_TAIL, nt = sizeof RM_MAP_TAIL - 1;
    } else if (starts(r, RM_ARR_HEAD, sizeof RM_ARR_HEAD - 1)) {
        r->p += sizeof RM_ARR_HEAD - 1, tail = RM_ARR_TAIL, nt = sizeof RM_ARR_TAIL - 1;
    } else {
        return false;
    }
    ir_hash128 k, *h;
    if (!hash(r, &k) || !starts(r, tail, nt) || !(h = grab(r, sizeof *h))) {
        r->p = at;
        return false;
    }
    r->p += nt;
    *h = k;
    ev->type = IRX_EV_REMOVED, ev->blocks = h, ev->nblocks = 1;
    return true;
}

/* One event; false where the template would refuse it (or might: give up). */
static bool event(rd *r, irx_ev *ev) {
    *ev = (irx_ev){.medium = IRX_MEDIUM_GPU, .group_idx = -1};
    if (removed_one(r, ev)) return true;
    uint32_t n;
    bool ok = header(r, true, &n)    ? event_map(r, ev, n)
              : header(r, false, &n) ? event_array(r, ev, n)
                                     : false;
    if (!ok) return false;
    irx_ev_keep_read(ev, irx_ev_read_by(ev->type));
    if (ev->type == IRX_EV_CLEARED) return true;
    if (!ev->blocks) return false; /* "event: no block_hashes" */
    /* "BlockStored: no token_ids or block_size" */
    return ev->type == IRX_EV_REMOVED || (ev->tokens && (ev->block_size || !ev->ntokens));
}

static bool events(rd *r, irx_ev_batch *out) {
    uint32_t n;
    if (!header(r, false, &n) || n > IRX_EV_MAX_EVENTS) return false;
    irx_ev *ev = grab(r, (n ? n : 1) * sizeof *ev);
    if (!ev) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!event(r, &ev[i])) return false;
    out->ev = ev, out->nev = n;
    return true;
}

/* ---- the batch ---------------------------------------------------------------------------- */

static bool ts(rd *r, double *out) {
    uint64_t v;
    if (r->p == r->end) return false;
    unsigned c = *r->p;
    if (c == 0xcb && left(r) > 8) {
        v = be64(r->p + 1), r->p += 9;
        memcpy(out, &v, sizeof *out);
        return true;
    }
    if (c == 0xca && left(r) > 4) {
        uint32_t w = be32(r->p + 1);
        float f;
        memcpy(&f, &w, sizeof f);
        *out = f, r->p += 5;
        return true;
    }
    if (read_uint(r, &v)) {
        *out = (double)v;
        return true;
    }
    if (!int_bits(r, &v)) return false;
    *out = (double)(int64_t)v;
    return true;
}

static bool dp_rank(rd *r, irx_ev_batch *out) {
    uint64_t v;
    if (is_nil(r)) return true;
    if (!read_uint(r, &v) || v > INT32_MAX) return false;
    out->dp_rank = (int64_t)v;
    return true;
}

static bool batch_map(rd *r, irx_ev_batch *out, uint32_t n) {
    bool has_ts = false, has_events = false, has_dp = false;
    for (uint32_t i = 0; i < n; i++) {
        const unsigned char *s;
        uint32_t len;
        if (!bytes(r, false, &s, &len)) return false;
        bool ok, *seen = LIT(s, len, "ts")                   ? &has_ts
                         : LIT(s, len, "events")             ? &has_events
                         : LIT(s, len, "data_parallel_rank") ? &has_dp
                                                             : NULL;
        if (seen && *seen) return false; /* twice: the template's */
        if (seen == &has_ts)
            ok = ts(r, &out->ts);
        else if (seen == &has_events)
            ok = events(r, out);
        else if (seen == &has_dp)
            ok = dp_rank(r, out);
        else
            ok = skip_scalar(r);
        if (seen) *seen = true;
        if (!ok) return false;
    }
    return has_ts && has_events;
}

static bool batch_array(rd *r, irx_ev_batch *out, uint32_t n) {
    if (n < 2 || n > 3 || !ts(r, &out->ts) || !events(r, out)) return false;
    return n == 2 || dp_rank(r, out);
}

bool irx_ev_decode_shapes(const void *payload, size_t len, ir_arena *arena, irx_ev_batch *out) {
    rd r = {.p = payload, .end = (const unsigned char *)payload + len, .arena = arena};
    uint32_t n;
    bool ok = header(&r, true, &n)    ? batch_map(&r, out, n)
              : header(&r, false, &n) ? batch_array(&r, out, n)
                                      : false;
    return ok && r.p == r.end;
}
