/* harmony.c: a gpt-oss Chat Completions request turned into the token ids
 * vLLM gives its engine. vLLM does not use a chat template for a model whose
 * config.json says model_type "gpt_oss": it builds openai-harmony messages
 * (vllm/entrypoints/openai/parser/harmony_utils.py: build_harmony_preamble,
 * extract_instructions_from_messages, parse_chat_inputs_to_harmony_messages,
 * auto_drop_analysis_messages) and renders them with openai-harmony's
 * render_conversation_for_completion (src/encoding.rs), each text piece
 * encoded on its own as plain text. docs/tokenizer.md pins the versions and
 * lists what is followed. Written from those descriptions; nothing copied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenize/harmony_internal.h"

enum { HM_TEXT, HM_SYSTEM, HM_DEVELOPER };

typedef struct hm_msg {
    int kind;
    const char *role;    /* the author shown: a role, or "functions.<name>" for a tool */
    char *tool_author;   /* owned: a tool's author */
    char *recipient;     /* owned, or NULL */
    const char *channel; /* NULL, "analysis", "commentary" or "final" */
    bool json_type;      /* content type " json" (tool calls) */
    json_t *parts;       /* HM_TEXT: strings, each encoded on its own (owned) */
    json_t *instr;       /* HM_DEVELOPER: instructions or NULL (owned) */
    const json_t *tools; /* HM_DEVELOPER: function tools or NULL (borrowed from the body) */
} hm_msg;

typedef struct hm {
    hm_msg *m;
    size_t n, cap;
    int rc;
    char *err;
    size_t errlen;
} hm;

static int fail(hm *h, int rc, const char *msg) {
    if (!h->rc) {
        h->rc = rc;
        snprintf(h->err, h->errlen, "%s", msg);
    }
    return h->rc;
}

static hm_msg *push(hm *h, int kind, const char *role, const char *channel) {
    if (h->rc) return NULL;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        hm_msg *m = realloc(h->m, cap * sizeof *m);
        if (!m) return fail(h, IRT_ENOMEM, "out of memory"), NULL;
        h->m = m;
        h->cap = cap;
    }
    hm_msg *m = &h->m[h->n++];
    *m = (hm_msg){.kind = kind, .role = role, .channel = channel};
    if (kind == HM_TEXT && !(m->parts = json_array())) return fail(h, IRT_ENOMEM, "oom"), NULL;
    return m;
}

static void hm_free(hm *h) {
    for (size_t i = 0; i < h->n; i++) {
        free(h->m[i].tool_author);
        free(h->m[i].recipient);
        json_decref(h->m[i].parts);
        json_decref(h->m[i].instr);
    }
    free(h->m);
}

/* A one-part text message. */
static hm_msg *text_msg(hm *h, const char *role, const char *channel, json_t *text) {
    hm_msg *m = push(h, HM_TEXT, role, channel);
    if (m) json_array_append(m->parts, text);
    return m;
}

static char *join2(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *s = malloc(na + nb + 1);
    if (s) memcpy(s, a, na), memcpy(s + na, b, nb + 1);
    return s;
}

/* ---- vLLM's reading of the messages ------------------------------------------------ */

/* flatten_input_text_content: a string as is; a list's strings and its
 * parts' non-null "text" joined with ""; NULL (Python None) otherwise or
 * when no text was found. New reference. */
static json_t *flatten(hm *h, const json_t *content) {
    if (json_is_string(content)) return json_incref((json_t *)content);
    if (!json_is_array(content)) return NULL;
    ir_buf b;
    ir_buf_init(&b, (size_t)256 << 20);
    size_t i, found = 0;
    json_t *x;
    json_array_foreach(content, i, x) {
        json_t *t = json_is_object(x) ? json_object_get(x, "text") : x;
        if (!t || json_is_null(t) || (!json_is_string(x) && !json_is_object(x))) continue;
        if (!json_is_string(t)) {
            fail(h, IRT_EUNSUPPORTED, "a content part's text is not a string");
            break;
        }
        found++;
        if (ir_buf_append(&b, json_string_value(t), json_string_length(t)))
            fail(h, IRT_ENOMEM, "out of memory");
    }
    json_t *s = !h->rc && found ? json_stringn_nocheck(b.data ? b.data : "", b.len) : NULL;
    ir_buf_free(&b);
    return s;
}

