/* tmpl_parse.c: a recursive-descent parser for Jinja2's grammar, with
 * Jinja2's operator precedence (jinja2/parser.py): conditional expression,
 * or, and, not, comparisons, + -, ~, * / // %, **, unary - +, then postfix
 * (attribute, subscript, call) and filters and tests. */
#include <string.h>

#include "tokenize/tmpl_internal.h"

typedef struct ps {
    ir_arena *a;
    terr *e;
    const ttok *t;
    size_t n, i;
    int depth, max_depth;
} ps;

typedef struct nvec {
    tnode **v;
    size_t n, cap;
} nvec;

static const ttok *cur(ps *p) {
    return &p->t[p->i];
}

static _Noreturn void pfail(ps *p, const ttok *at, const char *fmt, const char *arg) {
    tmpl_fail(p->e, at->line, at->col, fmt, arg);
}

static void *palloc(ps *p, size_t n) {
    void *m = ir_arena_calloc(p->a, n);
    if (!m) tmpl_fail(p->e, 0, 0, "out of memory");
    return m;
}

static tnode *nn(ps *p, tnode_kind k, const ttok *at) {
    tnode *x = palloc(p, sizeof *x);
    x->kind = (uint8_t)k;
    x->line = at->line;
    x->col = at->col;
    return x;
}

static void nv_push(ps *p, nvec *v, tnode *x) {
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 8;
        tnode **nvv = palloc(p, nc * sizeof *nvv);
        if (v->n) memcpy(nvv, v->v, v->n * sizeof *nvv);
        v->v = nvv;
        v->cap = nc;
    }
    v->v[v->n++] = x;
}

static bool is_op(const ttok *k, const char *op) {
    return k->t == TK_OP && k->n == strlen(op) && memcmp(k->s, op, k->n) == 0;
}

static bool is_name(const ttok *k, const char *name) {
    return k->t == TK_NAME && k->n == strlen(name) && memcmp(k->s, name, k->n) == 0;
}

static const char *tok_desc(const ttok *k) {
    switch (k->t) {
    case TK_EOF:
        return "end of template";
    case TK_VAR_END:
        return "end of print statement";
    case TK_BLOCK_END:
        return "end of statement block";
    case TK_STRING:
        return "string";
    case TK_INT:
        return "integer";
    case TK_FLOAT:
        return "float";
    default:
        return "token";
    }
}

static void expect_op(ps *p, const char *op) {
    if (!is_op(cur(p), op)) pfail(p, cur(p), "expected '%s'", op);
    p->i++;
}

static const char *take_name(ps *p) {
    const ttok *k = cur(p);
    if (k->t != TK_NAME) pfail(p, k, "expected a name, got %s", tok_desc(k));
    p->i++;
    return ir_arena_strndup(p->a, k->s, k->n);
}

static void enter(ps *p) {
    if (++p->depth > p->max_depth) pfail(p, cur(p), "%s", "template nested too deeply");
}

static tnode *expr(ps *p);
static tnode *expr_nocond(ps *p);
static tnode *unary(ps *p, bool with_filter);
static tnode *primary(ps *p);
static tnode *postfix(ps *p, tnode *x);

/* Call arguments after '(': positional into pos, name=value into kw. */
static void call_args(ps *p, nvec *pos, nvec *kwv, const char ***kwn, size_t *nkw) {
    expect_op(p, "(");
    const char **names = NULL;
    size_t nn_ = 0, cap = 0;
    while (!is_op(cur(p), ")")) {
        if (pos->n + nn_ > 0) {
            expect_op(p, ",");
            if (is_op(cur(p), ")")) break;
        }
        if (cur(p)->t == TK_NAME && is_op(&p->t[p->i + 1], "=")) {
            if (nn_ == cap) {
                cap = cap ? cap * 2 : 4;
                const char **nnm = palloc(p, cap * sizeof *nnm);
                if (nn_) memcpy(nnm, names, nn_ * sizeof *nnm);
                names = nnm;
            }
            names[nn_++] = take_name(p);
            p->i++;
            nv_push(p, kwv, expr(p));
        } else {
            if (nn_) pfail(p, cur(p), "%s", "positional argument after a keyword argument");
            nv_push(p, pos, expr(p));
        }
    }
    p->i++;
    *kwn = names;
    *nkw = nn_;
}

