/* hf_fastre.c: hand-written matchers for the common ByteLevel pre-tokenizer
 * regexes, exact stand-ins for PCRE2 running them (after the \s rewrite of
 * hf_pattern.c):
 *
 *   Qwen2/Qwen3:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
 *                 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   Llama 3:      the same with \p{N}{1,3}
 *   GPT-2:        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
 *                 \s+(?!\S)|\s+
 *   o200k (gpt-oss): [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*
 *                 [\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
 *                 [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+
 *                 [\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|
 *                 \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * Each alternative is decided the way PCRE2's backtracking decides it (see
 * the comments below). Every character is a letter, a number, white space
 * or other, so at any position before the end some alternative matches:
 * a match always starts where the search starts.
 *
 * Character classes come from utf8proc. Against PCRE2's own tables (10.42,
 * Unicode 14) they agree on the whole BMP once U+180E counts as \s (PCRE2
 * keeps it there); beyond the BMP utf8proc (Unicode 15) knows letters and
 * digits PCRE2 does not, so a supplementary-plane letter or number makes
 * the matcher answer "unsure" and that one match runs on PCRE2. o200k also
 * tells letters apart by case and counts marks with them; its classes agree
 * with PCRE2's on the BMP but for the marks Unicode 15 added there, which
 * are unsure, as are marks beyond the BMP.
 * tests/unit/tokenize/test_hf_fastre.c checks all of this against PCRE2:
 * every code point, the golden texts, and random strings. */
#include <string.h>
#include <utf8proc.h>

#include "tokenize/hf_internal.h"

enum { C_OTHER, C_LET, C_NUM, C_WS, C_UNSURE };