/* A user or assistant message's content as harmony TextContents: a string is
 * one; a list gives each part's text ("" when absent). Parts other than text
 * (images, refusals) are not followed. */
static json_t *text_parts(hm *h, const json_t *content) {
    json_t *out = json_array();
    if (!out) return fail(h, IRT_ENOMEM, "out of memory"), NULL;
    if (!content || json_is_null(content) || json_is_string(content)) {
        json_array_append_new(out, content ? json_incref((json_t *)content) : json_string(""));
        return out;
    }
    if (!json_is_array(content))
        fail(h, IRT_EINVAL, "a message's content is not a string or a list");
    size_t i;
    json_t *x;
    json_array_foreach(content, i, x) {
        const char *type = json_string_value(json_object_get(x, "type"));
        json_t *t = json_object_get(x, "text");
        if (!json_is_object(x))
            fail(h, IRT_EINVAL, "a content part is not an object");
        else if (!type || strcmp(type, "text"))
            fail(h, IRT_EUNSUPPORTED, "a content part other than text (gpt-oss chat)");
        else if (!json_is_string(t))
            fail(h, IRT_EINVAL, "a text part's text is not a string");
        if (h->rc) break;
        json_array_append(out, t);
    }
    if (h->rc) json_decref(out), out = NULL;
    return out;
}

/* A string member that Python tests for truth: "" and null are false;
 * anything but a string is not followed. */
static const json_t *truthy_string(hm *h, const json_t *m, const char *key) {
    json_t *v = json_object_get(m, key);
    if (!v || json_is_null(v)) return NULL;
    if (!json_is_string(v)) return fail(h, IRT_EUNSUPPORTED, "a non-string reasoning"), NULL;
    return json_string_length(v) ? v : NULL;
}

static void analysis(hm *h, const json_t *m) {
    const json_t *r = truthy_string(h, m, "reasoning");
    if (r) text_msg(h, "assistant", "analysis", (json_t *)r);
}

/* An assistant turn that called tools: its content as commentary, its
 * reasoning as analysis, then each call to "functions.<name>" as JSON. */
static void assistant_calls(hm *h, const json_t *m, const json_t *calls) {
    json_t *content = flatten(h, json_object_get(m, "content"));
    if (content && json_string_length(content)) text_msg(h, "assistant", "commentary", content);
    json_decref(content);
    analysis(h, m);
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) {
        json_t *fn = json_object_get(c, "function");
        json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
        if (!json_is_object(c) || !json_is_object(fn) || !json_is_string(name) ||
            (args && !json_is_null(args) && !json_is_string(args))) {
            fail(h, IRT_EINVAL, "a tool call without a function name and string arguments");
            return;
        }
        json_t *a = json_is_string(args) ? json_incref(args) : json_string("");
        hm_msg *x = text_msg(h, "assistant", "commentary", a);
        json_decref(a);
        if (!x) return;
        x->json_type = true;
        if (!(x->recipient = join2("functions.", json_string_value(name))))
            fail(h, IRT_ENOMEM, "out of memory");
    }
}

/* tool_call_id -> function name over every assistant tool call (the last
 * one wins, as a dict's assignment does). */
static const char *call_name(const json_t *msgs, size_t from, const char *id) {
    const char *name = NULL;
    for (size_t i = from; i < json_array_size(msgs); i++) {
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(json_array_get(msgs, i), "tool_calls"), k, c) {
            const char *cid = json_string_value(json_object_get(c, "id"));
            if (cid && id && !strcmp(cid, id))
                name = json_string_value(json_object_get(json_object_get(c, "function"), "name"));
        }
    }
    return name;
}

