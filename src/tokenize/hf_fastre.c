/* hf_fastre.c: the hook for hand-written matchers of the common ByteLevel
 * pre-tokenizer regexes (GPT-2, Llama 3, Qwen). None is enabled yet, so
 * every regex runs on PCRE2; a matcher added here must return exactly the
 * matches PCRE2 would. */
#include <string.h>

#include "tokenize/hf_internal.h"

int hf_fast_detect(const char *re, size_t len) {
    (void)re;
    (void)len;
    return FAST_NONE;
}

bool hf_fast_next(int kind, const unsigned char *s, size_t len, size_t pos, size_t *ms,
                  size_t *me) {
    (void)kind;
    (void)s;
    (void)len;
    (void)pos;
    (void)ms;
    (void)me;
    return false;
}
