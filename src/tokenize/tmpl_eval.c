/* tmpl_eval.c: compiling and rendering templates; statements, expressions,
 * scopes, macros, attribute and item access, and Python's arithmetic.
 *
 * Scopes follow Jinja2: the render's variables and top-level sets live in
 * the root frame; each loop iteration and each macro call gets a frame of
 * its own (a set inside a loop is gone at the next iteration), and `if`
 * blocks share their enclosing frame. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenize/tmpl_internal.h"

struct irt_template {
    ir_arena *a;
    tnode *root;
    irt_template_limits lim;
};

enum { FLOW_NORMAL, FLOW_BREAK, FLOW_CONTINUE };

static void limits_fill(irt_template_limits *l, const irt_template_limits *in) {
    irt_template_limits d = {.max_template = (size_t)1 << 20,
                             .max_output = (size_t)64 << 20,
                             .max_memory = (size_t)512 << 20,
                             .max_steps = 10000000,
                             .max_depth = 64};
    if (in) {
        if (in->max_template) d.max_template = in->max_template;
        if (in->max_output) d.max_output = in->max_output;
        if (in->max_memory) d.max_memory = in->max_memory;
        if (in->max_steps) d.max_steps = in->max_steps;
        if (in->max_depth) d.max_depth = in->max_depth;
    }
    *l = d;
}

/* ---- frames ------------------------------------------------------------------ */
static tframe *frame_new(trender *r, tframe *up) {
    tframe *f = ir_arena_calloc(r->a, sizeof *f);
    if (!f) tmpl_fail(r->e, 0, 0, "out of memory (the render's memory limit)");
    f->up = up;
    return f;
}

/* A loop iteration's frame: the previous iteration's, emptied, unless a closure
 * holds it (a macro or call block defined in the body keeps its scope alive);
 * else a new one. A 50,000-message loop would otherwise leave 50,000 frames
 * (and their slot arrays) in the render's arena. */
static tframe *frame_next(trender *r, tframe *up, tframe *prev) {
    if (prev && !prev->kept) {
        prev->n = 0;
        return prev;
    }
    return frame_new(r, up);
}

/* f and the frames above it outlive their scope: a closure holds them. */
static void frame_keep(tframe *f) {
    for (; f && !f->kept; f = f->up) f->kept = true;
}

static void frame_set(trender *r, tframe *f, const char *name, size_t n, tv v) {
    for (size_t i = 0; i < f->n; i++)
        if (f->lens[i] == n && tmpl_name_eq(f->names[i], name, n)) {
            f->vals[i] = v;
            return;
        }
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 8;
        const char **nn = ir_arena_alloc(r->a, nc * sizeof *nn);
        size_t *nl = ir_arena_alloc(r->a, nc * sizeof *nl);
        tv *nv = ir_arena_alloc(r->a, nc * sizeof *nv);
        if (!nn || !nl || !nv) tmpl_fail(r->e, 0, 0, "out of memory (the render's memory limit)");
        if (f->n) {
            memcpy(nn, f->names, f->n * sizeof *nn);
            memcpy(nl, f->lens, f->n * sizeof *nl);
            memcpy(nv, f->vals, f->n * sizeof *nv);
        }
        f->names = nn;
        f->lens = nl;
        f->vals = nv;
        f->cap = nc;
    }
    f->names[f->n] = name;
    f->lens[f->n] = n;
    f->vals[f->n++] = v;
}

static tv *frame_get(tframe *f, const char *name, size_t n) {
    /* names compared in place (tmpl_name_eq), innermost frame first */
    for (; f; f = f->up)
        for (size_t i = f->n; i-- > 0;)
            if (f->lens[i] == n && tmpl_name_eq(f->names[i], name, n)) return &f->vals[i];
    return NULL;
}

static tv builtin(const char *name, size_t n) {
    static const struct {
        const char *name;
        int id;
    } b[] = {{"range", TF_RANGE},
             {"namespace", TF_NAMESPACE},
             {"dict", TF_DICT},
             {"raise_exception", TF_RAISE},
             {"strftime_now", TF_STRFTIME}};
    for (size_t i = 0; i < IR_ARRAY_LEN(b); i++)
        if (strlen(b[i].name) == n && memcmp(b[i].name, name, n) == 0) {
            tv v = {.t = TV_FUNC};
            v.i = b[i].id;
            return v;
        }
    return tv_undef(name, n);
}

void tmpl_step(trender *r, const tnode *at) {
    if (++r->steps > r->lim->max_steps)
        tmpl_fail(r->e, at ? at->line : 0, at ? at->col : 0,
                  "the template ran past its limit of %llu loop iterations and calls",
                  (unsigned long long)r->lim->max_steps);
}

void tmpl_charge(trender *r, const tnode *at, uint64_t n) {
    if (n > r->lim->max_steps - r->steps)
        tmpl_fail(r->e, at ? at->line : 0, at ? at->col : 0,
                  "the template ran past its limit of %llu loop iterations and calls "
                  "(big-integer operations count by their size)",
                  (unsigned long long)r->lim->max_steps);
    r->steps += n;
}

