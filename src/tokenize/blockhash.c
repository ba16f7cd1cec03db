/* blockhash.c: chained XXH3-128 block hashes. */
#include "tokenize/ir_tokenize.h"

#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

irt_hash irt_hash_root(const char *const *salts, size_t nsalts) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    for (size_t i = 0; i < nsalts; i++) {
        if (!salts[i]) continue;
        /* Length-prefixed, so ("ab","c") and ("a","bc") differ. */
        uint64_t n = strlen(salts[i]);
        XXH3_128bits_update(&st, &n, sizeof n);
        XXH3_128bits_update(&st, salts[i], n);
    }
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (irt_hash){h.low64, h.high64};
}

irt_hash irt_hash_block(irt_hash parent, const uint32_t *ids, size_t block_size) {
    /* The parent's 128 bits become the seed material: hash(parent || ids). */
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    uint64_t p[2] = {parent.lo, parent.hi};
    XXH3_128bits_update(&st, p, sizeof p);
    XXH3_128bits_update(&st, ids, block_size * sizeof *ids);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (irt_hash){h.low64, h.high64};
}

size_t irt_hash_blocks(irt_hash root, const uint32_t *ids, size_t n, size_t block_size,
                       irt_hash *out, size_t max_out) {
    if (block_size == 0) return 0;
    size_t nb = n / block_size;
    if (nb > max_out) nb = max_out;
    irt_hash h = root;
    for (size_t i = 0; i < nb; i++) {
        h = irt_hash_block(h, ids + i * block_size, block_size);
        out[i] = h;
    }
    return nb;
}
