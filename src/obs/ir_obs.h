/* ir_obs.h: the observability module's public header (prefix iro_).
 *
 * The metrics registry: counters, gauges and histograms with labels, and the
 * writer of the Prometheus text exposition format (0.0.4). The gateway and the
 * simulator both keep their metrics in one.
 *
 * Threads. Registering families, getting series and removing them take the
 * registry's mutex (start-up, a replica joining or leaving). Recording
 * (iro_inc, iro_add, iro_set, iro_observe) is lock-free: every series keeps
 * IRO_SHARDS cache-line-padded shards of relaxed atomics and a thread records
 * into its own shard, so workers never share a cache line on the hot path.
 * iro_write sums the shards. Counters never go back between two writes, and a
 * histogram's _count is the sum of the buckets it wrote, so on every page each
 * cumulative bucket is at most the next one and at most _count.
 *
 * Ownership. The registry owns its families and series; the pointers it hands
 * out stay valid until iro_registry_free, even after iro_series_remove: a
 * removed series leaves the page and keeps its memory (zeroed) for a thread
 * that still records into it, and is revived when the same label set is asked
 * for again, so a fleet whose members come and go by the same names does not
 * grow. Names, help texts and label values are copied.
 */
#ifndef IR_OBS_H
#define IR_OBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shards per series (a power of two); threads beyond this share them. */
#define IRO_SHARDS 8
/* Caps: labels of one family, buckets of a histogram, bytes of a label value. */
#define IRO_MAX_LABELS  8
#define IRO_MAX_BUCKETS 40
#define IRO_MAX_VALUE   1024

typedef enum { IRO_COUNTER, IRO_GAUGE, IRO_HISTOGRAM } iro_type;

/* How numbers are written. IRO_FMT_PLAIN: integers without a fraction ("12"),
 * other values in the shortest form that reads back exactly. IRO_FMT_PYTHON:
 * as Python's prometheus_client writes them ("12.0", "1.5e+07"), for the
 * simulator's vLLM-like pages. */
typedef enum { IRO_FMT_PLAIN, IRO_FMT_PYTHON } iro_format;

typedef struct iro_registry iro_registry;
typedef struct iro_family iro_family;
typedef struct iro_series iro_series;

iro_registry *iro_registry_new(iro_format fmt);
void iro_registry_free(iro_registry *r);

/* Called at the start of every iro_write, in the order added (to set gauges
 * read from elsewhere, say). At most 16. */
typedef void (*iro_collect_fn)(void *ud);
int iro_registry_on_collect(iro_registry *r, iro_collect_fn fn, void *ud);

/* A family: name ([a-zA-Z_:][a-zA-Z0-9_:]*), help (any text; escaped when
 * written), label names (NULL-terminated array or NULL; [a-zA-Z_][a-zA-Z0-9_]*,
 * not starting "__", no "le" for histograms). Histograms take their upper
 * bounds, strictly increasing and finite (+Inf is implied). Asking again for a
 * family of the same name, type and labels returns the same one. NULL on a bad
 * name, a clash or no memory. */
iro_family *iro_counter(iro_registry *r, const char *name, const char *help,
                        const char *const *labels);
iro_family *iro_gauge(iro_registry *r, const char *name, const char *help,
                      const char *const *labels);
iro_family *iro_histogram(iro_registry *r, const char *name, const char *help,
                          const char *const *labels, const double *bounds, size_t nbounds);

/* The series of one label set (values in the family's label order, as many as it
 * has labels; NULL when it has none), created empty when new. Takes the mutex:
 * keep the pointer rather than asking per event. NULL on no memory or a value
 * over IRO_MAX_VALUE bytes. */
iro_series *iro_series_get(iro_family *f, const char *const *values);
/* iro_series_get with values given as arguments (exactly as many as labels). */
iro_series *iro_series_of(iro_family *f, ...);

/* Takes series s off the page (see ownership above). */
void iro_series_remove(iro_series *s);
/* Takes off every series in the registry whose label `label` is `value` (a
 * replica that left); returns how many. */
size_t iro_remove_label(iro_registry *r, const char *label, const char *value);

/* Recording; s may be NULL (then nothing happens). Counters: iro_inc adds n,
 * iro_add adds v >= 0; a counter that another structure keeps (read in a collect
 * hook) is iro_set instead, to values that never go back, and never also
 * incremented. Gauges: iro_set, iro_add (v may be negative). Histograms:
 * iro_observe. */
void iro_inc(iro_series *s, uint64_t n);
void iro_add(iro_series *s, double v);
void iro_set(iro_series *s, double v);
void iro_observe(iro_series *s, double v);

/* Reading one series (sums the shards): a counter's or gauge's value, or a
 * histogram's count; iro_read_hist gives its cumulative buckets (nbounds + 1,
 * the last being +Inf = count) and sum. */
double iro_read(const iro_series *s);
size_t iro_read_hist(const iro_series *s, uint64_t *cum, size_t cap, double *sum);

/* Appends the whole page: for each family that has series, # HELP and # TYPE,
 * then its samples; histograms as _bucket{...,le="..."} (cumulative, ending
 * with le="+Inf"), _sum and _count. Families in registration order, series in
 * creation order. Returns 0, or -1 when out buffer space. */
int iro_write(iro_registry *r, ir_buf *out);

/* Helpers, public for the other writers and the tests. */
void iro_escape_label(ir_buf *out, const char *s);                    /* \\ \" \n */
void iro_escape_help(ir_buf *out, const char *s);                     /* \\ \n */
void iro_format_value(double v, iro_format fmt, char *out, size_t n); /* n >= 32 */
bool iro_name_ok(const char *name);
bool iro_label_name_ok(const char *name);

/* Common buckets: latency in seconds (1 ms to 60 s). */
extern const double iro_latency_buckets[];
extern const size_t iro_latency_nbuckets;

#ifdef __cplusplus
}
#endif
#endif
