/* The schema-driven YAML config loader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ir_core.h"

/* ---- a schema that uses every field type ------------------------------------ */

typedef struct t_server {
    char *listen;
    int64_t workers;
    uint64_t timeout;
    uint64_t max_body;
    bool tls;
} t_server;

typedef struct t_retry {
    uint64_t backoff;
    int64_t attempts;
} t_retry;

typedef struct t_routing {
    char *default_policy;
    double temperature;
} t_routing;

typedef struct t_replica {
    char *url;
    int64_t weight;
    char *name;
} t_replica;

typedef struct t_model {
    char *name;
    ir_cfg_strlist aliases;
    ir_cfg_map chat_template_kwargs;
    t_retry retry;
} t_model;

typedef struct t_conf {
    t_server server;
    t_retry retry;
    t_routing routing;
    ir_cfg_list replicas;
    ir_cfg_list models;
    char *note;
} t_conf;

static const ir_cfg_field server_fields[] = {
    {.key = "listen",
     .type = IR_CFG_HOSTPORT,
     .offset = offsetof(t_server, listen),
     .def = "0.0.0.0:8080",
     .doc = "address to listen on"},
    {.key = "workers",
     .type = IR_CFG_INT,
     .offset = offsetof(t_server, workers),
     .def = "4",
     .min = 1,
     .max = 1024,
     .doc = "worker threads"},
    {.key = "timeout",
     .type = IR_CFG_DURATION,
     .offset = offsetof(t_server, timeout),
     .def = "30s",
     .doc = "request timeout"},
    {.key = "max_body",
     .type = IR_CFG_SIZE,
     .offset = offsetof(t_server, max_body),
     .def = "4MiB",
     .doc = "largest request body"},
    {.key = "tls", .type = IR_CFG_BOOL, .offset = offsetof(t_server, tls), .def = "false"},
};
static const ir_cfg_schema server_schema = {"server", server_fields, IR_ARRAY_LEN(server_fields),
                                            sizeof(t_server)};

static const ir_cfg_field retry_fields[] = {
    {.key = "backoff",
     .type = IR_CFG_DURATION,
     .offset = offsetof(t_retry, backoff),
     .def = "250ms",
     .doc = "wait between tries"},
    {.key = "attempts",
     .type = IR_CFG_INT,
     .offset = offsetof(t_retry, attempts),
     .def = "3",
     .min = 0,
     .max = 10},
};
static const ir_cfg_schema retry_schema = {"retry", retry_fields, IR_ARRAY_LEN(retry_fields),
                                           sizeof(t_retry)};

static const char *const policies[] = {"round_robin", "random", "least_loaded", "prefix_affinity",
                                       NULL};
static const ir_cfg_field routing_fields[] = {
    {.key = "default_policy",
     .type = IR_CFG_ENUM,
     .offset = offsetof(t_routing, default_policy),
     .def = "round_robin",
     .choices = policies,
     .doc = "policy for models without one"},
    {.key = "temperature",
     .type = IR_CFG_FLOAT,
     .offset = offsetof(t_routing, temperature),
     .def = "0.5",
     .fmin = 0,
     .fmax = 2},
};
static const ir_cfg_schema routing_schema = {"routing", routing_fields,
                                             IR_ARRAY_LEN(routing_fields), sizeof(t_routing)};

static const ir_cfg_field replica_fields[] = {
    {.key = "url",
     .type = IR_CFG_URL,
     .offset = offsetof(t_replica, url),
     .required = true,
     .doc = "base URL"},
    {.key = "weight",
     .type = IR_CFG_INT,
     .offset = offsetof(t_replica, weight),
     .def = "1",
     .min = 1,
     .max = 100},
    {.key = "name", .type = IR_CFG_STRING, .offset = offsetof(t_replica, name)},
};
static const ir_cfg_schema replica_schema = {"replica", replica_fields,
                                             IR_ARRAY_LEN(replica_fields), sizeof(t_replica)};

static const ir_cfg_field model_fields[] = {
    {.key = "name", .type = IR_CFG_STRING, .offset = offsetof(t_model, name), .required = true},
    {.key = "aliases", .type = IR_CFG_STRLIST, .offset = offsetof(t_model, aliases)},
    {.key = "chat_template_kwargs",
     .type = IR_CFG_MAP,
     .offset = offsetof(t_model, chat_template_kwargs),
     .def = "{}"},
    {.key = "retry",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(t_model, retry),
     .sub = &retry_schema,
     .def = "{attempts: 5}"},
};
static const ir_cfg_schema model_schema = {"model", model_fields, IR_ARRAY_LEN(model_fields),
                                           sizeof(t_model)};