static const char re_qwen[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                              "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char re_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{"
    "1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char re_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!"
    "\\S)|\\s+";
static const char re_o200k[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}"
    "\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}"
    "\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,"
    "3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

int hf_fast_detect(const char *re, size_t len) {
    if (len == sizeof(re_qwen) - 1 && !memcmp(re, re_qwen, len)) return FAST_QWEN;
    if (len == sizeof(re_llama3) - 1 && !memcmp(re, re_llama3, len)) return FAST_LLAMA3;
    if (len == sizeof(re_gpt2) - 1 && !memcmp(re, re_gpt2, len)) return FAST_GPT2;
    if (len == sizeof(re_o200k) - 1 && !memcmp(re, re_o200k, len)) return FAST_O200K;
    return FAST_NONE;
}

/* ASCII classes: letters, digits, \t \n \v \f \r and space, the rest. */
static const uint8_t ascii_cls[128] = {
#define W C_WS
#define L C_LET
#define N C_NUM
#define O C_OTHER
    O, O, O, O, O, O, O, O, O, W, W, W, W, W, O, O, /* 00 */
    O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, /* 10 */
    W, O, O, O, O, O, O, O, O, O, O, O, O, O, O, O, /* 20 */
    N, N, N, N, N, N, N, N, N, N, O, O, O, O, O, O, /* 30 */
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 40 */
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O, /* 50 */
    O, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, /* 60 */
    L, L, L, L, L, L, L, L, L, L, L, O, O, O, O, O, /* 70 */
#undef W
#undef L
#undef N
#undef O
};

/* \s beyond ASCII, as PCRE2 has it (with U+180E), and U+0085. */
static inline bool ws_beyond_ascii(uint32_t cp) {
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || cp == 0x180E ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

int hf_fast_class(uint32_t cp) {
    if (cp < 0x80) return ascii_cls[cp];
    if (ws_beyond_ascii(cp)) return C_WS;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        return cp < 0x10000 ? C_LET : C_UNSURE;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        return cp < 0x10000 ? C_NUM : C_UNSURE;
    default:
        return C_OTHER;
    }
}

/* A cursor over valid UTF-8: the class and byte length of the character at
 * i, with C_OTHER and length 0 at the end. */
typedef struct cur {
    const unsigned char *s;
    size_t len;
} cur;

static inline int cls_at(const cur *c, size_t i, size_t *k) {
    if (i >= c->len) {
        *k = 0;
        return -1;
    }
    if (c->s[i] < 0x80) {
        *k = 1;
        return ascii_cls[c->s[i]];
    }
    uint32_t cp;
    *k = (size_t)hf_utf8_dec(c->s + i, &cp);
    return hf_fast_class(cp);
}

/* The end of the run of class cls starting at i (at most max chars);
 * SIZE_MAX when an unsure character is met. */
static size_t run_end(const cur *c, size_t i, int cls, size_t max) {
    size_t n = 0, k;
    while (n < max) {
        int x = cls_at(c, i, &k);
        if (x == C_UNSURE) return SIZE_MAX;
        if (x != cls) break;
        i += k;
        n++;
    }
    return i;
}

static inline bool is_crlf(const cur *c, size_t i) {
    return i < c->len && (c->s[i] == '\r' || c->s[i] == '\n');
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) or the case-sensitive form at i (a quote).
 * Caseless s also matches U+017F (long s), as PCRE2 folds it. */
static size_t contraction(const cur *c, size_t i, bool caseless) {
    const unsigned char *s = c->s;
    size_t n = c->len;
    if (i + 1 >= n) return 0;
    unsigned char a = s[i + 1];
    if (caseless && a >= 'A' && a <= 'Z') a = (unsigned char)(a + 32);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
    if (caseless && a == 0xC5 && i + 2 < n && s[i + 2] == 0xBF) return i + 3; /* U+017F */
    if (i + 2 >= n) return 0;
    unsigned char b = s[i + 2];
    if (caseless && b >= 'A' && b <= 'Z') b = (unsigned char)(b + 32);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
    return 0;
}

/* White space at i, for the last alternatives. */
static size_t ws_match(const cur *c, size_t i, bool nl_alt) {
    size_t j = i, k, last_nl = SIZE_MAX;
    for (;;) {
        int x = cls_at(c, j, &k);
        if (x == C_UNSURE) return SIZE_MAX;
        if (x != C_WS) break;
        if (c->s[j] == '\r' || c->s[j] == '\n') last_nl = j;
        j += k;
    }
    /* \s*[\r\n]+: \s* gives back characters until [\r\n]+ can start, at
     * the last CR or LF of the run; that one alone ends the match. */
    if (nl_alt && last_nl != SIZE_MAX) return last_nl + 1;
    /* \s+(?!\S): the whole run at the end of the text, else all but its
     * last character (itself white space), if that leaves any. */
    if (j >= c->len) return j;
    size_t prev = j - 1;
    while (prev > i && (c->s[prev] & 0xC0) == 0x80) prev--;
    if (prev > i) return prev;
    return j; /* \s+ */
}

static size_t next_llama(const cur *c, size_t i, bool qwen) {
    size_t k0, k1;
    int c0 = cls_at(c, i, &k0);
    if (c0 == C_UNSURE) return SIZE_MAX;
    if (c->s[i] == '\'') {
        size_t e = contraction(c, i, true);
        if (e) return e;
    }
    int c1 = cls_at(c, i + k0, &k1);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (c0 == C_LET) return run_end(c, i, C_LET, SIZE_MAX);
    if (c0 != C_NUM && !is_crlf(c, i)) {
        if (c1 == C_UNSURE) return SIZE_MAX;
        if (c1 == C_LET) return run_end(c, i + k0, C_LET, SIZE_MAX);
    }
    /* \p{N}{1,3} or \p{N} */
    if (c0 == C_NUM) return run_end(c, i, C_NUM, qwen ? 1 : 3);
    /* ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
    size_t o = SIZE_MAX;
    if (c0 == C_OTHER)
        o = i;
    else if (c->s[i] == ' ') {
        if (c1 == C_UNSURE) return SIZE_MAX;
        if (c1 == C_OTHER) o = i + k0;
    }
    if (o != SIZE_MAX) {
        size_t e = run_end(c, o, C_OTHER, SIZE_MAX);
        if (e == SIZE_MAX) return e;
        while (is_crlf(c, e)) e++;
        return e;
    }
    return ws_match(c, i, true);
}

static size_t next_gpt2(const cur *c, size_t i) {
    size_t k0, k1;
    int c0 = cls_at(c, i, &k0);
    if (c0 == C_UNSURE) return SIZE_MAX;
    if (c->s[i] == '\'') {
        size_t e = contraction(c, i, false);
        if (e) return e;
    }
    /*  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+ */
    if (c0 != C_WS) return run_end(c, i, c0, SIZE_MAX);
    if (c->s[i] == ' ') {
        int c1 = cls_at(c, i + 1, &k1);
        if (c1 == C_UNSURE) return SIZE_MAX;
        if (c1 == C_LET || c1 == C_NUM || c1 == C_OTHER) return run_end(c, i + 1, c1, SIZE_MAX);
    }
    return ws_match(c, i, false);
}

/* ---- o200k ------------------------------------------------------------------------
 * Each character is a set of the regex's classes: A [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
 * B [\p{Ll}\p{Lm}\p{Lo}\p{M}], Q [^\s\p{L}\p{N}], P [^\r\n\p{L}\p{N}], N \p{N},
 * W \s; marks are in A, B, Q and P at once. */
enum { O2_A = 1, O2_B = 2, O2_Q = 4, O2_P = 8, O2_N = 16, O2_W = 32, O2_UNSURE = 64 };

/* Marks that Unicode 15 added to the BMP: utf8proc knows them, PCRE2 10.42 does
 * not (test_hf_fastre.c finds every disagreement). */
static bool new_bmp_mark(uint32_t cp) {
    return cp == 0x0CF3 || cp == 0x0ECE;
}

static inline int o2_ascii(unsigned char b) {
    switch (ascii_cls[b]) {
    case C_LET:
        return b >= 'a' ? O2_B : O2_A;
    case C_NUM:
        return O2_N;
    case C_WS:
        return b == '\r' || b == '\n' ? O2_W : O2_W | O2_P;
    default:
        return O2_Q | O2_P;
    }
}

int hf_fast_class_o200k(uint32_t cp) {
    if (cp < 0x80) return o2_ascii((unsigned char)cp);
    if (ws_beyond_ascii(cp)) return O2_W | O2_P;
    /* CJK ideographs and Hangul syllables: all Lo, no table needed */
    if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3)) return O2_A | O2_B;
    int set;
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LT:
        set = O2_A;
        break;
    case UTF8PROC_CATEGORY_LL:
        set = O2_B;
        break;
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
        set = O2_A | O2_B;
        break;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
        set = new_bmp_mark(cp) ? O2_UNSURE : O2_A | O2_B | O2_Q | O2_P;
        break;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
        set = O2_N;
        break;
    default:
        return O2_Q | O2_P;
    }
    /* beyond the BMP, letters, marks and numbers may be newer than PCRE2 */
    return cp < 0x10000 ? set : O2_UNSURE;
}

