/* hf_internal.h: shared internals of the tokenizer.json implementation. */
#ifndef IR_HF_INTERNAL_H
#define IR_HF_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenize/ir_tokenize.h"

/* ---- memory --------------------------------------------------------------- */
/* Big tables come from core's ir_big_calloc; the tokenizer's long-lived
 * pieces and the JSON DOM from core's ir_arena, growing its chunks (see
 * hf_arena_new). */

/* An arena whose chunks double from 64 KiB up to 16 MiB: a DOM of tens of
 * megabytes takes a few huge-page chunks, a small tokenizer one small chunk.
 * max caps the bytes it hands out. */
ir_arena *hf_arena_new(size_t max);
/* The cap of a DOM arena for a JSON text of len bytes: each value takes at
 * most 16 bytes and needs at least 1 byte of text, plus a root and slack. */
#define HF_DOM_ARENA_MAX(len) (16 * (size_t)(len) + ((size_t)1 << 20))
/* The cap of a tokenizer's own arena (its normalizers, templates, names). */
#define HF_TOKENIZER_ARENA_MAX ((size_t)1 << 30)

/* A growable byte buffer with a cap: len never passes max, or HF_BUF_MAX
 * when max is 0, so a zeroed hf_buf is an empty buffer under the default cap.
 * The default is four times the largest input, room for what normalizers and
 * the byte-level mapping make of any accepted text; an append past the cap
 * fails (-1) as running out of memory does. Kept apart from ir_buf for its
 * zero-initialized form, which the encode paths rely on. */
#define HF_BUF_MAX (4 * IRT_MAX_INPUT)
typedef struct hf_buf {
    char *p;
    size_t len, cap;
    size_t max; /* 0: HF_BUF_MAX */
} hf_buf;

int hf_buf_reserve(hf_buf *b, size_t extra);
int hf_buf_add(hf_buf *b, const void *p, size_t n);
static inline int hf_buf_addc(hf_buf *b, char c) {
    return hf_buf_add(b, &c, 1);
}
int hf_buf_add_cp(hf_buf *b, uint32_t cp); /* UTF-8 encodes cp */
void hf_buf_free(hf_buf *b);

