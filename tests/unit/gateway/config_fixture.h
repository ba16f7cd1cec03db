/* config_fixture.h: loading a gateway config from text in the gateway unit tests, and
 * checking the errors it gives (header-only; include after <cmocka.h>). */
#ifndef GW_CONFIG_FIXTURE_H
#define GW_CONFIG_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "gateway/gateway.h"

/* As gw_config_load does, from text: fields, cross-checks, then the data-parallel
 * expansion. *e is reset first; the caller frees the owner and *e. */
static inline ir_cfg *fx_load(const char *text, gw_config *c, ir_cfg_errors *e) {
    memset(e, 0, sizeof *e);
    ir_cfg *owner = ir_cfg_load_text(text, strlen(text), &gw_config_schema, c, e);
    if (owner) gw_config_check(c, e);
    if (owner && !e->n) gw_config_expand_dp(c, owner, e);
    return owner;
}

/* Whether an error starts with path; if none does, prints the errors there are. */
static inline bool fx_has_error(const ir_cfg_errors *e, const char *path) {
    for (size_t k = 0; k < e->n; k++)
        if (strncmp(e->msgs[k], path, strlen(path)) == 0) return true;
    for (size_t k = 0; k < e->n; k++) fprintf(stderr, "  got: %s\n", e->msgs[k]);
    return false;
}

/* Loads text and fails test case i unless an error starts with path. */
static inline void fx_expect_error(size_t i, const char *text, const char *path) {
    gw_config c;
    ir_cfg_errors e;
    ir_cfg *owner = fx_load(text, &c, &e);
    if (!fx_has_error(&e, path)) fail_msg("case %zu: no error for %s", i, path);
    ir_cfg_free(owner);
    ir_cfg_errors_free(&e);
}

#endif