static void tool_result(hm *h, const json_t *msgs, size_t from, const json_t *m) {
    json_t *id = json_object_get(m, "tool_call_id");
    if (id && !json_is_string(id)) {
        fail(h, IRT_EINVAL, "tool_call_id is not a string");
        return;
    }
    const char *name = call_name(msgs, from, id ? json_string_value(id) : "");
    json_t *content = flatten(h, json_object_get(m, "content"));
    json_t *text = content && json_string_length(content) ? content : json_string("");
    if (text != content) json_decref(content);
    hm_msg *x = text_msg(h, NULL, "commentary", text);
    json_decref(text);
    if (!x) return;
    x->tool_author = join2("functions.", name ? name : "");
    x->recipient = join2("assistant", "");
    x->role = x->tool_author;
    if (!x->tool_author || !x->recipient) fail(h, IRT_ENOMEM, "out of memory");
}

static void developer_instr(hm *h, json_t *instr, const json_t *tools) {
    hm_msg *d = push(h, HM_DEVELOPER, "developer", NULL);
    if (!d) return;
    d->instr = instr ? json_incref(instr) : NULL;
    d->tools = tools;
}

static void one_message(hm *h, const json_t *msgs, size_t from, const json_t *m) {
    const char *role = json_string_value(json_object_get(m, "role"));
    if (!json_is_object(m) || !role) {
        fail(h, IRT_EINVAL, "a message without a role");
        return;
    }
    json_t *calls = json_object_get(m, "tool_calls");
    if (calls && !json_is_array(calls)) {
        fail(h, IRT_EUNSUPPORTED, "tool_calls is not a list");
        return;
    }
    if (!strcmp(role, "assistant") && json_array_size(calls)) {
        assistant_calls(h, m, calls);
    } else if (!strcmp(role, "tool")) {
        tool_result(h, msgs, from, m);
    } else if (!strcmp(role, "assistant")) {
        analysis(h, m);
        json_t *parts = text_parts(h, json_object_get(m, "content"));
        json_t *first = json_array_get(parts, 0);
        hm_msg *x =
            first && json_string_length(first) ? push(h, HM_TEXT, "assistant", "final") : NULL;
        if (x) json_array_extend(x->parts, parts);
        json_decref(parts);
    } else if (!strcmp(role, "system") || !strcmp(role, "developer")) {
        json_t *instr = flatten(h, json_object_get(m, "content"));
        if (instr) developer_instr(h, instr, NULL);
        json_decref(instr);
    } else if (!strcmp(role, "user")) {
        json_t *parts = text_parts(h, json_object_get(m, "content"));
        hm_msg *x = parts ? push(h, HM_TEXT, "user", NULL) : NULL;
        if (x) json_array_extend(x->parts, parts);
        json_decref(parts);
    } else {
        fail(h, IRT_EUNSUPPORTED, "a message role harmony does not know");
    }
}

/* auto_drop_analysis_messages: analysis before the last final answer goes. */
static void drop_old_analysis(hm *h) {
    size_t last = 0;
    for (size_t i = h->n; i-- > 0;)
        if (h->m[i].channel && !strcmp(h->m[i].channel, "final") && h->m[i].role &&
            !strcmp(h->m[i].role, "assistant")) {
            last = i;
            break;
        }
    size_t k = 0;
    for (size_t i = 0; i < h->n; i++) {
        hm_msg *m = &h->m[i];
        if (i < last && m->channel && !strcmp(m->channel, "analysis")) {
            json_decref(m->parts);
            continue;
        }
        h->m[k++] = *m;
    }
    h->n = k;
}

/* ---- the request ------------------------------------------------------------------- */

static const char *effort_of(hm *h, const json_t *body) {
    json_t *e = json_object_get(body, "reasoning_effort");
    if (!e || json_is_null(e)) return "medium"; /* SystemContent's default */
    const char *s = json_string_value(e);
    if (s && (!strcmp(s, "low") || !strcmp(s, "medium") || !strcmp(s, "high"))) return s;
    fail(h, IRT_EINVAL, "reasoning_effort must be low, medium or high for a gpt-oss chat");
    return NULL;
}

/* The request's tools, all functions with a name (pydantic's checks), or
 * NULL when there are none. */