static _Noreturn void efail(trender *r, const tnode *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void efail(trender *r, const tnode *at, const char *fmt, ...) {
    char msg[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tmpl_fail(r->e, at ? at->line : 0, at ? at->col : 0, "%s", msg);
}

static _Noreturn void undefined_fail(trender *r, const tnode *at, tv u) {
    if (u.s) efail(r, at, "'%.*s' is undefined", (int)(u.n > 80 ? 80 : u.n), u.s);
    efail(r, at, "a value is undefined");
}

static tv eval(trender *r, tframe *f, const tnode *x);
static int exec_list(trender *r, tframe *f, tnode *const *v, size_t n);

/* ---- access ------------------------------------------------------------------ */
static tv bound(trender *r, tv self, const char *name, size_t n) {
    tv m = {.t = TV_METHOD};
    m.mt = ir_arena_alloc(r->a, sizeof *m.mt);
    if (!m.mt) tmpl_fail(r->e, 0, 0, "out of memory");
    *m.mt = (tmethod){.self = self, .name = name, .n = n};
    return m;
}

static tv loop_attr(trender *r, const tnode *at, tv self, const char *name, size_t n) {
    const tloop *lp = self.lp;
    size_t len = lp->items->n, i = lp->index0;
#define IS(s) (n == sizeof(s) - 1 && memcmp(name, s, n) == 0)
    if (IS("index")) return tv_int((int64_t)i + 1);
    if (IS("index0")) return tv_int((int64_t)i);
    if (IS("revindex")) return tv_int((int64_t)(len - i));
    if (IS("revindex0")) return tv_int((int64_t)(len - i - 1));
    if (IS("first")) return tv_bool(i == 0);
    if (IS("last")) return tv_bool(i + 1 == len);
    if (IS("length")) return tv_int((int64_t)len);
    if (IS("depth")) return tv_int((int64_t)lp->depth0 + 1);
    if (IS("depth0")) return tv_int((int64_t)lp->depth0);
    if (IS("previtem")) return i > 0 ? lp->items->v[i - 1] : tv_undef("previtem", 8);
    if (IS("nextitem")) return i + 1 < len ? lp->items->v[i + 1] : tv_undef("nextitem", 8);
    if (IS("cycle")) return bound(r, self, name, n);
#undef IS
    (void)at;
    return tv_undef(NULL, 0);
}

tv tmpl_getattr(trender *r, const tnode *at, tv obj, const char *name, size_t n) {
    switch (obj.t) {
    case TV_UNDEF:
        undefined_fail(r, at, obj);
    case TV_DICT:
        if (tmpl_has_method(obj, name, n)) return bound(r, obj, name, n);
        /* fall through */
    case TV_NS: {
        tv *v = tv_dict_gets(obj.d, name, n);
        return v ? *v : tv_undef(name, n);
    }
    case TV_LOOP:
        return loop_attr(r, at, obj, name, n);
    default:
        if (tmpl_has_method(obj, name, n)) return bound(r, obj, name, n);
        return tv_undef(name, n);
    }
}

/* Python's index normalisation: -1 is the last; false when out of range. */
static bool norm_index(int64_t i, size_t len, size_t *out) {
    if (i < 0) i += (int64_t)len;
    if (i < 0 || (uint64_t)i >= len) return false;
    *out = (size_t)i;
    return true;
}

/* The byte offset of code point ci in s (ci <= count). */
static size_t cp_offset(const char *s, size_t n, size_t ci) {
    size_t i = 0;
    while (ci-- > 0 && i < n) tmpl_utf8_next(s, n, &i);
    return i;
}

tv tmpl_getitem(trender *r, const tnode *at, tv obj, tv key) {
    if (obj.t == TV_UNDEF) undefined_fail(r, at, obj);
    if ((obj.t == TV_LIST || obj.t == TV_STR) && (key.t == TV_INT || key.t == TV_BOOL)) {
        int64_t i = key.t == TV_INT ? key.i : key.b;
        size_t k;
        if (obj.t == TV_LIST) return norm_index(i, obj.l->n, &k) ? obj.l->v[k] : tv_undef(NULL, 0);
        size_t len = tmpl_utf8_len(obj.s, obj.n);
        if (!norm_index(i, len, &k)) return tv_undef(NULL, 0);
        size_t st = cp_offset(obj.s, obj.n, k), en = st;
        tmpl_utf8_next(obj.s, obj.n, &en);
        return tv_str(obj.s + st, en - st);
    }
    if (obj.t == TV_DICT || obj.t == TV_NS) {
        tv *v = tv_dict_get(obj.d, key);
        if (v) return *v;
    }
    if (key.t == TV_STR) {
        if (obj.t == TV_LOOP) return loop_attr(r, at, obj, key.s, key.n);
        if (tmpl_has_method(obj, key.s, key.n)) return bound(r, obj, key.s, key.n);
        return tv_undef(key.s, key.n);
    }
    return tv_undef(NULL, 0);
}

tlist *tmpl_iter(trender *r, const tnode *at, tv v) {
    switch (v.t) {
    case TV_UNDEF:
        return tv_list_new(r->a, 0);
    case TV_LIST:
        return v.l;
    case TV_DICT:
    case TV_NS: {
        tlist *l = tv_list_new(r->a, v.d->n);
        if (!l) tmpl_fail(r->e, 0, 0, "out of memory");
        memcpy(l->v, v.d->k, v.d->n * sizeof *l->v);
        l->n = v.d->n;
        return l;
    }
    case TV_STR: {
        tlist *l = tv_list_new(r->a, v.n);
        if (!l) tmpl_fail(r->e, 0, 0, "out of memory");
        for (size_t i = 0; i < v.n;) {
            size_t st = i;
            tmpl_utf8_next(v.s, v.n, &i);
            l->v[l->n++] = tv_str(v.s + st, i - st);
        }
        return l;
    }
    default:
        efail(r, at, "'%s' object is not iterable", tv_typename(v));
    }
}

/* Python slicing: a[b:c:d] for lists, tuples and strings (by code point). */
static void slice_bounds(int64_t len, const tv *b, const tv *c, const tv *d, int64_t *start,
                         int64_t *stop, int64_t *step) {
    *step = d && d->t == TV_INT ? d->i : 1;
    bool neg = *step < 0;
    int64_t lo = neg ? -1 : 0, hi = neg ? len - 1 : len;
    if (b && b->t == TV_INT) {
        *start = b->i < 0 ? b->i + len : b->i;
        if (*start < lo) *start = lo;
        if (*start > hi) *start = hi;
    } else {
        *start = neg ? hi : lo;
    }
    if (c && c->t == TV_INT) {
        *stop = c->i < 0 ? c->i + len : c->i;
        if (*stop < lo) *stop = lo;
        if (*stop > hi) *stop = hi;
    } else {
        *stop = neg ? lo : hi;
    }
}

static tv do_slice(trender *r, const tnode *at, tv obj, const tv *b, const tv *c, const tv *d) {
    const tv *parts[3] = {b, c, d};
    for (int k = 0; k < 3; k++)
        if (parts[k] && parts[k]->t != TV_INT && parts[k]->t != TV_NONE)
            efail(r, at, "slice indices must be integers or None");
    if (d && d->t == TV_INT && d->i == 0) efail(r, at, "slice step cannot be zero");
    if (obj.t == TV_UNDEF) undefined_fail(r, at, obj);
    tlist *src;
    bool str = obj.t == TV_STR;
    if (str)
        src = tmpl_iter(r, at, obj);
    else if (obj.t == TV_LIST)
        src = obj.l;
    else
        efail(r, at, "'%s' object is not subscriptable", tv_typename(obj));
    int64_t start, stop, step;
    slice_bounds((int64_t)src->n, b, c, d, &start, &stop, &step);
    /* the slice's length, so that its list is made once (messages[::-1] over
     * 50,000 messages grew one 17 times) */
    uint64_t span = step > 0 ? (stop > start ? (uint64_t)(stop - start) : 0)
                             : (start > stop ? (uint64_t)(start - stop) : 0);
    uint64_t mag = step > 0 ? (uint64_t)step : 0 - (uint64_t)step;
    size_t count = (size_t)(span / mag + (span % mag != 0));
    tlist *out = tv_list_new(r->a, count);
    if (!out) tmpl_fail(r->e, 0, 0, "out of memory");
    out->tuple = src->tuple;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out->v[out->n++] = src->v[i];
    if (!str) {
        tv v = {.t = TV_LIST};
        v.l = out;
        return v;
    }
    tsb sb;
    tsb_init(&sb, r->a, r->e, obj.n);
    for (size_t i = 0; i < out->n; i++) tsb_add(&sb, out->v[i].s, out->v[i].n);
    return tv_str(sb.p ? sb.p : "", sb.n);
}

/* ---- arithmetic -------------------------------------------------------------------- */
static bool num(tv v) {
    return v.t == TV_INT || v.t == TV_FLOAT || v.t == TV_BOOL;
}
static bool numeric(tv v) { /* num() or a big integer */
    return num(v) || v.t == TV_BIG;
}
static int64_t iv(tv v) {
    return v.t == TV_INT ? v.i : v.t == TV_BOOL ? (int64_t)v.b : 0;
}

static const char *op_sym(int op) {
    static const char *const s[] = {"", "+", "-", "*", "/", "//", "%", "**", "~"};
    return op < (int)IR_ARRAY_LEN(s) ? s[op] : "?";
}

static tv repeat(trender *r, const tnode *at, tv seq, int64_t times) {
    if (times < 0) times = 0;
    if (seq.t == TV_STR) {
        if (seq.n && (uint64_t)times > r->lim->max_output / seq.n)
            efail(r, at, "string repetition larger than the output limit");
        tsb b;
        tsb_init(&b, r->a, r->e, r->lim->max_output);
        for (int64_t k = 0; k < times; k++) tsb_add(&b, seq.s, seq.n);
        return tv_str(b.p ? b.p : "", b.n);
    }
    if (seq.l->n && (uint64_t)times > r->lim->max_steps / seq.l->n)
        efail(r, at, "list repetition past the limit");
    tlist *l = tv_list_new(r->a, 0);
    if (!l) tmpl_fail(r->e, 0, 0, "out of memory");
    l->tuple = seq.l->tuple;
    for (int64_t k = 0; k < times; k++)
        for (size_t i = 0; i < seq.l->n; i++) tv_list_push(r->a, r->e, l, seq.l->v[i]);
    tv v = {.t = TV_LIST};
    v.l = l;
    return v;
}

/* x ** e for e >= 0 in 64 bits; false on overflow (then tmpl_bigint.c). */
static bool pow64(int64_t b, int64_t e, int64_t *out) {
    int64_t acc = 1;
    while (e > 0) {
        if ((e & 1) && __builtin_mul_overflow(acc, b, &acc)) return false;
        e >>= 1;
        if (e && __builtin_mul_overflow(b, b, &b)) return false;
    }
    *out = acc;
    return true;
}

/* Ints whose double is exact: both operands within 2**53 divide as doubles,
 * as CPython's long_true_divide does. */
static bool exact53(int64_t i) {
    return i >= -(INT64_C(1) << 53) && i <= (INT64_C(1) << 53);
}

/* Python's int arithmetic: the 64-bit fast path, and tmpl_bigint.c (GMP)
 * for a big operand or a result past 64 bits. */
IR_INLINE tv int_arith(trender *r, const tnode *at, int op, tv a, tv b) {
    if (a.t == TV_BIG || b.t == TV_BIG) return tmpl_big_arith(r, at, op, a, b);
    int64_t i = iv(a), j = iv(b), k;
    switch (op) {
    case OP_ADD:
        if (!__builtin_add_overflow(i, j, &k)) return tv_int(k);
        break;
    case OP_SUB:
        if (!__builtin_sub_overflow(i, j, &k)) return tv_int(k);
        break;
    case OP_MUL:
        if (!__builtin_mul_overflow(i, j, &k)) return tv_int(k);
        break;
    case OP_DIV:
        if (j == 0) efail(r, at, "division by zero");
        if (exact53(i) && exact53(j)) return tv_float((double)i / (double)j);
        break;
    case OP_FLOORDIV:
    case OP_MOD:
        if (j == 0)
            efail(r, at, "%s",
                  op == OP_MOD ? "integer modulo by zero" : "integer division or modulo by zero");
        if (i == INT64_MIN && j == -1) break;
        {
            int64_t q = i / j, m = i % j;
            if (m != 0 && ((m < 0) != (j < 0))) {
                q--;
                m += j;
            }
            return tv_int(op == OP_MOD ? m : q);
        }
    case OP_POW:
        if (j < 0) { /* float(i) ** float(j), as CPython */
            if (i == 0) efail(r, at, "0.0 cannot be raised to a negative power");
            return tv_float(pow((double)i, (double)j));
        }
        if (pow64(i, j, &k)) return tv_int(k);
        break;
    }
    return tmpl_big_arith(r, at, op, a, b);
}

/* Python's float arithmetic (float_div, float_floor_div, float_rem, float_pow). */
IR_INLINE tv float_arith(trender *r, const tnode *at, int op, double x, double y) {
    switch (op) {
    case OP_ADD:
        return tv_float(x + y);
    case OP_SUB:
        return tv_float(x - y);
    case OP_MUL:
        return tv_float(x * y);
    case OP_DIV:
        if (y == 0) efail(r, at, "float division by zero");
        return tv_float(x / y);
    case OP_FLOORDIV:
    case OP_MOD: {
        if (y == 0)
            efail(r, at, "%s", op == OP_MOD ? "float modulo" : "float floor division by zero");
        double m = fmod(x, y), d = (x - m) / y;
        if (m != 0) {
            if ((y < 0) != (m < 0)) {
                m += y;
                d -= 1.0;
            }
        } else {
            m = copysign(0.0, y);
        }
        if (op == OP_MOD) return tv_float(m);
        if (d == 0) return tv_float(copysign(0.0, x / y));
        double fd = floor(d);
        if (d - fd > 0.5) fd += 1.0;
        return tv_float(fd);
    }
    default: { /* OP_POW */
        if (x == 0 && y < 0) efail(r, at, "0.0 cannot be raised to a negative power");
        if (isfinite(x) && x < 0 && isfinite(y) && y != floor(y))
            efail(r, at,
                  "a negative number to a fractional power is a complex number in "
                  "Python; the template engine has no complex numbers");
        double p = pow(x, y);
        if (isinf(p) && isfinite(x) && isfinite(y))
            efail(r, at, "(34, 'Numerical result out of range')");
        return tv_float(p);
    }
    }
}

/* A number as a float operand: CPython converts an int, raising OverflowError. */
static double float_operand(trender *r, const tnode *at, tv v) {
    if (v.t == TV_FLOAT) return v.f;
    if (v.t == TV_INT) return (double)v.i;
    return v.t == TV_BOOL ? v.b : tmpl_int_to_double(r, at, v);
}

/* Inlined into eval(), as it was before big integers: a call passing two
 * 32-byte values cost the 64-bit loops 5-8% (bench/tokenizer/tmpl_arith.sh). */
IR_INLINE tv arith(trender *r, const tnode *at, int op, tv a, tv b) {
    if (op == OP_CONCAT) {
        tsb sb;
        tsb_init(&sb, r->a, r->e, r->lim->max_output);
        tv_str_to(&sb, a);
        tv_str_to(&sb, b);
        return tv_str(sb.p ? sb.p : "", sb.n);
    }
    if (a.t == TV_UNDEF) undefined_fail(r, at, a);
    if (b.t == TV_UNDEF) undefined_fail(r, at, b);
    if (numeric(a) && numeric(b)) {
        if (a.t != TV_FLOAT && b.t != TV_FLOAT) return int_arith(r, at, op, a, b);
        return float_arith(r, at, op, float_operand(r, at, a), float_operand(r, at, b));
    }
    if (op == OP_ADD && a.t == TV_STR && b.t == TV_STR) {
        if (a.n + b.n > r->lim->max_output) efail(r, at, "string larger than the output limit");
        char *p = ir_arena_alloc(r->a, a.n + b.n + 1);
        if (!p) tmpl_fail(r->e, 0, 0, "out of memory (the render's memory limit)");
        memcpy(p, a.s, a.n);
        memcpy(p + a.n, b.s, b.n);
        p[a.n + b.n] = '\0';
        return tv_str(p, a.n + b.n);
    }
    if (op == OP_ADD && a.t == TV_LIST && b.t == TV_LIST && a.l->tuple == b.l->tuple) {
        tlist *l = tv_list_new(r->a, a.l->n + b.l->n);
        if (!l) tmpl_fail(r->e, 0, 0, "out of memory");
        if (a.l->n) memcpy(l->v, a.l->v, a.l->n * sizeof *l->v);
        if (b.l->n) memcpy(l->v + a.l->n, b.l->v, b.l->n * sizeof *l->v);
        l->n = a.l->n + b.l->n;
        l->tuple = a.l->tuple;
        tv v = {.t = TV_LIST};
        v.l = l;
        return v;
    }
    if (op == OP_MUL && (a.t == TV_STR || a.t == TV_LIST) && (b.t == TV_INT || b.t == TV_BOOL))
        return repeat(r, at, a, iv(b));
    if (op == OP_MUL && (b.t == TV_STR || b.t == TV_LIST) && (a.t == TV_INT || a.t == TV_BOOL))
        return repeat(r, at, b, iv(a));
    if (op == OP_ADD && a.t == TV_STR)
        efail(r, at, "can only concatenate str (not \"%s\") to str", tv_typename(b));
    efail(r, at, "unsupported operand type(s) for %s: '%s' and '%s'", op_sym(op), tv_typename(a),
          tv_typename(b));
}

tv tmpl_arith(trender *r, const tnode *at, int op, tv a, tv b) {
    return arith(r, at, op, a, b);
}

static bool contains(trender *r, const tnode *at, tv needle, tv hay) {
    switch (hay.t) {
    case TV_STR:
        if (needle.t != TV_STR)
            efail(r, at, "'in <string>' requires string as left operand, not %s",
                  tv_typename(needle));
        if (!needle.n) return true;
        if (needle.n > hay.n) return false;
        return memmem(hay.s, hay.n, needle.s, needle.n) != NULL;
    case TV_LIST:
        for (size_t i = 0; i < hay.l->n; i++)
            if (tv_eq(hay.l->v[i], needle)) return true;
        return false;
    case TV_DICT:
    case TV_NS:
        return tv_dict_get(hay.d, needle) != NULL;
    case TV_UNDEF:
        return false;
    default:
        efail(r, at, "argument of type '%s' is not iterable", tv_typename(hay));
    }
}

static bool compare_one(trender *r, const tnode *at, int op, tv a, tv b) {
    if (a.t == TV_STR && b.t == TV_STR && (op == OP_EQ || op == OP_NE)) /* message.role == 'user' */
        return tv_str_eq(a, b) == (op == OP_EQ);
    switch (op) {
    case OP_EQ:
        return tv_eq(a, b);
    case OP_NE:
        return !tv_eq(a, b);
    case OP_IN:
        return contains(r, at, a, b);
    case OP_NOTIN:
        return !contains(r, at, a, b);
    default:
        break;
    }
    if (a.t == TV_UNDEF) undefined_fail(r, at, a);
    if (b.t == TV_UNDEF) undefined_fail(r, at, b);
    static const char *const sym[] = {[OP_LT] = "<", [OP_LE] = "<=", [OP_GT] = ">", [OP_GE] = ">="};
    bool na = num(a) || a.t == TV_BIG, nb = num(b) || b.t == TV_BIG;
    if (!((na && nb) || (a.t == TV_STR && b.t == TV_STR) ||
          (a.t == TV_LIST && b.t == TV_LIST && a.l->tuple == b.l->tuple)))
        efail(r, at, "'%s' not supported between instances of '%s' and '%s'", sym[op],
              tv_typename(a), tv_typename(b));
    if ((a.t == TV_FLOAT && isnan(a.f)) || (b.t == TV_FLOAT && isnan(b.f))) return false;
    int c = tv_cmp(r->e, a, b);
    switch (op) {
    case OP_LT:
        return c < 0;
    case OP_LE:
        return c <= 0;
    case OP_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

/* ---- calls ------------------------------------------------------------------------ */
static tv capture(trender *r, tframe *f, tnode *const *body, size_t n) {
    tsb buf, *saved = r->out;
    tsb_init(&buf, r->a, r->e, r->lim->max_output);
    r->out = &buf;
    exec_list(r, f, body, n);
    r->out = saved;
    return tv_str(buf.p ? buf.p : "", buf.n);
}

static tv call_macro(trender *r, const tnode *at, tmacro *m, tv *args, size_t nargs,
                     const char **kwn, tv *kwv, size_t nkw, tv caller) {
    tmpl_step(r, at);
    if (r->depth >= r->lim->max_depth) efail(r, at, "macro calls nested too deeply");
    const tnode *d = m->def;
    tframe *f = frame_new(r, m->closure);
    bool *given = ir_arena_calloc(r->a, d->nnames + 1);
    if (!given) tmpl_fail(r->e, 0, 0, "out of memory");
    size_t np = nargs < d->nnames ? nargs : d->nnames;
    for (size_t i = 0; i < np; i++) {
        frame_set(r, f, d->names[i], strlen(d->names[i]), args[i]);
        given[i] = true;
    }
    tdict *extra_kw = tv_dict_new(r->a, 0);
    if (!extra_kw) tmpl_fail(r->e, 0, 0, "out of memory");
    for (size_t k = 0; k < nkw; k++) {
        bool found = false;
        for (size_t i = 0; i < d->nnames; i++)
            if (strcmp(d->names[i], kwn[k]) == 0) {
                if (given[i])
                    efail(r, at, "macro '%s' got multiple values for argument '%s'", m->name,
                          kwn[k]);
                frame_set(r, f, d->names[i], strlen(d->names[i]), kwv[k]);
                given[i] = found = true;
            }
        if (!found) tv_dict_set(r->a, r->e, extra_kw, tv_cstr(kwn[k]), kwv[k]);
    }
    for (size_t i = 0; i < d->nnames; i++)
        if (!given[i]) {
            size_t ln = strlen(d->names[i]);
            frame_set(r, f, d->names[i], ln,
                      d->list2[i] ? eval(r, f, d->list2[i]) : tv_undef(d->names[i], ln));
        }
    tlist *va = tv_list_new(r->a, 0);
    if (!va) tmpl_fail(r->e, 0, 0, "out of memory");
    va->tuple = true;
    for (size_t i = np; i < nargs; i++) tv_list_push(r->a, r->e, va, args[i]);
    tv vv = {.t = TV_LIST}, kv = {.t = TV_DICT};
    vv.l = va;
    kv.d = extra_kw;
    frame_set(r, f, "varargs", 7, vv);
    frame_set(r, f, "kwargs", 6, kv);
    if (caller.t != TV_UNDEF) frame_set(r, f, "caller", 6, caller);
    r->depth++;
    tv out = capture(r, f, d->list, d->n);
    r->depth--;
    return out;
}

static tv global_call(trender *r, const tnode *at, int id, tv *args, size_t nargs, const char **kwn,
                      tv *kwv, size_t nkw) {
    switch (id) {
    case TF_RANGE: {
        if (nargs < 1 || nargs > 3) efail(r, at, "range expected 1 to 3 arguments");
        for (size_t i = 0; i < nargs; i++)
            if (args[i].t != TV_INT && args[i].t != TV_BOOL)
                efail(r, at, "'%s' object cannot be interpreted as an integer",
                      tv_typename(args[i]));
        int64_t start = nargs > 1 ? iv(args[0]) : 0, stop = nargs > 1 ? iv(args[1]) : iv(args[0]);
        int64_t step = nargs > 2 ? iv(args[2]) : 1;
        if (!step) efail(r, at, "range() arg 3 must not be zero");
        tlist *l = tv_list_new(r->a, 0);
        if (!l) tmpl_fail(r->e, 0, 0, "out of memory");
        l->range = true;
        l->r0 = start;
        l->r1 = stop;
        l->r2 = step;
        for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
            tmpl_step(r, at);
            tv_list_push(r->a, r->e, l, tv_int(i));
            if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
        }
        tv v = {.t = TV_LIST};
        v.l = l;
        return v;
    }
    case TF_NAMESPACE:
    case TF_DICT: {
        tdict *d = tv_dict_new(r->a, nkw);
        if (!d) tmpl_fail(r->e, 0, 0, "out of memory");
        if (nargs == 1 && (args[0].t == TV_DICT || args[0].t == TV_NS))
            for (size_t i = 0; i < args[0].d->n; i++)
                tv_dict_set(r->a, r->e, d, args[0].d->k[i], args[0].d->v[i]);
        else if (nargs)
            efail(r, at, "%s() takes keyword arguments", id == TF_DICT ? "dict" : "namespace");
        for (size_t k = 0; k < nkw; k++) tv_dict_set(r->a, r->e, d, tv_cstr(kwn[k]), kwv[k]);
        tv v = {.t = id == TF_DICT ? TV_DICT : TV_NS};
        v.d = d;
        return v;
    }
    case TF_RAISE: {
        tsb b;
        tsb_init(&b, r->a, r->e, 300);
        if (nargs) tv_str_to(&b, args[0]);
        efail(r, at, "%s", b.p ? b.p : "");
    }
    case TF_STRFTIME: {
        if (nargs != 1 || args[0].t != TV_STR) efail(r, at, "strftime_now expects a format string");
        time_t now = r->now ? (time_t)r->now : time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char fmt[256], out[512];
        size_t fn = args[0].n < sizeof fmt - 1 ? args[0].n : sizeof fmt - 1;
        memcpy(fmt, args[0].s, fn);
        fmt[fn] = '\0';
        size_t n = strftime(out, sizeof out, fmt, &tm);
        char *p = ir_arena_strndup(r->a, out, n);
        if (!p) tmpl_fail(r->e, 0, 0, "out of memory");
        return tv_str(p, n);
    }
    default:
        efail(r, at, "not callable");
    }
}

tv tmpl_call_value(trender *r, const tnode *at, tv fn, tv *args, size_t nargs, const char **kwn,
                   tv *kwv, size_t nkw) {
    tv caller = r->caller;
    r->caller = tv_undef(NULL, 0);
    switch (fn.t) {
    case TV_MACRO:
        return call_macro(r, at, fn.m, args, nargs, kwn, kwv, nkw, caller);
    case TV_FUNC:
        return global_call(r, at, (int)fn.i, args, nargs, kwn, kwv, nkw);
    case TV_METHOD:
        return tmpl_method(r, at, fn.mt->self, fn.mt->name, fn.mt->n, args, nargs, kwn, kwv, nkw);
    case TV_UNDEF:
        undefined_fail(r, at, fn);
    default:
        efail(r, at, "'%s' object is not callable", tv_typename(fn));
    }
}

/* Evaluates the arguments of a call, filter or test node. A node without
 * positional or keyword arguments (`x | length`, `x is defined`: most of them)
 * uses the slots in the struct instead of the arena. */
typedef struct targs {
    tv *args;
    size_t n;
    tv *kwv;
    tv none_args[1], none_kw[1];
} targs;

static void eval_args(trender *r, tframe *f, const tnode *x, targs *a) {
    a->args = x->n ? ir_arena_alloc(r->a, (x->n + 1) * sizeof *a->args) : a->none_args;
    a->kwv = x->n2 ? ir_arena_alloc(r->a, (x->n2 + 1) * sizeof *a->kwv) : a->none_kw;
    if (!a->args || !a->kwv) tmpl_fail(r->e, 0, 0, "out of memory");
    for (size_t i = 0; i < x->n; i++) a->args[i] = eval(r, f, x->list[i]);
    for (size_t i = 0; i < x->n2; i++) a->kwv[i] = eval(r, f, x->list2[i]);
    a->n = x->n;
}

static tv eval_call(trender *r, tframe *f, const tnode *x) {
    tv fn;
    if (x->a->kind == E_ATTR) {
        tv obj = eval(r, f, x->a->a);
        if (obj.t != TV_DICT && obj.t != TV_NS && obj.t != TV_LOOP &&
            tmpl_has_method(obj, x->a->str, x->a->slen)) {
            targs a;
            eval_args(r, f, x, &a);
            return tmpl_method(r, x, obj, x->a->str, x->a->slen, a.args, a.n, x->names, a.kwv,
                               x->nnames);
        }
        fn = tmpl_getattr(r, x->a, obj, x->a->str, x->a->slen);
    } else {
        fn = eval(r, f, x->a);
    }
    targs a;
    eval_args(r, f, x, &a);
    return tmpl_call_value(r, x, fn, a.args, a.n, x->names, a.kwv, x->nnames);
}

/* ---- expressions -------------------------------------------------------------------- */
static tv seq_value(trender *r, tframe *f, const tnode *x, bool tuple) {
    tlist *l = tv_list_new(r->a, x->n);
    if (!l) tmpl_fail(r->e, 0, 0, "out of memory");
    for (size_t i = 0; i < x->n; i++) l->v[i] = eval(r, f, x->list[i]);
    l->n = x->n;
    l->tuple = tuple;
    tv v = {.t = TV_LIST};
    v.l = l;
    return v;
}

static inline tv name_value(tframe *f, const tnode *x) {
    tv *v = frame_get(f, x->str, x->slen);
    return v ? *v : builtin(x->str, x->slen);
}

/* Every kind but E_LIT and E_NAME, which eval answers itself. */
static tv eval_node(trender *r, tframe *f, const tnode *x) {
    switch (x->kind) {
    case E_ATTR: /* message.role: the name looked up here, not through another eval */
        return tmpl_getattr(r, x, x->a->kind == E_NAME ? name_value(f, x->a) : eval(r, f, x->a),
                            x->str, x->slen);
    case E_ITEM: {
        tv obj = eval(r, f, x->a);
        return tmpl_getitem(r, x, obj, eval(r, f, x->b));
    }
    case E_SLICE: {
        tv obj = eval(r, f, x->a), b, c, d;
        if (x->b) b = eval(r, f, x->b);
        if (x->c) c = eval(r, f, x->c);
        if (x->d) d = eval(r, f, x->d);
        return do_slice(r, x, obj, x->b ? &b : NULL, x->c ? &c : NULL, x->d ? &d : NULL);
    }
    case E_BIN: {
        tv a = eval(r, f, x->a);
        return arith(r, x, x->op, a, eval(r, f, x->b));
    }
    case E_NEG:
    case E_POS: {
        tv a = eval(r, f, x->a);
        if (a.t == TV_UNDEF) undefined_fail(r, x, a);
        if (a.t == TV_BIG) return x->kind == E_POS ? a : tv_big_neg(r->a, r->e, a);
        if (!numeric(a))
            efail(r, x, "bad operand type for unary %c: '%s'", x->kind == E_NEG ? '-' : '+',
                  tv_typename(a));
        if (x->kind == E_POS) return a.t == TV_BOOL ? tv_int(a.b) : a;
        if (a.t == TV_FLOAT) return tv_float(-a.f);
        if (iv(a) == INT64_MIN) return tmpl_big_arith(r, x, OP_SUB, tv_int(0), a);
        return tv_int(-iv(a));
    }
    case E_NOT:
        return tv_bool(!tv_truthy(eval(r, f, x->a)));
    case E_AND: {
        tv a = eval(r, f, x->a);
        return tv_truthy(a) ? eval(r, f, x->b) : a;
    }
    case E_OR: {
        tv a = eval(r, f, x->a);
        return tv_truthy(a) ? a : eval(r, f, x->b);
    }
    case E_CMP: {
        tv a = eval(r, f, x->a);
        for (size_t i = 0; i < x->n; i++) {
            tv b = eval(r, f, x->list[i]);
            if (!compare_one(r, x, x->ops[i], a, b)) return tv_bool(false);
            a = b;
        }
        return tv_bool(true);
    }
    case E_COND:
        if (tv_truthy(eval(r, f, x->a))) return eval(r, f, x->b);
        return x->c ? eval(r, f, x->c) : tv_undef(NULL, 0);
    case E_LIST:
        return seq_value(r, f, x, false);
    case E_TUPLE:
        return seq_value(r, f, x, true);
    case E_DICT: {
        tdict *d = tv_dict_new(r->a, x->n);
        if (!d) tmpl_fail(r->e, 0, 0, "out of memory");
        for (size_t i = 0; i < x->n; i++) {
            tv k = eval(r, f, x->list[i]);
            tv_dict_set(r->a, r->e, d, k, eval(r, f, x->list2[i]));
        }
        tv v = {.t = TV_DICT};
        v.d = d;
        return v;
    }
    case E_CALL:
        return eval_call(r, f, x);
    case E_FILTER: {
        tv v = eval(r, f, x->a);
        targs a;
        eval_args(r, f, x, &a);
        return tmpl_filter(r, x, x->str, v, a.args, a.n, x->names, a.kwv, x->nnames);
    }
    case E_TEST: {
        tv v = eval(r, f, x->a);
        targs a;
        eval_args(r, f, x, &a);
        bool ok = tmpl_test(r, x, x->str, v, a.args, a.n);
        return tv_bool(x->op ? !ok : ok);
    }
    default:
        efail(r, x, "not an expression");
    }
}

/* ---- statements ----------------------------------------------------------------------- */
static void emit(trender *r, tv v) {
    if (v.t == TV_STR)
        tsb_add(r->out, v.s, v.n);
    else
        tv_str_to(r->out, v);
}

/* Every eval nested in another counts, macro bodies included: the compile-time
 * bound on a tree's height (tmpl_parse.c) does not bound the render's recursion,
 * since a macro's body is evaluated inside the call that runs it. Macro calls
 * nested max_depth deep, each at the bottom of a chain as high as that bound,
 * overflowed a 2 MiB thread stack in a release build. */
static tv eval(trender *r, tframe *f, const tnode *x) {
    if (x->kind == E_LIT) return x->val; /* leaves recurse no further: not counted */
    if (x->kind == E_NAME) return name_value(f, x);
    if (++r->eval_depth > 16 * r->lim->max_depth)
        efail(r, x, "expressions nested too deeply in the render (more than %d levels)",
              16 * r->lim->max_depth);
    tv v = eval_node(r, f, x);
    r->eval_depth--;
    return v;
}

/* ---- {{ a + b + c }}: the strings written one after the other -------------------------
 * Chat templates print a message as '<|im_start|>' + role + '\n' + content + ...;
 * building that string copies a long content once per '+', then once more into
 * the output. When every operand of a chain of + (or ~) is a string, the result
 * is their bytes in order, so they are written out in turn instead (and a set
 * joins them once, not once per operator). Operands are
 * evaluated in eval's order; at the first one that is not a string (or that would
 * take the sum past the output limit), the strings so far are joined and the
 * chain goes on through arith, exactly as eval would go: same value, same errors. */
#define CAT_MAX 16

static bool is_cat(const tnode *x) {
    return x->kind == E_BIN && (x->op == OP_ADD || x->op == OP_CONCAT);
}

/* The strings parts[0..n) (total bytes) as one string. */
static tv cat_join(trender *r, const tv *parts, size_t n, size_t total) {
    if (n == 1) return parts[0];
    char *p = ir_arena_alloc(r->a, total + 1);
    if (!p) tmpl_fail(r->e, 0, 0, "out of memory (the render's memory limit)");
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(p + at, parts[i].s, parts[i].n);
        at += parts[i].n;
    }
    p[at] = '\0';
    return tv_str(p, at);
}

/* The chain x evaluated: true with its string operands in parts[0..*np) (*total
 * bytes, within the output limit) when all are strings; else false with *v its
 * value, computed as eval computes it. */
static bool cat_collect(trender *r, tframe *f, const tnode *x, tv *parts, size_t *np, size_t *total,
                        tv *v) {
    const tnode *spine[CAT_MAX]; /* the chain's nodes, outermost first */
    size_t k = 0;
    const tnode *first = x;
    while (k < CAT_MAX && is_cat(first)) spine[k++] = first, first = first->a;
    *v = eval(r, f, first);
    *np = *total = 0;
    if (v->t == TV_STR) {
        parts[(*np)++] = *v;
        *total = v->n;
        for (; k > 0; k--) {
            const tnode *op = spine[k - 1];
            tv b = eval(r, f, op->b);
            size_t max = r->lim->max_output;
            if (b.t != TV_STR || *total > max || b.n > max - *total) {
                *v = arith(r, op, op->op, cat_join(r, parts, *np, *total), b);
                break;
            }
            parts[(*np)++] = b;
            *total += b.n;
        }
        if (!k) return true;
        k--; /* the operator just applied by arith */
    }
    for (; k > 0; k--)
        *v = arith(r, spine[k - 1], spine[k - 1]->op, *v, eval(r, f, spine[k - 1]->b));
    return false;
}

/* {{ chain }}: the strings written in turn. */
static void emit_concat(trender *r, tframe *f, const tnode *x) {
    tv parts[CAT_MAX + 1], v;
    size_t np, total;
    if (!cat_collect(r, f, x, parts, &np, &total, &v)) {
        emit(r, v);
        return;
    }
    for (size_t i = 0; i < np; i++) tsb_add(r->out, parts[i].s, parts[i].n);
}

/* {% set x = chain %}: the strings joined once, not once per operator. */
static tv eval_concat(trender *r, tframe *f, const tnode *x) {
    tv parts[CAT_MAX + 1], v;
    size_t np, total;
    if (!cat_collect(r, f, x, parts, &np, &total, &v)) return v;
    return cat_join(r, parts, np, total);
}

static void bind_targets(trender *r, tframe *f, const tnode *x, tv item) {
    if (x->nnames == 1) {
        frame_set(r, f, x->names[0], strlen(x->names[0]), item);
        return;
    }
    tlist *parts = tmpl_iter(r, x, item);
    if (parts->n != x->nnames)
        efail(r, x, "%s values to unpack (expected %zu, got %zu)",
              parts->n > x->nnames ? "too many" : "not enough", x->nnames, parts->n);
    for (size_t i = 0; i < x->nnames; i++)
        frame_set(r, f, x->names[i], strlen(x->names[i]), parts->v[i]);
}

static int exec_for(trender *r, tframe *f, const tnode *x) {
    tlist *items = tmpl_iter(r, x, eval(r, f, x->a));
    if (x->b) { /* the loop filter runs before loop.* is counted */
        tlist *kept = tv_list_new(r->a, 0);
        if (!kept) tmpl_fail(r->e, 0, 0, "out of memory");
        tframe *g = NULL;
        for (size_t i = 0; i < items->n; i++) {
            tmpl_step(r, x);
            g = frame_next(r, f, g);
            bind_targets(r, g, x, items->v[i]);
            if (tv_truthy(eval(r, g, x->b))) tv_list_push(r->a, r->e, kept, items->v[i]);
        }
        items = kept;
    }
    tv *outer = NULL;
    tloop *lp = ir_arena_calloc(r->a, sizeof *lp);
    if (!lp) tmpl_fail(r->e, 0, 0, "out of memory");
    lp->items = items;
    (void)outer; /* loop.depth counts recursive loops only, which are not supported */
    tv lv = {.t = TV_LOOP};
    lv.lp = lp;
    tframe *g = NULL;
    for (size_t i = 0; i < items->n; i++) {
        tmpl_step(r, x);
        lp->index0 = i;
        g = frame_next(r, f, g);
        bind_targets(r, g, x, items->v[i]);
        frame_set(r, g, "loop", 4, lv);
        if (exec_list(r, g, x->list, x->n) == FLOW_BREAK) break;
    }
    if (!items->n && x->n2) return exec_list(r, f, x->list2, x->n2);
    return FLOW_NORMAL;
}

static tv apply_filters(trender *r, tframe *f, tnode *const *chain, size_t n, tv v) {
    for (size_t i = 0; i < n; i++) {
        targs a;
        eval_args(r, f, chain[i], &a);
        v = tmpl_filter(r, chain[i], chain[i]->str, v, a.args, a.n, chain[i]->names, a.kwv,
                        chain[i]->nnames);
    }
    return v;
}

static int exec_one(trender *r, tframe *f, const tnode *x) {
    switch (x->kind) {
    case N_TEXT:
        tsb_add(r->out, x->str, x->slen);
        return FLOW_NORMAL;
    case N_OUTPUT:
        if (is_cat(x->a))
            emit_concat(r, f, x->a);
        else
            emit(r, eval(r, f, x->a));
        return FLOW_NORMAL;
    case N_IF:
        if (tv_truthy(eval(r, f, x->a))) return exec_list(r, f, x->list, x->n);
        return exec_list(r, f, x->list2, x->n2);
    case N_FOR:
        return exec_for(r, f, x);
    case N_SET: {
        tv v = is_cat(x->a) ? eval_concat(r, f, x->a) : eval(r, f, x->a);
        if (x->str) {
            tv *ns = frame_get(f, x->names[0], strlen(x->names[0]));
            if (!ns || ns->t != TV_NS)
                efail(r, x, "cannot assign attribute on non-namespace object");
            tv_dict_set(r->a, r->e, ns->d, tv_str(x->str, x->slen), v);
        } else if (x->nnames > 1) {
            bind_targets(r, f, x, v);
        } else {
            frame_set(r, f, x->names[0], strlen(x->names[0]), v);
        }
        return FLOW_NORMAL;
    }
    case N_SETBLK: {
        tv v = capture(r, frame_new(r, f), x->list, x->n);
        v = apply_filters(r, f, x->list2, x->n2, v);
        frame_set(r, f, x->names[0], strlen(x->names[0]), v);
        return FLOW_NORMAL;
    }
    case N_MACRO: {
        tmacro *m = ir_arena_calloc(r->a, sizeof *m);
        if (!m) tmpl_fail(r->e, 0, 0, "out of memory");
        m->def = x;
        m->closure = f;
        frame_keep(f);
        m->name = x->str;
        tv v = {.t = TV_MACRO};
        v.m = m;
        frame_set(r, f, x->str, x->slen, v);
        return FLOW_NORMAL;
    }
    case N_CALLBLK: {
        tmacro *m = ir_arena_calloc(r->a, sizeof *m);
        if (!m) tmpl_fail(r->e, 0, 0, "out of memory");
        m->def = x;
        m->closure = f;
        frame_keep(f);
        m->name = "caller";
        tv c = {.t = TV_MACRO};
        c.m = m;
        const tnode *call = x->a;
        tv fn = eval(r, f, call->a);
        targs a;
        eval_args(r, f, call, &a);
        r->caller = c;
        emit(r, tmpl_call_value(r, call, fn, a.args, a.n, call->names, a.kwv, call->nnames));
        return FLOW_NORMAL;
    }
    case N_FILTBLK: {
        tv v = capture(r, frame_new(r, f), x->list, x->n);
        emit(r, apply_filters(r, f, x->list2, x->n2, v));
        return FLOW_NORMAL;
    }
    case N_BREAK:
        return FLOW_BREAK;
    case N_CONTINUE:
        return FLOW_CONTINUE;
    case N_BLOCK:
        return exec_list(r, f, x->list, x->n);
    default:
        efail(r, x, "not a statement");
    }
}

static int exec_list(trender *r, tframe *f, tnode *const *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int fl = exec_one(r, f, v[i]);
        if (fl != FLOW_NORMAL) return fl;
    }
    return FLOW_NORMAL;
}

/* ---- entry points --------------------------------------------------------------------- */
irt_template *irt_template_new(const char *src, size_t len, const irt_template_limits *limits,
                               char *err, size_t errlen) {
    irt_template_limits lim;
    limits_fill(&lim, limits);
    if (err && errlen) err[0] = '\0';
    if (len > lim.max_template) {
        if (err)
            snprintf(err, errlen, "template of %zu bytes is past the limit of %zu", len,
                     lim.max_template);
        return NULL;
    }
    irt_template *t = calloc(1, sizeof *t);
    ir_arena *a = ir_arena_new(64 * 1024, 64 * len + ((size_t)4 << 20));
    if (!t || !a) {
        free(t);
        ir_arena_free(a);
        if (err) snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ir_arena_set_growth(a, (size_t)4 << 20);
    t->a = a;
    t->lim = lim;
    terr e = {.msg = err, .msglen = errlen};
    if (setjmp(e.jb)) {
        ir_arena_free(a);
        free(t);
        return NULL;
    }
    ttoks toks = {0};
    tmpl_lex(a, &e, src, len, &toks);
    t->root = tmpl_parse(a, &e, &toks, lim.max_depth * 4);
    return t;
}

void irt_template_free(irt_template *t) {
    if (!t) return;
    ir_arena_free(t->a);
    free(t);
}

static int render_body(const irt_template *t, trender *r, const json_t *vars) {
    r->globals = frame_new(r, NULL);
    if (vars && json_is_object(vars)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)vars, k, v) {
            tv x = tv_from_json(r->a, r->e, v, 0);
            frame_set(r, r->globals, k, strlen(k), x);
        }
    }
    exec_list(r, r->globals, t->root->list, t->root->n);
    return IRT_OK;
}