static void fill_call(ps *p, tnode *x) {
    nvec pos = {0}, kw = {0};
    call_args(p, &pos, &kw, &x->names, &x->nnames);
    x->list = pos.v;
    x->n = pos.n;
    x->list2 = kw.v;
    x->n2 = kw.n;
}

/* A filter after '|' (or in a filter block): name[.name][(args)]. */
static tnode *filter_one(ps *p, tnode *value) {
    const ttok *at = cur(p);
    tnode *f = nn(p, E_FILTER, at);
    f->a = value;
    f->str = take_name(p);
    while (is_op(cur(p), ".")) { /* dotted filter names: keep the last part */
        p->i++;
        f->str = take_name(p);
    }
    f->slen = strlen(f->str);
    if (is_op(cur(p), "(")) fill_call(p, f);
    return f;
}

static tnode *test_one(ps *p, tnode *value) {
    const ttok *at = cur(p);
    p->i++; /* is */
    tnode *t = nn(p, E_TEST, at);
    t->a = value;
    if (is_name(cur(p), "not")) {
        p->i++;
        t->op = 1;
    }
    t->str = take_name(p);
    while (is_op(cur(p), ".")) {
        p->i++;
        t->str = take_name(p);
    }
    t->slen = strlen(t->str);
    const ttok *k = cur(p);
    if (is_op(k, "(")) {
        fill_call(p, t);
    } else if ((k->t == TK_NAME || k->t == TK_STRING || k->t == TK_INT || k->t == TK_FLOAT ||
                is_op(k, "[") || is_op(k, "{")) &&
               !is_name(k, "else") && !is_name(k, "or") && !is_name(k, "and")) {
        if (is_name(k, "is")) pfail(p, k, "%s", "you cannot chain multiple tests with is");
        tnode *arg = postfix(p, primary(p));
        t->list = palloc(p, sizeof *t->list);
        t->list[0] = arg;
        t->n = 1;
    }
    return t;
}

static tnode *filter_expr(ps *p, tnode *x) {
    for (;;) {
        if (is_op(cur(p), "|")) {
            p->i++;
            x = filter_one(p, x);
        } else if (is_name(cur(p), "is")) {
            x = test_one(p, x);
        } else if (is_op(cur(p), "(")) {
            tnode *c = nn(p, E_CALL, cur(p));
            c->a = x;
            fill_call(p, c);
            x = c;
        } else {
            return x;
        }
    }
}

/* [a:b:c] or [a] after '['. */
static tnode *subscript(ps *p, tnode *x) {
    const ttok *at = cur(p);
    p->i++;
    tnode *parts[3] = {NULL, NULL, NULL};
    int k = 0;
    bool slice = false;
    for (;;) {
        if (is_op(cur(p), "]")) break;
        if (is_op(cur(p), ":")) {
            slice = true;
            if (++k > 2) pfail(p, cur(p), "%s", "bad slice");
            p->i++;
            continue;
        }
        if (parts[k]) pfail(p, cur(p), "%s", "expected ']'");
        parts[k] = expr(p);
        if (!slice && is_op(cur(p), ",")) { /* a tuple key */
            tnode *tu = nn(p, E_TUPLE, at);
            nvec v = {0};
            nv_push(p, &v, parts[0]);
            while (is_op(cur(p), ",")) {
                p->i++;
                if (is_op(cur(p), "]")) break;
                nv_push(p, &v, expr(p));
            }
            tu->list = v.v;
            tu->n = v.n;
            parts[0] = tu;
        }
    }
    p->i++;
    tnode *r = nn(p, slice ? E_SLICE : E_ITEM, at);
    r->a = x;
    if (slice) {
        r->b = parts[0];
        r->c = parts[1];
        r->d = parts[2];
    } else {
        if (!parts[0]) pfail(p, at, "%s", "expected a subscript");
        r->b = parts[0];
    }
    return r;
}

/* An integer literal's value: a big integer past int64 (canonical digits). */
static tv int_lit(const ttok *k) {
    if (!k->big) return tv_int(k->i);
    tv v = {.t = TV_BIG, .n = k->bign};
    v.s = k->big;
    return v;
}

