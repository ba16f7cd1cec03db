/* hf_util.c: memory, UTF-8, Unicode predicates and hash maps for the
 * tokenizer.json implementation. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <utf8proc.h>

#include "tokenize/hf_internal.h"

/* ---- arenas ------------------------------------------------------------------- */
ir_arena *hf_arena_new(size_t max) {
    ir_arena *a = ir_arena_new((size_t)64 << 10, max);
    if (a) ir_arena_set_growth(a, (size_t)16 << 20);
    return a;
}

/* ---- buffers ------------------------------------------------------------------ */
int hf_buf_reserve(hf_buf *b, size_t extra) {
    if (b->cap - b->len > extra) return 0;
    size_t max = b->max ? b->max : HF_BUF_MAX;
    if (extra > max - b->len) return -1; /* the cap */
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= extra) cap *= 2;
    if (cap > max + 1) cap = max + 1; /* room for the NUL after max bytes */
    char *p = realloc(b->p, cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int hf_buf_add(hf_buf *b, const void *p, size_t n) {
    if (hf_buf_reserve(b, n)) return -1;
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

int hf_buf_add_cp(hf_buf *b, uint32_t cp) {
    char tmp[4];
    return hf_buf_add(b, tmp, (size_t)hf_utf8_enc(cp, tmp));
}

void hf_buf_free(hf_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

int hf_ids_push(irt_ids *v, uint32_t id) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        uint32_t *p = realloc(v->ids, cap * sizeof(*p));
        if (!p) return -1;
        v->ids = p;
        v->cap = cap;
    }
    v->ids[v->len++] = id;
    return 0;
}

int hf_ids_append(irt_ids *v, const uint32_t *ids, size_t n) {
    if (v->cap - v->len < n) {
        size_t cap = v->cap ? v->cap : 64;
        while (cap - v->len < n) cap *= 2;
        uint32_t *p = realloc(v->ids, cap * sizeof(*p));
        if (!p) return -1;
        v->ids = p;
        v->cap = cap;
    }
    if (n) memcpy(v->ids + v->len, ids, n * sizeof(*ids));
    v->len += n;
    return 0;
}

/* ---- UTF-8 -------------------------------------------------------------------- */
int hf_utf8_enc(uint32_t cp, char *o) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t hf_utf8_valid_prefix(const char *str, size_t n) {
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        /* ASCII runs, 32 then eight at a time. */
        while (i + 32 <= n) {
            uint64_t w[4];
            memcpy(w, s + i, 32);
            if ((w[0] | w[1] | w[2] | w[3]) & 0x8080808080808080ull) break;
            i += 32;
        }
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t min;
        if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
            min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            min = 0x10000;
        } else {
            return i;
        }
        if (n - i < k + 1) return i;
        uint32_t cp = c & (0x3F >> k);
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
        i += k + 1;
    }
    return n;
}

/* ---- Unicode predicates --------------------------------------------------------- */
bool hf_is_whitespace(uint32_t c) {
    if (c <= 0x20) return c == 0x20 || (c >= 9 && c <= 13);
    if (c < 0x85) return false;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool hf_is_numeric(uint32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    int cat = utf8proc_category((utf8proc_int32_t)c);
    return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
           cat == UTF8PROC_CATEGORY_NO;
}

bool hf_is_word(uint32_t c) {
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    if (c == 0x200C || c == 0x200D) return true;
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return false;
    }
}

bool hf_is_punct(uint32_t c) {
    if (c < 0x80)
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
               (c >= 0x7B && c <= 0x7E);
    switch (utf8proc_category((utf8proc_int32_t)c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
        return true;
    default:
        return false;
    }
}

/* ---- hashing ------------------------------------------------------------------------ */
static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    x *= 0xD6E8FEB86659FD93ull;
    x ^= x >> 32;
    return x;
}

uint64_t hf_hash(const void *p, size_t n) {
    const unsigned char *s = p;
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ mix64(w)) * 0x9FB21C651E98DF25ull;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = (h ^ mix64(w ^ ((uint64_t)n << 56))) * 0x9FB21C651E98DF25ull;
    }
    return mix64(h);
}

/* ---- string map ------------------------------------------------------------------------ */
static int strmap_slots(hf_strmap *m, size_t nslots) {
    hf_strslot *slots = ir_big_calloc(nslots * sizeof(*slots));
    if (!slots) return -1;
    size_t mask = nslots - 1;
    for (size_t k = 0; m->slots && k <= m->mask; k++) {
        const hf_strslot *o = &m->slots[k];
        if (!o->len1) continue;
        size_t i = (size_t)hf_hash(m->pool + o->off, o->len1 - 1) & mask;
        while (slots[i].len1) i = (i + 1) & mask;
        slots[i] = *o;
    }
    ir_big_free(m->slots);
    m->slots = slots;
    m->mask = mask;
    return 0;
}

