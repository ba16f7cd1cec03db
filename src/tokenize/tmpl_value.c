/* tmpl_value.c: the template engine's values, with Python's semantics for
 * truth, equality, ordering, str(), repr() and json.dumps(). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/tmpl_internal.h"

void tmpl_fail(terr *e, int line, int col, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (e->msg && e->msglen) {
        if (line > 0)
            snprintf(e->msg, e->msglen, "line %d, column %d: %s", line, col, msg);
        else
            snprintf(e->msg, e->msglen, "%s", msg);
    }
    e->line = line;
    e->col = col;
    longjmp(e->jb, 1);
}

/* ---- string builder ------------------------------------------------------------ */
void tsb_init(tsb *b, ir_arena *a, terr *e, size_t max) {
    b->a = a;
    b->e = e;
    b->p = NULL;
    b->n = b->cap = 0;
    b->max = max;
    b->sink = NULL;
    b->sink_full = false;
}

void tsb_init_sink(tsb *b, terr *e, size_t max, ir_buf *sink) {
    tsb_init(b, NULL, e, max);
    b->sink = sink;
}

void tsb_add(tsb *b, const char *s, size_t n) {
    if (!n) return;
    if (n > b->max - b->n) tmpl_fail(b->e, 0, 0, "output larger than its limit");
    if (b->sink) {
        b->n += n;
        if (!b->sink_full && ir_buf_append(b->sink, s, n)) b->sink_full = true;
        return;
    }
    if (b->cap - b->n < n + 1) {
        size_t nc = b->cap ? b->cap * 2 : 64;
        while (nc - b->n < n + 1) nc *= 2;
        char *np = ir_arena_alloc(b->a, nc);
        if (!np) tmpl_fail(b->e, 0, 0, "out of memory (the render's memory limit)");
        if (b->n) memcpy(np, b->p, b->n);
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void tsb_adds(tsb *b, const char *s) {
    tsb_add(b, s, strlen(s));
}

void tsb_addf(tsb *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) tsb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void tsb_cp(tsb *b, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    tsb_add(b, u, n);
}

uint32_t tmpl_utf8_next(const char *s, size_t n, size_t *i) {
    const unsigned char *u = (const unsigned char *)s;
    size_t k = *i;
    unsigned c = u[k];
    if (c < 0x80) {
        *i = k + 1;
        return c;
    }
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (!len || k + (size_t)len > n) {
        *i = k + 1;
        return 0xFFFD;
    }
    uint32_t cp = c & (0x3F >> (len - 1));
    for (int j = 1; j < len; j++) {
        if ((u[k + (size_t)j] & 0xC0) != 0x80) {
            *i = k + 1;
            return 0xFFFD;
        }
        cp = (cp << 6) | (u[k + (size_t)j] & 0x3F);
    }
    *i = k + (size_t)len;
    return cp;
}

size_t tmpl_utf8_len(const char *s, size_t n) {
    size_t c = 0;
    for (size_t i = 0; i < n;) {
        tmpl_utf8_next(s, n, &i);
        c++;
    }
    return c;
}

bool tmpl_isspace(uint32_t c) {
    return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

/* ---- constructors ---------------------------------------------------------------- */
tv tv_cstr(const char *s) {
    return tv_str(s, strlen(s));
}

tlist *tv_list_new(ir_arena *a, size_t cap) {
    tlist *l = ir_arena_calloc(a, sizeof *l);
    if (!l) return NULL;
    if (cap) {
        l->v = ir_arena_alloc(a, cap * sizeof *l->v);
        if (!l->v) return NULL;
        l->cap = cap;
    }
    return l;
}

void tv_list_push(ir_arena *a, terr *e, tlist *l, tv v) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 4;
        tv *nv = ir_arena_alloc(a, nc * sizeof *nv);
        if (!nv) tmpl_fail(e, 0, 0, "out of memory (the render's memory limit)");
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = nc;
    }
    l->v[l->n++] = v;
}

/* The dict and its first cap keys and values in one block of the arena, not
 * three (a request's messages are one dict each); growing takes new arrays. */
tdict *tv_dict_new(ir_arena *a, size_t cap) {
    if (cap > (SIZE_MAX - sizeof(tdict)) / (2 * sizeof(tv))) return NULL;
    tdict *d = ir_arena_alloc(a, sizeof *d + 2 * cap * sizeof(tv));
    if (!d) return NULL;
    tv *slots = (tv *)(void *)(d + 1);
    *d = (tdict){.k = cap ? slots : NULL, .v = cap ? slots + cap : NULL, .n = 0, .cap = cap};
    return d;
}

tv *tv_dict_gets(const tdict *d, const char *s, size_t n) {
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i].t == TV_STR && d->k[i].n == n && tmpl_name_eq(d->k[i].s, s, n)) return &d->v[i];
    return NULL;
}