static const json_t *function_tools(hm *h, const json_t *body) {
    json_t *tools = json_object_get(body, "tools");
    if (!tools || json_is_null(tools)) return NULL;
    if (!json_is_array(tools)) return fail(h, IRT_EINVAL, "tools is not a list"), NULL;
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *fn = json_object_get(t, "function"), *type = json_object_get(t, "type");
        json_t *p = json_object_get(fn, "parameters"), *d = json_object_get(fn, "description");
        if ((type && !(json_is_string(type) && !strcmp(json_string_value(type), "function"))) ||
            !json_is_object(fn) || !json_is_string(json_object_get(fn, "name")) ||
            (p && !json_is_null(p) && !json_is_object(p)) ||
            (d && !json_is_null(d) && !json_is_string(d)))
            return fail(h, IRT_EINVAL, "a tool is not a function with a name"), NULL;
    }
    return json_array_size(tools) ? tools : NULL;
}

/* The system message, the developer message (the first message's
 * instructions when it is a system or developer one, and the tools), then
 * the conversation. */
static void build(hm *h, const json_t *body, const char **effort, bool *fn_tools) {
    json_t *msgs = json_object_get(body, "messages");
    if (!json_is_array(msgs)) {
        fail(h, IRT_EINVAL, "messages is not a list");
        return;
    }
    *effort = effort_of(h, body);
    const json_t *tools = function_tools(h, body);
    *fn_tools = tools != NULL;
    json_t *first = json_array_get(msgs, 0);
    const char *r = json_string_value(json_object_get(first, "role"));
    size_t from = r && (!strcmp(r, "system") || !strcmp(r, "developer")) ? 1 : 0;
    json_t *instr = from ? flatten(h, json_object_get(first, "content")) : NULL;
    push(h, HM_SYSTEM, "system", NULL);
    if ((instr && json_string_length(instr)) || tools) developer_instr(h, instr, tools);
    json_decref(instr);
    for (size_t i = from; !h->rc && i < json_array_size(msgs); i++)
        one_message(h, msgs, from, json_array_get(msgs, i));
    if (!h->rc) drop_old_analysis(h);
}

/* ---- rendering ------------------------------------------------------------------------ */

typedef struct sink {
    const irt_tokenizer *t;
    irt_cache *cache;
    irt_ids *ids;
    ir_buf *text; /* the prompt's text too, or NULL */
} sink;

static int put_text(const sink *o, const char *s, size_t n) {
    if (o->text && ir_buf_append(o->text, s, n)) return IRT_ENOMEM;
    return irt_encode_ordinary(o->t, o->cache, s, n, o->ids);
}

static int mark(const sink *o, const char *tok) {
    int64_t id = irt_token_to_id(o->t, tok, strlen(tok));
    if (id < 0) return IRT_EMODEL;
    if (o->text && ir_buf_append(o->text, tok, strlen(tok))) return IRT_ENOMEM;
    return irt_ids_push(o->ids, (uint32_t)id);
}

static int system_text(ir_buf *b, const char *date, const char *effort, bool fn_tools) {
    int rc = ir_buf_appendf(b,
                            "You are ChatGPT, a large language model trained by OpenAI.\n"
                            "Knowledge cutoff: 2024-06\nCurrent date: %s\n\nReasoning: %s\n\n"
                            "# Valid channels: analysis, commentary, final. Channel must be "
                            "included for every message.",
                            date, effort);
    if (!rc && fn_tools)
        rc = ir_buf_append_lit(b, "\nCalls to these tools must go to the commentary channel: "
                                  "'functions'.");
    return rc ? IRT_ENOMEM : IRT_OK;
}

static int developer_text(ir_buf *b, const hm_msg *m) {
    if (m->instr && (ir_buf_append_lit(b, "# Instructions\n\n") ||
                     ir_buf_append(b, json_string_value(m->instr), json_string_length(m->instr))))
        return IRT_ENOMEM;
    if (!m->tools) return IRT_OK;
    if (m->instr && ir_buf_append_lit(b, "\n\n")) return IRT_ENOMEM;
    return irt_harmony_tools_section(m->tools, b);
}

