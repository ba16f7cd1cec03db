/* blockhash.c: chained XXH3-128 block hashes (see ir_core.h and ADR 0017). */
#include "core/ir_core.h"

#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* A block message this small is copied and hashed in one shot; larger ones go
 * through the streaming API, which yields the same digest. */
#define ONE_SHOT_BYTES 4096

/* The 16-token chain's loop must have its block hash inlined: a call passes the
 * chain's words through memory, which costs more than the hash's own work. */

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

ir_block_chain ir_block_chain_under(ir_hash128 root, const ir_hash128 *grand,
                                    const ir_hash128 *parent) {
    if (!parent) return (ir_block_chain){.two = root}; /* H[-2] = root, H[-1] = 0 */
    return (ir_block_chain){.two = grand ? *grand : (ir_hash128){0, 0}, .one = *parent};
}

ir_block_chain ir_block_chain_at(ir_hash128 root, const ir_hash128 *h, size_t k) {
    if (k == 0) return ir_block_chain_under(root, NULL, NULL);
    return ir_block_chain_under(root, k >= 2 ? &h[k - 2] : NULL, &h[k - 1]);
}

/* ---- XXH3-128 of a block's message m (see ir_core.h) ------------------------ */

/* The 64x64->128 multiply folded to 64 bits. On x86-64 it is one mulq: GCC 12
 * passes an unsigned __int128 product through the stack (a store and a reload
 * per multiply, 4% of the chain's time in hash-ab.sh). */
IR_INLINE uint64_t fold64(uint64_t a, uint64_t b) {
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t lo, hi;
    __asm__("mulq %3" : "=a"(lo), "=d"(hi) : "a"(a), "rm"(b) : "cc");
    return lo ^ hi;
#elif defined(__SIZEOF_INT128__)
    unsigned __int128 p = (unsigned __int128)a * b;
    return (uint64_t)p ^ (uint64_t)(p >> 64);
#else
    return XXH3_mul128_fold64(a, b);
#endif
}

IR_INLINE uint64_t mix16(uint64_t a, uint64_t b, size_t at) {
    return fold64(a ^ XXH_readLE64(XXH3_kSecret + at), b ^ XXH_readLE64(XXH3_kSecret + at + 8));
}

/* A 16-token block: XXH3_128bits (seed 0, default secret) of its 64 bytes with
 * key XORed into the first 16, written out as the library's 17-to-128-byte path
 * computes 64 bytes, from its own primitives, so that the tokens are read in
 * place and the key stays in registers. tests/unit/core/test_blockhash.c checks
 * it against XXH3_128bits of the message. */
IR_INLINE ir_hash128 xxh3_block16(const uint32_t *ids, ir_hash128 key) {
    const unsigned char *p = (const unsigned char *)ids;
    uint64_t w0 = XXH_readLE64(p) ^ key.lo, w1 = XXH_readLE64(p + 8) ^ key.hi;
    uint64_t w2 = XXH_readLE64(p + 16), w3 = XXH_readLE64(p + 24);
    uint64_t w4 = XXH_readLE64(p + 32), w5 = XXH_readLE64(p + 40);
    uint64_t w6 = XXH_readLE64(p + 48), w7 = XXH_readLE64(p + 56);
    /* Two 32-byte rounds, over (16,32) and then (0,48), the key's in the last. */
    uint64_t lo = 64 * XXH_PRIME64_1, hi = 0;
    lo += mix16(w2, w3, 32), lo ^= w4 + w5;
    hi += mix16(w4, w5, 48), hi ^= w2 + w3;
    hi += mix16(w6, w7, 16), hi ^= w0 + w1;
    lo += mix16(w0, w1, 0), lo ^= w6 + w7;
    uint64_t out_lo = lo + hi;
    uint64_t out_hi = lo * XXH_PRIME64_1 + (hi * XXH_PRIME64_4 + 64 * XXH_PRIME64_2);
    return (ir_hash128){XXH3_avalanche(out_lo), 0ull - XXH3_avalanche(out_hi)};
}

