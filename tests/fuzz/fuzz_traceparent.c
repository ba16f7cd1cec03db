/* fuzz_traceparent: the W3C traceparent reader (src/obs/trace.c) on arbitrary
 * bytes, given by length with no NUL after them. What it accepts must format
 * back to a header that parses to the same ids, with non-zero ids, and for
 * version 00 to the input's 55 bytes themselves (less surrounding blanks). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "obs/ir_obs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size ? size : 1);
    if (!s) return 0;
    memcpy(s, data, size);
    iro_span_ctx c;
    if (iro_traceparent_parse(s, size, &c) == 0) {
        static const uint8_t zero[16];
        if (!memcmp(c.trace_id, zero, 16) || !memcmp(c.span_id, zero, 8)) abort();
        char out[56];
        iro_traceparent_format(&c, out);
        iro_span_ctx d;
        if (iro_traceparent_parse(out, 55, &d) || memcmp(&c, &d, sizeof c)) abort();
        const char *p = s;
        size_t n = size;
        while (n && (*p == ' ' || *p == '\t')) p++, n--;
        if (n >= 55 && p[0] == '0' && p[1] == '0' && memcmp(p, out, 55)) abort();
    }
    free(s);
    return 0;
}
