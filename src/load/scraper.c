/* scraper.c: every target's metrics page, scraped in parallel on a timer, on a
 * thread and libuv loop of the scraper's own (see ir_load.h). */
#include "load/ir_load.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A target as irl_scraper_set hands it over: owned copies of its strings. */
typedef struct spec {
    char *id, *host, *path; /* host NULL: an empty slot */
    uint16_t port;
    uint64_t tag;
    int64_t rank; /* data-parallel rank reported; -1: the whole engine */
} spec;

/* Whether a target answers, for logging each change once. */
typedef enum {
    SCRAPE_UNKNOWN = 0, /* not scraped yet */
    SCRAPE_ANSWERING,
    SCRAPE_SILENT, /* its last scrape failed */
} scrape_state;

typedef struct target {
    irl_scraper *s;
    size_t i;
    size_t leader;          /* the slot whose scrape of the same page it reads (itself: its own) */
    char *id, *host, *path; /* host NULL: an empty slot (never scraped) */
    uint16_t port;
    uint64_t tag;
    int64_t rank;
    /* The next target of this slot, under s->mu: set by irl_scraper_set, taken by
     * the loop (or by irl_scraper_set itself while no loop runs). */
    bool dirty;
    spec next;
    bool changing;   /* its scrape was cancelled for a change: no report of it */
    irn_client *req; /* the scrape in flight, or NULL */
    uv_timer_t deadline;
    int status;
    uint64_t head_at; /* when the head arrived */
    bool too_large, timed_out;
    ir_buf page;
    scrape_state state;
    uint32_t skip; /* rounds to sit out after a page past the cap */
    _Atomic uint64_t results[IRL_SCRAPE_RESULTS];
    _Atomic int answering;
} target;

struct irl_scraper {
    irl_scraper_cfg cfg;
    target *t;
    size_t n;
    uv_loop_t loop;
    uv_timer_t tick;
    uv_async_t stop, changes;
    irn_pool *pool;
    uv_thread_t thread;
    bool started, stopping;
    uv_mutex_t mu;          /* the slots' next targets, and phase */
    int phase;              /* under mu: IDLE (no loop runs), LIVE, or CLOSING */
    _Atomic size_t nfilled; /* slots that hold a target */
    _Atomic bool relead;    /* a target changed: the loop recomputes the leaders */
};
enum { IDLE, LIVE, CLOSING };

static void spec_free(spec *p) {
    free(p->id);
    free(p->host);
    free(p->path);
    *p = (spec){0};
}

/* Copies t into *out (t NULL or without a host: an empty slot). -1 on OOM. */
static int spec_copy(spec *out, const irl_target *t) {
    *out = (spec){0};
    if (!t || !t->host) return 0;
    out->id = strdup(t->id ? t->id : "?");
    out->host = strdup(t->host);
    out->path = strdup(t->path ? t->path : "/metrics");
    out->port = t->port;
    out->tag = t->tag;
    out->rank = t->ranked ? (int64_t)t->rank : -1;
    if (out->id && out->host && out->path) return 0;
    spec_free(out);
    return -1;
}

/* Installs p (taken) as t's target: a fresh start, its counts at 0. No scrape of
 * t is in flight. */
static void install(target *t, spec *p) {
    if (t->host) atomic_fetch_sub(&t->s->nfilled, 1);
    free(t->id);
    free(t->host);
    free(t->path);
    t->id = p->id;
    t->host = p->host;
    t->path = p->path;
    t->port = p->port;
    t->tag = p->tag;
    t->rank = p->rank;
    *p = (spec){0};
    if (t->host) atomic_fetch_add(&t->s->nfilled, 1);
    atomic_store(&t->s->relead, true);
    t->state = SCRAPE_UNKNOWN;
    t->skip = 0;
    for (int k = 0; k < IRL_SCRAPE_RESULTS; k++) atomic_store(&t->results[k], 0);
    atomic_store(&t->answering, 0);
}

const char *irl_result_name(irl_result r) {
    static const char *const names[IRL_SCRAPE_RESULTS] = {
        "ok", "error", "timeout", "status", "too_large", "unreadable", "no_rank"};
    return (unsigned)r < IRL_SCRAPE_RESULTS ? names[r] : "unknown";
}

/* ---- one scrape ---------------------------------------------------------------------- */

static void on_head(void *ud, int status, const irn_header *h, size_t n) {
    target *t = ud;
    t->status = status;
    t->head_at = ir_now_ns();
    /* A page announced past the cap is not read at all. */
    const irn_header *cl = irn_headers_find(h, n, "content-length");
    if (cl && strtoull(cl->value, NULL, 10) > t->s->cfg.max_page) {
        t->too_large = true;
        irn_client_cancel(t->req);
    }
}