static const ir_cfg_field conf_fields[] = {
    {.key = "server",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(t_conf, server),
     .sub = &server_schema,
     .doc = "the HTTP server"},
    {.key = "retry",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(t_conf, retry),
     .sub = &retry_schema},
    {.key = "routing",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(t_conf, routing),
     .sub = &routing_schema},
    {.key = "replicas",
     .type = IR_CFG_LIST,
     .offset = offsetof(t_conf, replicas),
     .sub = &replica_schema,
     .doc = "upstream replicas"},
    {.key = "models",
     .type = IR_CFG_LIST,
     .offset = offsetof(t_conf, models),
     .sub = &model_schema},
    {.key = "note", .type = IR_CFG_STRING, .offset = offsetof(t_conf, note), .def = "\"\""},
};
static const ir_cfg_schema conf_schema = {"test config", conf_fields, IR_ARRAY_LEN(conf_fields),
                                          sizeof(t_conf)};

static const char full_yaml[] = "server:\n"
                                "  listen: 127.0.0.1:9000\n"
                                "  workers: 16\n"
                                "  timeout: 1.5s\n"
                                "  max_body: 512KiB\n"
                                "  tls: true\n"
                                "retry:\n"
                                "  backoff: 100ms\n"
                                "  attempts: 7\n"
                                "routing:\n"
                                "  default_policy: least_loaded\n"
                                "  temperature: 1.25\n"
                                "replicas:\n"
                                "  - url: http://10.0.0.1:8000\n"
                                "    weight: 3\n"
                                "    name: a\n"
                                "  - url: http://10.0.0.2:8000/v1\n"
                                "models:\n"
                                "  - name: llama\n"
                                "    aliases: [l3, \"llama-3\"]\n"
                                "    chat_template_kwargs:\n"
                                "      enable_thinking: false\n"
                                "      n: 3\n"
                                "      t: 0.5\n"
                                "      s: hello\n"
                                "      q: \"3\"\n"
                                "      z: null\n"
                                "    retry: {backoff: 2s}\n"
                                "note: hi\n";

/* ---- helpers ---------------------------------------------------------------------- */

static ir_cfg *load(const char *yaml, t_conf *out, ir_cfg_errors *errs) {
    memset(errs, 0, sizeof *errs);
    return ir_cfg_load_text(yaml, strlen(yaml), &conf_schema, out, errs);
}

static void dump_errors(const ir_cfg_errors *e) {
    for (size_t i = 0; i < e->n; i++) fprintf(stderr, "  error: %s\n", e->msgs[i]);
}

static bool has_error(const ir_cfg_errors *e, const char *msg) {
    for (size_t i = 0; i < e->n; i++) {
        if (strcmp(e->msgs[i], msg) == 0) return true;
    }
    return false;
}

/* Loads yaml, expects exactly one error, equal to want. */
static void expect_error(const char *yaml, const char *want) {
    t_conf c;
    ir_cfg_errors e;
    ir_cfg *cfg = load(yaml, &c, &e);
    if (cfg || e.n != 1 || strcmp(e.msgs[0], want) != 0) {
        fprintf(stderr, "yaml:\n%s\nwanted: %s\n", yaml, want);
        dump_errors(&e);
        ir_cfg_free(cfg);
        ir_cfg_errors_free(&e);
        fail();
    }
    ir_cfg_errors_free(&e);
}

/* Loads yaml, expects one error that starts with prefix. */
static void expect_error_prefix(const char *yaml, size_t len, const char *prefix) {
    t_conf c;
    ir_cfg_errors e = {0};
    ir_cfg *cfg = ir_cfg_load_text(yaml, len, &conf_schema, &c, &e);
    if (cfg || e.n != 1 || strncmp(e.msgs[0], prefix, strlen(prefix)) != 0) {
        fprintf(stderr, "wanted a prefix: %s\n", prefix);
        dump_errors(&e);
        ir_cfg_free(cfg);
        ir_cfg_errors_free(&e);
        fail();
    }
    ir_cfg_errors_free(&e);
}

/* ---- tests -------------------------------------------------------------------------- */