static tnode *postfix(ps *p, tnode *x) {
    for (;;) {
        const ttok *k = cur(p);
        if (is_op(k, ".")) {
            p->i++;
            const ttok *nt = cur(p);
            if (nt->t == TK_INT) { /* foo.0 is foo[0] */
                tnode *r = nn(p, E_ITEM, k);
                r->a = x;
                r->b = nn(p, E_LIT, nt);
                r->b->val = int_lit(nt);
                p->i++;
                x = r;
                continue;
            }
            tnode *r = nn(p, E_ATTR, k);
            r->a = x;
            r->str = take_name(p);
            r->slen = strlen(r->str);
            x = r;
        } else if (is_op(k, "[")) {
            x = subscript(p, x);
        } else if (is_op(k, "(")) {
            tnode *c = nn(p, E_CALL, k);
            c->a = x;
            fill_call(p, c);
            x = c;
        } else {
            return x;
        }
    }
}

/* ( ... ): a parenthesised expression or a tuple. */
static tnode *paren(ps *p) {
    const ttok *at = cur(p);
    p->i++;
    if (is_op(cur(p), ")")) {
        p->i++;
        return nn(p, E_TUPLE, at);
    }
    tnode *first = expr(p);
    if (!is_op(cur(p), ",")) {
        expect_op(p, ")");
        return first;
    }
    nvec v = {0};
    nv_push(p, &v, first);
    while (is_op(cur(p), ",")) {
        p->i++;
        if (is_op(cur(p), ")")) break;
        nv_push(p, &v, expr(p));
    }
    expect_op(p, ")");
    tnode *t = nn(p, E_TUPLE, at);
    t->list = v.v;
    t->n = v.n;
    return t;
}

static tnode *primary(ps *p) {
    enter(p);
    const ttok *k = cur(p);
    tnode *x;
    if (k->t == TK_NAME) {
        p->i++;
        x = nn(p, E_LIT, k);
        if (is_name(k, "true") || is_name(k, "True"))
            x->val = tv_bool(true);
        else if (is_name(k, "false") || is_name(k, "False"))
            x->val = tv_bool(false);
        else if (is_name(k, "none") || is_name(k, "None"))
            x->val = tv_none();
        else {
            x->kind = E_NAME;
            x->str = ir_arena_strndup(p->a, k->s, k->n);
            x->slen = k->n;
        }
    } else if (k->t == TK_STRING) {
        /* adjacent string literals concatenate */
        tsb b;
        tsb_init(&b, p->a, p->e, (size_t)1 << 30);
        while (cur(p)->t == TK_STRING) {
            tsb_add(&b, cur(p)->s, cur(p)->n);
            p->i++;
        }
        x = nn(p, E_LIT, k);
        x->val = tv_str(b.p ? b.p : "", b.n);
    } else if (k->t == TK_INT || k->t == TK_FLOAT) {
        p->i++;
        x = nn(p, E_LIT, k);
        x->val = k->t == TK_INT ? int_lit(k) : tv_float(k->f);
    } else if (is_op(k, "(")) {
        x = paren(p);
    } else if (is_op(k, "[")) {
        p->i++;
        nvec v = {0};
        while (!is_op(cur(p), "]")) {
            if (v.n) {
                expect_op(p, ",");
                if (is_op(cur(p), "]")) break;
            }
            nv_push(p, &v, expr(p));
        }
        p->i++;
        x = nn(p, E_LIST, k);
        x->list = v.v;
        x->n = v.n;
    } else if (is_op(k, "{")) {
        p->i++;
        nvec ks = {0}, vs = {0};
        while (!is_op(cur(p), "}")) {
            if (ks.n) {
                expect_op(p, ",");
                if (is_op(cur(p), "}")) break;
            }
            nv_push(p, &ks, expr(p));
            expect_op(p, ":");
            nv_push(p, &vs, expr(p));
        }
        p->i++;
        x = nn(p, E_DICT, k);
        x->list = ks.v;
        x->n = ks.n;
        x->list2 = vs.v;
        x->n2 = vs.n;
    } else {
        pfail(p, k, "unexpected %s", tok_desc(k));
    }
    p->depth--;
    return x;
}

