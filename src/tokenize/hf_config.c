/* hf_config.c: what transformers changes in a tokenizer.json pipeline from
 * tokenizer_config.json, so that ids (and decoded text) follow what vLLM,
 * through transformers, computes rather than tokenizer.json alone.
 * Followed: transformers v4.57.1 (vLLM at the pinned commit requires
 * transformers >= 4.56, < 5); docs/tokenizer.md lists the files.
 *
 * 1. Llama and Gemma classes (LlamaTokenizer[Fast], GemmaTokenizer[Fast]):
 *    update_post_processor replaces the post-processor with a template built
 *    from add_bos_token (default true) and add_eos_token (default false):
 *    "[bos] $A [eos]". So a DeepSeek V3 prompt gets its BOS with special
 *    tokens, although its tokenizer.json has only a ByteLevel post-processor.
 * 2. Llama classes with add_prefix_space set (not null): LlamaTokenizerFast
 *    then rebuilds the whole pipeline from tokenizer.model (from_slow) through
 *    LlamaConverter, whose normalizer, pre-tokenizer and decoder depend on
 *    add_prefix_space and legacy (default true). Without tokenizer.model
 *    transformers fails, and so does this load. With it, the converter's
 *    components are set around tokenizer.json's own BPE model, which must be
 *    SentencePiece-style (byte_fallback, no byte-level pre-tokenizer): the
 *    model is assumed to be what the converter makes of tokenizer.model.
 * 3. Every other fast class: PreTrainedTokenizerFast.__init__ sets a
 *    pre-tokenizer's add_prefix_space to the config's (default false) when
 *    the pre-tokenizer, serialized, has that key: only a ByteLevel
 *    pre-tokenizer standing alone (a Sequence has no such key; Metaspace
 *    serializes prepend_scheme). A null add_prefix_space leaves it alone (the
 *    rebuild raises and transformers ignores the error).
 * 4. clean_up_tokenization_spaces (default false in every class the supported
 *    families use): decode cleans " ." and the like (hf_decode.c).
 * 5. Added tokens: transformers adds the config's added_tokens_decoder entries
 *    and special tokens that tokenizer.json lacks; that is refused (a load
 *    error naming the token), never followed silently. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenize/hf_internal.h"

#define META "\xE2\x96\x81" /* U+2581, SentencePiece's space */

/* The class's own default when the config leaves the token out: Llama's
 * "<s>"/"</s>", Gemma's "<bos>"/"<eos>" (their __init__ signatures); null
 * stays unset. */
static const char *token_content(const json_t *cfg, const char *key, bool gemma) {
    json_t *v = json_object_get(cfg, key);
    if (!v) {
        bool bos = !strcmp(key, "bos_token");
        return gemma ? (bos ? "<bos>" : "<eos>") : (bos ? "<s>" : "</s>");
    }
    if (json_is_object(v)) v = json_object_get(v, "content");
    return json_string_value(v);
}

