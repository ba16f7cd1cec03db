/* ids.c: the growable token id vector shared by every tokenizer. */
#include "tokenize/ir_tokenize.h"

#include <stdlib.h>
#include <string.h>

void irt_ids_init(irt_ids *v) {
    memset(v, 0, sizeof *v);
}

void irt_ids_free(irt_ids *v) {
    free(v->ids);
    memset(v, 0, sizeof *v);
}

int irt_ids_push(irt_ids *v, uint32_t id) {
    if (v->len == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 64;
        uint32_t *p = realloc(v->ids, nc * sizeof *p);
        if (!p) return -1;
        v->ids = p;
        v->cap = nc;
    }
    v->ids[v->len++] = id;
    return 0;
}
