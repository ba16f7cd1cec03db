/* hf_encode.c: the encode pipeline. Pieces flow depth-first: added tokens
 * are cut out of the raw text, the rest is normalized, normalized added
 * tokens are cut out, then each pre-tokenizer stage splits its piece and
 * hands every sub-piece to the next stage, and the last stage feeds BPE.
 * Each stage owns its scratch buffers, so a parent's piece never moves
 * while its children run. All scratch belongs to one call. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/hf_internal.h"

typedef struct piece {
    size_t start, end;
} piece;

typedef struct event {
    size_t start, end;
    bool match;
} event;

typedef struct stage_scratch {
    hf_buf buf, map;
    hf_match *m;
    size_t nm, mcap;
    event *ev;
    size_t nev, evcap;
    piece *pc;
    size_t npc, pccap;
} stage_scratch;

/* A call's scratch memory; each thread keeps one between its calls (below). */
typedef struct hf_scratch {
    hf_buf nbuf;
    stage_scratch st[HF_MAX_STAGES];
    pcre2_match_data *md;
    hf_bpe_scratch bpe;
} hf_scratch;

struct hf_ctx {
    const irt_tokenizer *t;
    irt_cache *cache; /* NULL: no cache */
    irt_ids *out;
    hf_scratch *x;
};

static const uint16_t *bytes_char_table(void) {
    /* GPT-2's byte-to-char map: printable bytes map to themselves, the rest
     * to U+0100 onwards in byte order. Computed as a constant expression. */
    static const uint16_t tab[256] = {
#define R(b)   ((b) >= 0x21 && (b) <= 0x7E) || ((b) >= 0xA1 && (b) <= 0xAC) || ((b) >= 0xAE) ? (b) : 0
#define R4(b)  R(b), R(b + 1), R(b + 2), R(b + 3)
#define R16(b) R4(b), R4(b + 4), R4(b + 8), R4(b + 12)
        R16(0x00), R16(0x10), R16(0x20), R16(0x30), R16(0x40), R16(0x50), R16(0x60), R16(0x70),
        R16(0x80), R16(0x90), R16(0xA0), R16(0xB0), R16(0xC0), R16(0xD0), R16(0xE0), R16(0xF0),
#undef R
#undef R4
#undef R16
    };
    return tab;
}

uint32_t hf_byte_char(unsigned b) {
    const uint16_t *t = bytes_char_table();
    if (t[b]) return t[b];
    /* Unprintable bytes: U+0100 + their rank among unprintable bytes. */
    uint32_t n = 0;
    for (unsigned i = 0; i < b; i++) n += t[i] == 0;
    return 0x100 + n;
}

static int ev_push(stage_scratch *st, size_t s, size_t e, bool match) {
    if (st->nev == st->evcap) {
        size_t cap = st->evcap ? st->evcap * 2 : 64;
        event *p = realloc(st->ev, cap * sizeof(*p));
        if (!p) return -1;
        st->ev = p;
        st->evcap = cap;
    }
    st->ev[st->nev++] = (event){s, e, match};
    return 0;
}

static int pc_push(stage_scratch *st, size_t s, size_t e) {
    if (st->npc == st->pccap) {
        size_t cap = st->pccap ? st->pccap * 2 : 64;
        piece *p = realloc(st->pc, cap * sizeof(*p));
        if (!p) return -1;
        st->pc = p;
        st->pccap = cap;
    }
    st->pc[st->npc++] = (piece){s, e};
    return 0;
}

/* Events from regex/literal matches: gaps and matches covering the text. */
static int events_from_matches(stage_scratch *st, size_t len, bool invert) {
    st->nev = 0;
    if (len == 0) return ev_push(st, 0, 0, invert);
    size_t prev = 0;
    for (size_t i = 0; i < st->nm; i++) {
        if (prev != st->m[i].start && ev_push(st, prev, st->m[i].start, invert)) return -1;
        if (ev_push(st, st->m[i].start, st->m[i].end, !invert)) return -1;
        prev = st->m[i].end;
    }
    if (prev != len && ev_push(st, prev, len, invert)) return -1;
    return 0;
}

