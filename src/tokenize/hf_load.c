/* hf_load.c: resolving a tokenizer spec and building a tokenizer from
 * tokenizer.json. Every error names the component and its JSON path. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenize/hf_internal.h"

typedef struct loader {
    irt_tokenizer *t;
    char *err;
    size_t errlen;
} loader;

__attribute__((format(printf, 3, 4))) static int lfail(loader *L, const char *path, const char *fmt,
                                                       ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(L->err, L->errlen, "tokenizer.json: %s: %s", path, msg);
    return -1;
}

/* JSON paths are cut at the buffer size; that is fine for messages. */
static void subpath(char *out, size_t n, const char *path, const char *key) {
    if (snprintf(out, n, "%s.%s", path, key) < 0) out[0] = 0;
}
static void idxpath(char *out, size_t n, const char *path, size_t i) {
    if (snprintf(out, n, "%s[%zu]", path, i) < 0) out[0] = 0;
}

static const char *jstr(const hj_val *v) {
    return v && v->type == HJ_STR ? v->u.s : NULL;
}

/* Reads an optional bool; absent or null gives def. */
static int jbool(loader *L, const hj_val *o, const char *key, const char *path, bool def,
                 bool *out) {
    const hj_val *v = hj_get(o, key);
    *out = def;
    if (!v || v->type == HJ_NULL) return 0;
    if (v->type != HJ_TRUE && v->type != HJ_FALSE) {
        char p[256];
        subpath(p, sizeof(p), path, key);
        return lfail(L, p, "expected a boolean");
    }
    *out = v->type == HJ_TRUE;
    return 0;
}

static int juint(loader *L, const hj_val *v, const char *path, uint32_t *out) {
    if (!v || v->type != HJ_NUM || !v->is_int || v->u.i < 0 || v->u.i > INT32_MAX)
        return lfail(L, path, "expected a non-negative integer id");
    *out = (uint32_t)v->u.i;
    return 0;
}

static char *tdup(loader *L, const char *s, size_t n) {
    return ir_arena_strndup(L->t->arena, s, n);
}

/* {"String": s} or {"Regex": r} into a pattern. */
static int load_pattern(loader *L, const hj_val *o, const char *path, hf_pattern *pat) {
    char p[256], msg[256];
    subpath(p, sizeof(p), path, "pattern");
    const hj_val *pv = hj_get(o, "pattern");
    if (!pv || pv->type != HJ_OBJ)
        return lfail(L, p, "expected {\"String\": ...} or {\"Regex\": ...}");
    const hj_val *s = hj_get(pv, "String"), *r = hj_get(pv, "Regex");
    if (s && s->type == HJ_STR) {
        if (hf_pattern_compile(pat, s->u.s, s->n, true, msg, sizeof(msg)))
            return lfail(L, p, "%s", msg);
        return 0;
    }
    if (r && r->type == HJ_STR) {
        char rp[300];
        subpath(rp, sizeof(rp), p, "Regex");
        if (hf_pattern_compile(pat, r->u.s, r->n, false, msg, sizeof(msg)))
            return lfail(L, rp, "%s", msg);
        return 0;
    }
    return lfail(L, p, "expected {\"String\": ...} or {\"Regex\": ...}");
}

static const char *type_of(loader *L, const hj_val *o, const char *path, const char *what) {
    char p[256];
    if (!o || o->type != HJ_OBJ) {
        lfail(L, path, "expected a %s object", what);
        return NULL;
    }
    const char *ty = jstr(hj_get(o, "type"));
    if (!ty) {
        subpath(p, sizeof(p), path, "type");
        lfail(L, p, "missing %s type", what);
    }
    return ty;
}

/* ---- normalizers ------------------------------------------------------------------- */
static int load_norm(loader *L, const hj_val *o, const char *path, hf_norm *n) {
    memset(n, 0, sizeof(*n));
    const char *ty = type_of(L, o, path, "normalizer");
    char p[256];
    if (!ty) return -1;
    if (!strcmp(ty, "NFC"))
        n->type = NORM_NFC;
    else if (!strcmp(ty, "NFD"))
        n->type = NORM_NFD;
    else if (!strcmp(ty, "NFKC"))
        n->type = NORM_NFKC;
    else if (!strcmp(ty, "NFKD"))
        n->type = NORM_NFKD;
    else if (!strcmp(ty, "Lowercase"))
        n->type = NORM_LOWER;
    else if (!strcmp(ty, "StripAccents"))
        n->type = NORM_STRIP_ACCENTS;
    else if (!strcmp(ty, "Strip")) {
        n->type = NORM_STRIP;
        if (jbool(L, o, "strip_left", path, true, &n->left) ||
            jbool(L, o, "strip_right", path, true, &n->right))
            return -1;
    } else if (!strcmp(ty, "Replace")) {
        n->type = NORM_REPLACE;
        const hj_val *c = hj_get(o, "content");
        subpath(p, sizeof(p), path, "content");
        if (!c || c->type != HJ_STR) return lfail(L, p, "expected a string");
        if (!(n->content = tdup(L, c->u.s, c->n))) return lfail(L, p, "out of memory");
        n->clen = c->n;
        if (load_pattern(L, o, path, &n->pat)) return -1;
    } else if (!strcmp(ty, "Prepend")) {
        n->type = NORM_PREPEND;
        const hj_val *c = hj_get(o, "prepend");
        subpath(p, sizeof(p), path, "prepend");
        if (!c || c->type != HJ_STR) return lfail(L, p, "expected a string");
        if (!(n->content = tdup(L, c->u.s, c->n))) return lfail(L, p, "out of memory");
        n->clen = c->n;
    } else if (!strcmp(ty, "Sequence")) {
        n->type = NORM_SEQ;
        const hj_val *a = hj_get(o, "normalizers");
        subpath(p, sizeof(p), path, "normalizers");
        if (!a || a->type != HJ_ARR) return lfail(L, p, "expected an array");
        n->kids = ir_arena_calloc(L->t->arena, (a->n ? a->n : 1) * sizeof(hf_norm));
        if (!n->kids) return lfail(L, p, "out of memory");
        memset(n->kids, 0, (a->n ? a->n : 1) * sizeof(hf_norm));
        for (uint32_t i = 0; i < a->n; i++) {
            char ip[256];
            idxpath(ip, sizeof(ip), p, i);
            n->nkids = i + 1;
            if (load_norm(L, &a->u.items[i], ip, &n->kids[i])) return -1;
        }
    } else {
        subpath(p, sizeof(p), path, "type");
        return lfail(L, p, "unsupported normalizer '%s'", ty);
    }
    return 0;
}

void hf_norm_free(hf_norm *n) {
    if (!n) return;
    hf_pattern_free(&n->pat);
    for (size_t i = 0; i < n->nkids; i++) hf_norm_free(&n->kids[i]);
}

