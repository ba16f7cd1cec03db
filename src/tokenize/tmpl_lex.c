/* tmpl_lex.c: the Jinja2 lexer, with transformers' environment settings.
 *
 * Newlines are normalised to \n and one trailing newline is dropped
 * (keep_trailing_newline=False). Text between tags gets Jinja's whitespace
 * rules: `-` strips all white space on its side, trim_blocks drops the first
 * newline after a block or comment tag, lstrip_blocks drops the spaces and
 * tabs between a line's start and a block or comment tag, and `+` turns the
 * last two off for one tag. {% raw %} bodies are text. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tokenize/tmpl_internal.h"

typedef struct lx {
    ir_arena *a;
    terr *e;
    const char *s;
    size_t n, i;
    ttoks *out;
    int line;
    size_t line_start;
    size_t scanned; /* s[0, scanned) is counted into line and line_start */
} lx;

/* Line numbers advance monotonically as the lexer moves forward, and each byte is
 * looked at once: a template on one line was searched for a newline from its start
 * at every token, a 1 MiB one took seconds to compile. */
static void lx_pos(lx *l, size_t at, int *line, int *col) {
    if (at > l->scanned) {
        const char *p = l->s + l->scanned, *end = l->s + at;
        while ((p = memchr(p, '\n', (size_t)(end - p)))) {
            l->line++;
            l->line_start = (size_t)(++p - l->s);
        }
        l->scanned = at;
    }
    *line = l->line;
    *col = (int)(at - l->line_start) + 1;
}

static ttok *lx_push(lx *l, tk_type t, size_t at) {
    ttoks *v = l->out;
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 256;
        ttok *nv = ir_arena_alloc(l->a, nc * sizeof *nv);
        if (!nv) tmpl_fail(l->e, 0, 0, "out of memory");
        if (v->n) memcpy(nv, v->v, v->n * sizeof *nv);
        v->v = nv;
        v->cap = nc;
    }
    ttok *k = &v->v[v->n++];
    memset(k, 0, sizeof *k);
    k->t = (uint8_t)t;
    lx_pos(l, at, &k->line, &k->col);
    return k;
}

static _Noreturn void lx_fail(lx *l, size_t at, const char *msg) {
    int line, col;
    lx_pos(l, at, &line, &col);
    tmpl_fail(l->e, line, col, "%s", msg);
}

static bool is_ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Emits text s[from, to) after the left-strip rules of the tag that follows. */
static void lx_text(lx *l, size_t from, size_t to, char mod, bool var_tag) {
    if (mod == '-') {
        while (to > from && is_ws(l->s[to - 1])) to--;
    } else if (mod != '+' && !var_tag) {
        size_t lp = to;
        while (lp > from && l->s[lp - 1] != '\n') lp--;
        bool line_starting = from == 0 || l->s[from - 1] == '\n';
        if (lp > from || line_starting) {
            bool only_ws = lp < to;
            for (size_t k = lp; k < to && only_ws; k++)
                if (!is_ws(l->s[k])) only_ws = false;
            if (only_ws) to = lp;
        }
    }
    if (to > from) {
        ttok *k = lx_push(l, TK_TEXT, from);
        k->s = l->s + from;
        k->n = to - from;
    }
}