static void loads_every_type(void **state) {
    t_conf c;
    ir_cfg_errors e;
    ir_cfg *cfg = load(full_yaml, &c, &e);
    dump_errors(&e);
    assert_non_null(cfg);
    assert_int_equal(e.n, 0);
    assert_string_equal(c.server.listen, "127.0.0.1:9000");
    assert_int_equal(c.server.workers, 16);
    assert_int_equal(c.server.timeout, 1500000000ull);
    assert_int_equal(c.server.max_body, 512 * 1024);
    assert_true(c.server.tls);
    assert_int_equal(c.retry.backoff, 100000000);
    assert_int_equal(c.retry.attempts, 7);
    assert_string_equal(c.routing.default_policy, "least_loaded");
    assert_true(c.routing.temperature == 1.25);
    assert_int_equal(c.replicas.n, 2);
    t_replica *r = c.replicas.items;
    assert_string_equal(r[0].url, "http://10.0.0.1:8000");
    assert_int_equal(r[0].weight, 3);
    assert_string_equal(r[0].name, "a");
    assert_string_equal(r[1].url, "http://10.0.0.2:8000/v1");
    assert_int_equal(r[1].weight, 1);
    assert_null(r[1].name);
    assert_int_equal(c.models.n, 1);
    t_model *m = c.models.items;
    assert_string_equal(m->name, "llama");
    assert_int_equal(m->aliases.n, 2);
    assert_string_equal(m->aliases.items[0], "l3");
    assert_string_equal(m->aliases.items[1], "llama-3");
    /* The object's own default is replaced by the given mapping; the rest of
     * its fields take their field defaults. */
    assert_int_equal(m->retry.backoff, 2000000000ull);
    assert_int_equal(m->retry.attempts, 3);
    json_t *kw = m->chat_template_kwargs.obj;
    assert_non_null(kw);
    assert_int_equal(json_object_size(kw), 6);
    assert_true(json_is_false(json_object_get(kw, "enable_thinking")));
    assert_true(json_is_integer(json_object_get(kw, "n")));
    assert_int_equal(json_integer_value(json_object_get(kw, "n")), 3);
    assert_true(json_is_real(json_object_get(kw, "t")));
    assert_string_equal(json_string_value(json_object_get(kw, "s")), "hello");
    assert_string_equal(json_string_value(json_object_get(kw, "q")), "3");
    assert_true(json_is_null(json_object_get(kw, "z")));
    assert_string_equal(c.note, "hi");
    ir_cfg_free(cfg);
    ir_cfg_errors_free(&e);
}

static void check_defaults(const t_conf *c) {
    assert_string_equal(c->server.listen, "0.0.0.0:8080");
    assert_int_equal(c->server.workers, 4);
    assert_int_equal(c->server.timeout, 30000000000ull);
    assert_int_equal(c->server.max_body, 4 * 1024 * 1024);
    assert_false(c->server.tls);
    assert_int_equal(c->retry.backoff, 250000000);
    assert_int_equal(c->retry.attempts, 3);
    assert_string_equal(c->routing.default_policy, "round_robin");
    assert_true(c->routing.temperature == 0.5);
    assert_int_equal(c->replicas.n, 0);
    assert_int_equal(c->models.n, 0);
    assert_string_equal(c->note, "");
}

static void defaults_for_absent_objects(void **state) {
    /* An empty file, a null document, and objects given as null. */
    const char *texts[] = {"", "~\n", "# nothing\n", "server:\nretry: ~\nrouting: null\n"};
    for (size_t i = 0; i < IR_ARRAY_LEN(texts); i++) {
        t_conf c;
        ir_cfg_errors e;
        ir_cfg *cfg = load(texts[i], &c, &e);
        dump_errors(&e);
        assert_non_null(cfg);
        check_defaults(&c);
        ir_cfg_free(cfg);
        ir_cfg_errors_free(&e);
    }
}

static void defaults_for_partial_objects(void **state) {
    t_conf c;
    ir_cfg_errors e;
    ir_cfg *cfg = load("server:\n  workers: 2\n", &c, &e);
    assert_non_null(cfg);
    assert_int_equal(c.server.workers, 2);
    assert_string_equal(c.server.listen, "0.0.0.0:8080");
    assert_int_equal(c.server.timeout, 30000000000ull);
    ir_cfg_free(cfg);
    ir_cfg_errors_free(&e);
}

static void defaults_for_list_elements(void **state) {
    t_conf c;
    ir_cfg_errors e;
    ir_cfg *cfg = load("replicas:\n  - url: http://a:1\n  - {url: 'http://b:2', weight: 9}\n"
                       "models:\n  - name: m\n  - name: n\n    retry: ~\n",
                       &c, &e);
    dump_errors(&e);
    assert_non_null(cfg);
    t_replica *r = c.replicas.items;
    assert_int_equal(c.replicas.n, 2);
    assert_int_equal(r[0].weight, 1);
    assert_null(r[0].name);
    assert_int_equal(r[1].weight, 9);
    t_model *m = c.models.items;
    assert_int_equal(c.models.n, 2);
    for (int i = 0; i < 2; i++) {
        /* The object default {attempts: 5}, then the field default for backoff. */
        assert_int_equal(m[i].retry.attempts, 5);
        assert_int_equal(m[i].retry.backoff, 250000000);
        assert_non_null(m[i].chat_template_kwargs.obj);
        assert_int_equal(json_object_size(m[i].chat_template_kwargs.obj), 0);
        assert_int_equal(m[i].aliases.n, 0);
        assert_null(m[i].aliases.items);
    }
    ir_cfg_free(cfg);
    ir_cfg_errors_free(&e);
}

