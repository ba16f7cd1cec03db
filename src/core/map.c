/* map.c: the hash map of ir_core.h (open addressing, linear probing,
 * backward-shift deletion, a cap on entries). */
#include "core/ir_core.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define MAP_MIN_SLOTS 16

static uint64_t hash_key(const void *key, size_t len) {
    return XXH3_64bits(key, len);
}

static const uint8_t *slot_key(const ir_map *m, const ir_map_slot *s) {
    return s->len1 - 1 <= IR_MAP_INLINE_KEY ? s->key : (const uint8_t *)m->pool + s->off;
}

static bool slot_is(const ir_map *m, const ir_map_slot *s, uint64_t h, const void *key,
                    size_t len) {
    return s->hash == h && s->len1 == len + 1 && memcmp(slot_key(m, s), key, len) == 0;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find(const ir_map *m, uint64_t h, const void *key, size_t len) {
    size_t i = (size_t)h & m->mask;
    while (m->slots[i].len1 && !slot_is(m, &m->slots[i], h, key, len)) i = (i + 1) & m->mask;
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
    m->slots = calloc(n, sizeof *m->slots);
    if (!m->slots) return -1;
    m->mask = n - 1;
    m->max_entries = max_entries;
    return 0;
}

void ir_map_free(ir_map *m) {
    free(m->slots);
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
    ir_map_slot *fresh = calloc(nslots, sizeof *fresh);
    if (!fresh) return -1;
    m->slots = fresh;
    m->mask = nslots - 1;
    for (size_t i = 0; i < oldn; i++) {
        if (!old[i].len1) continue;
        size_t j = (size_t)old[i].hash & m->mask;
        while (m->slots[j].len1) j = (j + 1) & m->mask;
        m->slots[j] = old[i];
    }
    free(old);
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
        if (s->len1 - 1 <= IR_MAP_INLINE_KEY || !s->len1) continue;
        memcpy(fresh + at, m->pool + s->off, s->len1 - 1);
        s->off = (uint32_t)at;
        at += s->len1 - 1;
    }
    free(m->pool);
    m->pool = fresh;
    m->plen = m->pcap = at;
    m->pdead = 0;
    return 0;
}

/* Room for a long key of len bytes; the pool's offsets are 32-bit. */
static int pool_reserve(ir_map *m, size_t len) {
    if (m->plen + len <= m->pcap) return 0;
    if (m->pdead > m->plen / 2 && compact_pool(m) == 0 && m->plen + len <= m->pcap) return 0;
    size_t cap = m->pcap ? m->pcap : 1024;
    while (cap < m->plen + len) cap *= 2;
    if (cap > UINT32_MAX) return -1;
    char *p = realloc(m->pool, cap);
    if (!p) return -1;
    m->pool = p;
    m->pcap = cap;
    return 0;
}

int ir_map_put(ir_map *m, const void *key, size_t len, uint64_t val) {
    if (len > IR_MAP_MAX_KEY) return -1;
    uint64_t h = hash_key(key, len);
    size_t i = find(m, h, key, len);
    if (m->slots[i].len1) {
        m->slots[i].val = val;
        return 0;
    }
    if (m->n >= m->max_entries) return -1;
    if ((m->n + 1) > (m->mask + 1) / 4 * 3) {
        if (rehash(m, (m->mask + 1) * 2)) return -1;
        i = find(m, h, key, len);
    }
    if (len > IR_MAP_INLINE_KEY && pool_reserve(m, len)) return -1;
    ir_map_slot *s = &m->slots[i];
    s->hash = h;
    s->len1 = (uint32_t)len + 1;
    if (len > IR_MAP_INLINE_KEY) {
        s->off = (uint32_t)m->plen;
        memcpy(m->pool + m->plen, key, len);
        m->plen += len;
    } else if (len) {
        memcpy(s->key, key, len);
    }
    s->val = val;
    m->n++;
    return 0;
}

bool ir_map_get(const ir_map *m, const void *key, size_t len, uint64_t *val) {
    if (len > IR_MAP_MAX_KEY) return false;
    size_t i = find(m, hash_key(key, len), key, len);
    if (!m->slots[i].len1) return false;
    if (val) *val = m->slots[i].val;
    return true;
}

bool ir_map_del(ir_map *m, const void *key, size_t len) {
    if (len > IR_MAP_MAX_KEY) return false;
    size_t i = find(m, hash_key(key, len), key, len);
    if (!m->slots[i].len1) return false;
    if (len > IR_MAP_INLINE_KEY) m->pdead += len;
    /* Backward shift: pull each later entry of the run into the hole when its
     * home slot does not lie (cyclically) between the hole and itself. */
    size_t hole = i;
    for (size_t j = (i + 1) & m->mask; m->slots[j].len1; j = (j + 1) & m->mask) {
        size_t home = (size_t)m->slots[j].hash & m->mask;
        bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
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
        if (!s->len1) continue;
        if (key) *key = slot_key(m, s);
        if (len) *len = s->len1 - 1;
        if (val) *val = s->val;
        *it = i + 1;
        return true;
    }
    *it = m->slots ? m->mask + 1 : 0;
    return false;
}
