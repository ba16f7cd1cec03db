/* The chat parse cache (src/tokenize/parse_cache.c): irt_chat_loads gives what
 * irt_json_loads gives (json_equal), for hand-picked bodies (Python's number
 * rules, duplicate keys, malformed bodies) and for generated chats, cold, warm
 * and through a cache small enough to evict; the template input and the token
 * ids of Qwen3 and Llama 3.1 chats are the same as a whole parse gives; threads
 * share one evicting cache (run under TSan too). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tokenize/chat_models.h"
#include "tokenize/ir_tokenize.h"

/* ---- bodies ------------------------------------------------------------------------ */

/* cached and whole reads agree: both NULL, or json_equal */
static void same_read(irt_parse_cache *c, const char *s, size_t len, size_t flags) {
    json_error_t e1, e2;
    json_t *whole = irt_json_loads(s, len, flags, &e1);
    irt_parsed p;
    irt_chat_loads(c, s, len, flags, &e2, &p);
    if (!whole != !p.doc) fail_msg("%.*s: whole %p, cached %p", (int)len, s, whole, p.doc);
    if (whole && !json_equal(whole, p.doc)) fail_msg("%.*s: different values", (int)len, s);
    if (!whole && strcmp(e1.text, e2.text)) fail_msg("%.*s: errors differ", (int)len, s);
    json_decref(whole);
    irt_parsed_release(&p);
}

#define PAD "\"pad\":\"................................................................\""

static const char *const BODIES[] = {
    "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"," PAD "},"
    "{\"role\":\"user\",\"content\":\"hi\"}]}",
    /* Python's numbers inside a message, and outside */
    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"n\":NaN," PAD "}]}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"n\":123456789012345678901234," PAD "}]}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"," PAD "}],\"n\":-Infinity}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"," PAD "}],\"n\":1e400}",
    /* duplicate keys, inside a message and at the top */
    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\",\"content\":\"b\",\"role\":\"x\"," PAD
    "}]}",
    "{\"model\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"a\"," PAD
    "}],\"model\":\"b\"}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"," PAD "}],\"messages\":[]}",
    /* escapes, NUL, unicode */
    "{\"messages\":[{\"role\":\"user\",\"content\":\"\\u0000\\ud83d\\ude00\\\"\\\\\\/\\n\"," PAD
    "}]}",
    "{\"messag\\u0065s\":[{\"role\":\"user\",\"content\":\"a\"," PAD "}]}",
    /* malformed: in a message, between them, after them */
    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"," PAD ",}]}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\t\"," PAD "}]}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"," PAD "} {\"x\":1}]}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"," PAD "}],\"x\":[1,}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"," PAD "}]}",
    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"," PAD "}]} junk",
    "{\"messages\":[\"a\",1,null," PAD "]}",
};
#define NBODIES (sizeof BODIES / sizeof *BODIES)

static void bodies_read_alike(void **state) {
    (void)state;
    irt_parse_cache *c = irt_parse_cache_new((size_t)1 << 20);
    assert_non_null(c);
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < NBODIES; i++) {
            same_read(c, BODIES[i], strlen(BODIES[i]), JSON_ALLOW_NUL);
            same_read(c, BODIES[i], strlen(BODIES[i]), 0); /* without NUL: another key */
            same_read(NULL, BODIES[i], strlen(BODIES[i]), JSON_ALLOW_NUL);
        }
    irt_parse_cache_stats st;
    irt_parse_cache_get_stats(c, &st);
    assert_true(st.hits > 0);   /* the second round */
    assert_true(st.misses > 0); /* the first */
    assert_true(st.whole > 0);  /* NaN, duplicate messages, malformed bodies */
    assert_true(st.bytes <= st.max_bytes);
    irt_parse_cache_free(c);
    assert_null(irt_parse_cache_new(0));
}