static void errors_have_paths(void **state) {
    static const struct {
        const char *yaml, *want;
    } cases[] = {
        {"server:\n  listn: x\n", "server.listn: unknown key"},
        {"bogus: 1\n", "bogus: unknown key"},
        {"server:\n  workers: abc\n", "server.workers: expected an integer"},
        {"server:\n  workers: \"4\"\n", "server.workers: expected an integer"},
        {"server:\n  workers: 4.0\n", "server.workers: expected an integer"},
        {"server:\n  workers: [4]\n", "server.workers: expected an integer"},
        {"server:\n  workers: 0\n", "server.workers: must be between 1 and 1024"},
        {"server:\n  workers: 1025\n", "server.workers: must be between 1 and 1024"},
        {"server:\n  workers: 99999999999999999999\n",
         "server.workers: must be between 1 and 1024"},
        {"server:\n  listen: nope\n", "server.listen: not a host:port (e.g. 0.0.0.0:8080)"},
        {"server:\n  timeout: 5\n", "server.timeout: not a duration (e.g. 250ms, 2s)"},
        {"server:\n  max_body: 4XB\n", "server.max_body: not a size (e.g. 512KiB, 4MiB)"},
        {"server:\n  tls: yes\n", "server.tls: expected true or false"},
        {"server:\n  tls: \"true\"\n", "server.tls: expected true or false"},
        {"retry:\n  backoff: fast\n", "retry.backoff: not a duration (e.g. 250ms, 2s)"},
        {"retry:\n  attempts: -1\n", "retry.attempts: must be between 0 and 10"},
        {"routing:\n  default_policy: fastest\n",
         "routing.default_policy: must be one of round_robin, random, least_loaded, "
         "prefix_affinity"},
        {"routing:\n  temperature: hot\n", "routing.temperature: expected a number"},
        {"routing:\n  temperature: .nan\n", "routing.temperature: expected a number"},
        {"routing:\n  temperature: 2.5\n", "routing.temperature: must be between 0 and 2"},
        {"replicas:\n  - url: http://a:1\n  - url: http://b:2\n  - url: ftp://c\n",
         "replicas[2].url: not an http URL"},
        {"replicas:\n  - weight: 2\n", "replicas[0].url: required"},
        {"replicas:\n  - url: http://a:1\n    weight: 0\n",
         "replicas[0].weight: must be between 1 and 100"},
        {"replicas: {}\n", "replicas: expected a list"},
        {"replicas:\n  - 5\n", "replicas[0]: expected a mapping"},
        {"models:\n  - aliases: [a]\n", "models[0].name: required"},
        {"models:\n  - name: [m]\n", "models[0].name: expected a string"},
        {"models:\n  - name: m\n    aliases: a\n", "models[0].aliases: expected a list of strings"},
        {"models:\n  - name: m\n    aliases: [a, [b]]\n",
         "models[0].aliases[1]: expected a string"},
        {"models:\n  - name: m\n    chat_template_kwargs: [1]\n",
         "models[0].chat_template_kwargs: expected a mapping"},
        {"models:\n  - name: m\n    chat_template_kwargs: {a: [1]}\n",
         "models[0].chat_template_kwargs.a: expected a scalar value"},
        {"models:\n  - name: m\n    retry: {tries: 2}\n", "models[0].retry.tries: unknown key"},
        {"server: 5\n", "server: expected a mapping"},
        {"[1, 2]\n", "config: expected a mapping"},
        {"just text\n", "config: expected a mapping"},
        {"? [a]\n: 1\n", "config: keys must be strings"},
        {"note: \"a\\0b\"\n", "note: must not contain NUL bytes"},
        /* Control characters in keys are not echoed. */
        {"\"a\\x01b\": 1\n", "a?b: unknown key"},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) expect_error(cases[i].yaml, cases[i].want);
}

static void reports_every_error_at_once(void **state) {
    const char *yaml = "server:\n"
                       "  listn: x\n"
                       "  workers: abc\n"
                       "retry:\n"
                       "  backoff: fast\n"
                       "replicas:\n"
                       "  - url: http://a:1\n"
                       "  - url: http://b:2\n"
                       "  - url: nope\n"
                       "models:\n"
                       "  - aliases: []\n"
                       "routing: {default_policy: x}\n";
    t_conf c;
    ir_cfg_errors e;
    ir_cfg *cfg = load(yaml, &c, &e);
    if (e.n != 6) dump_errors(&e);
    assert_null(cfg);
    assert_int_equal(e.n, 6);
    assert_true(has_error(&e, "server.listn: unknown key"));
    assert_true(has_error(&e, "server.workers: expected an integer"));
    assert_true(has_error(&e, "retry.backoff: not a duration (e.g. 250ms, 2s)"));
    assert_true(has_error(&e, "replicas[2].url: not an http URL"));
    assert_true(has_error(&e, "models[0].name: required"));
    assert_true(has_error(&e, "routing.default_policy: must be one of round_robin, random, "
                              "least_loaded, prefix_affinity"));
    /* On failure the output struct is left zeroed, not pointing at freed memory. */
    assert_null(c.server.listen);
    assert_null(c.replicas.items);
    ir_cfg_errors_free(&e);
    assert_int_equal(e.n, 0);
    assert_null(e.msgs);
}