/* Events from a per-character predicate: each matching char is one match. */
static int events_from_pred(stage_scratch *st, const char *s, size_t len,
                            bool (*pred)(uint32_t, const void *), const void *ud) {
    st->nev = 0;
    if (len == 0) return ev_push(st, 0, 0, false);
    const unsigned char *u = (const unsigned char *)s;
    size_t last = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = (size_t)hf_utf8_dec(u + i, &cp);
        if (pred(cp, ud)) {
            if (last < i && ev_push(st, last, i, false)) return -1;
            if (ev_push(st, i, i + k, true)) return -1;
            last = i + k;
        }
        i += k;
    }
    if (len > last && ev_push(st, last, len, false)) return -1;
    return 0;
}

/* Turns events into pieces for a split behaviour, as NormalizedString::split. */
static int apply_behavior(stage_scratch *st, int behavior) {
    st->npc = 0;
    bool prev_match = false;
    switch (behavior) {
    case SPLIT_ISOLATED:
        for (size_t i = 0; i < st->nev; i++)
            if (pc_push(st, st->ev[i].start, st->ev[i].end)) return -1;
        break;
    case SPLIT_REMOVED:
        for (size_t i = 0; i < st->nev; i++)
            if (!st->ev[i].match && pc_push(st, st->ev[i].start, st->ev[i].end)) return -1;
        break;
    case SPLIT_CONTIGUOUS:
        for (size_t i = 0; i < st->nev; i++) {
            event *e = &st->ev[i];
            if (e->match == prev_match && st->npc)
                st->pc[st->npc - 1].end = e->end;
            else if (pc_push(st, e->start, e->end))
                return -1;
            prev_match = e->match;
        }
        break;
    case SPLIT_MERGED_PREV:
        for (size_t i = 0; i < st->nev; i++) {
            event *e = &st->ev[i];
            if (e->match && !prev_match && st->npc)
                st->pc[st->npc - 1].end = e->end;
            else if (pc_push(st, e->start, e->end))
                return -1;
            prev_match = e->match;
        }
        break;
    case SPLIT_MERGED_NEXT:
        for (size_t i = st->nev; i-- > 0;) {
            event *e = &st->ev[i];
            if (e->match && !prev_match && st->npc)
                st->pc[st->npc - 1].start = e->start;
            else if (pc_push(st, e->start, e->end))
                return -1;
            prev_match = e->match;
        }
        for (size_t i = 0, j = st->npc; i < j / 2; i++) {
            piece tmp = st->pc[i];
            st->pc[i] = st->pc[j - 1 - i];
            st->pc[j - 1 - i] = tmp;
        }
        break;
    }
    return 0;
}

static bool pred_numeric(uint32_t c, const void *ud) {
    (void)ud;
    return hf_is_numeric(c);
}
static bool pred_punct(uint32_t c, const void *ud) {
    (void)ud;
    return hf_is_punct(c);
}
static bool pred_ws(uint32_t c, const void *ud) {
    (void)ud;
    return hf_is_whitespace(c);
}
static bool pred_char(uint32_t c, const void *ud) {
    return c == *(const uint32_t *)ud;
}

/* Whitespace pre-tokenizer: maximal runs of \w, or of neither \w nor \s. */
static int word_runs(stage_scratch *st, const char *s, size_t len) {
    st->npc = 0;
    const unsigned char *u = (const unsigned char *)s;
    int cur = 0; /* 0 none, 1 word, 2 other */
    size_t start = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = (size_t)hf_utf8_dec(u + i, &cp);
        int cls = hf_is_word(cp) ? 1 : hf_is_whitespace(cp) ? 0 : 2;
        if (cls != cur) {
            if (cur && pc_push(st, start, i)) return -1;
            start = i;
            cur = cls;
        }
        i += k;
    }
    if (cur && pc_push(st, start, len)) return -1;
    return 0;
}

static int run_stage(hf_ctx *c, size_t i, const char *s, size_t len, bool first);