tv *tv_dict_get(const tdict *d, tv k) {
    if (k.t == TV_STR) return tv_dict_gets(d, k.s, k.n);
    for (size_t i = 0; i < d->n; i++)
        if (tv_eq(d->k[i], k)) return &d->v[i];
    return NULL;
}

void tv_dict_set(ir_arena *a, terr *e, tdict *d, tv k, tv v) {
    tv *old = tv_dict_get(d, k);
    if (old) {
        *old = v;
        return;
    }
    if (d->n == d->cap) {
        size_t nc = d->cap ? d->cap * 2 : 4;
        tv *nk = ir_arena_alloc(a, nc * sizeof *nk), *nvv = ir_arena_alloc(a, nc * sizeof *nvv);
        if (!nk || !nvv) tmpl_fail(e, 0, 0, "out of memory (the render's memory limit)");
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof *nk);
            memcpy(nvv, d->v, d->n * sizeof *nvv);
        }
        d->k = nk;
        d->v = nvv;
        d->cap = nc;
    }
    d->k[d->n] = k;
    d->v[d->n++] = v;
}

/* A number irt_json_loads read past jansson: NaN, an infinity, or an int past
 * 64 bits (its digits stay in the request's JSON). */
static tv number_from_marker(const char *s, size_t n) {
    if (n == 1 && s[0] == 'N') return tv_float(NAN);
    if (n == 1 && s[0] == 'I') return tv_float(INFINITY);
    if (n == 2 && s[0] == '-' && s[1] == 'I') return tv_float(-INFINITY);
    tv v = {.t = TV_BIG, .n = n};
    v.s = s;
    return v;
}

tv tv_big_neg(ir_arena *a, terr *e, tv v) {
    static const char min64[] = "-9223372036854775808";
    if (v.s[0] == '-') return (tv){.t = TV_BIG, .n = v.n - 1, .s = v.s + 1};
    if (v.n == sizeof min64 - 2 && memcmp(v.s, min64 + 1, v.n) == 0) return tv_int(INT64_MIN);
    char *p = ir_arena_alloc(a, v.n + 1);
    if (!p) tmpl_fail(e, 0, 0, "out of memory (the render's memory limit)");
    p[0] = '-';
    memcpy(p + 1, v.s, v.n);
    return (tv){.t = TV_BIG, .n = v.n + 1, .s = p};
}

bool tv_big_odd(tv v) {
    return (v.s[v.n - 1] - '0') % 2 != 0;
}

tv tv_from_json(ir_arena *a, terr *e, const json_t *j, int depth) {
    if (depth > 256) tmpl_fail(e, 0, 0, "input nested too deeply");
    switch (json_typeof(j)) {
    case JSON_NULL:
        return tv_none();
    case JSON_TRUE:
        return tv_bool(true);
    case JSON_FALSE:
        return tv_bool(false);
    case JSON_INTEGER:
        return tv_int((int64_t)json_integer_value(j));
    case JSON_REAL:
        return tv_float(json_real_value(j));
    case JSON_STRING:
        return tv_str(json_string_value(j), json_string_length(j));
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        tlist *l = tv_list_new(a, n);
        if (!l) tmpl_fail(e, 0, 0, "out of memory (the render's memory limit)");
        for (size_t i = 0; i < n; i++)
            l->v[i] = tv_from_json(a, e, json_array_get(j, i), depth + 1);
        l->n = n;
        tv v = {.t = TV_LIST};
        v.l = l;
        return v;
    }
    case JSON_OBJECT: {
        size_t bn;
        const char *big = irt_json_number_text(j, &bn);
        if (big) return number_from_marker(big, bn);
        size_t n = json_object_size(j);
        tdict *d = tv_dict_new(a, n);
        if (!d) tmpl_fail(e, 0, 0, "out of memory (the render's memory limit)");
        const char *k;
        json_t *x;
        size_t i = 0;
        void *it = json_object_iter((json_t *)j);
        while (it && i < n) {
            k = json_object_iter_key(it);
            x = json_object_iter_value(it);
            d->k[i] = tv_str(k, json_object_iter_key_len(it));
            d->v[i] = tv_from_json(a, e, x, depth + 1);
            i++;
            it = json_object_iter_next((json_t *)j, it);
        }
        d->n = i;
        tv v = {.t = TV_DICT};
        v.d = d;
        return v;
    }
    }
    return tv_none();
}

