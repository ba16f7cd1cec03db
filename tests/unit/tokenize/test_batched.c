/* Long pieces split in batches (hf_encode.c): a split stage whose events are
 * each a piece of their own (Isolated, Removed) finds its matches a batch at a
 * time in a long piece, and runs each batch's pieces before finding the next.
 * The property: the same ids as finding every match at once, for the six real
 * tokenizers, over long texts of prose, code, CJK, emoji and odd white space
 * (texts.jsonl joined, with the families' added tokens among them), batches of
 * 1, 7 and 4,096 matches. And the normalizer's shortcut (a text it would leave
 * alone is not copied): only ever taken when normalizing gives the text back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "tokenize/hf_internal.h"
#include "tokenize/ir_tokenize.h"
#include "tok_texts.h"

#define NTEXTS 600

static const struct {
    const char *model, *special;
} FAMILIES[] = {
    {"qwen3", "<|im_end|>"},
    {"llama3_1", "<|eot_id|>"},
    {"gemma3", "<end_of_turn>"},
    {"deepseek_v3", "<\xef\xbd\x9c"
                    "Assistant\xef\xbd\x9c>"},
    {"llama2", "</s>"},
    {"gptoss", "<|end|>"},
};

/* About `bytes` bytes: texts drawn with a seed, joined by white space runs, now
 * and then the family's added token. malloc'd. */
static char *long_text(char **texts, size_t n, size_t bytes, unsigned seed, const char *special) {
    static const char *const joins[] = {"", " ", "\n", "\n\n", "   ", "\t", " \n ", "\r\n"};
    char *b = malloc(bytes + 70000);
    size_t len = 0;
    while (len < bytes) {
        const char *t = texts[(size_t)rand_r(&seed) % n];
        const char *j = joins[(size_t)rand_r(&seed) % 8];
        if (rand_r(&seed) % 9 == 0) j = special;
        size_t tl = strlen(t), jl = strlen(j);
        if (tl > 60000) continue;
        memcpy(b + len, t, tl);
        memcpy(b + len + tl, j, jl);
        len += tl + jl;
    }
    b[len] = '\0';
    return b;
}

static void assert_same(const irt_ids *a, const irt_ids *b, const char *model, const char *what) {
    if (a->len == b->len && (!a->len || !memcmp(a->ids, b->ids, a->len * sizeof(uint32_t)))) return;
    size_t k = 0;
    while (k < a->len && k < b->len && a->ids[k] == b->ids[k]) k++;
    fail_msg("%s, %s: ids differ at %zu (len %zu against %zu)", model, what, k, b->len, a->len);
}

static void test_batches_give_the_same_ids(void **state) {
    (void)state;
    char *texts[NTEXTS];
    size_t n = load_texts(texts, NTEXTS);
    assert_true(n >= 100);
    static const struct {
        size_t min_bytes, matches;
        const char *what;
    } modes[] = {
        {1, 1, "batches of 1"}, {1, 7, "batches of 7"}, {(size_t)64 << 10, 4096, "default"}};
    for (size_t f = 0; f < sizeof FAMILIES / sizeof *FAMILIES; f++) {
        irt_tokenizer *t = load(FAMILIES[f].model);
        for (unsigned seed = 1; seed <= 3; seed++) {
            char *s = long_text(texts, n, (size_t)96 << 10, seed, FAMILIES[f].special);
            size_t len = strlen(s);
            irt_ids want = {0}, got = {0};
            hf_encode_set_batching(SIZE_MAX, 4096); /* every match at once */
            assert_int_equal(irt_encode(t, s, len, seed % 2, &want), IRT_OK);
            for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
                hf_encode_set_batching(modes[m].min_bytes, modes[m].matches);
                assert_int_equal(irt_encode(t, s, len, seed % 2, &got), IRT_OK);
                assert_same(&want, &got, FAMILIES[f].model, modes[m].what);
            }
            /* and the ordinary path (no added tokens looked for) */
            want.len = got.len = 0;
            hf_encode_set_batching(SIZE_MAX, 4096);
            assert_int_equal(irt_encode_ordinary(t, NULL, s, len, &want), IRT_OK);
            hf_encode_set_batching(1, 3);
            assert_int_equal(irt_encode_ordinary(t, NULL, s, len, &got), IRT_OK);
            assert_same(&want, &got, FAMILIES[f].model, "ordinary, batches of 3");
            irt_ids_free(&want);
            irt_ids_free(&got);
            free(s);
        }
        hf_encode_set_batching((size_t)64 << 10, 4096);
        irt_free(t);
    }
    for (size_t i = 0; i < n; i++) free(texts[i]);
}

/* hf_normalize_keeps(n, s) only when normalizing s gives s, for every family's
 * normalizer and every text (and some that NFC changes). */
static void test_normalizer_shortcut_is_exact(void **state) {
    (void)state;
    char *texts[NTEXTS + 3];
    size_t n = load_texts(texts, NTEXTS);
    texts[n++] = strdup("e\xcc\x81 composed by NFC");        /* e + combining acute */
    texts[n++] = strdup("\xef\xac\x81 a ligature for NFKC"); /* U+FB01 */
    texts[n++] = strdup("plain ASCII, kept by all");
    size_t kept = 0, checked = 0;
    for (size_t f = 0; f < sizeof FAMILIES / sizeof *FAMILIES; f++) {
        irt_tokenizer *t = load(FAMILIES[f].model);
        for (size_t i = 0; t->norm && i < n; i++) {
            size_t len = strlen(texts[i]);
            hf_buf out = {0};
            assert_int_equal(hf_normalize(t->norm, texts[i], len, &out, NULL), 0);
            bool same = out.len == len && (!len || !memcmp(out.p, texts[i], len));
            if (hf_normalize_keeps(t->norm, texts[i], len)) {
                if (!same)
                    fail_msg("%s: kept but normalized differs: %.80s", FAMILIES[f].model, texts[i]);
                kept++;
            }
            checked++;
            hf_buf_free(&out);
        }
        irt_free(t);
    }
    printf("[normalizer] %zu of %zu texts kept as they are\n", kept, checked);
    assert_true(kept > 0);
    for (size_t i = 0; i < n; i++) free(texts[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_give_the_same_ids),
        cmocka_unit_test(test_normalizer_shortcut_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