static int run_pieces(hf_ctx *c, size_t i, const char *base, bool first) {
    stage_scratch *st = &c->x->st[i];
    /* Children never touch this stage's scratch, so st->pc stays valid. */
    for (size_t k = 0; k < st->npc; k++) {
        piece p = st->pc[k];
        if (p.end <= p.start) continue; /* empty pieces are dropped */
        int rc = run_stage(c, i + 1, base + p.start, p.end - p.start, first && p.start == 0);
        if (rc) return rc;
    }
    return 0;
}

static int bytelevel_map(hf_ctx *c, size_t i, const char *s, size_t len, bool first) {
    stage_scratch *st = &c->x->st[i];
    st->map.len = 0;
    if (hf_buf_reserve(&st->map, len * 2)) return IRT_ENOMEM;
    for (size_t k = 0; k < len; k++) {
        char tmp[4];
        int n = hf_utf8_enc(hf_byte_char((unsigned char)s[k]), tmp);
        memcpy(st->map.p + st->map.len, tmp, (size_t)n);
        st->map.len += (size_t)n;
    }
    return run_stage(c, i + 1, st->map.p, st->map.len, first);
}

/* ---- long pieces in batches ------------------------------------------------------------
 * A split stage finds every match of its pattern in its piece, turns them into
 * events, then pieces: for a 4 MiB message that is some 60 MB of scratch, fresh
 * pages from the kernel on every call (its clearing cost more than the matching).
 * When each event is a piece of its own or dropped (Isolated, Removed: no piece
 * spans two events), a long piece is split batch_matches at a time instead, each
 * batch's pieces run before the next batch is found. The matcher sees the whole
 * piece on every call and goes on where it stopped, so the matches, events and
 * pieces are the same ones in the same order: the same ids. */
static size_t batch_matches = 4096;           /* matches found at a time */
static size_t batch_bytes = (size_t)64 << 10; /* pieces shorter than this: all at once */

void hf_encode_set_batching(size_t min_bytes, size_t matches) {
    batch_bytes = min_bytes;
    batch_matches = matches ? matches : 1;
}

static bool batchable(int behavior, size_t len) {
    return len >= batch_bytes && (behavior == SPLIT_ISOLATED || behavior == SPLIT_REMOVED);
}

/* The events of one batch of matches (*prev: the end of the last event so far),
 * the gap to the end once the search is done. */
static int batch_events(stage_scratch *st, size_t len, bool invert, size_t *prev, bool done) {
    st->nev = 0;
    for (size_t k = 0; k < st->nm; k++) {
        if (*prev != st->m[k].start && ev_push(st, *prev, st->m[k].start, invert)) return -1;
        if (ev_push(st, st->m[k].start, st->m[k].end, !invert)) return -1;
        *prev = st->m[k].end;
    }
    if (done && *prev != len && ev_push(st, *prev, len, invert)) return -1;
    return 0;
}

static int bytelevel_map(hf_ctx *c, size_t i, const char *s, size_t len, bool first);

/* Stage i's pieces of s (after a split): through the next stage, or byte-mapped
 * first (ByteLevel with its regex). */
static int stage_pieces(hf_ctx *c, size_t i, const char *s, bool first, bool byte_map) {
    if (!byte_map) return run_pieces(c, i, s, first);
    stage_scratch *st = &c->x->st[i];
    for (size_t k = 0; k < st->npc; k++) {
        piece pc = st->pc[k];
        if (pc.end <= pc.start) continue;
        int rc = bytelevel_map(c, i, s + pc.start, pc.end - pc.start, first && !pc.start);
        if (rc) return rc;
    }
    return 0;
}

/* A split by pattern, all at once or in batches (above). */
static int split_stage(hf_ctx *c, size_t i, const hf_pattern *pat, bool invert, int behavior,
                       bool byte_map, const char *s, size_t len, bool first) {
    stage_scratch *st = &c->x->st[i];
    if (!batchable(behavior, len)) {
        if (hf_pattern_find(pat, s, len, &st->m, &st->nm, &st->mcap, c->x->md) ||
            events_from_matches(st, len, invert) || apply_behavior(st, behavior))
            return IRT_ENOMEM;
        return stage_pieces(c, i, s, first, byte_map);
    }
    hf_find f = {0};
    size_t prev = 0;
    do {
        if (hf_pattern_find_some(pat, s, len, &f, batch_matches, &st->m, &st->nm, &st->mcap,
                                 c->x->md) ||
            batch_events(st, len, invert, &prev, f.done) || apply_behavior(st, behavior))
            return IRT_ENOMEM;
        int rc = stage_pieces(c, i, s, first, byte_map);
        if (rc) return rc;
    } while (!f.done);
    return 0;
}

