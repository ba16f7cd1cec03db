/* parse_cache.c: chat bodies read with the elements of their "messages" array
 * kept, parsed, across requests (ADR 0020).
 *
 * A chat's system prompt and earlier turns come back byte for byte in the next
 * request, and jansson reads them at 40-130 MB/s. jscan.c splits the body into
 * the "messages" elements and the rest; each element of IRT_PARSE_CACHE_MIN_BYTES
 * or more is looked up by its bytes (XXH3, then compared) and, when absent, read
 * by jansson and kept. The rest, the body with "[]" in the array's place, is
 * read by jansson, and the elements are put into its empty array.
 *
 * The result is irt_json_loads's: a body whose pieces jansson all reads is a body
 * jansson reads whole, to the same value (the scanner checks the separators
 * between elements, jansson everything inside each piece, and no piece is
 * nested deep enough for jansson's depth limit to differ). Anything else (a
 * scanner doubt, a piece jansson refuses, such as one with NaN or a big integer
 * for pyjson.c) reads the whole body with irt_json_loads, as before.
 *
 * Sharing: a kept element is an immutable jansson value read by many threads.
 * jansson 2.14 counts references atomically (JSON_HAVE_ATOMIC_BUILTINS), but
 * json_incref and json_decref first read the count plainly (to skip the
 * immortal count (size_t)-1 of true, false and null), and the decrement is a
 * release without an acquire, so the thread that frees a value would not be
 * ordered after other threads' reads of it. So a kept value is made immortal
 * the same way: every node's count is set to (size_t)-1 before it is published,
 * and json_incref / json_decref leave it alone (no shared count is ever
 * written, and none of those cache lines bounce between threads). The entry
 * counts its users itself (refs: the table's 1, +1 per parsed body using it):
 * a body drops its jansson references first, then its pins, and whoever drops
 * the last pin, after an acquire-release decrement, makes the nodes mortal
 * again (count 1) and frees them.
 *
 * The entries live in the sharded LRU table that the tokenization cache
 * (cache.c) uses too (slru.c: sixteen shards, a mutex, a chained table, an LRU
 * list each) under one byte budget; an insert over it evicts the oldest
 * entries of the whole cache. */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tokenize/ir_tokenize.h"
#include "tokenize/jscan.h"
#include "tokenize/json_share.h"
#include "tokenize/slru.h"

/* What a kept value counts per JSON value in it, besides its bytes twice (the
 * raw copy, and jansson's copy of its strings): jansson's node, a key, a
 * hashtable slot and malloc's overhead, roughly. */
#define BYTES_PER_VALUE 96

typedef struct pentry {
    irt_slru_node n; /* first: n.bytes is its cost; refs 1 while in the table, +1 per body */
    size_t len, flags;
    json_t *v;
    char raw[]; /* len bytes */
} pentry;

struct irt_parse_cache {
    atomic_uint_fast64_t hits, misses, whole;
    irt_slru lru; /* the entries, their budget, counts and evictions */
};

/* ---- the table ------------------------------------------------------------------ */

static void unpin(pentry *e) {
    if (atomic_fetch_sub_explicit(&e->n.refs, 1, memory_order_acq_rel) != 1) return;
    irt_json_set_counts(e->v, 1); /* no other thread holds it now */
    json_decref(e->v);
    free(e);
}

static void release(irt_slru_node *n) {
    unpin((pentry *)n);
}

irt_parse_cache *irt_parse_cache_new(size_t max_bytes) {
    if (!max_bytes) return NULL;
    irt_parse_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (irt_slru_init(&c->lru, SIZE_MAX, max_bytes, release)) {
        free(c);
        return NULL;
    }
    return c;
}

void irt_parse_cache_free(irt_parse_cache *c) {
    if (!c) return;
    irt_slru_destroy(&c->lru);
    free(c);
}

void irt_parse_cache_get_stats(const irt_parse_cache *c, irt_parse_cache_stats *out) {
    memset(out, 0, sizeof *out);
    if (!c) return;
    irt_parse_cache *m = (irt_parse_cache *)c; /* atomics are read, never written */
    out->hits = atomic_load(&m->hits);
    out->misses = atomic_load(&m->misses);
    out->evictions = atomic_load(&m->lru.evictions);
    out->whole = atomic_load(&m->whole);
    out->entries = atomic_load(&m->lru.entries);
    out->bytes = atomic_load(&m->lru.bytes);
    out->max_bytes = c->lru.max_bytes;
}

/* The entry for these bytes in s, whose lock is held. */
static pentry *find(irt_slru_shard *s, uint64_t h, const char *raw, size_t len, size_t flags) {
    for (irt_slru_node *n = irt_slru_chain(s, h); n; n = n->hnext) {
        pentry *e = (pentry *)n;
        if (n->h == h && e->len == len && e->flags == flags && !memcmp(e->raw, raw, len)) return e;
    }
    return NULL;
}

/* The entry holding these bytes, pinned, or NULL. */
static pentry *lookup(irt_parse_cache *c, uint64_t h, const char *raw, size_t len, size_t flags) {
    irt_slru_shard *s = irt_slru_shard_of(&c->lru, h);
    pthread_mutex_lock(&s->mu);
    pentry *e = find(s, h, raw, len, flags);
    if (e) {
        atomic_fetch_add_explicit(&e->n.refs, 1, memory_order_relaxed);
        irt_slru_touch(&c->lru, s, &e->n);
    }
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_add(e ? &c->hits : &c->misses, 1);
    return e;
}

