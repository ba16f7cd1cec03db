/* ir_tokenize.h: the tokenize module's public header.
 *
 * Two families of tokenizers live here:
 *  - builtin:sim, the deterministic stand-in shared by the simulator, the
 *    gateway and the benchmarks;
 *  - Hugging Face tokenizer.json pipelines (see the section below).
 * Nothing here keeps global state; every call is thread-safe on a shared,
 * loaded tokenizer as long as each thread passes its own output buffers.
 */
#ifndef IR_TOKENIZE_H
#define IR_TOKENIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/ir_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A growable array of token ids, capped at `max` entries (0 = no cap). */
typedef struct irt_ids {
    int32_t *v;
    size_t n;
    size_t cap;
    size_t max;
} irt_ids;

void irt_ids_init(irt_ids *ids, size_t max);
void irt_ids_free(irt_ids *ids);
int irt_ids_push(irt_ids *ids, int32_t id);

/* ---- builtin:sim -------------------------------------------------------------
 * Pieces of at most three bytes. A piece boundary before byte i depends only
 * on bytes[i-1], bytes[i] and the length of the piece so far, so shared text
 * yields shared tokens and appending text never changes earlier tokens
 * (only, possibly, the last one). Ids encode their bytes, so decoding is exact:
 * id = b0 | b1 << 8 | b2 << 16, with 0 standing for a lone NUL byte. */
#define IRT_SIM_SPEC "builtin:sim"

/* Appends the ids of text to out. Returns -1 when out's cap is reached. */
int irt_sim_encode(const char *text, size_t len, irt_ids *out);
/* Counts tokens without storing them. */
size_t irt_sim_count(const char *text, size_t len);
/* Appends the text of ids to out. Returns -1 on an id that is not a sim id. */
int irt_sim_decode(const int32_t *ids, size_t n, ir_buf *out);
/* Decodes one id into at most 3 bytes; returns the byte count or -1. */
int irt_sim_piece(int32_t id, char out[3]);

/* The simulator's chat template: for each message "<|role|>\n" content "\n",
 * then "<|assistant|>\n" when add_generation_prompt. Content is a string or a
 * list of {"type":"text","text":...} parts. Returns -1 and sets err when the
 * messages cannot be rendered (not a list, a message without role, an
 * unsupported content part). */
int irt_sim_render_chat(const json_t *messages, bool add_generation_prompt, ir_buf *out,
                        const char **err);

/* ---- chained block hashes ------------------------------------------------------
 * Full blocks of block_size tokens are hashed with XXH3-128 in a chain: a block's
 * hash covers its parent's hash and its own ids, so it names its whole prefix.
 * The chain's root is salted (model, adapter, cache_salt); a trailing partial
 * block is never hashed. */
typedef struct irt_hash {
    uint64_t lo, hi;
} irt_hash;

/* The root of a chain, from any number of salt strings (NULL entries skipped). */
irt_hash irt_hash_root(const char *const *salts, size_t nsalts);
irt_hash irt_hash_block(irt_hash parent, const int32_t *ids, size_t block_size);
/* Hashes the full blocks of ids; returns how many were written (<= max_out). */
size_t irt_hash_blocks(irt_hash root, const int32_t *ids, size_t n, size_t block_size,
                       irt_hash *out, size_t max_out);
static inline bool irt_hash_eq(irt_hash a, irt_hash b) { return a.lo == b.lo && a.hi == b.hi; }

/* ---- Hugging Face tokenizer.json ---------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif
