/* hf_decode.c: ids back to text through the decoder chain, as the Rust
 * library's Decoder::decode_chain steps define it. */
#include <stdlib.h>
#include <string.h>

#include "tokenize/hf_internal.h"

typedef struct toklist {
    hf_buf *v;
    size_t n, cap;
} toklist;

static hf_buf *tl_push(toklist *l) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        hf_buf *p = realloc(l->v, cap * sizeof(*p));
        if (!p) return NULL;
        l->v = p;
        l->cap = cap;
    }
    hf_buf *b = &l->v[l->n++];
    memset(b, 0, sizeof(*b));
    if (hf_buf_reserve(b, 1)) return NULL;
    b->p[0] = 0;
    return b;
}

static void tl_free(toklist *l) {
    for (size_t i = 0; i < l->n; i++) hf_buf_free(&l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* String::from_utf8_lossy: each maximal invalid subpart becomes U+FFFD. */
static int lossy(const unsigned char *s, size_t n, hf_buf *out) {
    size_t i = 0;
    while (i < n) {
        size_t ok = hf_utf8_valid_prefix((const char *)s + i, n - i);
        if (hf_buf_add(out, s + i, ok)) return -1;
        i += ok;
        if (i >= n) break;
        /* Length of the maximal subpart of an ill-formed sequence. */
        unsigned c = s[i];
        size_t k = 1;
        unsigned lo = 0x80, hi = 0xBF;
        size_t need = 0;
        if (c >= 0xC2 && c <= 0xDF)
            need = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        }
        for (size_t j = 0; j < need && i + k < n; j++) {
            unsigned d = s[i + k];
            if (d < lo || d > hi) break;
            lo = 0x80;
            hi = 0xBF;
            k++;
        }
        if (hf_buf_add(out, "\xEF\xBF\xBD", 3)) return -1;
        i += k;
    }
    return 0;
}

static int replace_all(const hf_buf *in, const char *a, size_t alen, const char *b, size_t blen,
                       hf_buf *out) {
    size_t pos = 0;
    while (alen && pos < in->len) {
        const char *f = memmem(in->p + pos, in->len - pos, a, alen);
        if (!f) break;
        size_t at = (size_t)(f - in->p);
        if (hf_buf_add(out, in->p + pos, at - pos) || hf_buf_add(out, b, blen)) return -1;
        pos = at + alen;
    }
    return hf_buf_add(out, in->p + pos, in->len - pos);
}

static int flush_bytes(toklist *out, hf_buf *bytes) {
    if (!bytes->len) return 0;
    hf_buf *o = tl_push(out);
    if (!o) return -1;
    if (hf_utf8_valid_prefix(bytes->p, bytes->len) == bytes->len) {
        if (hf_buf_add(o, bytes->p, bytes->len)) return -1;
    } else {
        for (size_t i = 0; i < bytes->len; i++)
            if (hf_buf_add(o, "\xEF\xBF\xBD", 3)) return -1;
    }
    bytes->len = 0;
    return 0;
}

static int step(const hf_dec *d, toklist *in, toklist *out) {
    hf_buf tmp = {0};
    int rc = 0;
    switch (d->type) {
    case DEC_BYTELEVEL: {
        int32_t inv[0x144];
        memset(inv, 0xFF, sizeof(inv));
        for (unsigned b = 0; b < 256; b++) inv[hf_byte_char(b)] = (int32_t)b;
        for (size_t i = 0; i < in->n && !rc; i++) {
            const hf_buf *t = &in->v[i];
            size_t mark = tmp.len;
            bool ok = true;
            for (size_t k = 0; k < t->len && ok;) {
                uint32_t cp;
                k += (size_t)hf_utf8_dec((const unsigned char *)t->p + k, &cp);
                if (cp >= 0x144 || inv[cp] < 0)
                    ok = false;
                else
                    rc = hf_buf_addc(&tmp, (char)inv[cp]);
            }
            if (!ok) {
                tmp.len = mark;
                rc = hf_buf_add(&tmp, t->p, t->len);
            }
        }
        hf_buf *o = tl_push(out);
        if (!o || rc || lossy((const unsigned char *)(tmp.p ? tmp.p : ""), tmp.len, o)) rc = -1;
        break;
    }
    case DEC_REPLACE:
        for (size_t i = 0; i < in->n && !rc; i++) {
            hf_buf *o = tl_push(out);
            rc = !o || replace_all(&in->v[i], d->a, d->alen, d->b, d->blen, o);
        }
        break;
    case DEC_BYTEFALLBACK:
        for (size_t i = 0; i < in->n && !rc; i++) {
            const hf_buf *t = &in->v[i];
            int h1, h2;
            if (t->len == 6 && !memcmp(t->p, "<0x", 3) && t->p[5] == '>' &&
                (h1 = ir_hexval(t->p[3])) >= 0 && (h2 = ir_hexval(t->p[4])) >= 0) {
                rc = hf_buf_addc(&tmp, (char)(h1 * 16 + h2));
                continue;
            }
            if (flush_bytes(out, &tmp)) rc = -1;
            hf_buf *o = tl_push(out);
            if (rc || !o || hf_buf_add(o, t->p, t->len)) rc = -1;
        }
        if (!rc) rc = flush_bytes(out, &tmp);
        break;
    case DEC_FUSE: {
        hf_buf *o = tl_push(out);
        for (size_t i = 0; i < in->n && !rc; i++)
            rc = !o || hf_buf_add(o, in->v[i].p, in->v[i].len);
        if (!o) rc = -1;
        break;
    }
    case DEC_STRIP:
        for (size_t i = 0; i < in->n && !rc; i++) {
            const hf_buf *t = &in->v[i];
            const unsigned char *u = (const unsigned char *)t->p;
            size_t a = 0, b = t->len;
            for (size_t k = 0; k < d->start && a < t->len; k++) {
                uint32_t cp;
                int n = hf_utf8_dec(u + a, &cp);
                if (cp != d->cp) break;
                a += (size_t)n;
            }
            for (size_t k = 0; k < d->stop && b > a; k++) {
                size_t st = b - 1;
                while (st > 0 && (u[st] & 0xC0) == 0x80) st--;
                uint32_t cp;
                hf_utf8_dec(u + st, &cp);
                if (cp != d->cp) break;
                b = st;
            }
            hf_buf *o = tl_push(out);
            rc = !o || hf_buf_add(o, t->p + a, b - a);
        }
        break;
    case DEC_METASPACE:
        for (size_t i = 0; i < in->n && !rc; i++) {
            const hf_buf *t = &in->v[i];
            hf_buf *o = tl_push(out);
            if (!o) {
                rc = -1;
                break;
            }
            for (size_t k = 0; k < t->len && !rc;) {
                uint32_t cp;
                int n = hf_utf8_dec((const unsigned char *)t->p + k, &cp);
                if (cp != d->cp)
                    rc = hf_buf_add(o, t->p + k, (size_t)n);
                else if (!(i == 0 && d->prepend != PREPEND_NEVER))
                    rc = hf_buf_addc(o, ' ');
                k += (size_t)n;
            }
        }
        break;
    case DEC_BPE:
        for (size_t i = 0; i < in->n && !rc; i++) {
            hf_buf *o = tl_push(out);
            bool last = i + 1 == in->n;
            rc = !o || replace_all(&in->v[i], d->a, d->alen, last ? "" : " ", last ? 0 : 1, o);
        }
        break;
    case DEC_WORDPIECE: {
        static const char *const pairs[][2] = {
            {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},
            {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
            {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
        };
        for (size_t i = 0; i < in->n && !rc; i++) {
            const hf_buf *t = &in->v[i];
            hf_buf cur = {0};
            if (i != 0 && t->len >= d->alen && !memcmp(t->p, d->a, d->alen))
                rc = hf_buf_add(&cur, t->p + d->alen, t->len - d->alen);
            else if (i != 0)
                rc = hf_buf_addc(&cur, ' ') || hf_buf_add(&cur, t->p, t->len);
            else
                rc = hf_buf_add(&cur, t->p, t->len);
            for (size_t k = 0; d->cleanup && !rc && k < sizeof(pairs) / sizeof(pairs[0]); k++) {
                hf_buf nx = {0};
                rc = replace_all(&cur, pairs[k][0], strlen(pairs[k][0]), pairs[k][1],
                                 strlen(pairs[k][1]), &nx);
                hf_buf_free(&cur);
                cur = nx;
            }
            hf_buf *o = tl_push(out);
            if (rc || !o || hf_buf_add(o, cur.p ? cur.p : "", cur.len)) rc = -1;
            hf_buf_free(&cur);
        }
        break;
    }
    default:
        rc = -1;
    }
    hf_buf_free(&tmp);
    return rc ? -1 : 0;
}

/* Python's s.replace(from, to) in place, for a `to` no longer than `from`:
 * leftmost matches, not overlapping, scanned left to right. */
static void replace_shrink(hf_buf *b, const char *from, const char *to) {
    size_t fl = strlen(from), tl = strlen(to), w = 0, r = 0;
    while (r < b->len) {
        if (b->len - r >= fl && !memcmp(b->p + r, from, fl)) {
            memmove(b->p + w, to, tl);
            w += tl;
            r += fl;
        } else {
            b->p[w++] = b->p[r++];
        }
    }
    b->len = w;
}

/* transformers' PreTrainedTokenizerBase.clean_up_tokenization (v4.57.1), in
 * its order: each replace runs on the previous one's result. */
static void clean_up_tokenization(hf_buf *b) {
    static const char *const rules[][2] = {
        {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++)
        replace_shrink(b, rules[i][0], rules[i][1]);
}

int irt_decode(const irt_tokenizer *t, const uint32_t *ids, size_t n, bool skip_special, char **out,
               size_t *outlen) {
    if (!t || !out || (!ids && n)) return IRT_EINVAL;
    *out = NULL;
    toklist a = {0}, b = {0};
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        uint32_t id = ids[i], k, dummy;
        const char *s = NULL;
        size_t len = 0;
        if (hf_pairmap_get(&t->added_ids, id, 0, &k, &dummy)) {
            s = t->added[k].content;
            len = t->added[k].len;
        } else if (id < t->bpe.nids && t->bpe.id_tok[id]) {
            s = t->bpe.id_tok[id];
            len = t->bpe.id_len[id];
        }
        if (!s) continue;
        if (skip_special && id < t->vocab_size && (t->special_ids[id / 8] & (1u << (id % 8))))
            continue;
        hf_buf *o = tl_push(&a);
        if (!o || hf_buf_add(o, s, len)) rc = IRT_ENOMEM;
    }
    hf_buf res = {0};
    if (!rc && !t->has_decoder) {
        for (size_t i = 0; i < a.n && !rc; i++)
            if ((i && hf_buf_addc(&res, ' ')) || hf_buf_add(&res, a.v[i].p, a.v[i].len))
                rc = IRT_ENOMEM;
    } else if (!rc) {
        for (size_t k = 0; k < t->ndec && !rc; k++) {
            b.n = 0;
            if (step(&t->dec[k], &a, &b)) rc = IRT_ENOMEM;
            toklist sw = a;
            a = b;
            b = sw;
            for (size_t i = 0; i < b.n; i++) hf_buf_free(&b.v[i]);
            b.n = 0;
        }
        for (size_t i = 0; i < a.n && !rc; i++)
            if (hf_buf_add(&res, a.v[i].p, a.v[i].len)) rc = IRT_ENOMEM;
    }
    tl_free(&a);
    tl_free(&b);
    if (!rc && t->cleanup_spaces) clean_up_tokenization(&res);
    if (!rc && hf_buf_reserve(&res, 1)) rc = IRT_ENOMEM;
    if (rc) {
        hf_buf_free(&res);
        return rc;
    }
    res.p[res.len] = 0;
    *out = res.p;
    if (outlen) *outlen = res.len;
    return 0;
}
