/* fuzz_prom: the Prometheus text reader (src/load/prom.c) on arbitrary bytes,
 * given by length with no NUL after them. Every sample it hands out must lie
 * inside the page with a well-formed name, every label it names must read
 * back, and irl_prom_sum must agree with a sum over the walk. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "load/ir_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct ctx {
    const char *page;
    size_t len;
    char first[128]; /* the first sample's name, when short enough */
    double sum;      /* over the samples named `first` */
    bool have_first, nan;
} ctx;

static bool inside(const ctx *c, const char *p, size_t n) {
    return p >= c->page && p + n <= c->page + c->len;
}

static int check(void *ud, const irl_sample *s) {
    ctx *c = ud;
    if (!s->name_len || !inside(c, s->name, s->name_len)) abort();
    if (s->labels_len && !inside(c, s->labels, s->labels_len)) abort();
    /* Every label name in the labels reads back. */
    char v[32];
    const char *l = s->labels;
    if (s->labels_len && (l[0] == '_' || (l[0] >= 'a' && l[0] <= 'z'))) {
        char key[16];
        size_t k = 0;
        while (k < s->labels_len && k < sizeof key - 1 && l[k] != '=' && l[k] != ' ' &&
               l[k] != '\t')
            key[k] = l[k], k++;
        key[k] = '\0';
        if (k < sizeof key - 1 && !irl_prom_label(s, key, v, sizeof v)) abort();
    }
    if (!c->have_first && s->name_len < sizeof c->first) {
        memcpy(c->first, s->name, s->name_len);
        c->first[s->name_len] = '\0';
        c->have_first = true;
    }
    if (c->have_first && strlen(c->first) == s->name_len &&
        memcmp(c->first, s->name, s->name_len) == 0) {
        c->sum += s->value;
        c->nan |= isnan(s->value);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* An exact-size copy, so a read past the end is caught without a NUL to stop it. */
    char *page = malloc(size ? size : 1);
    if (!page) return 0;
    memcpy(page, data, size);
    ctx c = {.page = page, .len = size};
    size_t bad = 0;
    if (irl_prom_parse(page, size, check, &c, &bad) != 0) abort();
    if (bad > size) abort();
    if (c.have_first) {
        double s = irl_prom_sum(page, size, c.first);
        if (!c.nan && !(s == c.sum || (isinf(s) && isinf(c.sum)) || isnan(c.sum))) abort();
    }
    free(page);
    return 0;
}
