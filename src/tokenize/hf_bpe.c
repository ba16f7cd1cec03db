/* hf_bpe.c: the BPE model, merging exactly as tokenizers' Word::merge_all
 * does: the lowest-ranked pair first, leftmost on ties, with stale queue
 * entries dropped when the pair at their position no longer yields their id. */
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

/* A quick hash for short words (the cache is per call, so it need not
 * resist crafted input: a collision only costs a recomputation). */
static inline uint64_t wc_hash(const char *s, size_t len) {
    uint64_t h = (uint64_t)len * 0x9E3779B97F4A7C15ull;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, s, len);
        h = (h ^ w) * 0x94D049BB133111EBull;
    }
    return h ^ (h >> 31);
}

/* BPE of a word depends on the word alone, so repeated words (most of them
 * in prose and code) are served from the call's cache. */
int hf_bpe_encode(const hf_bpe *m, const char *s, size_t len, hf_bpe_scratch *sc, irt_ids *out) {
    if (!len) return 0;
    if (len > HF_WC_LEN) return bpe_word(m, s, len, sc, out);
    if (!sc->wc) {
        if (++sc->nwords < HF_WC_AFTER) return bpe_word(m, s, len, sc, out);
        sc->wc = calloc(HF_WC_SLOTS, sizeof(*sc->wc));
        if (!sc->wc) return IRT_ENOMEM;
    }
    uint64_t h = wc_hash(s, len);
    uint32_t tag = (uint32_t)h | 1;
    hf_wc_ent *e = &sc->wc[(h >> 40) & (HF_WC_SLOTS - 1)];
    if (e->tag == tag && e->len == len && memcmp(e->word, s, len) == 0) {
        if (out->cap - out->len < e->nids) {
            for (size_t i = 0; i < e->nids; i++)
                if (hf_ids_push(out, e->ids[i])) return IRT_ENOMEM;
            return 0;
        }
        memcpy(out->ids + out->len, e->ids, e->nids * sizeof(uint32_t));
        out->len += e->nids;
        return 0;
    }
    size_t start = out->len;
    int rc = bpe_word(m, s, len, sc, out);
    if (rc || out->len - start > HF_WC_IDS) return rc;
    e->tag = tag;
    e->len = (uint8_t)len;
    e->nids = (uint8_t)(out->len - start);
    memcpy(e->word, s, len);
    memcpy(e->ids, out->ids + start, e->nids * sizeof(uint32_t));
    return 0;
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
    free(sc->wc);
    hf_buf_free(&sc->tmp);
    memset(sc, 0, sizeof(*sc));
}
