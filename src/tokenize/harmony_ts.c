/* harmony_ts.c: function tools as openai-harmony shows them to gpt-oss, a
 * TypeScript-like namespace (src/encoding.rs of openai/harmony at ec7606df:
 * json_schema_to_typescript and template_tools_section, described in
 * docs/tokenizer.md). Written from that description; nothing is copied. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/harmony_internal.h"

#define PUT(b, s) ir_buf_append((b), (s), strlen(s))

/* Schemas nested deeper are not followed (the recursion stays bounded). */
#define HM_MAX_DEPTH 48

static int schema_ts(const json_t *schema, const char *indent, ir_buf *out, int depth);

/* The member key of o when it is a string, else NULL (serde's as_str). */
static const char *str_of(const json_t *o, const char *key) {
    return json_string_value(json_object_get(o, key));
}

static bool is_enum(const json_t *s) {
    json_t *e = json_object_get(s, "enum");
    return json_is_array(e) && json_array_size(e) > 0;
}

/* A real as serde_json prints an f64 (ryu's shortest form), for the values
 * where that is the shortest round-trip decimal with a ".0" when integral;
 * others are refused. */
static int put_real(ir_buf *b, double x) {
    double ax = fabs(x);
    if (!isfinite(x) || (ax != 0 && (ax < 1e-4 || ax >= 1e15))) return IRT_EUNSUPPORTED;
    char tmp[40];
    if (x == floor(x)) { /* integral: ryu writes all its digits and ".0" */
        snprintf(tmp, sizeof tmp, "%.0f.0", x);
        return PUT(b, tmp) ? IRT_ENOMEM : IRT_OK;
    }
    for (int p = 1; p <= 17; p++) {
        snprintf(tmp, sizeof tmp, "%.*g", p, x);
        if (strtod(tmp, NULL) == x) break;
    }
    if (strchr(tmp, 'e')) return IRT_EUNSUPPORTED;
    if (!strchr(tmp, '.')) strcat(tmp, ".0");
    return PUT(b, tmp) ? IRT_ENOMEM : IRT_OK;
}

/* A JSON string as serde_json writes it: ", \ and control characters
 * escaped (\b \f \n \r \t, else \u00xx), everything else as is. */
static int put_json_string(ir_buf *b, const char *s, size_t n) {
    int rc = ir_buf_append_lit(b, "\"");
    for (size_t i = 0; !rc && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        static const char short_esc[] = {
            ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n', ['\r'] = 'r', ['\t'] = 't'};
        if (c == '"' || c == '\\')
            rc = ir_buf_appendf(b, "\\%c", c);
        else if (c < 0x20 && c < sizeof short_esc && short_esc[c])
            rc = ir_buf_appendf(b, "\\%c", short_esc[c]);
        else if (c < 0x20)
            rc = ir_buf_appendf(b, "\\u%04x", c);
        else
            rc = ir_buf_append(b, s + i, 1);
    }
    return rc ? IRT_ENOMEM : ir_buf_append_lit(b, "\"") ? IRT_ENOMEM : IRT_OK;
}

/* A value as serde_json's Display writes it: compact JSON, keys in order. */
static int put_json(ir_buf *b, const json_t *v) {
    if (irt_json_number_text(v, &(size_t){0})) return IRT_EUNSUPPORTED;
    int rc = IRT_OK;
    size_t i;
    const char *k;
    json_t *x;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        if (ir_buf_append_lit(b, "{")) return IRT_ENOMEM;
        i = 0;
        json_object_foreach((json_t *)v, k, x) {
            if (i++ && ir_buf_append_lit(b, ",")) return IRT_ENOMEM;
            if ((rc = put_json_string(b, k, strlen(k))) || ir_buf_append_lit(b, ":") ||
                (rc = put_json(b, x)))
                return rc ? rc : IRT_ENOMEM;
        }
        return ir_buf_append_lit(b, "}") ? IRT_ENOMEM : IRT_OK;
    case JSON_ARRAY:
        if (ir_buf_append_lit(b, "[")) return IRT_ENOMEM;
        json_array_foreach(v, i, x) {
            if (i && ir_buf_append_lit(b, ",")) return IRT_ENOMEM;
            if ((rc = put_json(b, x))) return rc;
        }
        return ir_buf_append_lit(b, "]") ? IRT_ENOMEM : IRT_OK;
    case JSON_STRING:
        return put_json_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return ir_buf_appendf(b, "%lld", (long long)json_integer_value(v)) ? IRT_ENOMEM : IRT_OK;
    case JSON_REAL:
        return put_real(b, json_real_value(v));
    case JSON_TRUE:
        return PUT(b, "true") ? IRT_ENOMEM : IRT_OK;
    case JSON_FALSE:
        return PUT(b, "false") ? IRT_ENOMEM : IRT_OK;
    default:
        return PUT(b, "null") ? IRT_ENOMEM : IRT_OK;
    }
}