/* Keeps v (a new reference, taken over) for these bytes. Returns the entry,
 * pinned for the caller, or NULL when not kept (over the budget, out of memory,
 * or another thread kept the same bytes first): v is then the caller's again. */
static pentry *insert(irt_parse_cache *c, uint64_t h, const irt_jspan *sp, const char *raw,
                      size_t flags, json_t *v) {
    size_t cost = sizeof(pentry) + 2 * sp->len + BYTES_PER_VALUE * sp->nvals;
    if (cost > c->lru.max_bytes) return NULL;
    pentry *e = malloc(sizeof *e + sp->len);
    if (!e) return NULL;
    memset(e, 0, sizeof *e);
    e->n.h = h;
    e->n.bytes = cost;
    atomic_init(&e->n.refs, 2);
    e->len = sp->len;
    e->flags = flags;
    e->v = v;
    memcpy(e->raw, raw, sp->len);
    irt_json_set_counts(v, IRT_JSON_IMMORTAL); /* before the lock publishes it */
    irt_slru_shard *s = irt_slru_shard_of(&c->lru, h);
    pthread_mutex_lock(&s->mu);
    if (find(s, h, raw, sp->len, flags)) {
        pthread_mutex_unlock(&s->mu);
        irt_json_set_counts(v, 1);
        free(e);
        return NULL;
    }
    irt_slru_add(&c->lru, s, &e->n);
    pthread_mutex_unlock(&s->mu);
    irt_slru_shrink(&c->lru);
    return e;
}

/* ---- a body ------------------------------------------------------------------------ */

static int hold(irt_parsed *p, pentry *e) {
    if (p->npins == p->cap) {
        size_t n = p->cap ? 2 * p->cap : 8;
        void **x = realloc(p->pins, n * sizeof *x);
        if (!x) return -1;
        p->pins = x;
        p->cap = n;
    }
    p->pins[p->npins++] = e;
    return 0;
}

/* An element's bytes read as json_loadb reads them: by jflat.c, and what it
 * declines by jansson. */
static json_t *read_element(const char *raw, size_t len, size_t flags) {
    json_t *v = irt_jfast_loadb(raw, len, flags);
    if (v) return v;
    json_error_t je;
    return json_loadb(raw, len, flags, &je);
}

/* One element into arr: from the cache, or read and kept. -1 when jansson
 * refuses it (or out of memory). */
static int add_element(irt_parse_cache *c, const char *s, const irt_jspan *sp, size_t flags,
                       json_t *arr, irt_parsed *p) {
    const char *raw = s + sp->off;
    size_t ef = flags | JSON_DECODE_ANY;
    if (sp->len < IRT_PARSE_CACHE_MIN_BYTES) {
        json_t *v = read_element(raw, sp->len, ef);
        return v ? json_array_append_new(arr, v) : -1;
    }
    uint64_t h = XXH3_64bits_withSeed(raw, sp->len, ef);
    pentry *e = lookup(c, h, raw, sp->len, ef);
    if (!e) {
        json_t *v = read_element(raw, sp->len, ef);
        if (!v) return -1;
        e = insert(c, h, sp, raw, ef, v);
        if (!e) return json_array_append_new(arr, v);
    }
    if (hold(p, e)) {
        unpin(e);
        return -1;
    }
    return json_array_append(arr, e->v);
}

/* The body with "[]" in place of its messages array, read by jansson. */
static json_t *read_rest(const char *s, size_t len, const irt_jscan *j, size_t flags) {
    size_t tail = len - j->arr_off - j->arr_len;
    char *r = malloc(j->arr_off + 2 + tail);
    if (!r) return NULL;
    memcpy(r, s, j->arr_off);
    memcpy(r + j->arr_off, "[]", 2);
    memcpy(r + j->arr_off + 2, s + j->arr_off + j->arr_len, tail);
    json_t *doc = irt_jfast_loadb(r, j->arr_off + 2 + tail, flags);
    json_error_t e;
    if (!doc) doc = json_loadb(r, j->arr_off + 2 + tail, flags, &e);
    free(r);
    return doc;
}

/* The split body read piece by piece into p->doc; -1 when any piece is refused. */
static int read_split(irt_parse_cache *c, const char *s, size_t len, const irt_jscan *j,
                      size_t flags, irt_parsed *p) {
    p->doc = read_rest(s, len, j, flags);
    json_t *arr = json_object_get(p->doc, "messages");
    if (!json_is_array(arr) || json_array_size(arr)) return -1;
    for (size_t i = 0; i < j->nelems; i++)
        if (add_element(c, s, &j->elems[i], flags, arr, p)) return -1;
    return 0;
}

void irt_chat_loads(irt_parse_cache *c, const char *s, size_t len, size_t flags, json_error_t *err,
                    irt_parsed *p) {
    memset(p, 0, sizeof *p);
    irt_jscan j;
    /* JSON_DISABLE_EOF_CHECK would let a piece end early where the body may not */
    bool split = c && s && !(flags & JSON_DISABLE_EOF_CHECK);
    if (split && irt_jscan_chat(s, len, &j) == IRT_JSCAN_OK) {
        int rc = read_split(c, s, len, &j, flags, p);
        irt_jscan_free(&j);
        if (rc == 0) return;
        irt_parsed_release(p);
    }
    if (c) atomic_fetch_add(&c->whole, 1);
    p->doc = irt_json_loads(s, len, flags, err);
}

void irt_parsed_release(irt_parsed *p) {
    json_decref(p->doc); /* first: the values' last references may be the pins' */
    for (size_t i = 0; i < p->npins; i++) unpin(p->pins[i]);
    free(p->pins);
    memset(p, 0, sizeof *p);
}
