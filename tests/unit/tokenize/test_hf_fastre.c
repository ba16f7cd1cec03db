/* The hand-written pre-tokenizer matchers (hf_fastre.c) against PCRE2
 * running the same regexes: the character classes on every code point, the
 * matches on the golden texts, on every code point in a few contexts, and
 * on random strings (letters, numbers, white space and newline runs,
 * contractions in any case, supplementary-plane characters; for o200k,
 * letters of each case, modifier letters and marks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tokenize/hf_internal.h"

static const char *const patterns[] = {
    /* Qwen2 / Qwen3 */
    ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
    /* Llama 3 */
    ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
    /* GPT-2 (ByteLevel use_regex) */
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
    /* o200k (gpt-oss) */
    ("[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+"
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
     "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
};
#define NPAT 4

typedef struct pair {
    hf_pattern fast, slow; /* slow: the same compiled regex with the matcher off */
} pair;

static pair g_pat[NPAT];
static pcre2_match_data *g_md;
static hf_match *g_m1, *g_m2;
static size_t g_c1, g_c2;

static int setup(void **state) {
    (void)state;
    char err[256];
    for (int i = 0; i < NPAT; i++) {
        if (hf_pattern_compile(&g_pat[i].fast, patterns[i], strlen(patterns[i]), false, err,
                               sizeof(err)))
            return -1;
        if (!g_pat[i].fast.fast) return -1; /* must be detected */
        g_pat[i].slow = g_pat[i].fast;
        g_pat[i].slow.fast = FAST_NONE;
    }
    g_md = pcre2_match_data_create(4, NULL);
    return g_md ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    for (int i = 0; i < NPAT; i++) hf_pattern_free(&g_pat[i].fast);
    pcre2_match_data_free(g_md);
    free(g_m1);
    free(g_m2);
    return 0;
}

static void check_same(const char *s, size_t len) {
    for (int p = 0; p < NPAT; p++) {
        size_t n1 = 0, n2 = 0;
        assert_int_equal(hf_pattern_find(&g_pat[p].fast, s, len, &g_m1, &n1, &g_c1, g_md), 0);
        assert_int_equal(hf_pattern_find(&g_pat[p].slow, s, len, &g_m2, &n2, &g_c2, g_md), 0);
        bool same = n1 == n2;
        for (size_t i = 0; same && i < n1; i++)
            same = g_m1[i].start == g_m2[i].start && g_m1[i].end == g_m2[i].end;
        if (!same) {
            fprintf(stderr, "pattern %d differs on (%zu bytes):", p, len);
            for (size_t i = 0; i < len && i < 200; i++)
                fprintf(stderr, " %02X", (unsigned char)s[i]);
            fprintf(stderr, "\n fast:");
            for (size_t i = 0; i < n1; i++)
                fprintf(stderr, " [%zu,%zu)", g_m1[i].start, g_m1[i].end);
            fprintf(stderr, "\n pcre:");
            for (size_t i = 0; i < n2; i++)
                fprintf(stderr, " [%zu,%zu)", g_m2[i].start, g_m2[i].end);
            fprintf(stderr, "\n");
            fail();
        }
    }
}

/* re[0..n) compiled from pats, as PCRE2 matches code points (UTF, UCP). */
static void compile_classes(const char *const *pats, pcre2_code **re, int n) {
    for (int i = 0; i < n; i++) {
        int ec;
        PCRE2_SIZE eo;
        re[i] = pcre2_compile((PCRE2_SPTR)pats[i], PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                              &ec, &eo, NULL);
        assert_non_null(re[i]);
    }
}

/* The class of every code point agrees with PCRE2's, or is "unsure". */
static void test_classes(void **state) {
    (void)state;
    static const char *const cls_re[3] = {"^\\p{L}$", "^\\p{N}$", "^[\\s\\x{85}]$"};
    pcre2_code *re[3];
    compile_classes(cls_re, re, 3);
    size_t unsure_bmp = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        char b[4];
        int n = hf_utf8_enc(cp, b);
        int want = 0; /* other */
        for (int i = 0; i < 3; i++)
            if (pcre2_match(re[i], (PCRE2_SPTR)b, (size_t)n, 0, 0, g_md, NULL) >= 0) want = i + 1;
        int got = hf_fast_class(cp);
        if (got == 4) {
            unsure_bmp += cp < 0x10000;
            continue;
        }
        if (got != want) fail_msg("U+%04X: class %d, PCRE2 %d", cp, got, want);
    }
    assert_int_equal(unsure_bmp, 0);
    for (int i = 0; i < 3; i++) pcre2_code_free(re[i]);
}

/* o200k's class sets of every code point agree with PCRE2's, or are "unsure". */
static void test_classes_o200k(void **state) {
    (void)state;
    static const char *const cls_re[6] = {"^[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]$",
                                          "^[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]$",
                                          "^[^\\s\\x{85}\\p{L}\\p{N}]$",
                                          "^[^\\r\\n\\p{L}\\p{N}]$",
                                          "^\\p{N}$",
                                          "^[\\s\\x{85}]$"};
    pcre2_code *re[6];
    compile_classes(cls_re, re, 6);
    size_t unsure_bmp = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        char b[4];
        int n = hf_utf8_enc(cp, b);
        int want = 0;
        for (int i = 0; i < 6; i++)
            if (pcre2_match(re[i], (PCRE2_SPTR)b, (size_t)n, 0, 0, g_md, NULL) >= 0) want |= 1 << i;
        int got = hf_fast_class_o200k(cp);
        if (got == 64) {
            unsure_bmp += cp < 0x10000;
            continue;
        }
        if (got != want) fail_msg("U+%04X: o200k classes %#x, PCRE2 %#x", cp, got, want);
    }
    assert_true(unsure_bmp <= 2); /* the two marks Unicode 15 added to the BMP */
    for (int i = 0; i < 6; i++) pcre2_code_free(re[i]);
}