static void on_body(void *ud, const char *d, size_t n) {
    target *t = ud;
    if (t->too_large) return;
    if (ir_buf_append(&t->page, d, n)) {
        t->too_large = true;
        irn_client_cancel(t->req); /* an endless or huge page stops here */
    }
}

/* Logs a change of answering state, once each way. */
static void note_state(target *t, irl_result res, const char *why) {
    bool ok = res == IRL_SCRAPE_OK;
    atomic_store_explicit(&t->answering, ok, memory_order_relaxed);
    if (res == IRL_SCRAPE_NO_RANK) return; /* the page answers: the receiver tells */
    if (ok && t->state == SCRAPE_SILENT)
        IR_INFO("load", "replica %s: its metrics page answers again", t->id);
    else if (!ok && t->state != SCRAPE_SILENT)
        IR_WARN("load",
                "replica %s: its metrics page does not answer (%s: %s); its load reports are "
                "missing until it does",
                t->id, irl_result_name(res), why);
    t->state = ok ? SCRAPE_ANSWERING : SCRAPE_SILENT;
}

/* What src's finished scrape says of data-parallel rank `rank` (-1: the whole engine). */
static irl_result classify(const target *t, int64_t rank, int err, irl_report *r, char *why,
                           size_t whylen) {
    if (t->too_large) {
        snprintf(why, whylen, "larger than %zu bytes", t->s->cfg.max_page);
        return IRL_SCRAPE_TOO_LARGE;
    }
    if (t->timed_out) {
        snprintf(why, whylen, "no whole page within %llu ms",
                 (unsigned long long)(t->s->cfg.timeout_ns / 1000000));
        return IRL_SCRAPE_TIMEOUT;
    }
    if (err) {
        snprintf(why, whylen, "%s", irn_strerror(err));
        return err == IRN_ECONNECT_TIMEOUT || err == IRN_EHEAD_TIMEOUT || err == IRN_EIDLE_TIMEOUT
                   ? IRL_SCRAPE_TIMEOUT
                   : IRL_SCRAPE_ERROR;
    }
    if (t->status != 200) {
        snprintf(why, whylen, "status %d", t->status);
        return IRL_SCRAPE_STATUS;
    }
    int rc =
        irl_report_parse_rank(t->page.data ? t->page.data : "", t->page.len, rank, r, why, whylen);
    return rc == 0                    ? IRL_SCRAPE_OK
           : rc == IRL_REPORT_NO_RANK ? IRL_SCRAPE_NO_RANK
                                      : IRL_SCRAPE_UNREADABLE;
}

/* On the loop: applies slot t's change, if any. A scrape in flight is cancelled
 * first; its on_done comes back here. */
static void apply(target *t) {
    irl_scraper *s = t->s;
    uv_mutex_lock(&s->mu);
    if (t->dirty && !t->req) {
        install(t, &t->next);
        t->dirty = false;
    } else if (t->dirty && !t->changing) {
        t->changing = true;
        irn_client_cancel(t->req);
    }
    uv_mutex_unlock(&s->mu);
}

static void on_changes(uv_async_t *a) {
    irl_scraper *s = a->data;
    for (size_t i = 0; i < s->n; i++) apply(&s->t[i]);
}

/* Reports src's finished scrape as t's: t's own, or a follower's (share). */
static irl_result deliver(target *t, const target *src, int err) {
    irl_scraper *s = t->s;
    irl_report r;
    char why[256] = "";
    irl_result res = classify(src, t->rank, err, &r, why, sizeof why);
    atomic_fetch_add_explicit(&t->results[res], 1, memory_order_relaxed);
    note_state(t, res, why);
    if (s->cfg.on_report)
        s->cfg.on_report(s->cfg.ud, t->i, t->tag, res, res == IRL_SCRAPE_OK ? &r : NULL,
                         src->head_at);
    return res;
}

/* Ranked targets (one data-parallel rank each, as the gateway expands
 * data_parallel_size) that read the same page share one scrape a round: the
 * first of them in slot order, the leader, fetches it, and each of the others
 * reads its own rank from the leader's page. An engine with 8 ranks serves its
 * page once a round, not 8 times. */
static bool same_page(const target *a, const target *b) {
    return a->host && b->host && a->rank >= 0 && b->rank >= 0 && a->port == b->port &&
           strcmp(a->host, b->host) == 0 && strcmp(a->path, b->path) == 0;
}

