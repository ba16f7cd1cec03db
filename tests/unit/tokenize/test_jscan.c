/* The chat parse cache's structural scanner (src/tokenize/jscan.c): where it
 * splits a body into "messages" elements, and what it leaves to a whole parse
 * (escaped keys, "messages" twice, malformed or truncated bodies, deep nesting). */
#include <setjmp.h>
#include <stdbool.h>
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

/* ---- jflat.c: flat objects of strings read without jansson's lexer ---------------- */

/* irt_jflat_object against json_loadb for s: declined, or the same value with
 * its members in the same order (compared as jansson prints them); never read
 * when jansson refuses. Returns whether it was read. */
static bool same_as_jansson_with(json_t *(*reader)(const char *, size_t, size_t), const char *s,
                                 size_t n, size_t flags) {
    json_error_t e;
    json_t *want = json_loadb(s, n, flags, &e);
    json_t *got = reader(s, n, flags);
    bool read = got != NULL;
    if (got) {
        if (!want) fail_msg("read what jansson refuses (%s): %.*s", e.text, (int)n, s);
        char *a = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
        char *b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!a || !b || strcmp(a, b)) fail_msg("%.*s\njansson: %s\njflat:   %s", (int)n, s, a, b);
        free(a);
        free(b);
    }
    json_decref(want);
    json_decref(got);
    return read;
}

static bool same_as_jansson(const char *s, size_t n, size_t flags) {
    /* what the flat reader reads, the general one reads the same way */
    bool flat = same_as_jansson_with(irt_jflat_object, s, n, flags);
    bool any = same_as_jansson_with(irt_jfast_loadb, s, n, flags);
    if (flat && !any) fail_msg("read flat but declined whole: %.*s", (int)n, s);
    return flat;
}

/* The general reader alone against jansson. */
static bool jfast_same(const char *s, size_t n, size_t flags) {
    return same_as_jansson_with(irt_jfast_loadb, s, n, flags);
}

static bool fast_same(const char *s, size_t flags) {
    return jfast_same(s, strlen(s), flags);
}

