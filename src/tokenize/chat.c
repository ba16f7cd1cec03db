/* chat.c: chat requests prepared as vLLM prepares them before it tokenizes
 * (vllm/entrypoints/chat_utils.py and the HF renderer; the version followed is
 * pinned in docs/tokenizer.md), rendered with the template engine the way
 * transformers' apply_chat_template renders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenize/ir_tokenize.h"
#include "tokenize/json_share.h"

struct irt_chat {
    irt_template *tmpl;     /* NULL: the model has no chat template */
    irt_template *tool_use; /* a named "tool_use" template, used when tools are given */
    json_t *specials;       /* the special tokens map */
    json_t *kwargs;         /* default chat_template_kwargs */
    bool openai;            /* content format */
    bool harmony;           /* gpt-oss: vLLM renders its chats with openai-harmony */
};

/* apply_chat_template's own parameters: accepted in chat_template_kwargs
 * whether or not the template reads them, and not passed on as variables. */
static const char *const HF_PARAMS[] = {"conversation",
                                        "tools",
                                        "documents",
                                        "chat_template",
                                        "add_generation_prompt",
                                        "continue_final_message",
                                        "tokenize",
                                        "padding",
                                        "truncation",
                                        "max_length",
                                        "return_tensors",
                                        "return_dict",
                                        "return_assistant_tokens_mask",
                                        "tokenizer_kwargs",
                                        NULL};

static bool is_hf_param(const char *k) {
    for (size_t i = 0; HF_PARAMS[i]; i++)
        if (strcmp(HF_PARAMS[i], k) == 0) return true;
    return false;
}

json_t *irt_special_tokens(const json_t *cfg) {
    static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                       "pad_token", "cls_token", "mask_token"};
    json_t *out = json_object();
    if (!out || !json_is_object(cfg)) return out;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(cfg, keys[i]);
        if (json_is_object(v)) v = json_object_get(v, "content");
        /* transformers passes only the tokens that are set (truthy) */
        if (json_is_string(v) && json_string_length(v))
            json_object_set_new(out, keys[i],
                                json_stringn(json_string_value(v), json_string_length(v)));
    }
    json_t *extra = json_object_get(cfg, "additional_special_tokens");
    if (json_is_array(extra) && json_array_size(extra)) {
        json_t *l = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(extra, i, x) {
            if (json_is_object(x)) x = json_object_get(x, "content");
            if (json_is_string(x)) json_array_append_new(l, json_string(json_string_value(x)));
        }
        json_object_set_new(out, "additional_special_tokens", l);
    }
    return out;
}

static irt_template *compile(const char *src, const char *what, char *err, size_t errlen) {
    char why[400];
    irt_template *t = irt_template_new(src, strlen(src), NULL, why, sizeof why);
    if (!t) snprintf(err, errlen, "%s: %s", what, why);
    return t;
}

irt_chat *irt_chat_new(const json_t *cfg, const char *template_src, const irt_chat_opts *o,
                       char *err, size_t errlen) {
    irt_chat *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* shared by every render on every thread: immortal (json_share.h) */
    c->specials = irt_special_tokens(cfg);
    irt_json_set_counts(c->specials, IRT_JSON_IMMORTAL);
    c->kwargs = o && json_is_object(o->kwargs) ? json_deep_copy(o->kwargs) : json_object();
    json_t *ct = json_object_get(cfg, "chat_template");
    const char *what = template_src ? "chat template" : "tokenizer_config.json: chat_template";
    if (template_src) {
        c->tmpl = compile(template_src, what, err, errlen);
        if (!c->tmpl) goto fail;
    } else if (json_is_string(ct)) {
        c->tmpl = compile(json_string_value(ct), what, err, errlen);
        if (!c->tmpl) goto fail;
    } else if (json_is_array(ct)) { /* named templates: default, tool_use, ... */
        size_t i;
        json_t *x;
        json_array_foreach(ct, i, x) {
            const char *name = json_string_value(json_object_get(x, "name"));
            const char *src = json_string_value(json_object_get(x, "template"));
            if (!name || !src) continue;
            irt_template **slot = !strcmp(name, "default")    ? &c->tmpl
                                  : !strcmp(name, "tool_use") ? &c->tool_use
                                                              : NULL;
            if (slot && !*slot && !(*slot = compile(src, what, err, errlen))) goto fail;
        }
    }
    const char *fmt = o && o->content_format ? o->content_format : "auto";
    if (!strcmp(fmt, "openai"))
        c->openai = true;
    else if (!strcmp(fmt, "string"))
        c->openai = false;
    else if (!strcmp(fmt, "auto"))
        c->openai = c->tmpl && irt_template_iterates_content(c->tmpl);
    else {
        snprintf(err, errlen, "chat_template_content_format: '%s' is not auto, string or openai",
                 fmt);
        goto fail;
    }
    return c;
fail:
    irt_chat_free(c);
    return NULL;
}

