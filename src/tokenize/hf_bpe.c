/* hf_bpe.c: the BPE model, merging exactly as tokenizers' Word::merge_all
 * does: the lowest-ranked pair first, leftmost on ties, with stale queue
 * entries dropped when the pair at their position no longer yields their id. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/hf_internal.h"

static int sym_add(hf_bpe_scratch *sc, uint32_t id, uint32_t len) {
    if (sc->nsyms == sc->symcap) {
        size_t cap = sc->symcap ? sc->symcap * 2 : 64;
        hf_sym *p = realloc(sc->syms, cap * sizeof(*p));
        if (!p) return -1;
        sc->syms = p;
        sc->symcap = cap;
    }
    int32_t n = (int32_t)sc->nsyms;
    if (n > 0) sc->syms[n - 1].next = n;
    sc->syms[n] = (hf_sym){id, n - 1, -1, len};
    sc->nsyms++;
    return 0;
}

static inline bool heap_less(const hf_heapent *a, const hf_heapent *b) {
    return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static int heap_push(hf_bpe_scratch *sc, uint32_t rank, uint32_t pos, uint32_t id) {
    if (sc->nheap == sc->heapcap) {
        size_t cap = sc->heapcap ? sc->heapcap * 2 : 64;
        hf_heapent *p = realloc(sc->heap, cap * sizeof(*p));
        if (!p) return -1;
        sc->heap = p;
        sc->heapcap = cap;
    }
    hf_heapent e = {rank, pos, id};
    size_t i = sc->nheap++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!heap_less(&e, &sc->heap[parent])) break;
        sc->heap[i] = sc->heap[parent];
        i = parent;
    }
    sc->heap[i] = e;
    return 0;
}

static hf_heapent heap_pop(hf_bpe_scratch *sc) {
    hf_heapent top = sc->heap[0];
    hf_heapent last = sc->heap[--sc->nheap];
    size_t i = 0, n = sc->nheap;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n) break;
        size_t c = (l + 1 < n && heap_less(&sc->heap[l + 1], &sc->heap[l])) ? l + 1 : l;
        if (!heap_less(&sc->heap[c], &last)) break;
        sc->heap[i] = sc->heap[c];
        i = c;
    }
    if (n) sc->heap[i] = last;
    return top;
}

/* Short words: scan for the lowest (rank, position) pair each round. This
 * picks the same merges as the queue: a queue entry is valid exactly when
 * its pair is still adjacent (distinct strings have distinct ids), so the
 * valid entries are the current pairs. Symbols stay packed in order. */
#define SHORT_WORD 24
static void merge_short(const hf_bpe *m, hf_bpe_scratch *sc) {
    uint32_t ids[SHORT_WORD], rk[SHORT_WORD], nid[SHORT_WORD];
    size_t n = sc->nsyms;
    for (size_t i = 0; i < n; i++) ids[i] = sc->syms[i].id;
    for (size_t i = 0; i + 1 < n; i++)
        if (!hf_pairmap_get(&m->merges, ids[i], ids[i + 1], &rk[i], &nid[i])) rk[i] = UINT32_MAX;
    while (n > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < n; i++)
            if (rk[i] < rk[best]) best = i;
        if (rk[best] == UINT32_MAX) break;
        ids[best] = nid[best];
        for (size_t i = best + 1; i + 1 < n; i++) {
            ids[i] = ids[i + 1];
            rk[i] = rk[i + 1];
            nid[i] = nid[i + 1];
        }
        n--;
        if (best > 0 &&
            !hf_pairmap_get(&m->merges, ids[best - 1], ids[best], &rk[best - 1], &nid[best - 1]))
            rk[best - 1] = UINT32_MAX;
        if (best + 1 < n &&
            !hf_pairmap_get(&m->merges, ids[best], ids[best + 1], &rk[best], &nid[best]))
            rk[best] = UINT32_MAX;
    }
    for (size_t i = 0; i < n; i++) sc->syms[i] = (hf_sym){ids[i], 0, 0, 1};
    sc->nsyms = n;
}