/* "default: ..." as harmony writes a default: a plain string quoted, an
 * enum's string bare (when bare_enum) or quoted as JSON, anything else as
 * JSON. */
static int put_default(ir_buf *b, const json_t *owner, bool bare_enum) {
    json_t *d = json_object_get(owner, "default");
    if (ir_buf_append_lit(b, "default: ")) return IRT_ENOMEM;
    if (json_is_string(d) && !is_enum(owner))
        return ir_buf_appendf(b, "\"%s\"", json_string_value(d)) ? IRT_ENOMEM : IRT_OK;
    if (json_is_string(d) && bare_enum) return PUT(b, json_string_value(d)) ? IRT_ENOMEM : IRT_OK;
    return put_json(b, d);
}

static bool nullable(const json_t *s) {
    return json_is_true(json_object_get(s, "nullable"));
}

/* A variant's type, with " | null" when it is nullable and says no null. */
static int put_variant_type(ir_buf *b, const json_t *variant, const char *indent, int depth) {
    char sub[256];
    if (snprintf(sub, sizeof sub, "%s   ", indent) >= (int)sizeof sub) return IRT_EUNSUPPORTED;
    size_t from = b->len;
    int rc = schema_ts(variant, sub, b, depth + 1);
    if (rc) return rc;
    if (nullable(variant) && !memmem(b->data + from, b->len - from, "null", 4))
        return PUT(b, " | null") ? IRT_ENOMEM : IRT_OK;
    return IRT_OK;
}

/* A top-level oneOf: each variant on a line of its own, with its
 * description and default as a trailing comment. */
static int one_of(ir_buf *b, const json_t *arr, const char *indent, int depth) {
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        int rc;
        if (ir_buf_appendf(b, "\n%s | ", indent)) return IRT_ENOMEM;
        if ((rc = put_variant_type(b, v, indent, depth))) return rc;
        const char *desc = str_of(v, "description");
        bool dflt = json_object_get(v, "default") != NULL;
        if (!desc && !dflt) continue;
        if (ir_buf_append_lit(b, " // ")) return IRT_ENOMEM;
        if (desc && (PUT(b, desc) || (dflt && ir_buf_append_lit(b, " ")))) return IRT_ENOMEM;
        if (dflt && (rc = put_default(b, v, false))) return rc;
    }
    return IRT_OK;
}

/* The comments above a property: title, description, examples. */
static int prop_comments(ir_buf *b, const json_t *val, const char *indent) {
    const char *title = str_of(val, "title"), *desc = str_of(val, "description");
    if (title && ir_buf_appendf(b, "%s// %s\n%s//\n", indent, title, indent)) return IRT_ENOMEM;
    if (!json_object_get(val, "oneOf") && desc && ir_buf_appendf(b, "%s// %s\n", indent, desc))
        return IRT_ENOMEM;
    json_t *ex = json_object_get(val, "examples");
    if (!json_is_array(ex) || !json_array_size(ex)) return IRT_OK;
    if (ir_buf_appendf(b, "%s// Examples:\n", indent)) return IRT_ENOMEM;
    size_t i;
    json_t *x;
    json_array_foreach(ex, i, x) if (json_is_string(x) &&
                                     ir_buf_appendf(b, "%s// - \"%s\"\n", indent,
                                                    json_string_value(x))) return IRT_ENOMEM;
    return IRT_OK;
}

/* A property whose value is a oneOf list: its description and default
 * above its name, then one " | variant" line each. */