/* Every code point in contexts that reach each alternative. */
static void test_every_code_point(void **state) {
    (void)state;
    static const char *const ctx[][2] = {
        {"'", "a "},   {" ", "\n"},     {"x", "1 "},  {"", "  b"},
        {"\n ", "'s"}, {"9", "\r\n\t"}, {"A", "b'S"}, {"a", "B/\n/"},
    };
    char buf[64];
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        if (cp >= 0x10000 && cp % 7) continue; /* a sample of the supplementary planes */
        char b[4];
        int n = hf_utf8_enc(cp, b);
        for (size_t k = 0; k < sizeof(ctx) / sizeof(ctx[0]); k++) {
            size_t len = 0, a = strlen(ctx[k][0]), z = strlen(ctx[k][1]);
            memcpy(buf, ctx[k][0], a);
            len += a;
            memcpy(buf + len, b, (size_t)n);
            len += (size_t)n;
            memcpy(buf + len, b, (size_t)n);
            len += (size_t)n;
            memcpy(buf + len, ctx[k][1], z);
            len += z;
            check_same(buf, len);
        }
    }
}

/* Each text of a golden file: {"text"} lines (texts.jsonl, and gpt-oss's own
 * texts after their header line). */
static size_t check_file(const char *name) {
    const char *f = getenv("IR_FIXTURES");
    char path[4096];
    snprintf(path, sizeof(path), "%s/tokenizers/%s", f && *f ? f : "tests/fixtures", name);
    FILE *fp = fopen(path, "r");
    if (!fp) fail_msg("cannot open %s", path);
    char *line = NULL;
    size_t cap = 0, count = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, fp)) > 0) {
        json_error_t e;
        json_t *o = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &e);
        assert_non_null(o);
        json_t *t = json_object_get(o, "text");
        if (t) {
            check_same(json_string_value(t), json_string_length(t));
            count++;
        }
        json_decref(o);
    }
    free(line);
    fclose(fp);
    return count;
}

static void test_golden_texts(void **state) {
    (void)state;
    assert_true(check_file("texts.jsonl") >= 1000);
    assert_true(check_file("gptoss-extra.jsonl") >= 1000);
}

static uint64_t g_rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(uint32_t n) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng % n);
}

static void test_random(void **state) {
    (void)state;
    /* Weighted toward what the alternatives care about. */
    static const uint32_t alpha[] = {
        'a',
        'b',
        'z',
        'A',
        'Q',
        's',
        'S',
        't',
        'T',
        'r',
        'R',
        'e',
        'E',
        'v',
        'V',
        'm',
        'M',
        'l',
        'L',
        'd',
        'D',
        'k',
        '\'',
        '\'',
        '\'',
        ' ',
        ' ',
        ' ',
        ' ',
        '\t',
        '\n',
        '\n',
        '\r',
        '\v',
        '\f',
        '0',
        '7',
        '9',
        '.',
        ',',
        '!',
        '-',
        '_',
        '"',
        '(',
        '#',
        0x7F,
        0x01,
        0x85,
        0xA0,
        0xB2,
        0xBD,
        0xE9,
        0xDF,
        0x17F,
        0x212A,
        0x301,
        0x5D0,
        0x627,
        0x661,
        0x6F1,
        0x900,
        0x966,
        0x1680,
        0x180E,
        0x2003,
        0x200B,
        0x200D,
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x2160,
        0x216B,
        0x3000,
        0x3001,
        0x3042,
        0x4E00,
        0x9FA5,
        0xAC00,
        0xFF10,
        0xFF21,
        0xFEFF,
        0xFFFD,
        0x10400,
        0x1D7CE,
        0x1F600,
        0x1F3FB,
        0x1F468,
        0x11F04,
        0x11F50,
        0x31350,
        0xE0001,
        0x10FFFD,
        /* o200k: case, titlecase, modifier letters, marks, '/', new marks */
        'B',
        'H',
        'X',
        '/',
        '/',
        0xC9,
        0x1C4,
        0x1C5,
        0x1C6,
        0x2B0,
        0x2C6,
        0x903,
        0x20DD,
        0x0CF3,
        0x0ECE,
        0x10428,
        0x1D400,
        0x1D44E,
        0x11F00,
        0x16F51,
    };
    const size_t na = sizeof(alpha) / sizeof(alpha[0]);
    char buf[512];
    for (int iter = 0; iter < 200000; iter++) {
        size_t len = 0, nch = rnd(40);
        for (size_t i = 0; i < nch; i++) {
            uint32_t cp;
            switch (rnd(8)) {
            case 0: /* any code point */
                do cp = rnd(0x110000);
                while (cp >= 0xD800 && cp <= 0xDFFF);
                break;
            case 1: /* any BMP code point */
                do cp = rnd(0x10000);
                while (cp >= 0xD800 && cp <= 0xDFFF);
                break;
            case 2: /* a contraction, in any case */
            {
                static const char *const con[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
                const char *c = con[rnd(7)];
                for (; *c; c++) buf[len++] = (char)(rnd(2) ? *c : (*c >= 'a' ? *c - 32 : *c));
                continue;
            }
            default:
                cp = alpha[rnd((uint32_t)na)];
            }
            len += (size_t)hf_utf8_enc(cp, buf + len);
        }
        check_same(buf, len);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes),          cmocka_unit_test(test_classes_o200k),
        cmocka_unit_test(test_every_code_point), cmocka_unit_test(test_golden_texts),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
