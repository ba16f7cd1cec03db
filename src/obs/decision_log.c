/* decision_log.c: the decision log (see ir_obs.h): the sampling, and the file that
 * core's spool writes the lines to from a thread of its own. */
#include "obs/ir_obs.h"

#include "core/ir_core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

struct iro_dlog {
    iro_dlog_cfg cfg;
    uint64_t threshold; /* ids hashing below this are sampled */
    bool all;           /* sample_rate >= 1 */
    int fd;
    ir_spool *spool;
};

/* How long iro_dlog_close waits for queued lines to be written before it gives up
 * on them (a FIFO nobody reads, a stuck mount): shutdown must end. */
#define CLOSE_WAIT_S 2

/* On the spool's thread, at the first write that failed (every line to /dev/full
 * would otherwise be dropped without a word). */
static void on_fail(ir_spool *s, void *arg, int err) {
    (void)s;
    const iro_dlog *d = arg;
    IR_WARN("decision_log", "cannot write %s (%s): its lines are dropped and counted",
            d->cfg.path ? d->cfg.path : "the decision log", err ? strerror(err) : "no progress");
}

/* O_NONBLOCK for the open only: a FIFO without a reader would wait for one (the admin
 * port never came up); it fails with ENXIO instead. Writes block, on the spool's
 * thread. -1 with err filled. */
static int open_file(const char *path, char *err, size_t errlen) {
    int fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0640) : -1;
    if (fd >= 0) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        return fd;
    }
    snprintf(err, errlen, "cannot open '%s': %s", path ? path : "",
             errno == ENXIO ? "a FIFO that nothing reads" : strerror(errno));
    return -1;
}

iro_dlog *iro_dlog_open(const iro_dlog_cfg *cfg, char *err, size_t errlen) {
    iro_dlog *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->cfg = *cfg;
    double rate = cfg->sample_rate;
    d->all = rate >= 1;
    d->threshold = rate <= 0 || d->all ? 0 : (uint64_t)(rate * 18446744073709551616.0); /* < 2^64 */
    d->fd = open_file(cfg->path, err, errlen);
    if (d->fd < 0) {
        free(d);
        return NULL;
    }
    ir_spool_cfg sc = {.fd = d->fd,
                       .newline = true,
                       .max_lines = cfg->queue ? cfg->queue : 8192,
                       .max_bytes = 64u << 20,
                       .max_line = cfg->max_line,
                       .close_wait_s = CLOSE_WAIT_S,
                       .on_fail = on_fail,
                       .arg = d};
    d->spool = ir_spool_open(&sc);
    if (!d->spool) {
        snprintf(err, errlen, "cannot start the decision log's writer thread (out of memory)");
        close(d->fd);
        free(d);
        return NULL;
    }
    return d;
}

void iro_dlog_close(iro_dlog *d) {
    if (!d) return;
    /* The writer drains the queue, unless a write blocks past the wait (a FIFO nobody
     * reads, a stuck mount): then it is cancelled in that write, and the rest dropped. */
    if (!ir_spool_close(d->spool, NULL))
        IR_WARN("decision_log",
                "its writes to %s did not finish within %d s: the rest of its "
                "lines are dropped",
                d->cfg.path ? d->cfg.path : "the decision log", CLOSE_WAIT_S);
    close(d->fd);
    free(d);
}

bool iro_dlog_sampled(const iro_dlog *d, const char *id, size_t len) {
    if (!d) return false;
    if (d->all) return true;
    if (d->threshold == 0) return false;
    return XXH3_64bits(id, len) < d->threshold;
}

int iro_dlog_write(iro_dlog *d, const char *s, size_t len) {
    return d ? ir_spool_write(d->spool, s, len) : -1;
}

void iro_dlog_stats_get(const iro_dlog *d, iro_dlog_stats *out) {
    memset(out, 0, sizeof *out);
    if (d) ir_spool_stats(d->spool, &out->written, &out->dropped);
}
