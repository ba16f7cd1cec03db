/* hostile_chats.h: chat bodies for the speed goals of the tokenize path, shared
 * by tests/unit/tokenize/test_chat_hostile.c (which asserts each outcome) and
 * bench/tokenizer/bench_chat.c (which times each against its bar).
 *
 * Every builder returns a malloc'd, NUL-terminated JSON body (free() it), or
 * NULL on out of memory. Text is English-like prose drawn from a fixed word
 * list with a seed, so the same seed gives the same body. */
#ifndef HOSTILE_CHATS_H
#define HOSTILE_CHATS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char *const HC_WORDS[] = {
    "the",      "router",   "cache",   "prefix",   "model",   "token",    "request", "replica",
    "answer",   "question", "should",  "always",   "never",   "system",   "user",    "policy",
    "careful",  "precise",  "within",  "between",  "latency", "queue",    "engine",  "block",
    "function", "returns",  "value",   "context",  "window",  "memory",   "budget",  "write",
    "read",     "explain",  "briefly", "reasons",  "example", "document", "section", "table",
    "keep",     "format",   "output",  "language", "English", "polite",   "helpful", "assistant",
    "and",      "or",       "of",      "to",       "in",      "for",      "with",    "on",
    "a",        "is",       "are",     "be",       "not",     "when",     "if",      "then",
};

static const char *const HC_SYLLABLES[] = {
    "con", "tra", "ver", "sal", "ment", "ing", "pro", "dis", "ble", "tion", "ex",  "per",
    "ri",  "an",  "ous", "qui", "lo",   "mar", "ten", "ca",  "bu",  "ly",   "zen", "ph",
};

/* A rare word: two to four syllables (most of them unknown to a vocabulary as a
 * whole word, so the tokenizer merges them piece by piece, as it must for real
 * text's names and jargon). */
static inline size_t hc_rare_word(unsigned seed, char *out) {
    size_t n = 0, k = 2 + (seed >> 3) % 3;
    for (size_t i = 0; i < k; i++) {
        seed = seed * 1103515245u + 12345u;
        const char *s = HC_SYLLABLES[(seed >> 9) % (sizeof HC_SYLLABLES / sizeof *HC_SYLLABLES)];
        memcpy(out + n, s, strlen(s));
        n += strlen(s);
    }
    return n;
}

/* About `bytes` bytes of prose: sentences of 6 to 17 words, one word in five a
 * rare one, the others common ones. */
static inline char *hc_prose(size_t bytes, unsigned seed) {
    char *s = malloc(bytes + 64);
    if (!s) return NULL;
    size_t n = 0;
    int in_sentence = 0, cap_next = 1;
    while (n < bytes) {
        seed = seed * 1103515245u + 12345u;
        char rare[32];
        const char *w = HC_WORDS[(seed >> 8) % (sizeof HC_WORDS / sizeof *HC_WORDS)];
        size_t wl = strlen(w);
        if ((seed >> 16) % 5 == 0) w = rare, wl = hc_rare_word(seed >> 2, rare);
        if (n + wl + 3 > bytes + 60) break;
        if (n && s[n - 1] != '\n') s[n++] = ' ';
        memcpy(s + n, w, wl);
        if (cap_next && s[n] >= 'a' && s[n] <= 'z') s[n] -= 32; /* capitalised */
        n += wl;
        cap_next = 0;
        if (++in_sentence >= 6 + (int)((seed >> 20) % 12)) {
            cap_next = (seed >> 4) % 5 != 0; /* a full stop, else a comma */
            s[n++] = cap_next ? '.' : ',';
            in_sentence = 0;
            if (cap_next && (seed >> 12) % 9 == 0) s[n++] = '\n';
        }
    }
    s[n] = '\0';
    return s;
}

static inline char *hc_dump(json_t *body) {
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    return s;
}

static inline json_t *hc_msg(const char *role, const char *content) {
    return json_pack("{s:s,s:s}", "role", role, "content", content);
}

/* A chat of a system prompt of sys_bytes drawn with sys_seed and one user turn
 * of user_bytes drawn with user_seed (a new seed: a new last turn). */
