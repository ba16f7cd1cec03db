/* tmpl_strings.c: Python's str operations on UTF-8 (case mapping, strip,
 * split, splitlines, find, replace), shared by the filters and the methods. */
#include <string.h>
#include <utf8proc.h>

#include "tokenize/tmpl_strings.h"

static bool cased(uint32_t cp) {
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT;
}

/* Full upper case of one code point as CPython maps it (the special cases
 * that matter in text; utf8proc gives the simple mappings). */
static void add_upper(tsb *b, uint32_t cp) {
    switch (cp) {
    case 0xDF:
        tsb_adds(b, "SS");
        return;
    case 0xFB00:
        tsb_adds(b, "FF");
        return;
    case 0xFB01:
        tsb_adds(b, "FI");
        return;
    case 0xFB02:
        tsb_adds(b, "FL");
        return;
    case 0xFB03:
        tsb_adds(b, "FFI");
        return;
    case 0xFB04:
        tsb_adds(b, "FFL");
        return;
    case 0x149:
        tsb_adds(b, "\xCA\xBCN");
        return;
    default:
        tsb_cp(b, (uint32_t)utf8proc_toupper((utf8proc_int32_t)cp));
    }
}

static bool final_sigma(const char *s, size_t n, size_t at, size_t after);

/* Lower case of the code point at s[st, i) (the context decides a final sigma). */
static void add_lower_at(tsb *b, const char *s, size_t n, size_t st, size_t i, uint32_t cp) {
    if (cp == 0x3A3 && final_sigma(s, n, st, i)) {
        tsb_cp(b, 0x3C2);
        return;
    }
    if (cp == 0x130) {
        tsb_adds(b, "i\xCC\x87");
        return;
    }
    tsb_cp(b, (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp));
}

static void add_title(tsb *b, uint32_t cp) {
    switch (cp) {
    case 0xDF:
        tsb_adds(b, "Ss");
        return;
    case 0xFB01:
        tsb_adds(b, "Fi");
        return;
    case 0xFB02:
        tsb_adds(b, "Fl");
        return;
    default:
        tsb_cp(b, (uint32_t)utf8proc_totitle((utf8proc_int32_t)cp));
    }
}

/* Python's final-sigma rule for lower(): a capital sigma preceded by a cased
 * letter and not followed by one (case-ignorable marks skipped on both sides)
 * becomes a final sigma. */
static bool ignorable(uint32_t c) {
    utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
    return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
           k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK || c == '\'' || c == '.' ||
           c == ':' || c == 0xAD || c == 0x2019;
}

static bool final_sigma(const char *s, size_t n, size_t at, size_t after) {
    bool before = false;
    size_t j = at;
    while (j > 0) {
        size_t st = j - 1;
        while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
        size_t k = st;
        uint32_t c = tmpl_utf8_next(s, n, &k);
        j = st;
        if (ignorable(c)) continue;
        before = cased(c);
        break;
    }
    if (!before) return false;
    for (size_t i = after; i < n;) {
        uint32_t c = tmpl_utf8_next(s, n, &i);
        if (ignorable(c)) continue;
        return !cased(c);
    }
    return true;
}

void ts_case(tsb *b, const char *s, size_t n, ts_casemode mode) {
    bool prev_cased = false, first = true, prev_sep = true;
    for (size_t i = 0; i < n;) {
        size_t st = i;
        uint32_t cp = tmpl_utf8_next(s, n, &i);
        if (cp < 0x80 && mode != TS_TITLE_JINJA) { /* fast path */
            char c = (char)cp;
            bool up = mode == TS_UPPER ||
                      ((mode == TS_TITLE && !prev_cased) || (mode == TS_CAPITALIZE && first));
            if (up && c >= 'a' && c <= 'z') c = (char)(c - 32);
            if (!up && c >= 'A' && c <= 'Z') c = (char)(c + 32);
            tsb_addc(b, c);
            prev_cased = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
            first = false;
            continue;
        }
        switch (mode) {
        case TS_UPPER:
            add_upper(b, cp);
            break;
        case TS_LOWER:
            add_lower_at(b, s, n, st, i, cp);
            break;
        case TS_TITLE:
            if (prev_cased)
                add_lower_at(b, s, n, st, i, cp);
            else
                add_title(b, cp);
            break;
        case TS_CAPITALIZE:
            if (first)
                add_title(b, cp);
            else
                add_lower_at(b, s, n, st, i, cp);
            break;
        case TS_TITLE_JINJA: {
            bool sep =
                cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || tmpl_isspace(cp);
            if (prev_sep && !sep)
                add_upper(b, cp);
            else
                add_lower_at(b, s, n, st, i, cp);
            prev_sep = sep;
            break;
        }
        }
        prev_cased = cased(cp);
        first = false;
    }
}

