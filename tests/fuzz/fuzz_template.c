/* fuzz_template: arbitrary template source, optionally followed by a line
 * "\n#vars\n" and a JSON object of variables read by irt_json_loads (else a
 * small chat context), into
 * the template engine. Parsing and rendering must succeed or refuse with a
 * message, within the bounds, never crash; content-format detection and the
 * variable scan run on whatever compiles. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/ir_tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char default_vars[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"Hi <|im_end|> there\"},"
    " {\"role\": \"assistant\", \"content\": \"<think>\\nhm\\n</think>\\n\\nHello!\","
    "  \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": "
    "{\"a\": 1}}}]},"
    " {\"role\": \"tool\", \"content\": \"42\"},"
    " {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"parts\"}]}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}],"
    " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *src = (const char *)data;
    size_t len = size;
    static const char sep[] = "\n#vars\n";
    json_t *vars = NULL;
    const char *cut = size >= sizeof sep - 1 ? memmem(data, size, sep, sizeof sep - 1) : NULL;
    if (cut) {
        len = (size_t)(cut - src);
        const char *j = cut + sizeof sep - 1;
        json_error_t je;
        /* as a request body is read: json.loads rules, past-64-bit integers,
         * NaN and Infinity included (pyjson.c) */
        vars = irt_json_loads(j, size - (size_t)(j - src), 0, &je);
    }
    if (!vars) vars = json_loads(default_vars, 0, NULL);
    irt_template_limits lim = {
        .max_output = 1 << 20, .max_memory = 64 << 20, .max_steps = 200000, .max_depth = 32};
    char err[256];
    irt_template *t = irt_template_new(src, len, &lim, err, sizeof err);
    if (t) {
        ir_buf out;
        ir_buf_init(&out, 2 << 20);
        irt_template_render(t, vars, 1700000000, &out, err, sizeof err);
        ir_buf_free(&out);
        irt_template_iterates_content(t);
        irt_template_reads(t, "messages");
        irt_template_free(t);
    }
    json_decref(vars);
    return 0;
}