/* Any block size: the message through the library, copied whole when small,
 * else its first 16 bytes copied and the rest streamed from where it lies. */
static ir_hash128 xxh3_block(const uint32_t *ids, size_t block_size, ir_hash128 key) {
    size_t nbytes = block_size * sizeof *ids;
    unsigned char head[16] = {0};
    memcpy(head, ids, nbytes < sizeof head ? nbytes : sizeof head);
    for (int i = 0; i < 8; i++) {
        head[i] ^= (unsigned char)(key.lo >> (8 * i));
        head[8 + i] ^= (unsigned char)(key.hi >> (8 * i));
    }
    XXH128_hash_t h;
    if (nbytes <= sizeof head) {
        h = XXH3_128bits(head, sizeof head);
    } else if (nbytes <= ONE_SHOT_BYTES) {
        unsigned char buf[ONE_SHOT_BYTES];
        memcpy(buf, head, sizeof head);
        memcpy(buf + sizeof head, (const unsigned char *)ids + sizeof head, nbytes - sizeof head);
        h = XXH3_128bits(buf, nbytes);
    } else {
        XXH3_state_t st;
        XXH3_128bits_reset(&st);
        XXH3_128bits_update(&st, head, sizeof head);
        XXH3_128bits_update(&st, (const unsigned char *)ids + sizeof head, nbytes - sizeof head);
        h = XXH3_128bits_digest(&st);
    }
    return (ir_hash128){h.low64, h.high64};
}

/* ---- the chain ---------------------------------------------------------------- */

ir_hash128 ir_block_hash_next(ir_block_chain *c, const uint32_t *ids, size_t block_size) {
    ir_hash128 x =
        block_size == 16 ? xxh3_block16(ids, c->two) : xxh3_block(ids, block_size, c->two);
    ir_hash128 h = {x.lo ^ c->one.lo, x.hi ^ c->one.hi};
    c->two = c->one;
    c->one = h;
    return h;
}

/* 16-token blocks. Block i+1's XXH3 call needs H[i-1], not H[i], so it starts
 * while block i's is still running: the chain's serial part per block is one XOR
 * (ADR 0017). The chain's words are kept in locals so that they stay in registers,
 * and the tokens are fetched 16 blocks (1 KiB) ahead (a tenth faster on long
 * prompts, bench/results/index/hash-ab.md). */
static void chain16(ir_block_chain *c, const uint32_t *ids, size_t nb, ir_hash128 *out) {
    uint64_t tl = c->two.lo, th = c->two.hi, ol = c->one.lo, oh = c->one.hi;
    for (size_t i = 0; i < nb; i++) {
        __builtin_prefetch(ids + (i + 16 < nb ? i + 16 : i) * 16);
        ir_hash128 x = xxh3_block16(ids + i * 16, (ir_hash128){tl, th});
        uint64_t hl = x.lo ^ ol, hh = x.hi ^ oh;
        out[i].lo = hl, out[i].hi = hh;
        tl = ol, th = oh, ol = hl, oh = hh;
    }
    c->two = (ir_hash128){tl, th};
    c->one = (ir_hash128){ol, oh};
}

size_t ir_block_hash_chain(ir_hash128 root, const uint32_t *ids, size_t n, size_t block_size,
                           ir_hash128 *out, size_t max_out) {
    if (block_size == 0) return 0;
    size_t nb = n / block_size;
    if (nb > max_out) nb = max_out;
    ir_block_chain c = ir_block_chain_under(root, NULL, NULL);
    if (block_size == 16) {
        chain16(&c, ids, nb, out);
        return nb;
    }
    for (size_t i = 0; i < nb; i++)
        out[i] = ir_block_hash_next(&c, ids + i * block_size, block_size);
    return nb;
}
