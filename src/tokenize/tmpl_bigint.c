/* tmpl_bigint.c: Python's integer arithmetic past 64 bits, on GMP (ADR 0018).
 *
 * A big integer (TV_BIG) is its canonical decimal text: no leading zero, a
 * '-' when negative, never a value that fits int64 (such a result comes back
 * as TV_INT), and at most TMPL_BIG_DIGITS digits. tmpl_eval.c keeps the
 * 64-bit fast path and calls here only when an operand is TV_BIG or a 64-bit
 * result overflows, so ordinary ints never touch GMP.
 *
 * GMP allocates with malloc, and errors unwind with longjmp: no function here
 * fails while an mpz_t is live. Each computes into a status, clears its
 * numbers, and only then fails. */
#include <gmp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/tmpl_internal.h"

/* A number of TMPL_BIG_DIGITS + 1 digits is >= 10^4300 > 2^14284. */
#define BIG_MAX_BITS 14285

/* Big-integer work counts against the render's step budget, one step per
 * BIG_STEP_DIGITS digits read or written, so a loop of operations at the
 * bound (about 35 us each: parsing and printing 4,300 digits) stops after
 * about 3 s of CPU at the default 10M steps instead of minutes. */
#define BIG_STEP_DIGITS 64

static void charge(trender *r, const tnode *at, size_t digits) {
    tmpl_charge(r, at, 1 + digits / BIG_STEP_DIGITS);
}

typedef enum {
    BS_OK,
    BS_DIGITS,    /* the result has more than TMPL_BIG_DIGITS digits */
    BS_NOMEM,     /* the render's arena is full */
    BS_ZERODIV,   /* ZeroDivisionError */
    BS_ZEROPOW,   /* 0 ** negative */
    BS_DIV_RANGE, /* OverflowError of int / int */
} bstat;

static _Noreturn void bfail(trender *r, const tnode *at, bstat st, int op) {
    int line = at ? at->line : 0, col = at ? at->col : 0;
    switch (st) {
    case BS_DIGITS:
        tmpl_fail(r->e, line, col,
                  "integer result of more than %d digits (CPython's int string limit; the "
                  "template engine's bound on big integers)",
                  TMPL_BIG_DIGITS);
    case BS_NOMEM:
        tmpl_fail(r->e, line, col, "out of memory (the render's memory limit)");
    case BS_ZERODIV:
        tmpl_fail(r->e, line, col, "%s",
                  op == OP_MOD   ? "integer modulo by zero"
                  : op == OP_DIV ? "division by zero"
                                 : "integer division or modulo by zero");
    case BS_ZEROPOW:
        tmpl_fail(r->e, line, col, "0.0 cannot be raised to a negative power");
    default:
        tmpl_fail(r->e, line, col, "integer division result too large for a float");
    }
}

/* The text of a TV_BIG, NUL-terminated, in buf (TMPL_BIG_DIGITS + 2 bytes). */
static const char *big_text(tv v, char *buf) {
    size_t n = v.n <= TMPL_BIG_DIGITS + 1 ? v.n : TMPL_BIG_DIGITS + 1;
    memcpy(buf, v.s, n);
    buf[n] = '\0';
    return buf;
}

static void to_mpz(mpz_t z, tv v) {
    char buf[TMPL_BIG_DIGITS + 2];
    if (v.t == TV_BIG)
        mpz_set_str(z, big_text(v, buf), 10);
    else
        mpz_set_si(z, v.t == TV_INT ? (long)v.i : v.t == TV_BOOL ? (long)v.b : 0);
}

/* z as a value: TV_INT when it fits, else a TV_BIG in the arena. */
static bstat from_mpz(ir_arena *a, const mpz_t z, tv *out) {
    if (mpz_fits_slong_p(z)) {
        *out = tv_int((int64_t)mpz_get_si(z));
        return BS_OK;
    }
    size_t cap = mpz_sizeinbase(z, 10) + 2;
    if (cap > TMPL_BIG_DIGITS + 3) return BS_DIGITS;
    char *p = ir_arena_alloc(a, cap);
    if (!p) return BS_NOMEM;
    mpz_get_str(p, 10, z);
    size_t n = strlen(p);
    if (n - (p[0] == '-') > TMPL_BIG_DIGITS) return BS_DIGITS;
    tv v = {.t = TV_BIG, .n = n};
    v.s = p;
    *out = v;
    return BS_OK;
}

