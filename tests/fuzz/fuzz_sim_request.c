/* libFuzzer: the simulator's request validation and prompt tokenization. */
#include <stdint.h>
#include <string.h>

#include "sim/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sim_cfg cfg;
    sim_cfg_defaults(&cfg);
    cfg.model_names[0] = "m";
    cfg.nmodel_names = 1;
    cfg.max_model_len = 512;
    for (int k = 0; k < 2; k++) {
        sim_req r;
        sim_err e;
        int rc = sim_req_parse(&cfg, k ? SIM_KIND_COMPLETION : SIM_KIND_CHAT, (const char *)data,
                               size, &r, &e);
        if (rc == 0) {
            /* An accepted request always fits the context. */
            if (r.ids.len >= cfg.max_model_len) __builtin_trap();
            if (r.has_max_tokens &&
                (r.max_tokens < 1 || (size_t)r.max_tokens > cfg.max_model_len - r.ids.len))
                __builtin_trap();
            sim_req_free(&r);
        } else if (e.status < 400 || e.status > 599 || !e.type || !e.message[0]) {
            __builtin_trap();
        }
    }
    return 0;
}
