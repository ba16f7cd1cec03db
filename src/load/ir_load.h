/* ir_load.h: the load module's public header (prefix irl_).
 *
 * Load signals of the engines: for now the reader of the Prometheus text
 * exposition format (version 0.0.4) that their /metrics pages use. The scraper
 * that fetches those pages on a schedule will live here too.
 *
 * Ownership: the reader never copies or keeps the page; every pointer it
 * hands out points into the caller's page and lives as long as it does. The
 * page need not be NUL-terminated. Nothing here allocates.
 */
#ifndef IR_LOAD_H
#define IR_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A line longer than this is malformed (and skipped): a cap on the work one
 * line can cost. Real pages keep lines under a few hundred bytes. */
#define IRL_PROM_MAX_LINE 65536

/* One sample line: name{labels} value [timestamp]. */
typedef struct irl_sample {
    const char *name; /* [a-zA-Z_:][a-zA-Z0-9_:]*, not NUL-terminated */
    size_t name_len;
    const char *labels; /* between the braces, raw (escapes kept); "" when none */
    size_t labels_len;
    double value;       /* also +Inf, -Inf, NaN */
    bool has_timestamp; /* then timestamp_ms holds it */
    int64_t timestamp_ms;
} irl_sample;

/* Returns non-zero to stop the walk (irl_prom_parse then returns that value). */
typedef int (*irl_sample_cb)(void *ud, const irl_sample *s);

/* Walks page[0..len): calls cb once per well-formed sample line, in order.
 * Comments (# HELP, # TYPE, any #), blank lines and a trailing \r are
 * skipped. A malformed line is skipped too and counted in *malformed (which
 * may be NULL). Returns 0, or the callback's non-zero value. */
int irl_prom_parse(const char *page, size_t len, irl_sample_cb cb, void *ud, size_t *malformed);

/* The sum of every sample named exactly `family` (all its label sets), or -1
 * when the page has none. */
double irl_prom_sum(const char *page, size_t len, const char *family);

/* Copies the unescaped value of label `key` of s into out (NUL-terminated,
 * cut to outlen - 1 bytes). False when s has no such label. */
bool irl_prom_label(const irl_sample *s, const char *key, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
