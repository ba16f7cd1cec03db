/* ir_obs.h: the observability module's public header (prefix iro_).
 *
 * Sections: the decision log (below). The metrics registry and the traces
 * join this header in sections of their own.
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

#ifdef __cplusplus
}
#endif
#endif