/* ---- the render's memory --------------------------------------------------------------
 * A render's values live in an arena. Each thread keeps one arena between its
 * renders, reset (down to its first chunk, KEEP_BYTES) after each: a chat's render
 * copies a long system prompt a few times ('+', a set), and fresh chunks of that
 * size would be fresh pages from the kernel on every render (page faults cost more
 * than the copies). Chunks past the first go back at each reset. A thread's arena
 * is freed when the thread exits (a key's destructor). */
#define KEEP_BYTES ((size_t)256 << 10)

static pthread_key_t arena_key;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;
static bool arena_key_ok;
static _Thread_local ir_arena *kept_arena; /* NULL while this thread renders */

static void arena_drop(void *a) {
    ir_arena_free(a);
}

static void arena_key_init(void) {
    arena_key_ok = pthread_key_create(&arena_key, arena_drop) == 0;
}

__attribute__((noinline)) static ir_arena *render_arena(size_t max) {
    ir_arena *a = kept_arena;
    if (a) {
        kept_arena = NULL;
        ir_arena_set_max(a, max);
        return a;
    }
    a = ir_arena_new(KEEP_BYTES, max);
    if (a) ir_arena_set_growth(a, (size_t)8 << 20);
    return a;
}

static void render_arena_done(ir_arena *a) {
    pthread_once(&arena_once, arena_key_init);
    if (kept_arena || !arena_key_ok || pthread_setspecific(arena_key, a)) {
        /* The key may still name it (kept before, taken by this render): the
         * thread's exit would free it again. */
        if (arena_key_ok && pthread_getspecific(arena_key) == a)
            pthread_setspecific(arena_key, NULL);
        ir_arena_free(a);
        return;
    }
    ir_arena_reset(a);
    kept_arena = a;
}

