/* bench.h: inferrail-bench internals: one function per subcommand. */
#ifndef IR_BENCH_H
#define IR_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"

int bench_tokenize_sim(int argc, char **argv);
int bench_streams(int argc, char **argv);
int bench_soak(int argc, char **argv);
int bench_rps(int argc, char **argv);

/* Sorted-sample percentiles. */
double bench_percentile(double *sorted, size_t n, double p);
int bench_cmp_double(const void *a, const void *b);
/* Resident set size of a process in KiB (from /proc), -1 when unknown. */
long bench_rss_kib(int pid);

#endif
