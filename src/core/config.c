/* config.c: the schema-driven YAML config loader.
 *
 * Loading runs in two passes over the text. An event pass rejects syntax
 * errors, aliases, several documents and deep nesting; then libyaml's document
 * API builds a tree that is walked along the schema. Every problem is recorded
 * with its path and the walk goes on, so one run reports them all. Strings and
 * lists live in an arena owned by the returned ir_cfg, maps in a JSON array. */
#include "core/ir_core.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#define CFG_MAX_BYTES  (4u * 1024 * 1024)
#define CFG_MAX_DEPTH  64
#define CFG_MAX_ERRORS 100
#define CFG_STOPPED    "config: more than 100 problems; stopped reporting"
_Static_assert(CFG_MAX_ERRORS == 100, "CFG_STOPPED says 100");
#define CFG_ARENA_MAX   (64u * 1024 * 1024)
#define CFG_PATH_MAX    2048
#define CFG_KEY_SHOWN   64 /* longest key quoted in a path */
#define CFG_DEFAULT_SRC "config"

struct ir_cfg {
    ir_arena *arena;
    json_t *maps; /* a JSON array holding every IR_CFG_MAP object */
};

/* A schema default, parsed once per load. */
typedef struct cfg_default {
    const ir_cfg_field *field;
    yaml_document_t doc;
    bool ok;
} cfg_default;

typedef struct cfg_ctx {
    ir_cfg *cfg;
    yaml_document_t *doc; /* the document nodes are looked up in */
    ir_cfg_errors *errs;
    size_t nerr; /* problems found, including ones not recorded past the cap */
    bool in_default;
    cfg_default **defs; /* each allocated apart: nodes point into them */
    size_t ndefs, capdefs;
    char path[CFG_PATH_MAX];
    size_t plen;
} cfg_ctx;

/* ---- errors ----------------------------------------------------------------- */

/* The length of msg's key path ("server.max_body_bytes" of "server.max_body_bytes: ..."),
 * 0 when it does not start with one. */
static size_t key_len(const char *msg) {
    const char *colon = strstr(msg, ": ");
    if (!colon || colon == msg) return 0;
    for (const char *p = msg; p < colon; p++)
        if (*p == ' ') return 0;
    return (size_t)(colon - msg);
}

/* Whether a problem with key (of n bytes) is one with other's key, or under a key whose
 * value had the wrong type ("server.workers" under "server: expected a mapping"; the
 * file's root is "config"). */
static bool covered(const char *key, size_t n, const char *other) {
    size_t m = key_len(other);
    if (!m) return false;
    if (m == n && memcmp(other, key, m) == 0) return true;
    if (strncmp(other + m, ": expected a ", 13) != 0) return false; /* not a type problem */
    if (m == 6 && memcmp(other, "config", 6) == 0) return true;
    return m < n && memcmp(other, key, m) == 0 && (key[m] == '.' || key[m] == '[');
}

/* Whether e already has a problem with msg's key or a key above it: one a key is enough
 * (a value that is not a duration is not also "must be greater than 0"; a section that
 * is not a mapping does not also have every key in it missing). */
static bool key_has_error(const ir_cfg_errors *e, const char *msg) {
    size_t n = key_len(msg);
    for (size_t i = 0; n && i < e->n; i++)
        if (covered(msg, n, e->msgs[i])) return true;
    return false;
}

void ir_cfg_errors_add(ir_cfg_errors *e, const char *fmt, ...) {
    if (e->n > CFG_MAX_ERRORS)
        return; /* stopped reporting: a file of a million mistakes
                 * costs neither time nor memory */
    if (e->n == CFG_MAX_ERRORS) {
        char *last = strdup(CFG_STOPPED);
        char **m = last ? realloc(e->msgs, (e->n + 1) * sizeof *m) : NULL;
        if (!m) {
            free(last);
            return;
        }
        e->msgs = m;
        e->msgs[e->n++] = last;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    char *msg = malloc((size_t)n + 1);
    if (!msg) return;
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)n + 1, fmt, ap);
    va_end(ap);
    if (key_has_error(e, msg)) {
        free(msg);
        return;
    }
    char **m = realloc(e->msgs, (e->n + 1) * sizeof *m);
    if (!m) {
        free(msg);
        return;
    }
    e->msgs = m;
    e->msgs[e->n++] = msg;
}