/* Every prefix of a chat body reads alike (all but the whole one are refused). */
static void truncated_alike(void **state) {
    (void)state;
    irt_parse_cache *c = irt_parse_cache_new((size_t)1 << 20);
    const char *b = BODIES[0];
    for (size_t k = 0; k <= strlen(b); k++) same_read(c, b, k, JSON_ALLOW_NUL);
    irt_parse_cache_free(c);
}

/* ---- generated chats ----------------------------------------------------------------- */
typedef struct rng {
    uint64_t s;
} rng;

static uint32_t next(rng *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->s >> 33);
}

static const char *const WORDS[] = {"the",
                                    "cache",
                                    "router",
                                    "token",
                                    "\\n",
                                    "\\\"quoted\\\"",
                                    "[brackets]",
                                    "{braces}",
                                    "\\u00e9t\\u00e9",
                                    "\\ud83d\\ude00",
                                    "\\\\",
                                    "\\t",
                                    "caf\xc3\xa9",
                                    "<|im_start|>",
                                    "\\/",
                                    "x,y:z"};

static void put(ir_buf *b, const char *s) {
    ir_buf_append(b, s, strlen(s));
}

static void ws(rng *r, ir_buf *b) {
    static const char *const W[] = {"", "", "", " ", "\n  ", "\t", " \r\n"};
    put(b, W[next(r) % 7]);
}

static void text(rng *r, ir_buf *b, size_t words) {
    put(b, "\"");
    for (size_t i = 0; i < words; i++) {
        if (i) put(b, " ");
        put(b, WORDS[next(r) % (sizeof WORDS / sizeof *WORDS)]);
    }
    put(b, "\"");
}

/* Message k of a pool (seeded by k, so the same k gives the same bytes). */
static void message(uint64_t k, ir_buf *b) {
    rng r = {k * 7919 + 1};
    static const char *const roles[] = {"system", "user", "assistant", "user", "tool"};
    const char *role = k == 0 ? "system" : roles[next(&r) % 5];
    put(b, "{");
    ws(&r, b);
    put(b, "\"role\":");
    ws(&r, b);
    put(b, "\"");
    put(b, role);
    put(b, "\",\"content\":");
    ws(&r, b);
    if (next(&r) % 4 == 0 && strcmp(role, "tool")) {
        put(b, "[{\"type\":\"text\",\"text\":");
        text(&r, b, 3 + next(&r) % 30);
        put(b, "},{\"type\":\"text\",\"text\":");
        text(&r, b, 3 + next(&r) % 10);
        put(b, "}]");
    } else {
        text(&r, b, (k == 0 ? 400 : 5) + next(&r) % 60);
    }
    if (!strcmp(role, "assistant") && next(&r) % 3 == 0)
        put(b, ",\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":"
               "\"get\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\", \\\"n\\\": [1, 2]}\"}}]");
    if (!strcmp(role, "tool")) put(b, ",\"tool_call_id\":\"c1\"");
    uint32_t x = next(&r) % 40;
    if (x == 0) put(b, ",\"score\":NaN");
    if (x == 1) put(b, ",\"id\":99999999999999999999999");
    if (x == 2) put(b, ",\"content\":\"the last content wins\"");
    ws(&r, b);
    put(b, "}");
}