static tnode *unary(ps *p, bool with_filter) {
    enter(p);
    const ttok *k = cur(p);
    tnode *x;
    if (is_op(k, "-") || is_op(k, "+")) {
        p->i++;
        x = nn(p, is_op(k, "-") ? E_NEG : E_POS, k);
        x->a = unary(p, false);
    } else {
        x = primary(p);
    }
    x = postfix(p, x);
    if (with_filter) x = filter_expr(p, x);
    p->depth--;
    return x;
}

static tnode *bin(ps *p, int op, tnode *l, tnode *r, const ttok *at) {
    tnode *x = nn(p, E_BIN, at);
    x->op = (uint8_t)op;
    x->a = l;
    x->b = r;
    return x;
}

static tnode *pow_(ps *p) {
    tnode *l = unary(p, true);
    while (is_op(cur(p), "**")) {
        const ttok *at = cur(p);
        p->i++;
        l = bin(p, OP_POW, l, unary(p, true), at);
    }
    return l;
}

static tnode *math2(ps *p) {
    tnode *l = pow_(p);
    for (;;) {
        const ttok *k = cur(p);
        int op = is_op(k, "*")    ? OP_MUL
                 : is_op(k, "/")  ? OP_DIV
                 : is_op(k, "//") ? OP_FLOORDIV
                 : is_op(k, "%")  ? OP_MOD
                                  : 0;
        if (!op) return l;
        p->i++;
        l = bin(p, op, l, pow_(p), k);
    }
}

static tnode *concat(ps *p) {
    tnode *l = math2(p);
    while (is_op(cur(p), "~")) {
        const ttok *at = cur(p);
        p->i++;
        l = bin(p, OP_CONCAT, l, math2(p), at);
    }
    return l;
}

static tnode *math1(ps *p) {
    tnode *l = concat(p);
    for (;;) {
        const ttok *k = cur(p);
        int op = is_op(k, "+") ? OP_ADD : is_op(k, "-") ? OP_SUB : 0;
        if (!op) return l;
        p->i++;
        l = bin(p, op, l, concat(p), k);
    }
}

static tnode *compare(ps *p) {
    const ttok *at = cur(p);
    tnode *first = math1(p);
    nvec v = {0};
    uint8_t ops[64];
    size_t nops = 0;
    for (;;) {
        const ttok *k = cur(p);
        int op = is_op(k, "==")     ? OP_EQ
                 : is_op(k, "!=")   ? OP_NE
                 : is_op(k, "<")    ? OP_LT
                 : is_op(k, "<=")   ? OP_LE
                 : is_op(k, ">")    ? OP_GT
                 : is_op(k, ">=")   ? OP_GE
                 : is_name(k, "in") ? OP_IN
                                    : 0;
        if (!op && is_name(k, "not") && is_name(&p->t[p->i + 1], "in")) {
            op = OP_NOTIN;
            p->i++;
        }
        if (!op) break;
        if (nops == IR_ARRAY_LEN(ops)) pfail(p, k, "%s", "too many chained comparisons");
        p->i++;
        ops[nops++] = (uint8_t)op;
        nv_push(p, &v, math1(p));
    }
    if (!nops) return first;
    tnode *x = nn(p, E_CMP, at);
    x->a = first;
    x->list = v.v;
    x->n = v.n;
    x->ops = palloc(p, nops);
    memcpy(x->ops, ops, nops);
    return x;
}

static tnode *not_(ps *p) {
    if (is_name(cur(p), "not")) {
        const ttok *at = cur(p);
        p->i++;
        enter(p);
        tnode *x = nn(p, E_NOT, at);
        x->a = not_(p);
        p->depth--;
        return x;
    }
    return compare(p);
}

static tnode *and_(ps *p) {
    tnode *l = not_(p);
    while (is_name(cur(p), "and")) {
        tnode *x = nn(p, E_AND, cur(p));
        p->i++;
        x->a = l;
        x->b = not_(p);
        l = x;
    }
    return l;
}

static tnode *or_(ps *p) {
    tnode *l = and_(p);
    while (is_name(cur(p), "or")) {
        tnode *x = nn(p, E_OR, cur(p));
        p->i++;
        x->a = l;
        x->b = and_(p);
        l = x;
    }
    return l;
}

static tnode *expr_nocond(ps *p) {
    return or_(p);
}