static int run_stage(hf_ctx *c, size_t i, const char *s, size_t len, bool first) {
    const irt_tokenizer *t = c->t;
    if (i == t->nstages) return hf_bpe_encode(&t->bpe, s, len, &c->x->bpe, c->out);
    const hf_pretok *p = &t->stages[i];
    stage_scratch *st = &c->x->st[i];
    switch (p->type) {
    case PT_BYTELEVEL: {
        if (p->add_prefix_space && !(len && s[0] == ' ')) {
            st->buf.len = 0;
            if (hf_buf_addc(&st->buf, ' ') || hf_buf_add(&st->buf, s, len)) return IRT_ENOMEM;
            s = st->buf.p;
            len = st->buf.len;
        }
        if (!p->use_regex) {
            if (p->byte_map) return bytelevel_map(c, i, s, len, first);
            return run_stage(c, i + 1, s, len, first);
        }
        return split_stage(c, i, &p->pat, false, SPLIT_ISOLATED, p->byte_map, s, len, first);
    }
    case PT_SPLIT:
        return split_stage(c, i, &p->pat, p->invert, p->behavior, false, s, len, first);
    case PT_METASPACE: {
        st->buf.len = 0;
        const char *q = s, *e = s + len;
        /* Replace every ' ' with the replacement. */
        if (hf_buf_reserve(&st->buf, len * 3 + 4)) return IRT_ENOMEM;
        bool starts = false;
        for (; q < e; q++) {
            if (*q == ' ')
                hf_buf_add(&st->buf, p->rep, (size_t)p->replen);
            else
                hf_buf_addc(&st->buf, *q);
        }
        starts = st->buf.len >= (size_t)p->replen && memcmp(st->buf.p, p->rep, p->replen) == 0;
        bool prepend =
            !starts && (p->prepend == PREPEND_ALWAYS || (p->prepend == PREPEND_FIRST && first));
        if (prepend) {
            memmove(st->buf.p + p->replen, st->buf.p, st->buf.len);
            memcpy(st->buf.p, p->rep, (size_t)p->replen);
            st->buf.len += (size_t)p->replen;
        }
        if (!p->split) return run_stage(c, i + 1, st->buf.p, st->buf.len, first);
        if (events_from_pred(st, st->buf.p, st->buf.len, pred_char, &p->repcp) ||
            apply_behavior(st, SPLIT_MERGED_NEXT))
            return IRT_ENOMEM;
        return run_pieces(c, i, st->buf.p, first);
    }
    case PT_DIGITS:
        if (events_from_pred(st, s, len, pred_numeric, NULL) ||
            apply_behavior(st, p->individual_digits ? SPLIT_ISOLATED : SPLIT_CONTIGUOUS))
            return IRT_ENOMEM;
        return run_pieces(c, i, s, first);
    case PT_PUNCT:
        if (events_from_pred(st, s, len, pred_punct, NULL) || apply_behavior(st, p->behavior))
            return IRT_ENOMEM;
        return run_pieces(c, i, s, first);
    case PT_WHITESPACE:
        if (word_runs(st, s, len)) return IRT_ENOMEM;
        return run_pieces(c, i, s, first);
    case PT_WSSPLIT:
        if (events_from_pred(st, s, len, pred_ws, NULL) || apply_behavior(st, SPLIT_REMOVED))
            return IRT_ENOMEM;
        return run_pieces(c, i, s, first);
    case PT_BERT: {
        if (events_from_pred(st, s, len, pred_ws, NULL) || apply_behavior(st, SPLIT_REMOVED))
            return IRT_ENOMEM;
        /* Then every punctuation char on its own: done with a second pass
         * over the kept pieces, collected into the map buffer's piece list. */
        size_t n = st->npc;
        piece *keep = malloc((n ? n : 1) * sizeof(*keep));
        if (!keep) return IRT_ENOMEM;
        memcpy(keep, st->pc, n * sizeof(*keep));
        int rc = 0;
        for (size_t k = 0; k < n && !rc; k++) {
            const char *ps = s + keep[k].start;
            size_t pl = keep[k].end - keep[k].start;
            if (events_from_pred(st, ps, pl, pred_punct, NULL) ||
                apply_behavior(st, SPLIT_ISOLATED)) {
                rc = IRT_ENOMEM;
                break;
            }
            rc = run_pieces(c, i, ps, first && keep[k].start == 0);
        }
        free(keep);
        return rc;
    }
    }
    return IRT_EINVAL;
}