static bool in_chars(uint32_t cp, const char *chars, size_t cn) {
    for (size_t i = 0; i < cn;)
        if (tmpl_utf8_next(chars, cn, &i) == cp) return true;
    return false;
}

void ts_strip(const char *s, size_t n, const char *chars, size_t cn, bool left, bool right,
              size_t *from, size_t *to) {
    size_t a = 0, z = n;
    if (left)
        while (a < z) {
            size_t i = a;
            uint32_t cp = tmpl_utf8_next(s, n, &i);
            if (chars ? !in_chars(cp, chars, cn) : !tmpl_isspace(cp)) break;
            a = i;
        }
    if (right)
        while (z > a) {
            size_t st = z - 1;
            while (st > a && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
            size_t i = st;
            uint32_t cp = tmpl_utf8_next(s, n, &i);
            if (chars ? !in_chars(cp, chars, cn) : !tmpl_isspace(cp)) break;
            z = st;
        }
    *from = a;
    *to = z;
}

const char *ts_find(const char *s, size_t n, const char *sub, size_t sn) {
    if (!sn) return s;
    if (sn > n) return NULL;
    for (size_t i = 0; i + sn <= n; i++) {
        const char *p = memchr(s + i, sub[0], n - sn - i + 1);
        if (!p) return NULL;
        if (memcmp(p, sub, sn) == 0) return p;
        i = (size_t)(p - s);
    }
    return NULL;
}

const char *ts_rfind(const char *s, size_t n, const char *sub, size_t sn) {
    if (sn > n) return NULL;
    for (size_t i = n - sn + 1; i-- > 0;)
        if (memcmp(s + i, sub, sn) == 0) return s + i;
    return NULL;
}

size_t ts_count(const char *s, size_t n, const char *sub, size_t sn) {
    if (!sn) return tmpl_utf8_len(s, n) + 1;
    size_t c = 0;
    const char *p = s, *end = s + n;
    while ((p = ts_find(p, (size_t)(end - p), sub, sn))) {
        c++;
        p += sn;
    }
    return c;
}

/* Python's str.splitlines boundaries: \n \r \r\n \v \f \x1c \x1d \x1e \x85 \u2028 \u2029. */
static size_t line_break(const char *s, size_t n, size_t i) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\r') return i + 1 < n && s[i + 1] == '\n' ? 2 : 1;
    if (c == '\n' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) return 1;
    if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] == 0x85) return 2;
    if (c == 0xE2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
        ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9))
        return 3;
    return 0;
}

void ts_splitlines(const char *s, size_t n, bool keepends, ts_piece_fn fn, void *ctx) {
    size_t st = 0;
    for (size_t i = 0; i < n;) {
        size_t br = line_break(s, n, i);
        if (!br) {
            i++;
            continue;
        }
        fn(ctx, s + st, (keepends ? i + br : i) - st);
        i += br;
        st = i;
    }
    if (st < n) fn(ctx, s + st, n - st);
}