static int merge_all(const hf_bpe *m, hf_bpe_scratch *sc) {
    if (sc->nsyms <= SHORT_WORD) {
        merge_short(m, sc);
        return 0;
    }
    hf_sym *sy = sc->syms;
    size_t n = sc->nsyms;
    uint32_t rank, nid;
    sc->nheap = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (hf_pairmap_get(&m->merges, sy[i].id, sy[i + 1].id, &rank, &nid) &&
            heap_push(sc, rank, (uint32_t)i, nid))
            return -1;
    while (sc->nheap) {
        hf_heapent top = heap_pop(sc);
        hf_sym *cur = &sy[top.pos];
        if (cur->len == 0 || cur->next == -1) continue;
        hf_sym right = sy[cur->next];
        if (!hf_pairmap_get(&m->merges, cur->id, right.id, &rank, &nid) || nid != top.id) continue;
        int32_t next_pos = cur->next;
        cur->id = top.id;
        cur->len += right.len;
        cur->next = right.next;
        sy[next_pos].len = 0;
        if (right.next > -1 && (size_t)right.next < n) sy[right.next].prev = (int32_t)top.pos;
        if (cur->prev >= 0 && hf_pairmap_get(&m->merges, sy[cur->prev].id, cur->id, &rank, &nid) &&
            heap_push(sc, rank, (uint32_t)cur->prev, nid))
            return -1;
        if (cur->next > -1 && (size_t)cur->next < n &&
            hf_pairmap_get(&m->merges, cur->id, sy[cur->next].id, &rank, &nid) &&
            heap_push(sc, rank, top.pos, nid))
            return -1;
    }
    return 0;
}

/* Looks up one character as the model sees it: with the continuing-subword
 * prefix unless first, and the end-of-word suffix when last. */
static bool char_id(const hf_bpe *m, hf_bpe_scratch *sc, const char *c, size_t k, bool first,
                    bool last, const char **full, size_t *fulllen, uint32_t *id) {
    bool pre = m->prefix && !first, suf = m->suffix && last;
    if (!pre && !suf) {
        *full = c;
        *fulllen = k;
        if (k == 1 && (unsigned char)c[0] < 128) {
            int32_t v = m->ascii_id[(unsigned char)c[0]];
            if (v < 0) return false;
            *id = (uint32_t)v;
            return true;
        }
        return hf_strmap_get(&m->vocab, c, k, id);
    }
    sc->tmp.len = 0;
    if ((pre && hf_buf_add(&sc->tmp, m->prefix, m->prefixlen)) || hf_buf_add(&sc->tmp, c, k) ||
        (suf && hf_buf_add(&sc->tmp, m->suffix, m->suffixlen))) {
        *full = NULL;
        return false;
    }
    *full = sc->tmp.p;
    *fulllen = sc->tmp.len;
    return hf_strmap_get(&m->vocab, sc->tmp.p, sc->tmp.len, id);
}

static int bpe_word(const hf_bpe *m, const char *s, size_t len, hf_bpe_scratch *sc, irt_ids *out);

/* A short word (1 to HF_WC_LEN bytes) as three zero-padded words, read without
 * a byte past its end and without a call (memcpy of a variable length is one):
 * the word cache hashes and compares these. */
static inline uint64_t load_le(const char *s, size_t n) { /* 1 to 8 bytes */
    uint64_t w = 0;
    if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + n - 4, 4);
        if (n == 8) {
            memcpy(&w, s, 8);
            return w;
        }
        return (uint64_t)lo | (uint64_t)hi << (8 * (n - 4)); /* the overlap is the same bytes */
    }
    const unsigned char *u = (const unsigned char *)s;
    return (uint64_t)u[0] | (uint64_t)u[n / 2] << (8 * (n / 2)) |
           (uint64_t)u[n - 1] << (8 * (n - 1));
}

static inline void word_key(const char *s, size_t len, uint64_t key[3]) {
    key[0] = key[1] = key[2] = 0;
    size_t k = 0;
    for (; len > 8; len -= 8, s += 8) memcpy(&key[k++], s, 8);
    key[k] = load_le(s, len);
}

/* A quick hash of a word's key (a collision only costs a slot: the cache
 * compares the whole word). */
static inline uint64_t wc_hash(const uint64_t key[3], size_t len) {
    uint64_t h = (uint64_t)len * 0x9E3779B97F4A7C15ull;
    h = (h ^ key[0]) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    if (len > 8) {
        h = (h ^ key[1]) * 0x94D049BB133111EBull;
        h ^= h >> 29;
        h = (h ^ key[2]) * 0xBF58476D1CE4E5B9ull;
    }
    return h ^ (h >> 31);
}