/* ---- UTF-8 and Unicode ------------------------------------------------------ */
/* Decodes one code point of valid UTF-8 at s; returns its byte length. */
static inline int hf_utf8_dec(const unsigned char *s, uint32_t *cp) {
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xE0) {
        *cp = ((c & 0x1F) << 6) | (s[1] & 0x3F);
        return 2;
    }
    if (c < 0xF0) {
        *cp = ((c & 0x0F) << 12) | ((s[1] & 0x3F) << 6) | (s[2] & 0x3F);
        return 3;
    }
    *cp = ((c & 0x07) << 18) | ((s[1] & 0x3F) << 12) | ((s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    return 4;
}
static inline int hf_utf8_len(unsigned char c) {
    return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}
int hf_utf8_enc(uint32_t cp, char *out); /* returns 1..4 */
/* The code point GPT-2's byte-level scheme shows byte b as (hf_encode.c). */
uint32_t hf_byte_char(unsigned b);
/* Length of the longest valid UTF-8 prefix of s (== n when all valid). */
size_t hf_utf8_valid_prefix(const char *s, size_t n);

bool hf_is_whitespace(uint32_t cp); /* Rust char::is_whitespace (White_Space) */
bool hf_is_word(uint32_t cp);       /* regex crate \w */
bool hf_is_numeric(uint32_t cp);    /* Rust char::is_numeric: Nd, Nl, No */
bool hf_is_punct(uint32_t cp);      /* ASCII punctuation or a P* category */

/* ---- hashing and maps ---------------------------------------------------------- */
uint64_t hf_hash(const void *p, size_t n);

/* Why the tokenizer keeps a map of its own instead of core's ir_map, measured
 * with bench/tokenizer/bench_strmap.c (build/inferrail-strmapbench
 * TOKENIZER_JSON; 2 shared cores, best of 9 rounds, ns per operation):
 *
 *                      Qwen3 (151,643 keys)     Llama 3.1 (128,000 keys)
 *                      put    hit    miss       put    hit    miss
 *   hf_strmap+prefetch 48.4   69.8   68.7       48.4   65.0   63.7
 *   ir_map             71.8   65.8   91.4       70.5   63.1   76.8
 *
 * - the load puts every vocabulary key with its hash computed ahead and its
 *   slot prefetched (hf_strmap_put_h, hf_strmap_prefetch), about 30% faster
 *   than ir_map, which hashes inside each call; misses are faster too;
 * - the decoder's id_tok table points at the stored keys, which must stay put
 *   and be NUL-terminated: here they live in the pool for the map's life,
 *   whereas ir_map keeps short keys inside slots that move when it grows.
 * ir_map answers random-order hits about as fast (its 16 inline key bytes
 * spare a second cache miss).
 *
 * String -> uint32 map, open addressing with linear probing. Each slot holds
 * the key's hash tag, length, value and first 8 bytes, so a probe reads one
 * slot and, for keys over 8 bytes, the key in the map's own pool (keys are
 * copied there, NUL-terminated). A zeroed table is empty. Presized from the expected count; no
 * per-entry allocation. Later puts overwrite. */
typedef struct hf_strslot {
    uint64_t head; /* first 8 key bytes, zero-padded */
    uint32_t tag;  /* hash high bits */
    uint32_t len1; /* key length + 1; 0: empty */
    uint32_t off;  /* key offset in the pool */
    uint32_t val;
} hf_strslot;
typedef struct hf_strmap {
    hf_strslot *slots;
    size_t mask, n;
    char *pool;
    size_t plen, pcap;
} hf_strmap;

/* expect: entries, key_bytes: their total length (both hints; 0 is fine). */
int hf_strmap_init(hf_strmap *m, size_t expect, size_t key_bytes);
int hf_strmap_put(hf_strmap *m, const char *key, size_t len, uint32_t val);
void hf_strmap_free(hf_strmap *m);
size_t hf_strmap_bytes(const hf_strmap *m);
/* The stored key of an occupied slot (valid until the next put). */
static inline const char *hf_strmap_key(const hf_strmap *m, const hf_strslot *s) {
    return m->pool + s->off;
}
bool hf_strmap_get(const hf_strmap *m, const char *key, size_t len, uint32_t *val);
/* The same with the key's hf_hash given, for loops that prefetch slots ahead
 * (a bulk load is bound by cache misses, one per probe). */
bool hf_strmap_get_h(const hf_strmap *m, const char *key, size_t len, uint64_t h, uint32_t *val);
int hf_strmap_put_h(hf_strmap *m, const char *key, size_t len, uint64_t h, uint32_t val);
static inline void hf_strmap_prefetch(const hf_strmap *m, uint64_t h) {
    __builtin_prefetch(&m->slots[(size_t)h & m->mask]);
}

/* (uint32, uint32) -> (rank, id) map for BPE merges; one cache line per probe.
 * Keys are stored plus one so that a zeroed table is empty. */
typedef struct hf_pairent {
    uint64_t key; /* ((a << 32) | b) + 1; 0 is empty */
    uint32_t rank;
    uint32_t id;
} hf_pairent;
typedef struct hf_pairmap {
    hf_pairent *e;
    size_t mask;
    size_t n;
} hf_pairmap;
/* Sized up front: at most 3/4 full with expect entries. */
int hf_pairmap_init(hf_pairmap *m, size_t expect);
static inline size_t hf_pairmap_slot(const hf_pairmap *m, uint32_t a, uint32_t b) {
    uint64_t h = (((uint64_t)a << 32) | b) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 32) & m->mask;
}
static inline void hf_pairmap_prefetch(const hf_pairmap *m, uint32_t a, uint32_t b) {
    __builtin_prefetch(&m->e[hf_pairmap_slot(m, a, b)], 1);
}
/* Callers never put more than the expect given to init. */
void hf_pairmap_put(hf_pairmap *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t id);
static inline bool hf_pairmap_get(const hf_pairmap *m, uint32_t a, uint32_t b, uint32_t *rank,
                                  uint32_t *id) {
    uint64_t k = (((uint64_t)a << 32) | b) + 1;
    size_t i = hf_pairmap_slot(m, a, b);
    for (;;) {
        const hf_pairent *e = &m->e[i];
        if (e->key == k) {
            *rank = e->rank;
            *id = e->id;
            return true;
        }
        if (!e->key) return false;
        i = (i + 1) & m->mask;
    }
}
void hf_pairmap_free(hf_pairmap *m);