/* out back to its first n bytes (a render that failed leaves it as it found it). */
static void out_truncate(ir_buf *out, size_t n) {
    if (out->len == n) return;
    out->len = n;
    out->data[n] = '\0';
}

int irt_template_render(const irt_template *t, const json_t *vars, int64_t now_unix, ir_buf *out,
                        char *err, size_t errlen) {
    if (err && errlen) err[0] = '\0';
    ir_arena *a = render_arena(t->lim.max_memory);
    if (!a) return IRT_ENOMEM;
    terr e = {.msg = err, .msglen = errlen};
    /* the text goes straight into out; an error takes it back out */
    size_t start = out->len;
    tsb main;
    tsb_init_sink(&main, &e, t->lim.max_output, out);
    trender r = {.a = a, .e = &e, .out = &main, .lim = &t->lim, .now = now_unix};
    r.caller = tv_undef(NULL, 0);
    if (setjmp(e.jb)) {
        render_arena_done(a);
        out_truncate(out, start);
        return IRT_EINVAL;
    }
    render_body(t, &r, vars);
    int rc = main.sink_full ? IRT_ENOMEM : IRT_OK;
    if (rc) {
        out_truncate(out, start);
        if (err) snprintf(err, errlen, "rendered text larger than the output buffer");
    }
    render_arena_done(a);
    return rc;
}

