/* tmpl_internal.h: internals of the Jinja2 chat-template engine (tmpl_*.c).
 *
 * Pipeline: tmpl_lex.c turns the source into tokens (text, with Jinja's
 * whitespace rules already applied, and the tokens inside tags);
 * tmpl_parse.c builds the AST; tmpl_eval.c runs it over tmpl_value.c's
 * values; tmpl_filters.c holds the filters, tests and methods.
 *
 * Memory: the AST lives in the template's arena; values and output live in a
 * per-render arena. Errors unwind with longjmp to the render (or parse)
 * entry point, which owns every allocation through its arena, so nothing
 * leaks. */
#ifndef IR_TMPL_INTERNAL_H
#define IR_TMPL_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tokenize/ir_tokenize.h"

/* ---- values ----------------------------------------------------------------- */
typedef enum {
    TV_UNDEF, /* Jinja2's default Undefined; s/n: the missing name (may be NULL) */
    TV_NONE,
    TV_BOOL,
    TV_INT,
    TV_FLOAT,
    TV_STR,    /* s, n: UTF-8 bytes (not NUL-terminated) */
    TV_LIST,   /* l (tuple when l->tuple) */
    TV_DICT,   /* d */
    TV_NS,     /* d: a namespace() object, the one mutable value */
    TV_MACRO,  /* m */
    TV_FUNC,   /* i: a global function (TF_*) */
    TV_METHOD, /* mt: a bound method (its object and name) */
    TV_LOOP,   /* lp */
    TV_BIG,    /* s, n: an int past 64 bits, its canonical decimal digits with any
                  '-' (from the request's JSON, pyjson.c; a literal; or a result of
                  tmpl_bigint.c); never a value that fits int64, at most
                  TMPL_BIG_DIGITS digits */
} tv_type;

/* The most digits of a big integer: CPython's default int string-conversion
 * limit (sys.int_info.default_max_str_digits), past which Python can neither
 * read nor print an int. A result past it is a refusal (ADR 0018). */
#define TMPL_BIG_DIGITS 4300

typedef struct tlist tlist;
typedef struct tdict tdict;
typedef struct tmacro tmacro;
typedef struct tloop tloop;
typedef struct tmethod tmethod;

/* 24 bytes: a request's messages are lists and dicts of these, and eval
 * passes them by value. */
typedef struct tv {
    uint8_t t;
    size_t n; /* string length */
    union {
        bool b;
        int64_t i;
        double f;
        const char *s;
        tlist *l;
        tdict *d;
        tmacro *m;
        tloop *lp;
        tmethod *mt;
    };
} tv;

_Static_assert(sizeof(tv) <= 24, "a value is three words");

struct tmethod {
    tv self;          /* the object */
    const char *name; /* the method's name (n bytes) */
    size_t n;
};

struct tlist {
    tv *v;
    size_t n, cap;
    bool tuple;
    bool range; /* made by range(): prints as range(r0, r1[, r2]) */
    int64_t r0, r1, r2;
};

struct tdict {
    tv *k, *v; /* insertion order */
    size_t n, cap;
};

enum { TF_RANGE, TF_NAMESPACE, TF_DICT, TF_RAISE, TF_STRFTIME, TF_CALLER_NONE };

/* ---- the AST ------------------------------------------------------------------ */
typedef enum {
    /* statements */
    N_TEXT,    /* str */
    N_OUTPUT,  /* a */
    N_IF,      /* a: cond; list: body; list2: else body */
    N_FOR,     /* names: targets; a: iterable; b: filter or NULL; list: body; list2: else */
    N_SET,     /* names[0] (and str = attribute for ns.attr); a: value */
    N_SETBLK,  /* names[0]; list: body; list2: filters (N_FILTER with a == NULL) */
    N_MACRO,   /* str: name; names: params; list2: defaults (NULL entries); list: body */
    N_CALLBLK, /* a: the call; names: caller params; list: body */
    N_FILTBLK, /* list2: filters; list: body */
    N_BREAK,
    N_CONTINUE,
    N_BLOCK, /* list: body (generation, scoped-less blocks) */
    /* expressions */
    E_LIT,   /* val */
    E_NAME,  /* str */
    E_ATTR,  /* a.str */
    E_ITEM,  /* a[b] */
    E_SLICE, /* a[b:c:d] (NULL parts) */
    E_BIN,   /* op: a, b */
    E_NEG,
    E_POS,
    E_NOT,
    E_AND,
    E_OR,
    E_CMP,    /* a, then list: operands, ops in ops */
    E_COND,   /* b if a else c (c may be NULL) */
    E_LIST,   /* list */
    E_TUPLE,  /* list */
    E_DICT,   /* list: keys, list2: values */
    E_CALL,   /* a(list, names=list2) */
    E_FILTER, /* str: name; a: value; list: args; names/list2: kwargs */
    E_TEST,   /* str: name; a: value; list: args; op: negated */
} tnode_kind;

