/* bench_strmap: the tokenizer's string map (hf_strmap) against core's ir_map,
 * on a real vocabulary: insert every key, then look every key up (in a
 * shuffled order) and as many absent ones. Prints ns per operation, the best
 * of several rounds, so the choice in hf_internal.h rests on a measurement.
 *   inferrail-strmapbench TOKENIZER_JSON [ROUNDS]
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"
#include "tokenize/hf_internal.h"

typedef struct key {
    const char *s;
    size_t n;
} key;

static double now_ns(void) {
    return (double)ir_now_ns();
}

static void shuffle(key *k, size_t n, ir_rng *r) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)ir_rng_below(r, i);
        key t = k[i - 1];
        k[i - 1] = k[j];
        k[j] = t;
    }
}

typedef struct times {
    double put, hit, miss;
} times;

static void best(times *b, times t) {
    if (t.put < b->put) b->put = t.put;
    if (t.hit < b->hit) b->hit = t.hit;
    if (t.miss < b->miss) b->miss = t.miss;
}

static volatile uint64_t sink;

static times run_strmap(const key *ins, const key *look, const key *absent, size_t n,
                        size_t bytes) {
    times t;
    hf_strmap m;
    double a = now_ns();
    if (hf_strmap_init(&m, n, bytes)) exit(1);
    for (size_t i = 0; i < n; i++)
        if (hf_strmap_put(&m, ins[i].s, ins[i].n, (uint32_t)i)) exit(1);
    double b = now_ns();
    uint32_t v, acc = 0;
    for (size_t i = 0; i < n; i++) acc += hf_strmap_get(&m, look[i].s, look[i].n, &v) ? v : 0;
    double c = now_ns();
    for (size_t i = 0; i < n; i++) acc += hf_strmap_get(&m, absent[i].s, absent[i].n, &v);
    double d = now_ns();
    sink += acc;
    hf_strmap_free(&m);
    t.put = (b - a) / (double)n, t.hit = (c - b) / (double)n, t.miss = (d - c) / (double)n;
    return t;
}

/* As hf_load.c uses it: hashes computed PF keys ahead and their slots prefetched. */
#define PF 8
static times run_strmap_prefetch(const key *ins, const key *look, const key *absent, size_t n,
                                 size_t bytes) {
    times t;
    hf_strmap m;
    uint64_t h[PF];
    double a = now_ns();
    if (hf_strmap_init(&m, n, bytes)) exit(1);
    for (size_t i = 0; i < PF && i < n; i++) h[i] = hf_hash(ins[i].s, ins[i].n);
    for (size_t i = 0; i < n; i++) {
        uint64_t hi = h[i % PF];
        if (i + PF < n) {
            h[i % PF] = hf_hash(ins[i + PF].s, ins[i + PF].n);
            hf_strmap_prefetch(&m, h[i % PF]);
        }
        if (hf_strmap_put_h(&m, ins[i].s, ins[i].n, hi, (uint32_t)i)) exit(1);
    }
    double b = now_ns();
    uint32_t v, acc = 0;
    const key *sets[2] = {look, absent};
    double mid = 0;
    for (int s = 0; s < 2; s++) {
        const key *q = sets[s];
        for (size_t i = 0; i < PF && i < n; i++) h[i] = hf_hash(q[i].s, q[i].n);
        for (size_t i = 0; i < n; i++) {
            uint64_t hi = h[i % PF];
            if (i + PF < n) {
                h[i % PF] = hf_hash(q[i + PF].s, q[i + PF].n);
                hf_strmap_prefetch(&m, h[i % PF]);
            }
            acc += hf_strmap_get_h(&m, q[i].s, q[i].n, hi, &v) ? v : 0;
        }
        if (s == 0) mid = now_ns();
    }
    double d = now_ns();
    sink += acc;
    hf_strmap_free(&m);
    t.put = (b - a) / (double)n, t.hit = (mid - b) / (double)n, t.miss = (d - mid) / (double)n;
    return t;
}

static times run_irmap(const key *ins, const key *look, const key *absent, size_t n) {
    times t;
    ir_map m;
    double a = now_ns();
    if (ir_map_init(&m, n, n)) exit(1);
    for (size_t i = 0; i < n; i++)
        if (ir_map_put(&m, ins[i].s, ins[i].n, i)) exit(1);
    double b = now_ns();
    uint64_t v, acc = 0;
    for (size_t i = 0; i < n; i++) acc += ir_map_get(&m, look[i].s, look[i].n, &v) ? v : 0;
    double c = now_ns();
    for (size_t i = 0; i < n; i++) acc += ir_map_get(&m, absent[i].s, absent[i].n, &v);
    double d = now_ns();
    sink += acc;
    ir_map_free(&m);
    t.put = (b - a) / (double)n, t.hit = (c - b) / (double)n, t.miss = (d - c) / (double)n;
    return t;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(argc < 2 ? stderr : stdout,
                "usage: inferrail-strmapbench TOKENIZER_JSON [ROUNDS]\n");
        return argc < 2 ? 2 : 0;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    json_error_t jerr;
    json_t *root = json_load_file(argv[1], 0, &jerr);
    json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
    if (!json_is_object(vocab)) {
        fprintf(stderr, "%s: no model.vocab object (%s)\n", argv[1], jerr.text);
        return 1;
    }
    size_t n = json_object_size(vocab), bytes = 0, i = 0;
    key *ins = calloc(n, sizeof *ins), *look = calloc(n, sizeof *look),
        *absent = calloc(n, sizeof *absent);
    const char *k;
    json_t *v;
    json_object_foreach(vocab, k, v) {
        ins[i] = (key){k, strlen(k)};
        bytes += ins[i].n;
        /* An absent key of the same shape: the key with a byte no vocabulary uses appended. */
        char *x = malloc(ins[i].n + 2);
        memcpy(x, k, ins[i].n);
        x[ins[i].n] = '\x01';
        x[ins[i].n + 1] = '\0';
        absent[i] = (key){x, ins[i].n + 1};
        i++;
    }
    memcpy(look, ins, n * sizeof *ins);
    ir_rng r;
    ir_rng_seed(&r, 1);
    shuffle(look, n, &r);
    shuffle(absent, n, &r);
    times s = {1e18, 1e18, 1e18}, p = {1e18, 1e18, 1e18}, m = {1e18, 1e18, 1e18};
    for (int round = 0; round < rounds; round++) {
        best(&s, run_strmap(ins, look, absent, n, bytes));
        best(&p, run_strmap_prefetch(ins, look, absent, n, bytes));
        best(&m, run_irmap(ins, look, absent, n));
    }
    printf("# %zu keys, %zu key bytes, best of %d rounds, ns per operation\n", n, bytes, rounds);
    printf("%-18s %8s %8s %8s\n", "map", "put", "hit", "miss");
    printf("%-18s %8.1f %8.1f %8.1f\n", "hf_strmap", s.put, s.hit, s.miss);
    printf("%-18s %8.1f %8.1f %8.1f\n", "hf_strmap+prefetch", p.put, p.hit, p.miss);
    printf("%-18s %8.1f %8.1f %8.1f\n", "ir_map", m.put, m.hit, m.miss);
    for (i = 0; i < n; i++) free((void *)absent[i].s);
    free(ins);
    free(look);
    free(absent);
    json_decref(root);
    return 0;
}
