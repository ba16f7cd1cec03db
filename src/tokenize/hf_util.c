/* hf_util.c: memory, UTF-8, Unicode predicates and hash maps for the
 * tokenizer.json implementation. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenize/hf_internal.h"

/* ---- arena ------------------------------------------------------------------ */
struct hf_chunk {
    hf_chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

void *hf_arena_alloc(hf_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    hf_chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        c = malloc(sizeof(hf_chunk) + cap);
        if (!c) return NULL;
        c->used = 0;
        c->cap = cap;
        if (a->head && n > (1u << 19)) {
            /* A big block gets its own chunk behind the current one. */
            c->next = a->head->next;
            a->head->next = c;
        } else {
            c->next = a->head;
            a->head = c;
        }
        a->total += sizeof(hf_chunk) + cap;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

char *hf_arena_memdup(hf_arena *a, const char *s, size_t n) {
    char *p = hf_arena_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void hf_arena_free(hf_arena *a) {
    hf_chunk *c = a->head;
    while (c) {
        hf_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->total = 0;
}

/* ---- buffers ------------------------------------------------------------------ */
int hf_buf_reserve(hf_buf *b, size_t extra) {
    if (b->cap - b->len > extra) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len <= extra) {
        if (cap > SIZE_MAX / 2) return -1;
        cap *= 2;
    }
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
        /* ASCII runs, eight at a time. */
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

/* ---- string map ----------------------------------------------------------------------
 * Slots hold (hash high bits << 32 | entry index + 1), so a probe rarely
 * touches an entry that does not match. */
static inline uint64_t slot_of(uint64_t h, size_t e) {
    return (h & 0xFFFFFFFF00000000ull) | (e + 1);
}

static int strmap_grow(hf_strmap *m, size_t nslots) {
    uint64_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots) return -1;
    size_t mask = nslots - 1;
    for (size_t e = 0; e < m->n; e++) {
        size_t i = (size_t)m->ents[e].hash & mask;
        while (slots[i]) i = (i + 1) & mask;
        slots[i] = slot_of(m->ents[e].hash, e);
    }
    free(m->slots);
    m->slots = slots;
    m->mask = mask;
    return 0;
}

int hf_strmap_init(hf_strmap *m, size_t expect) {
    memset(m, 0, sizeof(*m));
    size_t nslots = 16;
    while (nslots < expect * 2) nslots *= 2;
    m->cap = expect ? expect : 8;
    m->ents = malloc(m->cap * sizeof(*m->ents));
    if (!m->ents) return -1;
    return strmap_grow(m, nslots);
}

int hf_strmap_put(hf_strmap *m, const char *key, size_t len, uint32_t val) {
    uint64_t h = hf_hash(key, len);
    size_t i = (size_t)h & m->mask;
    while (m->slots[i]) {
        if ((m->slots[i] >> 32) == (h >> 32)) {
            hf_strmap_ent *e = &m->ents[(uint32_t)m->slots[i] - 1];
            if (e->len == len && memcmp(e->key, key, len) == 0) {
                e->val = val;
                return 0;
            }
        }
        i = (i + 1) & m->mask;
    }
    if (len > UINT32_MAX || m->n >= UINT32_MAX - 1) return -1;
    if (m->n == m->cap) {
        size_t cap = m->cap * 2;
        hf_strmap_ent *ents = realloc(m->ents, cap * sizeof(*ents));
        if (!ents) return -1;
        m->ents = ents;
        m->cap = cap;
    }
    m->ents[m->n] = (hf_strmap_ent){key, (uint32_t)len, val, h};
    m->n++;
    if (m->n * 2 > m->mask + 1) return strmap_grow(m, (m->mask + 1) * 2);
    m->slots[i] = slot_of(h, m->n - 1);
    return 0;
}

bool hf_strmap_get(const hf_strmap *m, const char *key, size_t len, uint32_t *val) {
    if (!m->slots) return false;
    uint64_t h = hf_hash(key, len);
    size_t i = (size_t)h & m->mask;
    uint64_t s;
    while ((s = m->slots[i])) {
        if ((s >> 32) == (h >> 32)) {
            const hf_strmap_ent *e = &m->ents[(uint32_t)s - 1];
            if (e->len == len && memcmp(e->key, key, len) == 0) {
                *val = e->val;
                return true;
            }
        }
        i = (i + 1) & m->mask;
    }
    return false;
}

void hf_strmap_free(hf_strmap *m) {
    free(m->ents);
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

size_t hf_strmap_bytes(const hf_strmap *m) {
    return m->cap * sizeof(*m->ents) + (m->slots ? (m->mask + 1) * sizeof(uint64_t) : 0);
}

/* ---- pair map --------------------------------------------------------------------------- */
int hf_pairmap_init(hf_pairmap *m, size_t expect) {
    memset(m, 0, sizeof(*m));
    size_t nslots = 16;
    while (nslots < expect * 2) nslots *= 2;
    m->e = malloc(nslots * sizeof(*m->e));
    if (!m->e) return -1;
    memset(m->e, 0xFF, nslots * sizeof(*m->e));
    m->mask = nslots - 1;
    return 0;
}

/* The table is sized up front (expect); callers never exceed half full. */
void hf_pairmap_put(hf_pairmap *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t id) {
    uint64_t k = ((uint64_t)a << 32) | b;
    uint64_t h = k * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 32) & m->mask;
    while (m->e[i].key != UINT64_MAX && m->e[i].key != k) i = (i + 1) & m->mask;
    if (m->e[i].key == UINT64_MAX) m->n++;
    m->e[i] = (hf_pairent){k, rank, id};
}

void hf_pairmap_free(hf_pairmap *m) {
    free(m->e);
    memset(m, 0, sizeof(*m));
}