static void caps_the_number_of_errors(void **state) {
    ir_buf b;
    ir_buf_init(&b, 0);
    for (int i = 0; i < 500; i++) ir_buf_appendf(&b, "k%d: 1\n", i);
    t_conf c;
    ir_cfg_errors e;
    ir_cfg *cfg = load(b.data, &c, &e);
    assert_null(cfg);
    assert_int_equal(e.n, 101);
    assert_string_equal(e.msgs[0], "k0: unknown key");
    assert_string_equal(e.msgs[100], "config: more than 100 problems; stopped reporting");
    ir_cfg_errors_free(&e);
    ir_buf_free(&b);
}

static void rejects_duplicate_keys(void **state) {
    expect_error("server:\n  workers: 2\n  workers: 3\n", "server.workers: duplicate key");
    expect_error("server: {}\nserver: {}\n", "server: duplicate key");
    expect_error("models:\n  - name: m\n    chat_template_kwargs: {a: 1, a: 2}\n",
                 "models[0].chat_template_kwargs.a: duplicate key");
}

static void reports_syntax_errors_with_position(void **state) {
    expect_error("server:\n  workers: [1, 2\n",
                 "config:3:1: did not find expected ',' or ']' while parsing a flow sequence "
                 "(started at line 2)");
    expect_error(
        "server:\n  workers: 1\n bad\n",
        "config:3:2: did not find expected key while parsing a block mapping (started at line 1)");
    expect_error("a: b: c\n", "config:1:5: mapping values are not allowed in this context");
    expect_error("a: 1\n---\nb: 2\n", "config:2:1: only one YAML document is allowed");
    /* Invalid UTF-8 and NUL bytes. */
    expect_error_prefix("a: \xff\n", 6, "config: invalid input at byte 3");
    expect_error_prefix("a: b\0c\n", 7, "config: invalid input at byte 4");
}

static void rejects_aliases(void **state) {
    expect_error("server:\n  workers: &w 4\nretry:\n  attempts: *w\n",
                 "config:4:13: YAML aliases are not allowed (*w)");
    /* A billion laughs is refused without expanding anything. */
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
                       "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n"
                       "h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n";
    t_conf c;
    ir_cfg_errors e;
    assert_null(load(bomb, &c, &e));
    assert_int_equal(e.n, 63);
    assert_string_equal(e.msgs[0], "config:2:8: YAML aliases are not allowed (*a)");
    ir_cfg_errors_free(&e);
    /* An anchor alone is harmless. */
    ir_cfg *cfg = load("server: &s {workers: 3}\n", &c, &e);
    assert_non_null(cfg);
    assert_int_equal(c.server.workers, 3);
    ir_cfg_free(cfg);
    ir_cfg_errors_free(&e);
}

static void bounds_nesting_and_size(void **state) {
    ir_buf b;
    ir_buf_init(&b, 0);
    /* 64 levels are parsed (and rejected by the schema), 65 are not. */
    ir_buf_append_str(&b, "note: ");
    for (int i = 0; i < 63; i++) ir_buf_append_str(&b, "[");
    for (int i = 0; i < 63; i++) ir_buf_append_str(&b, "]");
    expect_error(b.data, "note: expected a string");
    ir_buf_reset(&b);
    ir_buf_append_str(&b, "note: ");
    for (int i = 0; i < 64; i++) ir_buf_append_str(&b, "[");
    for (int i = 0; i < 64; i++) ir_buf_append_str(&b, "]");
    expect_error(b.data, "config:1:70: nesting deeper than 64");
    ir_buf_reset(&b);
    for (int i = 0; i < 100000; i++) ir_buf_append_str(&b, "[");
    expect_error_prefix(b.data, b.len, "config:1:65: nesting deeper than 64");

    /* 4 MiB is the most; a comment fills the text. */
    ir_buf_reset(&b);
    ir_buf_append_str(&b, "#");
    while (b.len < 4 * 1024 * 1024) ir_buf_append_str(&b, "x");
    t_conf c;
    ir_cfg_errors e;
    ir_cfg *cfg = load(b.data, &c, &e);
    assert_non_null(cfg);
    ir_cfg_free(cfg);
    ir_cfg_errors_free(&e);
    ir_buf_append_str(&b, "x");
    expect_error(b.data, "config: too large (4194305 bytes, at most 4194304)");
    ir_buf_free(&b);
}