/* ---- pre-tokenizers ------------------------------------------------------------------- */
static int parse_behavior(loader *L, const hj_val *o, const char *path, int def, int *out) {
    const hj_val *b = hj_get(o, "behavior");
    *out = def;
    if (!b || b->type == HJ_NULL) return 0;
    const char *s = jstr(b);
    char p[256];
    subpath(p, sizeof(p), path, "behavior");
    if (!s) return lfail(L, p, "expected a string");
    if (!strcmp(s, "Removed"))
        *out = SPLIT_REMOVED;
    else if (!strcmp(s, "Isolated"))
        *out = SPLIT_ISOLATED;
    else if (!strcmp(s, "MergedWithPrevious"))
        *out = SPLIT_MERGED_PREV;
    else if (!strcmp(s, "MergedWithNext"))
        *out = SPLIT_MERGED_NEXT;
    else if (!strcmp(s, "Contiguous"))
        *out = SPLIT_CONTIGUOUS;
    else
        return lfail(L, p, "unknown split behavior '%s'", s);
    return 0;
}

static int parse_prepend(loader *L, const hj_val *o, const char *path, int *out) {
    const char *ps = jstr(hj_get(o, "prepend_scheme"));
    char p[256];
    if (ps) {
        if (!strcmp(ps, "always"))
            *out = PREPEND_ALWAYS;
        else if (!strcmp(ps, "never"))
            *out = PREPEND_NEVER;
        else if (!strcmp(ps, "first"))
            *out = PREPEND_FIRST;
        else {
            subpath(p, sizeof(p), path, "prepend_scheme");
            return lfail(L, p, "unknown prepend_scheme '%s'", ps);
        }
        return 0;
    }
    bool aps;
    if (jbool(L, o, "add_prefix_space", path, true, &aps)) return -1;
    *out = aps ? PREPEND_ALWAYS : PREPEND_NEVER;
    return 0;
}

static int parse_replacement(loader *L, const hj_val *o, const char *path, uint32_t *cp) {
    const hj_val *r = hj_get(o, "replacement");
    char p[256];
    subpath(p, sizeof(p), path, "replacement");
    if (!r || r->type != HJ_STR || !r->n || (size_t)hf_utf8_len((unsigned char)r->u.s[0]) != r->n)
        return lfail(L, p, "expected a one-character string");
    hf_utf8_dec((const unsigned char *)r->u.s, cp);
    return 0;
}

static int load_pretok(loader *L, const hj_val *o, const char *path) {
    irt_tokenizer *t = L->t;
    const char *ty = type_of(L, o, path, "pre-tokenizer");
    char p[256], msg[256];
    if (!ty) return -1;
    if (!strcmp(ty, "Sequence")) {
        const hj_val *a = hj_get(o, "pretokenizers");
        subpath(p, sizeof(p), path, "pretokenizers");
        if (!a || a->type != HJ_ARR) return lfail(L, p, "expected an array");
        for (uint32_t i = 0; i < a->n; i++) {
            char ip[256];
            idxpath(ip, sizeof(ip), p, i);
            if (load_pretok(L, &a->u.items[i], ip)) return -1;
        }
        return 0;
    }
    if (t->nstages == HF_MAX_STAGES) return lfail(L, path, "too many pre-tokenizers");
    hf_pretok *s = &t->stages[t->nstages++];
    memset(s, 0, sizeof(*s));
    if (!strcmp(ty, "ByteLevel")) {
        s->type = PT_BYTELEVEL;
        s->byte_map = true;
        if (jbool(L, o, "add_prefix_space", path, true, &s->add_prefix_space) ||
            jbool(L, o, "use_regex", path, true, &s->use_regex))
            return -1;
        if (s->use_regex) {
            static const char gpt2[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| "
                                       "?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
            if (hf_pattern_compile(&s->pat, gpt2, sizeof(gpt2) - 1, false, msg, sizeof(msg)))
                return lfail(L, path, "%s", msg);
        }
    } else if (!strcmp(ty, "Split")) {
        s->type = PT_SPLIT;
        if (load_pattern(L, o, path, &s->pat) ||
            parse_behavior(L, o, path, SPLIT_REMOVED, &s->behavior) ||
            jbool(L, o, "invert", path, false, &s->invert))
            return -1;
        if (!hj_get(o, "behavior")) {
            subpath(p, sizeof(p), path, "behavior");
            return lfail(L, p, "missing");
        }
    } else if (!strcmp(ty, "Metaspace")) {
        s->type = PT_METASPACE;
        if (parse_replacement(L, o, path, &s->repcp) || parse_prepend(L, o, path, &s->prepend) ||
            jbool(L, o, "split", path, true, &s->split))
            return -1;
        s->replen = hf_utf8_enc(s->repcp, s->rep);
    } else if (!strcmp(ty, "Digits")) {
        s->type = PT_DIGITS;
        if (jbool(L, o, "individual_digits", path, false, &s->individual_digits)) return -1;
    } else if (!strcmp(ty, "Punctuation")) {
        s->type = PT_PUNCT;
        if (parse_behavior(L, o, path, SPLIT_ISOLATED, &s->behavior)) return -1;
    } else if (!strcmp(ty, "Whitespace")) {
        s->type = PT_WHITESPACE;
    } else if (!strcmp(ty, "WhitespaceSplit")) {
        s->type = PT_WSSPLIT;
    } else if (!strcmp(ty, "BertPreTokenizer")) {
        s->type = PT_BERT;
    } else {
        t->nstages--;
        subpath(p, sizeof(p), path, "type");
        return lfail(L, p, "unsupported pre-tokenizer '%s'", ty);
    }
    return 0;
}

/* ---- the BPE model ----------------------------------------------------------------------- */
static int opt_str(loader *L, const hj_val *o, const char *key, const char *path, const char **out,
                   size_t *len) {
    const hj_val *v = hj_get(o, key);
    *out = NULL;
    *len = 0;
    if (!v || v->type == HJ_NULL) return 0;
    if (v->type != HJ_STR) {
        char p[256];
        subpath(p, sizeof(p), path, key);
        return lfail(L, p, "expected a string or null");
    }
    if (!(*out = tdup(L, v->u.s, v->n))) return lfail(L, path, "out of memory");
    *len = v->n;
    return 0;
}

/* Bulk loads are bound by cache misses on the hash tables, so the loops
 * below hash PF entries ahead and prefetch their slots. */
#define PF 16

/* What merge_prepare made of one entry of model.merges. */
typedef enum merge_state {
    MP_OK,       /* a pair, hashed and ready */
    MP_SKIP,     /* a "#version" line: not a merge */
    MP_BAD_STR,  /* a string that is not "left right" */
    MP_BAD_PAIR, /* neither a string nor a pair of strings */
} merge_state;
typedef struct merge_pre {
    merge_state state;
    const char *a, *b;
    size_t al, bl, clen;
    uint64_t ha, hb, hc;
    char cat[112]; /* the merged token, when it fits */
} merge_pre;

typedef struct pend_put {
    uint32_t a, b, rank, id;
} pend_put;

static void merge_prepare(const hf_bpe *m, const hj_val *mv, size_t prefix_len, merge_pre *q) {
    q->state = MP_OK;
    if (mv->type == HJ_STR) {
        if (!strncmp(mv->u.s, "#version", 8)) {
            q->state = MP_SKIP;
            return;
        }
        const char *sp = memchr(mv->u.s, ' ', mv->n);
        if (!sp || memchr(sp + 1, ' ', mv->n - (size_t)(sp + 1 - mv->u.s))) {
            q->state = MP_BAD_STR;
            return;
        }
        q->a = mv->u.s;
        q->al = (size_t)(sp - q->a);
        q->b = sp + 1;
        q->bl = mv->n - q->al - 1;
    } else if (mv->type == HJ_ARR && mv->n == 2 && mv->u.items[0].type == HJ_STR &&
               mv->u.items[1].type == HJ_STR) {
        q->a = mv->u.items[0].u.s;
        q->al = mv->u.items[0].n;
        q->b = mv->u.items[1].u.s;
        q->bl = mv->u.items[1].n;
    } else {
        q->state = MP_BAD_PAIR;
        return;
    }
    q->ha = hf_hash(q->a, q->al);
    q->hb = hf_hash(q->b, q->bl);
    hf_strmap_prefetch(&m->vocab, q->ha);
    hf_strmap_prefetch(&m->vocab, q->hb);
    size_t skip = prefix_len <= q->bl ? prefix_len : q->bl;
    q->clen = q->al + q->bl - skip;
    if (q->clen <= sizeof(q->cat)) {
        memcpy(q->cat, q->a, q->al);
        memcpy(q->cat + q->al, q->b + skip, q->bl - skip);
        q->hc = hf_hash(q->cat, q->clen);
        hf_strmap_prefetch(&m->vocab, q->hc);
    }
}

static int load_bpe(loader *L, const hj_val *o) {
    irt_tokenizer *t = L->t;
    hf_bpe *m = &t->bpe;
    const char *ty = type_of(L, o, "model", "model");
    if (!ty) return -1;
    if (strcmp(ty, "BPE")) return lfail(L, "model.type", "unsupported model '%s' (only BPE)", ty);
    const hj_val *dropout = hj_get(o, "dropout");
    if (dropout && dropout->type == HJ_NUM &&
        (dropout->is_int ? dropout->u.i != 0 : dropout->u.num != 0.0))
        return lfail(L, "model.dropout", "BPE dropout is not supported (not deterministic)");
    bool b;
    if (jbool(L, o, "fuse_unk", "model", false, &m->fuse_unk) ||
        jbool(L, o, "byte_fallback", "model", false, &m->byte_fallback) ||
        jbool(L, o, "ignore_merges", "model", false, &b))
        return -1;
    m->ignore_merges = b;
    if (opt_str(L, o, "unk_token", "model", &m->unk, &m->unklen) ||
        opt_str(L, o, "continuing_subword_prefix", "model", &m->prefix, &m->prefixlen) ||
        opt_str(L, o, "end_of_word_suffix", "model", &m->suffix, &m->suffixlen))
        return -1;
    size_t prefix_len = m->prefixlen;
    /* An empty prefix or suffix behaves exactly like none. */
    if (m->prefix && !m->prefixlen) m->prefix = NULL;
    if (m->suffix && !m->suffixlen) m->suffix = NULL;

    const hj_val *vocab = hj_get(o, "vocab");
    if (!vocab || vocab->type != HJ_OBJ) return lfail(L, "model.vocab", "expected an object");
    size_t key_bytes = 0;
    for (uint32_t i = 0; i < vocab->n; i++) key_bytes += vocab->u.items[2 * i].n;
    if (hf_strmap_init(&m->vocab, vocab->n, key_bytes))
        return lfail(L, "model.vocab", "out of memory");
    uint32_t maxid = 0;
    uint64_t vh[PF];
    for (uint32_t i = 0; i < PF && i < vocab->n; i++) {
        vh[i] = hf_hash(vocab->u.items[2 * i].u.s, vocab->u.items[2 * i].n);
        hf_strmap_prefetch(&m->vocab, vh[i]);
    }
    for (uint32_t i = 0; i < vocab->n; i++) {
        const hj_val *k = &vocab->u.items[2 * i], *v = &vocab->u.items[2 * i + 1];
        uint32_t id;
        uint64_t h = vh[i % PF];
        if (i + PF < vocab->n) {
            const hj_val *nk = &vocab->u.items[2 * (i + PF)];
            vh[i % PF] = hf_hash(nk->u.s, nk->n);
            hf_strmap_prefetch(&m->vocab, vh[i % PF]);
        }
        if (!v || v->type != HJ_NUM || !v->is_int || v->u.i < 0 || v->u.i > INT32_MAX) {
            char p[256];
            snprintf(p, sizeof(p), "model.vocab[\"%.60s\"]", k->u.s);
            return lfail(L, p, "expected a non-negative integer id");
        }
        id = (uint32_t)v->u.i;
        if (hf_strmap_put_h(&m->vocab, k->u.s, k->n, h, id))
            return lfail(L, "model.vocab", "out of memory");
        if (id > maxid) maxid = id;
    }
    m->nids = vocab->n ? (size_t)maxid + 1 : 0;
    m->id_tok = ir_big_calloc((m->nids ? m->nids : 1) * sizeof(*m->id_tok));
    m->id_len = ir_big_calloc((m->nids ? m->nids : 1) * sizeof(*m->id_len));
    if (!m->id_tok || !m->id_len) return lfail(L, "model.vocab", "out of memory");
    for (size_t i = 0; i <= m->vocab.mask; i++) {
        const hf_strslot *e = &m->vocab.slots[i];
        if (!e->len1) continue;
        m->id_tok[e->val] = hf_strmap_key(&m->vocab, e);
        m->id_len[e->val] = e->len1 - 1;
    }

    const hj_val *merges = hj_get(o, "merges");
    if (!merges || merges->type != HJ_ARR) return lfail(L, "model.merges", "expected an array");
    if (hf_pairmap_init(&m->merges, merges->n)) return lfail(L, "model.merges", "out of memory");
    hf_buf cat = {0};
    uint32_t rank = 0;
    merge_pre ring[PF];
    pend_put pend[PF];
    size_t nm = merges->n, npend = 0, pend_head = 0;
    for (size_t i = 0; i < PF && i < nm; i++)
        merge_prepare(m, &merges->u.items[i], prefix_len, &ring[i]);
    for (size_t i = 0; i < nm; i++) {
        merge_pre *q = &ring[i % PF];
        char p[256];
        if (q->state == MP_BAD_STR || q->state == MP_BAD_PAIR) {
            hf_buf_free(&cat);
            idxpath(p, sizeof(p), "model.merges", i);
            return lfail(L, p,
                         q->state == MP_BAD_STR ? "expected \"left right\" with exactly one space"
                                                : "expected a [left, right] pair");
        }
        if (q->state == MP_OK) {
            uint32_t ida, idb, idn;
            bool fa = hf_strmap_get_h(&m->vocab, q->a, q->al, q->ha, &ida);
            if (!fa || !hf_strmap_get_h(&m->vocab, q->b, q->bl, q->hb, &idb)) {
                hf_buf_free(&cat);
                idxpath(p, sizeof(p), "model.merges", i);
                return lfail(L, p, "merge token '%.*s' not in vocab", (int)(fa ? q->bl : q->al),
                             fa ? q->b : q->a);
            }
            const char *cs = q->cat;
            uint64_t hc = q->hc;
            if (q->clen > sizeof(q->cat)) {
                size_t skip = prefix_len <= q->bl ? prefix_len : q->bl;
                cat.len = 0;
                if (hf_buf_add(&cat, q->a, q->al) || hf_buf_add(&cat, q->b + skip, q->bl - skip)) {
                    hf_buf_free(&cat);
                    return lfail(L, "model.merges", "out of memory");
                }
                cs = cat.p;
                hc = hf_hash(cat.p, cat.len);
            }
            if (!hf_strmap_get_h(&m->vocab, cs, q->clen, hc, &idn)) {
                idxpath(p, sizeof(p), "model.merges", i);
                lfail(L, p, "merged token '%.*s' not in vocab", (int)q->clen, cs);
                hf_buf_free(&cat);
                return -1;
            }
            /* Puts go through a FIFO too, so their slots are prefetched
             * and a later duplicate pair still overwrites an earlier one. */
            if (npend == PF) {
                const pend_put *po = &pend[pend_head];
                hf_pairmap_put(&m->merges, po->a, po->b, po->rank, po->id);
                pend_head = (pend_head + 1) % PF;
                npend--;
            }
            pend[(pend_head + npend) % PF] = (pend_put){ida, idb, rank++, idn};
            npend++;
            hf_pairmap_prefetch(&m->merges, ida, idb);
        }
        if (i + PF < nm) merge_prepare(m, &merges->u.items[i + PF], prefix_len, q);
    }
    for (; npend; npend--, pend_head = (pend_head + 1) % PF)
        hf_pairmap_put(&m->merges, pend[pend_head].a, pend[pend_head].b, pend[pend_head].rank,
                       pend[pend_head].id);
    hf_buf_free(&cat);

    for (int c = 0; c < 256; c++) {
        char code[8];
        uint32_t id;
        snprintf(code, sizeof(code), "<0x%02X>", c);
        m->byte_fb[c] = hf_strmap_get(&m->vocab, code, 6, &id) ? (int32_t)id : -1;
        if (c < 128) {
            char ch = (char)c;
            m->ascii_id[c] = hf_strmap_get(&m->vocab, &ch, 1, &id) ? (int32_t)id : -1;
        }
    }
    return 0;
}

/* Raw mode: when the last pre-tokenizer is the only ByteLevel, BPE can work
 * on raw bytes with a vocab keyed by raw bytes, skipping the char mapping. */
static int setup_raw_mode(loader *L) {
    irt_tokenizer *t = L->t;
    hf_bpe *m = &t->bpe;
    size_t nbl = 0;
    for (size_t i = 0; i < t->nstages; i++) nbl += t->stages[i].type == PT_BYTELEVEL;
    if (nbl != 1 || t->stages[t->nstages - 1].type != PT_BYTELEVEL) return 0;
    if (m->byte_fallback || m->prefix || m->suffix) return 0;
    int32_t inv[0x144];
    memset(inv, 0xFF, sizeof(inv));
    for (unsigned b = 0; b < 256; b++) inv[hf_byte_char(b)] = (int32_t)b;
    if (hf_strmap_init(&m->vocab_raw, m->vocab.n, m->vocab.plen))
        return lfail(L, "model.vocab", "out of memory");
    /* Keys are distinct, so the order of puts does not matter: a ring of
     * PF prepared keys, each put once its slot has been prefetched. */
    struct {
        uint64_t h;
        uint32_t n, val;
        char key[56];
    } ring[PF];
    size_t head = 0, count = 0;
    char big[256];
    hf_buf rb = {0};
    for (size_t i = 0; i <= m->vocab.mask + PF; i++) {
        if (count == PF || (i > m->vocab.mask && count)) {
            size_t k = (head + PF - count) % PF;
            if (hf_strmap_put_h(&m->vocab_raw, ring[k].key, ring[k].n, ring[k].h, ring[k].val)) {
                hf_buf_free(&rb);
                return lfail(L, "model.vocab", "out of memory");
            }
            count--;
        }
        if (i > m->vocab.mask) continue;
        const hf_strslot *e = &m->vocab.slots[i];
        if (!e->len1) continue;
        size_t elen = e->len1 - 1;
        char *raw = elen <= sizeof(ring[0].key) ? ring[head].key : big;
        if (elen > sizeof(big)) {
            rb.len = 0;
            if (hf_buf_reserve(&rb, elen)) return lfail(L, "model.vocab", "out of memory");
            raw = rb.p;
        }
        const char *key = hf_strmap_key(&m->vocab, e);
        size_t n = 0;
        bool ok = true;
        for (size_t k = 0; k < elen && ok;) {
            uint32_t cp;
            k += (size_t)hf_utf8_dec((const unsigned char *)key + k, &cp);
            if (cp >= 0x144 || inv[cp] < 0)
                ok = false;
            else
                raw[n++] = (char)inv[cp];
        }
        if (!ok) continue;
        if (raw != ring[head].key) {
            if (hf_strmap_put(&m->vocab_raw, raw, n, e->val)) {
                hf_buf_free(&rb);
                return lfail(L, "model.vocab", "out of memory");
            }
            continue;
        }
        ring[head].n = (uint32_t)n;
        ring[head].val = e->val;
        ring[head].h = hf_hash(raw, n);
        hf_strmap_prefetch(&m->vocab_raw, ring[head].h);
        head = (head + 1) % PF;
        count++;
    }
    hf_buf_free(&rb);
    for (unsigned b = 0; b < 256; b++) {
        char ch[4];
        uint32_t id;
        int n = hf_utf8_enc(hf_byte_char(b), ch);
        m->byte_id[b] = hf_strmap_get(&m->vocab, ch, (size_t)n, &id) ? (int32_t)id : -1;
    }
    m->raw = true;
    t->stages[t->nstages - 1].byte_map = false;
    return 0;
}

/* ---- added tokens ------------------------------------------------------------------------ */
static int trie_add(hf_trie *tr, const char *s, size_t len, int32_t idx, size_t *cap) {
    uint32_t node = 0, child, dummy;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!hf_pairmap_get(&tr->edges, node, c, &child, &dummy)) {
            if (tr->nnodes == *cap) {
                size_t nc = *cap * 2;
                int32_t *x = realloc(tr->term, nc * sizeof(*x));
                if (!x) return -1;
                tr->term = x;
                uint8_t *y = realloc(tr->inner, nc);
                if (!y) return -1;
                tr->inner = y;
                *cap = nc;
            }
            child = (uint32_t)tr->nnodes++;
            tr->term[child] = -1;
            tr->inner[child] = 0;
            tr->inner[node] = 1;
            if (tr->edges.n + 1 > (tr->edges.mask + 1) / 4 * 3) return -1; /* sized up front */
            hf_pairmap_put(&tr->edges, node, c, child, 0);
        }
        node = child;
    }
    if (tr->term[node] < 0) tr->term[node] = idx; /* the first of equal patterns wins */
    if (len) tr->first[(unsigned char)s[0] >> 3] |= (uint8_t)(1u << ((unsigned char)s[0] & 7));
    tr->ntokens++;
    return 0;
}

static int trie_init(hf_trie *tr, size_t total_bytes) {
    memset(tr, 0, sizeof(*tr));
    if (hf_pairmap_init(&tr->edges, total_bytes + 16)) return -1;
    tr->term = malloc(64 * sizeof(*tr->term));
    tr->inner = malloc(64);
    if (!tr->term || !tr->inner) return -1;
    tr->term[0] = -1;
    tr->inner[0] = 0;
    tr->nnodes = 1;
    return 0;
}

static void trie_free(hf_trie *tr) {
    hf_pairmap_free(&tr->edges);
    free(tr->term);
    free(tr->inner);
}

static int load_added(loader *L, const hj_val *arr) {
    irt_tokenizer *t = L->t;
    if (!arr || arr->type == HJ_NULL)
        arr = NULL;
    else if (arr->type != HJ_ARR)
        return lfail(L, "added_tokens", "expected an array");
    size_t n = arr ? arr->n : 0;
    hf_added *all = calloc(n ? n : 1, sizeof(*all));
    t->added = calloc(n ? n : 1, sizeof(*t->added));
    if (!all || !t->added || hf_strmap_init(&t->added_map, n, 0))
        return free(all), lfail(L, "added_tokens", "out of memory");
    /* Parse. */
    for (size_t i = 0; i < n; i++) {
        const hj_val *o = &arr->u.items[i];
        char p[256], cp[300];
        idxpath(p, sizeof(p), "added_tokens", i);
        if (o->type != HJ_OBJ) return free(all), lfail(L, p, "expected an object");
        const hj_val *c = hj_get(o, "content");
        subpath(cp, sizeof(cp), p, "content");
        if (!c || c->type != HJ_STR) return free(all), lfail(L, cp, "expected a string");
        hf_added *a = &all[i];
        a->content = tdup(L, c->u.s, c->n);
        a->len = c->n;
        if (!a->content) return free(all), lfail(L, p, "out of memory");
        if (jbool(L, o, "special", p, false, &a->special) ||
            jbool(L, o, "single_word", p, false, &a->single_word) ||
            jbool(L, o, "lstrip", p, false, &a->lstrip) ||
            jbool(L, o, "rstrip", p, false, &a->rstrip) ||
            jbool(L, o, "normalized", p, !a->special, &a->normalized))
            return free(all), -1;
        const hj_val *idv = hj_get(o, "id");
        uint32_t dummy;
        subpath(cp, sizeof(cp), p, "id");
        if (idv && juint(L, idv, cp, &dummy)) return free(all), -1;
    }
    /* Assign ids the way AddedVocabulary::add_tokens does; the JSON ids are
     * only hints there. First the special tokens, deduplicated by content. */
    hf_strmap special = {0};
    if (hf_strmap_init(&special, n, 0)) return free(all), lfail(L, "added_tokens", "out of memory");
    size_t *order = calloc(n ? n : 1, sizeof(*order)); /* special first, then the rest */
    bool *keep = calloc(n ? n : 1, sizeof(*keep));
    size_t norder = 0;
    int rc = 0;
    if (!order || !keep) rc = lfail(L, "added_tokens", "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        uint32_t d;
        if (all[i].special && all[i].len &&
            !hf_strmap_get(&special, all[i].content, all[i].len, &d)) {
            hf_strmap_put(&special, all[i].content, all[i].len, 1);
            order[norder++] = i;
            keep[i] = true;
        }
    }
    uint32_t next_id = (uint32_t)t->bpe.vocab.n;
    for (size_t i = 0; !rc && i < n; i++) {
        hf_added *a = &all[i];
        if (!a->len) continue;
        uint32_t id, d;
        if (!hf_strmap_get(&t->added_map, a->content, a->len, &id) &&
            !hf_strmap_get(&t->bpe.vocab, a->content, a->len, &id))
            id = next_id++;
        a->id = id;
        if (hf_strmap_put(&t->added_map, a->content, a->len, id))
            rc = lfail(L, "added_tokens", "out of memory");
        if (!hf_strmap_get(&special, a->content, a->len, &d) && !keep[i]) {
            order[norder++] = i;
            keep[i] = true;
        }
    }
    /* Resolve ids and flags per id (the last token written for an id wins). */
    size_t maxid = 0;
    for (size_t i = 0; i < n; i++)
        if (all[i].len && all[i].id > maxid) maxid = all[i].id;
    int32_t *last = NULL;
    if (!rc && n) {
        last = malloc((maxid + 1) * sizeof(*last));
        if (!last)
            rc = lfail(L, "added_tokens", "out of memory");
        else {
            memset(last, 0xFF, (maxid + 1) * sizeof(*last));
            for (size_t i = 0; i < n; i++)
                if (all[i].len) last[all[i].id] = (int32_t)i;
        }
    }
    size_t total_raw = 0, total_norm = 0;
    for (size_t k = 0; !rc && k < norder; k++) {
        hf_added *src = &all[order[k]];
        uint32_t id = 0;
        hf_strmap_get(&t->added_map, src->content, src->len, &id);
        hf_added *a = &t->added[t->nadded++];
        *a = all[last[id]];
        a->content = src->content;
        a->len = src->len;
        a->id = id;
        if (a->normalized)
            total_norm += a->len * 4 + 8;
        else
            total_raw += a->len;
    }
    free(last);
    if (!rc && hf_pairmap_init(&t->added_ids, t->nadded))
        rc = lfail(L, "added_tokens", "out of memory");
    for (size_t k = 0; !rc && k < t->nadded; k++)
        hf_pairmap_put(&t->added_ids, t->added[k].id, 0, (uint32_t)k, 0);
    /* Special ids and the vocab size. */
    size_t vs = t->bpe.nids;
    for (size_t k = 0; k < t->nadded; k++)
        if (t->added[k].id + 1 > vs) vs = t->added[k].id + 1;
    t->vocab_size = vs;
    t->special_ids = calloc(vs / 8 + 1, 1);
    if (!rc && !t->special_ids) rc = lfail(L, "added_tokens", "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        uint32_t id;
        if (all[i].special && all[i].len &&
            hf_strmap_get(&t->added_map, all[i].content, all[i].len, &id))
            t->special_ids[id / 8] |= (uint8_t)(1u << (id % 8));
    }
    /* Tries: unnormalized tokens as written, normalized ones normalized. */
    if (!rc && (trie_init(&t->trie_raw, total_raw) || trie_init(&t->trie_norm, total_norm)))
        rc = lfail(L, "added_tokens", "out of memory");
    size_t cap_raw = 64, cap_norm = 64;
    hf_buf nb = {0};
    for (size_t k = 0; !rc && k < t->nadded; k++) {
        hf_added *a = &t->added[k];
        if (!a->normalized) {
            if (trie_add(&t->trie_raw, a->content, a->len, (int32_t)k, &cap_raw))
                rc = lfail(L, "added_tokens", "out of memory");
            continue;
        }
        nb.len = 0;
        if (t->norm ? hf_normalize(t->norm, a->content, a->len, &nb, NULL)
                    : hf_buf_add(&nb, a->content, a->len)) {
            rc = lfail(L, "added_tokens", "cannot normalize '%s'", a->content);
            break;
        }
        if (nb.len > a->len * 4 + 8) { /* grow the edge table if normalization expanded */
            rc = lfail(L, "added_tokens", "normalized token too long: '%s'", a->content);
            break;
        }
        if (nb.len && trie_add(&t->trie_norm, nb.p, nb.len, (int32_t)k, &cap_norm))
            rc = lfail(L, "added_tokens", "out of memory");
    }
    hf_buf_free(&nb);
    free(order);
    free(keep);
    hf_strmap_free(&special);
    free(all);
    return rc;
}

