/* tmpl_filters.c: Jinja2's filters and tests, and the str, dict and list
 * methods the sandbox allows, with Python's semantics. tojson is
 * transformers' (json.dumps with ensure_ascii=False by default). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/tmpl_strings.h"

#define EQ(s)  (strcmp(name, s) == 0)
#define OOM(r) tmpl_fail((r)->e, 0, 0, "out of memory (the render's memory limit)")

static _Noreturn void ffail(trender *r, const tnode *at, const char *fmt, const char *a,
                            const char *b) {
    char msg[300];
    snprintf(msg, sizeof msg, fmt, a, b);
    tmpl_fail(r->e, at ? at->line : 0, at ? at->col : 0, "%s", msg);
}

tv *tmpl_arg(tv *args, size_t nargs, const char **kwn, tv *kwv, size_t nkw, size_t i,
             const char *kw) {
    if (kw)
        for (size_t k = 0; k < nkw; k++)
            if (strcmp(kwn[k], kw) == 0) return &kwv[k];
    return i < nargs ? &args[i] : NULL;
}

static tv str_of(trender *r, tv v) {
    return tv_to_string(r->a, r->e, v, r->lim->max_output);
}

static tv sb_val(tsb *b) {
    return tv_str(b->p ? b->p : "", b->n);
}

static tv list_val(tlist *l) {
    tv v = {.t = TV_LIST};
    v.l = l;
    return v;
}

static tlist *new_list(trender *r, size_t cap) {
    tlist *l = tv_list_new(r->a, cap);
    if (!l) OOM(r);
    return l;
}

static int64_t int_arg(trender *r, const tnode *at, const tv *v, int64_t dflt, const char *what) {
    if (!v || v->t == TV_NONE) return dflt;
    if (v->t == TV_INT) return v->i;
    if (v->t == TV_BOOL) return v->b;
    ffail(r, at, "%s must be an integer, not %s", what, tv_typename(*v));
}

static const char *need_str(trender *r, const tnode *at, const tv *v, size_t *n, const char *what) {
    if (v->t != TV_STR) ffail(r, at, "%s must be a string, not %s", what, tv_typename(*v));
    *n = v->n;
    return v->s;
}

static int64_t py_len(trender *r, const tnode *at, tv v) {
    switch (v.t) {
    case TV_STR:
        return (int64_t)tmpl_utf8_len(v.s, v.n);
    case TV_LIST:
        return (int64_t)v.l->n;
    case TV_DICT:
    case TV_NS:
        return (int64_t)v.d->n;
    case TV_UNDEF:
        return 0;
    default:
        ffail(r, at, "object of type '%s' has no len()%s", tv_typename(v), "");
    }
}

/* Jinja's attribute getter: "a.b.0" walks attributes and integer items. */
static tv get_path(trender *r, const tnode *at, tv obj, tv path) {
    if (path.t == TV_INT) return tmpl_getitem(r, at, obj, path);
    if (path.t != TV_STR) return tmpl_getitem(r, at, obj, path);
    const char *s = path.s, *end = path.s + path.n;
    while (s <= end) {
        const char *dot = memchr(s, '.', (size_t)(end - s));
        size_t n = dot ? (size_t)(dot - s) : (size_t)(end - s);
        bool digits = n > 0;
        int64_t iv = 0;
        for (size_t k = 0; k < n; k++) {
            if (s[k] < '0' || s[k] > '9' || k > 17)
                digits = false;
            else
                iv = iv * 10 + (s[k] - '0');
        }
        if (obj.t == TV_UNDEF) return obj;
        obj =
            digits ? tmpl_getitem(r, at, obj, tv_int(iv)) : tmpl_getitem(r, at, obj, tv_str(s, n));
        if (!dot) break;
        s = dot + 1;
    }
    return obj;
}

/* A sort key: strings lowered unless case sensitive. */
static tv sort_key(trender *r, tv v, bool cs) {
    if (cs || v.t != TV_STR) return v;
    tsb b;
    tsb_init(&b, r->a, r->e, r->lim->max_output);
    ts_case(&b, v.s, v.n, TS_LOWER);
    return sb_val(&b);
}

typedef struct sortent {
    tv key, val;
    size_t pos;
} sortent;

static _Thread_local trender *tl_sort_r;

