/* arena.c: a bump allocator made of chunks; one per request. */
#include "core/ir_core.h"

#include <stdlib.h>
#include <string.h>

typedef struct chunk {
    struct chunk *next;
    size_t size; /* usable bytes after the header */
    size_t used;
    _Alignas(16) unsigned char mem[];
} chunk;

struct ir_arena {
    chunk *head; /* the chunk being filled; earlier ones follow */
    size_t chunk_size;
    size_t max;   /* cap on bytes handed out; 0 = none */
    size_t total; /* bytes handed out since the last reset */
};

ir_arena *ir_arena_new(size_t chunk_size, size_t max) {
    ir_arena *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->chunk_size = chunk_size ? chunk_size : 4096;
    a->max = max;
    return a;
}

static void free_chunks(chunk *c) {
    while (c) {
        chunk *n = c->next;
        free(c);
        c = n;
    }
}

void ir_arena_free(ir_arena *a) {
    if (!a) return;
    free_chunks(a->head);
    free(a);
}

void ir_arena_reset(ir_arena *a) {
    /* Keep the first chunk allocated (the most recent one) to avoid churn. */
    if (!a->head) return;
    free_chunks(a->head->next);
    a->head->next = NULL;
    a->head->used = 0;
    a->total = 0;
}

void *ir_arena_alloc(ir_arena *a, size_t n) {
    size_t need = (n + 15) & ~(size_t)15;
    if (need < n) return NULL;
    if (a->max && (need > a->max || a->total > a->max - need)) return NULL;
    chunk *c = a->head;
    if (!c || c->size - c->used < need) {
        size_t sz = need > a->chunk_size ? need : a->chunk_size;
        chunk *nc = malloc(sizeof *nc + sz);
        if (!nc) return NULL;
        nc->size = sz;
        nc->used = 0;
        if (c && need > a->chunk_size) {
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