/* ---- variables a template reads -------------------------------------------------------- */
static bool reads(const tnode *x, const char *name, size_t n, int depth) {
    if (!x || depth > 10000) return false;
    if (x->kind == E_NAME && x->slen == n && memcmp(x->str, name, n) == 0) return true;
    const tnode *kids[4] = {x->a, x->b, x->c, x->d};
    for (int k = 0; k < 4; k++)
        if (reads(kids[k], name, n, depth + 1)) return true;
    if (x->kind != N_TEXT && x->kind != E_LIT) {
        for (size_t i = 0; i < x->n; i++)
            if (reads(x->list[i], name, n, depth + 1)) return true;
        for (size_t i = 0; i < x->n2; i++)
            if (reads(x->list2[i], name, n, depth + 1)) return true;
    }
    return false;
}

bool irt_template_reads(const irt_template *t, const char *name) {
    return reads(t->root, name, strlen(name), 0);
}

/* ---- content format, as vLLM detects it ---------------------------------------------
 * "openai" when the template loops over a message's content: a for loop over
 * X['content'] or X.content where X is the target of a loop over messages (or
 * over a variable set from messages, through filters, tests and slices). */
static bool var_access(const tnode *x, const char *name) {
    return x && x->kind == E_NAME && strcmp(x->str, name) == 0;
}