static int sort_cmp(const void *x, const void *y) {
    const sortent *a = x, *b = y;
    int c = tv_cmp(tl_sort_r->e, a->key, b->key);
    if (c) return c;
    return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* A stable sort of n entries by key (Python's sorted), reversed on request
 * (reversal keeps equal keys in their order, as Python's reverse=True does). */
static void stable_sort(trender *r, sortent *e, size_t n, bool reverse) {
    tl_sort_r = r;
    if (reverse)
        for (size_t i = 0; i < n; i++) e[i].pos = n - 1 - e[i].pos;
    qsort(e, n, sizeof *e, sort_cmp);
    if (reverse) {
        for (size_t i = 0; i < n / 2; i++) {
            sortent t = e[i];
            e[i] = e[n - 1 - i];
            e[n - 1 - i] = t;
        }
    }
}

static tv f_tojson(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                   tv *kwv, size_t nkw) {
    tv *ea = tmpl_arg(args, nargs, kwn, kwv, nkw, 0, "ensure_ascii");
    tv *ind = tmpl_arg(args, nargs, kwn, kwv, nkw, 1, "indent");
    tv *sep = tmpl_arg(args, nargs, kwn, kwv, nkw, 2, "separators");
    tv *sk = tmpl_arg(args, nargs, kwn, kwv, nkw, 3, "sort_keys");
    int indent = -1;
    char isep[16] = "", ksep[16] = "";
    bool have_sep = false;
    if (ind && ind->t != TV_NONE) {
        if (ind->t == TV_STR) ffail(r, at, "%s%s", "tojson: a string indent is not supported", "");
        int64_t i = int_arg(r, at, ind, 0, "indent");
        indent = i < 0 ? 0 : i > 64 ? 64 : (int)i;
    }
    if (sep && sep->t == TV_LIST && sep->l->n == 2 && sep->l->v[0].t == TV_STR &&
        sep->l->v[1].t == TV_STR && sep->l->v[0].n < 16 && sep->l->v[1].n < 16) {
        memcpy(isep, sep->l->v[0].s, sep->l->v[0].n);
        memcpy(ksep, sep->l->v[1].s, sep->l->v[1].n);
        have_sep = true;
    } else if (sep && sep->t != TV_NONE) {
        ffail(r, at, "%s%s", "tojson: separators must be a pair of short strings", "");
    }
    tsb b;
    tsb_init(&b, r->a, r->e, r->lim->max_output);
    tv_tojson(&b, r->e, v, indent, have_sep ? isep : NULL, have_sep ? ksep : NULL,
              sk && tv_truthy(*sk), ea && tv_truthy(*ea), 0);
    return sb_val(&b);
}

typedef struct piece_ctx {
    trender *r;
    tlist *l;
} piece_ctx;

static void push(void *ctx, const char *p, size_t n) {
    piece_ctx *c = ctx;
    tv_list_push(c->r->a, c->r->e, c->l, tv_str(p, n));
}

static tv f_indent(trender *r, const tnode *at, tv v, tv *width, bool first, bool blank) {
    tv s = str_of(r, v);
    tsb ind;
    tsb_init(&ind, r->a, r->e, 4096);
    if (width && width->t == TV_STR)
        tsb_add(&ind, width->s, width->n);
    else {
        int64_t w = int_arg(r, at, width, 4, "width");
        for (int64_t k = 0; k < w && k < 4096; k++) tsb_addc(&ind, ' ');
    }
    /* s += "\n"; then splitlines */
    tsb src;
    tsb_init(&src, r->a, r->e, r->lim->max_output);
    tsb_add(&src, s.s, s.n);
    tsb_addc(&src, '\n');
    tlist *lines = new_list(r, 0);
    piece_ctx c = {r, lines};
    ts_splitlines(src.p, src.n, false, push, &c);
    tsb out;
    tsb_init(&out, r->a, r->e, r->lim->max_output);
    if (first) tsb_add(&out, ind.p ? ind.p : "", ind.n);
    for (size_t i = 0; i < lines->n; i++) {
        tv ln = lines->v[i];
        if (i) {
            tsb_addc(&out, '\n');
            if (blank || ln.n) tsb_add(&out, ind.p ? ind.p : "", ind.n);
        }
        tsb_add(&out, ln.s, ln.n);
    }
    return sb_val(&out);
}

static tv f_truncate(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                     tv *kwv, size_t nkw) {
    tv s = str_of(r, v);
    int64_t length =
        int_arg(r, at, tmpl_arg(args, nargs, kwn, kwv, nkw, 0, "length"), 255, "length");
    tv *kw = tmpl_arg(args, nargs, kwn, kwv, nkw, 1, "killwords");
    tv *endv = tmpl_arg(args, nargs, kwn, kwv, nkw, 2, "end");
    int64_t leeway = int_arg(r, at, tmpl_arg(args, nargs, kwn, kwv, nkw, 3, "leeway"), 5, "leeway");
    const char *end = "...";
    size_t en = 3;
    if (endv) end = need_str(r, at, endv, &en, "end");
    int64_t elen = (int64_t)tmpl_utf8_len(end, en);
    if (length < elen) ffail(r, at, "%s%s", "expected length >= len(end)", "");
    int64_t len = (int64_t)tmpl_utf8_len(s.s, s.n);
    if (len <= length + leeway) return s;
    size_t cut = 0;
    for (int64_t k = 0; k < length - elen; k++) tmpl_utf8_next(s.s, s.n, &cut);
    tsb b;
    tsb_init(&b, r->a, r->e, r->lim->max_output);
    if (kw && tv_truthy(*kw)) {
        tsb_add(&b, s.s, cut);
    } else {
        const char *sp = ts_rfind(s.s, cut, " ", 1);
        tsb_add(&b, s.s, sp ? (size_t)(sp - s.s) : cut);
    }
    tsb_add(&b, end, en);
    return sb_val(&b);
}

static tv f_round(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                  tv *kwv, size_t nkw) {
    int64_t prec =
        int_arg(r, at, tmpl_arg(args, nargs, kwn, kwv, nkw, 0, "precision"), 0, "precision");
    tv *m = tmpl_arg(args, nargs, kwn, kwv, nkw, 1, "method");
    const char *method = "common";
    size_t mn = 6;
    if (m) method = need_str(r, at, m, &mn, "method");
    if (v.t != TV_INT && v.t != TV_FLOAT && v.t != TV_BOOL && v.t != TV_BIG)
        ffail(r, at, "type %s doesn't define __round__ method", tv_typename(v), "");
    bool is_int = v.t != TV_FLOAT;
    if (mn == 6 && memcmp(method, "common", 6) == 0) {
        if (is_int) return tmpl_big_round(r, at, v, prec); /* int.__round__ */
        if (!isfinite(v.f) || prec > 300) return v;
        char buf[400];
        snprintf(buf, sizeof buf, "%.*f", prec < 0 ? 0 : (int)prec, v.f);
        double x = strtod(buf, NULL);
        if (prec < 0) {
            double p = pow(10, (double)-prec);
            x = rint(v.f / p) * p;
        }
        return tv_float(x);
    }
    /* Jinja2: math.ceil/floor(value * 10**precision) / 10**precision; for an
     * int and precision >= 0 that is int / int, float(value) correctly rounded */
    double x = is_int ? tmpl_int_to_double(r, at, v) : v.f;
    if (is_int && prec >= 0) return tv_float(x);
    double p = pow(10, (double)prec);
    if (mn == 4 && memcmp(method, "ceil", 4) == 0) return tv_float(ceil(x * p) / p);
    if (mn == 5 && memcmp(method, "floor", 5) == 0) return tv_float(floor(x * p) / p);
    ffail(r, at, "%s%s", "method must be common, ceil or floor", "");
}

/* Python's int(str): optional sign, digits and underscores, white space around.
 * -1: not an int; 0: *out; 1: an int past 64 bits. */
static int parse_int(const char *s, size_t n, int64_t *out) {
    size_t a, z;
    ts_strip(s, n, NULL, 0, true, true, &a, &z);
    if (a == z) return -1;
    bool neg = false, big = false;
    if (s[a] == '+' || s[a] == '-') neg = s[a++] == '-';
    if (a == z || s[a] == '_') return -1;
    uint64_t v = 0;
    for (size_t i = a; i < z; i++) {
        if (s[i] == '_') {
            if (i + 1 >= z || s[i + 1] == '_') return -1;
            continue;
        }
        if (s[i] < '0' || s[i] > '9') return -1;
        if (v > (UINT64_MAX - 9) / 10) big = true;
        if (!big) v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (big || v > (uint64_t)INT64_MAX + (neg ? 1 : 0)) return 1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

static bool parse_float(const char *s, size_t n, double *out) {
    char buf[128];
    size_t a, z;
    ts_strip(s, n, NULL, 0, true, true, &a, &z);
    if (a == z || z - a >= sizeof buf) return false;
    size_t k = 0;
    for (size_t i = a; i < z; i++)
        if (s[i] != '_') buf[k++] = s[i];
    buf[k] = '\0';
    if (strchr(buf, 'x') || strchr(buf, 'X') || strchr(buf, 'p') || strchr(buf, 'P')) return false;
    char *end;
    double d = strtod(buf, &end);
    if (*end) return false;
    *out = d;
    return true;
}

/* int(f) for a float. Jinja2's int filter: int(value), then on ValueError
 * int(float(value)) catching OverflowError too. So NaN gives the default, and
 * so does inf read from a string (strict false); a float inf raises. */
static tv float_to_int(trender *r, const tnode *at, double f, tv d, bool strict) {
    if (isnan(f) || (isinf(f) && !strict)) return d;
    if (isinf(f)) ffail(r, at, "%s%s", "cannot convert float infinity to integer", "");
    if (fabs(f) < 9.2e18) return tv_int((int64_t)f);
    return tmpl_big_from_double(r, at, f);
}

/* The digits of an int string past 64 bits, as a canonical value. */
static tv big_from_str(trender *r, const tnode *at, const char *s, size_t n, tv d) {
    size_t a, z;
    ts_strip(s, n, NULL, 0, true, true, &a, &z);
    tsb b;
    tsb_init(&b, r->a, r->e, z - a + 1);
    if (s[a] == '-') tsb_addc(&b, '-');
    if (s[a] == '+' || s[a] == '-') a++;
    while (a < z && (s[a] == '0' || s[a] == '_')) a++;
    for (; a < z; a++)
        if (s[a] != '_') tsb_addc(&b, s[a]);
    /* past the limit, Python's int() raises ValueError and Jinja2 tries
     * int(float(s)): int(inf), an OverflowError it catches */
    if (b.n - (b.p[0] == '-') > TMPL_BIG_DIGITS) return d;
    return tmpl_big_from_text(r, at, b.p, b.n);
}

static tv f_int(trender *r, const tnode *at, tv v, tv *dflt) {
    tv d = dflt ? *dflt : tv_int(0);
    switch (v.t) {
    case TV_INT:
    case TV_BIG:
        return v;
    case TV_BOOL:
        return tv_int(v.b);
    case TV_FLOAT:
        return float_to_int(r, at, v.f, d, true);
    case TV_STR: {
        int64_t i;
        int k = parse_int(v.s, v.n, &i);
        if (k == 0) return tv_int(i);
        if (k == 1) return big_from_str(r, at, v.s, v.n, d);
        double f;
        if (parse_float(v.s, v.n, &f)) return float_to_int(r, at, f, d, false);
        return d;
    }
    default:
        (void)r;
        return d;
    }
}

static tv f_float(tv v, tv *dflt) {
    tv d = dflt ? *dflt : tv_float(0.0);
    switch (v.t) {
    case TV_BIG: { /* correctly rounded, as Python's float(int); inf when past the range */
        char stack[512], *buf = v.n < sizeof stack ? stack : malloc(v.n + 1);
        if (!buf) return tv_float(v.s[0] == '-' ? -INFINITY : INFINITY);
        memcpy(buf, v.s, v.n);
        buf[v.n] = 0;
        double f = strtod(buf, NULL);
        if (buf != stack) free(buf);
        return tv_float(f);
    }
    case TV_INT:
        return tv_float((double)v.i);
    case TV_BOOL:
        return tv_float(v.b);
    case TV_FLOAT:
        return v;
    case TV_STR: {
        double f;
        if (parse_float(v.s, v.n, &f)) return tv_float(f);
        char low[16];
        size_t a, z;
        ts_strip(v.s, v.n, NULL, 0, true, true, &a, &z);
        if (z - a < sizeof low) {
            for (size_t i = a; i < z; i++)
                low[i - a] = (char)(v.s[i] >= 'A' && v.s[i] <= 'Z' ? v.s[i] + 32 : v.s[i]);
            low[z - a] = '\0';
            const char *p = low + (low[0] == '+' || low[0] == '-');
            double sign = low[0] == '-' ? -1 : 1;
            if (!strcmp(p, "nan")) return tv_float(NAN);
            if (!strcmp(p, "inf") || !strcmp(p, "infinity")) return tv_float(sign * INFINITY);
        }
        return d;
    }
    default:
        return d;
    }
}

/* select/reject/selectattr/rejectattr: items whose test (or truth) is want. */
static tv f_select(trender *r, const tnode *at, tv v, tv *args, size_t nargs, bool attr,
                   bool want) {
    tlist *items = tmpl_iter(r, at, v);
    tlist *out = new_list(r, 0);
    size_t ti = attr ? 1 : 0;
    if (attr && nargs < 1) ffail(r, at, "%s%s", "selectattr needs an attribute", "");
    const char *test = NULL;
    char tname[64];
    if (nargs > ti) {
        size_t n;
        const char *s = need_str(r, at, &args[ti], &n, "the test name");
        if (n >= sizeof tname) n = sizeof tname - 1;
        memcpy(tname, s, n);
        tname[n] = '\0';
        test = tname;
    }
    for (size_t i = 0; i < items->n; i++) {
        tmpl_step(r, at);
        tv x = attr ? get_path(r, at, items->v[i], args[0]) : items->v[i];
        bool ok = test ? tmpl_test(r, at, test, x, args + ti + 1, nargs - ti - 1) : tv_truthy(x);
        if (ok == want) tv_list_push(r->a, r->e, out, items->v[i]);
    }
    return list_val(out);
}

static tv f_map(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                tv *kwv, size_t nkw) {
    tlist *items = tmpl_iter(r, at, v);
    tlist *out = new_list(r, items->n);
    tv *attr = tmpl_arg(NULL, 0, kwn, kwv, nkw, 0, "attribute");
    tv *dflt = tmpl_arg(NULL, 0, kwn, kwv, nkw, 0, "default");
    char fname[64] = "";
    if (!attr) {
        if (!nargs) ffail(r, at, "%s%s", "map needs a filter name or attribute=", "");
        size_t n;
        const char *s = need_str(r, at, &args[0], &n, "the filter name");
        if (n >= sizeof fname) n = sizeof fname - 1;
        memcpy(fname, s, n);
        fname[n] = '\0';
    }
    for (size_t i = 0; i < items->n; i++) {
        tmpl_step(r, at);
        tv x;
        if (attr) {
            x = get_path(r, at, items->v[i], *attr);
            if (x.t == TV_UNDEF && dflt) x = *dflt;
        } else {
            x = tmpl_filter(r, at, fname, items->v[i], args + 1, nargs - 1, NULL, NULL, 0);
        }
        tv_list_push(r->a, r->e, out, x);
    }
    return list_val(out);
}

static tv f_sort(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                 tv *kwv, size_t nkw, bool unique) {
    tlist *items = tmpl_iter(r, at, v);
    tv *rev = unique ? NULL : tmpl_arg(args, nargs, kwn, kwv, nkw, 0, "reverse");
    tv *cs = tmpl_arg(args, nargs, kwn, kwv, nkw, unique ? 0 : 1, "case_sensitive");
    tv *attr = tmpl_arg(args, nargs, kwn, kwv, nkw, unique ? 1 : 2, "attribute");
    bool sens = cs && tv_truthy(*cs);
    sortent *e = ir_arena_alloc(r->a, (items->n + 1) * sizeof *e);
    if (!e) OOM(r);
    size_t n = 0;
    for (size_t i = 0; i < items->n; i++) {
        tv k = attr ? get_path(r, at, items->v[i], *attr) : items->v[i];
        k = sort_key(r, k, sens);
        if (unique) {
            bool seen = false;
            for (size_t j = 0; j < n && !seen; j++) seen = tv_eq(e[j].key, k);
            if (seen) continue;
        }
        e[n].key = k;
        e[n].val = items->v[i];
        e[n].pos = n;
        n++;
    }
    if (!unique) stable_sort(r, e, n, rev && tv_truthy(*rev));
    tlist *out = new_list(r, n);
    for (size_t i = 0; i < n; i++) out->v[i] = e[i].val;
    out->n = n;
    return list_val(out);
}

static tv pair(trender *r, tv a, tv b) {
    tlist *t = new_list(r, 2);
    t->v[0] = a;
    t->v[1] = b;
    t->n = 2;
    t->tuple = true;
    return list_val(t);
}

static tv f_items(trender *r, const tnode *at, tv v) {
    if (v.t == TV_UNDEF) return list_val(new_list(r, 0));
    if (v.t != TV_DICT && v.t != TV_NS)
        ffail(r, at, "%s%s", "Can only get item pairs from a mapping.", "");
    tlist *out = new_list(r, v.d->n);
    for (size_t i = 0; i < v.d->n; i++) out->v[i] = pair(r, v.d->k[i], v.d->v[i]);
    out->n = v.d->n;
    return list_val(out);
}

static tv f_dictsort(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                     tv *kwv, size_t nkw) {
    if (v.t != TV_DICT) ffail(r, at, "%s%s", "dictsort needs a mapping", "");
    tv *cs = tmpl_arg(args, nargs, kwn, kwv, nkw, 0, "case_sensitive");
    tv *by = tmpl_arg(args, nargs, kwn, kwv, nkw, 1, "by");
    tv *rev = tmpl_arg(args, nargs, kwn, kwv, nkw, 2, "reverse");
    bool by_value = by && by->t == TV_STR && by->n == 5 && memcmp(by->s, "value", 5) == 0;
    sortent *e = ir_arena_alloc(r->a, (v.d->n + 1) * sizeof *e);
    if (!e) OOM(r);
    for (size_t i = 0; i < v.d->n; i++) {
        e[i].key = sort_key(r, by_value ? v.d->v[i] : v.d->k[i], cs && tv_truthy(*cs));
        e[i].val = pair(r, v.d->k[i], v.d->v[i]);
        e[i].pos = i;
    }
    stable_sort(r, e, v.d->n, rev && tv_truthy(*rev));
    tlist *out = new_list(r, v.d->n);
    for (size_t i = 0; i < v.d->n; i++) out->v[i] = e[i].val;
    out->n = v.d->n;
    return list_val(out);
}

static tv f_minmax(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                   tv *kwv, size_t nkw, bool max) {
    tlist *items = tmpl_iter(r, at, v);
    tv *cs = tmpl_arg(args, nargs, kwn, kwv, nkw, 0, "case_sensitive");
    tv *attr = tmpl_arg(args, nargs, kwn, kwv, nkw, 1, "attribute");
    if (!items->n) return tv_undef(NULL, 0);
    size_t best = 0;
    tv bk =
        sort_key(r, attr ? get_path(r, at, items->v[0], *attr) : items->v[0], cs && tv_truthy(*cs));
    for (size_t i = 1; i < items->n; i++) {
        tv k = sort_key(r, attr ? get_path(r, at, items->v[i], *attr) : items->v[i],
                        cs && tv_truthy(*cs));
        int c = tv_cmp(r->e, k, bk);
        if (max ? c > 0 : c < 0) {
            best = i;
            bk = k;
        }
    }
    return items->v[best];
}

static tv f_join(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                 tv *kwv, size_t nkw) {
    tlist *items = tmpl_iter(r, at, v);
    tv *d = tmpl_arg(args, nargs, kwn, kwv, nkw, 0, "d");
    tv *attr = tmpl_arg(args, nargs, kwn, kwv, nkw, 1, "attribute");
    tv sep = d ? str_of(r, *d) : tv_str("", 0);
    tsb b;
    tsb_init(&b, r->a, r->e, r->lim->max_output);
    for (size_t i = 0; i < items->n; i++) {
        if (i) tsb_add(&b, sep.s, sep.n);
        tv_str_to(&b, attr ? get_path(r, at, items->v[i], *attr) : items->v[i]);
    }
    return sb_val(&b);
}

static tv f_center(trender *r, tv s, int64_t width) {
    int64_t len = (int64_t)tmpl_utf8_len(s.s, s.n);
    if (width <= len) return s;
    int64_t marg = width - len, left = marg / 2 + (marg & width & 1);
    tsb b;
    tsb_init(&b, r->a, r->e, r->lim->max_output);
    for (int64_t k = 0; k < left; k++) tsb_addc(&b, ' ');
    tsb_add(&b, s.s, s.n);
    for (int64_t k = 0; k < marg - left; k++) tsb_addc(&b, ' ');
    return sb_val(&b);
}

static tv f_reverse(trender *r, const tnode *at, tv v) {
    if (v.t == TV_STR) {
        tlist *cs = tmpl_iter(r, at, v);
        tsb b;
        tsb_init(&b, r->a, r->e, v.n);
        for (size_t i = cs->n; i-- > 0;) tsb_add(&b, cs->v[i].s, cs->v[i].n);
        return sb_val(&b);
    }
    tlist *items = tmpl_iter(r, at, v);
    tlist *out = new_list(r, items->n);
    for (size_t i = 0; i < items->n; i++) out->v[i] = items->v[items->n - 1 - i];
    out->n = items->n;
    return list_val(out);
}

static tv f_escape(trender *r, tv v) {
    tv s = str_of(r, v);
    tsb b;
    tsb_init(&b, r->a, r->e, r->lim->max_output);
    for (size_t i = 0; i < s.n; i++) {
        switch (s.s[i]) {
        case '&':
            tsb_adds(&b, "&amp;");
            break;
        case '<':
            tsb_adds(&b, "&lt;");
            break;
        case '>':
            tsb_adds(&b, "&gt;");
            break;
        case '"':
            tsb_adds(&b, "&#34;");
            break;
        case '\'':
            tsb_adds(&b, "&#39;");
            break;
        default:
            tsb_addc(&b, s.s[i]);
        }
    }
    return sb_val(&b);
}

static tv f_batch(trender *r, const tnode *at, tv v, int64_t count, tv *fill) {
    if (count <= 0) ffail(r, at, "%s%s", "batch count must be positive", "");
    tlist *items = tmpl_iter(r, at, v), *out = new_list(r, 0), *cur = NULL;
    for (size_t i = 0; i < items->n; i++) {
        if (!cur || (int64_t)cur->n == count) {
            cur = new_list(r, 0);
            tv_list_push(r->a, r->e, out, list_val(cur));
        }
        tv_list_push(r->a, r->e, cur, items->v[i]);
    }
    if (cur && fill && (int64_t)cur->n < count)
        while ((int64_t)cur->n < count) tv_list_push(r->a, r->e, cur, *fill);
    return list_val(out);
}

static tv f_wordcount(trender *r, tv v) {
    tv s = str_of(r, v);
    int64_t n = 0;
    bool in = false;
    for (size_t i = 0; i < s.n;) {
        bool w = ts_word_char(tmpl_utf8_next(s.s, s.n, &i));
        if (w && !in) n++;
        in = w;
    }
    return tv_int(n);
}

static bool is_number(tv v) {
    return v.t == TV_INT || v.t == TV_FLOAT || v.t == TV_BOOL || v.t == TV_BIG;
}

static tv f_sum(trender *r, const tnode *at, tv v, tv *args, size_t nargs, const char **kwn,
                tv *kwv, size_t nkw) {
    tlist *items = tmpl_iter(r, at, v);
    tv *attr = tmpl_arg(args, nargs, kwn, kwv, nkw, 0, "attribute");
    tv *start = tmpl_arg(args, nargs, kwn, kwv, nkw, 1, "start");
    tv acc = start ? *start : tv_int(0);
    for (size_t i = 0; i < items->n; i++) {
        tv x = attr ? get_path(r, at, items->v[i], *attr) : items->v[i];
        if (!is_number(acc) || !is_number(x))
            ffail(r, at, "unsupported operand type(s) for +: '%s' and '%s'", tv_typename(acc),
                  tv_typename(x));
        acc = tmpl_arith(r, at, OP_ADD, acc, x); /* Python's + (big integers included) */
    }
    return acc;
}

tv tmpl_filter(trender *r, const tnode *at, const char *name, tv v, tv *args, size_t nargs,
               const char **kwn, tv *kwv, size_t nkw) {
#define ARG(i, kw) tmpl_arg(args, nargs, kwn, kwv, nkw, i, kw)
    /* first: `messages|length` runs once per message in chat templates */
    if (EQ("length") || EQ("count")) return tv_int(py_len(r, at, v));
    if (EQ("tojson")) return f_tojson(r, at, v, args, nargs, kwn, kwv, nkw);
    if (EQ("safe") || EQ("string")) return str_of(r, v);
    if (EQ("trim")) {
        tv s = str_of(r, v);
        tv *chars = ARG(0, "chars");
        size_t cn = 0;
        const char *cs = chars && chars->t != TV_NONE ? need_str(r, at, chars, &cn, "chars") : NULL;
        size_t a, z;
        ts_strip(s.s, s.n, cs, cn, true, true, &a, &z);
        return tv_str(s.s + a, z - a);
    }
    if (EQ("default") || EQ("d")) {
        tv *dv = ARG(0, "default_value");
        tv *b = ARG(1, "boolean");
        if (v.t == TV_UNDEF || (b && tv_truthy(*b) && !tv_truthy(v)))
            return dv ? *dv : tv_str("", 0);
        return v;
    }
    if (EQ("upper") || EQ("lower") || EQ("title") || EQ("capitalize")) {
        tv s = str_of(r, v);
        tsb b;
        tsb_init(&b, r->a, r->e, r->lim->max_output);
        ts_case(&b, s.s, s.n,
                EQ("upper")   ? TS_UPPER
                : EQ("lower") ? TS_LOWER
                : EQ("title") ? TS_TITLE_JINJA
                              : TS_CAPITALIZE);
        return sb_val(&b);
    }
    if (EQ("replace")) {
        tv s = str_of(r, v);
        tv *o = ARG(0, "old"), *nw = ARG(1, "new");
        if (!o || !nw) ffail(r, at, "%s%s", "replace needs old and new", "");
        tv os = str_of(r, *o), ns = str_of(r, *nw);
        int64_t count = int_arg(r, at, ARG(2, "count"), -1, "count");
        tsb b;
        tsb_init(&b, r->a, r->e, r->lim->max_output);
        ts_replace(&b, s.s, s.n, os.s, os.n, ns.s, ns.n, count);
        return sb_val(&b);
    }
    if (EQ("join")) return f_join(r, at, v, args, nargs, kwn, kwv, nkw);
    if (EQ("list")) {
        tlist *items = tmpl_iter(r, at, v), *out = new_list(r, items->n);
        if (items->n) memcpy(out->v, items->v, items->n * sizeof *out->v);
        out->n = items->n;
        return list_val(out);
    }
    if (EQ("first") || EQ("last")) {
        if (EQ("last") && v.t != TV_LIST && v.t != TV_STR && v.t != TV_UNDEF)
            ffail(r, at, "'%s' object is not reversible", tv_typename(v), "");
        tlist *items = tmpl_iter(r, at, v);
        if (!items->n) return tv_undef(NULL, 0);
        return EQ("first") ? items->v[0] : items->v[items->n - 1];
    }
    if (EQ("items")) return f_items(r, at, v);
    if (EQ("selectattr")) return f_select(r, at, v, args, nargs, true, true);
    if (EQ("rejectattr")) return f_select(r, at, v, args, nargs, true, false);
    if (EQ("select")) return f_select(r, at, v, args, nargs, false, true);
    if (EQ("reject")) return f_select(r, at, v, args, nargs, false, false);
    if (EQ("map")) return f_map(r, at, v, args, nargs, kwn, kwv, nkw);
    if (EQ("attr")) {
        tv *n = ARG(0, "name");
        if (!n || n->t != TV_STR) ffail(r, at, "%s%s", "attr needs a name", "");
        return tmpl_getattr(r, at, v, n->s, n->n);
    }
    if (EQ("int")) return f_int(r, at, v, ARG(0, "default"));
    if (EQ("float")) {
        tv f = f_float(v, ARG(0, "default"));
        if (v.t == TV_BIG && f.t == TV_FLOAT && isinf(f.f)) /* Python's OverflowError */
            ffail(r, at, "%s%s", "int too large to convert to float", "");
        return f;
    }
    if (EQ("abs")) {
        if (v.t == TV_INT) {
            if (v.i == INT64_MIN) return tmpl_arith(r, at, OP_SUB, tv_int(0), v);
            return tv_int(v.i < 0 ? -v.i : v.i);
        }
        if (v.t == TV_FLOAT) return tv_float(fabs(v.f));
        if (v.t == TV_BOOL) return tv_int(v.b);
        if (v.t == TV_BIG) return v.s[0] == '-' ? tv_big_neg(r->a, r->e, v) : v;
        ffail(r, at, "bad operand type for abs(): '%s'%s", tv_typename(v), "");
    }
    if (EQ("round")) return f_round(r, at, v, args, nargs, kwn, kwv, nkw);
    if (EQ("indent")) {
        tv *f = ARG(1, "first"), *b = ARG(2, "blank");
        return f_indent(r, at, v, ARG(0, "width"), f && tv_truthy(*f), b && tv_truthy(*b));
    }
    if (EQ("unique")) return f_sort(r, at, v, args, nargs, kwn, kwv, nkw, true);
    if (EQ("sort")) return f_sort(r, at, v, args, nargs, kwn, kwv, nkw, false);
    if (EQ("dictsort")) return f_dictsort(r, at, v, args, nargs, kwn, kwv, nkw);
    if (EQ("reverse")) return f_reverse(r, at, v);
    if (EQ("batch"))
        return f_batch(r, at, v, int_arg(r, at, ARG(0, "linecount"), 0, "linecount"),
                       ARG(1, "fill_with"));
    if (EQ("wordcount")) return f_wordcount(r, v);
    if (EQ("center"))
        return f_center(r, str_of(r, v), int_arg(r, at, ARG(0, "width"), 80, "width"));
    if (EQ("truncate")) return f_truncate(r, at, v, args, nargs, kwn, kwv, nkw);
    if (EQ("escape") || EQ("e") || EQ("forceescape")) return f_escape(r, v);
    if (EQ("sum")) return f_sum(r, at, v, args, nargs, kwn, kwv, nkw);
    if (EQ("min")) return f_minmax(r, at, v, args, nargs, kwn, kwv, nkw, false);
    if (EQ("max")) return f_minmax(r, at, v, args, nargs, kwn, kwv, nkw, true);
    if (EQ("pprint")) {
        tsb b;
        tsb_init(&b, r->a, r->e, r->lim->max_output);
        tv_repr_to(&b, v);
        return sb_val(&b);
    }
#undef ARG
    ffail(r, at, "no filter named '%s'%s", name, "");
}

/* ---- tests ------------------------------------------------------------------------- */
bool tmpl_test(trender *r, const tnode *at, const char *name, tv v, tv *args, size_t nargs) {
    tv *a0 = nargs ? &args[0] : NULL;
    if (EQ("defined")) return v.t != TV_UNDEF;
    if (EQ("undefined")) return v.t == TV_UNDEF;
    if (EQ("none")) return v.t == TV_NONE;
    if (EQ("string")) return v.t == TV_STR;
    if (EQ("number")) return v.t == TV_INT || v.t == TV_FLOAT || v.t == TV_BOOL || v.t == TV_BIG;
    if (EQ("integer")) return v.t == TV_INT || v.t == TV_BIG;
    if (v.t == TV_BIG && (EQ("odd") || EQ("even"))) return tv_big_odd(v) == EQ("odd");
    if (EQ("divisibleby") && a0 && (v.t == TV_BIG || a0->t == TV_BIG) &&
        (v.t == TV_INT || v.t == TV_BOOL || v.t == TV_BIG))
        return tv_eq(tmpl_arith(r, at, OP_MOD, v, *a0), tv_int(0)); /* value % num == 0 */
    if (EQ("float")) return v.t == TV_FLOAT;
    if (EQ("boolean")) return v.t == TV_BOOL;
    if (EQ("true")) return v.t == TV_BOOL && v.b;
    if (EQ("false")) return v.t == TV_BOOL && !v.b;
    if (EQ("mapping")) return v.t == TV_DICT;
    if (EQ("iterable"))
        return v.t == TV_STR || v.t == TV_LIST || v.t == TV_DICT || v.t == TV_UNDEF || v.t == TV_NS;
    if (EQ("sequence")) return v.t == TV_STR || v.t == TV_LIST || v.t == TV_DICT || v.t == TV_UNDEF;
    if (EQ("callable")) return v.t == TV_MACRO || v.t == TV_FUNC || v.t == TV_METHOD;
    if (EQ("odd") || EQ("even") || EQ("divisibleby")) {
        if (v.t != TV_INT && v.t != TV_BOOL)
            ffail(r, at, "the %s test needs an integer, not %s", name, tv_typename(v));
        int64_t i = v.t == TV_INT ? v.i : v.b;
        if (EQ("odd")) return i % 2 != 0;
        if (EQ("even")) return i % 2 == 0;
        int64_t d = int_arg(r, at, a0, 1, "the divisor");
        if (!d) ffail(r, at, "%s%s", "integer division or modulo by zero", "");
        return d == -1 || i % d == 0;
    }
    if (EQ("lower") || EQ("upper")) {
        tv s = str_of(r, v);
        return ts_is(s.s, s.n, EQ("lower") ? TS_LOWERCASE : TS_UPPERCASE);
    }
    if (EQ("escaped")) return false;
    if (!a0 && (EQ("eq") || EQ("ne") || EQ("lt") || EQ("gt") || EQ("le") || EQ("ge") || EQ("in") ||
                EQ("sameas") || EQ("equalto")))
        ffail(r, at, "the %s test needs an argument%s", name, "");
    if (EQ("eq") || EQ("equalto") || EQ("==")) return tv_eq(v, *a0);
    if (EQ("ne") || EQ("!=")) return !tv_eq(v, *a0);
    if (EQ("sameas")) {
        if (v.t != a0->t) return false;
        if (v.t == TV_LIST) return v.l == a0->l;
        if (v.t == TV_DICT || v.t == TV_NS) return v.d == a0->d;
        return tv_eq(v, *a0);
    }
    if (EQ("lt") || EQ("lessthan") || EQ("gt") || EQ("greaterthan") || EQ("le") || EQ("ge")) {
        int c = tv_cmp(r->e, v, *a0);
        if (EQ("lt") || EQ("lessthan")) return c < 0;
        if (EQ("gt") || EQ("greaterthan")) return c > 0;
        if (EQ("le")) return c <= 0;
        return c >= 0;
    }
    if (EQ("in")) {
        if (a0->t == TV_STR) {
            if (v.t != TV_STR)
                ffail(r, at, "'in <string>' requires string as left operand%s%s", "", "");
            return ts_find(a0->s, a0->n, v.s, v.n) != NULL;
        }
        if (a0->t == TV_DICT) return tv_dict_get(a0->d, v) != NULL;
        tlist *items = tmpl_iter(r, at, *a0);
        for (size_t i = 0; i < items->n; i++)
            if (tv_eq(items->v[i], v)) return true;
        return false;
    }
    ffail(r, at, "no test named '%s'%s", name, "");
}

/* ---- methods -------------------------------------------------------------------------- */
static const char *const STR_METHODS[] = {
    "startswith", "endswith", "split",   "rsplit",     "strip",      "lstrip",  "rstrip",
    "upper",      "lower",    "replace", "title",      "capitalize", "find",    "rfind",
    "count",      "format",   "join",    "splitlines", "isdigit",    "isalpha", "isalnum",
    "isspace",    "islower",  "isupper", "index",      "rindex",     NULL};
static const char *const DICT_METHODS[] = {"items", "keys", "values", "get", NULL};
static const char *const LIST_METHODS[] = {"count", "index", NULL};

static bool in_names(const char *const *names, const char *s, size_t n) {
    for (size_t i = 0; n && names[i]; i++)
        if (names[i][0] == s[0] && strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
            return true;
    return false;
}

/* Every attribute of a dict (message.role, message.content) asks first
 * whether it names a method: most names are ruled out by their first byte. */
static bool maybe_dict_method(const char *s, size_t n) {
    return n >= 3 && n <= 6 && (s[0] == 'i' || s[0] == 'k' || s[0] == 'v' || s[0] == 'g');
}

bool tmpl_has_method(tv obj, const char *name, size_t n) {
    switch (obj.t) {
    case TV_STR:
        return in_names(STR_METHODS, name, n);
    case TV_DICT:
        return maybe_dict_method(name, n) && in_names(DICT_METHODS, name, n);
    case TV_LIST:
        return in_names(LIST_METHODS, name, n);
    case TV_LOOP:
        return n == 5 && memcmp(name, "cycle", 5) == 0;
    default:
        return false;
    }
}

/* A byte offset for a Python code-point index (start/end arguments), clamped. */
static size_t cp_index(const tv *s, const tv *idx, size_t dflt) {
    if (!idx || idx->t == TV_NONE) return dflt;
    int64_t i = idx->t == TV_INT ? idx->i : 0;
    int64_t len = (int64_t)tmpl_utf8_len(s->s, s->n);
    if (i < 0) i += len;
    if (i < 0) i = 0;
    if (i > len) i = len;
    size_t off = 0;
    for (int64_t k = 0; k < i; k++) tmpl_utf8_next(s->s, s->n, &off);
    return off;
}

static bool affix(trender *r, const tnode *at, tv self, tv *args, size_t nargs, bool start) {
    if (!nargs) ffail(r, at, "%s%s", "startswith/endswith takes at least 1 argument", "");
    size_t from = cp_index(&self, nargs > 1 ? &args[1] : NULL, 0);
    size_t to = cp_index(&self, nargs > 2 ? &args[2] : NULL, self.n);
    if (to < from) return false;
    const char *s = self.s + from;
    size_t n = to - from;
    tv *opts = &args[0];
    size_t no = 1;
    if (args[0].t == TV_LIST && args[0].l->tuple) {
        opts = args[0].l->v;
        no = args[0].l->n;
    }
    for (size_t k = 0; k < no; k++) {
        if (opts[k].t != TV_STR)
            ffail(r, at, "%s first arg must be str or a tuple of str, not %s",
                  start ? "startswith" : "endswith", tv_typename(opts[k]));
        size_t pn = opts[k].n;
        if (pn <= n && memcmp(start ? s : s + n - pn, opts[k].s, pn) == 0) return true;
    }
    return false;
}

/* str.format with {} / {0} / {name} fields, each printed with str(). */
static tv str_format(trender *r, const tnode *at, tv self, tv *args, size_t nargs, const char **kwn,
                     tv *kwv, size_t nkw) {
    tsb b;
    tsb_init(&b, r->a, r->e, r->lim->max_output);
    size_t auto_i = 0;
    for (size_t i = 0; i < self.n; i++) {
        char c = self.s[i];
        if ((c == '{' || c == '}') && i + 1 < self.n && self.s[i + 1] == c) {
            tsb_addc(&b, c);
            i++;
            continue;
        }
        if (c == '}') ffail(r, at, "%s%s", "Single '}' encountered in format string", "");
        if (c != '{') {
            tsb_addc(&b, c);
            continue;
        }
        const char *close = memchr(self.s + i, '}', self.n - i);
        if (!close) ffail(r, at, "%s%s", "Single '{' encountered in format string", "");
        const char *f = self.s + i + 1;
        size_t fn = (size_t)(close - f);
        if (memchr(f, ':', fn) || memchr(f, '!', fn))
            ffail(r, at, "%s%s", "format specs in str.format are not supported", "");
        tv *val = NULL;
        if (!fn) {
            val = auto_i < nargs ? &args[auto_i] : NULL;
            auto_i++;
        } else if (f[0] >= '0' && f[0] <= '9') {
            size_t k = (size_t)atoi(f);
            val = k < nargs ? &args[k] : NULL;
        } else {
            for (size_t k = 0; k < nkw; k++)
                if (strlen(kwn[k]) == fn && memcmp(kwn[k], f, fn) == 0) val = &kwv[k];
        }
        if (!val) ffail(r, at, "%s%s", "str.format: a field has no argument", "");
        tv_str_to(&b, *val);
        i = (size_t)(close - self.s);
    }
    return sb_val(&b);
}

static tv str_method(trender *r, const tnode *at, tv self, const char *name, tv *args, size_t nargs,
                     const char **kwn, tv *kwv, size_t nkw) {
#define ARG(i, kw) tmpl_arg(args, nargs, kwn, kwv, nkw, i, kw)
    if (EQ("startswith") || EQ("endswith"))
        return tv_bool(affix(r, at, self, args, nargs, EQ("startswith")));
    if (EQ("strip") || EQ("lstrip") || EQ("rstrip")) {
        tv *chars = ARG(0, "chars");
        size_t cn = 0;
        const char *cs = chars && chars->t != TV_NONE ? need_str(r, at, chars, &cn, "chars") : NULL;
        size_t a, z;
        ts_strip(self.s, self.n, cs, cn, !EQ("rstrip"), !EQ("lstrip"), &a, &z);
        return tv_str(self.s + a, z - a);
    }
    if (EQ("split") || EQ("rsplit")) {
        tv *sep = ARG(0, "sep");
        int64_t maxsplit = int_arg(r, at, ARG(1, "maxsplit"), -1, "maxsplit");
        size_t sn = 0;
        const char *ss = sep && sep->t != TV_NONE ? need_str(r, at, sep, &sn, "sep") : NULL;
        if (ss && !sn) ffail(r, at, "%s%s", "empty separator", "");
        piece_ctx c = {r, new_list(r, 0)};
        ts_split(self.s, self.n, ss, sn, maxsplit, EQ("rsplit"), push, &c);
        return list_val(c.l);
    }
    if (EQ("splitlines")) {
        tv *ke = ARG(0, "keepends");
        piece_ctx c = {r, new_list(r, 0)};
        ts_splitlines(self.s, self.n, ke && tv_truthy(*ke), push, &c);
        return list_val(c.l);
    }
    if (EQ("upper") || EQ("lower") || EQ("title") || EQ("capitalize")) {
        tsb b;
        tsb_init(&b, r->a, r->e, r->lim->max_output);
        ts_case(&b, self.s, self.n,
                EQ("upper")   ? TS_UPPER
                : EQ("lower") ? TS_LOWER
                : EQ("title") ? TS_TITLE
                              : TS_CAPITALIZE);
        return sb_val(&b);
    }
    if (EQ("replace")) {
        if (nargs < 2 || args[0].t != TV_STR || args[1].t != TV_STR)
            ffail(r, at, "%s%s", "replace takes two strings", "");
        int64_t count = int_arg(r, at, ARG(2, "count"), -1, "count");
        tsb b;
        tsb_init(&b, r->a, r->e, r->lim->max_output);
        ts_replace(&b, self.s, self.n, args[0].s, args[0].n, args[1].s, args[1].n, count);
        return sb_val(&b);
    }
    if (EQ("find") || EQ("rfind") || EQ("index") || EQ("rindex") || EQ("count")) {
        if (!nargs || args[0].t != TV_STR) ffail(r, at, "%s needs a string argument%s", name, "");
        size_t from = cp_index(&self, nargs > 1 ? &args[1] : NULL, 0);
        size_t to = cp_index(&self, nargs > 2 ? &args[2] : NULL, self.n);
        if (to < from) to = from;
        if (EQ("count"))
            return tv_int((int64_t)ts_count(self.s + from, to - from, args[0].s, args[0].n));
        bool rev = name[0] == 'r';
        const char *p = rev ? ts_rfind(self.s + from, to - from, args[0].s, args[0].n)
                            : ts_find(self.s + from, to - from, args[0].s, args[0].n);
        if (!p) {
            if (name[rev] == 'i') ffail(r, at, "%s%s", "substring not found", "");
            return tv_int(-1);
        }
        return tv_int((int64_t)tmpl_utf8_len(self.s, (size_t)(p - self.s)));
    }
    if (EQ("format")) return str_format(r, at, self, args, nargs, kwn, kwv, nkw);
    if (EQ("join")) {
        if (!nargs) ffail(r, at, "%s%s", "join takes one argument", "");
        tlist *items = tmpl_iter(r, at, args[0]);
        tsb b;
        tsb_init(&b, r->a, r->e, r->lim->max_output);
        for (size_t i = 0; i < items->n; i++) {
            if (items->v[i].t != TV_STR)
                ffail(r, at, "sequence item: expected str instance, %s found",
                      tv_typename(items->v[i]), "");
            if (i) tsb_add(&b, self.s, self.n);
            tsb_add(&b, items->v[i].s, items->v[i].n);
        }
        return sb_val(&b);
    }
    ts_class cls = EQ("isdigit")   ? TS_DIGIT
                   : EQ("isalpha") ? TS_ALPHA
                   : EQ("isalnum") ? TS_ALNUM
                   : EQ("isspace") ? TS_SPACE
                   : EQ("islower") ? TS_LOWERCASE
                                   : TS_UPPERCASE;
    return tv_bool(ts_is(self.s, self.n, cls));
#undef ARG
}

tv tmpl_method(trender *r, const tnode *at, tv self, const char *mname, size_t n, tv *args,
               size_t nargs, const char **kwn, tv *kwv, size_t nkw) {
    char name[32];
    if (n >= sizeof name || !tmpl_has_method(self, mname, n))
        ffail(r, at, "'%s' object has no callable attribute '%.40s'", tv_typename(self), mname);
    memcpy(name, mname, n);
    name[n] = '\0';
    if (self.t == TV_STR) return str_method(r, at, self, name, args, nargs, kwn, kwv, nkw);
    if (self.t == TV_LOOP) {
        if (!nargs) ffail(r, at, "%s%s", "no items for cycling given", "");
        return args[self.lp->index0 % nargs];
    }
    if (self.t == TV_LIST) {
        if (!nargs) ffail(r, at, "%s takes one argument%s", name, "");
        int64_t c = 0;
        for (size_t i = 0; i < self.l->n; i++)
            if (tv_eq(self.l->v[i], args[0])) {
                if (EQ("index")) return tv_int((int64_t)i);
                c++;
            }
        if (EQ("index")) ffail(r, at, "%s%s", "value is not in list", "");
        return tv_int(c);
    }
    /* dict */
    if (EQ("get")) {
        if (!nargs) ffail(r, at, "%s%s", "get expected at least 1 argument", "");
        tv *v = tv_dict_get(self.d, args[0]);
        return v ? *v : nargs > 1 ? args[1] : tv_none();
    }
    if (EQ("items")) return f_items(r, at, self);
    tlist *out = new_list(r, self.d->n);
    memcpy(out->v, EQ("keys") ? self.d->k : self.d->v, self.d->n * sizeof *out->v);
    out->n = self.d->n;
    return list_val(out);
}
