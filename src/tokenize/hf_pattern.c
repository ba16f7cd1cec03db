/* hf_pattern.c: Split/Replace patterns. Literals use memmem; regexes run on
 * PCRE2 with JIT, translated from the Oniguruma dialect tokenizers uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/hf_internal.h"

/* Oniguruma's \s is Unicode White_Space, which includes U+0085; PCRE2's \s
 * under UCP does not. Rewrites \s and \S so both agree. */
static int translate(const char *re, size_t len, hf_buf *out) {
    bool in_class = false;
    for (size_t i = 0; i < len; i++) {
        char c = re[i];
        if (c == '\\' && i + 1 < len) {
            char d = re[i + 1];
            int rc;
            if (d == 's')
                rc = hf_buf_add(out, in_class ? "\\s\\x{85}" : "[\\s\\x{85}]", in_class ? 8 : 10);
            else if (d == 'S' && !in_class)
                rc = hf_buf_add(out, "[^\\s\\x{85}]", 11);
            else
                rc = hf_buf_add(out, re + i, 2);
            if (rc) return -1;
            i++;
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            if (hf_buf_addc(out, c)) return -1;
            /* A ']' right after '[' or '[^' is literal. */
            if (i + 1 < len && re[i + 1] == '^') {
                if (hf_buf_addc(out, '^')) return -1;
                i++;
            }
            if (i + 1 < len && re[i + 1] == ']') {
                if (hf_buf_addc(out, ']')) return -1;
                i++;
            }
            continue;
        }
        if (in_class && c == '[' && i + 1 < len && re[i + 1] == ':') {
            const char *e = memchr(re + i + 2, ']', len - i - 2);
            if (e) {
                size_t n = (size_t)(e - (re + i)) + 1;
                if (hf_buf_add(out, re + i, n)) return -1;
                i += n - 1;
                continue;
            }
        }
        if (in_class && c == ']') in_class = false;
        if (hf_buf_addc(out, c)) return -1;
    }
    return hf_buf_addc(out, 0) ? -1 : 0;
}

int hf_pattern_compile(hf_pattern *p, const char *re, size_t len, bool literal, char *err,
                       size_t errlen) {
    memset(p, 0, sizeof(*p));
    if (literal) {
        p->lit = malloc(len + 1);
        if (!p->lit) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memcpy(p->lit, re, len);
        p->lit[len] = 0;
        p->litlen = len;
        return 0;
    }
    p->fast = hf_fast_detect(re, len);
    hf_buf t = {0};
    if (translate(re, len, &t)) {
        hf_buf_free(&t);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int ec;
    PCRE2_SIZE eo;
    p->re = pcre2_compile((PCRE2_SPTR)t.p, t.len - 1, PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK,
                          &ec, &eo, NULL);
    hf_buf_free(&t);
    if (!p->re) {
        char msg[160];
        pcre2_get_error_message(ec, (PCRE2_UCHAR *)msg, sizeof(msg));
        snprintf(err, errlen, "bad regex at offset %zu: %s", (size_t)eo, msg);
        return -1;
    }
    pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
    return 0;
}

void hf_pattern_free(hf_pattern *p) {
    free(p->lit);
    if (p->re) pcre2_code_free(p->re);
    memset(p, 0, sizeof(*p));
}

static int push(hf_match **m, size_t *n, size_t *cap, size_t s, size_t e) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        hf_match *x = realloc(*m, c * sizeof(*x));
        if (!x) return -1;
        *m = x;
        *cap = c;
    }
    (*m)[(*n)++] = (hf_match){s, e};
    return 0;
}

static int re_match(const hf_pattern *p, const char *s, size_t len, size_t pos,
                    pcre2_match_data *md, size_t *ms, size_t *me) {
    int rc = pcre2_match(p->re, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its frames on the heap */
        rc = pcre2_match(p->re, (PCRE2_SPTR)s, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                         NULL);
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc < 0) return -1;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *ms = ov[0];
    *me = ov[1];
    return 1;
}

int hf_pattern_find_some(const hf_pattern *p, const char *s, size_t len, hf_find *f, size_t max,
                         hf_match **m, size_t *n, size_t *cap, pcre2_match_data *md) {
    *n = 0;
    if (!f->started) {
        f->started = true;
        f->pos = 0;
        f->last_end = SIZE_MAX;
    }
    if (p->lit) {
        if (!p->litlen) f->done = true;
        while (!f->done && *n < max) {
            const char *at =
                f->pos < len ? memmem(s + f->pos, len - f->pos, p->lit, p->litlen) : NULL;
            if (!at) {
                f->done = true;
                break;
            }
            size_t st = (size_t)(at - s);
            if (push(m, n, cap, st, st + p->litlen)) return -1;
            f->pos = st + p->litlen;
        }
        return 0;
    }
    while (!f->done && *n < max) {
        if (f->pos > len) {
            f->done = true;
            break;
        }
        size_t ms, me;
        int rc;
        rc = p->fast ? hf_fast_next(p->fast, (const unsigned char *)s, len, f->pos, &ms, &me) : -1;
        if (rc < 0) rc = re_match(p, s, len, f->pos, md, &ms, &me);
        if (rc < 0) return -1;
        if (!rc) {
            f->done = true;
            break;
        }
        if (ms == me) {
            /* Empty matches never touch the previous match's end. */
            if (me != f->last_end && push(m, n, cap, ms, me)) return -1;
            if (me >= len) f->done = true;
            f->pos = me >= len ? me : me + (size_t)hf_utf8_len((unsigned char)s[me]);
        } else {
            if (push(m, n, cap, ms, me)) return -1;
            f->pos = me;
        }
        f->last_end = me;
    }
    return 0;
}

int hf_pattern_find(const hf_pattern *p, const char *s, size_t len, hf_match **m, size_t *n,
                    size_t *cap, pcre2_match_data *md) {
    hf_find f = {0};
    return hf_pattern_find_some(p, s, len, &f, SIZE_MAX, m, n, cap, md);
}