/* ---- JSON (a fast DOM for multi-megabyte tokenizer.json files) ------------------ */
typedef enum { HJ_NULL, HJ_FALSE, HJ_TRUE, HJ_NUM, HJ_STR, HJ_ARR, HJ_OBJ } hj_type;
typedef struct hj_val hj_val;
struct hj_val {
    uint8_t type;
    bool is_int;
    uint32_t n; /* string bytes, array items, object members */
    union {
        const char *s; /* NUL-terminated; may hold NULs within n */
        double num;    /* HJ_NUM when !is_int */
        int64_t i;     /* HJ_NUM when is_int */
        hj_val *items; /* array: n values; object: 2n (key, value) */
    } u;
};
/* Parses text (modified in place; must outlive the DOM) into a DOM in arena a. */
hj_val *hj_parse(ir_arena *a, char *text, size_t len, char *err, size_t errlen);
const hj_val *hj_get(const hj_val *obj, const char *key); /* NULL when absent or not an object */

/* ---- patterns (Split, Replace) -------------------------------------------------- */
typedef struct hf_pattern {
    char *lit; /* literal pattern, when not a regex */
    size_t litlen;
    pcre2_code *re;
    int fast; /* a hand-written matcher for a known regex; 0 when none */
} hf_pattern;

typedef struct hf_match {
    size_t start, end;
} hf_match;

/* ---- components ---------------------------------------------------------------------- */
enum {
    NORM_NFC = 1,
    NORM_NFD,
    NORM_NFKC,
    NORM_NFKD,
    NORM_LOWER,
    NORM_STRIP,
    NORM_REPLACE,
    NORM_PREPEND,
    NORM_STRIP_ACCENTS,
    NORM_SEQ,
};
typedef struct hf_norm hf_norm;
struct hf_norm {
    int type;
    hf_norm *kids; /* NORM_SEQ */
    size_t nkids;
    bool left, right; /* Strip */
    hf_pattern pat;   /* Replace */
    char *content;    /* Replace content / Prepend text */
    size_t clen;
};

enum {
    PT_BYTELEVEL = 1,
    PT_SPLIT,
    PT_METASPACE,
    PT_DIGITS,
    PT_PUNCT,
    PT_WHITESPACE,
    PT_WSSPLIT,
    PT_BERT,
};
enum { SPLIT_REMOVED, SPLIT_ISOLATED, SPLIT_MERGED_PREV, SPLIT_MERGED_NEXT, SPLIT_CONTIGUOUS };
enum { PREPEND_ALWAYS, PREPEND_NEVER, PREPEND_FIRST };
typedef struct hf_pretok {
    int type;
    hf_pattern pat;
    int behavior;
    bool invert;
    bool add_prefix_space, use_regex;
    bool byte_map; /* ByteLevel: map bytes to chars (false when the model works on raw bytes) */
    char rep[4];   /* Metaspace replacement, UTF-8 */
    int replen;
    uint32_t repcp;
    int prepend;
    bool split;
    bool individual_digits;
} hf_pretok;

enum { PP_NONE, PP_TEMPLATE, PP_ROBERTA, PP_BERT, PP_BYTELEVEL };
typedef struct hf_tpl_item {
    bool is_seq;   /* the sequence (A) itself */
    uint32_t *ids; /* special token ids */
    size_t nids;
} hf_tpl_item;
typedef struct hf_post {
    int type;
    hf_tpl_item *items; /* template "single" */
    size_t nitems;
    uint32_t cls, sep; /* Roberta / Bert */
} hf_post;

enum {
    DEC_BYTELEVEL = 1,
    DEC_REPLACE,
    DEC_BYTEFALLBACK,
    DEC_FUSE,
    DEC_STRIP,
    DEC_METASPACE,
    DEC_BPE,
    DEC_WORDPIECE,
    DEC_CTC,
};
typedef struct hf_dec {
    int type;
    char *a, *b; /* Replace pattern/content; BPE suffix; WordPiece prefix */
    size_t alen, blen;
    uint32_t cp; /* Strip content; Metaspace replacement */
    size_t start, stop;
    int prepend;  /* Metaspace */
    bool cleanup; /* WordPiece */
} hf_dec;

/* ---- added tokens ---------------------------------------------------------------------- */
typedef struct hf_added {
    const char *content;
    size_t len;
    uint32_t id;
    bool special, lstrip, rstrip, single_word, normalized;
} hf_added;

/* A byte trie for leftmost-longest matching. */
typedef struct hf_trie {
    hf_pairmap edges; /* (node, byte) -> (child, 0) */
    int32_t *term;    /* per node: index into the added array, -1 if none */
    uint8_t *inner;   /* per node: 1 when an edge leaves it */
    size_t nnodes;
    uint8_t first[32]; /* bitset of first bytes */
    size_t ntokens;
} hf_trie;

