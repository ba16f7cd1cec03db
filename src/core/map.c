/* map.c: the hash map of ir_core.h (open addressing, linear probing,
 * backward-shift deletion, a cap on entries). */
#include "core/ir_core.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define MAP_MIN_SLOTS 16

#define HASH_BITS 48
#define HASH_MASK ((UINT64_C(1) << HASH_BITS) - 1)

/* splitmix64's finalizer: every input bit moves about half the output bits. */
static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The hash of a short key, from its zero-padded words and its length (so "a"
 * and "a\0" differ): two inline mixes instead of a library call, which is
 * most of the cost of a lookup in a small, cache-resident table. */
static inline uint64_t hash_short(const uint64_t w[2], size_t len) {
    return mix64(w[0] ^ mix64(w[1] ^ ((uint64_t)len * 0x9E3779B97F4A7C15ull)));
}

/* The tag of a key: its length + 1 above the hash's low 48 bits; never 0. */
static inline uint64_t make_tag(uint64_t hash, size_t len) {
    return ((uint64_t)(len + 1) << HASH_BITS) | (hash & HASH_MASK);
}

static size_t tag_len(uint64_t tag) {
    return (size_t)(tag >> HASH_BITS) - 1;
}

static size_t home(const ir_map *m, uint64_t tag) {
    return (size_t)(tag & HASH_MASK) & m->mask;
}

static const uint8_t *slot_key(const ir_map *m, const ir_map_slot *s) {
    return tag_len(s->tag) <= IR_MAP_INLINE_KEY ? s->k.key : (const uint8_t *)m->pool + s->k.off;
}

/* A probe: the key, its tag, and for a short key its zero-padded words, so
 * that comparing it with a slot takes two word compares and no memcmp. */
typedef struct probe {
    const void *key;
    size_t len;
    uint64_t tag;
    uint64_t words[2];
} probe;

static inline void probe_init(probe *p, const void *key, size_t len) {
    p->key = key;
    p->len = len;
    p->words[0] = p->words[1] = 0;
    if (len > IR_MAP_INLINE_KEY) {
        p->tag = make_tag(XXH3_64bits(key, len), len);
        return;
    }
    if (len == IR_MAP_INLINE_KEY) /* a constant size: two loads, not a call */
        memcpy(p->words, key, IR_MAP_INLINE_KEY);
    else if (len == 8)
        memcpy(p->words, key, 8);
    else if (len)
        memcpy(p->words, key, len);
    p->tag = make_tag(hash_short(p->words, len), len);
}

static inline bool slot_is(const ir_map *m, const ir_map_slot *s, const probe *p) {
    if (s->tag != p->tag) return false;
    if (p->len <= IR_MAP_INLINE_KEY)
        return s->k.words[0] == p->words[0] && s->k.words[1] == p->words[1];
    return memcmp(m->pool + s->k.off, p->key, p->len) == 0;
}

/* The slot holding the key, or the empty slot where it would go. */
static inline size_t find(const ir_map *m, const probe *p) {
    size_t i = home(m, p->tag);
    while (m->slots[i].tag && !slot_is(m, &m->slots[i], p)) i = (i + 1) & m->mask;
    return i;
}

static size_t slots_for(size_t entries) {
    size_t n = MAP_MIN_SLOTS;
    while (n / 4 * 3 < entries) n <<= 1;
    return n;
}

int ir_map_init(ir_map *m, size_t expect, size_t max_entries) {
    memset(m, 0, sizeof *m);
    if (max_entries == 0) return -1;
    size_t n = slots_for(expect < max_entries ? expect : max_entries);
    m->slots = ir_big_calloc(n * sizeof *m->slots);
    if (!m->slots) return -1;
    m->mask = n - 1;
    m->max_entries = max_entries;
    return 0;
}

void ir_map_free(ir_map *m) {
    ir_big_free(m->slots);
    free(m->pool);
    memset(m, 0, sizeof *m);
}

void ir_map_clear(ir_map *m) {
    memset(m->slots, 0, (m->mask + 1) * sizeof *m->slots);
    m->n = 0;
    m->plen = m->pdead = 0;
}

/* Re-places every slot in a table of nslots (a power of two). */
static int rehash(ir_map *m, size_t nslots) {
    ir_map_slot *old = m->slots;
    size_t oldn = m->mask + 1;
    ir_map_slot *fresh = ir_big_calloc(nslots * sizeof *fresh);
    if (!fresh) return -1;
    m->slots = fresh;
    m->mask = nslots - 1;
    for (size_t i = 0; i < oldn; i++) {
        if (!old[i].tag) continue;
        size_t j = home(m, old[i].tag);
        while (m->slots[j].tag) j = (j + 1) & m->mask;
        m->slots[j] = old[i];
    }
    ir_big_free(old);
    return 0;
}

