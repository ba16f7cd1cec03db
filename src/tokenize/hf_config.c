/* hf_config.c: what transformers changes in a tokenizer.json pipeline from
 * tokenizer_config.json, so that ids follow what vLLM (through transformers)
 * computes rather than tokenizer.json alone.
 *
 * Llama-class tokenizers (tokenizer_class LlamaTokenizer or
 * LlamaTokenizerFast): transformers' LlamaTokenizerFast.update_post_processor
 * replaces the post-processor with a template built from add_bos_token
 * (default true) and add_eos_token (default false): "[bos] $A [eos]". So a
 * DeepSeek V3 prompt gets its BOS with special tokens, although its
 * tokenizer.json has only a ByteLevel post-processor. */
#include <stdio.h>
#include <string.h>

#include "tokenize/hf_internal.h"

static const char *token_content(const json_t *cfg, const char *key) {
    json_t *v = json_object_get(cfg, key);
    if (json_is_object(v)) v = json_object_get(v, "content");
    return json_string_value(v);
}

static int special_item(irt_tokenizer *t, const json_t *cfg, const char *key, hf_tpl_item *it,
                        char *err, size_t errlen) {
    const char *tok = token_content(cfg, key);
    int64_t id = tok ? irt_token_to_id(t, tok, strlen(tok)) : -1;
    if (!tok || id < 0) {
        snprintf(err, errlen, "tokenizer_config.json: add_%s is true but %s %s", key, key,
                 tok ? "is not in the vocabulary" : "is not set");
        return -1;
    }
    it->ids = ir_arena_calloc(t->arena, sizeof(uint32_t));
    if (!it->ids) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    it->ids[0] = (uint32_t)id;
    it->nids = 1;
    return 0;
}

static bool flag(const json_t *cfg, const char *key, bool dflt) {
    json_t *v = json_object_get(cfg, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

int hf_apply_config(irt_tokenizer *t, const char *dir, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    json_error_t je;
    json_t *cfg = json_load_file(path, JSON_DECODE_INT_AS_REAL, &je);
    if (!cfg) return 0; /* absent (checked to be JSON by the loader when present) */
    const char *cls = json_string_value(json_object_get(cfg, "tokenizer_class"));
    int rc = 0;
    if (cls && (!strcmp(cls, "LlamaTokenizer") || !strcmp(cls, "LlamaTokenizerFast"))) {
        bool bos = flag(cfg, "add_bos_token", true), eos = flag(cfg, "add_eos_token", false);
        hf_tpl_item *items = ir_arena_calloc(t->arena, 3 * sizeof *items);
        size_t n = 0;
        if (!items) {
            snprintf(err, errlen, "out of memory");
            rc = -1;
        }
        if (!rc && bos && special_item(t, cfg, "bos_token", &items[n++], err, errlen)) rc = -1;
        if (!rc) items[n++].is_seq = true;
        if (!rc && eos && special_item(t, cfg, "eos_token", &items[n++], err, errlen)) rc = -1;
        if (!rc) {
            memset(t->post, 0, sizeof t->post[0]);
            t->post[0].type = PP_TEMPLATE;
            t->post[0].items = items;
            t->post[0].nitems = n;
            t->npost = 1;
        }
    }
    json_decref(cfg);
    return rc;
}