/* ---- the BPE model ------------------------------------------------------------------------ */
typedef struct hf_bpe {
    hf_strmap vocab;     /* token -> id */
    hf_strmap vocab_raw; /* raw bytes -> id, when raw (byte-level) mode is on */
    const char **id_tok; /* id -> token, for decoding */
    uint32_t *id_len;
    size_t nids; /* max id + 1 */
    hf_pairmap merges;
    const char *unk;
    size_t unklen;
    const char *prefix, *suffix; /* NULL when absent */
    size_t prefixlen, suffixlen;
    bool fuse_unk, byte_fallback, ignore_merges;
    bool raw;                 /* pieces reach the model as raw bytes */
    int32_t byte_id[256];     /* raw mode: id of each byte's mapped char */
    int32_t byte_fb[256];     /* <0xXX> ids, -1 when absent */
    int32_t ascii_id[128];    /* char mode: id of each ASCII char, -1 when absent */
    struct hf_wcache *wcache; /* words seen before (mutable, thread-safe); NULL: none */
} hf_bpe;

#define HF_MAX_STAGES 16

struct irt_tokenizer {
    ir_arena *arena; /* normalizers, templates, names (hf_arena_new) */
    hf_norm *norm;   /* NULL when none */
    hf_pretok stages[HF_MAX_STAGES];
    size_t nstages;
    hf_bpe bpe;
    hf_added *added;
    size_t nadded;
    hf_strmap added_map;  /* content -> id */
    hf_pairmap added_ids; /* (id, 0) -> (index into added, 0) */
    hf_trie trie_raw, trie_norm;
    uint8_t *special_ids; /* bitset over ids: special added tokens */
    hf_post post[HF_MAX_STAGES];
    size_t npost;
    hf_dec dec[HF_MAX_STAGES];
    size_t ndec;
    bool has_decoder;
    bool pretok_single;  /* tokenizer.json's pre_tokenizer is one component, not a Sequence */
    bool cleanup_spaces; /* decode: transformers' clean_up_tokenization (hf_config.c) */
    size_t vocab_size;
    size_t mem_extra;
};

/* ---- internals shared across files ------------------------------------------------------------
 */
typedef struct hf_ctx hf_ctx;

/* Normalizes s into out (appending). */
int hf_normalize(const hf_norm *n, const char *s, size_t len, hf_buf *out, hf_buf *tmp);
/* Long pieces split in batches (hf_encode.c): from min_bytes (SIZE_MAX: never),
 * `matches` at a time. For tests only (not thread-safe); the default is 64 KiB
 * and 4,096. */
void hf_encode_set_batching(size_t min_bytes, size_t matches);
/* Whether normalizing s with n gives s itself (then nothing need be copied):
 * false when unsure. */
bool hf_normalize_keeps(const hf_norm *n, const char *s, size_t len);
/* Collects matches of p in s (non-overlapping, left to right) into *m. */
int hf_pattern_find(const hf_pattern *p, const char *s, size_t len, hf_match **m, size_t *n,
                    size_t *cap, pcre2_match_data *md);
/* Where a search of matches in batches stands: hf_pattern_find_some goes on from
 * it (the matcher always sees the whole subject, so the batches' matches are
 * hf_pattern_find's, in order). Zeroed to start. */
typedef struct hf_find {
    size_t pos, last_end; /* where to search next; the previous match's end */
    bool started, done;
} hf_find;
/* The next matches of p in s, at most max, into *m (*n of them; *n is reset);
 * f->done once the search is over. */
int hf_pattern_find_some(const hf_pattern *p, const char *s, size_t len, hf_find *f, size_t max,
                         hf_match **m, size_t *n, size_t *cap, pcre2_match_data *md);
int hf_pattern_compile(hf_pattern *p, const char *re, size_t len, bool literal, char *err,
                       size_t errlen);
void hf_pattern_free(hf_pattern *p);

/* BPE scratch, reused across words within one call. */
typedef struct hf_sym {
    uint32_t id;
    int32_t prev, next;
    uint32_t len;
} hf_sym;
typedef struct hf_heapent {
    uint32_t rank, pos, id;
} hf_heapent;
/* The tokenizer's word cache (hf_bpe.c): pre-tokenized words of up to
 * HF_WC_LEN bytes to their ids (up to HF_WC_IDS), shared by every thread that
 * encodes with the tokenizer and kept across calls, as tokenizers' BPE cache.
 * Direct-mapped, HF_WC_SLOTS slots of one cache line each; a slot is a
 * seqlock, so readers never block and never see a half-written entry. */