static int prop_one_of(ir_buf *b, const char *key, bool req, const json_t *val, const json_t *arr,
                       const char *indent, int depth) {
    const char *pdesc = str_of(val, "description");
    const char *first = str_of(json_array_get(arr, 0), "description");
    bool above = pdesc && !(first && !strcmp(first, pdesc));
    int rc;
    if (above && ir_buf_appendf(b, "%s// %s\n", indent, pdesc)) return IRT_ENOMEM;
    if (json_object_get(val, "default")) {
        if (ir_buf_appendf(b, "%s// ", indent)) return IRT_ENOMEM;
        if ((rc = put_default(b, val, true)) || ir_buf_append_lit(b, "\n"))
            return rc ? rc : IRT_ENOMEM;
    }
    if (ir_buf_appendf(b, "%s%s%s:\n", indent, key, req ? "" : "?")) return IRT_ENOMEM;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (ir_buf_appendf(b, "%s | ", indent)) return IRT_ENOMEM;
        if ((rc = put_variant_type(b, v, indent, depth))) return rc;
        const char *desc = str_of(v, "description");
        if ((i == 0 && above) || (desc && pdesc && !strcmp(desc, pdesc))) desc = NULL;
        bool dflt = json_object_get(v, "default") != NULL;
        if (desc || dflt) {
            if (ir_buf_append_lit(b, " // ")) return IRT_ENOMEM;
            if (desc && (PUT(b, desc) || (dflt && ir_buf_append_lit(b, " ")))) return IRT_ENOMEM;
            if (dflt && (rc = put_default(b, v, true))) return rc;
        }
        if (ir_buf_append_lit(b, "\n")) return IRT_ENOMEM;
    }
    return ir_buf_appendf(b, "%s,\n", indent) ? IRT_ENOMEM : IRT_OK;
}

static bool required(const json_t *schema, const char *key) {
    json_t *req = json_object_get(schema, "required");
    size_t i;
    json_t *r;
    json_array_foreach(req, i,
                       r) if (json_is_string(r) && !strcmp(json_string_value(r), key)) return true;
    return false;
}

/* One ordinary property: "key?: type, // default: ...". */
static int prop_plain(ir_buf *b, const char *key, bool req, const json_t *val, const char *indent,
                      int depth) {
    char sub[256];
    if (snprintf(sub, sizeof sub, "%s    ", indent) >= (int)sizeof sub) return IRT_EUNSUPPORTED;
    if (ir_buf_appendf(b, "%s%s%s: ", indent, key, req ? "" : "?")) return IRT_ENOMEM;
    size_t from = b->len;
    int rc = schema_ts(val, sub, b, depth + 1);
    if (rc) return rc;
    if (nullable(val) && !memmem(b->data + from, b->len - from, "null", 4) &&
        ir_buf_append_lit(b, " | null"))
        return IRT_ENOMEM;
    if (ir_buf_append_lit(b, ",")) return IRT_ENOMEM;
    if (!json_object_get(val, "oneOf") && json_object_get(val, "default")) {
        if (ir_buf_append_lit(b, " // ")) return IRT_ENOMEM;
        if ((rc = put_default(b, val, true))) return rc;
    }
    return ir_buf_append_lit(b, "\n") ? IRT_ENOMEM : IRT_OK;
}

static int object_ts(ir_buf *b, const json_t *schema, const char *indent, int depth) {
    const char *desc = str_of(schema, "description");
    if (desc && ir_buf_appendf(b, "%s// %s\n", indent, desc)) return IRT_ENOMEM;
    if (ir_buf_append_lit(b, "{\n")) return IRT_ENOMEM;
    json_t *props = json_object_get(schema, "properties");
    const char *key;
    json_t *val;
    json_object_foreach(json_is_object(props) ? props : NULL, key, val) {
        bool req = required(schema, key);
        int rc = prop_comments(b, val, indent);
        json_t *arr = json_object_get(val, "oneOf");
        if (!rc)
            rc = json_is_array(arr) ? prop_one_of(b, key, req, val, arr, indent, depth)
                                    : prop_plain(b, key, req, val, indent, depth);
        if (rc) return rc;
    }
    return ir_buf_appendf(b, "%s}", indent) ? IRT_ENOMEM : IRT_OK;
}

/* type: "string" with a non-empty enum of strings is their union. */
static int string_ts(ir_buf *b, const json_t *schema) {
    json_t *e = json_object_get(schema, "enum");
    size_t i, n = 0;
    json_t *x;
    json_array_foreach(e, i, x) if (json_is_string(x) &&
                                    ir_buf_appendf(b, "%s\"%s\"", n++ ? " | " : "",
                                                   json_string_value(x))) return IRT_ENOMEM;
    return n ? IRT_OK : PUT(b, "string") ? IRT_ENOMEM : IRT_OK;
}

