/* obs_internal.h: the registry's structures, shared by the files of src/obs only. */
#ifndef IR_OBS_INTERNAL_H
#define IR_OBS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "obs/ir_obs.h"

#define IRO_MAX_COLLECT 16

struct iro_series {
    iro_family *fam;
    iro_series *next; /* the family's list, removed ones included */
    _Atomic int live; /* 0: removed (off the page), or not yet set up */
    char *values[IRO_MAX_LABELS];
    /* IRO_SHARDS shards of fam->stride cells. Counters: [0] integer adds, [1]
     * fractional adds (double bits). Gauges: [0] of shard 0 (double bits).
     * Histograms: [0..nbounds] per-bucket counts (not cumulative), then the sum. */
    _Atomic uint64_t *cells;
};

struct iro_family {
    iro_registry *reg;
    iro_family *next;
    char *name, *help;
    iro_type type;
    char *labels[IRO_MAX_LABELS];
    size_t nlabels;
    double bounds[IRO_MAX_BUCKETS];
    size_t nbounds;
    size_t stride; /* uint64 cells per shard, a multiple of 8 (one cache line) */
    iro_series *series;
};

struct iro_registry {
    pthread_mutex_t mu; /* families, series lists, liveness */
    iro_format fmt;
    iro_family *families;
    iro_collect_fn collect[IRO_MAX_COLLECT];
    void *collect_ud[IRO_MAX_COLLECT];
    size_t ncollect;
};

#endif