static tnode *expr(ps *p) {
    enter(p);
    tnode *x = or_(p);
    while (is_name(cur(p), "if")) {
        tnode *c = nn(p, E_COND, cur(p));
        p->i++;
        c->b = x;
        c->a = or_(p);
        if (is_name(cur(p), "else")) {
            p->i++;
            c->c = expr(p);
        }
        x = c;
    }
    p->depth--;
    return x;
}

/* expr, or a tuple of them without parentheses (as {{ a, b }} or set x = 1, 2). */
static tnode *tuple_expr(ps *p, bool cond) {
    const ttok *at = cur(p);
    tnode *first = cond ? expr(p) : expr_nocond(p);
    if (!is_op(cur(p), ",")) return first;
    nvec v = {0};
    nv_push(p, &v, first);
    while (is_op(cur(p), ",")) {
        p->i++;
        const ttok *k = cur(p);
        if (k->t == TK_VAR_END || k->t == TK_BLOCK_END || is_name(k, "if") ||
            is_name(k, "recursive"))
            break;
        nv_push(p, &v, cond ? expr(p) : expr_nocond(p));
    }
    tnode *t = nn(p, E_TUPLE, at);
    t->list = v.v;
    t->n = v.n;
    return t;
}

/* ---- statements ---------------------------------------------------------------- */
static void block_end(ps *p) {
    if (cur(p)->t != TK_BLOCK_END)
        pfail(p, cur(p), "expected end of statement block, got %s", tok_desc(cur(p)));
    p->i++;
}

/* Statements up to a {% name %} whose name is in ends (a NULL-terminated list);
 * leaves p at that name. */
static tnode **body(ps *p, const char *const *ends, size_t *n, const ttok *opened);

static tnode *stmt(ps *p);

static const char *const END_IF[] = {"elif", "else", "endif", NULL};
static const char *const END_FOR[] = {"else", "endfor", NULL};

static tnode *stmt_if(ps *p, const ttok *at) {
    tnode *x = nn(p, N_IF, at);
    x->a = tuple_expr(p, true);
    block_end(p);
    x->list = body(p, END_IF, &x->n, at);
    const ttok *k = cur(p);
    p->i++;
    if (is_name(k, "elif")) {
        tnode *e = stmt_if(p, k);
        x->list2 = palloc(p, sizeof *x->list2);
        x->list2[0] = e;
        x->n2 = 1;
        return x; /* the nested if consumed endif */
    }
    if (is_name(k, "else")) {
        block_end(p);
        static const char *const end[] = {"endif", NULL};
        x->list2 = body(p, end, &x->n2, at);
        p->i++;
    }
    block_end(p);
    return x;
}

static void targets(ps *p, tnode *x) {
    bool paren_ = is_op(cur(p), "(");
    if (paren_) p->i++;
    const char *names[16];
    size_t n = 0;
    for (;;) {
        if (n == IR_ARRAY_LEN(names)) pfail(p, cur(p), "%s", "too many loop targets");
        names[n++] = take_name(p);
        if (!is_op(cur(p), ",")) break;
        p->i++;
    }
    if (paren_) expect_op(p, ")");
    x->names = palloc(p, n * sizeof *x->names);
    memcpy(x->names, names, n * sizeof *names);
    x->nnames = n;
}

static tnode *stmt_for(ps *p, const ttok *at) {
    tnode *x = nn(p, N_FOR, at);
    targets(p, x);
    if (!is_name(cur(p), "in")) pfail(p, cur(p), "%s", "expected 'in'");
    p->i++;
    x->a = tuple_expr(p, false);
    if (is_name(cur(p), "if")) {
        p->i++;
        x->b = expr(p);
    }
    if (is_name(cur(p), "recursive")) pfail(p, cur(p), "%s", "recursive loops are not supported");
    block_end(p);
    x->list = body(p, END_FOR, &x->n, at);
    if (is_name(cur(p), "else")) {
        p->i++;
        block_end(p);
        static const char *const end[] = {"endfor", NULL};
        x->list2 = body(p, end, &x->n2, at);
    }
    p->i++;
    block_end(p);
    return x;
}

static tnode *filters_chain(ps *p, size_t *n) {
    nvec v = {0};
    nv_push(p, &v, filter_one(p, NULL));
    while (is_op(cur(p), "|")) {
        p->i++;
        nv_push(p, &v, filter_one(p, NULL));
    }
    *n = v.n;
    return (tnode *)v.v;
}