enum {
    OP_ADD = 1,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_FLOORDIV,
    OP_MOD,
    OP_POW,
    OP_CONCAT,
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN,
    OP_NOTIN
};

typedef struct tnode tnode;
struct tnode {
    uint8_t kind;
    uint8_t op;
    int line, col;
    tnode *a, *b, *c, *d;
    tnode **list;
    size_t n;
    tnode **list2;
    size_t n2;
    const char **names; /* NUL-terminated, arena */
    size_t nnames;
    uint8_t *ops; /* E_CMP */
    const char *str;
    size_t slen;
    tv val;
};

/* ---- errors ----------------------------------------------------------------- */
typedef struct terr {
    jmp_buf jb;
    char *msg;
    size_t msglen;
    int line, col;
} terr;

/* Writes the message (with line and column when known) and unwinds. */
_Noreturn void tmpl_fail(terr *e, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- lexer -------------------------------------------------------------------- */
typedef enum {
    TK_EOF,
    TK_TEXT,      /* s, n: text between tags, whitespace rules applied, newlines normalised */
    TK_VAR_BEGIN, /* {{ */
    TK_VAR_END,
    TK_BLOCK_BEGIN,
    TK_BLOCK_END,
    TK_NAME,
    TK_STRING, /* s, n: the unescaped value */
    TK_INT,    /* i */
    TK_FLOAT,  /* f */
    TK_OP,     /* op: one of the strings in tmpl_ops, s/n */
} tk_type;

typedef struct ttok {
    uint8_t t;
    int line, col;
    const char *s;
    size_t n;
    int64_t i;
    double f;
    const char *big; /* TK_INT past int64: its digits (arena), else NULL */
    size_t bign;
} ttok;

typedef struct ttoks {
    ttok *v;
    size_t n, cap;
} ttoks;

/* Tokenises src into toks (arena memory). Fails through e. */
void tmpl_lex(ir_arena *a, terr *e, const char *src, size_t len, ttoks *toks);

/* ---- parser ------------------------------------------------------------------- */
/* The template body: a list of statements. max_depth bounds nesting. */
tnode *tmpl_parse(ir_arena *a, terr *e, const ttoks *toks, int max_depth);

/* ---- strings ----------------------------------------------------------------- */
/* A string builder in an arena, with a cap on its length; or, with a sink, a
 * writer into that buffer (p stays NULL; n counts what was written, for the
 * cap; sink_full once the sink refused bytes, which are then dropped). */
typedef struct tsb {
    ir_arena *a;
    char *p;
    size_t n, cap, max;
    terr *e;
    ir_buf *sink;
    bool sink_full;
} tsb;

void tsb_init(tsb *b, ir_arena *a, terr *e, size_t max);
void tsb_init_sink(tsb *b, terr *e, size_t max, ir_buf *sink);
void tsb_add(tsb *b, const char *s, size_t n);
static inline void tsb_addc(tsb *b, char c) {
    tsb_add(b, &c, 1);
}
void tsb_adds(tsb *b, const char *s);
void tsb_addf(tsb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tsb_cp(tsb *b, uint32_t cp); /* one code point as UTF-8 */

/* UTF-8 decoding: the code point at s[*i] (invalid bytes read as U+FFFD, one byte). */
uint32_t tmpl_utf8_next(const char *s, size_t n, size_t *i);
size_t tmpl_utf8_len(const char *s, size_t n); /* code points */
bool tmpl_isspace(uint32_t cp);                /* str.isspace */

/* ---- values ------------------------------------------------------------------- */
typedef struct trender trender;

/* Inline: the render makes one or more of these per operation (a call each
 * cost a 50,000-message render about a tenth of its time). */
static inline tv tv_undef(const char *name, size_t n) {
    tv v = {.t = TV_UNDEF, .n = n};
    v.s = name;
    return v;
}
static inline tv tv_none(void) {
    return (tv){.t = TV_NONE};
}
static inline tv tv_bool(bool b) {
    tv v = {.t = TV_BOOL};
    v.b = b;
    return v;
}
static inline tv tv_int(int64_t i) {
    tv v = {.t = TV_INT};
    v.i = i;
    return v;
}
static inline tv tv_float(double f) {
    tv v = {.t = TV_FLOAT};
    v.f = f;
    return v;
}
static inline tv tv_str(const char *s, size_t n) {
    tv v = {.t = TV_STR, .n = n};
    v.s = s;
    return v;
}
tv tv_cstr(const char *s);

/* n bytes of a and b the same. For names and dict keys, a few bytes each:
 * compared in place, not through a call to memcmp (a 50,000-message render
 * looks up about twenty names and keys per message). */
static inline bool tmpl_name_eq(const char *a, const char *b, size_t n) {
    if (a == b || !n) return true;
    if (n > 16) return memcmp(a, b, n) == 0;
    uint64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0; /* first and last words, overlapping */
    if (n >= 8) {
        memcpy(&x0, a, 8), memcpy(&y0, b, 8);
        memcpy(&x1, a + n - 8, 8), memcpy(&y1, b + n - 8, 8);
    } else if (n >= 4) {
        uint32_t p, q, u, w;
        memcpy(&p, a, 4), memcpy(&q, b, 4), memcpy(&u, a + n - 4, 4), memcpy(&w, b + n - 4, 4);
        x0 = p, y0 = q, x1 = u, y1 = w;
    } else {
        x0 = (uint64_t)(unsigned char)a[0] << 16 | (uint64_t)(unsigned char)a[n / 2] << 8 |
             (unsigned char)a[n - 1];
        y0 = (uint64_t)(unsigned char)b[0] << 16 | (uint64_t)(unsigned char)b[n / 2] << 8 |
             (unsigned char)b[n - 1];
    }
    return ((x0 ^ y0) | (x1 ^ y1)) == 0;
}
/* Two strings equal (a, b both TV_STR): what tv_eq decides for them. */
static inline bool tv_str_eq(tv a, tv b) {
    return a.n == b.n && tmpl_name_eq(a.s, b.s, a.n);
}
tlist *tv_list_new(ir_arena *a, size_t cap);
void tv_list_push(ir_arena *a, terr *e, tlist *l, tv v);
tdict *tv_dict_new(ir_arena *a, size_t cap);
void tv_dict_set(ir_arena *a, terr *e, tdict *d, tv k, tv v);
tv *tv_dict_get(const tdict *d, tv k);
tv *tv_dict_gets(const tdict *d, const char *s, size_t n);
tv tv_from_json(ir_arena *a, terr *e, const json_t *j, int depth);
/* -v for a TV_BIG (in the render's arena); -(2**63) comes back as TV_INT. */
tv tv_big_neg(ir_arena *a, terr *e, tv v);
/* The parity of a TV_BIG's last digit: true when odd. */
bool tv_big_odd(tv v);

bool tv_truthy(tv v);
bool tv_eq(tv a, tv b);
/* <0, 0, >0; fails on types Python cannot order. */
int tv_cmp(terr *e, tv a, tv b);
const char *tv_typename(tv v);
/* str() and repr() as Python prints them. */
void tv_str_to(tsb *b, tv v);
void tv_repr_to(tsb *b, tv v);
void tv_float_repr(tsb *b, double f);
tv tv_to_string(ir_arena *a, terr *e, tv v, size_t max); /* str(v) as a TV_STR */
/* json.dumps(v, ensure_ascii, indent, separators, sort_keys): indent < 0 is None. */
void tv_tojson(tsb *b, terr *e, tv v, int indent, const char *item_sep, const char *key_sep,
               bool sort_keys, bool ensure_ascii, int depth);

/* ---- evaluation --------------------------------------------------------------- */
struct tmacro {
    const tnode *def; /* N_MACRO */
    struct tframe *closure;
    const char *name;
    tmacro *caller_body; /* for caller(): the N_CALLBLK body */
    const tnode *callblk;
};

struct tloop {
    tlist *items;
    size_t index0;
    size_t depth0;
};

typedef struct tframe {
    struct tframe *up;
    const char **names;
    size_t *lens;
    tv *vals;
    size_t n, cap;
    bool kept; /* a closure (macro, call block) holds it or a frame below it */
} tframe;

struct trender {
    ir_arena *a;
    terr *e;
    tsb *out;
    tframe *globals;
    const irt_template_limits *lim;
    uint64_t steps;
    int depth;
    int eval_depth; /* evals nested now, macro bodies included (tmpl_eval.c: eval) */
    tv caller;      /* inside a macro called by {% call %} */
    int64_t now;
};

/* Checks the iteration budget. */
void tmpl_step(trender *r, const tnode *at);
/* Charges n steps to it at once (big-integer work, by size). */
void tmpl_charge(trender *r, const tnode *at, uint64_t n);
tv tmpl_call_value(trender *r, const tnode *at, tv fn, tv *args, size_t nargs, const char **kwn,
                   tv *kwv, size_t nkw);
tv tmpl_getattr(trender *r, const tnode *at, tv obj, const char *name, size_t n);
tv tmpl_getitem(trender *r, const tnode *at, tv obj, tv key);
/* The items of an iterable (str: its characters; dict: its keys). */
tlist *tmpl_iter(trender *r, const tnode *at, tv v);

/* a op b with Python's semantics for numbers, strings and lists (tmpl_eval.c). */
tv tmpl_arith(trender *r, const tnode *at, int op, tv a, tv b);

/* ---- big integers (tmpl_bigint.c, on GMP) ------------------------------------
 * Called only off the 64-bit fast path; each fails through r->e as Python
 * raises (ZeroDivisionError, OverflowError) or past TMPL_BIG_DIGITS. */
/* a op b for ints (TV_INT, TV_BOOL, TV_BIG): + - * // % ** and true division
 * (a float, correctly rounded as CPython's). A result that fits 64 bits is a
 * TV_INT. */
tv tmpl_big_arith(trender *r, const tnode *at, int op, tv a, tv b);
/* float(v) for an int, correctly rounded; fails as OverflowError. */
double tmpl_int_to_double(trender *r, const tnode *at, tv v);
/* Decimal digits (with any '-', no leading zero) as a canonical int value. */
tv tmpl_big_from_text(trender *r, const tnode *at, const char *s, size_t n);
/* int(f) for a finite float: truncated toward zero, exact. */
tv tmpl_big_from_double(trender *r, const tnode *at, double f);
/* round(v, ndigits) for an int: half to even at 10**-ndigits. */
tv tmpl_big_round(trender *r, const tnode *at, tv v, int64_t ndigits);

/* ---- filters, tests, methods ------------------------------------------------ */
tv tmpl_filter(trender *r, const tnode *at, const char *name, tv v, tv *args, size_t nargs,
               const char **kwn, tv *kwv, size_t nkw);
bool tmpl_test(trender *r, const tnode *at, const char *name, tv v, tv *args, size_t nargs);
bool tmpl_has_method(tv obj, const char *name, size_t n);
tv tmpl_method(trender *r, const tnode *at, tv self, const char *name, size_t n, tv *args,
               size_t nargs, const char **kwn, tv *kwv, size_t nkw);
/* The argument named kw, else positional i, else NULL. */
tv *tmpl_arg(tv *args, size_t nargs, const char **kwn, tv *kwv, size_t nkw, size_t i,
             const char *kw);

#endif
