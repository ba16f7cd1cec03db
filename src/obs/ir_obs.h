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
 *
 * Sections: the registry, the decision log (decision_log.c), traces (trace.c).
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

/* ---- the decision log (decision_log.c) ----------------------------------------------
 * One JSON line per routing decision of the sampled requests, appended to a
 * file by a writer thread that drains a bounded queue. Producers never wait on
 * the disk: a record that finds the queue full is dropped and counted. A
 * request is sampled by its id, so all its attempts are kept together or all
 * dropped.
 *
 * Threads: iro_dlog_sampled, iro_dlog_write and iro_dlog_stats from any thread;
 * open and close from one. Ownership: iro_dlog_write copies the line. */
typedef struct iro_dlog iro_dlog;

typedef struct iro_dlog_cfg {
    const char *path;   /* appended to, created 0640 when absent */
    double sample_rate; /* 0..1: the share of request ids logged */
    size_t queue;       /* records queued at most; 0: 8192 */
    size_t max_line;    /* longer lines are dropped (counted); 0: 256 KiB */
} iro_dlog_cfg;

/* Opens the file and starts the writer; NULL with err filled on failure. */
iro_dlog *iro_dlog_open(const iro_dlog_cfg *cfg, char *err, size_t errlen);
/* Writes what is queued, stops the writer and closes the file. NULL is fine. */
void iro_dlog_close(iro_dlog *d);
/* Whether request `id` is sampled: a hash of the id against the rate, so the
 * same id always gets the same answer. False for a NULL log. */
bool iro_dlog_sampled(const iro_dlog *d, const char *id, size_t len);
/* Queues one line (without its newline). 0, or -1 when dropped. Never blocks
 * on the disk; takes a mutex for the few instructions of a queue push. */
int iro_dlog_write(iro_dlog *d, const char *line, size_t len);

typedef struct iro_dlog_stats {
    uint64_t written; /* lines on disk (flushed) */
    uint64_t dropped; /* queue full, line too long, out of memory or a write error */
} iro_dlog_stats;
void iro_dlog_stats_get(const iro_dlog *d, iro_dlog_stats *out);

/* ---- traces (trace.c, trace_export.c) -------------------------------------------------
 * Spans in the OpenTelemetry model, W3C traceparent headers, the OTLP/HTTP JSON
 * encoding (ExportTraceServiceRequest, ids as hex strings), and an exporter:
 * a bounded queue of finished spans drained by a thread that encodes them in
 * batches and hands each body to a post function of the caller's (the module
 * itself speaks no HTTP; the gateway posts with libcurl). A span that finds the
 * queue full is dropped and counted, never waited for.
 *
 * Threads: iro_tracer_submit, iro_tracer_sampled and iro_tracer_stats_get from
 * any thread; new and free from one. Ownership: a span is a plain value (its
 * attribute strings are copied into it; keys and names are string literals
 * that outlive the tracer), and submit copies it. */
#define IRO_SPAN_ATTRS   12
#define IRO_ATTR_STR_MAX 64

typedef struct iro_span_ctx {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t flags; /* bit 0: sampled */
} iro_span_ctx;

/* Parses a W3C traceparent value ("00-<32 hex>-<16 hex>-<2 hex>", lower case;
 * a later version may carry more after a dash). 0, or -1 when malformed or an
 * id is all zeros (the header is then ignored, as the spec says). */
int iro_traceparent_parse(const char *s, size_t len, iro_span_ctx *out);
/* Writes "00-<trace>-<span>-<flags>" and a NUL into out (56 bytes at least). */
void iro_traceparent_format(const iro_span_ctx *c, char *out);
/* Fills n bytes with random bits, never all zero (a thread's own generator,
 * seeded from the kernel). */
void iro_trace_random_id(uint8_t *out, size_t n);
/* Nanoseconds since the epoch (CLOCK_REALTIME). */
uint64_t iro_unix_ns(void);

typedef enum { IRO_SPAN_INTERNAL = 1, IRO_SPAN_SERVER = 2, IRO_SPAN_CLIENT = 3 } iro_span_kind;
typedef enum { IRO_STATUS_UNSET = 0, IRO_STATUS_OK = 1, IRO_STATUS_ERROR = 2 } iro_span_status;
typedef enum { IRO_ATTR_STR, IRO_ATTR_INT, IRO_ATTR_DOUBLE, IRO_ATTR_BOOL } iro_attr_type;

typedef struct iro_attr {
    const char *key; /* a literal */
    iro_attr_type type;
    union {
        char s[IRO_ATTR_STR_MAX]; /* truncated to fit */
        int64_t i;
        double d;
        bool b;
    } v;
} iro_attr;

typedef struct iro_span {
    uint8_t trace_id[16];
    uint8_t span_id[8];
    uint8_t parent_id[8]; /* all zeros: a root span */
    const char *name;     /* a literal */
    iro_span_kind kind;
    iro_span_status status;
    uint64_t start_ns, end_ns; /* since the epoch */
    iro_attr attrs[IRO_SPAN_ATTRS];
    size_t nattrs;
} iro_span;

/* Attributes beyond IRO_SPAN_ATTRS are left out. */
void iro_span_str(iro_span *s, const char *key, const char *v);
void iro_span_int(iro_span *s, const char *key, int64_t v);
void iro_span_double(iro_span *s, const char *key, double v);
void iro_span_bool(iro_span *s, const char *key, bool v);

/* Appends one ExportTraceServiceRequest holding spans[0..n) under a resource
 * with service.name `service`. 0, or -1 when out of buffer space. */
int iro_otlp_encode(ir_buf *out, const char *service, const iro_span *spans, size_t n);

/* Posts one encoded body; 0 when the collector took it, else -1 with a reason. */
typedef int (*iro_post_fn)(void *ud, const char *body, size_t len, char *err, size_t errlen);

typedef struct iro_tracer_cfg {
    double sample_ratio; /* 0..1: the share of trace ids kept */
    const char *service; /* service.name; copied */
    size_t queue;        /* spans queued at most; 0: 4096 */
    size_t batch;        /* spans per body at most; 0: 256 */
    iro_post_fn post;
    void *post_ud;
} iro_tracer_cfg;

typedef struct iro_tracer iro_tracer;

/* Starts the exporter thread; NULL with err filled on failure. */
iro_tracer *iro_tracer_new(const iro_tracer_cfg *cfg, char *err, size_t errlen);
/* Posts what is queued (one try each), stops the thread and frees. NULL is fine.
 * Nothing more is posted once a post has failed, or IRO_STOP_GRACE_NS after the call:
 * the spans left are counted failed. A post function that can wait long should give
 * up that long after it is asked to stop (post_ud's owner knows: it calls this). */
#define IRO_STOP_GRACE_NS (1000ull * 1000000ull)
void iro_tracer_free(iro_tracer *t);
/* Whether a trace is kept: its id's last 8 bytes against the ratio, so every
 * span of a trace gets the same answer. False for a NULL tracer. */
bool iro_tracer_sampled(const iro_tracer *t, const uint8_t trace_id[16]);
/* Queues a copy of span. 0, or -1 when dropped (the queue is full). */
int iro_tracer_submit(iro_tracer *t, const iro_span *s);

typedef struct iro_tracer_stats {
    uint64_t exported; /* spans the collector took */
    uint64_t dropped;  /* the queue was full */
    uint64_t failed;   /* spans of bodies the collector refused or never got */
    bool failing;      /* the last post failed */
} iro_tracer_stats;
void iro_tracer_stats_get(const iro_tracer *t, iro_tracer_stats *out);

#ifdef __cplusplus
}
#endif
#endif
