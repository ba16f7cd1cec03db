/* fuzz_jflat: arbitrary bytes read by jflat.c (irt_jflat_object, the reader
 * of flat objects of strings, and irt_jfast_loadb, the reader of any JSON text
 * that irt_json_loads and the parse cache try first) and by json_loadb, with the
 * gateway's flags and with others (picked by the last byte): jflat declines, or
 * jansson reads the same value with its members in the same order (compared as
 * jansson prints them); jflat never reads what jansson refuses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/jscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void compare_with(json_t *(*reader)(const char *, size_t, size_t), const char *s, size_t n,
                         size_t flags) {
    json_error_t e;
    json_t *got = reader(s, n, flags);
    if (!got) return;
    json_t *want = json_loadb(s, n, flags, &e);
    if (!want) abort();
    char *a = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
    char *b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!a || !b || strcmp(a, b)) abort();
    free(a);
    free(b);
    json_decref(want);
    json_decref(got);
}

static void compare(const char *s, size_t n, size_t flags) {
    compare_with(irt_jflat_object, s, n, flags);
    compare_with(irt_jfast_loadb, s, n, flags);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const size_t other[] = {0, JSON_DECODE_ANY, JSON_ALLOW_NUL, JSON_REJECT_DUPLICATES,
                                   JSON_DISABLE_EOF_CHECK};
    const char *s = (const char *)data;
    compare(s, size, JSON_ALLOW_NUL | JSON_DECODE_ANY);
    compare(s, size, size ? other[data[size - 1] % 5] : 0);
    return 0;
}