static int oom(char *err, size_t errlen) {
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int special_item(irt_tokenizer *t, const json_t *cfg, const char *key, bool gemma,
                        hf_tpl_item *it, char *err, size_t errlen) {
    const char *tok = token_content(cfg, key, gemma);
    int64_t id = tok ? irt_token_to_id(t, tok, strlen(tok)) : -1;
    if (!tok || id < 0) {
        snprintf(err, errlen, "tokenizer_config.json: add_%s is true but %s %s", key, key,
                 tok ? "is not in the vocabulary" : "is not set");
        return -1;
    }
    it->ids = ir_arena_calloc(t->arena, sizeof(uint32_t));
    if (!it->ids) return oom(err, errlen);
    it->ids[0] = (uint32_t)id;
    it->nids = 1;
    return 0;
}

/* Python's truth value of a JSON value read by json.loads (absent: dflt). */
static bool truthy(const json_t *v, bool dflt) {
    return v ? ir_json_truthy(v) : dflt;
}

static bool flag(const json_t *cfg, const char *key, bool dflt) {
    json_t *v = json_object_get(cfg, key);
    return json_is_null(v) ? dflt : truthy(v, dflt);
}

/* 1: "[bos] $A [eos]" from add_bos_token / add_eos_token. */
static int rebuild_post(irt_tokenizer *t, const json_t *cfg, bool gemma, char *err, size_t errlen) {
    bool bos = flag(cfg, "add_bos_token", true), eos = flag(cfg, "add_eos_token", false);
    hf_tpl_item *items = ir_arena_calloc(t->arena, 3 * sizeof *items);
    size_t n = 0;
    if (!items) return oom(err, errlen);
    if (bos && special_item(t, cfg, "bos_token", gemma, &items[n++], err, errlen)) return -1;
    items[n++].is_seq = true;
    if (eos && special_item(t, cfg, "eos_token", gemma, &items[n++], err, errlen)) return -1;
    memset(t->post, 0, sizeof t->post[0]);
    t->post[0].type = PP_TEMPLATE;
    t->post[0].items = items;
    t->post[0].nitems = n;
    t->npost = 1;
    return 0;
}

static char *adup(irt_tokenizer *t, const char *s) {
    size_t n = strlen(s);
    char *p = ir_arena_calloc(t->arena, n + 1);
    if (p) memcpy(p, s, n);
    return p;
}

/* LlamaConverter.normalizer: legacy only; [Prepend("▁") if add_prefix_space,
 * Replace(" ", "▁")]. */
static int converter_normalizer(irt_tokenizer *t, bool legacy, bool aps, char *err, size_t errlen) {
    hf_norm_free(t->norm);
    t->norm = NULL;
    if (!legacy) return 0;
    hf_norm *seq = ir_arena_calloc(t->arena, sizeof *seq);
    hf_norm *kids = ir_arena_calloc(t->arena, 2 * sizeof *kids);
    if (!seq || !kids) return oom(err, errlen);
    memset(kids, 0, 2 * sizeof *kids);
    memset(seq, 0, sizeof *seq);
    seq->type = NORM_SEQ;
    seq->kids = kids;
    size_t n = 0;
    if (aps) {
        kids[n].type = NORM_PREPEND;
        kids[n].content = adup(t, META);
        kids[n].clen = strlen(META);
        if (!kids[n++].content) return oom(err, errlen);
    }
    kids[n].type = NORM_REPLACE;
    kids[n].content = adup(t, META);
    kids[n].clen = strlen(META);
    if (!kids[n].content) return oom(err, errlen);
    seq->nkids = n + 1; /* from here on, the children are freed with t */
    t->norm = seq;
    char msg[256];
    if (hf_pattern_compile(&kids[n].pat, " ", 1, true, msg, sizeof msg)) {
        snprintf(err, errlen, "tokenizer_config.json: %s", msg);
        return -1;
    }
    return 0;
}

/* LlamaConverter.pre_tokenizer: none when legacy; else Metaspace("▁",
 * prepend_scheme "first" with add_prefix_space, else "never", split false). */
static void converter_pretok(irt_tokenizer *t, bool legacy, bool aps) {
    for (size_t i = 0; i < t->nstages; i++) hf_pattern_free(&t->stages[i].pat);
    t->nstages = 0;
    t->pretok_single = false;
    if (legacy) return;
    hf_pretok *s = &t->stages[t->nstages++];
    memset(s, 0, sizeof *s);
    s->type = PT_METASPACE;
    s->repcp = 0x2581;
    s->replen = hf_utf8_enc(s->repcp, s->rep);
    s->prepend = aps ? PREPEND_FIRST : PREPEND_NEVER;
    s->split = false;
    t->pretok_single = true;
}

/* LlamaConverter.decoder: Replace("▁", " "), ByteFallback, Fuse, and
 * Strip(" ", 1, 0) with add_prefix_space. */
static int converter_decoder(irt_tokenizer *t, bool aps, char *err, size_t errlen) {
    memset(t->dec, 0, sizeof t->dec);
    t->ndec = 0;
    hf_dec *d = &t->dec[t->ndec++];
    d->type = DEC_REPLACE;
    d->a = adup(t, META);
    d->b = adup(t, " ");
    if (!d->a || !d->b) return oom(err, errlen);
    d->alen = strlen(META);
    d->blen = 1;
    t->dec[t->ndec++].type = DEC_BYTEFALLBACK;
    t->dec[t->ndec++].type = DEC_FUSE;
    if (aps) {
        d = &t->dec[t->ndec++];
        d->type = DEC_STRIP;
        d->cp = ' ';
        d->start = 1;
    }
    t->has_decoder = true;
    return 0;
}

/* 2: from_slow, as LlamaTokenizerFast forces when add_prefix_space is set. */
static int llama_from_slow(irt_tokenizer *t, const char *dir, const json_t *cfg, char *err,
                           size_t errlen) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/tokenizer.model", dir);
    if (stat(path, &st) || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen,
                 "tokenizer_config.json: add_prefix_space is set, so transformers rebuilds this "
                 "Llama tokenizer from tokenizer.model, which %s lacks",
                 dir);
        return -1;
    }
    if (t->bpe.raw || !t->bpe.byte_fallback) {
        snprintf(err, errlen,
                 "tokenizer_config.json: add_prefix_space is set, so transformers converts "
                 "tokenizer.model, and tokenizer.json's model is not SentencePiece-style BPE "
                 "(byte_fallback) to stand for it");
        return -1;
    }
    bool aps = truthy(json_object_get(cfg, "add_prefix_space"), true);
    bool legacy = flag(cfg, "legacy", true);
    if (converter_normalizer(t, legacy, aps, err, errlen)) return -1;
    converter_pretok(t, legacy, aps);
    return converter_decoder(t, aps, err, errlen);
}

