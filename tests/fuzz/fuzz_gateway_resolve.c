/* libFuzzer: stage 2, the resolution of a body's `model`, over two fleets (one model,
 * and several with aliases). Whatever the body: no read past it (ASan), a resolved
 * model is a configured one, a refusal is a 400 or 404 whose error body is valid JSON,
 * and a rewrite always splices into a body that names the model. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/request.h"
#include "splice_model.h"

static const char *const confs[] = {
    "models: [{name: only/model}]\nreplicas: [{id: a, url: \"http://127.0.0.1:1\"}]\n",
    "models:\n  - {name: m-a, aliases: [a, \"\\u00e9\"]}\n  - {name: m-b}\n"
    "replicas: [{id: a, url: \"http://127.0.0.1:1\"}]\n",
};

static gw_fleet fleets[2];
static ir_cfg *owners[2]; /* kept for the process's life (reachable, so not a leak) */

static void setup(void) {
    for (size_t i = 0; i < 2; i++) {
        gw_config *c = calloc(1, sizeof *c);
        ir_cfg_errors e = {0};
        char err[256];
        if (!c ||
            !(owners[i] = ir_cfg_load_text(confs[i], strlen(confs[i]), &gw_config_schema, c, &e)) ||
            gw_fleet_init(&fleets[i], c, err, sizeof err))
            abort();
    }
}

static void check(const gw_fleet *f, const char *doc, size_t size) {
    gw_resolution o;
    gw_resolve_model(f, doc, size, &o);
    if (!o.model) {
        if (o.status != 400 && o.status != 404) __builtin_trap();
        ir_buf b;
        ir_buf_init(&b, 0);
        irn_error_body(&b, o.status, o.type, o.message);
        json_error_t e;
        json_t *v = json_loadb(b.data, b.len, 0, &e);
        if (!v) __builtin_trap();
        json_decref(v);
        ir_buf_free(&b);
        return;
    }
    if (o.model < f->models || o.model >= f->models + f->nmodels) __builtin_trap();
    if (!o.rewrite) return;
    ir_buf out;
    ir_buf_init(&out, 0);
    if (splice_model_ref(doc, size, &o.span, o.found, o.model->cfg->name, &out) == 0) {
        ir_json_span sp;
        if (ir_json_scan_key(out.data, out.len, "model", &sp, 256) != IR_JSON_FOUND ||
            !sp.is_string)
            __builtin_trap();
    }
    ir_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        setup();
        ready = 1;
    }
    /* An exact-size copy, so that a read past the body is a read past the heap block. */
    char *doc = malloc(size ? size : 1);
    if (!doc) return 0;
    memcpy(doc, data, size);
    check(&fleets[0], doc, size);
    check(&fleets[1], doc, size);
    free(doc);
    return 0;
}
