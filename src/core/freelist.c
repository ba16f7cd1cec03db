/* freelist.c: per-loop recycling of fixed-size blocks. */
#include "core/ir_core.h"

#if defined(__SANITIZE_ADDRESS__)
#define IR_FREELIST_KEEPS 0 /* every block goes back to malloc, where ASan watches it */
#else
#define IR_FREELIST_KEEPS 1
#endif

void ir_freelist_init(ir_freelist *f, size_t max) {
    f->head = NULL;
    f->n = 0;
    f->max = IR_FREELIST_KEEPS ? max : 0;
}

void *ir_freelist_pop(ir_freelist *f) {
    void *p = f->head;
    if (!p) return NULL;
    f->head = *(void **)p;
    f->n--;
    return p;
}

bool ir_freelist_push(ir_freelist *f, void *p) {
    if (f->n >= f->max) return false;
    *(void **)p = f->head;
    f->head = p;
    f->n++;
    return true;
}
