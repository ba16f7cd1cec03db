/* prom.c: a reader of the Prometheus text exposition format (0.0.4), for the
 * engines' /metrics pages. It works on bytes in place: no allocation, no copy
 * of the page, no NUL needed at its end. */
#include "load/ir_load.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
static bool name_char(char c) {
    return name_start(c) || (c >= '0' && c <= '9');
}
static bool blank(char c) {
    return c == ' ' || c == '\t';
}

/* A cursor over one line. */
typedef struct cur {
    const char *p, *end;
} cur;

static void skip_blanks(cur *c) {
    while (c->p < c->end && blank(*c->p)) c->p++;
}

/* Reads a metric or label name (label names cannot hold ':'; a page that has
 * one is read anyway); false when there is none. */
static bool read_name(cur *c, const char **name, size_t *len) {
    if (c->p >= c->end || !name_start(*c->p)) return false;
    const char *s = c->p;
    while (c->p < c->end && name_char(*c->p)) c->p++;
    *name = s;
    *len = (size_t)(c->p - s);
    return true;
}

/* A quoted label value: moves past its closing quote. Escapes are \\, \" and \n. */
static bool skip_quoted(cur *c) {
    if (c->p >= c->end || *c->p != '"') return false;
    for (c->p++; c->p < c->end; c->p++) {
        if (*c->p == '\\') {
            if (++c->p >= c->end) return false;
        } else if (*c->p == '"') {
            c->p++;
            return true;
        }
    }
    return false;
}

/* {name="value",...} with an optional trailing comma; c->p is at '{'. */
static bool read_labels(cur *c, const char **labels, size_t *len) {
    const char *start = ++c->p;
    for (;;) {
        skip_blanks(c);
        if (c->p < c->end && *c->p == '}') break;
        const char *n;
        size_t nl;
        if (!read_name(c, &n, &nl)) return false;
        skip_blanks(c);
        if (c->p >= c->end || *c->p++ != '=') return false;
        skip_blanks(c);
        if (!skip_quoted(c)) return false;
        skip_blanks(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p >= c->end || *c->p != '}') return false;
        break;
    }
    *labels = start;
    *len = (size_t)(c->p - start);
    c->p++; /* '}' */
    return true;
}

/* The next blank-separated token, copied NUL-terminated into tok (false when
 * empty or longer than the buffer). */
static bool read_token(cur *c, char *tok, size_t cap) {
    skip_blanks(c);
    const char *s = c->p;
    while (c->p < c->end && !blank(*c->p)) c->p++;
    size_t n = (size_t)(c->p - s);
    if (n == 0 || n >= cap) return false;
    memcpy(tok, s, n);
    tok[n] = '\0';
    return true;
}

/* A sample value: a float as Go's ParseFloat reads it, or Inf/NaN spellings. */
static bool parse_value(const char *tok, double *out) {
    if (strcmp(tok, "+Inf") == 0 || strcmp(tok, "Inf") == 0) return *out = INFINITY, true;
    if (strcmp(tok, "-Inf") == 0) return *out = -INFINITY, true;
    if (strcmp(tok, "NaN") == 0) return *out = NAN, true;
    /* strtod also reads "inf", "nan(...)" and hex; the format has none of them. */
    for (const char *p = tok; *p; p++)
        if (!((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
              *p == '-'))
            return false;
    char *end;
    *out = strtod(tok, &end);
    return end != tok && *end == '\0';
}

static bool parse_timestamp(const char *tok, int64_t *out) {
    const char *p = tok + (*tok == '-');
    if (!*p) return false;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9' || q - p >= 18) return false; /* fits an int64 */
    *out = strtoll(tok, NULL, 10);
    return true;
}

/* Parses one line (no '\n'); false when malformed. */
static bool parse_line(const char *line, size_t n, irl_sample *s) {
    cur c = {line, line + n};
    memset(s, 0, sizeof *s);
    s->labels = "";
    if (!read_name(&c, &s->name, &s->name_len)) return false;
    skip_blanks(&c);
    if (c.p < c.end && *c.p == '{' && !read_labels(&c, &s->labels, &s->labels_len)) return false;
    char tok[64];
    if (!read_token(&c, tok, sizeof tok) || !parse_value(tok, &s->value)) return false;
    skip_blanks(&c);
    if (c.p < c.end) {
        if (!read_token(&c, tok, sizeof tok) || !parse_timestamp(tok, &s->timestamp_ms))
            return false;
        s->has_timestamp = true;
        skip_blanks(&c);
    }
    return c.p == c.end;
}

int irl_prom_parse(const char *page, size_t len, irl_sample_cb cb, void *ud, size_t *malformed) {
    size_t bad = 0;
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0;) {
        const char *nl = memchr(page + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - page) : len;
        size_t n = end - i;
        const char *line = page + i;
        i = end + 1;
        if (n && line[n - 1] == '\r') n--;
        size_t lead = 0;
        while (lead < n && blank(line[lead])) lead++;
        if (lead == n || line[lead] == '#') continue;
        irl_sample s;
        if (n > IRL_PROM_MAX_LINE || !parse_line(line + lead, n - lead, &s)) {
            bad++;
            continue;
        }
        rc = cb ? cb(ud, &s) : 0;
    }
    if (malformed) *malformed = bad;
    return rc;
}

typedef struct sum_ctx {
    const char *family;
    size_t len;
    double sum;
    bool found;
} sum_ctx;

static int add_if_family(void *ud, const irl_sample *s) {
    sum_ctx *x = ud;
    if (s->name_len == x->len && memcmp(s->name, x->family, x->len) == 0) {
        x->sum += s->value;
        x->found = true;
    }
    return 0;
}

double irl_prom_sum(const char *page, size_t len, const char *family) {
    sum_ctx x = {family, strlen(family), 0, false};
    irl_prom_parse(page, len, add_if_family, &x, NULL);
    return x.found ? x.sum : -1;
}

/* Copies a quoted value (c->p at its opening quote) unescaped into out. */
static void copy_unquoted(cur *c, char *out, size_t outlen) {
    size_t k = 0;
    for (c->p++; c->p < c->end && *c->p != '"'; c->p++) {
        char ch = *c->p;
        if (ch == '\\' && c->p + 1 < c->end) {
            ch = *++c->p;
            if (ch == 'n') ch = '\n';
        }
        if (k + 1 < outlen) out[k++] = ch;
    }
    if (outlen) out[k] = '\0';
}

bool irl_prom_label(const irl_sample *s, const char *key, char *out, size_t outlen) {
    cur c = {s->labels, s->labels + s->labels_len};
    size_t kl = strlen(key);
    for (;;) {
        skip_blanks(&c);
        const char *n;
        size_t nl;
        if (!read_name(&c, &n, &nl)) return false;
        skip_blanks(&c);
        c.p++; /* '=', checked when the line was parsed */
        skip_blanks(&c);
        if (nl == kl && memcmp(n, key, kl) == 0) {
            copy_unquoted(&c, out, outlen);
            return true;
        }
        skip_quoted(&c);
        skip_blanks(&c);
        if (c.p < c.end && *c.p == ',') c.p++;
    }
}
