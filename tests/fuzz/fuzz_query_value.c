/* fuzz_query_value: the admin port's query decoding (gw_query_value, explain.c's
 * ?path=) on arbitrary bytes, given by length with no NUL after them. Whatever the
 * input: no read past it (ASan); what it accepts is NUL-terminated within the cap,
 * holds no NUL before its end, and is no longer than the input; an input without '%'
 * or NUL decodes to itself, and fits when shorter than the cap. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *v = malloc(size ? size : 1);
    if (!v) return 0;
    memcpy(v, data, size);
    char out[32];
    memset(out, 'x', sizeof out);
    if (gw_query_value(v, size, out, sizeof out)) {
        size_t n = strnlen(out, sizeof out);
        if (n == sizeof out || n > size) abort();
        if (memchr(v, '\0', size)) abort();
        if (!memchr(v, '%', size) && (n != size || memcmp(out, v, size) != 0)) abort();
    } else if (!memchr(v, '%', size) && !memchr(v, '\0', size) && size < sizeof out) {
        abort(); /* a short plain value always fits */
    }
    free(v);
    return 0;
}