/* ---- truth, equality, order ---------------------------------------------------------- */
bool tv_truthy(tv v) {
    switch (v.t) {
    case TV_UNDEF:
    case TV_NONE:
        return false;
    case TV_BOOL:
        return v.b;
    case TV_INT:
        return v.i != 0;
    case TV_FLOAT:
        return v.f != 0.0;
    case TV_STR:
        return v.n != 0;
    case TV_LIST:
        return v.l->n != 0;
    case TV_DICT:
        return v.d->n != 0;
    default:
        return true;
    }
}

static bool is_num(tv v) {
    return v.t == TV_BOOL || v.t == TV_INT || v.t == TV_FLOAT;
}

static int64_t num_i(tv v) {
    return v.t == TV_INT ? v.i : v.t == TV_BOOL ? (int64_t)v.b : 0;
}

/* Python's exact int comparisons for a TV_BIG: a with another TV_BIG, an
 * int, a bool or a float. A TV_BIG lies outside int64, so an int64 is always
 * nearer zero; a float that large is integral, and "%.0f" gives its exact
 * digits. 2: unordered (NaN). */
static int big_sign(const char *s) {
    return s[0] == '-' ? -1 : 1;
}
static int big_cmp_text(const char *a, size_t an, const char *b, size_t bn) {
    int sa = big_sign(a), sb = big_sign(b);
    if (sa != sb) return sa;
    size_t ao = a[0] == '-', bo = b[0] == '-';
    int mag = an - ao != bn - bo ? (an - ao < bn - bo ? -1 : 1) : memcmp(a + ao, b + bo, an - ao);
    mag = mag < 0 ? -1 : mag > 0;
    return sa * mag;
}
static int big_cmp(tv a, tv b) {
    if (a.t != TV_BIG) return -big_cmp(b, a);
    if (b.t == TV_BIG) return big_cmp_text(a.s, a.n, b.s, b.n);
    if (b.t != TV_FLOAT || (isfinite(b.f) && fabs(b.f) < 9.2e18)) return big_sign(a.s);
    if (isnan(b.f)) return 2;
    if (isinf(b.f)) return b.f > 0 ? -1 : 1;
    char buf[400];
    int n = snprintf(buf, sizeof buf, "%.0f", b.f);
    return big_cmp_text(a.s, a.n, buf, (size_t)n);
}

/* An int64 against a float, exactly as CPython's float_richcompare (not
 * through the int's double, which rounds past 2**53). -1, 0, 1; 2: NaN. */
static int i64_cmp_f(int64_t i, double f) {
    if (isnan(f)) return 2;
    if (i >= -(INT64_C(1) << 53) && i <= (INT64_C(1) << 53)) {
        double x = (double)i;
        return x < f ? -1 : x > f;
    }
    if (f >= 9223372036854775808.0) return -1;
    if (f < -9223372036854775808.0) return 1;
    double fl = floor(f);
    int64_t k = (int64_t)fl; /* exact: an integral double within int64 */
    if (i != k) return i < k ? -1 : 1;
    return fl == f ? 0 : -1;
}

/* Two numbers (bool, int or float): -1, 0, 1; 2 when a NaN makes them unordered. */
static int num_cmp(tv a, tv b) {
    if (a.t == TV_FLOAT && b.t == TV_FLOAT)
        return isnan(a.f) || isnan(b.f) ? 2 : a.f < b.f ? -1 : a.f > b.f;
    if (b.t == TV_FLOAT) return i64_cmp_f(num_i(a), b.f);
    if (a.t == TV_FLOAT) {
        int c = i64_cmp_f(num_i(b), a.f);
        return c == 2 ? 2 : -c;
    }
    int64_t x = num_i(a), y = num_i(b);
    return x < y ? -1 : x > y;
}