/* The class set of the character at i (0 at the end) and its length. */
static inline int o2_at(const cur *c, size_t i, size_t *k) {
    if (i >= c->len) {
        *k = 0;
        return 0;
    }
    unsigned char b = c->s[i];
    if (b < 0x80) {
        *k = 1;
        return o2_ascii(b);
    }
    uint32_t cp;
    *k = (size_t)hf_utf8_dec(c->s + i, &cp);
    return hf_fast_class_o200k(cp);
}

/* The end of the run of characters in set from i; SIZE_MAX when unsure. */
static size_t o2_run(const cur *c, size_t i, int set, size_t max) {
    size_t k, n = 0;
    for (; n < max; n++) {
        int x = o2_at(c, i, &k);
        if (x & O2_UNSURE) return SIZE_MAX;
        if (!(x & set)) break;
        i += k;
    }
    return i;
}

#define O2_FAIL (SIZE_MAX - 1)

/* The optional contraction after a word ending at e. */
static size_t o2_tail(const cur *c, size_t e) {
    if (e == SIZE_MAX || e >= c->len || c->s[e] != '\'') return e;
    size_t t = contraction(c, e, true);
    return t ? t : e;
}

/* A*B+ at j (the first alternative without its P?): A* takes the longest run
 * of A; if an L (in B, not in A) follows, B+ takes the run of B from there.
 * Otherwise A* gives back characters until B+ can start, at the last
 * character of the run that is also in B (Lm, Lo, M), and B+ is that one
 * character (what follows it in the run is Lu or Lt). */
static size_t o2_lower_word(const cur *c, size_t j) {
    size_t a = j, k, last_b = SIZE_MAX;
    int x;
    for (;;) {
        x = o2_at(c, a, &k);
        if (x & O2_UNSURE) return SIZE_MAX;
        if (!(x & O2_A)) break;
        if (x & O2_B) last_b = a + k;
        a += k;
    }
    if (x & O2_B) return o2_tail(c, o2_run(c, a, O2_B, SIZE_MAX));
    return last_b == SIZE_MAX ? O2_FAIL : o2_tail(c, last_b);
}

/* A+B* at j (the second alternative without its P?). */
static size_t o2_upper_word(const cur *c, size_t j) {
    size_t a = o2_run(c, j, O2_A, SIZE_MAX);
    if (a == SIZE_MAX) return a;
    if (a == j) return O2_FAIL;
    return o2_tail(c, o2_run(c, a, O2_B, SIZE_MAX));
}

static size_t next_o200k(const cur *c, size_t i) {
    size_t k0, k1;
    int x0 = o2_at(c, i, &k0);
    if (x0 & O2_UNSURE) return SIZE_MAX;
    /* the two word alternatives, each with P? taken first, then without */
    for (int alt = 0; alt < 2; alt++) {
        size_t (*word)(const cur *, size_t) = alt ? o2_upper_word : o2_lower_word;
        size_t e;
        if ((x0 & O2_P) && (e = word(c, i + k0)) != O2_FAIL) return e;
        if ((e = word(c, i)) != O2_FAIL) return e;
    }
    if (x0 & O2_N) return o2_run(c, i, O2_N, 3);
    /* ' ?[^\s\p{L}\p{N}]+[\r\n/]*' */
    size_t o = O2_FAIL;
    if (c->s[i] == ' ') {
        int x1 = o2_at(c, i + k0, &k1);
        if (x1 & O2_UNSURE) return SIZE_MAX;
        if (x1 & O2_Q) o = i + k0;
    }
    if (o == O2_FAIL && (x0 & O2_Q)) o = i;
    if (o != O2_FAIL) {
        size_t e = o2_run(c, o, O2_Q, SIZE_MAX);
        if (e == SIZE_MAX) return e;
        while (e < c->len && (c->s[e] == '\r' || c->s[e] == '\n' || c->s[e] == '/')) e++;
        return e;
    }
    return ws_match(c, i, true);
}

int hf_fast_next(int kind, const unsigned char *s, size_t len, size_t pos, size_t *ms, size_t *me) {
    if (pos >= len) return 0;
    cur c = {s, len};
    size_t e = kind == FAST_GPT2    ? next_gpt2(&c, pos)
               : kind == FAST_O200K ? next_o200k(&c, pos)
                                    : next_llama(&c, pos, kind == FAST_QWEN);
    if (e == SIZE_MAX) return -1;
    *ms = pos;
    *me = e;
    return 1;
}
