/* cache.c: the tokenization cache, text pieces to their token ids.
 *
 * irt_encode cuts a text at added tokens first (AddedVocabulary splits before
 * normalization and pre-tokenization), and each piece between them is encoded on
 * its own: its ids depend on its bytes and on whether it starts the text (a
 * Metaspace pre-tokenizer with prepend_scheme "first"), nothing else. So a piece
 * is keyed by those two, and a hit appends exactly the ids a fresh encode would.
 * The key's hash only picks a slot; a hit also compares the bytes.
 *
 * Sixteen shards, each a mutex, a chained table and an LRU list. The budget, in
 * ids and in bytes (IRT_CACHE_BYTES_PER_TOKEN per id: text that packs few tokens
 * into many bytes, such as long runs of one character, is bounded by its bytes),
 * is the whole cache's (atomic counts); an insert that goes over it
 * evicts the least recently used entries of the whole cache (each use takes a
 * tick of one clock), one shard lock at a time. A reader holds a reference, so the compare and the
 * copy run unlocked and an entry evicted meanwhile is freed by its last reader. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tokenize/hf_internal.h"

#define CACHE_SHARDS 16

typedef struct centry {
    struct centry *hnext;       /* the bucket's chain */
    struct centry *prev, *next; /* LRU, most recent first */
    uint64_t h;
    uint64_t stamp;   /* the cache's clock at its last use, under the shard's lock */
    atomic_uint refs; /* 1 while in the table, +1 per reader */
    uint32_t nids;
    size_t len;
    bool first;
    uint32_t *ids; /* nids ids, then len bytes of text, in this allocation */
    char *text;
} centry;

typedef struct cshard {
    pthread_mutex_t mu;
    centry **buckets;
    size_t nbuckets, nentries;
    centry *head, *tail;
} cshard;

struct irt_cache {
    const irt_tokenizer *t;
    size_t max_tokens, max_bytes;
    atomic_size_t tokens, entries, bytes;
    atomic_uint_fast64_t hits, misses, evictions;
    atomic_uint_fast64_t clock; /* ticks at every use: the LRU order across shards */
    cshard sh[CACHE_SHARDS];
};

static void free_shards(irt_cache *c, size_t n) {
    for (size_t i = 0; i < n; i++) {
        cshard *s = &c->sh[i];
        for (centry *e = s->head, *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->mu);
    }
    free(c);
}

irt_cache *irt_cache_new(const irt_tokenizer *t, size_t max_tokens) {
    if (!t || !max_tokens) return NULL;
    irt_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->t = t;
    c->max_tokens = max_tokens;
    c->max_bytes = max_tokens > SIZE_MAX / IRT_CACHE_BYTES_PER_TOKEN
                       ? SIZE_MAX
                       : max_tokens * IRT_CACHE_BYTES_PER_TOKEN;
    for (size_t i = 0; i < CACHE_SHARDS; i++) {
        cshard *s = &c->sh[i];
        s->nbuckets = 16;
        s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
        if (!s->buckets || pthread_mutex_init(&s->mu, NULL)) {
            free(s->buckets);
            free_shards(c, i);
            return NULL;
        }
    }
    return c;
}

void irt_cache_free(irt_cache *c) {
    if (c) free_shards(c, CACHE_SHARDS);
}

void irt_cache_get_stats(const irt_cache *c, irt_cache_stats *out) {
    memset(out, 0, sizeof *out);
    if (!c) return;
    irt_cache *m = (irt_cache *)c; /* atomics are read, never written */
    out->hits = atomic_load(&m->hits);
    out->misses = atomic_load(&m->misses);
    out->evictions = atomic_load(&m->evictions);
    out->tokens = atomic_load(&m->tokens);
    out->entries = atomic_load(&m->entries);
    out->bytes = atomic_load(&m->bytes);
    out->max_tokens = c->max_tokens;
    out->max_bytes = c->max_bytes;
}

bool hf_cache_for(const irt_cache *c, const irt_tokenizer *t) {
    return c && c->t == t;
}

uint64_t hf_cache_key(const char *s, size_t len, bool first) {
    return XXH3_64bits_withSeed(s, len, first ? 1 : 0);
}

static cshard *shard_of(irt_cache *c, uint64_t h) {
    return &c->sh[h & (CACHE_SHARDS - 1)];
}

static centry **bucket_of(cshard *s, uint64_t h) {
    return &s->buckets[(h >> 4) & (s->nbuckets - 1)];
}

/* What an entry counts against max_bytes: its allocation. */
static size_t entry_bytes(size_t nids, size_t len) {
    return sizeof(centry) + nids * sizeof(uint32_t) + len;
}

static void unref(centry *e) {
    if (atomic_fetch_sub(&e->refs, 1) == 1) free(e);
}