static void relead(irl_scraper *s) {
    for (size_t i = 0; i < s->n; i++) {
        target *t = &s->t[i];
        t->leader = i;
        for (size_t j = 0; j < i && t->rank >= 0; j++)
            if (s->t[j].leader == j && same_page(&s->t[j], t)) {
                t->leader = j;
                break;
            }
    }
}

/* The leader's page, for each of its followers that is not changing. */
static void share(const target *lead, int err) {
    irl_scraper *s = lead->s;
    if (lead->rank < 0) return;
    for (size_t j = lead->i + 1; j < s->n; j++) {
        target *f = &s->t[j];
        if (f->leader == lead->i && f->host && !f->req && !f->changing) deliver(f, lead, err);
    }
}

static void on_done(void *ud, int err) {
    target *t = ud;
    t->req = NULL;
    uv_timer_stop(&t->deadline);
    irl_scraper *s = t->s;
    if (s->stopping && err == IRN_ECANCELED && !t->too_large && !t->timed_out) {
        ir_buf_reset(&t->page);
        return; /* cut by irl_scraper_stop: not the engine's fault */
    }
    if (t->changing) { /* cut for a new target: nobody's report */
        t->changing = false;
        ir_buf_reset(&t->page);
        apply(t);
        return;
    }
    irl_result res = deliver(t, t, err);
    share(t, err);
    if (res == IRL_SCRAPE_TOO_LARGE) {
        /* Reading a huge or endless page costs the cap each time: such a target
         * is asked again every IRL_TOO_LARGE_ROUNDS rounds only, and the buffer
         * it grew is given back. */
        t->skip = IRL_TOO_LARGE_ROUNDS - 1;
        ir_buf_rearm(&t->page, s->cfg.max_page, 256 * 1024);
    }
    ir_buf_reset(&t->page);
}

static const irn_client_cbs scrape_cbs = {on_head, on_body, on_done};

static void on_deadline(uv_timer_t *h) {
    target *t = h->data;
    if (!t->req) return;
    t->timed_out = true;
    irn_client_cancel(t->req);
}

static void start_scrape(irl_scraper *s, target *t) {
    uint64_t to = s->cfg.timeout_ns;
    irn_client_req q = {.host = t->host,
                        .port = t->port,
                        .method = "GET",
                        .path = t->path,
                        .connect_timeout_ns = to,
                        .head_timeout_ns = to,
                        .idle_timeout_ns = to};
    t->status = 0;
    t->head_at = 0;
    t->too_large = t->timed_out = false;
    ir_buf_reset(&t->page);
    if (irn_client_request(s->pool, &q, &scrape_cbs, t, &t->req)) {
        t->req = NULL;
        return; /* out of memory or closing: the next round tries again */
    }
    uint64_t ms = (to + 999999) / 1000000;
    uv_timer_start(&t->deadline, on_deadline, ms ? ms : 1, 0);
}

static void on_tick(uv_timer_t *h) {
    irl_scraper *s = h->data;
    if (s->stopping) return;
    if (atomic_exchange(&s->relead, false)) relead(s);
    for (size_t i = 0; i < s->n; i++) {
        target *t = &s->t[i];
        if (!t->host || t->req || t->changing) continue; /* one in flight per target */
        if (t->leader != i) continue;                    /* it reads its leader's page */
        if (t->skip) {
            t->skip--;
            continue;
        }
        start_scrape(s, t);
    }
}

/* ---- the thread ------------------------------------------------------------------------ */

static void on_stop(uv_async_t *a) {
    irl_scraper *s = a->data;
    uv_mutex_lock(&s->mu);
    s->phase = CLOSING; /* no uv_async_send on `changes` after this */
    uv_mutex_unlock(&s->mu);
    s->stopping = true;
    uv_close((uv_handle_t *)&s->changes, NULL);
    uv_timer_stop(&s->tick);
    uv_close((uv_handle_t *)&s->tick, NULL);
    for (size_t i = 0; i < s->n; i++) uv_close((uv_handle_t *)&s->t[i].deadline, NULL);
    uv_close((uv_handle_t *)&s->stop, NULL);
    irn_pool_close(s->pool, NULL, NULL); /* cancels the scrapes in flight */
    s->pool = NULL;
}

static void run(void *arg) {
    irl_scraper *s = arg;
    uv_run(&s->loop, UV_RUN_DEFAULT);
}