static void jflat_cases(void **state) {
    (void)state;
    static const struct {
        const char *s;
        bool read;
    } cases[] = {
        {"{\"role\":\"user\",\"content\":\"hello\"}", true},
        {" \t\r\n{ \"role\" : \"user\" , \"content\" : \"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\" }\n",
         true},
        {"{}", true},
        {"{ }", true},
        {"{\"\":\"\"}", true},
        {"{\"a\":\"x\",\"b\":\"y\",\"a\":\"z\"}", true}, /* first place, last value */
        {"{\"c\":\"\\u00e9\\u20ac\\ud83d\\ude00 caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
         true},
        {"{\"c\":\"0123456789abcdefghijklmnopqrstuvwxyz\\u0041BCDEFGHIJKLMNOPQRSTUVWXYZ\"}", true},
        {"{\"c\":\"\\u0000\"}", true}, /* with JSON_ALLOW_NUL */
        {"{\"c\":\"\\ud800\"}", false},
        {"{\"c\":\"\\udc00\"}", false},
        {"{\"c\":\"\\ud800\\u0041\"}", false},
        {"{\"c\":\"\\x41\"}", false},
        {"{\"c\":\"\\u00g1\"}", false},
        {"{\"c\":\"a\nb\"}", false},
        {"{\"c\":\"\x7f\"}", true},
        {"{\"c\":\"\xc0\x80\"}", false},
        {"{\"c\":\"\xed\xa0\x80\"}", false},
        {"{\"c\":\"\xf4\x90\x80\x80\"}", false},
        {"{\"c\":\"\xe2\x82\"}", false},
        {"{\"c\":\"\xff\"}", false},
        {"{\"c\":1}", false},
        {"{\"c\":null}", false},
        {"{\"c\":[\"x\"]}", false},
        {"{\"c\":\"x\",}", false},
        {"{\"c\":\"x\"} x", false},
        {"{\"c\":\"x\"", false},
        {"{\"c\" \"x\"}", false},
        {"{\"k\\u0041\":\"x\"}", false},
        {"{\"caf\xc3\xa9\":\"x\"}", false},
        {"[\"x\"]", false},
        {"\"x\"", false},
        {"", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *s = cases[i].s;
        size_t n = strlen(s);
        if (same_as_jansson(s, n, JSON_ALLOW_NUL | JSON_DECODE_ANY) != cases[i].read)
            fail_msg("case %zu (%s): expected %s", i, s, cases[i].read ? "read" : "declined");
    }
    /* without JSON_ALLOW_NUL, "\u0000" is jansson's to refuse; other flags: declined */
    assert_false(same_as_jansson("{\"c\":\"\\u0000\"}", 14, JSON_DECODE_ANY));
    assert_false(same_as_jansson("{\"a\":\"x\",\"a\":\"y\"}", 17, JSON_REJECT_DUPLICATES));
    assert_false(same_as_jansson("{\"a\":\"x\"} ", 10, JSON_DISABLE_EOF_CHECK));
}

/* Copies text into buf (cap bytes) and applies 1 to 3 random edits: of every
 * eight draws, one replaces a byte with the first of a random piece of bits,
 * `inserts` insert the whole piece, the rest cut the text after a random byte.
 * Returns the new length (no NUL). The same draws of *seed as inline code would. */
static size_t mutate(char *buf, size_t cap, const char *text, const char *const *bits, size_t nbits,
                     int inserts, unsigned *seed) {
    size_t n = strlen(text);
    memcpy(buf, text, n);
    int edits = 1 + rand_r(seed) % 3;
    for (int e = 0; e < edits && n > 2; e++) {
        size_t at = (size_t)rand_r(seed) % n;
        const char *b = bits[(size_t)rand_r(seed) % nbits];
        size_t bl = strlen(b);
        int op = rand_r(seed) % 8;
        if (op == 0) { /* replace one byte */
            buf[at] = b[0];
        } else if (op <= inserts) { /* insert */
            if (n + bl < cap) {
                memmove(buf + at + bl, buf + at, n - at);
                memcpy(buf + at, b, bl);
                n += bl;
            }
        } else { /* cut */
            n = at + 1;
        }
    }
    return n;
}

/* What mutated_reads mutates: each seed 8,000 times with mutate() (its `inserts`,
 * into `cap` bytes, at most 1,024), each result read with JSON_ALLOW_NUL |
 * JSON_DECODE_ANY three times in four, else with `rare_flags`. */
typedef struct mutations {
    const char *const *seeds;
    size_t nseeds;
    const char *const *bits;
    size_t nbits;
    int inserts;
    size_t cap, rare_flags;
} mutations;

/* Checks every mutation with same (one of the same_as_jansson readers), drawing
 * from seed; returns how many were read, and counts them all in *total. */
static size_t mutated_reads(const mutations *m, unsigned seed,
                            bool (*same)(const char *, size_t, size_t), size_t *total) {
    char buf[1024];
    size_t read = 0;
    for (size_t s = 0; s < m->nseeds; s++) {
        for (int round = 0; round < 8000; round++) {
            size_t n = mutate(buf, m->cap, m->seeds[s], m->bits, m->nbits, m->inserts, &seed);
            size_t flags = rand_r(&seed) % 4 ? JSON_ALLOW_NUL | JSON_DECODE_ANY : m->rare_flags;
            read += same(buf, n, flags);
            (*total)++;
        }
    }
    return read;
}

/* Messages mutated at random (bytes replaced, inserted, cut; quotes, backslashes,
 * escapes, control and UTF-8 bytes among them): jflat reads what it reads exactly
 * as jansson does. */
static void jflat_mutations(void **state) {
    (void)state;
    static const char *const seeds[] = {
        "{\"role\":\"user\",\"content\":\"Explain the cache policy, briefly. Then the queue.\"}",
        ("{\"role\":\"system\",\"content\":\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ "
         "\\n\\t end\",\"name\":\"x\"}"), /* one seed: clang asks for the parentheses */
        "{ \"content\" : \"tab\\there\" , \"role\" : \"assistant\" }",
    };
    static const char *const bits[] = {"\"",
                                       "\\",
                                       "\\u",
                                       "\\ud83d",
                                       "\\ude00",
                                       "\\u0000",
                                       "\n",
                                       "\x01",
                                       "\xc3",
                                       "\xa9",
                                       "\xe2\x82\xac",
                                       "\xed\xa0\x80",
                                       ",",
                                       ":",
                                       "}",
                                       "{",
                                       " ",
                                       "\\n",
                                       "1",
                                       "\x7f"};
    const mutations m = {.seeds = seeds,
                         .nseeds = sizeof seeds / sizeof *seeds,
                         .bits = bits,
                         .nbits = sizeof bits / sizeof *bits,
                         .inserts = 3,
                         .cap = 512,
                         .rare_flags = JSON_DECODE_ANY};
    size_t total = 0, read = mutated_reads(&m, 99, same_as_jansson, &total);
    printf("[jflat] %zu of %zu mutated messages read, the rest declined\n", read, total);
    assert_true(read > total / 20 && read < total - total / 20); /* both ways, often */
}

/* ---- irt_jfast_loadb: any JSON text ---------------------------------------------------- */

static void jfast_cases(void **state) {
    (void)state;
    static const struct {
        const char *s;
        bool read;
    } cases[] = {
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
         "\"max_tokens\":16,\"temperature\":0.7,\"stream\":true,\"stop\":null,\"n\":false}",
         true},
        {"[1,-2,0,-0,9223372036854775807,-9223372036854775808]", true},
        {"[9223372036854775808]", false},  /* past int64: jansson refuses (pyjson.c's) */
        {"[-9223372036854775809]", false}, /* likewise */
        {"[1.5,-0.0,1e10,1E-5,2.5e+3,1e-400,0.1]", true},
        {"[1e400]", false}, /* past the double range: jansson refuses */
        {"[01]", false},
        {"[-]", false},
        {"[1.]", false},
        {"[.5]", false},
        {"[1e]", false},
        {"[1x]", false},
        {"[truex]", false},
        {"[true1]", false},
        {"[NaN]", false},
        {"[Infinity]", false},
        {"[ true , false , null ]", true},
        {"{\"a\":{\"b\":[[],{},[{}]]}}", true},
        {"{\"k\\u0041\":1,\"caf\xc3\xa9\":2,\"\":3}", true},
        {"{\"k\\u0000\":1}", false}, /* a NUL in a key: jansson refuses */
        {"{\"a\":1,\"b\":2,\"a\":3}", true},
        {"{\"a\":1,}", false},
        {"[1,]", false},
        {"[1 2]", false},
        {"{\"a\" 1}", false},
        {"{\"a\":}", false},
        {"{1:2}", false},
        {"[\"a\\nb\\u00e9\\ud83d\\ude00\"]", true},
        {"[\"\\ud800\"]", false},
        {"[", false},
        {"[1", false},
        {"[1]]", false},
        {"[1] x", false},
        {"", false},
        {"   ", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        if (fast_same(cases[i].s, JSON_ALLOW_NUL | JSON_DECODE_ANY) != cases[i].read)
            fail_msg("case %zu (%s): expected %s", i, cases[i].s,
                     cases[i].read ? "read" : "declined");
    /* scalars at the top only with JSON_DECODE_ANY, as jansson */
    assert_true(fast_same("\"x\"", JSON_DECODE_ANY));
    assert_true(fast_same(" 12 ", JSON_DECODE_ANY));
    assert_false(fast_same("\"x\"", 0));
    assert_false(fast_same("12", JSON_ALLOW_NUL));
    assert_true(fast_same("[\"\\u0000\"]", JSON_ALLOW_NUL));
    assert_false(fast_same("[\"\\u0000\"]", 0));
    assert_false(fast_same("[1]", JSON_REJECT_DUPLICATES));
    assert_false(fast_same("[1]", JSON_DECODE_INT_AS_REAL));
    assert_false(fast_same("[1] ", JSON_DISABLE_EOF_CHECK));
}

/* Nesting: read up to its own bound, then declined; jansson reads or refuses. */
static void jfast_depth(void **state) {
    (void)state;
    for (size_t d = 508; d <= 516; d++) {
        char *b = malloc(2 * d + 2);
        memset(b, '[', d);
        memset(b + d, ']', d);
        b[2 * d] = '\0';
        bool read = fast_same(b, 0);
        assert_int_equal(read, d <= 512); /* jflat.c's JFAST_MAX_DEPTH */
        free(b);
    }
}

/* Bodies mutated at random (bytes replaced, inserted, cut; numbers, literals,
 * brackets, escapes, control and UTF-8 bytes among them): what the general reader
 * reads, jansson reads the same way. */
static void jfast_mutations(void **state) {
    (void)state;
    static const char *const seeds[] = {
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Explain.\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c\",\"function\":"
        "{\"name\":\"f\",\"arguments\":{\"x\":[1,2.5,-3e2,true,false,null]}}}]}],\"n\":1}",
        "[\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00\",{\"k\\u0041\":-0.0},[[],{}],12345678901234]",
    };
    static const char *const bits[] = {"\"",      "\\",      "\\u",
                                       "\\ud83d", "\\u0000", "\n",
                                       "\x01",    "\xc3",    "\xe2\x82\xac",
                                       ",",       ":",       "}",
                                       "{",       "[",       "]",
                                       " ",       "1",       "-",
                                       ".",       "e",       "0",
                                       "true",    "nul",     "9999999999999999999",
                                       "1e999"};
    const mutations m = {.seeds = seeds,
                         .nseeds = sizeof seeds / sizeof *seeds,
                         .bits = bits,
                         .nbits = sizeof bits / sizeof *bits,
                         .inserts = 4,
                         .cap = 1024,
                         .rare_flags = 0};
    size_t total = 0, read = mutated_reads(&m, 7, jfast_same, &total);
    printf("[jfast] %zu of %zu mutated bodies read, the rest declined\n", read, total);
    assert_true(read > total / 20 && read < total - total / 20);
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
        cmocka_unit_test(jflat_cases),
        cmocka_unit_test(jflat_mutations),
        cmocka_unit_test(jfast_cases),
        cmocka_unit_test(jfast_depth),
        cmocka_unit_test(jfast_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
