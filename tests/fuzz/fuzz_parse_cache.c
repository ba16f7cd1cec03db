/* fuzz_parse_cache: arbitrary bytes as a chat body read through the chat parse
 * cache (irt_chat_loads, src/tokenize/parse_cache.c) and whole (irt_json_loads):
 * both refuse it, or both read it to equal values (json_equal), cold and then
 * warm. One small cache lives across inputs, so entries from earlier inputs are
 * hit and evicted. */
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    size_t flags = size && (data[0] & 1) ? JSON_ALLOW_NUL : 0;
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
    return 0;
}