/* A chat of up to 8 messages from a pool of 40, with other keys around. */
static char *chat_body(rng *r, size_t *len) {
    ir_buf b;
    ir_buf_init(&b, (size_t)1 << 24);
    put(&b, "{");
    ws(r, &b);
    bool first = next(r) % 2;
    if (first) put(&b, "\"model\":\"m\",");
    put(&b, "\"messages\":");
    ws(r, &b);
    put(&b, "[");
    size_t n = 1 + next(r) % 8;
    for (size_t i = 0; i < n; i++) {
        if (i) put(&b, ",");
        ws(r, &b);
        message(i == 0 ? 0 : 1 + next(r) % 40, &b);
    }
    ws(r, &b);
    put(&b, "]");
    uint32_t x = next(r) % 10;
    if (x == 0) put(&b, ",\"add_generation_prompt\":false,\"continue_final_message\":true");
    if (x == 1) put(&b, ",\"chat_template_kwargs\":{\"enable_thinking\":false}");
    if (x == 2)
        put(&b, ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get\","
                "\"parameters\":{\"type\":\"object\"}}}]");
    if (x == 3) put(&b, ",\"seed\":123456789012345678901234567890");
    if (x == 4) put(&b, ",\"model\":\"twice\"");
    if (!first) put(&b, ",\"model\":\"m\"");
    ws(r, &b);
    put(&b, "}");
    *len = b.len;
    return b.data;
}

/* A body's template input, text and ids; rc the render's result. */
typedef struct outcome {
    json_t *vars;
    int rc;
    ir_buf text;
    irt_ids ids;
} outcome;

static void prepare(const chat_model *f, const json_t *doc, outcome *o) {
    char err[256];
    int rc;
    memset(o, 0, sizeof *o);
    ir_buf_init(&o->text, (size_t)1 << 26);
    o->vars = doc ? irt_chat_vars(f->chat, doc, &rc, err, sizeof err) : NULL;
    o->rc = doc ? irt_chat_render(f->chat, doc, &o->text, err, sizeof err) : 1;
    if (o->rc == IRT_OK) o->rc = irt_encode(f->t, o->text.data, o->text.len, false, &o->ids);
}

static void outcome_free(outcome *o) {
    json_decref(o->vars);
    ir_buf_free(&o->text);
    irt_ids_free(&o->ids);
}

/* Generated chats through a cache of max_bytes, twice (cold, then warm), each
 * against a whole parse: the same value, template input, text and ids. */
static void chats_alike(size_t max_bytes, size_t nchats) {
    for (size_t fi = 0; fi < NFAM; fi++) {
        const chat_model *f = &FAMILIES[fi];
        irt_parse_cache *c = irt_parse_cache_new(max_bytes);
        size_t ok = 0;
        for (int round = 0; round < 2; round++) {
            rng r = {42};
            for (size_t i = 0; i < nchats; i++) {
                size_t len;
                char *b = chat_body(&r, &len);
                json_error_t e;
                json_t *whole = irt_json_loads(b, len, JSON_ALLOW_NUL, &e);
                irt_parsed p;
                irt_chat_loads(c, b, len, JSON_ALLOW_NUL, &e, &p);
                if (!whole || !json_equal(whole, p.doc)) fail_msg("chat %zu: %s", i, b);
                outcome a, z;
                prepare(f, whole, &a);
                prepare(f, p.doc, &z);
                if (a.rc != z.rc || !a.vars != !z.vars || (a.vars && !json_equal(a.vars, z.vars)))
                    fail_msg("%s chat %zu: template input differs", f->model, i);
                if (a.text.len != z.text.len || memcmp(a.text.data, z.text.data, a.text.len) ||
                    a.ids.len != z.ids.len ||
                    memcmp(a.ids.ids, z.ids.ids, a.ids.len * sizeof *a.ids.ids))
                    fail_msg("%s chat %zu: text or ids differ", f->model, i);
                ok += a.rc == IRT_OK;
                outcome_free(&a);
                outcome_free(&z);
                json_decref(whole);
                irt_parsed_release(&p);
                free(b);
            }
        }
        irt_parse_cache_stats st;
        irt_parse_cache_get_stats(c, &st);
        assert_true(ok > nchats); /* most chats render */
        assert_true(st.hits > 0 && st.misses > 0 && st.whole > 0);
        assert_true(st.bytes <= max_bytes);
        if (max_bytes < 65536) assert_true(st.evictions > 0);
        irt_parse_cache_free(c);
    }
}

