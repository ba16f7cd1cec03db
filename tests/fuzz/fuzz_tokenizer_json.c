/* fuzz_tokenizer_json: arbitrary tokenizer.json text into the loader. It
 * must load or fail with a message, never crash; what loads must encode. */
#include <stdint.h>
#include <stdlib.h>

#include "tokenize/ir_tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    irt_tokenizer *t = irt_load_json((const char *)data, size, err, sizeof(err));
    if (!t) return 0;
    irt_ids ids = {0};
    static const char text[] = "Hello, world! 123 <s> \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80";
    irt_encode(t, text, sizeof(text) - 1, true, &ids);
    char *out = NULL;
    irt_decode(t, ids.ids, ids.len, false, &out, NULL);
    free(out);
    irt_ids_free(&ids);
    irt_free(t);
    return 0;
}
