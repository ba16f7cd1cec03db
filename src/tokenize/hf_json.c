/* hf_json.c: a small, fast JSON reader for tokenizer.json files.
 *
 * jansson needs over half a second for an 11 MB vocabulary; this reader
 * builds a DOM in an arena in a fraction of that. Strings are decoded in
 * place (escapes, surrogate pairs) and NUL-terminated, so the text must be
 * writable and outlive the DOM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/hf_internal.h"

#define HJ_MAX_DEPTH 256

typedef struct {
    const char *p, *end, *start;
    ir_arena *a;
    hj_val *stack;
    size_t n, cap;
    char *err;
    size_t errlen;
    bool failed;
} hj_parser;

static void hj_fail(hj_parser *ps, const char *what) {
    if (ps->failed) return;
    ps->failed = true;
    size_t off = (size_t)(ps->p - ps->start);
    size_t line = 1;
    for (const char *q = ps->start; q < ps->p; q++) line += *q == '\n';
    snprintf(ps->err, ps->errlen, "invalid JSON at byte %zu (line %zu): %s", off, line, what);
}

static int hj_push(hj_parser *ps, const hj_val *v) {
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 1024;
        hj_val *s = ir_big_grow(ps->stack, ps->cap * sizeof(*s), cap * sizeof(*s));
        if (!s) {
            hj_fail(ps, "out of memory");
            return -1;
        }
        ps->stack = s;
        ps->cap = cap;
    }
    ps->stack[ps->n++] = *v;
    return 0;
}

static inline void hj_ws(hj_parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
        ps->p++;
}

static int hj_hex4(const char *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = ir_hexval(p[i]);
        if (d < 0) return -1;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return 0;
}

static int hj_string(hj_parser *ps, hj_val *v) {
    const char *p = ++ps->p; /* past the quote */
    const char *q = p;
    while (q < ps->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20) q++;
    if (q >= ps->end) {
        hj_fail(ps, "unterminated string");
        return -1;
    }
    if (*q == '"') { /* no escapes: one copy */
        size_t n = (size_t)(q - p);
        if (hf_utf8_valid_prefix(p, n) != n) {
            hj_fail(ps, "invalid UTF-8 in string");
            return -1;
        }
        char *s = (char *)p; /* in place: the closing quote becomes the NUL */
        s[n] = 0;
        *v = (hj_val){.type = HJ_STR, .n = (uint32_t)n, .u.s = s};
        ps->p = q + 1;
        return 0;
    }
    /* With escapes: the decoded text is never longer than the source. */
    const char *e = q;
    while (e < ps->end && *e != '"') e += (*e == '\\' && e + 1 < ps->end) ? 2 : 1;
    if (e >= ps->end) {
        hj_fail(ps, "unterminated string");
        return -1;
    }
    char *out = (char *)p; /* decoded in place: never longer than the source */
    size_t o = 0;
    q = p;
    while (q < e) {
        unsigned char c = (unsigned char)*q;
        if (c < 0x20) {
            ps->p = q;
            hj_fail(ps, "control character in string");
            return -1;
        }
        if (c != '\\') {
            out[o++] = (char)c;
            q++;
            continue;
        }
        q++;
        switch (*q) {
        case '"':
            out[o++] = '"';
            break;
        case '\\':
            out[o++] = '\\';
            break;
        case '/':
            out[o++] = '/';
            break;
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'n':
            out[o++] = '\n';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'u': {
            uint32_t cp;
            if (e - q < 5 || hj_hex4(q + 1, &cp)) {
                ps->p = q;
                hj_fail(ps, "bad \\u escape");
                return -1;
            }
            q += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (e - q < 7 || q[1] != '\\' || q[2] != 'u' || hj_hex4(q + 3, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF) {
                    ps->p = q;
                    hj_fail(ps, "lone surrogate in \\u escape");
                    return -1;
                }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                q += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                ps->p = q;
                hj_fail(ps, "lone surrogate in \\u escape");
                return -1;
            }
            o += (size_t)hf_utf8_enc(cp, out + o);
            break;
        }
        default:
            ps->p = q;
            hj_fail(ps, "bad escape");
            return -1;
        }
        q++;
    }
    out[o] = 0;
    if (hf_utf8_valid_prefix(out, o) != o) {
        hj_fail(ps, "invalid UTF-8 in string");
        return -1;
    }
    *v = (hj_val){.type = HJ_STR, .n = (uint32_t)o, .u.s = out};
    ps->p = e + 1;
    return 0;
}