static inline uint64_t head8(const char *key, size_t len) {
    uint64_t h = 0;
    memcpy(&h, key, len < 8 ? len : 8);
    return h;
}

bool hf_strmap_get(const hf_strmap *m, const char *key, size_t len, uint32_t *val) {
    return hf_strmap_get_h(m, key, len, hf_hash(key, len), val);
}

bool hf_strmap_get_h(const hf_strmap *m, const char *key, size_t len, uint64_t h, uint32_t *val) {
    if (!m->slots || len >= UINT32_MAX) return false;
    uint64_t head = head8(key, len);
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = (size_t)h & m->mask;
    for (;;) {
        const hf_strslot *s = &m->slots[i];
        if (!s->len1) return false;
        if (s->tag == tag && s->len1 == len + 1 && s->head == head &&
            (len <= 8 || memcmp(m->pool + s->off + 8, key + 8, len - 8) == 0)) {
            *val = s->val;
            return true;
        }
        i = (i + 1) & m->mask;
    }
}

/* At most 3/4 full. */
static size_t strmap_nslots(size_t expect) {
    size_t nslots = 16;
    while (nslots / 4 * 3 < expect) nslots *= 2;
    return nslots;
}

int hf_strmap_init(hf_strmap *m, size_t expect, size_t key_bytes) {
    memset(m, 0, sizeof(*m));
    m->pcap = key_bytes + expect + 16;
    m->pool = ir_big_calloc(m->pcap);
    if (!m->pool || strmap_slots(m, strmap_nslots(expect))) {
        hf_strmap_free(m);
        return -1;
    }
    return 0;
}

int hf_strmap_put(hf_strmap *m, const char *key, size_t len, uint32_t val) {
    return hf_strmap_put_h(m, key, len, hf_hash(key, len), val);
}

int hf_strmap_put_h(hf_strmap *m, const char *key, size_t len, uint64_t h, uint32_t val) {
    if (len >= UINT32_MAX) return -1;
    uint64_t head = head8(key, len);
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = (size_t)h & m->mask;
    for (;;) {
        hf_strslot *s = &m->slots[i];
        if (!s->len1) break;
        if (s->tag == tag && s->len1 == len + 1 && s->head == head &&
            (len <= 8 || memcmp(m->pool + s->off + 8, key + 8, len - 8) == 0)) {
            s->val = val;
            return 0;
        }
        i = (i + 1) & m->mask;
    }
    if (m->plen + len + 1 > m->pcap) {
        size_t cap = m->pcap * 2 + len + 1;
        if (cap > UINT32_MAX) return -1;
        char *p = ir_big_grow(m->pool, m->plen, cap);
        if (!p) return -1;
        m->pool = p;
        m->pcap = cap;
    }
    uint32_t off = (uint32_t)m->plen;
    if (len) memcpy(m->pool + off, key, len);
    m->pool[off + len] = 0;
    m->plen += len + 1;
    m->slots[i] = (hf_strslot){head, tag, (uint32_t)len + 1, off, val};
    m->n++;
    if (m->n > (m->mask + 1) / 4 * 3) return strmap_slots(m, (m->mask + 1) * 2);
    return 0;
}

void hf_strmap_free(hf_strmap *m) {
    ir_big_free(m->slots);
    ir_big_free(m->pool);
    memset(m, 0, sizeof(*m));
}

size_t hf_strmap_bytes(const hf_strmap *m) {
    return (m->slots ? (m->mask + 1) * sizeof(hf_strslot) : 0) + m->pcap;
}

/* ---- pair map --------------------------------------------------------------------------- */
int hf_pairmap_init(hf_pairmap *m, size_t expect) {
    memset(m, 0, sizeof(*m));
    size_t nslots = 16;
    while (nslots / 4 * 3 < expect) nslots *= 2;
    m->e = ir_big_calloc(nslots * sizeof(*m->e));
    if (!m->e) return -1;
    m->mask = nslots - 1;
    return 0;
}

void hf_pairmap_put(hf_pairmap *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t id) {
    uint64_t k = (((uint64_t)a << 32) | b) + 1;
    size_t i = hf_pairmap_slot(m, a, b);
    while (m->e[i].key && m->e[i].key != k) i = (i + 1) & m->mask;
    if (!m->e[i].key) m->n++;
    m->e[i] = (hf_pairent){k, rank, id};
}

void hf_pairmap_free(hf_pairmap *m) {
    ir_big_free(m->e);
    memset(m, 0, sizeof(*m));
}