/* A string literal at l->i (a quote); Python's unicode-escape rules. */
static void lx_string(lx *l) {
    size_t start = l->i;
    char q = l->s[l->i++];
    tsb b;
    tsb_init(&b, l->a, l->e, l->n + 16);
    for (;;) {
        if (l->i >= l->n) lx_fail(l, start, "unexpected end of string");
        char c = l->s[l->i];
        if (c == q) {
            l->i++;
            break;
        }
        if (c != '\\') {
            tsb_addc(&b, c);
            l->i++;
            continue;
        }
        if (l->i + 1 >= l->n) lx_fail(l, start, "unexpected end of string");
        char d = l->s[l->i + 1];
        l->i += 2;
        switch (d) {
        case '\n':
            break;
        case '\\':
            tsb_addc(&b, '\\');
            break;
        case '\'':
            tsb_addc(&b, '\'');
            break;
        case '"':
            tsb_addc(&b, '"');
            break;
        case 'n':
            tsb_addc(&b, '\n');
            break;
        case 't':
            tsb_addc(&b, '\t');
            break;
        case 'r':
            tsb_addc(&b, '\r');
            break;
        case 'b':
            tsb_addc(&b, '\b');
            break;
        case 'f':
            tsb_addc(&b, '\f');
            break;
        case 'v':
            tsb_addc(&b, '\v');
            break;
        case 'a':
            tsb_addc(&b, '\a');
            break;
        case 'x':
        case 'u':
        case 'U': {
            int want = d == 'x' ? 2 : d == 'u' ? 4 : 8;
            uint32_t cp = 0;
            for (int k = 0; k < want; k++) {
                int h = l->i < l->n ? ir_hexval(l->s[l->i]) : -1;
                if (h < 0) lx_fail(l, start, "truncated \\x, \\u or \\U escape in a string");
                cp = cp * 16 + (uint32_t)h;
                l->i++;
            }
            if (cp > 0x10FFFF) lx_fail(l, start, "illegal Unicode character in a string");
            tsb_cp(&b, cp);
            break;
        }
        default:
            if (d >= '0' && d <= '7') {
                uint32_t cp = (uint32_t)(d - '0');
                for (int k = 0; k < 2 && l->i < l->n && l->s[l->i] >= '0' && l->s[l->i] <= '7'; k++)
                    cp = cp * 8 + (uint32_t)(l->s[l->i++] - '0');
                tsb_cp(&b, cp);
            } else {
                tsb_addc(&b, '\\');
                tsb_addc(&b, d);
            }
        }
    }
    ttok *k = lx_push(l, TK_STRING, start);
    k->s = b.p ? b.p : "";
    k->n = b.n;
}

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

static bool is_name(char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!first && is_digit(c));
}

#define LX_STR2(x)      #x
#define LX_STR(x)       LX_STR2(x)
#define BIG_LITERAL_MSG "integer literal of more than " LX_STR(TMPL_BIG_DIGITS) " digits"

/* An integer literal past int64 (digits in buf, no '_'): its canonical
 * digits in the arena, as Python reads it into a big int. */
static void lx_big(lx *l, ttok *k, const char *buf, size_t bn, size_t start) {
    if (bn > TMPL_BIG_DIGITS) lx_fail(l, start, BIG_LITERAL_MSG);
    char *p = ir_arena_alloc(l->a, bn + 1);
    if (!p) tmpl_fail(l->e, 0, 0, "out of memory");
    memcpy(p, buf, bn);
    p[bn] = '\0';
    k->big = p;
    k->bign = bn;
}

