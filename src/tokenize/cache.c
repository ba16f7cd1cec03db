/* cache.c: the tokenization cache, text pieces to their token ids.
 *
 * irt_encode cuts a text at added tokens first (AddedVocabulary splits before
 * normalization and pre-tokenization), and each piece between them is encoded on
 * its own: its ids depend on its bytes and on whether it starts the text (a
 * Metaspace pre-tokenizer with prepend_scheme "first"), nothing else. So a piece
 * is keyed by those two, and a hit appends exactly the ids a fresh encode would.
 * The key's hash only picks a slot; a hit also compares the bytes.
 *
 * The entries live in a sharded LRU table (slru.c: sixteen shards, each a mutex,
 * a chained table and an LRU list). The budget, in ids and in bytes
 * (IRT_CACHE_BYTES_PER_TOKEN per id: text that packs few tokens into many bytes,
 * such as long runs of one character, is bounded by its bytes), is the whole
 * cache's; an insert that goes over it evicts the least recently used entries of
 * the whole cache. A reader holds a reference, so the compare and the copy run
 * unlocked and an entry evicted meanwhile is freed by its last reader. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tokenize/hf_internal.h"
#include "tokenize/slru.h"

typedef struct centry {
    irt_slru_node n; /* first: its units are the ids, refs 1 while in the table +1 per reader */
    size_t len;
    bool first;
    uint32_t *ids; /* n.units ids, then len bytes of text, in this allocation */
} centry;

struct irt_cache {
    const irt_tokenizer *t;
    atomic_uint_fast64_t hits, misses;
    irt_slru lru; /* the entries, their budgets, counts and evictions */
};

static char *entry_text(centry *e) {
    return (char *)(e->ids + e->n.units);
}

static void unref(irt_slru_node *n) {
    if (atomic_fetch_sub(&n->refs, 1) == 1) free(n);
}

irt_cache *irt_cache_new(const irt_tokenizer *t, size_t max_tokens) {
    if (!t || !max_tokens) return NULL;
    irt_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->t = t;
    size_t max_bytes = max_tokens > SIZE_MAX / IRT_CACHE_BYTES_PER_TOKEN
                           ? SIZE_MAX
                           : max_tokens * IRT_CACHE_BYTES_PER_TOKEN;
    if (irt_slru_init(&c->lru, max_tokens, max_bytes, unref)) {
        free(c);
        return NULL;
    }
    return c;
}

void irt_cache_free(irt_cache *c) {
    if (!c) return;
    irt_slru_destroy(&c->lru);
    free(c);
}

void irt_cache_get_stats(const irt_cache *c, irt_cache_stats *out) {
    memset(out, 0, sizeof *out);
    if (!c) return;
    irt_cache *m = (irt_cache *)c; /* atomics are read, never written */
    out->hits = atomic_load(&m->hits);
    out->misses = atomic_load(&m->misses);
    out->evictions = atomic_load(&m->lru.evictions);
    out->tokens = atomic_load(&m->lru.units);
    out->entries = atomic_load(&m->lru.entries);
    out->bytes = atomic_load(&m->lru.bytes);
    out->max_tokens = c->lru.max_units;
    out->max_bytes = c->lru.max_bytes;
}

bool hf_cache_for(const irt_cache *c, const irt_tokenizer *t) {
    return c && c->t == t;
}

uint64_t hf_cache_key(const char *s, size_t len, bool first) {
    return XXH3_64bits_withSeed(s, len, first ? 1 : 0);
}

/* What an entry counts against max_bytes: its allocation. */
static size_t entry_bytes(size_t nids, size_t len) {
    return sizeof(centry) + nids * sizeof(uint32_t) + len;
}

/* The entry for (h, len, first) in s, whose lock is held; bytes not compared. */
static centry *find(irt_slru_shard *s, uint64_t h, size_t len, bool first) {
    for (irt_slru_node *n = irt_slru_chain(s, h); n; n = n->hnext) {
        centry *e = (centry *)n;
        if (n->h == h && e->len == len && e->first == first) return e;
    }
    return NULL;
}

int hf_cache_lookup(irt_cache *c, uint64_t h, const char *s, size_t len, bool first, irt_ids *out) {
    irt_slru_shard *sh = irt_slru_shard_of(&c->lru, h);
    pthread_mutex_lock(&sh->mu);
    centry *e = find(sh, h, len, first);
    if (e) {
        atomic_fetch_add(&e->n.refs, 1);
        irt_slru_touch(&c->lru, sh, &e->n);
    }
    pthread_mutex_unlock(&sh->mu);
    int rc = 0;
    if (e && memcmp(entry_text(e), s, len) == 0)
        rc = hf_ids_append(out, e->ids, e->n.units) ? IRT_ENOMEM : 1;
    if (e) unref(&e->n);
    atomic_fetch_add(rc == 1 ? &c->hits : &c->misses, 1);
    return rc;
}

void hf_cache_insert(irt_cache *c, uint64_t h, const char *s, size_t len, bool first,
                     const uint32_t *ids, size_t nids) {
    if (nids > c->lru.max_units || nids > UINT32_MAX || entry_bytes(nids, len) > c->lru.max_bytes)
        return;
    centry *e = malloc(entry_bytes(nids, len));
    if (!e) return; /* a cache that cannot grow only misses */
    memset(e, 0, sizeof *e);
    e->n.h = h;
    e->n.bytes = entry_bytes(nids, len);
    e->n.units = (uint32_t)nids;
    atomic_init(&e->n.refs, 1);
    e->len = len;
    e->first = first;
    e->ids = (uint32_t *)(e + 1);
    memcpy(e->ids, ids, nids * sizeof(uint32_t));
    memcpy(entry_text(e), s, len);
    irt_slru_shard *sh = irt_slru_shard_of(&c->lru, h);
    pthread_mutex_lock(&sh->mu);
    if (find(sh, h, len, first)) { /* another thread put it first, or a collision */
        pthread_mutex_unlock(&sh->mu);
        free(e);
        return;
    }
    irt_slru_add(&c->lru, sh, &e->n);
    pthread_mutex_unlock(&sh->mu);
    irt_slru_shrink(&c->lru);
}