bool tv_eq(tv a, tv b) {
    if ((a.t == TV_BIG && (b.t == TV_BIG || is_num(b))) || (b.t == TV_BIG && is_num(a)))
        return big_cmp(a, b) == 0;
    if (is_num(a) && is_num(b)) return num_cmp(a, b) == 0;
    if (a.t != b.t) return false;
    switch (a.t) {
    case TV_UNDEF:
    case TV_NONE:
        return true;
    case TV_STR:
        return tv_str_eq(a, b);
    case TV_LIST:
        if (a.l->tuple != b.l->tuple || a.l->n != b.l->n) return false;
        for (size_t i = 0; i < a.l->n; i++)
            if (!tv_eq(a.l->v[i], b.l->v[i])) return false;
        return true;
    case TV_DICT:
        if (a.d->n != b.d->n) return false;
        for (size_t i = 0; i < a.d->n; i++) {
            tv *o = tv_dict_get(b.d, a.d->k[i]);
            if (!o || !tv_eq(a.d->v[i], *o)) return false;
        }
        return true;
    case TV_NS:
        return a.d == b.d;
    case TV_MACRO:
        return a.m == b.m;
    case TV_FUNC:
        return a.i == b.i;
    case TV_LOOP:
        return a.lp == b.lp;
    default:
        return false;
    }
}

const char *tv_typename(tv v) {
    switch (v.t) {
    case TV_UNDEF:
        return "Undefined";
    case TV_NONE:
        return "NoneType";
    case TV_BOOL:
        return "bool";
    case TV_INT:
    case TV_BIG:
        return "int";
    case TV_FLOAT:
        return "float";
    case TV_STR:
        return "str";
    case TV_LIST:
        return v.l->tuple ? "tuple" : "list";
    case TV_DICT:
        return "dict";
    case TV_NS:
        return "Namespace";
    case TV_MACRO:
        return "Macro";
    case TV_FUNC:
        return "function";
    case TV_METHOD:
        return "builtin_function_or_method";
    default:
        return "LoopContext";
    }
}

int tv_cmp(terr *e, tv a, tv b) {
    if ((a.t == TV_BIG && (b.t == TV_BIG || is_num(b))) || (b.t == TV_BIG && is_num(a))) {
        int c = big_cmp(a, b);
        return c == 2 ? 0 : c;
    }
    if (is_num(a) && is_num(b)) {
        int c = num_cmp(a, b);
        return c == 2 ? 0 : c;
    }
    if (a.t == TV_STR && b.t == TV_STR) {
        size_t m = a.n < b.n ? a.n : b.n;
        int c = m ? memcmp(a.s, b.s, m) : 0;
        if (c) return c < 0 ? -1 : 1;
        return a.n < b.n ? -1 : a.n > b.n ? 1 : 0;
    }
    if (a.t == TV_LIST && b.t == TV_LIST && a.l->tuple == b.l->tuple) {
        for (size_t i = 0; i < a.l->n && i < b.l->n; i++) {
            if (tv_eq(a.l->v[i], b.l->v[i])) continue;
            return tv_cmp(e, a.l->v[i], b.l->v[i]);
        }
        return a.l->n < b.l->n ? -1 : a.l->n > b.l->n ? 1 : 0;
    }
    tmpl_fail(e, 0, 0, "'<' not supported between instances of '%s' and '%s'", tv_typename(a),
              tv_typename(b));
}

/* ---- printing ---------------------------------------------------------------------------- */
/* The decimal one unit in the last place from the %.*e digits in buf, toward
 * f (the side f lies on), when it reads back as f. The shortest string that
 * reads back need not be the correctly rounded one (2**-140 is
 * 7.174648137343064e-43, not ...063e-43). */
