/* json.c: small helpers over jansson. */
#include "core/ir_core.h"

#include <string.h>
#include <strings.h>
#include <utf8proc.h>

static int dump_cb(const char *buffer, size_t size, void *data) {
    return ir_buf_append((ir_buf *)data, buffer, size);
}

int ir_json_append(ir_buf *out, const json_t *v, bool python_style) {
    size_t flags = JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17);
    if (!python_style) flags |= JSON_COMPACT;
    /* jansson's non-compact mode without indent writes ", " and ": ", as Python does. */
    return json_dump_callback(v, dump_cb, out, flags);
}

int ir_json_append_readable(ir_buf *out, const json_t *v) {
    size_t flags = JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10);
    return json_dump_callback(v, dump_cb, out, flags);
}

const char *ir_json_str(const json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool word_is(const char *s, size_t n, const char *w) {
    return n == strlen(w) && strncasecmp(s, w, n) == 0;
}

int ir_json_lax_bool(const json_t *v, bool *out) {
    static const char *const no[] = {"0", "off", "f", "false", "n", "no"};
    static const char *const yes[] = {"1", "on", "t", "true", "y", "yes"};
    if (json_is_boolean(v)) return *out = json_is_true(v), 0;
    if (json_is_number(v) && (json_number_value(v) == 0 || json_number_value(v) == 1))
        return *out = json_number_value(v) == 1, 0;
    if (!json_is_string(v)) return -1;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        if (word_is(s, n, no[i])) return *out = false, 0;
        if (word_is(s, n, yes[i])) return *out = true, 0;
    }
    return -1;
}

bool ir_json_truthy(const json_t *v) {
    if (!v) return false;
    switch (json_typeof(v)) {
    case JSON_TRUE:
        return true;
    case JSON_INTEGER:
    case JSON_REAL:
        return json_number_value(v) != 0;
    case JSON_STRING:
        return json_string_length(v) > 0;
    case JSON_ARRAY:
        return json_array_size(v) > 0;
    case JSON_OBJECT:
        return json_object_size(v) > 0;
    default:
        return false; /* null, false */
    }
}

int ir_json_append_string(ir_buf *out, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    if (ir_buf_reserve(out, n + 2)) return -1;
    if (ir_buf_append(out, "\"", 1)) return -1;
    size_t run = 0; /* bytes copied verbatim in one go */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = ir_json_short_escape(c);
        char u[6];
        if (!esc && c < 0x20) {
            u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0', u[4] = hex[c >> 4];
            u[5] = hex[c & 15];
        }
        if (c >= 0x80) {
            /* Valid UTF-8 is copied; an invalid byte (a lone surrogate, an overlong or cut
             * sequence) becomes U+FFFD, so the output is always valid JSON and UTF-8. */
            utf8proc_int32_t cp;
            utf8proc_ssize_t k =
                utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
            if (k > 0) {
                run += (size_t)k;
                i += (size_t)k - 1;
                continue;
            }
            esc = "\\ufffd";
        }
        if (!esc && c >= 0x20) {
            run++;
            continue;
        }
        if (run && ir_buf_append(out, s + i - run, run)) return -1;
        run = 0;
        if (esc ? ir_buf_append_str(out, esc) : ir_buf_append(out, u, 6)) return -1;
    }
    if (run && ir_buf_append(out, s + n - run, run)) return -1;
    return ir_buf_append(out, "\"", 1);
}
