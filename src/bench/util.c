/* util.c: small helpers shared by the benchmark subcommands. */
#include "bench/bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_percentile(double *sorted, size_t n, double p) {
    if (n == 0) return NAN;
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(rank), hi = (size_t)ceil(rank);
    double f = rank - (double)lo;
    return sorted[lo] * (1 - f) + sorted[hi] * f;
}

long bench_rss_kib(int pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            sscanf(line + 6, "%ld", &kib);
            break;
        }
    }
    fclose(f);
    return kib;
}