static void loads_files(void **state) {
    char path[] = "/tmp/ir_test_config_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("server:\n  workers: 12\n  bad: 1\n", f);
    fclose(f);
    t_conf c;
    ir_cfg_errors e = {0};
    assert_null(ir_cfg_load_file(path, &conf_schema, &c, &e));
    assert_int_equal(e.n, 1);
    assert_string_equal(e.msgs[0], "server.bad: unknown key");
    ir_cfg_errors_free(&e);

    f = fopen(path, "w");
    fputs("server:\n  workers: [\n", f);
    fclose(f);
    assert_null(ir_cfg_load_file(path, &conf_schema, &c, &e));
    assert_int_equal(e.n, 1);
    assert_true(strncmp(e.msgs[0], path, strlen(path)) == 0);
    assert_true(strncmp(e.msgs[0] + strlen(path), ":3:1: ", 6) == 0);
    ir_cfg_errors_free(&e);

    f = fopen(path, "w");
    fputs("server:\n  workers: 12\n", f);
    fclose(f);
    ir_cfg *cfg = ir_cfg_load_file(path, &conf_schema, &c, &e);
    assert_non_null(cfg);
    assert_int_equal(c.server.workers, 12);
    ir_cfg_free(cfg);

    /* Over 4 MiB. */
    f = fopen(path, "w");
    for (int i = 0; i < 4 * 1024 + 1; i++) fprintf(f, "#%1022d\n", i);
    fclose(f);
    assert_null(ir_cfg_load_file(path, &conf_schema, &c, &e));
    assert_int_equal(e.n, 1);
    assert_non_null(strstr(e.msgs[0], "too large"));
    ir_cfg_errors_free(&e);

    unlink(path);
    assert_null(ir_cfg_load_file(path, &conf_schema, &c, &e));
    assert_int_equal(e.n, 1);
    assert_non_null(strstr(e.msgs[0], "No such file"));
    ir_cfg_errors_free(&e);
}

static void errors_may_be_null(void **state) {
    t_conf c;
    assert_null(ir_cfg_load_text("bogus: 1", 8, &conf_schema, &c, NULL));
    ir_cfg *cfg = ir_cfg_load_text("", 0, &conf_schema, &c, NULL);
    assert_non_null(cfg);
    ir_cfg_free(cfg);
    ir_cfg_free(NULL);
}

/* A schema whose default is wrong says so. */
static void bad_schema_default(void **state) {
    typedef struct {
        int64_t n;
    } t_bad;
    static const ir_cfg_field fields[] = {
        {.key = "n", .type = IR_CFG_INT, .offset = offsetof(t_bad, n), .def = "ten"},
    };
    static const ir_cfg_schema schema = {"bad", fields, 1, sizeof(t_bad)};
    t_bad b;
    ir_cfg_errors e = {0};
    assert_null(ir_cfg_load_text("", 0, &schema, &b, &e));
    assert_int_equal(e.n, 1);
    assert_string_equal(e.msgs[0], "n: expected an integer (in the schema's default)");
    ir_cfg_errors_free(&e);
    /* Given a value, the bad default is not used. */
    ir_cfg *cfg = ir_cfg_load_text("n: 3", 4, &schema, &b, &e);
    assert_non_null(cfg);
    assert_int_equal(b.n, 3);
    ir_cfg_free(cfg);
}