void irt_chat_free(irt_chat *c) {
    if (!c) return;
    irt_template_free(c->tmpl);
    irt_template_free(c->tool_use);
    irt_json_set_counts(c->specials, 1);
    json_decref(c->specials);
    json_decref(c->kwargs);
    free(c);
}

bool irt_chat_has_template(const irt_chat *c) {
    return c && c->tmpl;
}

bool irt_chat_uses_harmony(const irt_chat *c) {
    return c && c->harmony;
}

const char *irt_chat_content_format(const irt_chat *c) {
    return c->openai ? "openai" : "string";
}

static char *slurp(const char *path, size_t max, char *err, size_t errlen) {
    char why[128];
    FILE *f = ir_fopen_regular(path, why, sizeof why);
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, why);
        return NULL;
    }
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
    fclose(f);
    if (!buf || n > max) {
        snprintf(err, errlen, "%s: %s", path, buf ? "larger than 1 MiB" : "out of memory");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        snprintf(err, errlen, "%s: not a text file", path);
        free(buf);
        return NULL;
    }
    return buf;
}

static bool file_exists(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* vLLM's serving_chat renders the chats of a model whose config.json says
 * model_type "gpt_oss" with openai-harmony, whatever the chat template (the
 * model's, --chat-template or the request's): callers then use
 * irt_harmony_ids, and irt_chat_render refuses such chats. A config.json that is absent,
 * over 1 MiB or not JSON says nothing (vLLM would not start on a bad one). */
static bool uses_harmony(const char *dir) {
    char path[4200], why[256];
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!file_exists(path)) return false;
    char *buf = slurp(path, (size_t)1 << 20, why, sizeof why);
    if (!buf) return false;
    json_error_t je;
    json_t *cfg = json_loads(buf, 0, &je);
    free(buf);
    const char *type = json_string_value(json_object_get(cfg, "model_type"));
    bool harmony = type && !strcmp(type, "gpt_oss");
    json_decref(cfg);
    return harmony;
}

irt_chat *irt_chat_load(const char *spec, const irt_chat_opts *o, char *err, size_t errlen) {
    char dir[4096], path[4200];
    if (irt_spec_dir(spec, dir, sizeof dir, err, errlen)) return NULL;
    json_t *cfg = NULL;
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    if (file_exists(path)) {
        json_error_t je;
        /* a config's model_max_length may pass 64 bits: read integers as reals */
        cfg = json_load_file(path, JSON_DECODE_INT_AS_REAL, &je);
        if (!json_is_object(cfg)) {
            snprintf(err, errlen, "%s: %s", path, cfg ? "not a JSON object" : je.text);
            json_decref(cfg);
            return NULL;
        }
    }
    char *src = NULL;
    const char *tpath = o ? o->template_path : NULL;
    snprintf(path, sizeof path, "%s/chat_template.jinja", dir);
    if (!tpath && file_exists(path)) tpath = path;
    if (tpath && !(src = slurp(tpath, (size_t)1 << 20, err, errlen))) {
        json_decref(cfg);
        return NULL;
    }
    irt_chat *c = irt_chat_new(cfg, src, o, err, errlen);
    if (c) c->harmony = uses_harmony(dir);
    free(src);
    json_decref(cfg);
    return c;
}