/* ---- added tokens ------------------------------------------------------------------ */
int32_t hf_trie_longest_leaf(const hf_trie *tr, const unsigned char *s, size_t len, size_t *mlen,
                             bool *leaf) {
    uint32_t node = 0, child, dummy;
    int32_t best = -1;
    *leaf = false;
    for (size_t i = 0; i < len; i++) {
        if (!hf_pairmap_get(&tr->edges, node, s[i], &child, &dummy)) break;
        node = child;
        if (tr->term[node] >= 0) {
            best = tr->term[node];
            *mlen = i + 1;
            *leaf = !tr->inner[node];
        }
    }
    return best;
}

int32_t hf_trie_longest(const hf_trie *tr, const unsigned char *s, size_t len, size_t *mlen) {
    bool leaf;
    return hf_trie_longest_leaf(tr, s, len, mlen, &leaf);
}

/* The last few matches that ended on a leaf of the trie, by their place in the
 * text: a chat's markers recur (<|im_start|>, <|im_end|>), and text that starts
 * with a leaf match's bytes matches exactly it, so a memcmp stands in for a walk
 * of one hash lookup per byte. */
#define MEMO_N 4
typedef struct match_memo {
    size_t at[MEMO_N], len[MEMO_N];
    int32_t k[MEMO_N];
    unsigned n, next;
} match_memo;

static int32_t longest_memo(const hf_trie *tr, match_memo *mm, const unsigned char *u, size_t i,
                            size_t len, size_t *mlen) {
    for (unsigned j = 0; j < mm->n; j++)
        if (len - i >= mm->len[j] && memcmp(u + i, u + mm->at[j], mm->len[j]) == 0) {
            *mlen = mm->len[j];
            return mm->k[j];
        }
    bool leaf;
    int32_t k = hf_trie_longest_leaf(tr, u + i, len - i, mlen, &leaf);
    if (k >= 0 && leaf) {
        unsigned j = mm->next++ % MEMO_N;
        mm->at[j] = i, mm->len[j] = *mlen, mm->k[j] = k;
        if (mm->n < MEMO_N) mm->n++;
    }
    return k;
}

static bool ends_with_word(const char *s, size_t len) {
    if (!len) return false;
    size_t st = len - 1;
    while (st > 0 && ((unsigned char)s[st] & 0xC0) == 0x80) st--;
    uint32_t cp;
    hf_utf8_dec((const unsigned char *)s + st, &cp);
    return hf_is_word(cp);
}

static bool starts_with_word(const char *s, size_t len) {
    if (!len) return false;
    uint32_t cp;
    hf_utf8_dec((const unsigned char *)s, &cp);
    return hf_is_word(cp);
}

typedef int (*piece_fn)(hf_ctx *c, const char *s, size_t len, bool first);

/* The byte every added token starts with, when they share one (chat templates'
 * markers all start with '<'), else -1: memchr then skips the text between
 * markers at memory speed instead of a byte at a time. */
static int only_first_byte(const hf_trie *tr) {
    int n = 0, b = -1;
    for (int i = 0; i < 32 && n < 2; i++)
        if (tr->first[i]) {
            n += __builtin_popcount(tr->first[i]);
            b = i * 8 + __builtin_ctz(tr->first[i]);
        }
    return n == 1 ? b : -1;
}

