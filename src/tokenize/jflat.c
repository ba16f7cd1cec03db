/* jflat.c: JSON read without jansson's lexer (see jscan.h).
 *
 * jansson reads a string a byte at a time through three function calls, about
 * 140 instructions a byte; a chat's new last turn is such a string, read on
 * every request, and a hostile body's 4 MiB message costs jansson 36 ms.
 * Here string bytes are read eight at a time until a quote, a backslash, a
 * control byte or a non-ASCII byte, UTF-8 checked as jansson checks it,
 * escapes decoded as jansson decodes them; members are set with the same
 * jansson call its parser uses (so a key given twice keeps its first place and
 * its last value, as there), elements appended as there.
 *
 * irt_jflat_object reads a flat object of strings (the parse cache's chat
 * message); irt_jfast_loadb any JSON text (the whole body, irt_json_loads's
 * first try): objects, arrays, strings, true, false, null, integers as
 * jansson's strtoll reads them and reals as its strtod reads them.
 *
 * Anything else is declined (NULL) and left to jansson: a key holding "\u0000",
 * a lone surrogate, an escape jansson refuses, "\u0000" without JSON_ALLOW_NUL,
 * an integer past 64 bits, a real past the double range, nesting deeper than
 * JFAST_MAX_DEPTH (jansson's own limit is 2048), any flag but JSON_ALLOW_NUL and
 * JSON_DECODE_ANY, and every malformed input. So what is read here, jansson
 * reads to the same value with its members in the same order, and what
 * jansson refuses is never read here. test_jscan, fuzz_jflat and
 * fuzz_parse_cache compare the two. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/jscan.h"

#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

static bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const char *s, size_t n, size_t i) {
    while (i < n && is_ws(s[i])) i++;
    return i;
}

/* Whether any byte of w is '"', '\\', below 0x20 or 0x80 and up. */
static bool has_special(uint64_t w) {
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    uint64_t zero_q = (q - ONES) & ~q, zero_b = (b - ONES) & ~b;
    uint64_t below = (w - ONES * 0x20) & ~w;
    return ((zero_q | zero_b | below) & HIGHS) || (w & HIGHS);
}

/* The length of the valid UTF-8 sequence at s[i] (first byte >= 0x80), as
 * jansson's utf8_check_full accepts it: no overlong form, no surrogate, at most
 * U+10FFFF; 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n, size_t i) {
    unsigned c = s[i];
    size_t k;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF)
        k = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
        k = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
        k = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n - i < k) return 0;
    for (size_t j = 1; j < k; j++) {
        if ((s[i + j] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return k;
}

static int hex4(const char *s, size_t n, size_t i, uint32_t *out) {
    if (n - i < 4) return -1;
    uint32_t v = 0;
    for (size_t j = i; j < i + 4; j++) {
        char c = s[j];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return -1;
        v = v << 4 | (uint32_t)d;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One escape at s[*i] (just past its backslash) decoded into o; its length, or
 * 0 to decline. */
static size_t unescape(const char *s, size_t n, size_t *i, bool allow_nul, char *o) {
    if (*i >= n) return 0;
    char c = s[(*i)++];
    switch (c) {
    case '"':
    case '\\':
    case '/':
        *o = c;
        return 1;
    case 'b':
        *o = '\b';
        return 1;
    case 'f':
        *o = '\f';
        return 1;
    case 'n':
        *o = '\n';
        return 1;
    case 'r':
        *o = '\r';
        return 1;
    case 't':
        *o = '\t';
        return 1;
    case 'u':
        break;
    default:
        return 0;
    }
    uint32_t cp, lo;
    if (hex4(s, n, *i, &cp)) return 0;
    *i += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return 0;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (n - *i < 6 || s[*i] != '\\' || s[*i + 1] != 'u' || hex4(s, n, *i + 2, &lo) ||
            lo < 0xDC00 || lo > 0xDFFF)
            return 0;
        *i += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (cp == 0 && !allow_nul) return 0;
    return put_utf8(o, cp);
}