/* ---- the word cache ------------------------------------------------------------------
 * BPE of a word depends on the word's bytes alone, so its ids can be kept and
 * reused by any call and any thread: a hit appends exactly what bpe_word would.
 * A slot is eight 64-bit words: w[0] the sequence (bits 0-31; odd while a writer
 * fills the slot), the word's length (32-39) and its number of ids (40-47);
 * w[1..3] the word, zero-padded; w[4..7] the ids. Every access is atomic: a
 * reader copies the slot between two reads of w[0] and keeps the copy only when
 * both are the same even value (a seqlock: Boehm, "Can seqlocks get along with
 * programming language memory models?", 2012); a writer claims the slot by
 * making w[0] odd with a compare-and-swap, and a slot already claimed is left
 * to its writer. */
#define WC_WORDS 8
typedef struct wc_slot {
    _Alignas(64) atomic_uint_fast64_t w[WC_WORDS];
} wc_slot;

struct hf_wcache {
    wc_slot slot[HF_WC_SLOTS];
};

_Static_assert(sizeof(atomic_uint_fast64_t) == 8, "a slot word is 8 bytes");
_Static_assert(HF_WC_LEN == 3 * 8 && HF_WC_IDS * 4 == 4 * 8, "a slot is one cache line");

hf_wcache *hf_wcache_new(void) {
    return ir_big_calloc(sizeof(hf_wcache)); /* all zero: empty slots (length 0) */
}

void hf_wcache_free(hf_wcache *c) {
    ir_big_free(c);
}

size_t hf_wcache_bytes(void) {
    return sizeof(hf_wcache);
}

/* The ids of word s (1 to HF_WC_LEN bytes) appended to out when its slot holds
 * it: 1 on a hit, 0 on a miss, IRT_ENOMEM when out cannot grow. */
static int wc_lookup(hf_wcache *c, uint64_t h, const uint64_t key[3], size_t len, irt_ids *out) {
    wc_slot *sl = &c->slot[h & (HF_WC_SLOTS - 1)];
    uint64_t w0 = atomic_load_explicit(&sl->w[0], memory_order_acquire);
    if ((w0 & 1) || ((w0 >> 32) & 0xFF) != len) return 0;
    /* the copy in scalars, not an array: read back from the stack as wider
     * words, an array's stores stalled the hit path (no store forwarding) */
    uint64_t k0 = atomic_load_explicit(&sl->w[1], memory_order_relaxed);
    uint64_t k1 = atomic_load_explicit(&sl->w[2], memory_order_relaxed);
    uint64_t k2 = atomic_load_explicit(&sl->w[3], memory_order_relaxed);
    uint64_t i0 = atomic_load_explicit(&sl->w[4], memory_order_relaxed);
    uint64_t i1 = atomic_load_explicit(&sl->w[5], memory_order_relaxed);
    uint64_t i2 = atomic_load_explicit(&sl->w[6], memory_order_relaxed);
    uint64_t i3 = atomic_load_explicit(&sl->w[7], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&sl->w[0], memory_order_relaxed) != w0) return 0;
    if (key[0] != k0 || key[1] != k1 || key[2] != k2) return 0;
    size_t n = (w0 >> 40) & 0xFF;
    if (out->cap - out->len >= HF_WC_IDS) { /* room: all eight slots copied, n counted */
        uint32_t *d = out->ids + out->len;
        memcpy(d, &i0, 8), memcpy(d + 2, &i1, 8), memcpy(d + 4, &i2, 8), memcpy(d + 6, &i3, 8);
        out->len += n;
        return 1;
    }
    uint64_t ids[HF_WC_IDS / 2] = {i0, i1, i2, i3};
    return hf_ids_append(out, (const uint32_t *)(const void *)ids, n) ? IRT_ENOMEM : 1;
}

/* Keeps word s and its ids in its slot, unless another writer holds the slot. */
static void wc_insert(hf_wcache *c, uint64_t h, const uint64_t key[3], size_t len,
                      const uint32_t *ids, size_t nids) {
    wc_slot *sl = &c->slot[h & (HF_WC_SLOTS - 1)];
    uint64_t old = atomic_load_explicit(&sl->w[0], memory_order_relaxed);
    if ((old & 1) ||
        !atomic_compare_exchange_strong_explicit(&sl->w[0], &old, (old + 1) & 0xFFFFFFFFu,
                                                 memory_order_relaxed, memory_order_relaxed))
        return;
    atomic_thread_fence(memory_order_release);
    uint64_t w[WC_WORDS] = {0, key[0], key[1], key[2]};
    if (nids) memcpy(&w[4], ids, nids * sizeof(uint32_t)); /* a word may give no id */
    for (int i = 1; i < WC_WORDS; i++) atomic_store_explicit(&sl->w[i], w[i], memory_order_relaxed);
    uint64_t seq = (old + 2) & 0xFFFFFFFFu;
    atomic_store_explicit(&sl->w[0], seq | (uint64_t)len << 32 | (uint64_t)nids << 40,
                          memory_order_release);
}