static inline char *hc_chat(const char *model, size_t sys_bytes, unsigned sys_seed,
                            size_t user_bytes, unsigned user_seed) {
    char *sys = hc_prose(sys_bytes, sys_seed), *usr = hc_prose(user_bytes, user_seed);
    json_t *msgs = json_array();
    if (sys && usr) {
        json_array_append_new(msgs, hc_msg("system", sys));
        json_array_append_new(msgs, hc_msg("user", usr));
    }
    free(sys);
    free(usr);
    return hc_dump(json_pack("{s:s,s:o,s:i}", "model", model, "messages", msgs, "max_tokens", 16));
}

/* One user message of `bytes` bytes (4 MiB in the goal). */
static inline char *hc_big_message(const char *model, size_t bytes) {
    char *text = hc_prose(bytes, 3);
    if (!text) return NULL;
    json_t *msgs = json_array();
    json_array_append_new(msgs, hc_msg("user", text));
    free(text);
    return hc_dump(json_pack("{s:s,s:o}", "model", model, "messages", msgs));
}

/* n messages (50,000 in the goal): a system prompt, then user and assistant
 * turns of a few words each, ending on a user turn. */
static inline char *hc_many_messages(const char *model, size_t n) {
    json_t *msgs = json_array();
    json_array_append_new(msgs, hc_msg("system", "You are a helpful assistant."));
    char buf[64];
    for (size_t i = 1; i < n; i++) {
        snprintf(buf, sizeof buf, "turn %zu: the queue is short.", i);
        json_array_append_new(msgs, hc_msg(i % 2 ? "user" : "assistant", buf));
    }
    if (n % 2 == 1 && n > 1) json_array_append_new(msgs, hc_msg("user", "and now?"));
    return hc_dump(json_pack("{s:s,s:o}", "model", model, "messages", msgs));
}

/* n tools (1,000 in the goal), each a function with a description and a JSON
 * schema of three parameters. */
static inline char *hc_many_tools(const char *model, size_t n) {
    json_t *tools = json_array();
    char name[64], desc[128];
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof name, "tool_%zu", i);
        snprintf(desc, sizeof desc, "Looks up record %zu of the fleet and returns its state.", i);
        json_t *params = json_pack("{s:s,s:{s:{s:s,s:s},s:{s:s,s:[s,s]},s:{s:s}},s:[s]}", "type",
                                   "object", "properties", "id", "type", "string", "description",
                                   "the record's id", "mode", "type", "string", "enum", "fast",
                                   "exact", "limit", "type", "integer", "required", "id");
        json_array_append_new(tools,
                              json_pack("{s:s,s:{s:s,s:s,s:o}}", "type", "function", "function",
                                        "name", name, "description", desc, "parameters", params));
    }
    json_t *msgs = json_array();
    json_array_append_new(msgs, hc_msg("user", "Which tool fits?"));
    return hc_dump(json_pack("{s:s,s:o,s:o}", "model", model, "messages", msgs, "tools", tools));
}

/* `depth` nested objects {"a":{"a":...1...}}: the text, malloc'd. */
static inline char *hc_nested_text(size_t depth) {
    char *s = malloc(6 * depth + 2);
    if (!s) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < depth; i++) memcpy(s + n, "{\"a\":", 5), n += 5;
    s[n++] = '1';
    memset(s + n, '}', depth);
    n += depth;
    s[n] = '\0';
    return s;
}

/* An assistant tool call whose arguments nest `depth` levels: as a JSON string
 * (as OpenAI clients send them) when as_string, else as an object inside the
 * body itself. Then the tool's answer and a user turn. */
static inline char *hc_nested_arguments(const char *model, size_t depth, int as_string) {
    char *nested = hc_nested_text(depth);
    if (!nested) return NULL;
    char *args = nested;
    if (as_string) { /* the nested text as a JSON string: quotes escaped */
        json_t *s = json_string(nested);
        args = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        json_decref(s);
        free(nested);
        if (!args) return NULL;
    }
    const char *head =
        "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"Call it.\"},"
        "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"id\":\"c1\","
        "\"type\":\"function\",\"function\":{\"name\":\"deep\",\"arguments\":";
    const char *tail = "}}]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"ok\"},"
                       "{\"role\":\"user\",\"content\":\"Go on.\"}]}";
    size_t cap = strlen(head) + strlen(model) + strlen(args) + strlen(tail) + 1;
    char *body = malloc(cap);
    if (body) {
        int n = snprintf(body, cap, head, model);
        snprintf(body + n, cap - (size_t)n, "%s%s", args, tail);
    }
    free(args);
    return body;
}

#endif