irl_scraper *irl_scraper_new(const irl_scraper_cfg *cfg, const irl_target *targets, size_t n,
                             size_t slots) {
    if (n > slots || (n && !targets)) return NULL;
    irl_scraper *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cfg = *cfg;
    if (!s->cfg.interval_ns) s->cfg.interval_ns = 100 * 1000000ull;
    if (!s->cfg.timeout_ns) s->cfg.timeout_ns = 100 * 1000000ull;
    if (!s->cfg.max_page) s->cfg.max_page = IRL_MAX_PAGE;
    if (uv_mutex_init(&s->mu)) {
        free(s);
        return NULL;
    }
    s->t = calloc(slots ? slots : 1, sizeof *s->t);
    if (!s->t) {
        uv_mutex_destroy(&s->mu);
        free(s);
        return NULL;
    }
    s->n = slots;
    for (size_t i = 0; i < slots; i++) {
        target *t = &s->t[i];
        t->s = s;
        t->i = i;
        t->leader = i;
        ir_buf_init(&t->page, s->cfg.max_page);
        spec p;
        if (i < n && spec_copy(&p, &targets[i])) {
            irl_scraper_free(s);
            return NULL;
        }
        if (i < n) install(t, &p);
    }
    return s;
}

int irl_scraper_set(irl_scraper *s, size_t i, const irl_target *t) {
    if (!s || i >= s->n) return -1;
    spec p;
    if (spec_copy(&p, t)) return -1;
    target *x = &s->t[i];
    uv_mutex_lock(&s->mu);
    spec_free(&x->next);
    x->next = p;
    x->dirty = true;
    if (s->phase == LIVE) {
        uv_async_send(&s->changes);
    } else if (s->phase == IDLE) { /* no loop: nothing in flight */
        install(x, &x->next);
        x->dirty = false;
    } /* CLOSING: kept for a later start */
    uv_mutex_unlock(&s->mu);
    return 0;
}

size_t irl_scraper_targets(const irl_scraper *s) {
    return s ? atomic_load(&s->nfilled) : 0;
}

int irl_scraper_start(irl_scraper *s) {
    if (s->started) return 0;
    int rc = uv_loop_init(&s->loop);
    if (rc) return rc;
    s->pool = irn_pool_new(&s->loop, NULL);
    if (!s->pool) {
        uv_loop_close(&s->loop);
        return UV_ENOMEM;
    }
    uv_timer_init(&s->loop, &s->tick);
    s->tick.data = s;
    uv_async_init(&s->loop, &s->stop, on_stop);
    s->stop.data = s;
    uv_async_init(&s->loop, &s->changes, on_changes);
    s->changes.data = s;
    for (size_t i = 0; i < s->n; i++) {
        uv_timer_init(&s->loop, &s->t[i].deadline);
        s->t[i].deadline.data = &s->t[i];
    }
    uint64_t every = s->cfg.interval_ns / 1000000;
    uv_timer_start(&s->tick, on_tick, 0, every ? every : 1);
    s->stopping = false;
    uv_mutex_lock(&s->mu);
    s->phase = LIVE;
    for (size_t i = 0; i < s->n; i++) /* changes made while closed */
        if (s->t[i].dirty) uv_async_send(&s->changes);
    uv_mutex_unlock(&s->mu);
    rc = uv_thread_create(&s->thread, run, s);
    if (rc) {
        on_stop(&s->stop);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
        uv_mutex_lock(&s->mu);
        s->phase = IDLE;
        uv_mutex_unlock(&s->mu);
        return rc;
    }
    s->started = true;
    return 0;
}

void irl_scraper_stop(irl_scraper *s) {
    if (!s || !s->started) return;
    s->started = false;
    uv_async_send(&s->stop);
    uv_thread_join(&s->thread);
    uv_loop_close(&s->loop);
    uv_mutex_lock(&s->mu);
    s->phase = IDLE;
    for (size_t i = 0; i < s->n; i++) /* changes that came while it closed */
        if (s->t[i].dirty) {
            install(&s->t[i], &s->t[i].next);
            s->t[i].dirty = false;
        }
    uv_mutex_unlock(&s->mu);
}

void irl_scraper_free(irl_scraper *s) {
    if (!s) return;
    irl_scraper_stop(s);
    for (size_t i = 0; i < s->n; i++) {
        free(s->t[i].id);
        free(s->t[i].host);
        free(s->t[i].path);
        spec_free(&s->t[i].next);
        ir_buf_free(&s->t[i].page);
    }
    free(s->t);
    uv_mutex_destroy(&s->mu);
    free(s);
}

void irl_scraper_stats(const irl_scraper *s, size_t i, irl_scrape_stats *out) {
    memset(out, 0, sizeof *out);
    if (!s || i >= s->n) return;
    target *t = &s->t[i];
    for (int k = 0; k < IRL_SCRAPE_RESULTS; k++)
        out->results[k] = atomic_load_explicit(&t->results[k], memory_order_relaxed);
    out->answering = atomic_load_explicit(&t->answering, memory_order_relaxed);
}