tv tmpl_big_from_text(trender *r, const tnode *at, const char *s, size_t n) {
    tv v = {.t = TV_BIG, .n = n};
    v.s = s;
    mpz_t z;
    mpz_init(z);
    to_mpz(z, v);
    bstat st = from_mpz(r->a, z, &v);
    mpz_clear(z);
    if (st) bfail(r, at, st, 0);
    return v;
}

/* ---- to float ------------------------------------------------------------------ */
double tmpl_int_to_double(trender *r, const tnode *at, tv v) {
    if (v.t == TV_INT) return (double)v.i;
    if (v.t == TV_BOOL) return v.b;
    /* strtod rounds half to even and overflows exactly where CPython's
     * PyLong_AsDouble does */
    char buf[TMPL_BIG_DIGITS + 2];
    double f = strtod(big_text(v, buf), NULL);
    if (isinf(f))
        tmpl_fail(r->e, at ? at->line : 0, at ? at->col : 0, "int too large to convert to float");
    return f;
}

/* (q + a fraction that is nonzero when sticky) * 2^k, q > 0, rounded half to
 * even to a double, subnormals included. False when past the double range. */
static bool round_scaled(const mpz_t q, bool sticky, long k, double *out) {
    long top = (long)mpz_sizeinbase(q, 2) - 1 + k;
    if (top > 1024) return false;
    long lsb = top - 52 < -1074 ? -1074 : top - 52;
    long sh = lsb - k;
    if (sh <= 0) { /* q has at most 53 bits: exact */
        *out = ldexp(mpz_get_d(q), (int)k);
        return !isinf(*out);
    }
    mpz_t m;
    mpz_init(m);
    mpz_tdiv_q_2exp(m, q, (mp_bitcnt_t)sh);
    bool half = mpz_tstbit(q, (mp_bitcnt_t)(sh - 1));
    bool rest = sticky || mpz_scan1(q, 0) < (mp_bitcnt_t)(sh - 1);
    if (half && (rest || mpz_odd_p(m))) mpz_add_ui(m, m, 1);
    *out = ldexp(mpz_get_d(m), (int)lsb); /* m <= 2^53: exact */
    mpz_clear(m);
    return !isinf(*out);
}

/* a / b for ints, correctly rounded as CPython's long_true_divide. */
static bstat true_div(const mpz_t a, const mpz_t b, double *out) {
    if (mpz_sgn(b) == 0) return BS_ZERODIV;
    bool neg = (mpz_sgn(a) < 0) != (mpz_sgn(b) < 0);
    if (mpz_sgn(a) == 0) {
        *out = neg ? -0.0 : 0.0;
        return BS_OK;
    }
    mpz_t q, rem, d;
    mpz_inits(q, rem, d, NULL);
    mpz_abs(q, a);
    mpz_abs(d, b);
    /* scale so that the quotient has 55 or 56 bits: two past the mantissa */
    long k = (long)mpz_sizeinbase(q, 2) - (long)mpz_sizeinbase(d, 2) - 55;
    if (k > 0)
        mpz_mul_2exp(d, d, (mp_bitcnt_t)k);
    else
        mpz_mul_2exp(q, q, (mp_bitcnt_t)-k);
    mpz_tdiv_qr(q, rem, q, d);
    bool ok = round_scaled(q, mpz_sgn(rem) != 0, k, out);
    mpz_clears(q, rem, d, NULL);
    if (!ok) return BS_DIV_RANGE;
    if (neg) *out = -*out;
    return BS_OK;
}

/* ---- operators ------------------------------------------------------------------ */
/* x ** e for e >= 0, within the digit bound (checked before computing, so a
 * huge power is refused at once instead of computed). */