/* ---- the conversation ------------------------------------------------------------- */
typedef struct prep {
    int rc;
    char *err;
    size_t errlen;
} prep;

static json_t *refuse(prep *p, int rc, const char *msg) {
    if (!p->rc) {
        p->rc = rc;
        snprintf(p->err, p->errlen, "%s", msg);
    }
    return NULL;
}

/* The text of a content part, or NULL (skipped); sets p->rc for parts the
 * gateway cannot follow. */
static const char *part_text(prep *p, json_t *part, size_t *len) {
    if (json_is_string(part)) {
        *len = json_string_length(part);
        return json_string_value(part);
    }
    if (!json_is_object(part))
        return refuse(p, IRT_EINVAL, "a content part is not an object"), NULL;
    const char *type = json_string_value(json_object_get(part, "type"));
    const char *field = NULL;
    if (!type) {
        static const char *const media[] = {"image_url",    "image_pil",     "image_embeds",
                                            "audio_embeds", "audio_url",     "input_audio",
                                            "video_url",    "prompt_embeds", NULL};
        for (size_t i = 0; media[i]; i++)
            if (json_object_get(part, media[i]))
                return refuse(p, IRT_EUNSUPPORTED, "image, audio or video content"), NULL;
        return refuse(p, IRT_EINVAL, "Missing 'type' field in multimodal part."), NULL;
    }
    if (!strcmp(type, "text") || !strcmp(type, "input_text") || !strcmp(type, "output_text"))
        field = "text";
    else if (!strcmp(type, "refusal"))
        field = "refusal";
    else if (!strcmp(type, "thinking"))
        field = "thinking";
    else if (!strcmp(type, "image_url") || !strcmp(type, "input_image") ||
             !strcmp(type, "audio_url") || !strcmp(type, "input_audio") ||
             !strcmp(type, "video_url") || !strcmp(type, "image_embeds") ||
             !strcmp(type, "audio_embeds") || !strcmp(type, "image_pil") ||
             !strcmp(type, "prompt_embeds") || !strcmp(type, "tool_reference"))
        return refuse(p, IRT_EUNSUPPORTED, "image, audio or video content"), NULL;
    else
        return refuse(p, IRT_EINVAL, "Unsupported chat content part type"), NULL;
    json_t *t = json_object_get(part, field);
    if (!t || json_is_null(t)) return NULL;
    if (!json_is_string(t))
        return refuse(p, IRT_EINVAL, "a text part's text is not a string"), NULL;
    *len = json_string_length(t);
    return json_string_value(t);
}

/* content: a string (parts joined with "\n") or, in the openai format, a list
 * of {"type": "text", "text": ...}. */
static json_t *message_content(prep *p, json_t *content, bool openai) {
    /* a string in the string format is its own single part, joined: itself */
    if (!openai && json_is_string(content)) return json_incref(content);
    json_t *parts;
    if (!content || json_is_null(content))
        parts = json_array();
    else if (json_is_string(content))
        parts = json_pack("[{s:s,s:O}]", "type", "text", "text", content);
    else if (json_is_array(content))
        parts = json_incref(content);
    else
        return refuse(p, IRT_EINVAL, "a message's content is not a string or a list");
    json_t *out = openai ? json_array() : NULL;
    ir_buf joined;
    ir_buf_init(&joined, (size_t)256 << 20);
    size_t i, n = 0;
    json_t *x;
    json_array_foreach(parts, i, x) {
        size_t len = 0;
        const char *t = part_text(p, x, &len);
        if (p->rc) break;
        if (!t) continue;
        if (openai) {
            json_array_append_new(out, json_pack("{s:s,s:s%}", "type", "text", "text", t, len));
        } else {
            if (n++ && ir_buf_append(&joined, "\n", 1)) refuse(p, IRT_ENOMEM, "out of memory");
            if (ir_buf_append(&joined, t, len)) refuse(p, IRT_ENOMEM, "out of memory");
        }
    }
    json_decref(parts);
    if (p->rc) {
        json_decref(out);
        ir_buf_free(&joined);
        return NULL;
    }
    if (!openai) out = json_stringn_nocheck(joined.data ? joined.data : "", joined.len);
    ir_buf_free(&joined);
    return out;
}