/* ---- post-processors ----------------------------------------------------------------------- */
static int load_post(loader *L, const hj_val *o, const char *path) {
    irt_tokenizer *t = L->t;
    const char *ty = type_of(L, o, path, "post-processor");
    char p[256];
    if (!ty) return -1;
    if (!strcmp(ty, "Sequence")) {
        const hj_val *a = hj_get(o, "processors");
        subpath(p, sizeof(p), path, "processors");
        if (!a || a->type != HJ_ARR) return lfail(L, p, "expected an array");
        for (uint32_t i = 0; i < a->n; i++) {
            char ip[256];
            idxpath(ip, sizeof(ip), p, i);
            if (load_post(L, &a->u.items[i], ip)) return -1;
        }
        return 0;
    }
    if (t->npost == HF_MAX_STAGES) return lfail(L, path, "too many post-processors");
    hf_post *pp = &t->post[t->npost++];
    memset(pp, 0, sizeof(*pp));
    if (!strcmp(ty, "ByteLevel")) {
        pp->type = PP_BYTELEVEL;
    } else if (!strcmp(ty, "TemplateProcessing")) {
        pp->type = PP_TEMPLATE;
        const hj_val *single = hj_get(o, "single"), *st = hj_get(o, "special_tokens");
        subpath(p, sizeof(p), path, "single");
        if (!single || single->type != HJ_ARR) return lfail(L, p, "expected an array");
        pp->items = ir_arena_calloc(t->arena, (single->n + 1) * sizeof(hf_tpl_item));
        if (!pp->items) return lfail(L, p, "out of memory");
        for (uint32_t i = 0; i < single->n; i++) {
            const hj_val *it = &single->u.items[i];
            char ip[256], sp[300];
            idxpath(ip, sizeof(ip), p, i);
            hf_tpl_item *ti = &pp->items[pp->nitems++];
            memset(ti, 0, sizeof(*ti));
            const hj_val *sq = hj_get(it, "Sequence"), *sk = hj_get(it, "SpecialToken");
            if (sq) {
                ti->is_seq = true;
                continue;
            }
            const char *name = jstr(hj_get(sk, "id"));
            subpath(sp, sizeof(sp), ip, "SpecialToken.id");
            if (!name)
                return lfail(L, ip, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
            const hj_val *def = hj_get(st, name);
            if (!def) return lfail(L, sp, "'%s' missing from special_tokens", name);
            const hj_val *ids = hj_get(def, "ids");
            char dp[300];
            snprintf(dp, sizeof(dp), "%s.special_tokens[\"%.60s\"].ids", path, name);
            if (!ids || ids->type != HJ_ARR) return lfail(L, dp, "expected an array");
            ti->ids = ir_arena_calloc(t->arena, (ids->n + 1) * sizeof(uint32_t));
            if (!ti->ids) return lfail(L, dp, "out of memory");
            for (uint32_t k = 0; k < ids->n; k++) {
                char kp[320];
                idxpath(kp, sizeof(kp), dp, k);
                if (juint(L, &ids->u.items[k], kp, &ti->ids[k])) return -1;
            }
            ti->nids = ids->n;
        }
    } else if (!strcmp(ty, "RobertaProcessing") || !strcmp(ty, "BertProcessing")) {
        pp->type = ty[0] == 'R' ? PP_ROBERTA : PP_BERT;
        const char *keys[2] = {"cls", "sep"};
        uint32_t *dst[2] = {&pp->cls, &pp->sep};
        for (int k = 0; k < 2; k++) {
            const hj_val *v = hj_get(o, keys[k]);
            subpath(p, sizeof(p), path, keys[k]);
            if (!v || v->type != HJ_ARR || v->n != 2) return lfail(L, p, "expected [token, id]");
            if (juint(L, &v->u.items[1], p, dst[k])) return -1;
        }
    } else {
        t->npost--;
        subpath(p, sizeof(p), path, "type");
        return lfail(L, p, "unsupported post-processor '%s'", ty);
    }
    return 0;
}

/* ---- decoders -----------------------------------------------------------------------------------
 */
static int load_dec(loader *L, const hj_val *o, const char *path) {
    irt_tokenizer *t = L->t;
    const char *ty = type_of(L, o, path, "decoder");
    char p[256];
    if (!ty) return -1;
    if (!strcmp(ty, "Sequence")) {
        const hj_val *a = hj_get(o, "decoders");
        subpath(p, sizeof(p), path, "decoders");
        if (!a || a->type != HJ_ARR) return lfail(L, p, "expected an array");
        for (uint32_t i = 0; i < a->n; i++) {
            char ip[256];
            idxpath(ip, sizeof(ip), p, i);
            if (load_dec(L, &a->u.items[i], ip)) return -1;
        }
        return 0;
    }
    if (t->ndec == HF_MAX_STAGES) return lfail(L, path, "too many decoders");
    hf_dec *d = &t->dec[t->ndec++];
    memset(d, 0, sizeof(*d));
    if (!strcmp(ty, "ByteLevel"))
        d->type = DEC_BYTELEVEL;
    else if (!strcmp(ty, "ByteFallback"))
        d->type = DEC_BYTEFALLBACK;
    else if (!strcmp(ty, "Fuse"))
        d->type = DEC_FUSE;
    else if (!strcmp(ty, "Replace")) {
        d->type = DEC_REPLACE;
        const hj_val *pat = hj_get(o, "pattern"), *c = hj_get(o, "content");
        const hj_val *s = hj_get(pat, "String");
        subpath(p, sizeof(p), path, "pattern");
        if (!s || s->type != HJ_STR) return lfail(L, p, "only {\"String\": ...} is supported");
        subpath(p, sizeof(p), path, "content");
        if (!c || c->type != HJ_STR) return lfail(L, p, "expected a string");
        d->a = tdup(L, s->u.s, s->n);
        d->alen = s->n;
        d->b = tdup(L, c->u.s, c->n);
        d->blen = c->n;
    } else if (!strcmp(ty, "Strip")) {
        d->type = DEC_STRIP;
        const hj_val *c = hj_get(o, "content"), *st = hj_get(o, "start"), *sp = hj_get(o, "stop");
        subpath(p, sizeof(p), path, "content");
        if (!c || c->type != HJ_STR || !c->n) return lfail(L, p, "expected a character");
        hf_utf8_dec((const unsigned char *)c->u.s, &d->cp);
        uint32_t a = 0, b = 0;
        subpath(p, sizeof(p), path, "start");
        if (st && juint(L, st, p, &a)) return -1;
        subpath(p, sizeof(p), path, "stop");
        if (sp && juint(L, sp, p, &b)) return -1;
        d->start = a;
        d->stop = b;
    } else if (!strcmp(ty, "Metaspace")) {
        d->type = DEC_METASPACE;
        if (parse_replacement(L, o, path, &d->cp) || parse_prepend(L, o, path, &d->prepend))
            return -1;
    } else if (!strcmp(ty, "BPEDecoder")) {
        d->type = DEC_BPE;
        const hj_val *s = hj_get(o, "suffix");
        const char *sv = s && s->type == HJ_STR ? s->u.s : "</w>";
        d->a = tdup(L, sv, strlen(sv));
        d->alen = strlen(sv);
    } else if (!strcmp(ty, "WordPiece")) {
        d->type = DEC_WORDPIECE;
        const hj_val *s = hj_get(o, "prefix");
        const char *sv = s && s->type == HJ_STR ? s->u.s : "##";
        d->a = tdup(L, sv, strlen(sv));
        d->alen = strlen(sv);
        if (jbool(L, o, "cleanup", path, true, &d->cleanup)) return -1;
    } else {
        t->ndec--;
        subpath(p, sizeof(p), path, "type");
        return lfail(L, p, "unsupported decoder '%s'", ty);
    }
    return 0;
}

/* ---- top level
 * ------------------------------------------------------------------------------------ */
static irt_tokenizer *load_root(const hj_val *root, char *err, size_t errlen) {
    irt_tokenizer *t = calloc(1, sizeof(*t));
    if (t) t->arena = hf_arena_new(HF_TOKENIZER_ARENA_MAX);
    if (!t || !t->arena) {
        free(t);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    loader L = {t, err, errlen};
    if (root->type != HJ_OBJ) {
        lfail(&L, "$", "expected an object");
        goto fail;
    }
    const char *ver = jstr(hj_get(root, "version"));
    if (hj_get(root, "version") && (!ver || strcmp(ver, "1.0"))) {
        lfail(&L, "version", "unknown tokenizer version");
        goto fail;
    }
    const hj_val *tr = hj_get(root, "truncation"), *pd = hj_get(root, "padding");
    if (tr && tr->type != HJ_NULL) {
        lfail(&L, "truncation", "truncation is not supported (must be null)");
        goto fail;
    }
    (void)pd; /* padding only matters for batches */
    const hj_val *model = hj_get(root, "model");
    if (!model) {
        lfail(&L, "model", "missing");
        goto fail;
    }
    if (load_bpe(&L, model)) goto fail;
    const hj_val *v = hj_get(root, "normalizer");
    if (v && v->type != HJ_NULL) {
        t->norm = ir_arena_calloc(t->arena, sizeof(hf_norm));
        if (!t->norm) goto fail;
        if (load_norm(&L, v, "normalizer", t->norm)) goto fail;
    }
    v = hj_get(root, "pre_tokenizer");
    if (v && v->type != HJ_NULL && load_pretok(&L, v, "pre_tokenizer")) goto fail;
    t->pretok_single = v && v->type == HJ_OBJ && t->nstages == 1 &&
                       strcmp(jstr(hj_get(v, "type")) ? jstr(hj_get(v, "type")) : "", "Sequence");
    if (setup_raw_mode(&L)) goto fail;
    if (load_added(&L, hj_get(root, "added_tokens"))) goto fail;
    v = hj_get(root, "post_processor");
    if (v && v->type != HJ_NULL && load_post(&L, v, "post_processor")) goto fail;
    v = hj_get(root, "decoder");
    if (v && v->type != HJ_NULL) {
        t->has_decoder = true;
        if (load_dec(&L, v, "decoder")) goto fail;
    }
    t->bpe.wcache = hf_wcache_new(); /* NULL: every word merged, same ids */
    return t;
fail:
    irt_free(t);
    return NULL;
}

static irt_tokenizer *load_owned(char *json, size_t len, char *err, size_t errlen) {
    ir_arena *dom = hf_arena_new(HF_DOM_ARENA_MAX(len));
    char jerr[256];
    hj_val *root = dom ? hj_parse(dom, json, len, jerr, sizeof(jerr)) : NULL;
    if (!root) {
        snprintf(err, errlen, "tokenizer.json: %s", dom ? jerr : "out of memory");
        ir_arena_free(dom);
        return NULL;
    }
    irt_tokenizer *t = load_root(root, err, errlen);
    ir_arena_free(dom);
    return t;
}

irt_tokenizer *irt_load_json(const char *json, size_t len, char *err, size_t errlen) {
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    if (!json) {
        snprintf(err, errlen, "no JSON given");
        return NULL;
    }
    char *copy = len < SIZE_MAX ? ir_big_calloc(len + 1) : NULL;
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    memcpy(copy, json, len);
    copy[len] = 0;
    irt_tokenizer *t = load_owned(copy, len, err, errlen);
    ir_big_free(copy);
    return t;
}

void irt_free(irt_tokenizer *t) {
    if (!t) return;
    hf_norm_free(t->norm);
    for (size_t i = 0; i < t->nstages; i++) hf_pattern_free(&t->stages[i].pat);
    hf_strmap_free(&t->bpe.vocab);
    hf_strmap_free(&t->bpe.vocab_raw);
    ir_big_free(t->bpe.id_tok);
    ir_big_free(t->bpe.id_len);
    hf_pairmap_free(&t->bpe.merges);
    hf_wcache_free(t->bpe.wcache);
    free(t->added);
    hf_strmap_free(&t->added_map);
    hf_pairmap_free(&t->added_ids);
    trie_free(&t->trie_raw);
    trie_free(&t->trie_norm);
    free(t->special_ids);
    ir_arena_free(t->arena);
    free(t);
}

size_t irt_memory_bytes(const irt_tokenizer *t) {
    if (!t) return 0;
    const hf_bpe *m = &t->bpe;
    size_t n = sizeof(*t) + ir_arena_held(t->arena) + hf_strmap_bytes(&m->vocab) +
               hf_strmap_bytes(&m->vocab_raw) + m->nids * (sizeof(char *) + sizeof(uint32_t)) +
               (m->merges.mask + 1) * sizeof(hf_pairent) + t->nadded * sizeof(hf_added) +
               hf_strmap_bytes(&t->added_map) + t->vocab_size / 8 + 1 +
               (m->wcache ? hf_wcache_bytes() : 0);
    const hf_trie *tr[2] = {&t->trie_raw, &t->trie_norm};
    for (int i = 0; i < 2; i++)
        n += (tr[i]->edges.mask + 1) * sizeof(hf_pairent) + tr[i]->nnodes * sizeof(int32_t);
    return n;
}

size_t irt_vocab_size(const irt_tokenizer *t) {
    return t ? t->vocab_size : 0;
}

int64_t irt_token_to_id(const irt_tokenizer *t, const char *tok, size_t len) {
    uint32_t id;
    if (!t || !tok) return -1;
    if (hf_strmap_get(&t->added_map, tok, len, &id) || hf_strmap_get(&t->bpe.vocab, tok, len, &id))
        return id;
    return -1;
}

/* ---- specs: directories, files, the local Hugging Face cache
 * -------------------------------------- */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen) {
    char why[128];
    FILE *f = ir_fopen_regular(path, why, sizeof why);
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, why);
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) || st.st_size < 0 || (uint64_t)st.st_size > ((uint64_t)1 << 31)) {
        snprintf(err, errlen, "%s: cannot size file", path);
        fclose(f);
        return NULL;
    }
    char *buf = ir_big_calloc((size_t)st.st_size + 1);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        fclose(f);
        return NULL;
    }
    size_t n = fread(buf, 1, (size_t)st.st_size, f);
    fclose(f);
    if (n != (size_t)st.st_size) {
        snprintf(err, errlen, "%s: short read", path);
        ir_big_free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}