static bool attr_access(const tnode *x, const char *name, const char *key) {
    if (!x) return false;
    if (x->kind == E_ITEM)
        return var_access(x->a, name) && x->b->kind == E_LIT && x->b->val.t == TV_STR &&
               x->b->val.n == strlen(key) && memcmp(x->b->val.s, key, x->b->val.n) == 0;
    if (x->kind == E_ATTR) return var_access(x->a, name) && strcmp(x->str, key) == 0;
    return false;
}

static bool elems_access(const tnode *x, const char *name, const char *key) {
    if (!x) return false;
    if (x->kind == E_FILTER) return x->a && elems_access(x->a, name, key);
    if (x->kind == E_TEST) return elems_access(x->a, name, key);
    if (x->kind == E_SLICE) return elems_access(x->a, name, key);
    return key ? attr_access(x, name, key) : var_access(x, name);
}

typedef struct names {
    const char *v[64];
    size_t n;
} names;

static void names_add(names *s, const char *n) {
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], n) == 0) return;
    if (s->n < IR_ARRAY_LEN(s->v)) s->v[s->n++] = n;
}

typedef void (*node_fn)(const tnode *x, void *ctx);

static void walk(const tnode *x, node_fn fn, void *ctx, int depth) {
    if (!x || depth > 10000) return;
    fn(x, ctx);
    const tnode *kids[4] = {x->a, x->b, x->c, x->d};
    for (int k = 0; k < 4; k++) walk(kids[k], fn, ctx, depth + 1);
    if (x->kind != N_TEXT && x->kind != E_LIT) {
        for (size_t i = 0; i < x->n; i++) walk(x->list[i], fn, ctx, depth + 1);
        for (size_t i = 0; i < x->n2; i++) walk(x->list2[i], fn, ctx, depth + 1);
    }
}