static void writes_defaults_that_load_back(void **state) {
    ir_buf b;
    ir_buf_init(&b, 0);
    assert_int_equal(ir_cfg_write_defaults(&b, &conf_schema), 0);
    const char *want = "# test config\n"
                       "server:  # the HTTP server\n"
                       "  listen: 0.0.0.0:8080  # address to listen on\n"
                       "  workers: 4  # worker threads\n"
                       "  timeout: 30s  # request timeout\n"
                       "  max_body: 4MiB  # largest request body\n"
                       "  tls: false\n"
                       "retry:\n"
                       "  backoff: 250ms  # wait between tries\n"
                       "  attempts: 3\n"
                       "routing:\n"
                       "  default_policy: round_robin  # policy for models without one (one of: "
                       "round_robin, random, least_loaded, prefix_affinity)\n"
                       "  temperature: 0.5\n"
                       "replicas:  # upstream replicas\n"
                       "#   - url:  # base URL (required)\n"
                       "#     weight: 1\n"
                       "#     name:\n"
                       "models:\n"
                       "#   - name:  # (required)\n"
                       "#     aliases:\n"
                       "#     chat_template_kwargs: {}\n"
                       "#     retry: {attempts: 5}\n"
                       "note: \"\"\n";
    if (strcmp(b.data, want) != 0) fprintf(stderr, "%s", b.data);
    assert_string_equal(b.data, want);

    /* Loading the example gives the same values as loading nothing. */
    t_conf c;
    ir_cfg_errors e;
    ir_cfg *cfg = load(b.data, &c, &e);
    dump_errors(&e);
    assert_non_null(cfg);
    check_defaults(&c);
    ir_cfg_free(cfg);

    /* Uncommenting the example elements gives a loadable list. */
    ir_buf u;
    ir_buf_init(&u, 0);
    for (const char *p = b.data; *p;) {
        const char *nl = strchr(p, '\n');
        if (strncmp(p, "#   ", 4) == 0) p += 2;
        ir_buf_append(&u, p, (size_t)(nl - p + 1));
        p = nl + 1;
    }
    const char *fill[] = {"url:", "url: http://h:1", "name:  # (required)", "name: m"};
    ir_buf v;
    ir_buf_init(&v, 0);
    const char *p = u.data;
    for (size_t i = 0; i < IR_ARRAY_LEN(fill); i += 2) {
        const char *at = strstr(p, fill[i]);
        assert_non_null(at);
        ir_buf_append(&v, p, (size_t)(at - p));
        ir_buf_append_str(&v, fill[i + 1]);
        p = at + strlen(fill[i]);
        if (i == 0) p = strchr(p, '\n');
    }
    ir_buf_append_str(&v, p);
    cfg = load(v.data, &c, &e);
    if (!cfg) fprintf(stderr, "%s", v.data);
    dump_errors(&e);
    assert_non_null(cfg);
    assert_int_equal(c.replicas.n, 1);
    assert_int_equal(((t_replica *)c.replicas.items)[0].weight, 1);
    assert_int_equal(c.models.n, 1);
    assert_int_equal(((t_model *)c.models.items)[0].retry.attempts, 5);
    ir_cfg_free(cfg);
    ir_buf_free(&v);
    ir_buf_free(&u);
    ir_buf_free(&b);
}

/* A nested list, required object and a field-less object in the example file. */
static void writes_nested_examples(void **state) {
    typedef struct {
        ir_cfg_list inner;
        t_retry must;
        t_retry empty;
    } t_outer;
    static const ir_cfg_schema empty = {"empty", NULL, 0, sizeof(t_retry)};
    static const ir_cfg_field fields[] = {
        {.key = "inner",
         .type = IR_CFG_LIST,
         .offset = offsetof(t_outer, inner),
         .sub = &model_schema,
         .def = "[]"},
        {.key = "must",
         .type = IR_CFG_OBJECT,
         .offset = offsetof(t_outer, must),
         .sub = &retry_schema,
         .required = true},
        {.key = "empty", .type = IR_CFG_OBJECT, .offset = offsetof(t_outer, empty), .sub = &empty},
    };
    static const ir_cfg_schema outer = {NULL, fields, IR_ARRAY_LEN(fields), sizeof(t_outer)};
    static const ir_cfg_field lfields[] = {
        {.key = "outer", .type = IR_CFG_LIST, .offset = 0, .sub = &outer},
    };
    static const ir_cfg_schema top = {NULL, lfields, 1, sizeof(ir_cfg_list)};
    ir_buf b;
    ir_buf_init(&b, 0);
    assert_int_equal(ir_cfg_write_defaults(&b, &top), 0);
    assert_string_equal(b.data, "outer:\n"
                                "#   - inner: []\n"
                                "#       - name:  # (required)\n"
                                "#         aliases:\n"
                                "#         chat_template_kwargs: {}\n"
                                "#         retry: {attempts: 5}\n"
                                "#     must:  # (required)\n"
                                "#       backoff: 250ms  # wait between tries\n"
                                "#       attempts: 3\n"
                                "#     empty: {}\n");
    ir_buf_free(&b);
}

/* Random edits of a valid config never crash, and each load either succeeds
 * with no errors or fails with at least one. */
