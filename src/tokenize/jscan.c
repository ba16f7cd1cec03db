/* jscan.c: the chat parse cache's structural scanner (see jscan.h).
 *
 * A string is skipped with memchr to its next quote; the quote ends it when an
 * even number of backslashes stands before it. Outside strings each byte is
 * looked at once. Nothing is decoded or validated beyond structure: a piece
 * that is not JSON is refused by jansson when it reads the piece, and then the
 * whole body is read as before. */
#include "tokenize/jscan.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NOPE SIZE_MAX

static bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t skip_ws(const char *s, size_t n, size_t i) {
    while (i < n && is_ws(s[i])) i++;
    return i;
}

/* s[i] is '"': one past its closing quote, or NOPE when it does not end. */
static size_t skip_string(const char *s, size_t n, size_t i) {
    size_t j = i + 1;
    for (;;) {
        const char *q = j < n ? memchr(s + j, '"', n - j) : NULL;
        if (!q) return NOPE;
        size_t k = (size_t)(q - s), bs = 0;
        while (k - bs > i + 1 && s[k - bs - 1] == '\\') bs++;
        if (bs % 2 == 0) return k + 1;
        j = k + 1;
    }
}

/* A number or a literal: to the next separator. NOPE when empty. */
static size_t skip_scalar(const char *s, size_t n, size_t i) {
    size_t j = i;
    while (j < n && !is_ws(s[j]) && s[j] != ',' && s[j] != ']' && s[j] != '}' && s[j] != ':' &&
           s[j] != '"' && s[j] != '[' && s[j] != '{')
        j++;
    return j > i ? j : NOPE;
}

/* s[i] is '{' or '[' at depth `depth` (its own level): one past the bracket
 * that brings the depth back, counting values on the way. */
static size_t skip_nested(const char *s, size_t n, size_t i, int depth, size_t *nvals) {
    int d = 0;
    for (size_t j = i; j < n;) {
        char c = s[j];
        if (c == '"') {
            j = skip_string(s, n, j);
            if (j == NOPE) return NOPE;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++d + depth - 1 > IRT_JSCAN_MAX_DEPTH) return NOPE;
        } else if (c == '}' || c == ']') {
            if (--d == 0) return j + 1;
        } else if (c == ',' || c == ':') {
            (*nvals)++;
        }
        j++;
    }
    return NOPE;
}

/* The value at s[i] (no white space before it) at nesting depth `depth`. */
static size_t skip_value(const char *s, size_t n, size_t i, int depth, size_t *nvals) {
    *nvals = 1;
    if (i >= n) return NOPE;
    if (s[i] == '"') return skip_string(s, n, i);
    if (s[i] == '{' || s[i] == '[') return skip_nested(s, n, i, depth, nvals);
    return skip_scalar(s, n, i);
}

static int push(irt_jscan *j, size_t off, size_t len, size_t nvals) {
    if (j->nelems == j->cap) {
        size_t c = j->cap ? 2 * j->cap : 16;
        irt_jspan *e = realloc(j->elems, c * sizeof *e);
        if (!e) return -1;
        j->elems = e;
        j->cap = c;
    }
    j->elems[j->nelems++] = (irt_jspan){off, len, nvals};
    return 0;
}

/* The "messages" array at s[i] ('['), at depth 2: its elements into out.
 * Returns one past its ']', or NOPE. */
static size_t scan_array(const char *s, size_t n, size_t i, irt_jscan *out) {
    size_t j = skip_ws(s, n, i + 1);
    if (j < n && s[j] == ']') return j + 1;
    for (;;) {
        size_t nv, e = skip_value(s, n, j, 3, &nv);
        if (e == NOPE || push(out, j, e - j, nv)) return NOPE;
        j = skip_ws(s, n, e);
        if (j >= n) return NOPE;
        if (s[j] == ']') return j + 1;
        if (s[j] != ',') return NOPE;
        j = skip_ws(s, n, j + 1);
    }
}

static bool is_messages(const char *s, size_t a, size_t b) {
    return b - a == 10 && memcmp(s + a, "\"messages\"", 10) == 0;
}

/* One member "key": value at s[i]; returns one past the value, or NOPE. */
static size_t scan_member(const char *s, size_t n, size_t i, irt_jscan *out, bool *seen) {
    if (i >= n || s[i] != '"') return NOPE;
    size_t ke = skip_string(s, n, i);
    if (ke == NOPE || memchr(s + i, '\\', ke - i)) return NOPE; /* an escaped key: doubt */
    size_t j = skip_ws(s, n, ke);
    if (j >= n || s[j] != ':') return NOPE;
    j = skip_ws(s, n, j + 1);
    if (!is_messages(s, i, ke)) {
        size_t nv;
        return skip_value(s, n, j, 2, &nv);
    }
    if (*seen) return NOPE; /* "messages" twice: jansson keeps the last, read it whole */
    *seen = true;
    if (j >= n || s[j] != '[') {
        size_t nv;
        return skip_value(s, n, j, 2, &nv);
    }
    size_t e = scan_array(s, n, j, out);
    if (e != NOPE) out->arr_off = j, out->arr_len = e - j;
    return e;
}

int irt_jscan_chat(const char *s, size_t len, irt_jscan *out) {
    memset(out, 0, sizeof *out);
    bool seen = false;
    size_t i = skip_ws(s, len, 0);
    if (i >= len || s[i] != '{') return IRT_JSCAN_DOUBT;
    i = skip_ws(s, len, i + 1);
    if (i < len && s[i] == '}') return IRT_JSCAN_NONE;
    for (;;) {
        i = scan_member(s, len, i, out, &seen);
        if (i == NOPE) break;
        i = skip_ws(s, len, i);
        if (i < len && s[i] == ',') {
            i = skip_ws(s, len, i + 1);
            continue;
        }
        if (i >= len || s[i] != '}' || skip_ws(s, len, i + 1) != len) break;
        return out->arr_len ? IRT_JSCAN_OK : IRT_JSCAN_NONE;
    }
    irt_jscan_free(out);
    return IRT_JSCAN_DOUBT;
}

void irt_jscan_free(irt_jscan *j) {
    free(j->elems);
    memset(j, 0, sizeof *j);
}
