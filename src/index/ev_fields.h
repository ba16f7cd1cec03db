/* ev_fields.h: what the KV event decoder's two readers share (ev_decode.c, the
 * template's; ev_shapes.c, the usual shapes', ADR 0026): the fields of an event,
 * the digest of an engine block hash, and which fields each type keeps. Internal to
 * src/index; include after xxhash.h with XXH_INLINE_ALL. */
#ifndef IR_INDEX_EV_FIELDS_H
#define IR_INDEX_EV_FIELDS_H

#include <stdint.h>
#include <string.h>

#include "index/ir_index.h"

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

/* An engine block hash, opaque, digested to 128 bits with its kind mixed in: an
 * integer by its 64-bit pattern (so signed and unsigned encodings of the same bits
 * agree), a byte string (sha256_cbor's 32 bytes; 1 to IRX_EV_MAX_KEY_BYTES) by its
 * bytes. An integer's low half is a bijective mix (Stafford's 64-bit finalizer,
 * variant 13) of it xor the process's secret, so two integers never share a key,
 * and its high half a constant (only the low half is ever compared); a byte
 * string's halves are XXH3-128 of the bytes, seeded with the secret (ADR 0026). */
/* A per-process secret (ev_decode.c, drawn from getrandom at start-up) mixed into
 * every engine key: the digests are public bijections, so without it a publisher
 * could choose integer hashes whose keys crowd one slot of the key table and make
 * every insert walk the crowd (80,000 such hashes took 7.5 s to apply against
 * 0.03 s). Keys never leave the process, so they may differ from run to run. */
extern uint64_t irx_ekey_secret;

static inline uint64_t irx_ekey_mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static inline ir_hash128 irx_ekey_int(uint64_t bits) {
    /* The low half alone is a bijection of the integer, and the index keys nodes by
     * the low half only: the high half is a constant, not a second mix. */
    return (ir_hash128){irx_ekey_mix(bits ^ irx_ekey_secret ^ 0x243f6a8885a308d3ull),
                        0x13198a2e03707344ull};
}
static inline ir_hash128 irx_ekey_bytes(const void *p, size_t n) {
    XXH128_hash_t h = XXH3_128bits_withSeed(p, n, irx_ekey_secret ^ 0x62 /* 'b' */);
    return (ir_hash128){h.low64, h.high64};
}

/* A field's place in the array encoding, by the event's type (F_NONE: none). */
static inline int irx_ev_pos_field(irx_ev_type t, uint32_t pos) {
    if (t == IRX_EV_STORED) return pos < F_NONE ? (int)pos : F_NONE;
    if (t == IRX_EV_REMOVED)
        return pos == 0 ? F_HASHES : pos == 1 ? F_MEDIUM : pos == 2 ? F_GROUP : F_NONE;
    return F_NONE;
}

/* The fields the event's type reads; the others' values and errors are dropped. */
static inline unsigned irx_ev_read_by(irx_ev_type t) {
    if (t == IRX_EV_STORED) return (1u << F_NONE) - 1;
    if (t == IRX_EV_REMOVED) return 1u << F_HASHES | 1u << F_MEDIUM | 1u << F_GROUP;
    return 0;
}

/* Puts the fields outside `fields` back to their defaults. */
static inline void irx_ev_keep_read(irx_ev *ev, unsigned fields) {
    if (fields == (1u << F_NONE) - 1) return;
    /* field by field, not a copy of the whole event */
    if (!(fields & 1u << F_HASHES)) ev->blocks = NULL, ev->nblocks = 0;
    if (!(fields & 1u << F_MEDIUM)) ev->medium = IRX_MEDIUM_GPU;
    if (!(fields & 1u << F_GROUP)) ev->group_idx = -1;
    ev->has_parent = false, ev->parent = (ir_hash128){0, 0};
    ev->ntokens = ev->block_size = 0, ev->tokens = NULL;
    ev->lora_name = ev->cache_salt = NULL, ev->kind = IRX_KIND_NONE;
}

#endif