static int hj_number(hj_parser *ps, hj_val *v) {
    const char *p = ps->p, *s = p;
    bool neg = false, is_int = true;
    if (p < ps->end && *p == '-') {
        neg = true;
        p++;
    }
    if (p >= ps->end || *p < '0' || *p > '9') {
        hj_fail(ps, "bad number");
        return -1;
    }
    uint64_t iv = 0;
    int digits = 0;
    while (p < ps->end && *p >= '0' && *p <= '9') {
        iv = iv * 10 + (uint64_t)(*p - '0');
        digits++;
        p++;
    }
    if (p < ps->end && (*p == '.' || *p == 'e' || *p == 'E')) {
        is_int = false;
        if (*p == '.') p++;
        while (p < ps->end &&
               ((*p >= '0' && *p <= '9') || *p == 'e' || *p == 'E' || *p == '+' || *p == '-'))
            p++;
    }
    if (digits > 18) is_int = false;
    *v = (hj_val){.type = HJ_NUM, .is_int = is_int};
    if (is_int) {
        v->u.i = neg ? -(int64_t)iv : (int64_t)iv;
    } else {
        char tmp[64];
        size_t n = (size_t)(p - s);
        if (n >= sizeof(tmp)) n = sizeof(tmp) - 1;
        memcpy(tmp, s, n);
        tmp[n] = 0;
        v->u.num = strtod(tmp, NULL);
    }
    ps->p = p;
    return 0;
}

static int hj_value(hj_parser *ps, hj_val *v, int depth);

static int hj_container(hj_parser *ps, hj_val *v, int depth, bool obj) {
    if (depth > HJ_MAX_DEPTH) {
        hj_fail(ps, "nesting too deep");
        return -1;
    }
    char close = obj ? '}' : ']';
    size_t base = ps->n;
    ps->p++;
    hj_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
    } else {
        for (;;) {
            hj_val item;
            hj_ws(ps);
            if (obj) {
                if (ps->p >= ps->end || *ps->p != '"') {
                    hj_fail(ps, "expected a key");
                    return -1;
                }
                if (hj_string(ps, &item) || hj_push(ps, &item)) return -1;
                hj_ws(ps);
                if (ps->p >= ps->end || *ps->p != ':') {
                    hj_fail(ps, "expected ':'");
                    return -1;
                }
                ps->p++;
            }
            if (hj_value(ps, &item, depth + 1) || hj_push(ps, &item)) return -1;
            hj_ws(ps);
            if (ps->p < ps->end && *ps->p == ',') {
                ps->p++;
                continue;
            }
            if (ps->p < ps->end && *ps->p == close) {
                ps->p++;
                break;
            }
            hj_fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
            return -1;
        }
    }
    size_t cnt = ps->n - base;
    hj_val *items = NULL;
    if (cnt) {
        items = ir_arena_alloc(ps->a, cnt * sizeof(*items));
        if (!items) {
            hj_fail(ps, "out of memory");
            return -1;
        }
        memcpy(items, ps->stack + base, cnt * sizeof(*items));
    }
    ps->n = base;
    *v = (hj_val){
        .type = obj ? HJ_OBJ : HJ_ARR, .n = (uint32_t)(obj ? cnt / 2 : cnt), .u.items = items};
    return 0;
}

static int hj_lit(hj_parser *ps, const char *w, size_t n) {
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n) != 0) {
        hj_fail(ps, "unexpected character");
        return -1;
    }
    ps->p += n;
    return 0;
}

static int hj_value(hj_parser *ps, hj_val *v, int depth) {
    hj_ws(ps);
    if (ps->p >= ps->end) {
        hj_fail(ps, "unexpected end of input");
        return -1;
    }
    switch (*ps->p) {
    case '{':
        return hj_container(ps, v, depth, true);
    case '[':
        return hj_container(ps, v, depth, false);
    case '"':
        return hj_string(ps, v);
    case 't':
        *v = (hj_val){.type = HJ_TRUE};
        return hj_lit(ps, "true", 4);
    case 'f':
        *v = (hj_val){.type = HJ_FALSE};
        return hj_lit(ps, "false", 5);
    case 'n':
        *v = (hj_val){.type = HJ_NULL};
        return hj_lit(ps, "null", 4);
    default:
        return hj_number(ps, v);
    }
}

hj_val *hj_parse(ir_arena *a, char *text, size_t len, char *err, size_t errlen) {
    hj_parser ps = {
        .p = text, .end = text + len, .start = text, .a = a, .err = err, .errlen = errlen};
    hj_val *root = ir_arena_alloc(a, sizeof(*root));
    if (!root) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int rc = hj_value(&ps, root, 0);
    if (!rc) {
        hj_ws(&ps);
        if (ps.p != ps.end) {
            hj_fail(&ps, "trailing characters");
            rc = -1;
        }
    }
    ir_big_free(ps.stack);
    return rc ? NULL : root;
}

const hj_val *hj_get(const hj_val *obj, const char *key) {
    if (!obj || obj->type != HJ_OBJ) return NULL;
    size_t kl = strlen(key);
    const hj_val *found = NULL;
    for (uint32_t i = 0; i < obj->n; i++) {
        const hj_val *k = &obj->u.items[2 * i];
        if (k->n == kl && memcmp(k->u.s, key, kl) == 0) found = &obj->u.items[2 * i + 1];
    }
    return found; /* the last duplicate wins, as serde does */
}