static bool is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The optional companions must at least be valid JSON objects. */
static int check_companion(const char *dir, const char *name, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (!is_file(path)) return 0;
    size_t len;
    char *txt = read_file(path, &len, err, errlen);
    if (!txt) return -1;
    ir_arena *a = hf_arena_new(HF_DOM_ARENA_MAX(len));
    char jerr[256];
    hj_val *v = a ? hj_parse(a, txt, len, jerr, sizeof(jerr)) : NULL;
    int rc = 0;
    if (!v) {
        snprintf(err, errlen, "%s: %s", name, a ? jerr : "out of memory");
        rc = -1;
    } else if (v->type != HJ_OBJ) {
        snprintf(err, errlen, "%s: $: expected an object", name);
        rc = -1;
    }
    ir_arena_free(a);
    ir_big_free(txt);
    return rc;
}

static int hub_dir(char *out, size_t n) {
    const char *e;
    if ((e = getenv("HF_HUB_CACHE")) && *e) return snprintf(out, n, "%s", e), 0;
    if ((e = getenv("HUGGINGFACE_HUB_CACHE")) && *e) return snprintf(out, n, "%s", e), 0;
    if ((e = getenv("HF_HOME")) && *e) return snprintf(out, n, "%s/hub", e), 0;
    if ((e = getenv("XDG_CACHE_HOME")) && *e) return snprintf(out, n, "%s/huggingface/hub", e), 0;
    if ((e = getenv("HOME")) && *e) return snprintf(out, n, "%s/.cache/huggingface/hub", e), 0;
    return -1;
}