static bool neighbour_e(double f, char *buf, size_t cap, int prec) {
    const char *p = buf + (buf[0] == '-');
    uint64_t m = 0, lo = 1;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') m = m * 10 + (uint64_t)(*p - '0');
    for (int i = 1; i < prec; i++) lo *= 10;
    int exp = atoi(p + 1);
    double at = strtod(buf, NULL);
    m = fabs(at) < fabs(f) ? m + 1 : m - 1;
    if (m < lo || m >= lo * 10) return false;
    char d[24], out[64];
    snprintf(d, sizeof d, "%llu", (unsigned long long)m);
    snprintf(out, sizeof out, "%s%c%s%se%+03d", f < 0 ? "-" : "", d[0], prec > 1 ? "." : "", d + 1,
             exp);
    if (strtod(out, NULL) != f) return false;
    snprintf(buf, cap, "%s", out);
    return true;
}

/* f's shortest round-trip digits as "%.*e" writes them, as CPython's repr. */
static void shortest_e(double f, char *buf, size_t cap) {
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*e", prec - 1, f);
        if (strtod(buf, NULL) == f) return;
        if (prec < 17 && neighbour_e(f, buf, cap, prec)) return;
    }
}

void tv_float_repr(tsb *b, double f) {
    if (isnan(f)) {
        tsb_adds(b, "nan");
        return;
    }
    if (isinf(f)) {
        tsb_adds(b, f < 0 ? "-inf" : "inf");
        return;
    }
    char buf[64];
    shortest_e(f, buf, sizeof buf);
    /* buf: [-]d[.ddd]e[+-]xx */
    const char *p = buf;
    if (*p == '-') {
        tsb_addc(b, '-');
        p++;
    }
    char digits[32];
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    int decpt = exp + 1;
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            tsb_adds(b, "0.");
            for (int k = 0; k < -decpt; k++) tsb_addc(b, '0');
            tsb_add(b, digits, nd);
        } else if ((size_t)decpt >= nd) {
            tsb_add(b, digits, nd);
            for (size_t k = nd; k < (size_t)decpt; k++) tsb_addc(b, '0');
            tsb_adds(b, ".0");
        } else {
            tsb_add(b, digits, (size_t)decpt);
            tsb_addc(b, '.');
            tsb_add(b, digits + decpt, nd - (size_t)decpt);
        }
    } else {
        tsb_addc(b, digits[0]);
        if (nd > 1) {
            tsb_addc(b, '.');
            tsb_add(b, digits + 1, nd - 1);
        }
        tsb_addf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
}

/* Python's str.isprintable for one code point, close enough for repr:
 * controls, separators other than space, format characters, surrogates and
 * private use are escaped. */
#include <utf8proc.h>
static bool printable(uint32_t cp) {
    if (cp == ' ') return true;
    if (cp < 0x20 || cp == 0x7F) return false;
    if (cp < 0x7F) return true;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
        return false;
    default:
        return true;
    }
}

static void repr_str(tsb *b, const char *s, size_t n) {
    bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
    char q = sq && !dq ? '"' : '\'';
    tsb_addc(b, q);
    for (size_t i = 0; i < n;) {
        size_t st = i;
        uint32_t cp = tmpl_utf8_next(s, n, &i);
        if (cp == (uint32_t)q || cp == '\\') {
            tsb_addc(b, '\\');
            tsb_addc(b, (char)cp);
        } else if (cp == '\n') {
            tsb_adds(b, "\\n");
        } else if (cp == '\r') {
            tsb_adds(b, "\\r");
        } else if (cp == '\t') {
            tsb_adds(b, "\\t");
        } else if (printable(cp)) {
            tsb_add(b, s + st, i - st);
        } else if (cp < 0x100) {
            tsb_addf(b, "\\x%02x", cp);
        } else if (cp < 0x10000) {
            tsb_addf(b, "\\u%04x", cp);
        } else {
            tsb_addf(b, "\\U%08x", cp);
        }
    }
    tsb_addc(b, q);
}

