/* arena.c: a bump allocator made of chunks; one per request. */
#include "core/ir_core.h"

#include <stdlib.h>
#include <string.h>

typedef struct chunk {
    struct chunk *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    bool big; /* from ir_big_calloc, else malloc */
    _Alignas(16) unsigned char mem[];
} chunk;

/* Chunks this big come from ir_big_calloc (huge pages). */
#define BIG_CHUNK ((size_t)1 << 20)

struct ir_arena {
    chunk *head;  /* the chunk being filled; earlier ones follow */
    chunk *first; /* allocated with the arena itself, freed with it */
    size_t chunk_size;
    size_t max;       /* cap on bytes handed out; 0 = none */
    size_t total;     /* bytes handed out since the last reset */
    size_t max_chunk; /* growth: chunks double up to this; 0 = fixed size */
    size_t held;      /* bytes of the chunks after the first */
};

/* One allocation for the arena and its first chunk: a request that fits in one
 * chunk costs one malloc and one free. */
ir_arena *ir_arena_new(size_t chunk_size, size_t max) {
    if (!chunk_size) chunk_size = 4096;
    size_t hdr = (sizeof(ir_arena) + 15) & ~(size_t)15;
    ir_arena *a = malloc(hdr + sizeof(chunk) + chunk_size);
    if (!a) return NULL;
    a->first = (chunk *)((unsigned char *)a + hdr);
    a->first->next = NULL;
    a->first->size = chunk_size;
    a->first->used = 0;
    a->head = a->first;
    a->chunk_size = chunk_size;
    a->max = max;
    a->total = 0;
    a->max_chunk = 0;
    a->held = 0;
    return a;
}

/* Frees c and the chunks after it, all but the arena's own first chunk. */
static void free_chunks(ir_arena *a, chunk *c) {
    while (c) {
        chunk *n = c->next;
        if (c != a->first) {
            if (c->big)
                ir_big_free(c);
            else
                free(c);
        }
        c = n;
    }
}

void ir_arena_free(ir_arena *a) {
    if (!a) return;
    free_chunks(a, a->head);
    free(a);
}

void ir_arena_reset(ir_arena *a) {
    free_chunks(a, a->head);
    a->head = a->first;
    a->first->next = NULL;
    a->first->used = 0;
    a->total = 0;
    a->held = 0;
}

/* A chunk of at least sz usable bytes, or NULL. */
static chunk *new_chunk(ir_arena *a, size_t sz) {
    bool big = sizeof(chunk) + sz >= BIG_CHUNK;
    chunk *nc = big ? ir_big_calloc(sizeof(chunk) + sz) : malloc(sizeof(chunk) + sz);
    if (!nc) return NULL;
    nc->size = sz;
    nc->used = 0;
    nc->big = big;
    a->held += sizeof(chunk) + sz;
    return nc;
}

/* The size of the next regular chunk: the fixed size, or under growth twice
 * the current one, up to max_chunk. */
static size_t next_chunk_size(const ir_arena *a) {
    if (!a->max_chunk || !a->head) return a->chunk_size;
    size_t sz = a->head->size * 2;
    if (sz > a->max_chunk) sz = a->max_chunk;
    return sz > a->chunk_size ? sz : a->chunk_size;
}

void *ir_arena_alloc(ir_arena *a, size_t n) {
    size_t need = (n + 15) & ~(size_t)15;
    if (need < n) return NULL;
    if (a->max && (need > a->max || a->total > a->max - need)) return NULL;
    chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        size_t regular = next_chunk_size(a);
        chunk *nc = new_chunk(a, need > regular ? need : regular);
        if (!nc) return NULL;
        if (c && need > regular) {
            /* An oversized block: put it behind the current chunk so that
             * the current chunk's free space stays usable. */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            a->head = nc;
        }
        c = nc;
    }
    void *p = c->mem + c->used;
    c->used += need;
    a->total += need;
    return p;
}

void *ir_arena_calloc(ir_arena *a, size_t n) {
    void *p = ir_arena_alloc(a, n);
    if (p) memset(p, 0, n);
    return p;
}

char *ir_arena_strndup(ir_arena *a, const char *s, size_t n) {
    char *p = ir_arena_alloc(a, n + 1);
    if (!p) return NULL;
    if (n) memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *ir_arena_strdup(ir_arena *a, const char *s) {
    return ir_arena_strndup(a, s, strlen(s));
}

size_t ir_arena_used(const ir_arena *a) {
    return a->total;
}

void ir_arena_set_max(ir_arena *a, size_t max) {
    a->max = max;
}

size_t ir_arena_held(const ir_arena *a) {
    return sizeof *a + sizeof(chunk) + a->chunk_size + a->held;
}

void ir_arena_set_growth(ir_arena *a, size_t max_chunk) {
    a->max_chunk = max_chunk;
}
