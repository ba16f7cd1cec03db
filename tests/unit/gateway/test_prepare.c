/* gw_prompt_tokenize and gw_prompt_hash: the body's cache_salt salts the chain with
 * all of its bytes. A JSON string may hold NULs: "a\u0000b" and "a\u0000c" are
 * different salts and must give different chains (strdup cut both at the NUL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "gateway/request.h"

static void hash_body(const char *salt_json, gw_prompt *p) {
    static gw_model_cfg mc = {.name = "m"};
    gw_model m = {.cfg = &mc, .tok = GW_TOK_SIM};
    gw_tokset sim = {.kind = GW_TOK_SIM};
    gw_fleet f = {.block_size = 4};
    char body[512];
    snprintf(body, sizeof body,
             "{\"model\":\"m\",%s\"prompt\":\"one two three four five six seven eight nine ten "
             "eleven twelve thirteen fourteen fifteen sixteen\"}",
             salt_json);
    gw_prompt_tokenize(&sim, body, strlen(body), false, p);
    assert_int_equal(p->state, GW_PREDICT_OK);
    gw_prompt_hash(&f, &m, p);
    assert_true(p->nhashes >= 2);
}

static bool same_chain(const char *s1, const char *s2) {
    gw_prompt a, b;
    hash_body(s1, &a);
    hash_body(s2, &b);
    bool eq = a.nhashes == b.nhashes && ir_hash128_eq(a.hashes[0], b.hashes[0]);
    gw_prompt_free(&a);
    gw_prompt_free(&b);
    return eq;
}

static void salts_keep_their_nuls(void **state) {
    assert_false(same_chain("\"cache_salt\":\"a\\u0000b\",", "\"cache_salt\":\"a\\u0000c\","));
    assert_false(same_chain("\"cache_salt\":\"a\\u0000b\",", "\"cache_salt\":\"a\","));
    assert_true(same_chain("\"cache_salt\":\"a\\u0000b\",", "\"cache_salt\":\"a\\u0000b\","));
    /* the salt is kept whole, with its length */
    gw_prompt p;
    hash_body("\"cache_salt\":\"x\\u0000yz\",", &p);
    assert_int_equal(p.cache_salt_len, 4);
    assert_memory_equal(p.cache_salt, "x\0yz", 4);
    gw_prompt_free(&p);
}

static void salts_separate_and_absent_differs(void **state) {
    assert_false(same_chain("\"cache_salt\":\"s1\",", "\"cache_salt\":\"s2\","));
    assert_false(same_chain("", "\"cache_salt\":\"\","));
    assert_true(same_chain("", ""));
}

/* The session key the policy sees: x-session-id, else the body's user. */
static void session_from_header_or_user(void **state) {
    gw_prompt p;
    hash_body("\"user\":\"alice\",", &p);
    irp_request q;
    gw_policy_request_of(&p, p.ids.len, 4, NULL, &q);
    assert_int_equal(q.session_len, 5);
    assert_memory_equal(q.session, "alice", 5);
    irn_header hs[] = {{"Accept", 6, "*/*", 3}, {"X-Session-Id", 12, "chat-42", 7}};
    const char *s;
    size_t n;
    gw_session_of(hs, 2, &p, &s, &n);
    assert_int_equal(n, 7);
    assert_memory_equal(s, "chat-42", 7);
    gw_session_of(hs, 1, &p, &s, &n); /* no header: the user */
    assert_int_equal(n, 5);
    assert_memory_equal(s, "alice", 5);
    irn_header empty[] = {{"x-session-id", 12, "", 0}};
    gw_session_of(empty, 1, &p, &s, &n); /* an empty header is no key */
    assert_int_equal(n, 5);
    gw_prompt_free(&p);
    /* neither: none; an empty user is none too */
    hash_body("\"user\":\"\",", &p);
    gw_session_of(NULL, 0, &p, &s, &n);
    assert_null(s);
    assert_int_equal(n, 0);
    gw_policy_request_of(&p, p.ids.len, 4, NULL, &q);
    assert_null(q.session);
    gw_prompt_free(&p);
}

/* Bodies over inline_bytes stay on the loop only while the worker's recent
 * preparations were cheap; one costly body sends the next ones to the threads
 * again, and cheap ones bring them back. */
static void warm_bodies_stay_on_the_loop(void **state) {
    (void)state;
    gw_tokenizer_cfg c = {
        .inline_bytes = 1024, .inline_warm_bytes = 64 * 1024, .inline_warm_ns = 50000};
    assert_true(gw_prep_on_loop(&c, 1000, 0));
    assert_false(gw_prep_on_loop(&c, 13000, 0)); /* nothing measured yet */
    double avg = gw_prep_average(0, 30000);
    assert_true(avg == 30000.0);
    assert_true(gw_prep_on_loop(&c, 13000, avg));
    assert_false(gw_prep_on_loop(&c, 65 * 1024, avg)); /* over inline_warm_bytes */
    avg = gw_prep_average(avg, 1000000);               /* a cold 8,000-token chat */
    assert_false(gw_prep_on_loop(&c, 13000, avg));
    for (int i = 0; i < 40; i++) avg = gw_prep_average(avg, 30000);
    assert_true(gw_prep_on_loop(&c, 13000, avg));
    c.inline_warm_ns = 0; /* off */
    assert_false(gw_prep_on_loop(&c, 13000, avg));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(salts_keep_their_nuls),
                                       cmocka_unit_test(salts_separate_and_absent_differs),
                                       cmocka_unit_test(session_from_header_or_user),
                                       cmocka_unit_test(warm_bodies_stay_on_the_loop)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