/* The decoded bytes of a string with escapes: grown as needed (never longer
 * than the raw string). */
typedef struct dbuf {
    char *p;
    size_t n, cap;
} dbuf;

static bool dbuf_reserve(dbuf *d, size_t more) {
    if (d->cap - d->n >= more) return true;
    size_t cap = d->cap ? d->cap : 256;
    while (cap - d->n < more) cap *= 2;
    char *p = realloc(d->p, cap);
    if (!p) return false;
    d->p = p;
    d->cap = cap;
    return true;
}

static bool dbuf_add(dbuf *d, const char *s, size_t n) {
    if (!n) return true; /* d->p may still be NULL */
    if (!dbuf_reserve(d, n)) return false;
    memcpy(d->p + d->n, s, n);
    d->n += n;
    return true;
}

/* The string whose opening quote is s[*i]: a new jansson string, *i one past its
 * closing quote; NULL to decline. */
static json_t *read_string(const char *s, size_t n, size_t *i, bool allow_nul) {
    const unsigned char *u = (const unsigned char *)s;
    size_t start = *i + 1, j = start;
    dbuf dec = {0}; /* decoded bytes, once an escape is seen */
    bool escaped = false;
    size_t from = start;
    json_t *out = NULL;
    for (;;) {
        while (n - j >= 8) {
            uint64_t w;
            memcpy(&w, s + j, 8);
            if (has_special(w)) break;
            j += 8;
        }
        if (j >= n) goto done;
        unsigned c = u[j];
        if (c == '"') break;
        if (c < 0x20) goto done;
        if (c >= 0x80) {
            size_t k = utf8_seq(u, n, j);
            if (!k) goto done;
            j += k;
            continue;
        }
        if (c != '\\') {
            j++;
            continue;
        }
        escaped = true;
        if (!dbuf_add(&dec, s + from, j - from) || !dbuf_reserve(&dec, 4)) goto done;
        j++;
        size_t k = unescape(s, n, &j, allow_nul, dec.p + dec.n);
        if (!k) goto done;
        dec.n += k;
        from = j;
    }
    if (escaped) {
        if (!dbuf_add(&dec, s + from, j - from)) goto done;
        out = json_stringn_nocheck(dec.p, dec.n);
    } else {
        out = json_stringn_nocheck(s + start, j - start);
    }
    if (out) *i = j + 1;
done:
    free(dec.p);
    return out;
}

/* A key whose opening quote is s[*i]: plain printable ASCII only (jansson would
 * refuse a NUL in it; nothing else is worth the care here). Its bytes and length
 * (not terminated), *i past its closing quote; NULL to decline. */
static const char *read_key(const char *s, size_t n, size_t *i, size_t *len) {
    size_t j = *i + 1;
    while (j < n && s[j] != '"') {
        if (s[j] < 0x20 || s[j] > 0x7E || s[j] == '\\') return NULL;
        j++;
    }
    if (j >= n) return NULL;
    *len = j - *i - 1;
    const char *k = s + *i + 1;
    *i = j + 1;
    return k;
}

/* One member at s[*i] ("key": "value") set into obj; -1 to decline. */
static int read_member(const char *s, size_t n, size_t *i, bool allow_nul, json_t *obj) {
    size_t klen;
    if (*i >= n || s[*i] != '"') return -1;
    const char *key = read_key(s, n, i, &klen);
    if (!key) return -1;
    *i = skip_ws(s, n, *i);
    if (*i >= n || s[*i] != ':') return -1;
    *i = skip_ws(s, n, *i + 1);
    if (*i >= n || s[*i] != '"') return -1;
    json_t *v = read_string(s, n, i, allow_nul);
    if (!v) return -1;
    return json_object_setn_new_nocheck(obj, key, klen, v) ? -1 : 0;
}

