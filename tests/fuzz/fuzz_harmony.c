/* fuzz_harmony: arbitrary bytes read as a Chat Completions body (by
 * json.loads rules, irt_json_loads) and rendered as a gpt-oss chat
 * (irt_harmony_ids) with a small byte-level tokenizer that knows Harmony's
 * markers. It must give ids or refuse with a message, never crash or leak;
 * ids are in range, a refusal appends nothing, and a success ends with the
 * generation prompt "<|start|>assistant". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/hf_internal.h"
#include "tokenize/ir_tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const markers[] = {"<|start|>", "<|message|>", "<|end|>", "<|channel|>",
                                      "<|call|>"};
#define NMARK (sizeof markers / sizeof *markers)

/* Every byte a token of its own (ByteLevel's characters), no merges, and
 * the markers as added tokens 256... */
static irt_tokenizer *tiny(void) {
    ir_buf b;
    ir_buf_init(&b, 1 << 20);
    ir_buf_append_lit(&b, "{\"version\":\"1.0\",\"added_tokens\":[");
    for (size_t i = 0; i < NMARK; i++)
        ir_buf_appendf(&b,
                       "%s{\"id\":%zu,\"content\":\"%s\",\"special\":true,\"lstrip\":false,"
                       "\"rstrip\":false,\"single_word\":false,\"normalized\":false}",
                       i ? "," : "", 256 + i, markers[i]);
    ir_buf_append_lit(&b, "],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\","
                          "\"add_prefix_space\":false,\"use_regex\":true},\"post_processor\":null,"
                          "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\","
                          "\"vocab\":{");
    for (unsigned c = 0; c < 256; c++)
        ir_buf_appendf(&b, "%s\"\\u%04x\":%u", c ? "," : "", hf_byte_char(c), c);
    ir_buf_append_lit(&b, "},\"merges\":[]}}");
    char err[256];
    irt_tokenizer *t = irt_load_json(b.data, b.len, err, sizeof err);
    ir_buf_free(&b);
    if (!t) {
        fprintf(stderr, "fuzz_harmony: %s\n", err);
        abort();
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static irt_tokenizer *t;
    if (!t) t = tiny();
    json_error_t je;
    json_t *body = irt_json_loads((const char *)data, size, JSON_ALLOW_NUL, &je);
    if (!body) return 0;
    irt_ids ids = {0};
    ir_buf text;
    ir_buf_init(&text, 4 << 20);
    char err[256] = "";
    if (irt_ids_push(&ids, 7)) abort(); /* something before: it must stay */
    int rc = irt_harmony_ids(t, NULL, body, "2026-01-01", &ids, &text, err, sizeof err);
    if (rc != IRT_OK && (ids.len != 1 || !err[0])) abort();
    if (rc == IRT_OK) {
        if (ids.len < 1 + 1 + 9 || ids.ids[0] != 7) abort();
        for (size_t i = 0; i < ids.len; i++)
            if (ids.ids[i] >= 256 + NMARK) abort();
        if (ids.ids[ids.len - 10] != 256 ||
            memcmp(&ids.ids[ids.len - 9], (uint32_t[]){'a', 's', 's', 'i', 's', 't', 'a', 'n', 't'},
                   9 * sizeof(uint32_t)))
            abort();
    }
    /* the text: a refusal leaves none, a prompt ends with the generation prompt */
    if (rc != IRT_OK && text.len) abort();
    if (rc == IRT_OK &&
        (text.len < 18 || memcmp(text.data + text.len - 18, "<|start|>assistant", 18)))
        abort();
    ir_buf_free(&text);
    irt_ids_free(&ids);
    json_decref(body);
    return 0;
}