static bool valid_repo_part(const char *s, size_t n) {
    if (!n || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

/* org/name[@rev] -> the snapshot directory. */
static int resolve_hub(const char *spec, char *out, size_t outlen, char *err, size_t errlen) {
    const char *slash = strchr(spec, '/'), *at = strchr(spec, '@');
    const char *end = at ? at : spec + strlen(spec);
    const char *slash2 = slash ? memchr(slash + 1, '/', (size_t)(end - slash - 1)) : NULL;
    if (!slash || slash > end || slash2 || !valid_repo_part(spec, (size_t)(slash - spec)) ||
        !valid_repo_part(slash + 1, (size_t)(end - slash - 1))) {
        snprintf(err, errlen, "%s: not a directory, a tokenizer.json file, or org/name[@revision]",
                 spec);
        return -1;
    }
    const char *rev = at ? at + 1 : "main";
    if (!*rev || strstr(rev, "..")) {
        snprintf(err, errlen, "%s: bad revision", spec);
        return -1;
    }
    char hub[2048], repo[3072], path[4096];
    if (hub_dir(hub, sizeof(hub))) {
        snprintf(err, errlen, "%s: no Hugging Face cache (set HF_HOME)", spec);
        return -1;
    }
    snprintf(repo, sizeof(repo), "%s/models--%.*s--%.*s", hub, (int)(slash - spec), spec,
             (int)(end - slash - 1), slash + 1);
    if (!is_dir(repo)) {
        snprintf(err, errlen, "%s: not in the local Hugging Face cache (%s); nothing is downloaded",
                 spec, repo);
        return -1;
    }
    /* A ref (branch or tag) names a commit; otherwise the revision is a commit. */
    char commit[256] = {0};
    snprintf(path, sizeof(path), "%s/refs/%s", repo, rev);
    FILE *f = is_file(path) ? fopen(path, "r") : NULL;
    if (f) {
        if (!fgets(commit, sizeof(commit), f)) commit[0] = 0;
        fclose(f);
        commit[strcspn(commit, "\r\n \t")] = 0;
    } else {
        snprintf(commit, sizeof(commit), "%s", rev);
    }
    if (!commit[0] || strchr(commit, '/')) {
        snprintf(err, errlen, "%s: bad ref for revision '%s'", spec, rev);
        return -1;
    }
    snprintf(out, outlen, "%s/snapshots/%s", repo, commit);
    if (!is_dir(out)) {
        snprintf(err, errlen, "%s: revision '%s' not in the local cache (%s)", spec, rev, out);
        return -1;
    }
    return 0;
}

irt_tokenizer *irt_load(const char *spec, char *err, size_t errlen) {
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    if (!spec || !*spec) {
        snprintf(err, errlen, "empty tokenizer spec");
        return NULL;
    }
    if (!strncmp(spec, "builtin:", 8)) {
        snprintf(err, errlen, "%s: builtin tokenizers are not tokenizer.json files", spec);
        return NULL;
    }
    char dir[4096], file[4200];
    if (is_file(spec)) {
        snprintf(file, sizeof(file), "%s", spec);
        dir[0] = 0;
    } else {
        if (is_dir(spec))
            snprintf(dir, sizeof(dir), "%s", spec);
        else if (resolve_hub(spec, dir, sizeof(dir), err, errlen))
            return NULL;
        snprintf(file, sizeof(file), "%s/tokenizer.json", dir);
        if (!is_file(file)) {
            snprintf(err, errlen, "%s: no tokenizer.json in %s", spec, dir);
            return NULL;
        }
        if (check_companion(dir, "tokenizer_config.json", err, errlen) ||
            check_companion(dir, "special_tokens_map.json", err, errlen))
            return NULL;
    }
    size_t len;
    char *txt = read_file(file, &len, err, errlen);
    if (!txt) return NULL;
    irt_tokenizer *t = load_owned(txt, len, err, errlen);
    ir_big_free(txt);
    /* a model directory: tokenizer_config.json changes the pipeline as in transformers */
    if (t && dir[0] && hf_apply_config(t, dir, err, errlen)) {
        irt_free(t);
        return NULL;
    }
    return t;
}

int irt_spec_dir(const char *spec, char *dir, size_t n, char *err, size_t errlen) {
    char dummy[8];
    if (!err) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    if (!spec || !*spec || !strncmp(spec, "builtin:", 8)) {
        snprintf(err, errlen, "%s: not a tokenizer.json spec", spec ? spec : "");
        return -1;
    }
    if (is_file(spec)) {
        const char *slash = strrchr(spec, '/');
        if (!slash)
            snprintf(dir, n, ".");
        else
            snprintf(dir, n, "%.*s", (int)(slash - spec), spec);
        return 0;
    }
    if (is_dir(spec)) {
        snprintf(dir, n, "%s", spec);
        return 0;
    }
    return resolve_hub(spec, dir, n, err, errlen);
}