static void lx_number(lx *l) {
    size_t start = l->i;
    char buf[TMPL_BIG_DIGITS + 128];
    size_t bn = 0;
    bool fl = false;
    while (l->i < l->n && (is_digit(l->s[l->i]) || l->s[l->i] == '_')) {
        if (l->s[l->i] != '_' && bn < sizeof buf - 1) buf[bn++] = l->s[l->i];
        l->i++;
    }
    if (l->i + 1 < l->n && l->s[l->i] == '.' && is_digit(l->s[l->i + 1])) {
        fl = true;
        buf[bn++] = '.';
        l->i++;
        while (l->i < l->n && (is_digit(l->s[l->i]) || l->s[l->i] == '_')) {
            if (l->s[l->i] != '_' && bn < sizeof buf - 1) buf[bn++] = l->s[l->i];
            l->i++;
        }
    }
    if (l->i < l->n && (l->s[l->i] == 'e' || l->s[l->i] == 'E')) {
        size_t j = l->i + 1;
        if (j < l->n && (l->s[j] == '+' || l->s[j] == '-')) j++;
        if (j < l->n && is_digit(l->s[j])) {
            fl = true;
            while (l->i < j && bn < sizeof buf - 1) buf[bn++] = l->s[l->i++];
            while (l->i < l->n && is_digit(l->s[l->i]) && bn < sizeof buf - 1)
                buf[bn++] = l->s[l->i++];
        }
    }
    buf[bn] = '\0';
    ttok *k = lx_push(l, fl ? TK_FLOAT : TK_INT, start);
    if (fl) {
        k->f = strtod(buf, NULL);
    } else {
        char *end;
        if (bn >= sizeof buf - 1) lx_fail(l, start, BIG_LITERAL_MSG);
        const char *d = buf; /* without leading zeros */
        while (bn > 1 && d[0] == '0') {
            d++;
            bn--;
        }
        unsigned long long v = strtoull(d, &end, 10);
        if (bn > 18 && (bn > 19 || v > (unsigned long long)INT64_MAX))
            lx_big(l, k, d, bn, start);
        else
            k->i = (int64_t)v;
    }
}

static const char *const ops2[] = {"//", "**", "==", "!=", "<=", ">="};
static const char ops1[] = "+-*/%~()[]{}.,:|=<>";

/* Tokens inside a tag, up to its end marker. Returns the end's modifier
 * ('-', '+' or 0) and moves past the marker. */
static char lx_tag(lx *l, bool var, size_t tag_at) {
    int depth = 0;
    char endc = var ? '}' : '%';
    for (;;) {
        while (l->i < l->n && is_ws(l->s[l->i])) l->i++;
        if (l->i >= l->n)
            lx_fail(l, tag_at,
                    var ? "unexpected end of template, expected '}}'"
                        : "unexpected end of template, expected '%}'");
        const char *p = l->s + l->i;
        size_t left = l->n - l->i;
        if (depth == 0) {
            if (left >= 3 && (p[0] == '-' || p[0] == '+') && p[1] == endc && p[2] == '}') {
                l->i += 3;
                return p[0];
            }
            if (left >= 2 && p[0] == endc && p[1] == '}') {
                l->i += 2;
                return 0;
            }
        }
        char c = *p;
        if (c == '\'' || c == '"') {
            lx_string(l);
        } else if (is_digit(c)) {
            lx_number(l);
        } else if (is_name(c, true)) {
            size_t st = l->i;
            while (l->i < l->n && is_name(l->s[l->i], false)) l->i++;
            ttok *k = lx_push(l, TK_NAME, st);
            k->s = l->s + st;
            k->n = l->i - st;
        } else {
            size_t oplen = 0;
            for (size_t k = 0; k < IR_ARRAY_LEN(ops2); k++)
                if (left >= 2 && memcmp(p, ops2[k], 2) == 0) oplen = 2;
            if (!oplen && strchr(ops1, c) && c) oplen = 1;
            if (!oplen) lx_fail(l, l->i, "unexpected character in a tag");
            if (c == '(' || c == '[' || c == '{') depth++;
            if ((c == ')' || c == ']' || c == '}') && depth > 0) depth--;
            ttok *k = lx_push(l, TK_OP, l->i);
            k->s = p;
            k->n = oplen;
            l->i += oplen;
        }
    }
}

/* After a tag: `-` eats all white space, trim_blocks one newline. */
static void lx_after(lx *l, char mod, bool block) {
    if (mod == '-') {
        while (l->i < l->n && is_ws(l->s[l->i])) l->i++;
    } else if (mod != '+' && block && l->i < l->n && l->s[l->i] == '\n') {
        l->i++;
    }
}