static void mutations_load_or_fail(void **state) {
    static const char *const frags[] = {
        ":",          " ",   "\n",   "- ",     "[",  "]",  "{",  "}",    "&a ",
        "*a",         "\"",  "'",    "#",      "~",  "0",  "-1", "1.5s", "4MiB",
        "http://x:1", "url", "name", "server", "  ", "\t", "? ",
    };
    ir_rng r;
    ir_rng_seed(&r, 12345);
    ir_buf b;
    ir_buf_init(&b, 0);
    size_t ok = 0, failed = 0;
    for (int iter = 0; iter < 3000; iter++) {
        ir_buf_reset(&b);
        ir_buf_append_str(&b, full_yaml);
        int edits = 1 + (int)ir_rng_below(&r, 4);
        for (int k = 0; k < edits; k++) {
            size_t at = (size_t)ir_rng_below(&r, b.len + 1);
            switch (ir_rng_below(&r, 4)) {
            case 0: /* delete a span */
                if (at < b.len) {
                    size_t want = (size_t)ir_rng_below(&r, 8) + 1; /* IR_MIN evaluates twice */
                    size_t n = IR_MIN(want, b.len - at);
                    memmove(b.data + at, b.data + at + n, b.len - at - n + 1);
                    b.len -= n;
                }
                break;
            case 1: { /* insert a fragment */
                const char *f = frags[ir_rng_below(&r, IR_ARRAY_LEN(frags))];
                size_t n = strlen(f);
                assert_int_equal(ir_buf_reserve(&b, n), 0);
                memmove(b.data + at + n, b.data + at, b.len - at + 1);
                memcpy(b.data + at, f, n);
                b.len += n;
                break;
            }
            case 2: /* flip a byte */
                if (at < b.len) b.data[at] = (char)ir_rng_below(&r, 256);
                break;
            default: /* duplicate a line */
                if (at < b.len) {
                    size_t off = at;
                    while (off > 0 && b.data[off - 1] != '\n') off--;
                    const char *le = memchr(b.data + off, '\n', b.len - off);
                    size_t n = le ? (size_t)(le - b.data) - off + 1 : b.len - off;
                    assert_int_equal(ir_buf_reserve(&b, n), 0);
                    memmove(b.data + off + n, b.data + off, b.len - off + 1);
                    b.len += n;
                }
                break;
            }
        }
        t_conf c;
        ir_cfg_errors e = {0};
        ir_cfg *cfg = ir_cfg_load_text(b.data, b.len, &conf_schema, &c, &e);
        if (cfg) {
            assert_int_equal(e.n, 0);
            ok++;
        } else {
            assert_true(e.n >= 1);
            failed++;
        }
        ir_cfg_free(cfg);
        ir_cfg_errors_free(&e);
    }
    /* Both outcomes should occur, or the mutations test nothing. */
    assert_true(ok > 50);
    assert_true(failed > 50);
    ir_buf_free(&b);
}

/* One problem a key: a bad value is not also "must be greater than 0". */
static void one_problem_per_key(void **state) {
    ir_cfg_errors e = {0};
    ir_cfg_errors_add(&e, "server.request_timeout: not a duration");
    ir_cfg_errors_add(&e, "server.request_timeout: must be greater than 0");
    ir_cfg_errors_add(&e, "server.request_timeout_x: must be greater than 0"); /* another key */
    ir_cfg_errors_add(&e, "server: required");
    ir_cfg_errors_add(&e, "cannot read a.yaml: one"); /* no key path: always kept */
    ir_cfg_errors_add(&e, "cannot read a.yaml: two");
    assert_int_equal(e.n, 5);
    assert_string_equal(e.msgs[0], "server.request_timeout: not a duration");
    assert_string_equal(e.msgs[1], "server.request_timeout_x: must be greater than 0");
    ir_cfg_errors_free(&e);
    /* nor under a key that has one: a section that is not a mapping */
    ir_cfg_errors_add(&e, "models: expected a sequence");
    ir_cfg_errors_add(&e, "models[0].name: required");
    ir_cfg_errors_add(&e, "models.x: required");
    ir_cfg_errors_add(&e, "modelsx: required"); /* not under it */
    ir_cfg_errors_add(&e, "replicas[0].headers: 'a b' is not a header name");
    ir_cfg_errors_add(&e, "replicas[0].headers.X: no line breaks"); /* not a type problem */
    assert_int_equal(e.n, 4);
    assert_string_equal(e.msgs[1], "modelsx: required");
    ir_cfg_errors_free(&e);
    /* and nothing past a root that is not a mapping */
    ir_cfg_errors_add(&e, "config: expected a mapping");
    ir_cfg_errors_add(&e, "server.workers: must be greater than 0");
    assert_int_equal(e.n, 1);
    ir_cfg_errors_free(&e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loads_every_type),
        cmocka_unit_test(defaults_for_absent_objects),
        cmocka_unit_test(defaults_for_partial_objects),
        cmocka_unit_test(defaults_for_list_elements),
        cmocka_unit_test(errors_have_paths),
        cmocka_unit_test(reports_every_error_at_once),
        cmocka_unit_test(caps_the_number_of_errors),
        cmocka_unit_test(rejects_duplicate_keys),
        cmocka_unit_test(reports_syntax_errors_with_position),
        cmocka_unit_test(rejects_aliases),
        cmocka_unit_test(bounds_nesting_and_size),
        cmocka_unit_test(loads_files),
        cmocka_unit_test(errors_may_be_null),
        cmocka_unit_test(bad_schema_default),
        cmocka_unit_test(writes_defaults_that_load_back),
        cmocka_unit_test(writes_nested_examples),
        cmocka_unit_test(mutations_load_or_fail),
        cmocka_unit_test(one_problem_per_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