static void lru_unlink(cshard *s, centry *e) {
    if (e->prev)
        e->prev->next = e->next;
    else
        s->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        s->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_front(cshard *s, centry *e) {
    e->next = s->head;
    if (s->head) s->head->prev = e;
    s->head = e;
    if (!s->tail) s->tail = e;
}

/* The entry for (h, len, first) in s, whose lock is held; bytes not compared. */
static centry *find(cshard *s, uint64_t h, size_t len, bool first) {
    for (centry *e = *bucket_of(s, h); e; e = e->hnext)
        if (e->h == h && e->len == len && e->first == first) return e;
    return NULL;
}

static void table_remove(irt_cache *c, cshard *s, centry *e) {
    for (centry **p = bucket_of(s, e->h); *p; p = &(*p)->hnext) {
        if (*p != e) continue;
        *p = e->hnext;
        break;
    }
    lru_unlink(s, e);
    s->nentries--;
    atomic_fetch_sub(&c->entries, 1);
    atomic_fetch_sub(&c->tokens, e->nids);
    atomic_fetch_sub(&c->bytes, entry_bytes(e->nids, e->len));
    atomic_fetch_add(&c->evictions, 1);
    unref(e);
}

int hf_cache_lookup(irt_cache *c, uint64_t h, const char *s, size_t len, bool first, irt_ids *out) {
    cshard *sh = shard_of(c, h);
    pthread_mutex_lock(&sh->mu);
    centry *e = find(sh, h, len, first);
    if (e) {
        atomic_fetch_add(&e->refs, 1);
        e->stamp = atomic_fetch_add(&c->clock, 1);
        lru_unlink(sh, e);
        lru_front(sh, e);
    }
    pthread_mutex_unlock(&sh->mu);
    int rc = 0;
    if (e && memcmp(e->text, s, len) == 0)
        rc = hf_ids_append(out, e->ids, e->nids) ? IRT_ENOMEM : 1;
    if (e) unref(e);
    atomic_fetch_add(rc == 1 ? &c->hits : &c->misses, 1);
    return rc;
}

static void grow(cshard *s) {
    size_t nb = s->nbuckets * 2;
    centry **b = calloc(nb, sizeof *b);
    if (!b) return; /* chains just get longer */
    for (size_t i = 0; i < s->nbuckets; i++) {
        for (centry *e = s->buckets[i], *nx; e; e = nx) {
            nx = e->hnext;
            centry **p = &b[(e->h >> 4) & (nb - 1)];
            e->hnext = *p;
            *p = e;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = nb;
}

/* The shard whose least recently used entry is the oldest; -1 when all are empty.
 * Each shard's tail is its oldest, so the oldest tail is the cache's. */
static int oldest_shard(irt_cache *c) {
    int best = -1;
    uint64_t oldest = UINT64_MAX;
    for (int i = 0; i < CACHE_SHARDS; i++) {
        cshard *s = &c->sh[i];
        pthread_mutex_lock(&s->mu);
        if (s->tail && s->tail->stamp < oldest) oldest = s->tail->stamp, best = i;
        pthread_mutex_unlock(&s->mu);
    }
    return best;
}

/* Evicts least recently used entries until the cache is within its budget. The
 * tail found may be used again before its shard is locked again; then a slightly
 * younger entry goes: the order is LRU up to such races. */
static bool over_budget(irt_cache *c) {
    return atomic_load(&c->tokens) > c->max_tokens || atomic_load(&c->bytes) > c->max_bytes;
}

static void shrink(irt_cache *c) {
    while (over_budget(c)) {
        int i = oldest_shard(c);
        if (i < 0) return;
        cshard *s = &c->sh[i];
        pthread_mutex_lock(&s->mu);
        if (s->tail) table_remove(c, s, s->tail);
        pthread_mutex_unlock(&s->mu);
    }
}

void hf_cache_insert(irt_cache *c, uint64_t h, const char *s, size_t len, bool first,
                     const uint32_t *ids, size_t nids) {
    if (nids > c->max_tokens || nids > UINT32_MAX || entry_bytes(nids, len) > c->max_bytes) return;
    centry *e = malloc(entry_bytes(nids, len));
    if (!e) return; /* a cache that cannot grow only misses */
    memset(e, 0, sizeof *e);
    e->h = h;
    e->len = len;
    e->first = first;
    e->nids = (uint32_t)nids;
    atomic_init(&e->refs, 1);
    e->stamp = atomic_fetch_add(&c->clock, 1);
    e->ids = (uint32_t *)(e + 1);
    e->text = (char *)(e->ids + nids);
    memcpy(e->ids, ids, nids * sizeof(uint32_t));
    memcpy(e->text, s, len);
    cshard *sh = shard_of(c, h);
    pthread_mutex_lock(&sh->mu);
    if (find(sh, h, len, first)) { /* another thread put it first, or a collision */
        pthread_mutex_unlock(&sh->mu);
        free(e);
        return;
    }
    if (sh->nentries >= sh->nbuckets) grow(sh);
    centry **b = bucket_of(sh, h);
    e->hnext = *b;
    *b = e;
    lru_front(sh, e);
    sh->nentries++;
    atomic_fetch_add(&c->entries, 1);
    atomic_fetch_add(&c->tokens, nids);
    atomic_fetch_add(&c->bytes, entry_bytes(nids, len));
    pthread_mutex_unlock(&sh->mu);
    shrink(c);
}