static bstat big_pow(mpz_t z, const mpz_t x, const mpz_t e) {
    if (mpz_cmpabs_ui(x, 1) <= 0) { /* 0, 1 and -1 to any power */
        if (mpz_sgn(x) == 0)
            mpz_set_ui(z, mpz_sgn(e) == 0);
        else
            mpz_set_si(z, mpz_sgn(x) < 0 && mpz_odd_p(e) ? -1 : 1);
        return BS_OK;
    }
    if (!mpz_fits_ulong_p(e)) return BS_DIGITS;
    unsigned long n = mpz_get_ui(e);
    unsigned long bits = (unsigned long)mpz_sizeinbase(x, 2) - 1; /* >= 1 */
    if (n > BIG_MAX_BITS / bits + 1) return BS_DIGITS;
    mpz_pow_ui(z, x, n);
    return BS_OK;
}

static bstat int_op(int op, mpz_t z, const mpz_t x, const mpz_t y) {
    switch (op) {
    case OP_ADD:
        mpz_add(z, x, y);
        return BS_OK;
    case OP_SUB:
        mpz_sub(z, x, y);
        return BS_OK;
    case OP_MUL:
        mpz_mul(z, x, y);
        return BS_OK;
    case OP_FLOORDIV:
    case OP_MOD:
        if (mpz_sgn(y) == 0) return BS_ZERODIV;
        if (op == OP_MOD)
            mpz_fdiv_r(z, x, y); /* Python: the sign of the divisor */
        else
            mpz_fdiv_q(z, x, y);
        return BS_OK;
    default: /* OP_POW, e >= 0 */
        return big_pow(z, x, y);
    }
}

tv tmpl_big_arith(trender *r, const tnode *at, int op, tv a, tv b) {
    bool negpow = op == OP_POW && (b.t == TV_INT ? b.i < 0 : b.t == TV_BIG && b.s[0] == '-');
    if (negpow) { /* CPython: float(a) ** float(b) */
        double x = tmpl_int_to_double(r, at, a), y = tmpl_int_to_double(r, at, b);
        if (x == 0) bfail(r, at, BS_ZEROPOW, op);
        return tv_float(pow(x, y));
    }
    charge(r, at, (a.t == TV_BIG ? a.n : 0) + (b.t == TV_BIG ? b.n : 0));
    mpz_t x, y, z;
    mpz_inits(x, y, z, NULL);
    to_mpz(x, a);
    to_mpz(y, b);
    tv out = tv_none();
    bstat st;
    if (op == OP_DIV) {
        double f = 0;
        st = true_div(x, y, &f);
        out = tv_float(f);
    } else {
        st = int_op(op, z, x, y);
        if (st == BS_OK) st = from_mpz(r->a, z, &out);
    }
    mpz_clears(x, y, z, NULL);
    if (st) bfail(r, at, st, op);
    if (out.t == TV_BIG) charge(r, at, out.n);
    return out;
}

tv tmpl_big_round(trender *r, const tnode *at, tv v, int64_t ndigits) {
    if (ndigits >= 0) return v.t == TV_BOOL ? tv_int(v.b) : v;
    if (ndigits < -(TMPL_BIG_DIGITS + 2)) return tv_int(0);
    charge(r, at, 2 * (v.t == TV_BIG ? v.n : 0) + (size_t)-ndigits);
    mpz_t x, p, q, rem;
    mpz_inits(x, p, q, rem, NULL);
    to_mpz(x, v);
    mpz_ui_pow_ui(p, 10, (unsigned long)-ndigits);
    mpz_fdiv_qr(q, rem, x, p); /* x = q*p + rem, 0 <= rem < p */
    mpz_mul_2exp(rem, rem, 1);
    int c = mpz_cmp(rem, p);
    if (c > 0 || (c == 0 && mpz_odd_p(q))) mpz_add_ui(q, q, 1); /* half to even */
    mpz_mul(q, q, p);
    tv out = tv_none();
    bstat st = from_mpz(r->a, q, &out);
    mpz_clears(x, p, q, rem, NULL);
    if (st) bfail(r, at, st, 0);
    return out;
}

tv tmpl_big_from_double(trender *r, const tnode *at, double f) {
    mpz_t z;
    mpz_init_set_d(z, f); /* truncates toward zero, as int(float) */
    tv out = tv_none();
    bstat st = from_mpz(r->a, z, &out);
    mpz_clear(z);
    if (st) bfail(r, at, st, 0);
    return out;
}