/* type given as a list: its names joined with " | " (integer as number);
 * 1 when it names no type (harmony then goes on as if there were no type). */
static int type_list(ir_buf *b, const json_t *types) {
    size_t i, n = 0;
    json_t *t;
    json_array_foreach(types, i, t) {
        const char *s = json_string_value(t);
        if (!s) continue;
        if (ir_buf_appendf(b, "%s%s", n++ ? " | " : "", strcmp(s, "integer") ? s : "number"))
            return IRT_ENOMEM;
    }
    return n ? IRT_OK : 1;
}

static int schema_ts(const json_t *schema, const char *indent, ir_buf *out, int depth) {
    if (depth > HM_MAX_DEPTH) return IRT_EUNSUPPORTED;
    json_t *arr = json_object_get(schema, "oneOf");
    if (json_is_array(arr)) return one_of(out, arr, indent, depth);
    json_t *type = json_object_get(schema, "type");
    if (json_is_array(type)) {
        int rc = type_list(out, type);
        if (rc <= 0) return rc;
    }
    const char *ty = json_string_value(type);
    if (!ty) return PUT(out, "any") ? IRT_ENOMEM : IRT_OK;
    if (!strcmp(ty, "object")) return object_ts(out, schema, indent, depth);
    if (!strcmp(ty, "string")) return string_ts(out, schema);
    const char *simple = !strcmp(ty, "number") || !strcmp(ty, "integer") ? "number"
                         : !strcmp(ty, "boolean")                        ? "boolean"
                         : strcmp(ty, "array")                           ? "any"
                                                                         : NULL;
    if (simple) return PUT(out, simple) ? IRT_ENOMEM : IRT_OK;
    json_t *items = json_object_get(schema, "items");
    if (!items) return PUT(out, "Array<any>") ? IRT_ENOMEM : IRT_OK;
    int rc = schema_ts(items, indent, out, depth + 1);
    return rc ? rc : PUT(out, "[]") ? IRT_ENOMEM : IRT_OK;
}

int irt_harmony_schema_ts(const json_t *schema, const char *indent, ir_buf *out) {
    return schema_ts(schema, indent, out, 0);
}

/* Each line of s as Rust's str::lines() gives them (split at \n, a \r
 * before it dropped, no empty last line), written "// line\n"-joined. */
static int comment_lines(ir_buf *b, const char *s, size_t n) {
    size_t a = 0;
    while (a < n) {
        const char *nl = memchr(s + a, '\n', n - a);
        size_t z = nl ? (size_t)(nl - s) : n, e = z;
        if (nl && e > a && s[e - 1] == '\r') e--;
        if (ir_buf_append_lit(b, "// ") || ir_buf_append(b, s + a, e - a) ||
            ir_buf_append_lit(b, "\n"))
            return IRT_ENOMEM;
        a = z + 1;
    }
    return IRT_OK;
}

int irt_harmony_tools_section(const json_t *tools, ir_buf *out) {
    if (ir_buf_append_lit(out, "# Tools\n\n## functions\n\nnamespace functions {\n\n"))
        return IRT_ENOMEM;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        const char *name = str_of(fn, "name");
        if (!name) return IRT_EINVAL;
        json_t *desc = json_object_get(fn, "description");
        int rc = comment_lines(out, json_string_value(desc) ? json_string_value(desc) : "",
                               json_string_length(desc));
        if (rc) return rc;
        json_t *params = json_object_get(fn, "parameters");
        if (!params || json_is_null(params)) {
            if (ir_buf_appendf(out, "type %s = () => any;\n\n", name)) return IRT_ENOMEM;
            continue;
        }
        if (ir_buf_appendf(out, "type %s = (_: ", name)) return IRT_ENOMEM;
        if ((rc = irt_harmony_schema_ts(params, "", out))) return rc;
        if (ir_buf_append_lit(out, ") => any;\n\n")) return IRT_ENOMEM;
    }
    return ir_buf_append_lit(out, "} // namespace functions") ? IRT_ENOMEM : IRT_OK;
}
