/* The chat parse cache's structural scanner (src/tokenize/jscan.c): where it
 * splits a body into "messages" elements, and what it leaves to a whole parse
 * (escaped keys, "messages" twice, malformed or truncated bodies, deep nesting). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenize/jscan.h"

/* Scans body; checks the result code and, on OK, the elements' bytes. */
static void expect(const char *body, int rc, const char *const *elems) {
    irt_jscan j;
    int got = irt_jscan_chat(body, strlen(body), &j);
    if (got != rc) fail_msg("%s: rc %d, want %d", body, got, rc);
    if (rc != IRT_JSCAN_OK) {
        assert_null(j.elems);
        return;
    }
    size_t n = 0;
    while (elems[n]) n++;
    if (j.nelems != n) fail_msg("%s: %zu elements, want %zu", body, j.nelems, n);
    for (size_t i = 0; i < n; i++) {
        const irt_jspan *e = &j.elems[i];
        if (e->len != strlen(elems[i]) || memcmp(body + e->off, elems[i], e->len))
            fail_msg("%s: element %zu is '%.*s', want '%s'", body, i, (int)e->len, body + e->off,
                     elems[i]);
    }
    assert_true(j.arr_len >= 2);
    assert_int_equal(body[j.arr_off], '[');
    assert_int_equal(body[j.arr_off + j.arr_len - 1], ']');
    irt_jscan_free(&j);
}

#define ELEMS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void splits_elements(void **state) {
    (void)state;
    expect("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", IRT_JSCAN_OK,
           ELEMS("{\"role\":\"user\",\"content\":\"hi\"}"));
    expect("{\"messages\":[]}", IRT_JSCAN_OK, ELEMS(NULL));
    expect("{\"messages\":[1,\"two\",null,true,-3.5e+2,[],{}]}", IRT_JSCAN_OK,
           ELEMS("1", "\"two\"", "null", "true", "-3.5e+2", "[]", "{}"));
}

static void follows_escapes(void **state) {
    (void)state;
    /* an escaped quote, an escaped backslash before the closing quote, \u escapes */
    expect("{\"messages\":[{\"c\":\"a\\\"]}\"},{\"c\":\"\\\\\"},{\"c\":\"\\u0022]\\\\\\\"\"}]}",
           IRT_JSCAN_OK,
           ELEMS("{\"c\":\"a\\\"]}\"}", "{\"c\":\"\\\\\"}", "{\"c\":\"\\u0022]\\\\\\\"\"}"));
    /* a key and a value made of backslashes only */
    expect("{\"messages\":[\"\\\\\\\\\",\"\\\\\"],\"x\":\"\\\\\"}", IRT_JSCAN_OK,
           ELEMS("\"\\\\\\\\\"", "\"\\\\\""));
}

static void nested_and_brackets_in_strings(void **state) {
    (void)state;
    expect("{\"messages\":[{\"content\":[{\"type\":\"text\",\"text\":\"[{]}\"}],\"x\":[1,[2,[3]]]},"
           "[[],{\"a\":{\"b\":[]}}],\"]\",\"}\"],\"tools\":[{\"f\":\"]\"}]}",
           IRT_JSCAN_OK,
           ELEMS("{\"content\":[{\"type\":\"text\",\"text\":\"[{]}\"}],\"x\":[1,[2,[3]]]}",
                 "[[],{\"a\":{\"b\":[]}}]", "\"]\"", "\"}\""));
    /* "messages" as a string inside another value is not the key */
    expect("{\"x\":{\"messages\":[1]},\"y\":\"\\\"messages\\\":[2]\"}", IRT_JSCAN_NONE, NULL);
}

static void white_space(void **state) {
    (void)state;
    expect(" \t\r\n{ \"messages\" \n:\t[ \r\n{ \"a\" : 1 } ,\n{\"b\":2}\t] , \"x\" : 1 } \n",
           IRT_JSCAN_OK, ELEMS("{ \"a\" : 1 }", "{\"b\":2}"));
    expect("{\"messages\":[ ]}", IRT_JSCAN_OK, ELEMS(NULL));
}

