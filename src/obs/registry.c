/* registry.c: families, series and lock-free recording into per-thread shards. */
#include "obs/obs_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const double iro_latency_buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,  0.25,
                                      0.5,   1.0,    2.5,   5.0,  10.0,  20.0, 30.0, 60.0};
const size_t iro_latency_nbuckets = IR_ARRAY_LEN(iro_latency_buckets);

iro_registry *iro_registry_new(iro_format fmt) {
    iro_registry *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    pthread_mutex_init(&r->mu, NULL);
    r->fmt = fmt;
    return r;
}

static void series_free(iro_series *s) {
    for (size_t i = 0; i < s->fam->nlabels; i++) free(s->values[i]);
    free(s->cells);
    free(s);
}

static void family_free(iro_family *f) {
    for (iro_series *s = f->series, *next; s; s = next) {
        next = s->next;
        series_free(s);
    }
    for (size_t i = 0; i < f->nlabels; i++) free(f->labels[i]);
    free(f->name);
    free(f->help);
    free(f);
}

void iro_registry_free(iro_registry *r) {
    if (!r) return;
    for (iro_family *f = r->families, *next; f; f = next) {
        next = f->next;
        family_free(f);
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

int iro_registry_on_collect(iro_registry *r, iro_collect_fn fn, void *ud) {
    pthread_mutex_lock(&r->mu);
    int rc = -1;
    if (r->ncollect < IRO_MAX_COLLECT) {
        r->collect[r->ncollect] = fn;
        r->collect_ud[r->ncollect++] = ud;
        rc = 0;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

bool iro_name_ok(const char *n) {
    if (!n || !*n) return false;
    for (const char *p = n; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
        if (!alpha && !(p > n && c >= '0' && c <= '9')) return false;
    }
    return true;
}

bool iro_label_name_ok(const char *n) {
    if (!iro_name_ok(n) || strchr(n, ':')) return false;
    return strncmp(n, "__", 2) != 0;
}

static bool labels_same(const iro_family *f, const char *const *labels, size_t n) {
    if (f->nlabels != n) return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(f->labels[i], labels[i]) != 0) return false;
    return true;
}

static bool bounds_ok(const double *b, size_t n) {
    if (n > IRO_MAX_BUCKETS) return false;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(b[i]) || (i && b[i] <= b[i - 1])) return false;
    return true;
}

static iro_family *family_make(const char *name, const char *help, iro_type type,
                               const char *const *labels, size_t n, const double *bounds,
                               size_t nb) {
    iro_family *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    f->type = type;
    bool ok = f->name && f->help;
    for (size_t i = 0; i < n; i++) {
        f->labels[i] = strdup(labels[i]);
        ok = ok && f->labels[i];
        f->nlabels = i + 1;
    }
    if (nb) memcpy(f->bounds, bounds, nb * sizeof *bounds);
    f->nbounds = nb;
    /* cells per shard: counters n + fractional bits; gauges one; histograms the
     * buckets (+Inf included) and the sum; padded to a cache line */
    size_t cells = type == IRO_HISTOGRAM ? nb + 2 : 2;
    f->stride = (cells + 7) & ~(size_t)7;
    if (!ok) {
        family_free(f);
        return NULL;
    }
    return f;
}

static iro_family *family(iro_registry *r, const char *name, const char *help, iro_type type,
                          const char *const *labels, const double *bounds, size_t nb) {
    size_t n = 0;
    while (labels && labels[n]) {
        if (n >= IRO_MAX_LABELS || !iro_label_name_ok(labels[n])) return NULL;
        if (type == IRO_HISTOGRAM && strcmp(labels[n], "le") == 0) return NULL;
        n++;
    }
    if (!iro_name_ok(name) || (type == IRO_HISTOGRAM && !bounds_ok(bounds, nb))) return NULL;
    pthread_mutex_lock(&r->mu);
    iro_family *f, **tail = &r->families;
    for (f = r->families; f; tail = &f->next, f = f->next)
        if (strcmp(f->name, name) == 0) break;
    if (f) {
        if (f->type != type || !labels_same(f, labels, n)) f = NULL;
    } else if ((f = family_make(name, help, type, labels, n, bounds, nb))) {
        f->reg = r;
        *tail = f;
    }
    pthread_mutex_unlock(&r->mu);
    return f;
}

iro_family *iro_counter(iro_registry *r, const char *name, const char *help,
                        const char *const *labels) {
    return family(r, name, help, IRO_COUNTER, labels, NULL, 0);
}

iro_family *iro_gauge(iro_registry *r, const char *name, const char *help,
                      const char *const *labels) {
    return family(r, name, help, IRO_GAUGE, labels, NULL, 0);
}

iro_family *iro_histogram(iro_registry *r, const char *name, const char *help,
                          const char *const *labels, const double *bounds, size_t nbounds) {
    return family(r, name, help, IRO_HISTOGRAM, labels, bounds, nbounds);
}

static bool values_same(const iro_series *s, const char *const *v) {
    for (size_t i = 0; i < s->fam->nlabels; i++)
        if (strcmp(s->values[i], v[i]) != 0) return false;
    return true;
}

static void cells_zero(iro_series *s) {
    size_t n = IRO_SHARDS * s->fam->stride;
    for (size_t i = 0; i < n; i++) atomic_store_explicit(&s->cells[i], 0, memory_order_relaxed);
}

static iro_series *series_make(iro_family *f, const char *const *values) {
    iro_series *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->fam = f;
    size_t bytes = IRO_SHARDS * f->stride * sizeof(uint64_t);
    s->cells = aligned_alloc(64, bytes);
    bool ok = s->cells != NULL;
    for (size_t i = 0; i < f->nlabels; i++) {
        s->values[i] = strdup(values[i]);
        ok = ok && s->values[i];
    }
    if (!ok) {
        series_free(s);
        return NULL;
    }
    cells_zero(s);
    return s;
}

iro_series *iro_series_get(iro_family *f, const char *const *values) {
    if (!f) return NULL;
    for (size_t i = 0; i < f->nlabels; i++)
        if (!values || !values[i] || strlen(values[i]) > IRO_MAX_VALUE) return NULL;
    pthread_mutex_lock(&f->reg->mu);
    iro_series *s, **tail = &f->series;
    for (s = f->series; s; tail = &s->next, s = s->next)
        if (values_same(s, values)) break;
    if (!s && (s = series_make(f, values))) *tail = s;
    if (s && !atomic_load_explicit(&s->live, memory_order_relaxed)) {
        cells_zero(s);
        atomic_store_explicit(&s->live, 1, memory_order_release);
    }
    pthread_mutex_unlock(&f->reg->mu);
    return s;
}

iro_series *iro_series_of(iro_family *f, ...) {
    if (!f) return NULL;
    const char *v[IRO_MAX_LABELS + 1] = {0};
    va_list ap;
    va_start(ap, f);
    for (size_t i = 0; i < f->nlabels; i++) v[i] = va_arg(ap, const char *);
    va_end(ap);
    return iro_series_get(f, v);
}

static void remove_locked(iro_series *s) {
    if (!atomic_load_explicit(&s->live, memory_order_relaxed)) return;
    atomic_store_explicit(&s->live, 0, memory_order_release);
    cells_zero(s);
}

void iro_series_remove(iro_series *s) {
    if (!s) return;
    pthread_mutex_lock(&s->fam->reg->mu);
    remove_locked(s);
    pthread_mutex_unlock(&s->fam->reg->mu);
}

size_t iro_remove_label(iro_registry *r, const char *label, const char *value) {
    size_t n = 0;
    pthread_mutex_lock(&r->mu);
    for (iro_family *f = r->families; f; f = f->next)
        for (size_t k = 0; k < f->nlabels; k++) {
            if (strcmp(f->labels[k], label) != 0) continue;
            for (iro_series *s = f->series; s; s = s->next)
                if (atomic_load_explicit(&s->live, memory_order_relaxed) &&
                    strcmp(s->values[k], value) == 0) {
                    remove_locked(s);
                    n++;
                }
        }
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* ---- recording -------------------------------------------------------------------- */

static _Thread_local int tl_shard = -1;
static _Atomic unsigned next_shard;

static inline _Atomic uint64_t *shard(const iro_series *s) {
    if (__builtin_expect(tl_shard < 0, 0))
        tl_shard = (int)(atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) &
                         (IRO_SHARDS - 1));
    return s->cells + (size_t)tl_shard * s->fam->stride;
}

static inline double bits_double(uint64_t b) {
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}
static inline uint64_t double_bits(double d) {
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static inline void add_double(_Atomic uint64_t *cell, double v) {
    uint64_t old = atomic_load_explicit(cell, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(cell, &old, double_bits(bits_double(old) + v),
                                                  memory_order_relaxed, memory_order_relaxed)) {}
}

void iro_inc(iro_series *s, uint64_t n) {
    if (!s) return;
    atomic_fetch_add_explicit(&shard(s)[0], n, memory_order_relaxed);
}

void iro_add(iro_series *s, double v) {
    if (!s || isnan(v)) return;
    if (s->fam->type == IRO_GAUGE) {
        add_double(&s->cells[0], v); /* gauges keep one cell: set and add must agree */
    } else if (s->fam->type == IRO_COUNTER && v > 0) {
        add_double(&shard(s)[1], v);
    }
}

void iro_set(iro_series *s, double v) {
    if (!s || s->fam->type == IRO_HISTOGRAM) return;
    /* a counter kept elsewhere: its value goes to the fractional cell of shard 0 */
    size_t cell = s->fam->type == IRO_GAUGE ? 0 : 1;
    atomic_store_explicit(&s->cells[cell], double_bits(v), memory_order_relaxed);
}

void iro_observe(iro_series *s, double v) {
    if (!s || s->fam->type != IRO_HISTOGRAM || isnan(v)) return;
    const iro_family *f = s->fam;
    size_t b = 0;
    while (b < f->nbounds && v > f->bounds[b]) b++;
    _Atomic uint64_t *c = shard(s);
    atomic_fetch_add_explicit(&c[b], 1, memory_order_relaxed);
    add_double(&c[f->nbounds + 1], v);
}

/* ---- reading ---------------------------------------------------------------------- */

double iro_read(const iro_series *s) {
    const iro_family *f = s->fam;
    if (f->type == IRO_GAUGE)
        return bits_double(atomic_load_explicit(&s->cells[0], memory_order_relaxed));
    if (f->type == IRO_HISTOGRAM) {
        uint64_t cum[IRO_MAX_BUCKETS + 1];
        double sum;
        iro_read_hist(s, cum, IR_ARRAY_LEN(cum), &sum);
        return (double)cum[f->nbounds];
    }
    uint64_t n = 0;
    double d = 0;
    for (size_t k = 0; k < IRO_SHARDS; k++) {
        const _Atomic uint64_t *c = s->cells + k * f->stride;
        n += atomic_load_explicit(&c[0], memory_order_relaxed);
        d += bits_double(atomic_load_explicit(&c[1], memory_order_relaxed));
    }
    return (double)n + d;
}

size_t iro_read_hist(const iro_series *s, uint64_t *cum, size_t cap, double *sum) {
    const iro_family *f = s->fam;
    size_t nb = f->nbounds + 1;
    if (f->type != IRO_HISTOGRAM || cap < nb) return 0;
    memset(cum, 0, nb * sizeof *cum);
    double total = 0;
    for (size_t k = 0; k < IRO_SHARDS; k++) {
        const _Atomic uint64_t *c = s->cells + k * f->stride;
        for (size_t b = 0; b < nb; b++) cum[b] += atomic_load_explicit(&c[b], memory_order_relaxed);
        total += bits_double(atomic_load_explicit(&c[nb], memory_order_relaxed));
    }
    for (size_t b = 1; b < nb; b++) cum[b] += cum[b - 1];
    if (sum) *sum = total;
    return nb;
}