/* AddedVocabulary::find_matches, then the callback for each plain piece. */
static int split_added(hf_ctx *c, const hf_trie *tr, const char *s, size_t len, bool first,
                       piece_fn fn) {
    const irt_tokenizer *t = c->t;
    const unsigned char *u = (const unsigned char *)s;
    size_t start_offset = 0, pos = 0;
    int rc, one = tr->ntokens ? only_first_byte(tr) : -1;
    match_memo mm = {.n = 0};
    while (tr->ntokens && pos < len) {
        size_t i = pos, mlen = 0;
        int32_t k = -1;
        for (; i < len; i++) {
            if (one >= 0) {
                const unsigned char *at = memchr(u + i, one, len - i);
                if (!at) break;
                i = (size_t)(at - u);
            } else if (!(tr->first[u[i] >> 3] & (1u << (u[i] & 7)))) {
                continue;
            }
            k = longest_memo(tr, &mm, u, i, len, &mlen);
            if (k >= 0) break;
        }
        if (k < 0) break;
        size_t start = i, stop = i + mlen;
        pos = stop;
        const hf_added *a = &t->added[k];
        if (a->single_word) {
            bool sp = start == 0 || !ends_with_word(s, start);
            bool ep = stop == len || !starts_with_word(s + stop, len - stop);
            if (!sp || !ep) continue;
        }
        if (a->lstrip) {
            size_t ns = start;
            while (ns > 0) {
                size_t b = ns - 1;
                while (b > 0 && (u[b] & 0xC0) == 0x80) b--;
                uint32_t cp;
                hf_utf8_dec(u + b, &cp);
                if (!hf_is_whitespace(cp)) break;
                ns = b;
            }
            start = ns > start_offset ? ns : start_offset;
        }
        if (a->rstrip) {
            while (stop < len) {
                uint32_t cp;
                int n = hf_utf8_dec(u + stop, &cp);
                if (!hf_is_whitespace(cp)) break;
                stop += (size_t)n;
            }
        }
        if (start_offset < start &&
            (rc = fn(c, s + start_offset, start - start_offset, first && start_offset == 0)))
            return rc;
        if (hf_ids_push(c->out, a->id)) return IRT_ENOMEM;
        start_offset = stop;
    }
    if (start_offset < len)
        return fn(c, s + start_offset, len - start_offset, first && start_offset == 0);
    return 0;
}

static int normalized_piece(hf_ctx *c, const char *s, size_t len, bool first) {
    return run_stage(c, 0, s, len, first);
}

/* The tokenizer's normalizer over *s (if it has one), into the scratch's nbuf: *s and
 * *len then name the normalized text. IRT_ENOMEM, else 0. */
static int normalize_in_place(hf_ctx *c, const char **s, size_t *len) {
    const irt_tokenizer *t = c->t;
    /* text the normalizer would leave alone (NFC over ASCII) is not copied */
    if (!t->norm || hf_normalize_keeps(t->norm, *s, *len)) return 0;
    c->x->nbuf.len = 0;
    if (hf_normalize(t->norm, *s, *len, &c->x->nbuf, NULL)) return IRT_ENOMEM;
    *s = c->x->nbuf.p;
    *len = c->x->nbuf.len;
    return 0;
}

static int raw_piece(hf_ctx *c, const char *s, size_t len, bool first) {
    int rc = normalize_in_place(c, &s, &len);
    if (rc || !len) return rc;
    return split_added(c, &c->t->trie_norm, s, len, first, normalized_piece);
}

/* A raw piece through the cache: its ids copied when held, else encoded and kept. */
static int cached_piece(hf_ctx *c, const char *s, size_t len, bool first) {
    if (len < IRT_CACHE_MIN_BYTES) return raw_piece(c, s, len, first);
    uint64_t h = hf_cache_key(s, len, first);
    int hit = hf_cache_lookup(c->cache, h, s, len, first, c->out);
    if (hit) return hit < 0 ? hit : 0;
    size_t from = c->out->len;
    int rc = raw_piece(c, s, len, first);
    if (!rc) hf_cache_insert(c->cache, h, s, len, first, c->out->ids + from, c->out->len - from);
    return rc;
}

