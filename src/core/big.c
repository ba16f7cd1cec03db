/* big.c: zeroed blocks for big tables; from 1 MiB up, 2 MiB-aligned mappings
 * with transparent huge pages requested (see ir_core.h). */
#include "core/ir_core.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define IR_HUGE    ((size_t)2 << 20)
#define BIG_HEADER 64
typedef struct big_hdr {
    void *base;
    size_t maplen; /* 0: from calloc */
} big_hdr;

void *ir_big_calloc(size_t n) {
    if (n > SIZE_MAX / 2) return NULL;
    size_t total = n + BIG_HEADER;
    char *a;
    big_hdr h;
    if (total < ((size_t)1 << 20)) {
        a = calloc(1, total);
        if (!a) return NULL;
        h = (big_hdr){a, 0};
    } else {
        size_t len = (total + IR_HUGE - 1) & ~(IR_HUGE - 1);
        char *m =
            mmap(NULL, len + IR_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return NULL;
        a = (char *)(((uintptr_t)m + IR_HUGE - 1) & ~(uintptr_t)(IR_HUGE - 1));
        if (a > m) munmap(m, (size_t)(a - m));
        if (m + len + IR_HUGE > a + len) munmap(a + len, (size_t)(m + len + IR_HUGE - (a + len)));
#ifdef MADV_HUGEPAGE
        madvise(a, len, MADV_HUGEPAGE); /* a hint: failure only costs speed */
#endif
        h = (big_hdr){a, len};
    }
    memcpy(a, &h, sizeof(h));
    return a + BIG_HEADER;
}

void *ir_big_grow(void *p, size_t oldn, size_t newn) {
    char *q = ir_big_calloc(newn);
    if (!q) return NULL;
    if (p) {
        memcpy(q, p, oldn < newn ? oldn : newn);
        ir_big_free(p);
    }
    return q;
}

void ir_big_free(void *p) {
    if (!p) return;
    big_hdr h;
    memcpy(&h, (char *)p - BIG_HEADER, sizeof(h));
    if (h.maplen)
        munmap(h.base, h.maplen);
    else
        free(h.base);
}