static int content(const sink *o, const hm_msg *m, const char *date, const char *effort,
                   bool fn_tools) {
    if (m->kind == HM_TEXT) {
        size_t i;
        json_t *p;
        json_array_foreach(m->parts, i, p) {
            int rc = put_text(o, json_string_value(p), json_string_length(p));
            if (rc) return rc;
        }
        return IRT_OK;
    }
    ir_buf b;
    ir_buf_init(&b, (size_t)256 << 20);
    int rc = m->kind == HM_SYSTEM ? system_text(&b, date, effort, fn_tools) : developer_text(&b, m);
    if (!rc) rc = put_text(o, b.data ? b.data : "", b.len);
    ir_buf_free(&b);
    return rc;
}

/* <|start|>{author}[ to={recipient}][<|channel|>{channel}][ json]<|message|>
 * {content}<|end|>, or <|call|> for an assistant's call to a tool. */
static int render(const sink *o, const hm_msg *m, const char *date, const char *effort,
                  bool fn_tools) {
    int rc = mark(o, "<|start|>");
    if (!rc) rc = put_text(o, m->role, strlen(m->role));
    if (!rc && m->recipient && strcmp(m->recipient, "all")) {
        char *r = join2(" to=", m->recipient);
        rc = r ? put_text(o, r, strlen(r)) : IRT_ENOMEM;
        free(r);
    }
    if (!rc && m->channel) rc = mark(o, "<|channel|>");
    if (!rc && m->channel) rc = put_text(o, m->channel, strlen(m->channel));
    if (!rc && m->json_type) rc = put_text(o, " json", 5);
    if (!rc) rc = mark(o, "<|message|>");
    if (!rc) rc = content(o, m, date, effort, fn_tools);
    bool call = m->role && !strcmp(m->role, "assistant") && m->recipient;
    if (!rc) rc = mark(o, call ? "<|call|>" : "<|end|>");
    return rc;
}

int irt_harmony_check(const irt_tokenizer *t, char *err, size_t errlen) {
    static const char *const marks[] = {"<|start|>", "<|message|>", "<|end|>", "<|channel|>",
                                        "<|call|>"};
    for (size_t i = 0; i < sizeof marks / sizeof *marks; i++)
        if (irt_token_to_id(t, marks[i], strlen(marks[i])) < 0) {
            snprintf(err, errlen, "a gpt-oss model (config.json) whose tokenizer lacks %s",
                     marks[i]);
            return IRT_EMODEL;
        }
    return IRT_OK;
}

void irt_harmony_today(char out[64]) {
    const char *env = getenv("VLLM_SYSTEM_START_DATE");
    if (env && *env) {
        snprintf(out, 64, "%s", env);
        return;
    }
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm) || !strftime(out, 64, "%Y-%m-%d", &tm)) snprintf(out, 64, "?");
}

int irt_harmony_ids(const irt_tokenizer *t, irt_cache *cache, const json_t *body, const char *date,
                    irt_ids *ids, ir_buf *text, char *err, size_t errlen) {
    if (!t || !ids || !json_is_object(body)) {
        snprintf(err, errlen, "the body is not a JSON object");
        return IRT_EINVAL;
    }
    char today[64];
    if (!date) irt_harmony_today(today), date = today;
    hm h = {.err = err, .errlen = errlen};
    const char *effort = NULL;
    bool fn_tools = false;
    build(&h, body, &effort, &fn_tools);
    sink o = {.t = t, .cache = cache, .ids = ids, .text = text};
    size_t from = ids->len, tfrom = text ? text->len : 0;
    for (size_t i = 0; !h.rc && i < h.n; i++) {
        int rc = render(&o, &h.m[i], date, effort, fn_tools);
        if (rc)
            fail(&h, rc,
                 rc == IRT_EMODEL ? "the tokenizer lacks harmony's special tokens"
                                  : "cannot encode the conversation");
    }
    if (!h.rc) {
        int rc = mark(&o, "<|start|>");
        if (!rc) rc = put_text(&o, "assistant", 9);
        if (rc) fail(&h, rc, "cannot encode the conversation");
    }
    hm_free(&h);
    if (h.rc) ids->len = from;
    if (h.rc && text) text->len = tfrom;
    return h.rc;
}
