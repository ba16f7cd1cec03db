/* Hostile chat bodies through the whole chat path of the prepare stage (the body
 * parsed, prepared as vLLM prepares it, rendered by the model's template, then
 * tokenized), for Qwen3 and Llama 3.1: a 4 MiB message, 50,000 messages, 1,000
 * tools, and tool-call arguments nested 10,000 levels (as a JSON string, and as
 * an object inside the body) and 2,000 levels. Each is tokenized, with the ids
 * it must have, or refused with a reason; none crashes (this runs under ASan
 * too). How long each takes is bench/tokenizer/chat.sh's business, not this
 * test's. The bodies are those of the benchmark (hostile_chats.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenize/chat_models.h"
#include "tokenize/hostile_chats.h"
#include "tokenize/ir_tokenize.h"

/* What the path made of one body. */
typedef struct outcome {
    int rc; /* IRT_*, or 1: the body is not JSON */
    char err[256];
    ir_buf text;
    irt_ids ids;
} outcome;

static void run(const chat_model *f, char *body, outcome *o) {
    assert_non_null(body);
    memset(o, 0, sizeof *o);
    ir_buf_init(&o->text, (size_t)1 << 30);
    json_error_t je;
    json_t *doc = json_loadb(body, strlen(body), JSON_ALLOW_NUL, &je);
    free(body);
    if (!doc) {
        o->rc = 1;
        snprintf(o->err, sizeof o->err, "%s", je.text);
        return;
    }
    o->rc = irt_chat_render(f->chat, doc, &o->text, o->err, sizeof o->err);
    json_decref(doc);
    if (o->rc == IRT_OK) o->rc = irt_encode(f->t, o->text.data, o->text.len, false, &o->ids);
}

static void done(outcome *o) {
    ir_buf_free(&o->text);
    irt_ids_free(&o->ids);
}

static size_t count_id(const irt_ids *v, int64_t id) {
    size_t n = 0;
    for (size_t i = 0; i < v->len; i++) n += v->ids[i] == (uint32_t)id;
    return n;
}

static int64_t id_of(const chat_model *f, const char *tok) {
    int64_t id = irt_token_to_id(f->t, tok, strlen(tok));
    assert_true(id >= 0);
    return id;
}

static void big_message(void **state) {
    (void)state;
    const size_t bytes = (size_t)4 << 20;
    for (size_t i = 0; i < NFAM; i++) {
        outcome o;
        run(&FAMILIES[i], hc_big_message("m", bytes), &o);
        if (o.rc != IRT_OK) fail_msg("%s: %s (%d)", FAMILIES[i].model, o.err, o.rc);
        char *msg = hc_prose(bytes, 3); /* the message, whole, in the text */
        assert_non_null(memmem(o.text.data, o.text.len, msg, strlen(msg)));
        /* English prose: between 3 and 8 bytes a token */
        assert_in_range(o.ids.len, bytes / 8, bytes / 3);
        assert_int_equal(count_id(&o.ids, id_of(&FAMILIES[i], FAMILIES[i].turn_start)), 2);
        free(msg);
        done(&o);
    }
}

static void many_messages(void **state) {
    (void)state;
    for (size_t i = 0; i < NFAM; i++) {
        outcome o;
        run(&FAMILIES[i], hc_many_messages("m", 50000), &o);
        if (o.rc != IRT_OK) fail_msg("%s: %s (%d)", FAMILIES[i].model, o.err, o.rc);
        /* every message opens a turn, and so does the generation prompt */
        assert_int_equal(count_id(&o.ids, id_of(&FAMILIES[i], FAMILIES[i].turn_start)), 50001);
        assert_non_null(memmem(o.text.data, o.text.len, "turn 49999:", 11));
        done(&o);
    }
}

static void many_tools(void **state) {
    (void)state;
    for (size_t i = 0; i < NFAM; i++) {
        outcome o;
        run(&FAMILIES[i], hc_many_tools("m", 1000), &o);
        if (o.rc != IRT_OK) fail_msg("%s: %s (%d)", FAMILIES[i].model, o.err, o.rc);
        assert_true(o.ids.len > 0);
        /* Qwen3's template lists every tool; the Llama 3.1 package's template is
         * Llama 3's, which ignores tools */
        if (!strcmp(FAMILIES[i].model, "qwen3")) {
            assert_non_null(memmem(o.text.data, o.text.len, "\"tool_0\"", 8));
            assert_non_null(memmem(o.text.data, o.text.len, "\"tool_999\"", 10));
            assert_true(o.ids.len > 50000);
        }
        done(&o);
    }
}

/* Nested 10,000 levels as a JSON string (as clients send arguments): the body
 * parses, the arguments do not (past jansson's depth), and become {} as chat.c
 * makes an argument string that does not parse. Tokenized. */
static void nested_arguments_string(void **state) {
    (void)state;
    for (size_t i = 0; i < NFAM; i++) {
        outcome o;
        run(&FAMILIES[i], hc_nested_arguments("m", 10000, 1), &o);
        if (o.rc != IRT_OK) fail_msg("%s: %s (%d)", FAMILIES[i].model, o.err, o.rc);
        assert_true(o.ids.len > 0);
        assert_null(memmem(o.text.data, o.text.len, "{\"a\": {\"a\"", 10));
        done(&o);
    }
}

/* Nested 10,000 levels inside the body: the body itself is refused (jansson's
 * parser stops at JSON_PARSER_MAX_DEPTH, 2,048) before anything else runs. */
static void nested_arguments_object(void **state) {
    (void)state;
    for (size_t i = 0; i < NFAM; i++) {
        outcome o;
        run(&FAMILIES[i], hc_nested_arguments("m", 10000, 0), &o);
        assert_int_equal(o.rc, 1);
        assert_non_null(strstr(o.err, "depth"));
        done(&o);
    }
}

/* Nested 2,000 levels inside the body: it parses, and the template engine
 * refuses the input past its own bound (256 levels), with a reason. */
static void nested_arguments_2000(void **state) {
    (void)state;
    for (size_t i = 0; i < NFAM; i++) {
        outcome o;
        run(&FAMILIES[i], hc_nested_arguments("m", 2000, 0), &o);
        assert_int_equal(o.rc, IRT_ETEMPLATE);
        assert_non_null(strstr(o.err, "nested too deeply"));
        assert_int_equal(o.ids.len, 0);
        done(&o);
    }
}

/* The same chat at a depth the engine follows: tokenized, the arguments
 * printed by the template. */
static void nested_arguments_shallow(void **state) {
    (void)state;
    outcome o;
    run(&FAMILIES[0], hc_nested_arguments("m", 20, 1), &o);
    if (o.rc != IRT_OK) fail_msg("qwen3: %s (%d)", o.err, o.rc);
    assert_non_null(memmem(o.text.data, o.text.len, "{\"a\": {\"a\": {\"a\"", 16));
    done(&o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(big_message),
        cmocka_unit_test(many_messages),
        cmocka_unit_test(many_tools),
        cmocka_unit_test(nested_arguments_string),
        cmocka_unit_test(nested_arguments_object),
        cmocka_unit_test(nested_arguments_2000),
        cmocka_unit_test(nested_arguments_shallow),
    };
    return cmocka_run_group_tests(tests, chat_models_setup, chat_models_teardown);
}