/* 3: a lone ByteLevel pre-tokenizer takes the config's add_prefix_space. */
static void bytelevel_prefix(irt_tokenizer *t, const json_t *cfg) {
    json_t *v = json_object_get(cfg, "add_prefix_space");
    if (json_is_null(v) || (v && !json_is_boolean(v))) return; /* rebuild raises: ignored */
    if (!t->pretok_single || t->nstages != 1 || t->stages[0].type != PT_BYTELEVEL) return;
    t->stages[0].add_prefix_space = json_is_true(v);
}

/* 5: PreTrainedTokenizerFast.__init__ adds every added_tokens_decoder entry
 * whose repr (content and flags) tokenizer.json's added tokens lack, and
 * every special token that is not an added token yet. Neither is followed:
 * such a config is a load error naming the token, never other ids. */
static bool same_flag(const json_t *v, const char *key, bool have) {
    json_t *f = json_object_get(v, key);
    return !json_is_boolean(f) || json_is_true(f) == have;
}

static int check_added_decoder(const irt_tokenizer *t, const json_t *cfg, char *err,
                               size_t errlen) {
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(cfg, "added_tokens_decoder"), k, v) {
        char *end;
        unsigned long id = strtoul(k, &end, 10);
        const char *content = json_string_value(json_object_get(v, "content"));
        uint32_t i, dummy;
        bool found = !*end && content && id <= UINT32_MAX &&
                     hf_pairmap_get(&t->added_ids, (uint32_t)id, 0, &i, &dummy);
        const hf_added *a = found ? &t->added[i] : NULL;
        if (!a || strlen(content) != a->len || memcmp(content, a->content, a->len) ||
            !same_flag(v, "lstrip", a->lstrip) || !same_flag(v, "rstrip", a->rstrip) ||
            !same_flag(v, "single_word", a->single_word) ||
            !same_flag(v, "normalized", a->normalized) || !same_flag(v, "special", a->special)) {
            snprintf(err, errlen,
                     "tokenizer_config.json: added_tokens_decoder.%s is not tokenizer.json's added "
                     "token %s (content and flags); transformers would add it, which Inferrail "
                     "does not follow",
                     k, k);
            return -1;
        }
    }
    return 0;
}

static int check_special(const irt_tokenizer *t, const char *key, const char *tok, char *err,
                         size_t errlen) {
    uint32_t id;
    if (!tok || hf_strmap_get(&t->added_map, tok, strlen(tok), &id)) return 0;
    snprintf(err, errlen,
             "tokenizer_config.json: %s '%s' is not an added token of tokenizer.json; "
             "transformers would add it as a special token, which Inferrail does not follow",
             key, tok);
    return -1;
}

static int check_specials(const irt_tokenizer *t, const json_t *cfg, char *err, size_t errlen) {
    static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                       "pad_token", "cls_token", "mask_token"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(cfg, keys[i]);
        if (json_is_object(v)) v = json_object_get(v, "content");
        if (check_special(t, keys[i], json_string_value(v), err, errlen)) return -1;
    }
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(cfg, "additional_special_tokens"), i, x) {
        if (json_is_object(x)) x = json_object_get(x, "content");
        if (check_special(t, "additional_special_tokens", json_string_value(x), err, errlen))
            return -1;
    }
    return 0;
}

static bool is_class(const char *cls, const char *base) {
    size_t n = strlen(base);
    return cls && !strncmp(cls, base, n) && (!cls[n] || !strcmp(cls + n, "Fast"));
}

int hf_apply_config(irt_tokenizer *t, const char *dir, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/tokenizer_config.json", dir);
    json_error_t je;
    json_t *cfg = json_load_file(path, JSON_DECODE_INT_AS_REAL, &je);
    if (!cfg) return 0; /* absent (checked to be JSON by the loader when present) */
    const char *cls = json_string_value(json_object_get(cfg, "tokenizer_class"));
    bool llama = is_class(cls, "LlamaTokenizer"), gemma = is_class(cls, "GemmaTokenizer");
    int rc = check_added_decoder(t, cfg, err, errlen);
    if (!rc) rc = check_specials(t, cfg, err, errlen);
    if (!rc && (llama || gemma)) rc = rebuild_post(t, cfg, gemma, err, errlen);
    json_t *aps = json_object_get(cfg, "add_prefix_space");
    if (!rc && llama && aps && !json_is_null(aps)) rc = llama_from_slow(t, dir, cfg, err, errlen);
    if (!rc && !llama) bytelevel_prefix(t, cfg);
    t->cleanup_spaces = truthy(json_object_get(cfg, "clean_up_tokenization_spaces"), false);
    json_decref(cfg);
    return rc;
}
