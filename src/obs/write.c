/* write.c: the registry's page in the text exposition format 0.0.4. */
#include "obs/obs_internal.h"

#include <stdio.h>
#include <string.h>

/* The page being written; err: some append failed (the cap), the page is void. */
typedef struct writer {
    ir_buf *o;
    iro_format fmt;
    int err;
} writer;

static void put(writer *w, const char *s) {
    w->err |= ir_buf_append_str(w->o, s);
}

static void put_labels(writer *w, const iro_series *s) {
    const iro_family *f = s->fam;
    for (size_t i = 0; i < f->nlabels; i++) {
        if (i) put(w, ",");
        put(w, f->labels[i]);
        put(w, "=\"");
        size_t before = w->o->len;
        iro_escape_label(w->o, s->values[i]);
        if (s->values[i][0] && w->o->len == before) w->err = -1;
        put(w, "\"");
    }
}

/* name{labels[,extra]} value\n; extra is already escaped (le="..."). */
static void sample(writer *w, const iro_series *s, const char *suffix, const char *extra,
                   double v) {
    put(w, s->fam->name);
    put(w, suffix);
    if (s->fam->nlabels || extra) {
        put(w, "{");
        put_labels(w, s);
        if (extra) {
            if (s->fam->nlabels) put(w, ",");
            put(w, extra);
        }
        put(w, "}");
    }
    char num[64];
    iro_format_value(v, w->fmt, num, sizeof num);
    put(w, " ");
    put(w, num);
    put(w, "\n");
}

static void histogram(writer *w, const iro_series *s) {
    const iro_family *f = s->fam;
    uint64_t cum[IRO_MAX_BUCKETS + 1];
    double sum = 0;
    size_t nb = iro_read_hist(s, cum, IR_ARRAY_LEN(cum), &sum);
    for (size_t b = 0; b < nb; b++) {
        char le[80] = "le=\"+Inf\"";
        if (b < f->nbounds) {
            char num[64];
            /* bounds keep a fraction ("1.0"), as the client libraries write them */
            iro_format_value(f->bounds[b], IRO_FMT_PYTHON, num, sizeof num);
            snprintf(le, sizeof le, "le=\"%s\"", num);
        }
        sample(w, s, "_bucket", le, (double)cum[b]);
    }
    /* _count is the +Inf bucket just written, never a separate read */
    sample(w, s, "_count", NULL, (double)cum[nb - 1]);
    sample(w, s, "_sum", NULL, sum);
}

static const char *type_name(iro_type t) {
    return t == IRO_COUNTER ? "counter" : t == IRO_GAUGE ? "gauge" : "histogram";
}

static void family(writer *w, const iro_family *f) {
    bool head = false;
    for (const iro_series *s = f->series; s; s = s->next) {
        if (!atomic_load_explicit(&s->live, memory_order_acquire)) continue;
        if (!head) {
            put(w, "# HELP ");
            put(w, f->name);
            put(w, " ");
            iro_escape_help(w->o, f->help);
            put(w, "\n# TYPE ");
            put(w, f->name);
            put(w, " ");
            put(w, type_name(f->type));
            put(w, "\n");
            head = true;
        }
        if (f->type == IRO_HISTOGRAM)
            histogram(w, s);
        else
            sample(w, s, "", NULL, iro_read(s));
    }
}

int iro_write(iro_registry *r, ir_buf *o) {
    /* the collectors run outside the mutex: they may get series */
    pthread_mutex_lock(&r->mu);
    size_t n = r->ncollect;
    iro_collect_fn fns[IRO_MAX_COLLECT];
    void *uds[IRO_MAX_COLLECT];
    memcpy(fns, r->collect, n * sizeof *fns);
    memcpy(uds, r->collect_ud, n * sizeof *uds);
    pthread_mutex_unlock(&r->mu);
    for (size_t i = 0; i < n; i++) fns[i](uds[i]);
    writer w = {o, r->fmt, 0};
    pthread_mutex_lock(&r->mu);
    for (const iro_family *f = r->families; f && !w.err; f = f->next) family(&w, f);
    pthread_mutex_unlock(&r->mu);
    return w.err ? -1 : 0;
}
