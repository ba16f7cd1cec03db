/* bench_tmpl_arith: the template engine's arithmetic, per loop iteration.
 * Ints that stay in 64 bits must cost what they did before big integers
 * (ADR 0018: GMP only off the fast path); the big-integer and true-division
 * loops show what the slow path costs. Prints one line per template: the
 * best of ROUNDS renders, in ns per iteration (CPU time).
 *   inferrail-tmplarithbench [ROUNDS]
 * bench/tokenizer/tmpl_arith.sh runs it side by side with a build of another
 * commit, interleaved, and prints the ratios. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenize/ir_tokenize.h"

enum { ITERS = 200000 };

static const struct {
    const char *name;
    const char *src;
} cases[] = {
    {"int64", "{% set ns = namespace(s=0) %}{% for i in range(200000) %}"
              "{% set ns.s = ns.s + i * 3 - i // 7 + i % 5 %}{% endfor %}{{ ns.s }}"},
    {"int64_cmp", "{% set ns = namespace(s=0) %}{% for i in range(200000) %}"
                  "{% if i < 100000 and i != 7 and -i <= 0 %}{% set ns.s = ns.s + 1 %}{% endif %}"
                  "{% endfor %}{{ ns.s }}"},
    {"float_div", "{% set ns = namespace(s=0.0) %}{% for i in range(200000) %}"
                  "{% set ns.s = ns.s + i / 3 + i * 0.5 %}{% endfor %}{{ ns.s }}"},
    {"big", "{% set ns = namespace(s=2 ** 100) %}{% for i in range(200000) %}"
            "{% set ns.s = ns.s + i * 3 - i // 7 %}{% endfor %}{{ ns.s }}"},
};

static double cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double run(const char *src, int rounds) {
    char err[256];
    irt_template *t = irt_template_new(src, strlen(src), NULL, err, sizeof err);
    if (!t) {
        fprintf(stderr, "compile: %s\n", err);
        exit(1);
    }
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        ir_buf out;
        ir_buf_init(&out, 1 << 20);
        double t0 = cpu_ns();
        if (irt_template_render(t, NULL, 0, &out, err, sizeof err) != IRT_OK) {
            fprintf(stderr, "render: %s\n", err);
            exit(1);
        }
        double dt = cpu_ns() - t0;
        ir_buf_free(&out);
        if (dt < best) best = dt;
    }
    irt_template_free(t);
    return best / ITERS;
}

int main(int argc, char **argv) {
    if (argc > 1 && (argv[1][0] < '0' || argv[1][0] > '9')) {
        bool help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h");
        fputs("usage: inferrail-tmplarithbench [ROUNDS]\n"
              "The template engine's arithmetic, ns per loop iteration (bench/tokenizer/"
              "tmpl_arith.sh).\n",
              help ? stdout : stderr);
        return help ? 0 : 2;
    }
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    if (rounds < 1) rounds = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256];
        irt_template *t =
            irt_template_new(cases[i].src, strlen(cases[i].src), NULL, err, sizeof err);
        if (!t) continue; /* an engine without big integers refuses "big" */
        ir_buf out;
        ir_buf_init(&out, 1 << 20);
        int rc = irt_template_render(t, NULL, 0, &out, err, sizeof err);
        ir_buf_free(&out);
        irt_template_free(t);
        if (rc != IRT_OK) {
            printf("%s refused\n", cases[i].name);
            continue;
        }
        printf("%s %.1f\n", cases[i].name, run(cases[i].src, rounds));
    }
    return 0;
}
