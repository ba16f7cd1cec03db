/* splice_model.h: the reference that the gateway's model splice is checked
 * against, in the unit tests and the fuzz targets.
 *
 * The gateway sends a rewritten body as parts (request.h: gw_splice_parts) and
 * never builds the whole spliced body; this writes it out in one buffer, the
 * simple way: body with its top-level `model` value replaced by the JSON string
 * `name` (found) or inserted as the first member (absent), every other byte
 * kept. sp comes from ir_json_scan_key. Returns 0, or -1 when out is full. */
#ifndef IR_TESTS_SPLICE_MODEL_H
#define IR_TESTS_SPLICE_MODEL_H

#include <stdbool.h>
#include <string.h>

#include "core/ir_core.h"

static inline int splice_model_ref(const char *body, size_t len, const ir_json_span *sp, bool found,
                                   const char *name, ir_buf *out) {
    if (found) {
        return ir_buf_append(out, body, sp->start) ||
                       ir_json_append_string(out, name, strlen(name)) ||
                       ir_buf_append(out, body + sp->end, len - sp->end)
                   ? -1
                   : 0;
    }
    size_t at = sp->obj_open + 1;
    if (ir_buf_append(out, body, at) || ir_buf_append_str(out, "\"model\":") ||
        ir_json_append_string(out, name, strlen(name)) ||
        (!sp->obj_empty && ir_buf_append(out, ",", 1)) || ir_buf_append(out, body + at, len - at))
        return -1;
    return 0;
}

#endif