#define HF_WC_LEN   24
#define HF_WC_IDS   8
#define HF_WC_SLOTS ((size_t)1 << 15)
typedef struct hf_wcache hf_wcache;
hf_wcache *hf_wcache_new(void);
void hf_wcache_free(hf_wcache *c);
size_t hf_wcache_bytes(void);
typedef struct hf_bpe_scratch {
    hf_sym *syms;
    size_t nsyms, symcap;
    hf_heapent *heap;
    size_t nheap, heapcap;
    hf_buf tmp;
} hf_bpe_scratch;
/* Appends the ids of one pre-tokenized piece. */
int hf_bpe_encode(const hf_bpe *m, const char *s, size_t len, hf_bpe_scratch *sc, irt_ids *out);
void hf_bpe_scratch_free(hf_bpe_scratch *sc);

int hf_ids_push(irt_ids *v, uint32_t id);
/* Appends ids[0..n) to v: 0, or -1 when v cannot grow (v unchanged). */
int hf_ids_append(irt_ids *v, const uint32_t *ids, size_t n);

/* The tokenization cache's internals (cache.c), used by hf_encode.c. */
bool hf_cache_for(const irt_cache *c, const irt_tokenizer *t);
uint64_t hf_cache_key(const char *s, size_t len, bool first);
/* Appends the ids of piece s to out when the cache holds it: 1 on a hit, 0 on a
 * miss, IRT_ENOMEM when out cannot grow. */
int hf_cache_lookup(irt_cache *c, uint64_t h, const char *s, size_t len, bool first, irt_ids *out);
/* Keeps a copy of piece s and its ids (quietly nothing when out of memory, when
 * another thread put it first, or when it alone exceeds the budget). */
void hf_cache_insert(irt_cache *c, uint64_t h, const char *s, size_t len, bool first,
                     const uint32_t *ids, size_t nids);

/* Trie matching: the longest token starting at s[0..len), or -1. */
int32_t hf_trie_longest(const hf_trie *t, const unsigned char *s, size_t len, size_t *mlen);
/* The same, and *leaf: whether the match's node has no edge out (then any text
 * that starts with the match's bytes matches exactly it). */
int32_t hf_trie_longest_leaf(const hf_trie *t, const unsigned char *s, size_t len, size_t *mlen,
                             bool *leaf);

/* Fast hand-written pre-tokenizer regexes (hf_fastre.c). */
enum { FAST_NONE = 0, FAST_QWEN, FAST_LLAMA3, FAST_GPT2, FAST_O200K };
int hf_fast_detect(const char *re, size_t len);
/* The match PCRE2 finds searching from pos: 1 with it in [*ms, *me), 0 when
 * none, -1 when unsure (a character whose class PCRE2 may see otherwise):
 * then this one search goes to PCRE2. */
int hf_fast_next(int kind, const unsigned char *s, size_t len, size_t pos, size_t *ms, size_t *me);
/* The class the matchers give a code point: 0 other, 1 \p{L}, 2 \p{N},
 * 3 \s (with U+0085), 4 unsure (exposed for the tests). */
int hf_fast_class(uint32_t cp);
/* o200k's classes of a code point, a set of bits: 1 [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
 * 2 [\p{Ll}\p{Lm}\p{Lo}\p{M}], 4 [^\s\p{L}\p{N}], 8 [^\r\n\p{L}\p{N}], 16 \p{N},
 * 32 \s (with U+0085); 64 alone: unsure (exposed for the tests). */
int hf_fast_class_o200k(uint32_t cp);

/* Frees what a normalizer owns (its patterns, its children's); not n itself. */
void hf_norm_free(hf_norm *n);

/* Applies what transformers takes from dir/tokenizer_config.json (hf_config.c):
 * the Llama/Gemma post-processor, the Llama slow-tokenizer conversion that
 * add_prefix_space forces (with legacy), a single ByteLevel pre-tokenizer's
 * add_prefix_space, and clean_up_tokenization_spaces for decoding. 0, or -1
 * with err. */
int hf_apply_config(irt_tokenizer *t, const char *dir, char *err, size_t errlen);

#endif