/* ---- post-processing ------------------------------------------------------------------ */
static int post_process(const irt_tokenizer *t, irt_ids *out) {
    for (size_t k = 0; k < t->npost; k++) {
        const hf_post *p = &t->post[k];
        size_t pre = 0, post = 0;
        if (p->type == PP_TEMPLATE) {
            bool seen = false;
            for (size_t j = 0; j < p->nitems; j++) {
                if (p->items[j].is_seq)
                    seen = true;
                else if (seen)
                    post += p->items[j].nids;
                else
                    pre += p->items[j].nids;
            }
        } else if (p->type == PP_ROBERTA || p->type == PP_BERT) {
            pre = post = 1;
        } else {
            continue;
        }
        while (out->cap < out->len + pre + post + 1) {
            size_t cap = out->cap ? out->cap * 2 : 64;
            uint32_t *x = realloc(out->ids, cap * sizeof(*x));
            if (!x) return IRT_ENOMEM;
            out->ids = x;
            out->cap = cap;
        }
        memmove(out->ids + pre, out->ids, out->len * sizeof(uint32_t));
        size_t seqlen = out->len;
        if (p->type == PP_TEMPLATE) {
            bool seen = false;
            size_t a = 0, b = pre + seqlen;
            for (size_t j = 0; j < p->nitems; j++) {
                const hf_tpl_item *it = &p->items[j];
                if (it->is_seq) {
                    seen = true;
                    continue;
                }
                for (size_t q = 0; q < it->nids; q++) {
                    if (seen)
                        out->ids[b++] = it->ids[q];
                    else
                        out->ids[a++] = it->ids[q];
                }
            }
        } else {
            out->ids[0] = p->cls;
            out->ids[pre + seqlen] = p->sep;
        }
        out->len = pre + seqlen + post;
    }
    return 0;
}

int irt_encode(const irt_tokenizer *t, const char *text, size_t len, bool add_special,
               irt_ids *out) {
    return irt_encode_cached(t, NULL, text, len, add_special, out);
}

/* ---- scratch kept between calls ---------------------------------------------------------
 * A call's buffers (pieces, matches, symbols) grow to fit its text; made afresh on
 * every call, they cost a warm chat more in malloc, realloc and page faults than
 * the work that fills them. Each thread keeps its scratch between its calls unless
 * it grew past KEEP_SCRATCH bytes, and frees it when the thread exits (a key's
 * destructor). */
#define KEEP_SCRATCH ((size_t)1 << 20)

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_key_ok;
static _Thread_local hf_scratch *kept_scratch; /* NULL while this thread encodes */

static void scratch_free(void *p) {
    hf_scratch *x = p;
    if (!x) return;
    pcre2_match_data_free(x->md);
    hf_buf_free(&x->nbuf);
    for (size_t i = 0; i < HF_MAX_STAGES; i++) {
        stage_scratch *st = &x->st[i];
        hf_buf_free(&st->buf);
        hf_buf_free(&st->map);
        free(st->m);
        free(st->ev);
        free(st->pc);
    }
    hf_bpe_scratch_free(&x->bpe);
    free(x);
}

static size_t scratch_bytes(const hf_scratch *x) {
    size_t n = x->nbuf.cap + x->bpe.symcap * sizeof(hf_sym) + x->bpe.heapcap * sizeof(hf_heapent) +
               x->bpe.tmp.cap;
    for (size_t i = 0; i < HF_MAX_STAGES; i++) {
        const stage_scratch *st = &x->st[i];
        n += st->buf.cap + st->map.cap + st->mcap * sizeof(hf_match) + st->evcap * sizeof(event) +
             st->pccap * sizeof(piece);
    }
    return n;
}