void ts_split(const char *s, size_t n, const char *sep, size_t sn, int64_t maxsplit, bool right,
              ts_piece_fn fn, void *ctx) {
    if (sep) {
        if (!right) {
            const char *p = s, *end = s + n, *q;
            while (maxsplit != 0 && (q = ts_find(p, (size_t)(end - p), sep, sn))) {
                fn(ctx, p, (size_t)(q - p));
                p = q + sn;
                if (maxsplit > 0) maxsplit--;
            }
            fn(ctx, p, (size_t)(end - p));
        } else {
            /* collect from the right, then emit in order */
            size_t cuts[256], nc = 0, end = n;
            while (maxsplit != 0 && nc < 256) {
                const char *q = ts_rfind(s, end, sep, sn);
                if (!q) break;
                cuts[nc++] = (size_t)(q - s);
                end = (size_t)(q - s);
                if (maxsplit > 0) maxsplit--;
            }
            size_t st = 0;
            for (size_t k = nc; k-- > 0;) {
                fn(ctx, s + st, cuts[k] - st);
                st = cuts[k] + sn;
            }
            fn(ctx, s + st, n - st);
        }
        return;
    }
    /* runs of white space; no empty pieces */
    size_t i = 0;
    if (right) {
        size_t pieces[256][2], np = 0, z = n;
        while (z > 0 && np < 256) {
            size_t a0, a1;
            ts_strip(s, z, NULL, 0, false, true, &a0, &a1);
            z = a1;
            if (!z) break;
            if (maxsplit == 0) {
                pieces[np][0] = 0;
                pieces[np++][1] = z;
                z = 0;
                break;
            }
            size_t st = z;
            while (st > 0) {
                size_t b = st - 1;
                while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
                size_t k = b;
                if (tmpl_isspace(tmpl_utf8_next(s, n, &k))) break;
                st = b;
            }
            pieces[np][0] = st;
            pieces[np++][1] = z;
            z = st;
            if (maxsplit > 0) maxsplit--;
        }
        for (size_t k = np; k-- > 0;) fn(ctx, s + pieces[k][0], pieces[k][1] - pieces[k][0]);
        return;
    }
    for (;;) {
        while (i < n) {
            size_t k = i;
            if (!tmpl_isspace(tmpl_utf8_next(s, n, &k))) break;
            i = k;
        }
        if (i >= n) return;
        if (maxsplit == 0) {
            size_t a0, a1;
            ts_strip(s + i, n - i, NULL, 0, false, true, &a0, &a1);
            fn(ctx, s + i, a1);
            return;
        }
        size_t st = i;
        while (i < n) {
            size_t k = i;
            if (tmpl_isspace(tmpl_utf8_next(s, n, &k))) break;
            i = k;
        }
        fn(ctx, s + st, i - st);
        if (maxsplit > 0) maxsplit--;
    }
}

void ts_replace(tsb *b, const char *s, size_t n, const char *old, size_t on, const char *nw,
                size_t nn, int64_t count) {
    if (!on) { /* Python inserts new between every character */
        size_t i = 0;
        if (count != 0) {
            tsb_add(b, nw, nn);
            if (count > 0) count--;
        }
        while (i < n) {
            size_t st = i;
            tmpl_utf8_next(s, n, &i);
            tsb_add(b, s + st, i - st);
            if (count != 0) {
                tsb_add(b, nw, nn);
                if (count > 0) count--;
            }
        }
        return;
    }
    const char *p = s, *end = s + n, *q;
    while (count != 0 && (q = ts_find(p, (size_t)(end - p), old, on))) {
        tsb_add(b, p, (size_t)(q - p));
        tsb_add(b, nw, nn);
        p = q + on;
        if (count > 0) count--;
    }
    tsb_add(b, p, (size_t)(end - p));
}

bool ts_is(const char *s, size_t n, ts_class cls) {
    if (!n) return false;
    bool any_cased = false;
    for (size_t i = 0; i < n;) {
        uint32_t cp = tmpl_utf8_next(s, n, &i);
        utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
        bool alpha = c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL ||
                     c == UTF8PROC_CATEGORY_LT || c == UTF8PROC_CATEGORY_LM ||
                     c == UTF8PROC_CATEGORY_LO;
        bool digit = c == UTF8PROC_CATEGORY_ND;
        switch (cls) {
        case TS_DIGIT:
            if (!digit) return false;
            break;
        case TS_ALPHA:
            if (!alpha) return false;
            break;
        case TS_ALNUM:
            if (!alpha && !digit && c != UTF8PROC_CATEGORY_NO && c != UTF8PROC_CATEGORY_NL)
                return false;
            break;
        case TS_SPACE:
            if (!tmpl_isspace(cp)) return false;
            break;
        case TS_LOWERCASE:
            if (c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LT) return false;
            if (c == UTF8PROC_CATEGORY_LL) any_cased = true;
            break;
        case TS_UPPERCASE:
            if (c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT) return false;
            if (c == UTF8PROC_CATEGORY_LU) any_cased = true;
            break;
        }
    }
    return cls == TS_LOWERCASE || cls == TS_UPPERCASE ? any_cased : true;
}

bool ts_word_char(uint32_t cp) {
    if (cp == '_') return true;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
           (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO);
}