json_t *irt_jflat_object(const char *s, size_t n, size_t flags) {
    if (flags & ~(size_t)(JSON_ALLOW_NUL | JSON_DECODE_ANY)) return NULL;
    bool allow_nul = flags & JSON_ALLOW_NUL;
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{') return NULL;
    json_t *obj = json_object();
    if (!obj) return NULL;
    i = skip_ws(s, n, i + 1);
    if (i < n && s[i] == '}') {
        i++;
    } else {
        for (;;) {
            if (read_member(s, n, &i, allow_nul, obj)) goto decline;
            i = skip_ws(s, n, i);
            if (i < n && s[i] == '}') {
                i++;
                break;
            }
            if (i >= n || s[i] != ',') goto decline;
            i = skip_ws(s, n, i + 1);
        }
    }
    if (skip_ws(s, n, i) == n) return obj;
decline:
    json_decref(obj);
    return NULL;
}

/* ---- any JSON text ------------------------------------------------------------------ */

/* Nesting read here at most (values inside values, as jansson counts depth);
 * deeper is jansson's, whose limit is 2048. */
#define JFAST_MAX_DEPTH 512

typedef struct jrd {
    const char *s;
    size_t n, i;
    bool allow_nul;
    int depth;
} jrd;

static json_t *read_value(jrd *r);

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* Whether s[i] ends a literal or a number token: the end, white space or a
 * structural byte. Anything else (a letter, a digit) makes jansson's lexer read
 * another token or an invalid one: declined. */
static bool token_end(const jrd *r, size_t i) {
    if (i >= r->n) return true;
    char c = r->s[i];
    return is_ws(c) || c == ',' || c == ']' || c == '}' || c == ':';
}

/* A number token at r->i, as jansson's lex_scan_number reads it: an integer
 * through strtoll (declined past 64 bits: jansson refuses it), a real through
 * strtod (declined past the double range). */
static json_t *read_number(jrd *r) {
    const char *s = r->s;
    size_t i = r->i, n = r->n, start = i;
    bool integer = true;
    if (i < n && s[i] == '-') i++;
    if (i >= n || !is_digit(s[i])) return NULL;
    if (s[i] == '0') {
        i++;
    } else {
        while (i < n && is_digit(s[i])) i++;
    }
    if (i < n && s[i] == '.') {
        integer = false;
        if (++i >= n || !is_digit(s[i])) return NULL;
        while (i < n && is_digit(s[i])) i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        integer = false;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || !is_digit(s[i])) return NULL;
        while (i < n && is_digit(s[i])) i++;
    }
    if (!token_end(r, i)) return NULL;
    size_t len = i - start;
    char stack[64], *buf = len < sizeof stack ? stack : malloc(len + 1);
    if (!buf) return NULL;
    memcpy(buf, s + start, len);
    buf[len] = '\0';
    json_t *v = NULL;
    char *end;
    errno = 0;
    if (integer) {
        long long x = strtoll(buf, &end, 10);
        if (errno != ERANGE && end == buf + len) v = json_integer(x);
    } else {
        double x = strtod(buf, &end);
        if (!(errno == ERANGE && isinf(x)) && end == buf + len) v = json_real(x);
    }
    if (buf != stack) free(buf);
    if (v) r->i = i;
    return v;
}

static json_t *read_literal(jrd *r, const char *word, json_t *v) {
    size_t k = strlen(word);
    if (r->n - r->i < k || memcmp(r->s + r->i, word, k) || !token_end(r, r->i + k)) return NULL;
    r->i += k;
    return v;
}

/* A key at r->i: plain printable ASCII read in place, anything else decoded as
 * a string (declined when it holds a NUL, which jansson refuses in keys). *tmp
 * holds the decoded string, to be released by the caller. */
static const char *read_any_key(jrd *r, size_t *len, json_t **tmp) {
    *tmp = NULL;
    size_t i = r->i;
    const char *k = read_key(r->s, r->n, &i, len);
    if (k) {
        r->i = i;
        return k;
    }
    i = r->i;
    json_t *str = read_string(r->s, r->n, &i, r->allow_nul);
    if (!str) return NULL;
    *len = json_string_length(str);
    if (memchr(json_string_value(str), '\0', *len)) {
        json_decref(str);
        return NULL;
    }
    r->i = i;
    *tmp = str;
    return json_string_value(str);
}