static void doubts(void **state) {
    (void)state;
    static const char *const bad[] = {
        "{\"messages\":[1],\"messages\":[2]}",   /* twice: jansson keeps the last */
        "{\"messages\":\"x\",\"messages\":[2]}", /* twice, the first not a list */
        "{\"messag\\u0065s\":[1]}",              /* an escaped key */
        "{\"a\\\"\":1,\"messages\":[1]}",        /* any escaped top-level key */
        "[{\"messages\":[1]}]",                  /* not an object */
        "\"messages\"",                          /* nor this */
        "",                                      /* empty */
        "{\"messages\":[1,]}",                   /* a trailing comma */
        "{\"messages\":[,1]}",                   /* a leading one */
        "{\"messages\":[{\"a\":1} {\"b\":2}]}",  /* no comma */
        "{\"messages\":[1]} x",                  /* after the object */
        "{\"messages\":[1]}{}",                  /* two objects */
        "{\"messages\":[1],}",                   /* a trailing comma in the object */
        "{\"messages\" [1]}",                    /* no colon */
        "{messages:[1]}",                        /* a bare key */
        "{\"messages\":[\"abc]}",                /* a string that does not end */
        "{\"messages\":[{\"a\":[1,2}]}",         /* brackets that never close */
        "{\"messages\":[1]",                     /* the object not closed */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) expect(bad[i], IRT_JSCAN_DOUBT, NULL);
    expect("{}", IRT_JSCAN_NONE, NULL);
    expect("{\"model\":\"m\",\"prompt\":\"[1]\"}", IRT_JSCAN_NONE, NULL);
    expect("{\"messages\":null}", IRT_JSCAN_NONE, NULL);
    expect("{\"messages\":{\"0\":1}}", IRT_JSCAN_NONE, NULL);
}

/* Every proper prefix of a body that ends at its '}' is a doubt. */
static void truncated(void **state) {
    (void)state;
    const char *body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"a\\\"b\\\\\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"]}\"}]}],"
        "\"n\":-1.5e3,\"t\":true}";
    size_t n = strlen(body);
    for (size_t k = 0; k < n; k++) {
        irt_jscan j;
        int rc = irt_jscan_chat(body, k, &j);
        if (rc != IRT_JSCAN_DOUBT) fail_msg("prefix of %zu bytes: rc %d", k, rc);
    }
    expect(body, IRT_JSCAN_OK,
           ELEMS("{\"role\":\"system\",\"content\":\"a\\\"b\\\\\"}",
                 "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"]}\"}]}"));
}

/* Nesting past IRT_JSCAN_MAX_DEPTH anywhere is a doubt; up to it, a split. */
static void depth(void **state) {
    (void)state;
    for (int extra = -1; extra <= 1; extra++) {
        /* the object and the array are 2 levels; the element adds d */
        size_t d = IRT_JSCAN_MAX_DEPTH - 2 + (size_t)(extra + 1);
        size_t n = 16 + 2 * d + 2;
        char *b = malloc(n);
        size_t k = (size_t)snprintf(b, n, "{\"messages\":[");
        for (size_t i = 0; i < d; i++) b[k++] = '[';
        for (size_t i = 0; i < d; i++) b[k++] = ']';
        b[k++] = ']';
        b[k++] = '}';
        irt_jscan j;
        int rc = irt_jscan_chat(b, k, &j);
        assert_int_equal(rc, 2 + d <= IRT_JSCAN_MAX_DEPTH ? IRT_JSCAN_OK : IRT_JSCAN_DOUBT);
        irt_jscan_free(&j);
        free(b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(splits_elements),
        cmocka_unit_test(follows_escapes),
        cmocka_unit_test(nested_and_brackets_in_strings),
        cmocka_unit_test(white_space),
        cmocka_unit_test(doubts),
        cmocka_unit_test(truncated),
        cmocka_unit_test(depth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