__attribute__((unused)) static void chats_alike_roomy(void **state) {
    (void)state;
    chats_alike((size_t)64 << 20, 300);
}

__attribute__((unused)) static void chats_alike_evicting(void **state) {
    (void)state;
    chats_alike(12000, 300);
}

/* ---- threads ------------------------------------------------------------------------ */
#define NTHREADS 6
#define NTBODIES 48

typedef struct tjob {
    irt_parse_cache *c;
    irt_template *tmpl;
    char **bodies;
    size_t *lens;
    char **want; /* each body rendered from a whole parse */
    int bad;
} tjob;

static void *tjob_run(void *arg) {
    tjob *j = arg;
    for (int round = 0; round < 6; round++)
        for (size_t i = 0; i < NTBODIES; i++) {
            json_error_t e;
            irt_parsed p;
            irt_chat_loads(j->c, j->bodies[i], j->lens[i], JSON_ALLOW_NUL, &e, &p);
            ir_buf out;
            ir_buf_init(&out, (size_t)1 << 24);
            char err[128];
            int rc = p.doc ? irt_template_render(j->tmpl, p.doc, 1, &out, err, sizeof err) : -1;
            j->bad += rc != IRT_OK || strcmp(out.data ? out.data : "", j->want[i]);
            ir_buf_free(&out);
            irt_parsed_release(&p);
        }
    return NULL;
}

static void threads_share_one_cache(void **state) {
    (void)state;
    static const char src[] = "{% for m in messages %}{{ m.role }}: {{ m.content }} "
                              "{{ m.tool_calls|tojson if m.tool_calls }}\n{% endfor %}";
    char err[256];
    irt_template *t = irt_template_new(src, sizeof src - 1, NULL, err, sizeof err);
    assert_non_null(t);
    char *bodies[NTBODIES], *want[NTBODIES];
    size_t lens[NTBODIES];
    rng r = {7};
    for (size_t i = 0; i < NTBODIES; i++) {
        bodies[i] = chat_body(&r, &lens[i]);
        json_error_t e;
        json_t *doc = irt_json_loads(bodies[i], lens[i], JSON_ALLOW_NUL, &e);
        ir_buf out;
        ir_buf_init(&out, (size_t)1 << 24);
        assert_int_equal(irt_template_render(t, doc, 1, &out, err, sizeof err), IRT_OK);
        want[i] = strdup(out.data ? out.data : "");
        ir_buf_free(&out);
        json_decref(doc);
    }
    irt_parse_cache *c = irt_parse_cache_new(16000); /* evicts all the time */
    tjob jobs[NTHREADS];
    pthread_t th[NTHREADS];
    for (int k = 0; k < NTHREADS; k++) {
        jobs[k] = (tjob){c, t, bodies, lens, want, 0};
        pthread_create(&th[k], NULL, tjob_run, &jobs[k]);
    }
    for (int k = 0; k < NTHREADS; k++) {
        pthread_join(th[k], NULL);
        assert_int_equal(jobs[k].bad, 0);
    }
    irt_parse_cache_stats st;
    irt_parse_cache_get_stats(c, &st);
    assert_true(st.hits > 0 && st.evictions > 0);
    irt_parse_cache_free(c);
    for (size_t i = 0; i < NTBODIES; i++) free(bodies[i]), free(want[i]);
    irt_template_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bodies_read_alike),
        cmocka_unit_test(truncated_alike),
        cmocka_unit_test(threads_share_one_cache),
/* Under TSan (make tsan-threaded) only the threads matter: the two real chat
 * models' single-threaded comparisons, which load their tokenizer.json files
 * twice, run in the release and ASan builds. */
#ifndef __SANITIZE_THREAD__
        cmocka_unit_test_setup_teardown(chats_alike_roomy, chat_models_setup, chat_models_teardown),
        cmocka_unit_test_setup_teardown(chats_alike_evicting, chat_models_setup,
                                        chat_models_teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