/* Python's json.loads of a tool call's arguments; a string that does not parse
 * becomes {} as vLLM makes it. */
static json_t *parse_arguments(json_t *a) {
    if (json_is_object(a) || json_is_array(a)) return json_deep_copy(a);
    if (!json_is_string(a)) return json_object();
    json_error_t je;
    json_t *v = irt_json_loads(json_string_value(a), json_string_length(a),
                               JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    return v ? v : json_object();
}

static json_t *tool_calls(prep *p, json_t *calls) {
    if (!json_is_array(calls)) return refuse(p, IRT_EINVAL, "tool_calls is not a list");
    json_t *out = json_array();
    size_t i;
    json_t *x;
    json_array_foreach(calls, i, x) {
        json_t *fn = json_object_get(x, "function");
        if (!json_is_object(x) || !json_is_object(fn)) {
            json_decref(out);
            return refuse(p, IRT_EINVAL, "a tool call has no function");
        }
        json_t *c = json_deep_copy(x);
        json_t *cf = json_object_get(c, "function");
        json_object_set_new(cf, "arguments", parse_arguments(json_object_get(fn, "arguments")));
        json_array_append_new(out, c);
    }
    return out;
}

/* strcmp(s, lit) == 0 for s of n bytes (NUL-terminated, and it may hold a NUL:
 * strcmp stops there) and lit of litn, without the call (three of these per
 * message of a 50,000-message chat). */
static bool key_is(const char *s, size_t n, const char *lit, size_t litn) {
    return n >= litn && memcmp(s, lit, litn) == 0 && (n == litn || s[litn] == '\0');
}

/* Whether the message m is already what conversation() would make of it:
 * {"role": ..., "content": "..."} exactly, in that order, in the string format,
 * and not a developer message (which gains "tools"). Then it is shared, not
 * rebuilt: a hostile body's 50,000 messages cost a copy each otherwise. */
static bool as_prepared(json_t *m, bool openai) {
    if (openai || json_object_size(m) != 2) return false;
    void *it = json_object_iter(m);
    if (!key_is(json_object_iter_key(it), json_object_iter_key_len(it), "role", 4)) return false;
    json_t *role = json_object_iter_value(it);
    it = json_object_iter_next(m, it);
    if (!key_is(json_object_iter_key(it), json_object_iter_key_len(it), "content", 7)) return false;
    return json_is_string(role) &&
           !key_is(json_string_value(role), json_string_length(role), "developer", 9) &&
           json_is_string(json_object_iter_value(it));
}

static json_t *conversation(prep *p, json_t *msgs, bool openai) {
    if (!json_is_array(msgs)) return refuse(p, IRT_EINVAL, "messages is not a list");
    json_t *conv = json_array();
    size_t i;
    json_t *m;
    json_array_foreach(msgs, i, m) {
        if (json_is_object(m) && as_prepared(m, openai)) {
            json_array_append(conv, m);
            continue;
        }
        json_t *role = json_object_get(m, "role");
        if (!json_is_object(m) || !json_is_string(role)) {
            json_decref(conv);
            return refuse(p, IRT_EINVAL, "a message without a role");
        }
        const char *r = json_string_value(role);
        json_t *content = message_content(p, json_object_get(m, "content"), openai);
        if (!content) {
            json_decref(conv);
            return NULL;
        }
        json_t *out = json_object(); /* json_pack's format costs more than the copy */
        bool ok = out && !json_object_set_nocheck(out, "role", role);
        if (!ok) json_decref(content);
        /* set_new takes content even when it fails */
        if (!ok || json_object_set_new_nocheck(out, "content", content)) {
            json_decref(out);
            json_decref(conv);
            return refuse(p, IRT_ENOMEM, "out of memory");
        }
        if (!strcmp(r, "assistant")) {
            json_t *tc = json_object_get(m, "tool_calls");
            if (tc && !json_is_null(tc)) {
                json_t *calls = tool_calls(p, tc);
                if (!calls) {
                    json_decref(out);
                    json_decref(conv);
                    return NULL;
                }
                /* an empty list keeps templates on their plain path */
                if (json_array_size(calls))
                    json_object_set_new(out, "tool_calls", calls);
                else
                    json_decref(calls);
            }
            json_t *reasoning = json_object_get(m, "reasoning");
            if (reasoning && !json_is_null(reasoning)) {
                json_object_set(out, "reasoning", reasoning);
                json_object_set(out, "reasoning_content", reasoning);
            }
        } else if (!strcmp(r, "tool")) {
            json_t *id = json_object_get(m, "tool_call_id");
            if (id) json_object_set(out, "tool_call_id", id);
            if (openai) { /* text-only parts of a tool message become one string */
                ir_buf b;
                ir_buf_init(&b, (size_t)256 << 20);
                size_t k;
                json_t *x;
                json_array_foreach(content, k, x) {
                    if (k) ir_buf_append(&b, "\n", 1);
                    json_t *t = json_object_get(x, "text");
                    ir_buf_append(&b, json_string_value(t), json_string_length(t));
                }
                json_object_set_new(out, "content",
                                    json_stringn_nocheck(b.data ? b.data : "", b.len));
                ir_buf_free(&b);
            }
        }
        json_t *name = json_object_get(m, "name");
        if (json_is_string(name)) json_object_set(out, "name", name);
        if (!strcmp(r, "developer")) {
            json_t *tools = json_object_get(m, "tools");
            json_object_set_new(out, "tools", tools ? json_incref(tools) : json_null());
        }
        json_array_append_new(conv, out);
    }
    return conv;
}

/* tool.model_dump(): {"type", "function": {"name", "description", "parameters",
 * extras...}, extras...}, the declared fields first and None where absent. */
static json_t *tool_dicts(prep *p, json_t *tools) {
    if (!tools || json_is_null(tools)) return json_null();
    if (!json_is_array(tools)) return refuse(p, IRT_EINVAL, "tools is not a list");
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        if (!json_is_object(t) || !json_is_object(fn) ||
            !json_is_string(json_object_get(fn, "name"))) {
            json_decref(out);
            return refuse(p, IRT_EINVAL, "a tool without a function name");
        }
        json_t *f = json_object();
        static const char *const fkeys[] = {"name", "description", "parameters"};
        for (size_t k = 0; k < 3; k++) {
            json_t *v = json_object_get(fn, fkeys[k]);
            json_object_set_new(f, fkeys[k], v ? json_incref(v) : json_null());
        }
        const char *k;
        json_t *v;
        json_object_foreach(fn, k, v) if (!json_object_get(f, k)) json_object_set(f, k, v);
        json_t *type = json_object_get(t, "type");
        json_t *d = json_object();
        json_object_set_new(d, "type", type ? json_incref(type) : json_string("function"));
        json_object_set_new(d, "function", f);
        json_object_foreach(t, k, v) if (!json_object_get(d, k)) json_object_set(d, k, v);
        json_array_append_new(out, d);
    }
    return out;
}

