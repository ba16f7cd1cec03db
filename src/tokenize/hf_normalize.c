/* hf_normalize.c: normalizers (NFC, NFD, NFKC, NFKD, Lowercase, Strip,
 * Replace, Prepend, StripAccents, Sequence). Only the text matters here:
 * token ids do not depend on alignments, so none are tracked. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenize/hf_internal.h"

/* True when NFC leaves any run of such characters unchanged: no canonical
 * decomposition (Hangul syllables recompose to themselves), combining class
 * 0, and never the second half of a composition. Below U+0300 all qualify. */
static bool nfc_inert(uint32_t cp) {
    if (cp < 0x300) return true;
    if (cp >= 0xAC00 && cp <= 0xD7A3) return true;
    if ((cp >= 0x1161 && cp <= 0x1175) || (cp >= 0x11A8 && cp <= 0x11C2)) return false;
    const utf8proc_property_t *pr = utf8proc_get_property((utf8proc_int32_t)cp);
    if (pr->combining_class) return false;
    if (pr->decomp_seqindex != UINT16_MAX && pr->decomp_type == 0) return false;
    if (pr->comb_index != UINT16_MAX && (pr->comb_index & 0x8000)) return false;
    return true;
}

static bool ascii_only(const char *s, size_t len) {
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (w & 0x8080808080808080ull) return false;
    }
    for (; i < len; i++)
        if ((unsigned char)s[i] & 0x80) return false;
    return true;
}

static int unorm(const char *s, size_t len, int opts, hf_buf *out) {
    if (ascii_only(s, len)) return hf_buf_add(out, s, len);
    if (opts == (UTF8PROC_STABLE | UTF8PROC_COMPOSE)) {
        const unsigned char *u = (const unsigned char *)s;
        bool inert = true;
        for (size_t i = 0; i < len && inert;) {
            uint32_t cp;
            i += (size_t)hf_utf8_dec(u + i, &cp);
            inert = nfc_inert(cp);
        }
        if (inert) return hf_buf_add(out, s, len);
    }
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)len, &dst,
                                      (utf8proc_option_t)opts);
    if (n < 0) return -1;
    int rc = hf_buf_add(out, dst, (size_t)n);
    free(dst);
    return rc;
}

static int lowercase(const char *s, size_t len, hf_buf *out) {
    if (hf_buf_reserve(out, len)) return -1;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        if (u[i] < 0x80) {
            unsigned char c = u[i++];
            if (c >= 'A' && c <= 'Z') c = (unsigned char)(c + 32);
            if (hf_buf_addc(out, (char)c)) return -1;
            continue;
        }
        uint32_t cp;
        i += (size_t)hf_utf8_dec(u + i, &cp);
        if (cp == 0x130) { /* the one multi-char lowercase mapping: i + combining dot */
            if (hf_buf_add(out, "i\xCC\x87", 3)) return -1;
            continue;
        }
        if (hf_buf_add_cp(out, (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp))) return -1;
    }
    return 0;
}

static int strip(const char *s, size_t len, bool left, bool right, hf_buf *out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, b = len;
    if (left) {
        while (a < b) {
            uint32_t cp;
            int k = hf_utf8_dec(u + a, &cp);
            if (!hf_is_whitespace(cp)) break;
            a += (size_t)k;
        }
    }
    if (right) {
        while (b > a) {
            size_t st = b - 1;
            while (st > a && (u[st] & 0xC0) == 0x80) st--;
            uint32_t cp;
            hf_utf8_dec(u + st, &cp);
            if (!hf_is_whitespace(cp)) break;
            b = st;
        }
    }
    return hf_buf_add(out, s + a, b - a);
}

static int replace(const hf_norm *n, const char *s, size_t len, hf_buf *out) {
    hf_match *m = NULL;
    size_t nm = 0, cap = 0;
    pcre2_match_data *md = NULL;
    if (n->pat.re && !(md = pcre2_match_data_create(4, NULL))) return -1;
    int rc = hf_pattern_find(&n->pat, s, len, &m, &nm, &cap, md);
    size_t pos = 0;
    for (size_t i = 0; !rc && i < nm; i++) {
        rc = hf_buf_add(out, s + pos, m[i].start - pos);
        if (!rc) rc = hf_buf_add(out, n->content, n->clen);
        pos = m[i].end;
    }
    if (!rc) rc = hf_buf_add(out, s + pos, len - pos);
    free(m);
    if (md) pcre2_match_data_free(md);
    return rc;
}

static int strip_accents(const char *s, size_t len, hf_buf *out) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = hf_utf8_dec(u + i, &cp);
        if (cp < 0x300 || utf8proc_category((utf8proc_int32_t)cp) != UTF8PROC_CATEGORY_MN) {
            if (hf_buf_add(out, s + i, (size_t)k)) return -1;
        }
        i += (size_t)k;
    }
    return 0;
}

/* NFC leaves text of inert characters alone; every Unicode normal form leaves
 * ASCII alone. */
bool hf_normalize_keeps(const hf_norm *n, const char *s, size_t len) {
    switch (n->type) {
    case NORM_NFC:
        if (ascii_only(s, len)) return true;
        for (size_t i = 0; i < len;) {
            uint32_t cp;
            i += (size_t)hf_utf8_dec((const unsigned char *)s + i, &cp);
            if (!nfc_inert(cp)) return false;
        }
        return true;
    case NORM_NFD:
    case NORM_NFKC:
    case NORM_NFKD:
        return ascii_only(s, len);
    case NORM_SEQ:
        for (size_t i = 0; i < n->nkids; i++)
            if (!hf_normalize_keeps(&n->kids[i], s, len)) return false;
        return true;
    default:
        return false;
    }
}

int hf_normalize(const hf_norm *n, const char *s, size_t len, hf_buf *out, hf_buf *tmp) {
    (void)tmp;
    switch (n->type) {
    case NORM_NFC:
        return unorm(s, len, UTF8PROC_STABLE | UTF8PROC_COMPOSE, out);
    case NORM_NFD:
        return unorm(s, len, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, out);
    case NORM_NFKC:
        return unorm(s, len, UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, out);
    case NORM_NFKD:
        return unorm(s, len, UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, out);
    case NORM_LOWER:
        return lowercase(s, len, out);
    case NORM_STRIP:
        return strip(s, len, n->left, n->right, out);
    case NORM_REPLACE:
        return replace(n, s, len, out);
    case NORM_STRIP_ACCENTS:
        return strip_accents(s, len, out);
    case NORM_PREPEND:
        if (len && hf_buf_add(out, n->content, n->clen)) return -1;
        return hf_buf_add(out, s, len);
    case NORM_SEQ: {
        /* Ping-pong between two buffers; the last step writes into out. */
        hf_buf a = {0}, b = {0};
        const char *cur = s;
        size_t curlen = len;
        int rc = 0;
        if (n->nkids == 0) return hf_buf_add(out, s, len);
        for (size_t i = 0; i < n->nkids && !rc; i++) {
            hf_buf *dst = (i + 1 == n->nkids) ? out : (i % 2 ? &b : &a);
            if (dst != out) dst->len = 0;
            rc = hf_normalize(&n->kids[i], cur, curlen, dst, NULL);
            if (dst != out) {
                cur = dst->p ? dst->p : "";
                curlen = dst->len;
            }
        }
        hf_buf_free(&a);
        hf_buf_free(&b);
        return rc;
    }
    }
    return -1;
}
