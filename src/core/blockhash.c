/* blockhash.c: chained XXH3-128 block hashes (see ir_core.h). */
#include "core/ir_core.h"

#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* A block this small is copied behind its parent's hash and hashed in one shot;
 * larger ones go through the streaming API, which yields the same digest. */
#define ONE_SHOT_BYTES 4096

static void absorb_salt(XXH3_state_t *st, const char *s, size_t len) {
    /* Length-prefixed, so ("ab","c") and ("a","bc") differ; an absent salt has
     * its own length marker, so (NULL,"x") and ("x",NULL) differ too. */
    uint64_t n = s ? (uint64_t)len : UINT64_MAX;
    XXH3_128bits_update(st, &n, sizeof n);
    if (s) XXH3_128bits_update(st, s, len);
}

ir_hash128 ir_block_hash_root_n(const char *model, const char *adapter, const char *cache_salt,
                                size_t salt_len) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    absorb_salt(&st, model, model ? strlen(model) : 0);
    absorb_salt(&st, adapter, adapter ? strlen(adapter) : 0);
    absorb_salt(&st, cache_salt, salt_len);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (ir_hash128){h.low64, h.high64};
}

ir_hash128 ir_block_hash_root(const char *model, const char *adapter, const char *cache_salt) {
    return ir_block_hash_root_n(model, adapter, cache_salt, cache_salt ? strlen(cache_salt) : 0);
}

/* vLLM's default block of 16 tokens: XXH3_128bits (seed 0, default secret) of
 * the 80 bytes parent.lo || parent.hi || ids, written out as the library's own
 * 17-to-128-byte path computes it for that length, from its own primitives.
 * Copying the parent into an 80-byte buffer first put a store and a reload on
 * the chain's critical path (7.5 against 6.3 ns a block on the development
 * VM); here the parent stays in registers. tests/unit/core/test_blockhash.c
 * checks the digest against XXH3_128bits of the buffer. */
static uint64_t mix16(uint64_t a, uint64_t b, const unsigned char *secret) {
    return XXH3_mul128_fold64(a ^ XXH_readLE64(secret), b ^ XXH_readLE64(secret + 8));
}

static ir_hash128 next16(ir_hash128 parent, const uint32_t *ids) {
    const unsigned char *k = XXH3_kSecret;
    uint64_t w[8]; /* the buffer's words 2..9: the ids */
    memcpy(w, ids, sizeof w);
    /* Three 32-byte rounds over (32,32), (16,48) and (0,64), the last one taking
     * the parent, as XXH3_len_17to128_128b orders them for 80 bytes. */
    uint64_t lo = 80 * XXH_PRIME64_1, hi = 0;
    lo += mix16(w[2], w[3], k + 64), lo ^= w[2] + w[3];
    hi += mix16(w[2], w[3], k + 80), hi ^= w[2] + w[3];
    lo += mix16(w[0], w[1], k + 32), lo ^= w[4] + w[5];
    hi += mix16(w[4], w[5], k + 48), hi ^= w[0] + w[1];
    lo += mix16(parent.lo, parent.hi, k), lo ^= w[6] + w[7];
    hi += mix16(w[6], w[7], k + 16), hi ^= parent.lo + parent.hi;
    uint64_t out_lo = lo + hi;
    uint64_t out_hi = lo * XXH_PRIME64_1 + hi * XXH_PRIME64_4 + 80 * XXH_PRIME64_2;
    return (ir_hash128){XXH3_avalanche(out_lo), 0ull - XXH3_avalanche(out_hi)};
}

ir_hash128 ir_block_hash_next(ir_hash128 parent, const uint32_t *ids, size_t block_size) {
    /* hash(parent.lo || parent.hi || ids), so a block's hash names its prefix. */
    if (block_size == 16) return next16(parent, ids);
    uint64_t p[2] = {parent.lo, parent.hi};
    size_t nbytes = block_size * sizeof *ids;
    XXH128_hash_t h;
    if (nbytes <= ONE_SHOT_BYTES - sizeof p) {
        unsigned char buf[ONE_SHOT_BYTES];
        memcpy(buf, p, sizeof p);
        memcpy(buf + sizeof p, ids, nbytes);
        h = XXH3_128bits(buf, sizeof p + nbytes);
    } else {
        XXH3_state_t st;
        XXH3_128bits_reset(&st);
        XXH3_128bits_update(&st, p, sizeof p);
        XXH3_128bits_update(&st, ids, nbytes);
        h = XXH3_128bits_digest(&st);
    }
    return (ir_hash128){h.low64, h.high64};
}

size_t ir_block_hash_chain(ir_hash128 root, const uint32_t *ids, size_t n, size_t block_size,
                           ir_hash128 *out, size_t max_out) {
    if (block_size == 0) return 0;
    size_t nb = n / block_size;
    if (nb > max_out) nb = max_out;
    ir_hash128 h = root;
    if (block_size == 16) {
        for (size_t i = 0; i < nb; i++) out[i] = h = next16(h, ids + i * 16);
        return nb;
    }
    for (size_t i = 0; i < nb; i++) {
        h = ir_block_hash_next(h, ids + i * block_size, block_size);
        out[i] = h;
    }
    return nb;
}
