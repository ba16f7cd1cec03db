/* sim.c: the builtin:sim tokenizer and chat template. */
#include "tokenize/ir_tokenize.h"

#include <stdlib.h>
#include <string.h>

static inline bool is_punct(unsigned char c) {
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
}

/* Whether a new piece starts at byte c, given the previous byte and the
 * current piece's length. This is the whole definition of the tokenizer. */
static inline bool starts_piece(unsigned char prev, unsigned char c, size_t cur_len) {
    if (cur_len == 0) return true;
    if (cur_len >= 3) return true;
    if (c == 0 || prev == 0) return true;
    if (c <= ' ' || c == 0x7f) return true; /* whitespace and controls */
    if (is_punct(c) || is_punct(prev)) return true;
    if (prev < ' ' || prev == 0x7f) return true;           /* a newline or tab stands alone */
    if (c >= 0xC0) return true;                            /* each code point starts fresh */
    if (c < 0x80 && prev >= 0x80) return true;             /* back to ASCII */
    if (c >= 0x80 && c < 0xC0 && prev < 0x80) return true; /* stray continuation byte */
    return false;
}

#define SIM_PIECES(text, len, EMIT)                                                                \
    do {                                                                                           \
        const unsigned char *s_ = (const unsigned char *)(text);                                   \
        uint32_t id_ = 0;                                                                          \
        size_t cur_ = 0;                                                                           \
        unsigned char prev_ = 0;                                                                   \
        for (size_t i_ = 0; i_ < (len); i_++) {                                                    \
            unsigned char c_ = s_[i_];                                                             \
            if (starts_piece(prev_, c_, cur_) && cur_) {                                           \
                EMIT(id_);                                                                         \
                id_ = 0;                                                                           \
                cur_ = 0;                                                                          \
            }                                                                                      \
            id_ |= (uint32_t)c_ << (8 * cur_);                                                     \
            cur_++;                                                                                \
            prev_ = c_;                                                                            \
        }                                                                                          \
        if (cur_) EMIT(id_);                                                                       \
    } while (0)

int irt_sim_encode(const char *text, size_t len, irt_ids *out) {
    int rc = 0;
#define PUSH(id)                                                                                   \
    do {                                                                                           \
        if (irt_ids_push(out, (id))) return -1;                                                    \
    } while (0)
    SIM_PIECES(text, len, PUSH);
#undef PUSH
    return rc;
}

size_t irt_sim_count(const char *text, size_t len) {
    size_t n = 0;
#define COUNT(id) ((void)(id), n++)
    SIM_PIECES(text, len, COUNT);
#undef COUNT
    return n;
}

int irt_sim_piece(uint32_t id, char out[3]) {
    if (id > 0xFFFFFF) return -1;
    if (id == 0) {
        out[0] = 0;
        return 1;
    }
    int n = 0;
    uint32_t v = id;
    while (v && n < 3) {
        unsigned char b = v & 0xFF;
        if (b == 0) return -1; /* a NUL only ever stands alone */
        out[n++] = (char)b;
        v >>= 8;
    }
    return n;
}

int irt_sim_decode(const uint32_t *ids, size_t n, ir_buf *out) {
    for (size_t i = 0; i < n; i++) {
        char p[3];
        int k = irt_sim_piece(ids[i], p);
        if (k < 0 || ir_buf_append(out, p, (size_t)k)) return -1;
    }
    return 0;
}

int irt_sim_render_chat(const json_t *messages, bool add_generation_prompt, ir_buf *out,
                        const char **err) {
    if (!json_is_array(messages)) {
        *err = "messages must be a list";
        return -1;
    }
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) {
        const char *role = ir_json_str(m, "role");
        if (!role) {
            *err = "a message has no role";
            return -1;
        }
        if (ir_buf_appendf(out, "<|%s|>\n", role)) goto full;
        json_t *content = json_object_get(m, "content");
        if (json_is_string(content)) {
            if (ir_buf_append(out, json_string_value(content), json_string_length(content)))
                goto full;
        } else if (json_is_array(content)) {
            size_t j;
            json_t *part;
            json_array_foreach(content, j, part) {
                const char *type = ir_json_str(part, "type");
                json_t *text = json_object_get(part, "text");
                if (!type || strcmp(type, "text") != 0 || !json_is_string(text)) {
                    *err = "only text content parts are supported";
                    return -1;
                }
                if (ir_buf_append(out, json_string_value(text), json_string_length(text)))
                    goto full;
            }
        } else if (!json_is_null(content) && content) {
            *err = "message content must be a string or a list of parts";
            return -1;
        }
        if (ir_buf_append(out, "\n", 1)) goto full;
    }
    if (add_generation_prompt && ir_buf_append_str(out, "<|assistant|>\n")) goto full;
    return 0;
full:
    *err = "the rendered prompt is too large";
    return -1;
}

/* A chat: the messages through the sim template, then builtin:sim. */
static int chat_ids(const json_t *body, irt_ids *ids, ir_buf *text, const char **param,
                    const char **msg) {
    json_t *msgs = json_object_get(body, "messages");
    *param = "messages";
    if (!json_is_array(msgs)) {
        *msg = "`messages` is required and must be a list.";
        return IRT_EINVAL;
    }
    bool agp = true;
    json_t *g = json_object_get(body, "add_generation_prompt");
    if (json_is_boolean(g)) agp = json_is_true(g);
    ir_buf own;
    ir_buf_init(&own, 0);
    ir_buf *t = text ? text : &own;
    size_t at = t->len;
    int rc = IRT_OK;
    if (irt_sim_render_chat(msgs, agp, t, msg))
        rc = IRT_EINVAL;
    else if (irt_sim_encode(t->data ? t->data + at : "", t->len - at, ids))
        rc = IRT_ENOMEM;
    ir_buf_free(&own);
    return rc;
}

/* Token ids given directly. */
static int given_ids(const json_t *p, irt_ids *ids, const char **msg) {
    size_t i;
    json_t *v;
    json_array_foreach(p, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 0xFFFFFF) {
            *msg = "`prompt` token ids must be integers in range.";
            return IRT_EINVAL;
        }
        if (irt_ids_push(ids, (uint32_t)json_integer_value(v))) return IRT_ENOMEM;
    }
    return IRT_OK;
}

int irt_sim_prompt_ids(const json_t *body, bool chat, irt_ids *ids, ir_buf *text,
                       const char **param, const char **msg) {
    *param = *msg = NULL;
    if (chat) return chat_ids(body, ids, text, param, msg);
    *param = "prompt";
    json_t *p = json_object_get(body, "prompt");
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
        p = json_array_get(p, 0);
    if (json_is_string(p)) {
        if (text && ir_buf_append(text, json_string_value(p), json_string_length(p)))
            return IRT_ENOMEM;
        return irt_sim_encode(json_string_value(p), json_string_length(p), ids) ? IRT_ENOMEM
                                                                                : IRT_OK;
    }
    if (json_is_array(p) && json_array_size(p) > 0 && json_is_integer(json_array_get(p, 0)))
        return given_ids(p, ids, msg);
    if (json_is_array(p) && json_array_size(p) > 1) {
        *msg = "Batched prompts are not supported.";
        return IRT_EUNSUPPORTED;
    }
    *msg = "`prompt` is required: a string or a list of token ids.";
    return IRT_EINVAL;
}
