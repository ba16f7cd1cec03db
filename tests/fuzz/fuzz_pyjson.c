/* fuzz_pyjson: arbitrary bytes as a request body read by Python's json.loads
 * rules (irt_json_loads, src/tokenize/pyjson.c). It must read what jansson
 * reads exactly as jansson does; whatever else it reads holds only markers
 * with a sign and digits, N, I or -I; and every value it reads renders in the
 * template engine (printed, repr'd, tojson'd) or refuses with a message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/ir_tokenize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int check_markers(const json_t *v, int depth) {
    size_t n;
    const char *t = irt_json_number_text(v, &n);
    if (t) {
        if (n == 1 && (t[0] == 'N' || t[0] == 'I')) return 0;
        if (n == 2 && !memcmp(t, "-I", 2)) return 0;
        size_t i = t[0] == '-';
        if (i == n) abort();
        for (; i < n; i++)
            if (t[i] < '0' || t[i] > '9') abort();
        return 0;
    }
    if (depth > 300) return 0;
    size_t i;
    json_t *x;
    const char *k;
    if (json_is_array(v)) json_array_foreach(v, i, x) check_markers(x, depth + 1);
    if (json_is_object(v)) json_object_foreach((json_t *)v, k, x) check_markers(x, depth + 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    size_t flags = size && (data[0] & 1) ? JSON_DECODE_ANY | JSON_ALLOW_NUL : JSON_DECODE_ANY;
    json_error_t e;
    json_t *plain = json_loadb(s, size, flags, &e);
    json_t *v = irt_json_loads(s, size, flags, &e);
    if (plain && (!v || !json_equal(plain, v))) abort();
    json_decref(plain);
    if (!v) return 0;
    check_markers(v, 0);
    static const char src[] = "{{ v }}|{{ [v] }}|{{ v|tojson }}|{{ v is number }}|{{ v == v }}";
    irt_template_limits lim = {
        .max_output = 1 << 20, .max_memory = 64 << 20, .max_steps = 200000, .max_depth = 32};
    char err[256];
    irt_template *t = irt_template_new(src, sizeof src - 1, &lim, err, sizeof err);
    json_t *vars = json_object();
    json_object_set_new(vars, "v", v);
    if (t) {
        ir_buf out;
        ir_buf_init(&out, 2 << 20);
        irt_template_render(t, vars, 1700000000, &out, err, sizeof err);
        ir_buf_free(&out);
        irt_template_free(t);
    }
    json_decref(vars);
    return 0;
}