static void print_v(tsb *b, tv v, bool repr, int depth) {
    if (depth > 200) tmpl_fail(b->e, 0, 0, "value nested too deeply to print");
    switch (v.t) {
    case TV_UNDEF:
        return;
    case TV_NONE:
        tsb_adds(b, "None");
        return;
    case TV_BOOL:
        tsb_adds(b, v.b ? "True" : "False");
        return;
    case TV_INT:
        tsb_addf(b, "%lld", (long long)v.i);
        return;
    case TV_BIG:
        tsb_add(b, v.s, v.n);
        return;
    case TV_FLOAT:
        tv_float_repr(b, v.f);
        return;
    case TV_STR:
        if (repr)
            repr_str(b, v.s, v.n);
        else
            tsb_add(b, v.s, v.n);
        return;
    case TV_LIST:
        if (v.l->range) {
            tsb_addf(b, "range(%lld, %lld", (long long)v.l->r0, (long long)v.l->r1);
            if (v.l->r2 != 1) tsb_addf(b, ", %lld", (long long)v.l->r2);
            tsb_addc(b, ')');
            return;
        }
        tsb_addc(b, v.l->tuple ? '(' : '[');
        for (size_t i = 0; i < v.l->n; i++) {
            if (i) tsb_adds(b, ", ");
            print_v(b, v.l->v[i], true, depth + 1);
        }
        if (v.l->tuple && v.l->n == 1) tsb_addc(b, ',');
        tsb_addc(b, v.l->tuple ? ')' : ']');
        return;
    case TV_NS:
        tsb_adds(b, "<Namespace ");
        /* fall through */
    case TV_DICT:
        tsb_addc(b, '{');
        for (size_t i = 0; i < v.d->n; i++) {
            if (i) tsb_adds(b, ", ");
            print_v(b, v.d->k[i], true, depth + 1);
            tsb_adds(b, ": ");
            print_v(b, v.d->v[i], true, depth + 1);
        }
        tsb_addc(b, '}');
        if (v.t == TV_NS) tsb_addc(b, '>');
        return;
    case TV_MACRO:
        tsb_addf(b, "<Macro '%s'>", v.m->name);
        return;
    case TV_FUNC:
        tsb_adds(b, "<function>");
        return;
    case TV_METHOD:
        tsb_adds(b, "<built-in method>");
        return;
    case TV_LOOP:
        tsb_addf(b, "<LoopContext %zu/%zu>", v.lp->index0 + 1, v.lp->items ? v.lp->items->n : 0);
        return;
    }
}

void tv_str_to(tsb *b, tv v) {
    print_v(b, v, false, 0);
}

void tv_repr_to(tsb *b, tv v) {
    print_v(b, v, true, 0);
}

tv tv_to_string(ir_arena *a, terr *e, tv v, size_t max) {
    if (v.t == TV_STR) return v;
    tsb b;
    tsb_init(&b, a, e, max);
    tv_str_to(&b, v);
    return tv_str(b.p ? b.p : "", b.n);
}

/* ---- json.dumps -------------------------------------------------------------------------------
 */
static void json_str(tsb *b, const char *s, size_t n, bool ascii) {
    tsb_addc(b, '"');
    size_t run = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = ir_json_short_escape(c);
        if (!esc && c >= 0x20 && (c < 0x80 || !ascii)) {
            i++;
            run++;
            continue;
        }
        tsb_add(b, s + i - run, run);
        run = 0;
        if (esc) {
            tsb_adds(b, esc);
            i++;
        } else if (c < 0x20) {
            tsb_addf(b, "\\u%04x", c);
            i++;
        } else {
            uint32_t cp = tmpl_utf8_next(s, n, &i);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                tsb_addf(b, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                tsb_addf(b, "\\u%04x", cp);
            }
        }
    }
    tsb_add(b, s + n - run, run);
    tsb_addc(b, '"');
}

static void newline_indent(tsb *b, int indent, int level) {
    tsb_addc(b, '\n');
    for (int k = 0; k < indent * level; k++) tsb_addc(b, ' ');
}

static int key_cmp(const void *x, const void *y) {
    const tv *a = *(tv *const *)x, *b = *(tv *const *)y;
    size_t m = a->n < b->n ? a->n : b->n;
    int c = m ? memcmp(a->s, b->s, m) : 0;
    return c ? c : a->n < b->n ? -1 : a->n > b->n;
}

typedef struct json_opts {
    int indent;
    const char *isep, *ksep;
    bool sort, ascii;
    terr *e;
} json_opts;

static void json_v(tsb *b, tv v, const json_opts *o, int level);

/* A key as json.dumps writes it: strings as they are, numbers, bools and None
 * converted; anything else is a TypeError. */