/* The body of {% raw %}: text up to {% endraw %}. */
static void lx_raw(lx *l, size_t tag_at) {
    size_t from = l->i;
    for (size_t j = l->i; j + 1 < l->n; j++) {
        if (l->s[j] != '{' || l->s[j + 1] != '%') continue;
        size_t k = j + 2;
        char mod = 0;
        if (k < l->n && (l->s[k] == '-' || l->s[k] == '+')) mod = l->s[k++];
        while (k < l->n && is_ws(l->s[k])) k++;
        if (l->n - k < 6 || memcmp(l->s + k, "endraw", 6) != 0) continue;
        k += 6;
        while (k < l->n && is_ws(l->s[k])) k++;
        char emod = 0;
        if (k < l->n && (l->s[k] == '-' || l->s[k] == '+')) emod = l->s[k++];
        if (l->n - k < 2 || l->s[k] != '%' || l->s[k + 1] != '}') continue;
        lx_text(l, from, j, mod, false);
        l->i = k + 2;
        lx_after(l, emod, true);
        return;
    }
    lx_fail(l, tag_at, "missing end of raw directive");
}

/* Finds the next tag start at or after from; returns its offset or n. */
static size_t next_tag(const lx *l, size_t from) {
    for (size_t j = from; j + 1 < l->n; j++) {
        const char *p = memchr(l->s + j, '{', l->n - j - 1);
        if (!p) return l->n;
        j = (size_t)(p - l->s);
        char c = l->s[j + 1];
        if (c == '{' || c == '%' || c == '#') return j;
    }
    return l->n;
}

static void lx_comment(lx *l, size_t at) {
    for (size_t j = l->i; j + 1 < l->n; j++) {
        if (l->s[j] == '#' && l->s[j + 1] == '}') {
            char mod = j > l->i && (l->s[j - 1] == '-' || l->s[j - 1] == '+') ? l->s[j - 1] : 0;
            l->i = j + 2;
            lx_after(l, mod, true);
            return;
        }
    }
    lx_fail(l, at, "missing end of comment tag");
}

/* Newlines normalised, one trailing newline dropped. */
static const char *normalise(ir_arena *a, terr *e, const char *src, size_t len, size_t *outlen) {
    char *d = ir_arena_alloc(a, len + 1);
    if (!d) tmpl_fail(e, 0, 0, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            d[n++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            d[n++] = src[i];
        }
    }
    if (n && d[n - 1] == '\n') n--;
    d[n] = '\0';
    *outlen = n;
    return d;
}

void tmpl_lex(ir_arena *a, terr *e, const char *src, size_t len, ttoks *toks) {
    lx l = {.a = a, .e = e, .out = toks, .line = 1};
    l.s = normalise(a, e, src, len, &l.n);
    while (l.i < l.n) {
        size_t t = next_tag(&l, l.i);
        if (t >= l.n) {
            lx_text(&l, l.i, l.n, '+', true);
            break;
        }
        char kind = l.s[t + 1];
        char mod = t + 2 < l.n && (l.s[t + 2] == '-' || l.s[t + 2] == '+') ? l.s[t + 2] : 0;
        lx_text(&l, l.i, t, mod, kind == '{');
        l.i = t + 2 + (mod ? 1 : 0);
        if (kind == '#') {
            lx_comment(&l, t);
            continue;
        }
        size_t first = toks->n;
        lx_push(&l, kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN, t);
        char emod = lx_tag(&l, kind == '{', t);
        lx_push(&l, kind == '{' ? TK_VAR_END : TK_BLOCK_END, l.i - 2);
        if (kind == '%' && toks->n == first + 3 && toks->v[first + 1].t == TK_NAME &&
            toks->v[first + 1].n == 3 && memcmp(toks->v[first + 1].s, "raw", 3) == 0) {
            /* {% raw %} keeps the newline after it (only `-` strips there) */
            toks->n = first;
            if (emod == '-') lx_after(&l, emod, true);
            lx_raw(&l, t);
            continue;
        }
        lx_after(&l, emod, kind == '%');
    }
    lx_push(&l, TK_EOF, l.n);
}
