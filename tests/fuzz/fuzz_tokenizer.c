/* fuzz_tokenizer: arbitrary bytes into encode and decode of a small
 * tokenizer that exercises added tokens, a normalizer, regex splits and a
 * byte-level BPE. Encode must never crash or read out of bounds; decoding
 * with clean_up_tokenization_spaces must equal a plain rewrite of the
 * transformers clean-up over the uncleaned text. The valid
 * UTF-8 prefix of the input also goes through the hand-written Qwen, Llama 3,
 * GPT-2 and o200k pre-tokenizer matchers, which must find exactly PCRE2's
 * matches. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/hf_internal.h"
#include "tokenize/ir_tokenize.h"

static const char *const fast_res[] = {
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
    /* o200k (gpt-oss) */
    ("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
     "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
};

static void check_fast(const char *s, size_t len) {
    static hf_pattern pats[4];
    static pcre2_match_data *md;
    if (!md) {
        char err[256];
        for (int i = 0; i < 4; i++)
            if (hf_pattern_compile(&pats[i], fast_res[i], strlen(fast_res[i]), false, err,
                                   sizeof(err)) ||
                !pats[i].fast)
                abort();
        md = pcre2_match_data_create(4, NULL);
        if (!md) abort();
    }
    len = hf_utf8_valid_prefix(s, len);
    for (int i = 0; i < 4; i++) {
        hf_pattern slow = pats[i];
        slow.fast = FAST_NONE;
        hf_match *a = NULL, *b = NULL;
        size_t na = 0, nb = 0, ca = 0, cb = 0;
        if (hf_pattern_find(&pats[i], s, len, &a, &na, &ca, md) ||
            hf_pattern_find(&slow, s, len, &b, &nb, &cb, md))
            abort();
        if (na != nb) abort();
        for (size_t k = 0; k < na; k++)
            if (a[k].start != b[k].start || a[k].end != b[k].end) abort();
        free(a);
        free(b);
    }
}

static const char model[] =
    "{\"version\":\"1.0\",\"added_tokens\":["
    "{\"id\":300,\"content\":\"<|end|>\",\"special\":true,\"lstrip\":false,\"rstrip\":false,"
    "\"single_word\":false,\"normalized\":false},"
    "{\"id\":301,\"content\":\"hey\",\"special\":false,\"lstrip\":true,\"rstrip\":true,"
    "\"single_word\":true,\"normalized\":true}],"
    "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},"
    "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s{3,}\"},\"content\":\"  \"}]},"
    "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
    "{\"Regex\":\"(?i:'s|'t)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| "
    "?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
    "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":"
    "false,\"use_regex\":false}]},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":"
    "\"<|end|>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"pair\":[],"
    "\"special_tokens\":{\"<|end|>\":{\"id\":\"<|end|>\",\"ids\":[300],\"tokens\":[\"<|end|>\"]}}},"
    "\"decoder\":{\"type\":\"ByteLevel\"},"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"\\u0120\":2,\"ab\":3,\"\\u0120a\":4,"
    "\"\\u0120ab\":5,\"1\":6,\"11\":7},\"merges\":[\"a b\",\"\\u0120 a\",\"\\u0120a b\",\"1 1\"]}}";

/* transformers' clean_up_tokenization written plainly (memmem, a fresh string
 * per rule), against irt_decode's in-place version. */
static char *clean_ref(const char *s, size_t n, size_t *outn) {
    static const char *const rules[][2] = {
        {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    char *cur = malloc(n + 1);
    if (!cur) abort();
    memcpy(cur, s, n);
    for (size_t r = 0; r < sizeof rules / sizeof *rules; r++) {
        size_t fl = strlen(rules[r][0]), tl = strlen(rules[r][1]), m = 0;
        char *next = malloc(n + 1);
        if (!next) abort();
        const char *p = cur, *end = cur + n, *hit;
        while ((hit = memmem(p, (size_t)(end - p), rules[r][0], fl))) {
            memcpy(next + m, p, (size_t)(hit - p));
            m += (size_t)(hit - p);
            memcpy(next + m, rules[r][1], tl);
            m += tl;
            p = hit + fl;
        }
        memcpy(next + m, p, (size_t)(end - p));
        m += (size_t)(end - p);
        free(cur);
        cur = next;
        n = m;
    }
    *outn = n;
    return cur;
}

static void check_cleanup(irt_tokenizer *plain, irt_tokenizer *clean, const uint32_t *ids,
                          size_t n) {
    char *a = NULL, *b = NULL;
    size_t an, bn, rn;
    if (irt_decode(plain, ids, n, false, &a, &an) || irt_decode(clean, ids, n, false, &b, &bn))
        abort();
    char *want = clean_ref(a, an, &rn);
    if (rn != bn || memcmp(want, b, bn)) abort();
    free(want);
    free(a);
    free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static irt_tokenizer *t, *tc;
    if (!t) {
        char err[256];
        t = irt_load_json(model, sizeof(model) - 1, err, sizeof(err));
        tc = irt_load_json(model, sizeof(model) - 1, err, sizeof(err));
        if (!t || !tc) abort();
        tc->cleanup_spaces = true; /* clean_up_tokenization_spaces (hf_config.c) */
    }
    irt_ids ids = {0};
    for (int special = 0; special < 2; special++) {
        int rc = irt_encode(t, (const char *)data, size, special, &ids);
        if (rc != IRT_OK && rc != IRT_EINVAL) abort();
        char *out = NULL;
        if (irt_decode(t, ids.ids, ids.len, special, &out, NULL) != 0) abort();
        free(out);
    }
    check_cleanup(t, tc, ids.ids, ids.len);
    irt_ids_free(&ids);
    check_fast((const char *)data, size);
    /* Random ids decode safely too. */
    uint32_t rid[16];
    size_t n = size / 4 < 16 ? size / 4 : 16;
    memcpy(rid, data, n * 4);
    char *out = NULL;
    if (irt_decode(t, rid, n, false, &out, NULL) != 0) abort();
    free(out);
    return 0;
}