/* After a member or element (white space skipped first): 1 when `close` ends
 * the container (r->i past it), 0 after a comma (r->i at the next value, white
 * space skipped), -1 for anything else. Always inlined: called as a function it
 * made 50,000 messages' parse about 3% slower. */
static inline __attribute__((always_inline)) int close_or_comma(jrd *r, char close) {
    r->i = skip_ws(r->s, r->n, r->i);
    if (r->i < r->n && r->s[r->i] == close) {
        r->i++;
        return 1;
    }
    if (r->i >= r->n || r->s[r->i] != ',') return -1;
    r->i = skip_ws(r->s, r->n, r->i + 1);
    return 0;
}

static json_t *read_object(jrd *r) {
    json_t *obj = json_object();
    if (!obj) return NULL;
    r->i = skip_ws(r->s, r->n, r->i + 1);
    if (r->i < r->n && r->s[r->i] == '}') {
        r->i++;
        return obj;
    }
    for (;;) {
        if (r->i >= r->n || r->s[r->i] != '"') goto decline;
        size_t klen;
        json_t *tmp;
        const char *key = read_any_key(r, &klen, &tmp);
        if (!key) goto decline;
        r->i = skip_ws(r->s, r->n, r->i);
        json_t *v = NULL;
        if (r->i < r->n && r->s[r->i] == ':') {
            r->i = skip_ws(r->s, r->n, r->i + 1);
            v = read_value(r);
        }
        int rc = v ? json_object_setn_new_nocheck(obj, key, klen, v) : -1;
        json_decref(tmp);
        if (rc) goto decline;
        int end = close_or_comma(r, '}');
        if (end > 0) return obj;
        if (end < 0) goto decline;
    }
decline:
    json_decref(obj);
    return NULL;
}

static json_t *read_array(jrd *r) {
    json_t *arr = json_array();
    if (!arr) return NULL;
    r->i = skip_ws(r->s, r->n, r->i + 1);
    if (r->i < r->n && r->s[r->i] == ']') {
        r->i++;
        return arr;
    }
    for (;;) {
        json_t *v = read_value(r);
        if (!v || json_array_append_new(arr, v)) goto decline;
        int end = close_or_comma(r, ']');
        if (end > 0) return arr;
        if (end < 0) goto decline;
    }
decline:
    json_decref(arr);
    return NULL;
}

/* The value at r->i (white space skipped before it), r->i past it; NULL to
 * decline. */
static json_t *read_value(jrd *r) {
    if (r->i >= r->n || r->depth >= JFAST_MAX_DEPTH) return NULL;
    r->depth++;
    json_t *v = NULL;
    switch (r->s[r->i]) {
    case '{':
        v = read_object(r);
        break;
    case '[':
        v = read_array(r);
        break;
    case '"':
        v = read_string(r->s, r->n, &r->i, r->allow_nul);
        break;
    case 't':
        v = read_literal(r, "true", json_true());
        break;
    case 'f':
        v = read_literal(r, "false", json_false());
        break;
    case 'n':
        v = read_literal(r, "null", json_null());
        break;
    default:
        v = read_number(r);
    }
    r->depth--;
    return v;
}

json_t *irt_jfast_loadb(const char *s, size_t n, size_t flags) {
    if (!s || (flags & ~(size_t)(JSON_ALLOW_NUL | JSON_DECODE_ANY))) return NULL;
    jrd r = {.s = s, .n = n, .allow_nul = flags & JSON_ALLOW_NUL};
    r.i = skip_ws(s, n, 0);
    if (r.i >= n) return NULL;
    if (!(flags & JSON_DECODE_ANY) && s[r.i] != '{' && s[r.i] != '[') return NULL;
    json_t *v = read_value(&r);
    if (v && skip_ws(s, n, r.i) != n) {
        json_decref(v);
        v = NULL;
    }
    return v;
}