/* Copies the live long keys into a fresh pool, dropping the deleted ones. */
static int compact_pool(ir_map *m) {
    size_t need = m->plen - m->pdead;
    char *fresh = malloc(need ? need : 1);
    if (!fresh) return -1;
    size_t at = 0;
    for (size_t i = 0; i <= m->mask; i++) {
        ir_map_slot *s = &m->slots[i];
        if (!s->tag || tag_len(s->tag) <= IR_MAP_INLINE_KEY) continue;
        memcpy(fresh + at, m->pool + s->k.off, tag_len(s->tag));
        s->k.off = at;
        at += tag_len(s->tag);
    }
    free(m->pool);
    m->pool = fresh;
    m->plen = m->pcap = at;
    m->pdead = 0;
    return 0;
}

/* Room for a long key of len bytes. */
static int pool_reserve(ir_map *m, size_t len) {
    if (m->plen + len <= m->pcap) return 0;
    if (m->pdead > m->plen / 2 && compact_pool(m) == 0 && m->plen + len <= m->pcap) return 0;
    size_t cap = m->pcap ? m->pcap : 1024;
    while (cap < m->plen + len) cap *= 2;
    char *p = realloc(m->pool, cap);
    if (!p) return -1;
    m->pool = p;
    m->pcap = cap;
    return 0;
}

/* Puts p's key in a fresh slot; *i is the empty slot find() gave (updated
 * when the table grows). */
static int insert(ir_map *m, const probe *p, size_t *i, uint64_t val) {
    if (m->n >= m->max_entries) return -1;
    if ((m->n + 1) > (m->mask + 1) / 4 * 3) {
        if (rehash(m, (m->mask + 1) * 2)) return -1;
        *i = find(m, p);
    }
    ir_map_slot *s = &m->slots[*i];
    if (p->len > IR_MAP_INLINE_KEY) {
        if (pool_reserve(m, p->len)) return -1;
        s->k.off = m->plen;
        memcpy(m->pool + m->plen, p->key, p->len);
        m->plen += p->len;
    } else {
        s->k.words[0] = p->words[0];
        s->k.words[1] = p->words[1];
    }
    s->tag = p->tag;
    s->val = val;
    m->n++;
    return 0;
}

int ir_map_put(ir_map *m, const void *key, size_t len, uint64_t val) {
    if (len > IR_MAP_MAX_KEY) return -1;
    probe p;
    probe_init(&p, key, len);
    size_t i = find(m, &p);
    if (m->slots[i].tag) {
        m->slots[i].val = val;
        return 0;
    }
    return insert(m, &p, &i, val);
}

int ir_map_add(ir_map *m, const void *key, size_t len, uint64_t val) {
    if (len > IR_MAP_MAX_KEY) return -1;
    probe p;
    probe_init(&p, key, len);
    size_t i = find(m, &p);
    if (m->slots[i].tag) return 1;
    return insert(m, &p, &i, val);
}

bool ir_map_get(const ir_map *m, const void *key, size_t len, uint64_t *val) {
    if (len > IR_MAP_MAX_KEY) return false;
    probe p;
    probe_init(&p, key, len);
    size_t i = find(m, &p);
    if (!m->slots[i].tag) return false;
    if (val) *val = m->slots[i].val;
    return true;
}

bool ir_map_del(ir_map *m, const void *key, size_t len) {
    if (len > IR_MAP_MAX_KEY) return false;
    probe p;
    probe_init(&p, key, len);
    size_t i = find(m, &p);
    if (!m->slots[i].tag) return false;
    if (len > IR_MAP_INLINE_KEY) m->pdead += len;
    /* Backward shift: pull each later entry of the run into the hole when its
     * home slot does not lie (cyclically) between the hole and itself. */
    size_t hole = i;
    for (size_t j = (i + 1) & m->mask; m->slots[j].tag; j = (j + 1) & m->mask) {
        size_t h = home(m, m->slots[j].tag);
        bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
        if (stays) continue;
        m->slots[hole] = m->slots[j];
        hole = j;
    }
    memset(&m->slots[hole], 0, sizeof m->slots[hole]);
    m->n--;
    if (m->n == 0) m->plen = m->pdead = 0;
    return true;
}

size_t ir_map_bytes(const ir_map *m) {
    return (m->mask + 1) * sizeof *m->slots + m->pcap;
}

bool ir_map_next(const ir_map *m, size_t *it, const void **key, size_t *len, uint64_t *val) {
    for (size_t i = *it; m->slots && i <= m->mask; i++) {
        const ir_map_slot *s = &m->slots[i];
        if (!s->tag) continue;
        if (key) *key = slot_key(m, s);
        if (len) *len = tag_len(s->tag);
        if (val) *val = s->val;
        *it = i + 1;
        return true;
    }
    *it = m->slots ? m->mask + 1 : 0;
    return false;
}
