/* fuzz_gateway_config: the gateway's own config file, as gw_config_load reads it
 * (gw_config_schema, then the cross-checks and the data-parallel expansion), from
 * YAML text. fuzz_config covers the loader on a small schema of its own; this one
 * covers every key the gateway has and the checks across them. Whatever the bytes:
 * no crash, no leak, a config with no error or errors with no config, every error
 * a "path: message" line, and a config's replicas and models with their names. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every replica has an id and a url, every model a name (ASan sees bad pointers). */
static void touch(const gw_config *c) {
    const gw_replica_cfg *r = c->replicas.items;
    for (size_t i = 0; i < c->replicas.n; i++) {
        if (!r[i].id || !r[i].url || !*r[i].id) abort();
        for (size_t m = 0; m < r[i].models.n; m++)
            if (!r[i].models.items[m]) abort();
    }
    const gw_model_cfg *m = c->models.items;
    for (size_t i = 0; i < c->models.n; i++)
        if (!m[i].name || !*m[i].name) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gw_config c;
    memset(&c, 0, sizeof c);
    ir_cfg_errors errs = {0};
    ir_cfg *owner = ir_cfg_load_text((const char *)data, size, &gw_config_schema, &c, &errs);
    if ((owner != NULL) == (errs.n > 0)) abort();
    if (owner) {
        gw_config_check(&c, &errs);
        if (!errs.n) gw_config_expand_dp(&c, owner, &errs);
        if (!errs.n) touch(&c);
    }
    for (size_t i = 0; i < errs.n; i++)
        if (!errs.msgs[i] || !strchr(errs.msgs[i], ':')) abort();
    ir_cfg_free(owner);
    ir_cfg_errors_free(&errs);
    return 0;
}
