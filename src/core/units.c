/* units.c: duration and size parsing and duration formatting. */
#include "core/ir_core.h"

#include <stdio.h>
#include <string.h>

/* a * b + c with overflow detection. Returns -1 on overflow. */
static int mul_add_u64(uint64_t a, uint64_t b, uint64_t c, uint64_t *out) {
    if (b != 0 && a > UINT64_MAX / b) return -1;
    uint64_t p = a * b;
    if (p > UINT64_MAX - c) return -1;
    *out = p + c;
    return 0;
}

/* Reads decimal digits into *v. Returns the number of digits, or -1 on overflow. */
static int read_digits(const char **sp, uint64_t *v) {
    const char *s = *sp;
    uint64_t acc = 0;
    int n = 0;
    while (*s >= '0' && *s <= '9') {
        if (mul_add_u64(acc, 10, (uint64_t)(*s - '0'), &acc) < 0) return -1;
        s++;
        n++;
    }
    *v = acc;
    *sp = s;
    return n;
}

/* A unit is coef * 10^exp nanoseconds, so fractions can be computed exactly. */
typedef struct dur_unit {
    const char *name;
    uint64_t coef;
    int exp;
} dur_unit;

int ir_parse_duration_ns(const char *s, uint64_t *out_ns) {
    static const dur_unit units[] = {
        {"ns", 1, 0}, {"us", 1, 3}, {"\xc2\xb5s", 1, 3}, {"ms", 1, 6},
        {"s", 1, 9},  {"m", 6, 10}, {"h", 36, 11},
    };
    if (!s || !out_ns) return -1;
    if (strcmp(s, "0") == 0) {
        *out_ns = 0;
        return 0;
    }
    const char *p = s;
    uint64_t ipart;
    if (read_digits(&p, &ipart) <= 0) return -1;
    const char *frac = NULL;
    size_t nfrac = 0;
    if (*p == '.') {
        frac = ++p;
        while (*p >= '0' && *p <= '9') p++;
        nfrac = (size_t)(p - frac);
        if (nfrac == 0) return -1;
    }
    const dur_unit *u = NULL;
    for (size_t i = 0; i < IR_ARRAY_LEN(units); i++) {
        if (strcmp(p, units[i].name) == 0) {
            u = &units[i];
            break;
        }
    }
    if (!u) return -1;

    /* Shift the decimal point right by exp digits, then multiply by coef. The
     * digits left past the point contribute floor(coef * 0.rest). */
    uint64_t shifted = ipart;
    size_t fi = 0;
    for (int k = 0; k < u->exp; k++) {
        uint64_t d = fi < nfrac ? (uint64_t)(frac[fi++] - '0') : 0;
        if (mul_add_u64(shifted, 10, d, &shifted) < 0) return -1;
    }
    uint64_t rest = 0, scale = 1;
    for (int k = 0; fi < nfrac && k < 15; k++, fi++) {
        rest = rest * 10 + (uint64_t)(frac[fi] - '0');
        scale *= 10;
    }
    uint64_t total;
    if (mul_add_u64(shifted, u->coef, u->coef * rest / scale, &total) < 0) return -1;
    *out_ns = total;
    return 0;
}

int ir_parse_size(const char *s, uint64_t *out_bytes) {
    static const struct {
        const char *name;
        uint64_t mult;
    } units[] = {
        {"", 1},
        {"B", 1},
        {"KB", 1000},
        {"kB", 1000},
        {"MB", 1000 * 1000},
        {"GB", 1000 * 1000 * 1000},
        {"KiB", 1024},
        {"MiB", 1024 * 1024},
        {"GiB", 1024 * 1024 * 1024},
    };
    if (!s || !out_bytes) return -1;
    const char *p = s;
    uint64_t v;
    if (read_digits(&p, &v) <= 0) return -1;
    for (size_t i = 0; i < IR_ARRAY_LEN(units); i++) {
        if (strcmp(p, units[i].name) == 0) {
            uint64_t r;
            if (mul_add_u64(v, units[i].mult, 0, &r) < 0) return -1;
            *out_bytes = r;
            return 0;
        }
    }
    return -1;
}

void ir_format_duration(uint64_t ns, char *out, size_t outlen) {
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {
        {"h", 3600000000000ull}, {"m", 60000000000ull}, {"s", 1000000000ull},
        {"ms", 1000000ull},      {"us", 1000ull},       {"ns", 1},
    };
    if (!out || outlen == 0) return;
    if (ns == 0) {
        snprintf(out, outlen, "0s");
        return;
    }
    for (size_t i = 0; i < IR_ARRAY_LEN(units); i++) {
        if (ns % units[i].ns == 0) {
            snprintf(out, outlen, "%llu%s", (unsigned long long)(ns / units[i].ns), units[i].name);
            return;
        }
    }
}
