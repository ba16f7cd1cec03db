/* libFuzzer: the gateway's model scan and splice on arbitrary bodies. Whatever
 * the input, the scan never reads out of bounds; when it accepts a body, the
 * spliced body parses, carries the new model, and equals the old one in every
 * other member; the parts the gateway sends (gw_splice_parts) are that body. */
#include <stdint.h>
#include <string.h>

#include "gateway/request.h"
#include "splice_model.h"

/* The parts, laid end to end, are the spliced body. */
static void check_parts(const char *doc, size_t size, const ir_json_span *sp, bool found,
                        const ir_buf *want) {
    ir_arena *a = ir_arena_new(256, 1 << 20);
    irn_part parts[GW_SPLICE_PARTS];
    size_t n = 0, off = 0;
    if (!a || gw_splice_parts(doc, size, sp, found, "inferrail/sim-8b", a, parts, &n) != 0)
        __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        if (off + parts[i].len > want->len || memcmp(want->data + off, parts[i].data, parts[i].len))
            __builtin_trap();
        off += parts[i].len;
    }
    if (off != want->len) __builtin_trap();
    ir_arena_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *doc = (const char *)data;
    ir_json_span sp;
    int rc = ir_json_scan_key(doc, size, "model", &sp, 128);
    if (rc == IR_JSON_INVALID) return 0;
    ir_buf out;
    ir_buf_init(&out, 0);
    if (splice_model_ref(doc, size, &sp, rc == IR_JSON_FOUND, "inferrail/sim-8b", &out) == 0) {
        check_parts(doc, size, &sp, rc == IR_JSON_FOUND, &out);
        ir_json_span sp2;
        if (ir_json_scan_key(out.data, out.len, "model", &sp2, 128) != IR_JSON_FOUND)
            __builtin_trap();
        if (sp2.end - sp2.start != 18 || memcmp(out.data + sp2.start, "\"inferrail/sim-8b\"", 18))
            __builtin_trap();
        /* jansson agrees, apart from documents it refuses for its own limits */
        json_error_t e;
        json_t *a = json_loadb(doc, size, JSON_ALLOW_NUL, &e);
        json_t *b = json_loadb(out.data, out.len, JSON_ALLOW_NUL, &e);
        if (a && b) {
            json_object_del(a, "model");
            json_object_del(b, "model");
            if (!json_equal(a, b)) __builtin_trap();
        }
        json_decref(a);
        json_decref(b);
    }
    ir_buf_free(&out);
    return 0;
}