void ir_cfg_errors_free(ir_cfg_errors *e) {
    if (!e) return;
    for (size_t i = 0; i < e->n; i++) free(e->msgs[i]);
    free(e->msgs);
    e->msgs = NULL;
    e->n = 0;
}

/* Records "path: message" at the current path, up to CFG_MAX_ERRORS of them. */
static void cfg_err(cfg_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cfg_err(cfg_ctx *c, const char *fmt, ...) {
    c->nerr++;
    if (c->nerr > CFG_MAX_ERRORS + 1) return;
    if (c->nerr == CFG_MAX_ERRORS + 1) {
        ir_cfg_errors_add(c->errs, CFG_STOPPED);
        return;
    }
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_cfg_errors_add(c->errs, "%s: %s%s", c->plen ? c->path : "config", msg,
                      c->in_default ? " (in the schema's default)" : "");
}

static bool cfg_stopped(const cfg_ctx *c) {
    return c->nerr > CFG_MAX_ERRORS;
}

/* ---- paths ------------------------------------------------------------------ */

/* Appends ".key" (or "key" at the root); control characters show as '?' and
 * long keys are cut. Returns the length to restore with path_pop. */
static size_t path_push_key(cfg_ctx *c, const char *key, size_t len) {
    size_t old = c->plen;
    char shown[CFG_KEY_SHOWN + 4];
    size_t n = 0;
    for (size_t i = 0; i < len && n < CFG_KEY_SHOWN; i++) {
        unsigned char ch = (unsigned char)key[i];
        shown[n++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    if (len > CFG_KEY_SHOWN) {
        memcpy(shown + n, "...", 3);
        n += 3;
    }
    shown[n] = '\0';
    int w = snprintf(c->path + c->plen, sizeof c->path - c->plen, "%s%s", old ? "." : "", shown);
    if (w > 0) c->plen = IR_MIN(c->plen + (size_t)w, sizeof c->path - 1);
    return old;
}

static size_t path_push_index(cfg_ctx *c, size_t i) {
    size_t old = c->plen;
    int w = snprintf(c->path + c->plen, sizeof c->path - c->plen, "[%zu]", i);
    if (w > 0) c->plen = IR_MIN(c->plen + (size_t)w, sizeof c->path - 1);
    return old;
}

static void path_pop(cfg_ctx *c, size_t old) {
    c->plen = old;
    c->path[old] = '\0';
}

/* ---- scalars ---------------------------------------------------------------- */

static bool is_plain(const yaml_node_t *n) {
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static const char *scalar_str(const yaml_node_t *n) {
    return (const char *)n->data.scalar.value;
}

static bool str_is(const yaml_node_t *n, const char *a, const char *b, const char *d) {
    const char *s = scalar_str(n);
    return strcmp(s, a) == 0 || strcmp(s, b) == 0 || strcmp(s, d) == 0;
}

/* A plain null: "", "~", "null". A missing value and null mean "absent". */
static bool node_is_null(const yaml_node_t *n) {
    if (!n) return true;
    if (n->type != YAML_SCALAR_NODE || !is_plain(n)) return false;
    return n->data.scalar.length == 0 || str_is(n, "~", "null", "Null") ||
           strcmp(scalar_str(n), "NULL") == 0;
}

static bool has_nul(const yaml_node_t *n) {
    return strlen(scalar_str(n)) != n->data.scalar.length;
}

/* Plain true/false (and their capitalised forms). Returns -1 when neither. */
static int scalar_bool(const yaml_node_t *n) {
    if (!is_plain(n)) return -1;
    if (str_is(n, "true", "True", "TRUE")) return 1;
    if (str_is(n, "false", "False", "FALSE")) return 0;
    return -1;
}

/* A plain decimal (or 0x hex) integer. -1: not an integer, -2: out of range. */
static int scalar_int(const yaml_node_t *n, int64_t *out) {
    if (!is_plain(n) || has_nul(n)) return -1;
    const char *s = scalar_str(n);
    bool neg = false;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (!*s) return -1;
    uint64_t v = 0;
    for (; *s; s++) {
        int d = ir_hexval(*s);
        if (d < 0 || d >= base) return -1;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return -2;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return -2;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return -2;
        *out = (int64_t)v;
    }
    return 0;
}

/* A plain finite decimal number such as 1, -0.5, 2e3. */
static int scalar_float(const yaml_node_t *n, double *out) {
    if (!is_plain(n) || has_nul(n)) return -1;
    const char *s = scalar_str(n);
    const char *p = s;
    if (*p == '+' || *p == '-') p++;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') p++, digits++;
    }
    if (digits == 0) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return -1;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p) return -1;
    double v = strtod(s, NULL);
    if (!isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* Converts a scalar to JSON by YAML's core rules; quoted scalars stay strings. */
static json_t *scalar_json(const yaml_node_t *n) {
    size_t len = n->data.scalar.length;
    if (is_plain(n)) {
        int64_t i;
        double d;
        int b;
        if (node_is_null(n)) return json_null();
        if ((b = scalar_bool(n)) >= 0) return json_boolean(b);
        if (scalar_int(n, &i) == 0) return json_integer(i);
        if (scalar_float(n, &d) == 0) return json_real(d);
    }
    return json_stringn(scalar_str(n), len);
}

/* ---- walking the document ------------------------------------------------------ */

static void apply_schema(cfg_ctx *c, const ir_cfg_schema *s, void *base, yaml_node_t *node,
                         int depth);

static yaml_node_t *get_node(cfg_ctx *c, int idx) {
    return yaml_document_get_node(c->doc, idx);
}

static void *field_ptr(void *base, const ir_cfg_field *f) {
    return (char *)base + f->offset;
}

/* Copies a scalar into the arena; NULL (after reporting) when it has a NUL byte. */
static char *dup_scalar(cfg_ctx *c, const yaml_node_t *n) {
    if (has_nul(n)) {
        cfg_err(c, "must not contain NUL bytes");
        return NULL;
    }
    char *s = ir_arena_strndup(c->cfg->arena, scalar_str(n), n->data.scalar.length);
    if (!s) cfg_err(c, "out of memory");
    return s;
}

static void enum_choices(const ir_cfg_field *f, char *buf, size_t len) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; f->choices && f->choices[i]; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", f->choices[i]);
        if (w < 0 || (size_t)w >= len - used) {
            snprintf(buf + IR_MIN(used, len - 5), 5, "...");
            return;
        }
        used += (size_t)w;
    }
}

static void apply_scalar(cfg_ctx *c, const ir_cfg_field *f, void *p, const yaml_node_t *n) {
    static const char *const want[] = {
        [IR_CFG_STRING] = "expected a string",
        [IR_CFG_INT] = "expected an integer",
        [IR_CFG_FLOAT] = "expected a number",
        [IR_CFG_BOOL] = "expected true or false",
        [IR_CFG_DURATION] = "not a duration (e.g. 250ms, 2s)",
        [IR_CFG_SIZE] = "not a size (e.g. 512KiB, 4MiB)",
        [IR_CFG_URL] = "not an http URL",
        [IR_CFG_HOSTPORT] = "not a host:port (e.g. 0.0.0.0:8080)",
        [IR_CFG_ENUM] = "expected a string",
    };
    if (n->type != YAML_SCALAR_NODE) {
        cfg_err(c, "%s", want[f->type]);
        return;
    }
    const char *s = scalar_str(n);
    switch (f->type) {
    case IR_CFG_STRING: {
        char *v = dup_scalar(c, n);
        if (v) *(char **)p = v;
        return;
    }
    case IR_CFG_INT: {
        int64_t v;
        int rc = scalar_int(n, &v);
        if (rc == -1) {
            cfg_err(c, "%s", want[f->type]);
        } else if (f->min < f->max && (rc == -2 || v < f->min || v > f->max)) {
            cfg_err(c, "must be between %lld and %lld", (long long)f->min, (long long)f->max);
        } else if (rc == -2) {
            cfg_err(c, "integer out of range");
        } else {
            *(int64_t *)p = v;
        }
        return;
    }
    case IR_CFG_FLOAT: {
        double v;
        if (scalar_float(n, &v) < 0) {
            cfg_err(c, "%s", want[f->type]);
        } else if (f->fmin < f->fmax && (v < f->fmin || v > f->fmax)) {
            cfg_err(c, "must be between %g and %g", f->fmin, f->fmax);
        } else {
            *(double *)p = v;
        }
        return;
    }
    case IR_CFG_BOOL: {
        int b = scalar_bool(n);
        if (b < 0)
            cfg_err(c, "%s", want[f->type]);
        else
            *(bool *)p = b;
        return;
    }
    case IR_CFG_DURATION:
    case IR_CFG_SIZE: {
        uint64_t v;
        int rc = has_nul(n)                   ? -1
                 : f->type == IR_CFG_DURATION ? ir_parse_duration_ns(s, &v)
                                              : ir_parse_size(s, &v);
        if (rc < 0)
            cfg_err(c, "%s", want[f->type]);
        else
            *(uint64_t *)p = v;
        return;
    }
    case IR_CFG_URL: {
        ir_url u;
        if (has_nul(n) || ir_url_parse(s, &u) < 0) {
            cfg_err(c, "%s", want[f->type]);
            return;
        }
        char *v = dup_scalar(c, n);
        if (v) *(char **)p = v;
        return;
    }
    case IR_CFG_HOSTPORT: {
        char host[256];
        uint16_t port;
        if (has_nul(n) || ir_hostport_parse(s, host, sizeof host, &port) < 0) {
            cfg_err(c, "%s", want[f->type]);
            return;
        }
        char *v = dup_scalar(c, n);
        if (v) *(char **)p = v;
        return;
    }
    case IR_CFG_ENUM: {
        for (size_t i = 0; f->choices && f->choices[i]; i++) {
            if (!has_nul(n) && strcmp(s, f->choices[i]) == 0) {
                char *v = dup_scalar(c, n);
                if (v) *(char **)p = v;
                return;
            }
        }
        char list[512];
        enum_choices(f, list, sizeof list);
        cfg_err(c, "must be one of %s", list);
        return;
    }
    default:
        return;
    }
}

static void apply_strlist(cfg_ctx *c, ir_cfg_strlist *out, yaml_node_t *n) {
    if (n->type != YAML_SEQUENCE_NODE) {
        cfg_err(c, "expected a list of strings");
        return;
    }
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    char **items = cnt ? ir_arena_calloc(c->cfg->arena, cnt * sizeof *items) : NULL;
    if (cnt && !items) {
        cfg_err(c, "out of memory");
        return;
    }
    for (size_t i = 0; i < cnt && !cfg_stopped(c); i++) {
        yaml_node_t *e = get_node(c, n->data.sequence.items.start[i]);
        size_t old = path_push_index(c, i);
        if (!e || e->type != YAML_SCALAR_NODE || node_is_null(e))
            cfg_err(c, "expected a string");
        else
            items[i] = dup_scalar(c, e);
        path_pop(c, old);
    }
    out->items = items;
    out->n = cnt;
}

static void apply_list(cfg_ctx *c, const ir_cfg_field *f, ir_cfg_list *out, yaml_node_t *n,
                       int depth) {
    if (n->type != YAML_SEQUENCE_NODE) {
        cfg_err(c, "expected a list");
        return;
    }
    size_t cnt = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    size_t size = f->sub->size ? f->sub->size : 1;
    if (cnt > SIZE_MAX / size) {
        cfg_err(c, "out of memory");
        return;
    }
    char *items = cnt ? ir_arena_calloc(c->cfg->arena, cnt * size) : NULL;
    if (cnt && !items) {
        cfg_err(c, "out of memory");
        return;
    }
    for (size_t i = 0; i < cnt && !cfg_stopped(c); i++) {
        size_t old = path_push_index(c, i);
        apply_schema(c, f->sub, items + i * size, get_node(c, n->data.sequence.items.start[i]),
                     depth + 1);
        path_pop(c, old);
    }
    out->items = items;
    out->n = cnt;
}

static void apply_map(cfg_ctx *c, ir_cfg_map *out, yaml_node_t *n) {
    if (n->type != YAML_MAPPING_NODE) {
        cfg_err(c, "expected a mapping");
        return;
    }
    json_t *obj = json_object();
    if (!obj || json_array_append_new(c->cfg->maps, obj) < 0) {
        cfg_err(c, "out of memory");
        return;
    }
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start;
         pr < n->data.mapping.pairs.top && !cfg_stopped(c); pr++) {
        yaml_node_t *k = get_node(c, pr->key), *v = get_node(c, pr->value);
        if (!k || k->type != YAML_SCALAR_NODE || has_nul(k)) {
            cfg_err(c, "keys must be strings");
            continue;
        }
        size_t old = path_push_key(c, scalar_str(k), k->data.scalar.length);
        if (json_object_get(obj, scalar_str(k))) {
            cfg_err(c, "duplicate key");
        } else if (!v || v->type != YAML_SCALAR_NODE) {
            cfg_err(c, "expected a scalar value");
        } else {
            json_t *jv = scalar_json(v);
            if (!jv || json_object_set_new(obj, scalar_str(k), jv) < 0) cfg_err(c, "out of memory");
        }
        path_pop(c, old);
    }
    out->obj = obj;
}

/* Applies a present, non-null value to field f. */
static void apply_value(cfg_ctx *c, const ir_cfg_field *f, void *p, yaml_node_t *n, int depth) {
    if ((f->type == IR_CFG_OBJECT || f->type == IR_CFG_LIST) && !f->sub) {
        cfg_err(c, "schema error: no sub-schema");
        return;
    }
    switch (f->type) {
    case IR_CFG_STRLIST:
        apply_strlist(c, p, n);
        return;
    case IR_CFG_OBJECT:
        apply_schema(c, f->sub, p, n, depth + 1);
        return;
    case IR_CFG_LIST:
        apply_list(c, f, p, n, depth);
        return;
    case IR_CFG_MAP:
        apply_map(c, p, n);
        return;
    default:
        apply_scalar(c, f, p, n);
        return;
    }
}

/* Parses a field's default once per load. NULL when it does not parse. */
static cfg_default *get_default(cfg_ctx *c, const ir_cfg_field *f) {
    for (size_t i = 0; i < c->ndefs; i++) {
        if (c->defs[i]->field == f) return c->defs[i]->ok ? c->defs[i] : NULL;
    }
    if (c->ndefs == c->capdefs) {
        size_t ncap = c->capdefs ? c->capdefs * 2 : 16;
        cfg_default **nd = realloc(c->defs, ncap * sizeof *nd);
        if (!nd) return NULL;
        c->defs = nd;
        c->capdefs = ncap;
    }
    cfg_default *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    c->defs[c->ndefs++] = d;
    d->field = f;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return NULL;
    yaml_parser_set_input_string(&parser, (const unsigned char *)f->def, strlen(f->def));
    d->ok = yaml_parser_load(&parser, &d->doc) != 0;
    yaml_parser_delete(&parser);
    return d->ok ? d : NULL;
}

/* Fills a field that is absent (or null): its default, required, or zero. */
static void apply_absent(cfg_ctx *c, const ir_cfg_field *f, void *p, int depth) {
    if (f->def) {
        cfg_default *d = get_default(c, f);
        if (!d) {
            cfg_err(c, "schema error: default does not parse");
            return;
        }
        yaml_node_t *root = yaml_document_get_root_node(&d->doc);
        if (node_is_null(root)) {
            /* An empty default: "" for strings, else as if there were none. */
            if (f->type == IR_CFG_STRING)
                *(char **)p = ir_arena_strdup(c->cfg->arena, "");
            else if (f->type == IR_CFG_OBJECT && f->sub)
                apply_schema(c, f->sub, p, NULL, depth + 1);
            return;
        }
        yaml_document_t *saved = c->doc;
        bool saved_in = c->in_default;
        c->doc = &d->doc;
        c->in_default = true;
        apply_value(c, f, p, root, depth);
        c->doc = saved;
        c->in_default = saved_in;
    } else if (f->required) {
        cfg_err(c, "required");
    } else if (f->type == IR_CFG_OBJECT && f->sub) {
        apply_schema(c, f->sub, p, NULL, depth + 1);
    }
}

static void apply_field(cfg_ctx *c, const ir_cfg_field *f, void *base, yaml_node_t *n, int depth) {
    void *p = field_ptr(base, f);
    if (node_is_null(n))
        apply_absent(c, f, p, depth);
    else
        apply_value(c, f, p, n, depth);
}

/* Fills the struct at base from a mapping node (NULL: absent, defaults only). */
static void apply_schema(cfg_ctx *c, const ir_cfg_schema *s, void *base, yaml_node_t *node,
                         int depth) {
    if (depth > CFG_MAX_DEPTH) {
        cfg_err(c, "nesting deeper than %d", CFG_MAX_DEPTH);
        return;
    }
    if (node_is_null(node)) node = NULL;
    if (node && node->type != YAML_MAPPING_NODE) {
        cfg_err(c, "expected a mapping");
        return;
    }
    bool small[64] = {0};
    bool *seen = s->nfields <= IR_ARRAY_LEN(small) ? small : calloc(s->nfields, sizeof *seen);
    if (!seen) {
        cfg_err(c, "out of memory");
        return;
    }
    for (yaml_node_pair_t *pr = node ? node->data.mapping.pairs.start : NULL;
         node && pr < node->data.mapping.pairs.top && !cfg_stopped(c); pr++) {
        yaml_node_t *k = get_node(c, pr->key);
        if (!k || k->type != YAML_SCALAR_NODE) {
            cfg_err(c, "keys must be strings");
            continue;
        }
        size_t klen = k->data.scalar.length;
        size_t fi = s->nfields;
        for (size_t i = 0; i < s->nfields; i++) {
            const char *fk = s->fields[i].key;
            if (strlen(fk) == klen && memcmp(fk, scalar_str(k), klen) == 0) {
                fi = i;
                break;
            }
        }
        size_t old = path_push_key(c, scalar_str(k), klen);
        if (fi == s->nfields) {
            cfg_err(c, "unknown key");
        } else if (seen[fi]) {
            cfg_err(c, "duplicate key");
        } else {
            seen[fi] = true;
            apply_field(c, &s->fields[fi], base, get_node(c, pr->value), depth);
        }
        path_pop(c, old);
    }
    for (size_t i = 0; i < s->nfields && !cfg_stopped(c); i++) {
        if (seen[i]) continue;
        const ir_cfg_field *f = &s->fields[i];
        size_t old = path_push_key(c, f->key, strlen(f->key));
        apply_absent(c, f, field_ptr(base, f), depth);
        path_pop(c, old);
    }
    if (seen != small) free(seen);
}

/* ---- loading ------------------------------------------------------------------- */

static void parser_error(cfg_ctx *c, const yaml_parser_t *p, const char *src) {
    c->nerr++;
    if (p->error == YAML_READER_ERROR) {
        ir_cfg_errors_add(c->errs, "%s: invalid input at byte %zu: %s", src, p->problem_offset,
                          p->problem ? p->problem : "bad encoding");
    } else if (p->context) {
        ir_cfg_errors_add(c->errs, "%s:%zu:%zu: %s %s (started at line %zu)", src,
                          p->problem_mark.line + 1, p->problem_mark.column + 1,
                          p->problem ? p->problem : "syntax error", p->context,
                          p->context_mark.line + 1);
    } else {
        ir_cfg_errors_add(c->errs, "%s:%zu:%zu: %s", src, p->problem_mark.line + 1,
                          p->problem_mark.column + 1, p->problem ? p->problem : "syntax error");
    }
}

/* The event pass: syntax errors, aliases, several documents, nesting depth. */
static int prescan(cfg_ctx *c, const char *yaml, size_t len, const char *src) {
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        cfg_err(c, "out of memory");
        return -1;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    int depth = 0, docs = 0;
    size_t before = c->nerr;
    for (bool done = false; !done && !cfg_stopped(c);) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            parser_error(c, &p, src);
            break;
        }
        size_t line = ev.start_mark.line + 1, col = ev.start_mark.column + 1;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            if (++docs > 1) {
                c->nerr++;
                ir_cfg_errors_add(c->errs, "%s:%zu:%zu: only one YAML document is allowed", src,
                                  line, col);
                done = true;
            }
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > CFG_MAX_DEPTH) {
                c->nerr++;
                ir_cfg_errors_add(c->errs, "%s:%zu:%zu: nesting deeper than %d", src, line, col,
                                  CFG_MAX_DEPTH);
                done = true;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_ALIAS_EVENT:
            c->nerr++;
            if (c->nerr <= CFG_MAX_ERRORS)
                ir_cfg_errors_add(c->errs, "%s:%zu:%zu: YAML aliases are not allowed (*%.64s)", src,
                                  line, col, (const char *)ev.data.alias.anchor);
            break;
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return c->nerr > before ? -1 : 0;
}