/* Appends the ids of one pre-tokenized word: from the word cache when it holds
 * the word, else merged by bpe_word (and kept when short enough). */
int hf_bpe_encode(const hf_bpe *m, const char *s, size_t len, hf_bpe_scratch *sc, irt_ids *out) {
    if (!len) return 0;
    if (len > HF_WC_LEN || !m->wcache) return bpe_word(m, s, len, sc, out);
    uint64_t key[3];
    word_key(s, len, key);
    uint64_t h = wc_hash(key, len);
    int hit = wc_lookup(m->wcache, h, key, len, out);
    if (hit) return hit < 0 ? hit : 0;
    size_t start = out->len;
    int rc = bpe_word(m, s, len, sc, out);
    if (!rc && out->len - start <= HF_WC_IDS)
        wc_insert(m->wcache, h, key, len, out->ids + start, out->len - start);
    return rc;
}

static int bpe_word(const hf_bpe *m, const char *s, size_t len, hf_bpe_scratch *sc, irt_ids *out) {
    uint32_t id;
    if (m->ignore_merges && hf_strmap_get(m->raw ? &m->vocab_raw : &m->vocab, s, len, &id))
        return hf_ids_push(out, id) ? IRT_ENOMEM : 0;
    sc->nsyms = 0;
    const unsigned char *u = (const unsigned char *)s;
    bool have_unk = false;
    uint32_t unk_id = 0, unk_len = 0;
    for (size_t i = 0; i < len;) {
        size_t k = m->raw ? 1 : (size_t)hf_utf8_len(u[i]);
        const char *full = s + i;
        size_t fulllen = k;
        bool found;
        if (m->raw) {
            found = m->byte_id[u[i]] >= 0;
            if (found) id = (uint32_t)m->byte_id[u[i]];
        } else {
            found = char_id(m, sc, s + i, k, i == 0, i + k >= len, &full, &fulllen, &id);
            if (!found && !full) return IRT_ENOMEM;
        }
        i += k;
        if (found) {
            if (have_unk) {
                if (sym_add(sc, unk_id, unk_len)) return IRT_ENOMEM;
                have_unk = false;
            }
            if (sym_add(sc, id, (uint32_t)k)) return IRT_ENOMEM;
            continue;
        }
        if (m->byte_fallback) {
            size_t j = 0;
            while (j < fulllen && m->byte_fb[(unsigned char)full[j]] >= 0) j++;
            if (j == fulllen) {
                for (j = 0; j < fulllen; j++)
                    if (sym_add(sc, (uint32_t)m->byte_fb[(unsigned char)full[j]], 1))
                        return IRT_ENOMEM;
                continue;
            }
        }
        if (m->unk) {
            uint32_t uid;
            if (!hf_strmap_get(&m->vocab, m->unk, m->unklen, &uid)) return IRT_EMODEL;
            if (have_unk && m->fuse_unk) {
                unk_len += (uint32_t)k;
            } else {
                if (have_unk && sym_add(sc, unk_id, unk_len)) return IRT_ENOMEM;
                have_unk = true;
                unk_id = uid;
                unk_len = (uint32_t)k;
            }
        }
    }
    if (have_unk && sym_add(sc, unk_id, unk_len)) return IRT_ENOMEM;
    if (sc->nsyms > 1 && merge_all(m, sc)) return IRT_ENOMEM;
    for (size_t i = 0; i < sc->nsyms; i++)
        if (sc->syms[i].len && hf_ids_push(out, sc->syms[i].id)) return IRT_ENOMEM;
    return 0;
}

void hf_bpe_scratch_free(hf_bpe_scratch *sc) {
    free(sc->syms);
    free(sc->heap);
    hf_buf_free(&sc->tmp);
    memset(sc, 0, sizeof(*sc));
}