static void scratch_key_init(void) {
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

static hf_scratch *scratch_take(void) {
    hf_scratch *x = kept_scratch;
    if (x) {
        kept_scratch = NULL;
        return x;
    }
    x = calloc(1, sizeof *x);
    if (x && !(x->md = pcre2_match_data_create(4, NULL))) {
        free(x);
        x = NULL;
    }
    return x;
}

static void scratch_give_back(hf_scratch *x) {
    pthread_once(&scratch_once, scratch_key_init);
    if (kept_scratch || !scratch_key_ok || scratch_bytes(x) > KEEP_SCRATCH ||
        pthread_setspecific(scratch_key, x)) {
        /* Kept by an earlier call, x is still the key's value: clear it, or the
         * thread's exit would free x a second time. */
        if (scratch_key_ok && pthread_getspecific(scratch_key) == x)
            pthread_setspecific(scratch_key, NULL);
        scratch_free(x);
        return;
    }
    kept_scratch = x;
}

int irt_encode_cached(const irt_tokenizer *t, irt_cache *cache, const char *text, size_t len,
                      bool add_special, irt_ids *out) {
    if (!t || !out || (!text && len)) return IRT_EINVAL;
    if (cache && !hf_cache_for(cache, t)) return IRT_EINVAL;
    out->len = 0;
    if (len > IRT_MAX_INPUT) return IRT_ETOOLONG;
    if (hf_utf8_valid_prefix(text, len) != len) return IRT_EINVAL;
    hf_ctx c = {.t = t, .cache = cache, .out = out, .x = scratch_take()};
    if (!c.x) return IRT_ENOMEM;
    piece_fn fn = cache ? cached_piece : raw_piece;
    int rc = len ? split_added(&c, &t->trie_raw, text, len, true, fn) : 0;
    if (!rc && add_special) rc = post_process(t, out);
    scratch_give_back(c.x);
    if (rc) out->len = 0;
    return rc;
}

/* Whether any added token's text occurs in s (ignoring single_word and the
 * strip flags: a superset of the matches split_added acts on). */
static bool has_added(const hf_trie *tr, const char *s, size_t len) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; tr->ntokens && i < len; i++) {
        size_t mlen;
        if ((tr->first[u[i] >> 3] & (1u << (u[i] & 7))) &&
            hf_trie_longest(tr, u + i, len - i, &mlen) >= 0)
            return true;
    }
    return false;
}

/* Plain text through normalizer, pre-tokenizer and model, added tokens not
 * looked for. */
static int ordinary_piece(hf_ctx *c, const char *s, size_t len, bool first) {
    int rc = normalize_in_place(c, &s, &len);
    if (rc || !len) return rc;
    return normalized_piece(c, s, len, first);
}

int irt_encode_ordinary(const irt_tokenizer *t, irt_cache *cache, const char *text, size_t len,
                        irt_ids *out) {
    if (!t || !out || (!text && len)) return IRT_EINVAL;
    if (!len) return IRT_OK;
    /* A normalizer may make text that an added token matches: then never plain. */
    bool plain =
        !t->norm && !has_added(&t->trie_raw, text, len) && !has_added(&t->trie_norm, text, len);
    if (plain) { /* the same ids as irt_encode gives: its cache can serve them */
        irt_ids tmp;
        irt_ids_init(&tmp);
        int rc = irt_encode_cached(t, cache, text, len, false, &tmp);
        if (!rc) rc = hf_ids_append(out, tmp.ids, tmp.len);
        irt_ids_free(&tmp);
        return rc;
    }
    if (len > IRT_MAX_INPUT) return IRT_ETOOLONG;
    if (hf_utf8_valid_prefix(text, len) != len) return IRT_EINVAL;
    size_t from = out->len;
    hf_ctx c = {.t = t, .out = out, .x = scratch_take()};
    if (!c.x) return IRT_ENOMEM;
    int rc = ordinary_piece(&c, text, len, true);
    scratch_give_back(c.x);
    if (rc) out->len = from;
    return rc;
}

/* irt_ids_init and irt_ids_free live in ids.c. */

const char *irt_strerror(int code) {
    switch (code) {
    case IRT_OK:
        return "ok";
    case IRT_ENOMEM:
        return "out of memory";
    case IRT_EINVAL:
        return "text is not valid UTF-8";
    case IRT_ETOOLONG:
        return "text too long";
    case IRT_EMODEL:
        return "the model cannot encode this text (unk_token missing from vocab)";
    case IRT_EUNSUPPORTED:
        return "a request the tokenizer does not follow";
    case IRT_ETEMPLATE:
        return "the chat template refused the conversation";
    default:
        return "unknown error";
    }
}
