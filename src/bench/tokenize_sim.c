/* tokenize_sim.c: builtin:sim tokenizer throughput, next to a memcpy of the
 * same text, so the figure means something on a noisy machine. */
#include "bench/bench.h"
#include "tokenize/ir_tokenize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void make_text(ir_buf *b, size_t bytes) {
    static const char *words[] = {"the ", "router ",   "sends ",          "every ", "request ",
                                  "to ",  "a ",        "replica, ",       "which ", "holds ",
                                  "its ", "prefix.\n", "{\"k\": 12345} ", "naïve ", "日本語 "};
    ir_rng r;
    ir_rng_seed(&r, 1);
    while (b->len < bytes) ir_buf_append_str(b, words[ir_rng_below(&r, IR_ARRAY_LEN(words))]);
}

int bench_tokenize_sim(int argc, char **argv) {
    static const char usage[] =
        "Usage: inferrail-bench tokenize-sim [MiB]\n"
        "Tokenizes MiB mebibytes (default 64) of mixed text with builtin:sim and prints its\n"
        "throughput next to a memcpy of the same text.\n";
    size_t mib = 64;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc > 1) mib = (size_t)atol(argv[1]);
    if (mib == 0 || argc > 2) {
        fputs(usage, stderr);
        return 2;
    }
    ir_buf text;
    ir_buf_init(&text, 0);
    make_text(&text, 1 << 20);
    size_t rounds = mib;
    irt_ids ids;
    irt_ids_init(&ids);
    char *copy = malloc(text.len);
    /* reference: memcpy of the same bytes */
    uint64_t t0 = ir_now_ns();
    for (size_t i = 0; i < rounds; i++) {
        memcpy(copy, text.data, text.len);
        __asm__ volatile("" ::"r"(copy) : "memory");
    }
    uint64_t t1 = ir_now_ns();
    size_t tokens = 0;
    for (size_t i = 0; i < rounds; i++) {
        ids.len = 0;
        irt_sim_encode(text.data, text.len, &ids);
        tokens += ids.len;
    }
    uint64_t t2 = ir_now_ns();
    double enc_s = (double)(t2 - t1) / 1e9, cpy_s = (double)(t1 - t0) / 1e9;
    double mibs = (double)rounds / enc_s;
    printf("{\"bench\":\"tokenize-sim\",\"mib\":%zu,\"encode_mib_per_s\":%.1f,"
           "\"tokens_per_s\":%.0f,\"bytes_per_token\":%.2f,\"memcpy_mib_per_s\":%.1f,"
           "\"encode_vs_memcpy\":%.3f}\n",
           rounds, mibs, (double)tokens / enc_s, (double)(rounds * text.len) / (double)tokens,
           (double)rounds / cpy_s, cpy_s / enc_s);
    free(copy);
    irt_ids_free(&ids);
    ir_buf_free(&text);
    return 0;
}