/* A boolean field of the request, dflt when absent; -1 (with the engine's message)
 * for a value vLLM's request model refuses (ir_json_lax_bool). */
static int flag(const json_t *body, const char *key, bool dflt, bool *out, char *err,
                size_t errlen) {
    json_t *v = json_object_get(body, key);
    *out = dflt;
    if (!v || !ir_json_lax_bool(v, out)) return 0;
    snprintf(err, errlen, "%s: Input should be a valid boolean", key);
    return -1;
}

static json_t *chat_vars(const irt_chat *c, const json_t *body, int *rc, bool *cont_out, char *err,
                         size_t errlen) {
    prep p = {.err = err, .errlen = errlen};
    *rc = IRT_OK;
    if (c->harmony) {
        *rc = IRT_EUNSUPPORTED;
        snprintf(err, errlen,
                 "a gpt-oss chat: vLLM renders it with openai-harmony, not a template");
        return NULL;
    }
    json_t *ct = json_object_get(body, "chat_template");
    if (ct && !json_is_null(ct)) {
        *rc = IRT_EUNSUPPORTED;
        snprintf(err, errlen, "a per-request chat_template");
        return NULL;
    }
    if (!c->tmpl) {
        *rc = IRT_EINVAL;
        snprintf(err, errlen, "the model has no chat template");
        return NULL;
    }
    /* vLLM's request model refuses the two together before it reads them as booleans */
    if (ir_json_truthy(json_object_get(body, "add_generation_prompt")) &&
        ir_json_truthy(json_object_get(body, "continue_final_message"))) {
        *rc = IRT_EINVAL;
        snprintf(err, errlen, "continue_final_message and add_generation_prompt are both set");
        return NULL;
    }
    bool agp, cont;
    if (flag(body, "add_generation_prompt", true, &agp, err, errlen) ||
        flag(body, "continue_final_message", false, &cont, err, errlen)) {
        *rc = IRT_EINVAL;
        return NULL;
    }
    /* request kwargs over the configured defaults */
    json_t *kw = json_deep_copy(c->kwargs);
    json_t *rk = json_object_get(body, "chat_template_kwargs");
    if (rk && !json_is_null(rk) && !json_is_object(rk)) {
        json_decref(kw);
        *rc = IRT_EINVAL;
        snprintf(err, errlen, "chat_template_kwargs is not an object");
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(rk, k, v) if (!json_is_null(v)) json_object_set(kw, k, v);
    if (json_object_get(kw, "chat_template") || json_object_get(kw, "tokenize")) {
        json_decref(kw);
        *rc = IRT_EINVAL;
        snprintf(err, errlen, "Found unexpected chat template kwargs from request");
        return NULL;
    }
    /* kwargs reach transformers as they are: the template tests their truth */
    if (json_object_get(kw, "add_generation_prompt"))
        agp = ir_json_truthy(json_object_get(kw, "add_generation_prompt"));
    if (json_object_get(kw, "continue_final_message"))
        cont = ir_json_truthy(json_object_get(kw, "continue_final_message"));
    if (agp && cont) {
        json_decref(kw);
        *rc = IRT_EINVAL;
        snprintf(err, errlen, "continue_final_message and add_generation_prompt are both set");
        return NULL;
    }
    json_t *tools = json_object_get(kw, "tools") ? json_object_get(kw, "tools")
                                                 : json_object_get(body, "tools");
    json_t *vars = json_object();
    json_object_set_new(vars, "messages",
                        conversation(&p, json_object_get(body, "messages"), c->openai));
    if (!p.rc) json_object_set_new(vars, "tools", tool_dicts(&p, tools));
    json_t *docs = json_object_get(kw, "documents") ? json_object_get(kw, "documents")
                                                    : json_object_get(body, "documents");
    json_object_set_new(vars, "documents", docs ? json_incref(docs) : json_null());
    json_object_set_new(vars, "add_generation_prompt", json_boolean(agp));
    /* shared, not copied: its values are immortal */
    json_object_update(vars, c->specials);
    const irt_template *t =
        c->tool_use && json_is_array(json_object_get(vars, "tools")) ? c->tool_use : c->tmpl;
    /* kwargs reach the template only when it reads them, as vLLM filters them */
    json_object_foreach(kw, k, v) if (!is_hf_param(k) && irt_template_reads(t, k))
        json_object_set(vars, k, v);
    json_decref(kw);
    if (p.rc) {
        json_decref(vars);
        *rc = p.rc;
        return NULL;
    }
    *cont_out = cont;
    return vars;
}

int irt_add_special_tokens(const json_t *body, bool chat, bool *add) {
    json_t *v = json_object_get(body, "add_special_tokens");
    *add = !chat;
    return v && ir_json_lax_bool(v, add) ? IRT_EINVAL : IRT_OK;
}

json_t *irt_chat_vars(const irt_chat *c, const json_t *body, int *rc, char *err, size_t errlen) {
    bool cont;
    return chat_vars(c, body, rc, &cont, err, errlen);
}

/* transformers' continue_final_message: cut the text after the final
 * message's content, keeping or dropping its trailing white space as the
 * template kept it. */
static int continue_final(const json_t *vars, ir_buf *text, size_t start, char *err,
                          size_t errlen) {
    json_t *msgs = json_object_get(vars, "messages");
    json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
    json_t *content = json_object_get(last, "content");
    if (json_is_array(content)) {
        json_t *found = NULL;
        for (size_t i = json_array_size(content); i-- > 0 && !found;)
            if (json_object_get(json_array_get(content, i), "text"))
                found = json_object_get(json_array_get(content, i), "text");
        content = found;
    }
    if (!json_is_string(content)) {
        snprintf(err, errlen, "continue_final_message: no text to continue in the final message");
        return IRT_ETEMPLATE;
    }
    const char *s = json_string_value(content);
    size_t n = json_string_length(content), a = 0, z = n;
    while (a < n && (s[a] == ' ' || (s[a] >= '\t' && s[a] <= '\r'))) a++;
    while (z > a && (s[z - 1] == ' ' || (s[z - 1] >= '\t' && s[z - 1] <= '\r'))) z--;
    const char *hay = text->data + start;
    size_t hn = text->len - start, loc = SIZE_MAX;
    for (size_t i = hn >= z - a ? hn - (z - a) + 1 : 0; i-- > 0;)
        if (memcmp(hay + i, s + a, z - a) == 0) {
            loc = i;
            break;
        }
    if (loc == SIZE_MAX) {
        snprintf(err, errlen,
                 "continue_final_message: the final message does not appear in the "
                 "rendered chat");
        return IRT_ETEMPLATE;
    }
    /* transformers compares text[loc : loc + len(final.lstrip())] with the whole
     * final message, so leading white space always takes the second branch */
    size_t keep = n - a;
    if (a == 0 && loc + keep <= hn && memcmp(hay + loc, s, n) == 0)
        text->len = start + loc + keep;
    else
        text->len = start + loc + (z - a);
    text->data[text->len] = '\0';
    return IRT_OK;
}

int irt_chat_render(const irt_chat *c, const json_t *body, ir_buf *text, char *err, size_t errlen) {
    int rc;
    bool cont = false;
    json_t *vars = chat_vars(c, body, &rc, &cont, err, errlen);
    if (!vars) return rc;
    const irt_template *t =
        c->tool_use && json_is_array(json_object_get(vars, "tools")) ? c->tool_use : c->tmpl;
    size_t start = text->len;
    rc = irt_template_render(t, vars, 0, text, err, errlen);
    if (rc == IRT_EINVAL) rc = IRT_ETEMPLATE;
    if (rc == IRT_OK && cont) rc = continue_final(vars, text, start, err, errlen);
    json_decref(vars);
    return rc;
}
