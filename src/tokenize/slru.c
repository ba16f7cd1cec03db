/* slru.c: the sharded LRU table of the tokenize module's caches (slru.h). */
#include "tokenize/slru.h"

#include <stdbool.h>
#include <stdlib.h>

int irt_slru_init(irt_slru *l, size_t max_units, size_t max_bytes,
                  void (*release)(irt_slru_node *n)) {
    l->max_units = max_units;
    l->max_bytes = max_bytes;
    l->release = release;
    for (size_t i = 0; i < IRT_SLRU_SHARDS; i++) {
        irt_slru_shard *s = &l->sh[i];
        s->nbuckets = 16;
        s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
        if (!s->buckets || pthread_mutex_init(&s->mu, NULL)) {
            free(s->buckets);
            while (i--) {
                free(l->sh[i].buckets);
                pthread_mutex_destroy(&l->sh[i].mu);
            }
            return -1;
        }
    }
    return 0;
}

void irt_slru_destroy(irt_slru *l) {
    for (size_t i = 0; i < IRT_SLRU_SHARDS; i++) {
        irt_slru_shard *s = &l->sh[i];
        for (irt_slru_node *n = s->head, *nx; n; n = nx) {
            nx = n->next;
            l->release(n);
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->mu);
    }
}

static irt_slru_node **bucket_of(irt_slru_shard *s, uint64_t h) {
    return &s->buckets[(h >> 4) & (s->nbuckets - 1)];
}

static void lru_unlink(irt_slru_shard *s, irt_slru_node *n) {
    if (n->prev)
        n->prev->next = n->next;
    else
        s->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        s->tail = n->prev;
    n->prev = n->next = NULL;
}

static void lru_front(irt_slru_shard *s, irt_slru_node *n) {
    n->next = s->head;
    if (s->head) s->head->prev = n;
    s->head = n;
    if (!s->tail) s->tail = n;
}

void irt_slru_touch(irt_slru *l, irt_slru_shard *s, irt_slru_node *n) {
    n->stamp = atomic_fetch_add(&l->clock, 1);
    lru_unlink(s, n);
    lru_front(s, n);
}

static void grow(irt_slru_shard *s) {
    size_t nb = s->nbuckets * 2;
    irt_slru_node **b = calloc(nb, sizeof *b);
    if (!b) return; /* chains just get longer */
    for (size_t i = 0; i < s->nbuckets; i++) {
        for (irt_slru_node *n = s->buckets[i], *nx; n; n = nx) {
            nx = n->hnext;
            irt_slru_node **p = &b[(n->h >> 4) & (nb - 1)];
            n->hnext = *p;
            *p = n;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = nb;
}

void irt_slru_add(irt_slru *l, irt_slru_shard *s, irt_slru_node *n) {
    n->stamp = atomic_fetch_add(&l->clock, 1);
    if (s->nentries >= s->nbuckets) grow(s);
    irt_slru_node **b = bucket_of(s, n->h);
    n->hnext = *b;
    *b = n;
    lru_front(s, n);
    s->nentries++;
    atomic_fetch_add(&l->entries, 1);
    atomic_fetch_add(&l->units, n->units);
    atomic_fetch_add(&l->bytes, n->bytes);
}

/* Takes n out of s (whose lock is held) and drops the table's reference. */
static void evict(irt_slru *l, irt_slru_shard *s, irt_slru_node *n) {
    for (irt_slru_node **p = bucket_of(s, n->h); *p; p = &(*p)->hnext) {
        if (*p != n) continue;
        *p = n->hnext;
        break;
    }
    lru_unlink(s, n);
    s->nentries--;
    atomic_fetch_sub(&l->entries, 1);
    atomic_fetch_sub(&l->units, n->units);
    atomic_fetch_sub(&l->bytes, n->bytes);
    atomic_fetch_add(&l->evictions, 1);
    l->release(n);
}

/* The shard whose least recently used entry is the oldest; -1 when all are empty.
 * Each shard's tail is its oldest, so the oldest tail is the table's. */
static int oldest_shard(irt_slru *l) {
    int best = -1;
    uint64_t oldest = UINT64_MAX;
    for (int i = 0; i < IRT_SLRU_SHARDS; i++) {
        irt_slru_shard *s = &l->sh[i];
        pthread_mutex_lock(&s->mu);
        if (s->tail && s->tail->stamp < oldest) oldest = s->tail->stamp, best = i;
        pthread_mutex_unlock(&s->mu);
    }
    return best;
}

static bool over_budget(irt_slru *l) {
    return atomic_load(&l->units) > l->max_units || atomic_load(&l->bytes) > l->max_bytes;
}

void irt_slru_shrink(irt_slru *l) {
    while (over_budget(l)) {
        int i = oldest_shard(l);
        if (i < 0) return;
        irt_slru_shard *s = &l->sh[i];
        pthread_mutex_lock(&s->mu);
        if (s->tail) evict(l, s, s->tail);
        pthread_mutex_unlock(&s->mu);
    }
}