typedef struct detect {
    names *from; /* variables to look for */
    names *out;  /* what they flow into */
    const char *key;
    bool grew;
} detect;

static void on_assign(const tnode *x, void *ctx) {
    detect *d = ctx;
    if (x->kind != N_SET || x->str || x->nnames != 1) return;
    for (size_t i = 0; i < d->from->n; i++)
        if (elems_access(x->a, d->from->v[i], NULL)) {
            size_t before = d->out->n;
            names_add(d->out, x->names[0]);
            d->grew |= d->out->n != before;
        }
}

static void on_loop(const tnode *x, void *ctx) {
    detect *d = ctx;
    if (x->kind != N_FOR || x->nnames != 1) return;
    for (size_t i = 0; i < d->from->n; i++)
        if (elems_access(x->a, d->from->v[i], d->key)) names_add(d->out, x->names[0]);
}

bool irt_template_iterates_content(const irt_template *t) {
    names msgs = {.n = 0}, items = {.n = 0}, contents = {.n = 0};
    names_add(&msgs, "messages");
    detect d = {.from = &msgs, .out = &msgs};
    do { /* variables assigned from messages, transitively */
        d.grew = false;
        walk(t->root, on_assign, &d, 0);
    } while (d.grew);
    detect l = {.from = &msgs, .out = &items};
    walk(t->root, on_loop, &l, 0);
    detect c = {.from = &items, .out = &contents, .key = "content"};
    walk(t->root, on_loop, &c, 0);
    return contents.n > 0;
}
