/* fuzz_parse_cache: arbitrary bytes as a chat body read through the chat parse
 * cache (irt_chat_loads, src/tokenize/parse_cache.c) and whole (irt_json_loads):
 * both refuse it, or both read it to equal values (json_equal), cold and then
 * warm, with the gateway's parse flags and with others. One small cache lives across inputs, so
 * entries from earlier inputs are hit and evicted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/ir_tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static irt_parse_cache *cache(void) {
    static irt_parse_cache *c;
    if (!c) c = irt_parse_cache_new(8192);
    return c;
}

static void both_ways(const char *s, size_t size, size_t flags) {
    json_error_t e;
    json_t *whole = irt_json_loads(s, size, flags, &e);
    for (int round = 0; round < 2; round++) {
        irt_parsed p;
        irt_chat_loads(cache(), s, size, flags, &e, &p);
        if (!whole != !p.doc) abort();
        if (whole && !json_equal(whole, p.doc)) abort();
        irt_parsed_release(&p);
    }
    json_decref(whole);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    /* the gateway's flags, then others a caller could pass (picked by the last byte) */
    static const size_t other[] = {0, JSON_DECODE_INT_AS_REAL, JSON_REJECT_DUPLICATES,
                                   JSON_DECODE_ANY, JSON_DISABLE_EOF_CHECK};
    both_ways(s, size, JSON_ALLOW_NUL);
    both_ways(s, size, size ? other[data[size - 1] % 5] : 0);
    return 0;
}