static tnode *stmt_set(ps *p, const ttok *at) {
    tnode *x = nn(p, N_SET, at);
    const char *name = take_name(p);
    if (is_op(cur(p), ".")) {
        p->i++;
        x->str = take_name(p);
        x->slen = strlen(x->str);
    } else if (is_op(cur(p), ",")) {
        p->i--;
        targets(p, x);
        expect_op(p, "=");
        x->a = tuple_expr(p, true);
        block_end(p);
        return x;
    }
    x->names = palloc(p, sizeof *x->names);
    x->names[0] = name;
    x->nnames = 1;
    if (is_op(cur(p), "=")) {
        p->i++;
        x->a = tuple_expr(p, true);
        block_end(p);
        return x;
    }
    if (x->str) pfail(p, cur(p), "%s", "expected '='");
    x->kind = N_SETBLK;
    if (is_op(cur(p), "|")) {
        p->i++;
        x->list2 = (tnode **)filters_chain(p, &x->n2);
    }
    block_end(p);
    static const char *const end[] = {"endset", NULL};
    x->list = body(p, end, &x->n, at);
    p->i++;
    block_end(p);
    return x;
}

/* (a, b=default, ...) of a macro or a call block. */
static void params(ps *p, tnode *x) {
    expect_op(p, "(");
    const char *names[64];
    tnode *defs[64];
    size_t n = 0;
    while (!is_op(cur(p), ")")) {
        if (n) expect_op(p, ",");
        if (n == IR_ARRAY_LEN(names)) pfail(p, cur(p), "%s", "too many parameters");
        names[n] = take_name(p);
        defs[n] = NULL;
        if (is_op(cur(p), "=")) {
            p->i++;
            defs[n] = expr(p);
        }
        n++;
    }
    p->i++;
    x->names = palloc(p, (n ? n : 1) * sizeof *x->names);
    x->list2 = palloc(p, (n ? n : 1) * sizeof *x->list2);
    memcpy(x->names, names, n * sizeof *names);
    memcpy(x->list2, defs, n * sizeof *defs);
    x->nnames = x->n2 = n;
}

static tnode *stmt_macro(ps *p, const ttok *at) {
    tnode *x = nn(p, N_MACRO, at);
    x->str = take_name(p);
    x->slen = strlen(x->str);
    params(p, x);
    block_end(p);
    static const char *const end[] = {"endmacro", NULL};
    x->list = body(p, end, &x->n, at);
    p->i++;
    if (cur(p)->t == TK_NAME) p->i++; /* {% endmacro name %} */
    block_end(p);
    return x;
}

static tnode *stmt_call(ps *p, const ttok *at) {
    tnode *x = nn(p, N_CALLBLK, at);
    if (is_op(cur(p), "(")) params(p, x);
    x->a = expr(p);
    if (x->a->kind != E_CALL) pfail(p, at, "%s", "expected a call");
    block_end(p);
    static const char *const end[] = {"endcall", NULL};
    x->list = body(p, end, &x->n, at);
    p->i++;
    block_end(p);
    return x;
}

static tnode *stmt_filter(ps *p, const ttok *at) {
    tnode *x = nn(p, N_FILTBLK, at);
    x->list2 = (tnode **)filters_chain(p, &x->n2);
    block_end(p);
    static const char *const end[] = {"endfilter", NULL};
    x->list = body(p, end, &x->n, at);
    p->i++;
    block_end(p);
    return x;
}

static tnode *stmt_generation(ps *p, const ttok *at) {
    tnode *x = nn(p, N_BLOCK, at);
    block_end(p);
    static const char *const end[] = {"endgeneration", NULL};
    x->list = body(p, end, &x->n, at);
    p->i++;
    block_end(p);
    return x;
}

