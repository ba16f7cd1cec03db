/* fuzz_config: feeds bytes to the YAML config loader with a small nested schema. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/ir_core.h"

typedef struct f_item {
    char *url;
    int64_t weight;
    ir_cfg_strlist tags;
} f_item;

typedef struct f_inner {
    uint64_t timeout;
    uint64_t size;
    double ratio;
    bool on;
} f_inner;

typedef struct f_conf {
    char *name;
    char *listen;
    char *mode;
    f_inner inner;
    ir_cfg_list items;
    ir_cfg_map kwargs;
} f_conf;

static const ir_cfg_field item_fields[] = {
    {.key = "url", .type = IR_CFG_URL, .offset = offsetof(f_item, url), .required = true},
    {.key = "weight",
     .type = IR_CFG_INT,
     .offset = offsetof(f_item, weight),
     .def = "1",
     .min = 1,
     .max = 100},
    {.key = "tags", .type = IR_CFG_STRLIST, .offset = offsetof(f_item, tags)},
};
static const ir_cfg_schema item_schema = {"item", item_fields, 3, sizeof(f_item)};

static const ir_cfg_field inner_fields[] = {
    {.key = "timeout", .type = IR_CFG_DURATION, .offset = offsetof(f_inner, timeout), .def = "2s"},
    {.key = "size", .type = IR_CFG_SIZE, .offset = offsetof(f_inner, size), .def = "4MiB"},
    {.key = "ratio",
     .type = IR_CFG_FLOAT,
     .offset = offsetof(f_inner, ratio),
     .def = "0.5",
     .fmin = 0,
     .fmax = 1},
    {.key = "on", .type = IR_CFG_BOOL, .offset = offsetof(f_inner, on), .def = "true"},
};
static const ir_cfg_schema inner_schema = {"inner", inner_fields, 4, sizeof(f_inner)};

static const char *const modes[] = {"fast", "slow", NULL};
static const ir_cfg_field conf_fields[] = {
    {.key = "name", .type = IR_CFG_STRING, .offset = offsetof(f_conf, name), .required = true},
    {.key = "listen", .type = IR_CFG_HOSTPORT, .offset = offsetof(f_conf, listen), .def = ":8080"},
    {.key = "mode",
     .type = IR_CFG_ENUM,
     .offset = offsetof(f_conf, mode),
     .def = "fast",
     .choices = modes},
    {.key = "inner",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(f_conf, inner),
     .sub = &inner_schema},
    {.key = "items", .type = IR_CFG_LIST, .offset = offsetof(f_conf, items), .sub = &item_schema},
    {.key = "kwargs", .type = IR_CFG_MAP, .offset = offsetof(f_conf, kwargs)},
};
static const ir_cfg_schema conf_schema = {"fuzz", conf_fields, 6, sizeof(f_conf)};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    f_conf c;
    ir_cfg_errors errs = {0};
    ir_cfg *cfg = ir_cfg_load_text((const char *)data, size, &conf_schema, &c, &errs);
    /* Exactly one of: a config with no errors, or errors and no config. */
    if ((cfg != NULL) == (errs.n > 0)) abort();
    if (cfg) {
        /* Touch what was loaded so ASan sees any bad pointer. */
        size_t sum = 0;
        for (const char *p = c.name; p && *p; p++) sum += (unsigned char)*p;
        const f_item *it = c.items.items;
        for (size_t i = 0; i < c.items.n; i++) {
            if (!it[i].url || it[i].weight < 1 || it[i].weight > 100) abort();
            for (size_t j = 0; j < it[i].tags.n; j++) sum += it[i].tags.items[j][0];
        }
        if (c.kwargs.obj && !json_is_object(c.kwargs.obj)) abort();
        if (!c.mode || !c.listen || sum == (size_t)-1) abort();
    }
    ir_cfg_free(cfg);
    ir_cfg_errors_free(&errs);
    return 0;
}