void ir_cfg_free(ir_cfg *c) {
    if (!c) return;
    ir_arena_free(c->arena);
    json_decref(c->maps);
    free(c);
}

ir_arena *ir_cfg_arena(ir_cfg *c) {
    return c ? c->arena : NULL;
}

static ir_cfg *cfg_load(const char *yaml, size_t len, const char *src, const ir_cfg_schema *schema,
                        void *out, ir_cfg_errors *errs, bool keep) {
    cfg_ctx c = {.errs = errs};
    memset(out, 0, schema->size);
    if (len > CFG_MAX_BYTES) {
        ir_cfg_errors_add(errs, "%s: too large (%zu bytes, at most %u)", src, len, CFG_MAX_BYTES);
        return NULL;
    }
    if (prescan(&c, yaml, len, src) < 0) return NULL;

    c.cfg = calloc(1, sizeof *c.cfg);
    if (c.cfg) {
        c.cfg->arena = ir_arena_new(16 * 1024, CFG_ARENA_MAX);
        c.cfg->maps = json_array();
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    bool have_doc = false;
    if (!c.cfg || !c.cfg->arena || !c.cfg->maps || !yaml_parser_initialize(&parser)) {
        cfg_err(&c, "out of memory");
    } else {
        yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
        if (yaml_parser_load(&parser, &doc))
            have_doc = true;
        else
            parser_error(&c, &parser, src);
        yaml_parser_delete(&parser);
    }
    if (have_doc) {
        c.doc = &doc;
        apply_schema(&c, schema, out, yaml_document_get_root_node(&doc), 1);
        yaml_document_delete(&doc);
    }
    for (size_t i = 0; i < c.ndefs; i++) {
        if (c.defs[i]->ok) yaml_document_delete(&c.defs[i]->doc);
        free(c.defs[i]);
    }
    free(c.defs);
    if (c.nerr && !(keep && have_doc && c.cfg && c.cfg->arena && c.cfg->maps)) {
        ir_cfg_free(c.cfg);
        memset(out, 0, schema->size);
        return NULL;
    }
    return c.cfg;
}

ir_cfg *ir_cfg_load_text(const char *yaml, size_t len, const ir_cfg_schema *schema, void *out,
                         ir_cfg_errors *errs) {
    ir_cfg_errors scratch = {0};
    ir_cfg *c = cfg_load(yaml, len, CFG_DEFAULT_SRC, schema, out, errs ? errs : &scratch, false);
    ir_cfg_errors_free(&scratch);
    return c;
}

static ir_cfg *load_file(const char *path, const ir_cfg_schema *schema, void *out,
                         ir_cfg_errors *errs, bool keep) {
    memset(out, 0, schema->size);
    FILE *f = fopen(path, "rb");
    if (!f) {
        ir_cfg_errors_add(errs, "%s: %s", path, strerror(errno));
        return NULL;
    }
    /* Read at most one byte past the cap, which also works for pipes. */
    char *text = malloc(CFG_MAX_BYTES + 1);
    size_t len = 0;
    if (text) {
        size_t r;
        while (len < CFG_MAX_BYTES + 1 &&
               (r = fread(text + len, 1, CFG_MAX_BYTES + 1 - len, f)) > 0)
            len += r;
    }
    int failed = !text || ferror(f);
    fclose(f);
    if (failed) {
        ir_cfg_errors_add(errs, "%s: %s", path, text ? "read error" : "out of memory");
        free(text);
        return NULL;
    }
    if (len > CFG_MAX_BYTES) {
        ir_cfg_errors_add(errs, "%s: too large (more than %u bytes)", path, CFG_MAX_BYTES);
        free(text);
        return NULL;
    }
    ir_cfg *c = cfg_load(text, len, path, schema, out, errs, keep);
    free(text);
    return c;
}

ir_cfg *ir_cfg_load_file(const char *path, const ir_cfg_schema *schema, void *out,
                         ir_cfg_errors *errs) {
    ir_cfg_errors scratch = {0};
    ir_cfg *c = load_file(path, schema, out, errs ? errs : &scratch, false);
    ir_cfg_errors_free(&scratch);
    return c;
}

ir_cfg *ir_cfg_load_file_partial(const char *path, const ir_cfg_schema *schema, void *out,
                                 ir_cfg_errors *errs) {
    return load_file(path, schema, out, errs, true);
}

/* ---- the example file ---------------------------------------------------------- */

typedef struct cfg_writer {
    ir_buf *out;
    int rc;
} cfg_writer;

/* Starts a line: indentation, "# " when commented (at column cindent), and a
 * "- " in place of the last two spaces for a list element's first field. */
static void line_start(cfg_writer *w, int indent, int cindent, bool commented, bool *dash) {
    int lead = commented ? cindent : indent;
    for (int i = 0; i < lead; i++) w->rc |= ir_buf_append(w->out, " ", 1);
    if (commented) w->rc |= ir_buf_append(w->out, "# ", 2);
    int rest = indent - lead;
    if (dash && *dash) {
        for (int i = 0; i < rest - 2; i++) w->rc |= ir_buf_append(w->out, " ", 1);
        w->rc |= ir_buf_append(w->out, "- ", 2);
        *dash = false;
    } else {
        for (int i = 0; i < rest; i++) w->rc |= ir_buf_append(w->out, " ", 1);
    }
}

/* "  # doc (required) (one of: a, b)" at the end of a field's line. */
static void line_end(cfg_writer *w, const ir_cfg_field *f) {
    bool any = f->doc || f->required || f->type == IR_CFG_ENUM;
    if (any) w->rc |= ir_buf_append_str(w->out, "  #");
    if (f->doc) w->rc |= ir_buf_appendf(w->out, " %s", f->doc);
    if (f->required) w->rc |= ir_buf_append_str(w->out, " (required)");
    if (f->type == IR_CFG_ENUM) {
        char list[512];
        enum_choices(f, list, sizeof list);
        w->rc |= ir_buf_appendf(w->out, " (one of: %s)", list);
    }
    w->rc |= ir_buf_append_str(w->out, "\n");
}

static void write_fields(cfg_writer *w, const ir_cfg_schema *s, int indent, bool commented,
                         int cindent, bool *dash, int depth) {
    if (depth > CFG_MAX_DEPTH) return;
    for (size_t i = 0; i < s->nfields; i++) {
        const ir_cfg_field *f = &s->fields[i];
        /* A required field without a default cannot be written uncommented. */
        bool com = commented || (f->required && !f->def);
        int cin = commented ? cindent : indent;
        line_start(w, indent, cin, com, dash);
        w->rc |= ir_buf_appendf(w->out, "%s:", f->key);
        if (f->type == IR_CFG_OBJECT && f->sub && !f->def) {
            if (f->sub->nfields == 0) w->rc |= ir_buf_append_str(w->out, " {}");
            line_end(w, f);
            write_fields(w, f->sub, indent + 2, com, cin, NULL, depth + 1);
        } else if (f->type == IR_CFG_LIST && f->sub) {
            if (f->def) w->rc |= ir_buf_appendf(w->out, " %s", f->def);
            line_end(w, f);
            /* One example element, commented out. */
            bool d = true;
            write_fields(w, f->sub, indent + 4, true, com ? cin : indent, &d, depth + 1);
        } else {
            /* Scalars, and objects whose own default overrides their fields'. */
            if (f->def) w->rc |= ir_buf_appendf(w->out, " %s", f->def);
            line_end(w, f);
        }
    }
}

int ir_cfg_write_defaults(ir_buf *out, const ir_cfg_schema *schema) {
    cfg_writer w = {.out = out};
    if (schema->name) w.rc |= ir_buf_appendf(out, "# %s\n", schema->name);
    write_fields(&w, schema, 0, false, 0, NULL, 0);
    return w.rc ? -1 : 0;
}