static tnode *stmt(ps *p) {
    const ttok *k = cur(p);
    if (k->t == TK_TEXT) {
        p->i++;
        tnode *x = nn(p, N_TEXT, k);
        x->str = k->s;
        x->slen = k->n;
        return x;
    }
    if (k->t == TK_VAR_BEGIN) {
        p->i++;
        tnode *x = nn(p, N_OUTPUT, k);
        x->a = tuple_expr(p, true);
        if (cur(p)->t != TK_VAR_END)
            pfail(p, cur(p), "expected end of print statement, got %s", tok_desc(cur(p)));
        p->i++;
        return x;
    }
    if (k->t != TK_BLOCK_BEGIN) pfail(p, k, "unexpected %s", tok_desc(k));
    p->i++;
    const ttok *kw = cur(p);
    if (kw->t != TK_NAME) pfail(p, kw, "%s", "expected a statement name");
    p->i++;
    enter(p);
    tnode *x;
    if (is_name(kw, "if"))
        x = stmt_if(p, kw);
    else if (is_name(kw, "for"))
        x = stmt_for(p, kw);
    else if (is_name(kw, "set"))
        x = stmt_set(p, kw);
    else if (is_name(kw, "macro"))
        x = stmt_macro(p, kw);
    else if (is_name(kw, "call"))
        x = stmt_call(p, kw);
    else if (is_name(kw, "filter"))
        x = stmt_filter(p, kw);
    else if (is_name(kw, "generation"))
        x = stmt_generation(p, kw);
    else if (is_name(kw, "break") || is_name(kw, "continue")) {
        x = nn(p, is_name(kw, "break") ? N_BREAK : N_CONTINUE, kw);
        block_end(p);
    } else {
        char nm[64];
        size_t n = kw->n < sizeof nm - 1 ? kw->n : sizeof nm - 1;
        memcpy(nm, kw->s, n);
        nm[n] = '\0';
        pfail(p, kw, "unknown tag '%s'", nm);
    }
    p->depth--;
    return x;
}

static tnode **body(ps *p, const char *const *ends, size_t *n, const ttok *opened) {
    nvec v = {0};
    for (;;) {
        const ttok *k = cur(p);
        if (k->t == TK_EOF) {
            if (!ends) break;
            size_t last = 0;
            while (ends[last + 1]) last++;
            pfail(p, opened, "unexpected end of template: the block opened here needs '%s'",
                  ends[last]);
        }
        if (k->t == TK_BLOCK_BEGIN && ends) {
            const ttok *nm = &p->t[p->i + 1];
            bool found = false;
            for (size_t j = 0; ends[j]; j++)
                if (is_name(nm, ends[j])) found = true;
            if (found) {
                p->i++;
                break;
            }
        }
        if (k->t == TK_BLOCK_BEGIN) {
            const ttok *nm = &p->t[p->i + 1];
            if (nm->t == TK_NAME && nm->n > 3 && memcmp(nm->s, "end", 3) == 0)
                pfail(p, nm, "%s", "unexpected end tag");
            if (is_name(nm, "elif") || is_name(nm, "else"))
                pfail(p, nm, "%s", "unexpected 'elif' or 'else'");
        }
        nv_push(p, &v, stmt(p));
    }
    *n = v.n;
    return v.v;
}

/* Fails unless the tree under x is at most `left` levels high. The render (eval,
 * exec) and the walks over the tree recurse once a level, and a chain (a|f|f...,
 * a.b.c..., a()()..., 1+1+...) is built in a loop, a level per link, without the
 * nesting that enter() counts: a long one overflowed the render's stack. The
 * recursion here stops at `left` levels. */
static void check_height(ps *p, const tnode *x, int left) {
    if (!x) return;
    if (left <= 0)
        tmpl_fail(p->e, x->line, x->col, "expression nested too deeply (more than %d levels)",
                  p->max_depth);
    const tnode *kids[4] = {x->a, x->b, x->c, x->d};
    for (int k = 0; k < 4; k++) check_height(p, kids[k], left - 1);
    if (x->kind == N_TEXT || x->kind == E_LIT) return; /* n is no count of nodes there */
    for (size_t i = 0; i < x->n; i++) check_height(p, x->list[i], left - 1);
    for (size_t i = 0; i < x->n2; i++) check_height(p, x->list2[i], left - 1);
}

tnode *tmpl_parse(ir_arena *a, terr *e, const ttoks *toks, int max_depth) {
    ps p = {.a = a, .e = e, .t = toks->v, .n = toks->n, .max_depth = max_depth};
    tnode *root = nn(&p, N_BLOCK, &toks->v[0]);
    root->list = body(&p, NULL, &root->n, &toks->v[0]);
    check_height(&p, root, max_depth);
    return root;
}