static void json_key(tsb *b, tv k, const json_opts *o) {
    switch (k.t) {
    case TV_STR:
        json_str(b, k.s, k.n, o->ascii);
        return;
    case TV_BOOL:
        tsb_adds(b, k.b ? "\"true\"" : "\"false\"");
        return;
    case TV_NONE:
        tsb_adds(b, "\"null\"");
        return;
    case TV_INT:
        tsb_addf(b, "\"%lld\"", (long long)k.i);
        return;
    case TV_FLOAT:
        tsb_addc(b, '"');
        tv_float_repr(b, k.f);
        tsb_addc(b, '"');
        return;
    default:
        tmpl_fail(o->e, 0, 0, "keys must be str, int, float, bool or None, not %s", tv_typename(k));
    }
}

static void json_dict(tsb *b, const tdict *d, const json_opts *o, int level) {
    if (!d->n) {
        tsb_adds(b, "{}");
        return;
    }
    size_t n = d->n;
    size_t *order = ir_arena_alloc(b->a, n * sizeof *order);
    if (!order) tmpl_fail(o->e, 0, 0, "out of memory");
    for (size_t i = 0; i < n; i++) order[i] = i;
    if (o->sort) {
        const tv **keys = ir_arena_alloc(b->a, n * sizeof *keys);
        if (!keys) tmpl_fail(o->e, 0, 0, "out of memory");
        for (size_t i = 0; i < n; i++) {
            if (d->k[i].t != TV_STR) tmpl_fail(o->e, 0, 0, "sort_keys needs string keys");
            keys[i] = &d->k[i];
        }
        qsort(keys, n, sizeof *keys, key_cmp);
        for (size_t i = 0; i < n; i++) order[i] = (size_t)(keys[i] - d->k);
    }
    tsb_addc(b, '{');
    for (size_t j = 0; j < n; j++) {
        size_t i = order[j];
        if (j) tsb_adds(b, o->isep);
        if (o->indent >= 0) newline_indent(b, o->indent, level + 1);
        json_key(b, d->k[i], o);
        tsb_adds(b, o->ksep);
        json_v(b, d->v[i], o, level + 1);
    }
    if (o->indent >= 0) newline_indent(b, o->indent, level);
    tsb_addc(b, '}');
}

static void json_v(tsb *b, tv v, const json_opts *o, int level) {
    if (level > 200) tmpl_fail(o->e, 0, 0, "value nested too deeply for tojson");
    switch (v.t) {
    case TV_NONE:
        tsb_adds(b, "null");
        return;
    case TV_BOOL:
        tsb_adds(b, v.b ? "true" : "false");
        return;
    case TV_INT:
        tsb_addf(b, "%lld", (long long)v.i);
        return;
    case TV_BIG:
        tsb_add(b, v.s, v.n);
        return;
    case TV_FLOAT:
        if (isnan(v.f))
            tsb_adds(b, "NaN");
        else if (isinf(v.f))
            tsb_adds(b, v.f < 0 ? "-Infinity" : "Infinity");
        else
            tv_float_repr(b, v.f);
        return;
    case TV_STR:
        json_str(b, v.s, v.n, o->ascii);
        return;
    case TV_LIST:
        if (!v.l->n) {
            tsb_adds(b, "[]");
            return;
        }
        tsb_addc(b, '[');
        for (size_t i = 0; i < v.l->n; i++) {
            if (i) tsb_adds(b, o->isep);
            if (o->indent >= 0) newline_indent(b, o->indent, level + 1);
            json_v(b, v.l->v[i], o, level + 1);
        }
        if (o->indent >= 0) newline_indent(b, o->indent, level);
        tsb_addc(b, ']');
        return;
    case TV_DICT:
        json_dict(b, v.d, o, level);
        return;
    default:
        tmpl_fail(o->e, 0, 0, "Object of type %s is not JSON serializable", tv_typename(v));
    }
}

void tv_tojson(tsb *b, terr *e, tv v, int indent, const char *item_sep, const char *key_sep,
               bool sort_keys, bool ensure_ascii, int depth) {
    json_opts o = {.indent = indent, .sort = sort_keys, .ascii = ensure_ascii, .e = e};
    o.isep = item_sep ? item_sep : indent >= 0 ? "," : ", ";
    o.ksep = key_sep ? key_sep : ": ";
    json_v(b, v, &o, depth);
}
