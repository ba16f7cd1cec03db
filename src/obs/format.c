/* format.c: numbers and escapes of the text exposition format. */
#include "obs/ir_obs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void iro_escape_label(ir_buf *o, const char *s) {
    for (const char *run = s;; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '"' ? "\\\"" : *s == '\n' ? "\\n" : NULL;
        if (!esc && *s) continue;
        ir_buf_append(o, run, (size_t)(s - run));
        if (!*s) return;
        ir_buf_append(o, esc, 2);
        run = s + 1;
    }
}

void iro_escape_help(ir_buf *o, const char *s) {
    for (const char *run = s;; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '\n' ? "\\n" : NULL;
        if (!esc && *s) continue;
        ir_buf_append(o, run, (size_t)(s - run));
        if (!*s) return;
        ir_buf_append(o, esc, 2);
        run = s + 1;
    }
}

/* The shortest %e form of d that reads back exactly: its digits and exponent. */
static int shortest(double d, char digits[24], size_t *nd, bool *neg) {
    char e[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec, d);
        if (strtod(e, NULL) == d) break;
    }
    const char *p = e;
    *neg = *p == '-';
    if (*neg) p++;
    *nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[(*nd)++] = *p;
    digits[*nd] = '\0';
    return atoi(p + 1);
}

/* Python's repr() of a float. */
static void python_repr(double d, char *s, size_t cap) {
    char digits[24];
    size_t nd, k = 0;
    bool neg;
    int exp = shortest(d, digits, &nd, &neg);
    if (neg) s[k++] = '-';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            s[k++] = '0';
            s[k++] = '.';
            for (int i = 0; i < -exp - 1; i++) s[k++] = '0';
            for (size_t i = 0; i < nd; i++) s[k++] = digits[i];
        } else {
            for (int i = 0; i <= exp; i++) s[k++] = (size_t)i < nd ? digits[i] : '0';
            s[k++] = '.';
            if ((size_t)exp + 1 < nd)
                for (size_t i = (size_t)exp + 1; i < nd; i++) s[k++] = digits[i];
            else
                s[k++] = '0';
        }
        s[k] = '\0';
        return;
    }
    s[k++] = digits[0];
    if (nd > 1) {
        s[k++] = '.';
        for (size_t i = 1; i < nd; i++) s[k++] = digits[i];
    }
    snprintf(s + k, cap - k, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
}

/* prometheus_client: positive values with more than six integer digits switch
 * to Go's exponent form (1.5e+07). */
static void python_value(double d, char *out, size_t n) {
    char s[64];
    python_repr(d, s, sizeof s);
    const char *dot = strchr(s, '.');
    if (d > 0 && dot && !strchr(s, 'e') && dot - s > 6) {
        size_t ip = (size_t)(dot - s), mk = 0;
        char m[64];
        m[mk++] = s[0];
        m[mk++] = '.';
        for (size_t i = 1; i < ip; i++) m[mk++] = s[i];
        for (const char *q = dot + 1; *q; q++) m[mk++] = *q;
        m[mk] = '\0';
        while (mk > 0 && (m[mk - 1] == '0' || m[mk - 1] == '.')) m[--mk] = '\0';
        snprintf(out, n, "%se+0%zu", m, ip - 1);
        return;
    }
    snprintf(out, n, "%s", s);
}

void iro_format_value(double v, iro_format fmt, char *out, size_t n) {
    if (isinf(v)) {
        snprintf(out, n, v > 0 ? "+Inf" : "-Inf");
    } else if (isnan(v)) {
        snprintf(out, n, "NaN");
    } else if (fmt == IRO_FMT_PYTHON) {
        python_value(v, out, n);
    } else if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(out, n, "%.0f", v);
    } else {
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(out, n, "%.*g", prec, v);
            if (strtod(out, NULL) == v) break;
        }
    }
}
