/* buf.c: growable byte buffers that refuse to grow past their cap. */
#include "core/ir_core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ir_buf_init(ir_buf *b, size_t max) {
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max ? max : SIZE_MAX - 1;
}

void ir_buf_fixed(ir_buf *b, char *mem, size_t size) {
    /* cap = max + 1: ir_buf_reserve refuses before it would realloc */
    b->data = mem;
    b->len = 0;
    b->cap = size;
    b->max = size - 1;
    mem[0] = '\0';
}

void ir_buf_free(ir_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void ir_buf_reset(ir_buf *b) {
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

void ir_buf_rearm(ir_buf *b, size_t max, size_t keep) {
    b->max = max ? max : SIZE_MAX - 1;
    if (b->cap > keep || b->cap > b->max + 1) ir_buf_free(b);
    ir_buf_reset(b);
}

int ir_buf_reserve(ir_buf *b, size_t extra) {
    if (extra > b->max || b->len > b->max - extra) return -1;
    size_t need = b->len + extra + 1; /* room for the NUL */
    if (need <= b->cap) return 0;
    size_t ncap = b->cap ? b->cap : 64;
    while (ncap < need) ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
    if (ncap > b->max + 1) ncap = b->max + 1;
    if (ncap < need) return -1;
    char *p = realloc(b->data, ncap);
    if (!p) return -1;
    b->data = p;
    b->cap = ncap;
    return 0;
}

int ir_buf_append_slow(ir_buf *b, const void *p, size_t n) {
    if (ir_buf_reserve(b, n) != 0) return -1;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int ir_buf_append_uint(ir_buf *b, uint64_t v) {
    char d[20];
    size_t i = sizeof d;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return ir_buf_append(b, d + i, sizeof d - i);
}

int ir_buf_append_str(ir_buf *b, const char *s) {
    return ir_buf_append(b, s, strlen(s));
}

int ir_buf_vappendf(ir_buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap2);
    va_end(ap2);
    if (n < 0) return -1;
    if ((size_t)n < sizeof small) return ir_buf_append(b, small, (size_t)n);
    if (ir_buf_reserve(b, (size_t)n) != 0) return -1;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int ir_buf_appendf(ir_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = ir_buf_vappendf(b, fmt, ap);
    va_end(ap);
    return r;
}

void ir_buf_consume(ir_buf *b, size_t n) {
    if (n >= b->len) {
        ir_buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *ir_buf_steal(ir_buf *b, size_t *len) {
    char *p = b->data;
    if (len) *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
