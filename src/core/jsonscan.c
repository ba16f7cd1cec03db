/* jsonscan.c: a validating single-pass scanner that locates one top-level key.
 * It accepts what Python's json.loads accepts, as the engines read bodies with
 * it: JSON, plus NaN, Infinity and -Infinity; numbers of any size. */
#include "core/ir_core.h"

#include <stdint.h>
#include <string.h>

typedef struct scan {
    const char *p;
    size_t n, i;
    size_t depth, max_depth;
} scan;

static void ws(scan *s) {
    while (s->i < s->n) {
        char c = s->p[s->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        s->i++;
    }
}

/* Length of the valid UTF-8 sequence at p (n bytes left), or 0 when invalid:
 * no overlongs, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len) return 0;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return 0;
    return len;
}

/* Skips plain bytes (printable ASCII other than '"' and '\\') eight at a time,
 * up to the first block of eight that holds another byte. Each test says
 * whether any byte of the word is such a byte, exactly (the borrow of v - k
 * can set a high bit only above a byte that really is one). */
static size_t skip_plain8(const unsigned char *p, size_t i, size_t n) {
    const uint64_t ones = 0x0101010101010101ull, highs = ones * 0x80;
    while (n - i >= 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
        uint64_t other = v | ((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b);
        if (other & highs) break; /* >= 0x80, < 0x20, a quote or a backslash */
        i += 8;
    }
    return i;
}

/* A string token starting at s->i (the opening quote). Plain bytes (printable
 * ASCII other than '"' and '\\') are skipped eight at a time, then in a tight
 * loop on locals: prompts make up most of a body. */
static int str(scan *s) {
    const unsigned char *p = (const unsigned char *)s->p;
    size_t i = s->i, n = s->n;
    if (i >= n || p[i] != '"') return -1;
    i++;
    for (;;) {
        i = skip_plain8(p, i, n);
        while (i < n && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\') i++;
        if (i >= n) break;
        unsigned char c = p[i];
        if (c == '"') {
            s->i = i + 1;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c >= 0x80) {
            size_t l = utf8_len(p + i, n - i);
            if (!l) return -1;
            i += l;
            continue;
        }
        /* a backslash */
        if (++i >= n) return -1;
        char e = (char)p[i];
        if (e == 'u') {
            if (i + 4 >= n) return -1;
            for (int k = 1; k <= 4; k++)
                if (ir_hexval((char)p[i + k]) < 0) return -1;
            i += 5;
            continue;
        }
        if (!strchr("\"\\/bfnrt", e) || e == 0) return -1;
        i++;
    }
    return -1;
}

static int number(scan *s) {
    size_t st = s->i;
    if (s->i < s->n && s->p[s->i] == '-') s->i++;
    if (s->i >= s->n) return -1;
    if (s->p[s->i] == '0') {
        s->i++;
    } else if (s->p[s->i] >= '1' && s->p[s->i] <= '9') {
        while (s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9') s->i++;
    } else {
        return -1;
    }
    if (s->i < s->n && s->p[s->i] == '.') {
        s->i++;
        size_t d = s->i;
        while (s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9') s->i++;
        if (s->i == d) return -1;
    }
    if (s->i < s->n && (s->p[s->i] == 'e' || s->p[s->i] == 'E')) {
        s->i++;
        if (s->i < s->n && (s->p[s->i] == '+' || s->p[s->i] == '-')) s->i++;
        size_t d = s->i;
        while (s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9') s->i++;
        if (s->i == d) return -1;
    }
    return s->i > st ? 0 : -1;
}

static int literal(scan *s, const char *w) {
    size_t l = strlen(w);
    if (s->n - s->i < l || memcmp(s->p + s->i, w, l) != 0) return -1;
    s->i += l;
    return 0;
}

static int value(scan *s);

static int container(scan *s, char open, char close) {
    if (++s->depth > s->max_depth) return -1;
    s->i++; /* the opening bracket */
    ws(s);
    if (s->i < s->n && s->p[s->i] == close) {
        s->i++;
        s->depth--;
        return 0;
    }
    for (;;) {
        ws(s);
        if (open == '{') {
            if (str(s)) return -1;
            ws(s);
            if (s->i >= s->n || s->p[s->i] != ':') return -1;
            s->i++;
            ws(s);
        }
        if (value(s)) return -1;
        ws(s);
        if (s->i >= s->n) return -1;
        if (s->p[s->i] == ',') {
            s->i++;
            continue;
        }
        if (s->p[s->i] == close) {
            s->i++;
            s->depth--;
            return 0;
        }
        return -1;
    }
}

static int value(scan *s) {
    if (s->i >= s->n) return -1;
    switch (s->p[s->i]) {
    case '"':
        return str(s);
    case '{':
        return container(s, '{', '}');
    case '[':
        return container(s, '[', ']');
    case 't':
        return literal(s, "true");
    case 'f':
        return literal(s, "false");
    case 'n':
        return literal(s, "null");
    case 'N': /* json.loads reads these three, and so does the engine behind us */
        return literal(s, "NaN");
    case 'I':
        return literal(s, "Infinity");
    default:
        if (s->n - s->i > 1 && s->p[s->i] == '-' && s->p[s->i + 1] == 'I') {
            s->i++;
            return literal(s, "Infinity");
        }
        return number(s);
    }
}

/* Compares a raw string token with key, decoding escapes in the token. */
static bool key_equals(const char *tok, size_t len, const char *key) {
    size_t kl = strlen(key);
    if (len - 2 == kl && memcmp(tok + 1, key, kl) == 0) return true;
    if (!memchr(tok, '\\', len)) return false;
    ir_buf b;
    ir_buf_init(&b, len + 8);
    bool eq = ir_json_unescape(tok, len, &b) == 0 && b.len == kl && memcmp(b.data, key, kl) == 0;
    ir_buf_free(&b);
    return eq;
}

/* Each top-level member whose key is one of keys[0..n): its span in out[k], and found[k]. */
static int members(scan *s, const char *const *keys, size_t n, ir_json_span *out, bool *found) {
    for (;;) {
        ws(s);
        size_t ks = s->i;
        if (str(s)) return IR_JSON_INVALID;
        size_t k = 0;
        while (k < n && !key_equals(s->p + ks, s->i - ks, keys[k])) k++;
        ws(s);
        if (s->i >= s->n || s->p[s->i] != ':') return IR_JSON_INVALID;
        s->i++;
        ws(s);
        size_t vs = s->i;
        if (value(s)) return IR_JSON_INVALID;
        if (k < n) { /* the last duplicate wins */
            found[k] = true;
            out[k].start = vs;
            out[k].end = s->i;
            out[k].is_string = s->p[vs] == '"';
        }
        ws(s);
        if (s->i >= s->n) return IR_JSON_INVALID;
        if (s->p[s->i] == '}') {
            s->i++;
            return 0;
        }
        if (s->p[s->i] != ',') return IR_JSON_INVALID;
        s->i++;
    }
}

int ir_json_scan_keys(const char *doc, size_t len, const char *const *keys, size_t n,
                      ir_json_span *out, int *res, size_t max_depth) {
    scan s = {.p = doc, .n = len, .max_depth = max_depth ? max_depth : 256};
    bool found[IR_JSON_MAX_KEYS] = {false};
    if (n > IR_JSON_MAX_KEYS) return IR_JSON_INVALID;
    memset(out, 0, n * sizeof *out);
    if (ir_has_utf8_bom(doc, len)) s.i = IR_UTF8_BOM_LEN; /* offsets stay the document's */
    ws(&s);
    if (s.i >= s.n || s.p[s.i] != '{') return IR_JSON_INVALID;
    size_t open = s.i++;
    s.depth = 1;
    ws(&s);
    bool empty = s.i < s.n && s.p[s.i] == '}';
    if (empty)
        s.i++;
    else if (members(&s, keys, n, out, found))
        return IR_JSON_INVALID;
    ws(&s);
    if (s.i != s.n) return IR_JSON_INVALID; /* trailing data */
    for (size_t k = 0; k < n; k++) {
        out[k].obj_open = open;
        out[k].obj_empty = empty;
        res[k] = found[k] ? IR_JSON_FOUND : IR_JSON_ABSENT;
    }
    return 0;
}

int ir_json_scan_key(const char *doc, size_t len, const char *key, ir_json_span *out,
                     size_t max_depth) {
    int res;
    if (ir_json_scan_keys(doc, len, &key, 1, out, &res, max_depth)) return IR_JSON_INVALID;
    return res;
}

static int put_utf8(ir_buf *o, uint32_t cp) {
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (char)(0xF0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return ir_buf_append(o, b, n);
}

int ir_json_unescape(const char *tok, size_t len, ir_buf *out) {
    if (len < 2 || tok[0] != '"' || tok[len - 1] != '"') return -1;
    size_t i = 1, end = len - 1;
    while (i < end) {
        size_t j = i;
        while (j < end && tok[j] != '\\') j++;
        if (j > i && ir_buf_append(out, tok + i, j - i)) return -1;
        if (j >= end) break;
        if (j + 1 >= end) return -1;
        char e = tok[j + 1];
        i = j + 2;
        char c;
        switch (e) {
        case '"':
            c = '"';
            break;
        case '\\':
            c = '\\';
            break;
        case '/':
            c = '/';
            break;
        case 'b':
            c = '\b';
            break;
        case 'f':
            c = '\f';
            break;
        case 'n':
            c = '\n';
            break;
        case 'r':
            c = '\r';
            break;
        case 't':
            c = '\t';
            break;
        case 'u': {
            if (i + 4 > end) return -1;
            uint32_t cp = 0;
            for (int k = 0; k < 4; k++) {
                int h = ir_hexval(tok[i + (size_t)k]);
                if (h < 0) return -1;
                cp = cp << 4 | (uint32_t)h;
            }
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= end && tok[i] == '\\' &&
                tok[i + 1] == 'u') {
                uint32_t lo = 0;
                bool ok = true;
                for (int k = 0; k < 4; k++) {
                    int h = ir_hexval(tok[i + 2 + (size_t)k]);
                    if (h < 0) ok = false;
                    lo = lo << 4 | (uint32_t)(h < 0 ? 0 : h);
                }
                if (ok && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
            }
            /* A lone surrogate is kept as Python keeps it (encoded as is). */
            if (put_utf8(out, cp)) return -1;
            continue;
        }
        default:
            return -1;
        }
        if (ir_buf_append(out, &c, 1)) return -1;
    }
    return 0;
}
