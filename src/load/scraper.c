/* scraper.c: every target's metrics page, scraped in parallel on a timer, on a
 * thread and libuv loop of the scraper's own (see ir_load.h). */
#include "load/ir_load.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct target {
    irl_scraper *s;
    size_t i;
    char *id, *host, *path;
    uint16_t port;
    irn_client *req; /* the scrape in flight, or NULL */
    uv_timer_t deadline;
    int status;
    uint64_t head_at; /* when the head arrived */
    bool too_large, timed_out;
    ir_buf page;
    int state; /* 0: not scraped yet, 1: answering, 2: not answering */
    _Atomic uint64_t results[IRL_SCRAPE_RESULTS];
    _Atomic int answering;
} target;

struct irl_scraper {
    irl_scraper_cfg cfg;
    target *t;
    size_t n;
    uv_loop_t loop;
    uv_timer_t tick;
    uv_async_t stop;
    irn_pool *pool;
    uv_thread_t thread;
    bool started, stopping;
};

const char *irl_result_name(irl_result r) {
    static const char *const names[IRL_SCRAPE_RESULTS] = {"ok",     "error",     "timeout",
                                                          "status", "too_large", "unreadable"};
    return (unsigned)r < IRL_SCRAPE_RESULTS ? names[r] : "unknown";
}

/* ---- one scrape ---------------------------------------------------------------------- */

static void on_head(void *ud, int status, const irn_header *h, size_t n) {
    target *t = ud;
    t->status = status;
    t->head_at = ir_now_ns();
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
    if (ok && t->state == 2)
        IR_INFO("load", "replica %s: its metrics page answers again", t->id);
    else if (!ok && t->state != 2)
        IR_WARN("load",
                "replica %s: its metrics page does not answer (%s: %s); its load reports are "
                "missing until it does",
                t->id, irl_result_name(res), why);
    t->state = ok ? 1 : 2;
}

static irl_result classify(target *t, int err, irl_report *r, char *why, size_t whylen) {
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
    if (irl_report_parse(t->page.data ? t->page.data : "", t->page.len, r, why, whylen))
        return IRL_SCRAPE_UNREADABLE;
    return IRL_SCRAPE_OK;
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
    irl_report r;
    char why[256] = "";
    irl_result res = classify(t, err, &r, why, sizeof why);
    atomic_fetch_add_explicit(&t->results[res], 1, memory_order_relaxed);
    note_state(t, res, why);
    if (s->cfg.on_report)
        s->cfg.on_report(s->cfg.ud, t->i, res, res == IRL_SCRAPE_OK ? &r : NULL, t->head_at);
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
    for (size_t i = 0; i < s->n; i++)
        if (!s->t[i].req) start_scrape(s, &s->t[i]); /* one in flight per target */
}

/* ---- the thread ------------------------------------------------------------------------ */

static void on_stop(uv_async_t *a) {
    irl_scraper *s = a->data;
    s->stopping = true;
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

irl_scraper *irl_scraper_new(const irl_scraper_cfg *cfg, const irl_target *targets, size_t n) {
    irl_scraper *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cfg = *cfg;
    if (!s->cfg.interval_ns) s->cfg.interval_ns = 100 * 1000000ull;
    if (!s->cfg.timeout_ns) s->cfg.timeout_ns = 100 * 1000000ull;
    if (!s->cfg.max_page) s->cfg.max_page = IRL_MAX_PAGE;
    s->t = calloc(n ? n : 1, sizeof *s->t);
    if (!s->t) {
        free(s);
        return NULL;
    }
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        target *t = &s->t[i];
        t->s = s;
        t->i = i;
        t->port = targets[i].port;
        t->id = strdup(targets[i].id ? targets[i].id : "?");
        t->host = strdup(targets[i].host ? targets[i].host : "");
        t->path = strdup(targets[i].path ? targets[i].path : "/metrics");
        ir_buf_init(&t->page, s->cfg.max_page);
        if (!t->id || !t->host || !t->path) {
            irl_scraper_free(s);
            return NULL;
        }
    }
    return s;
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
    for (size_t i = 0; i < s->n; i++) {
        uv_timer_init(&s->loop, &s->t[i].deadline);
        s->t[i].deadline.data = &s->t[i];
    }
    uint64_t every = s->cfg.interval_ns / 1000000;
    uv_timer_start(&s->tick, on_tick, 0, every ? every : 1);
    rc = uv_thread_create(&s->thread, run, s);
    if (rc) {
        on_stop(&s->stop);
        uv_run(&s->loop, UV_RUN_DEFAULT);
        uv_loop_close(&s->loop);
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
}

void irl_scraper_free(irl_scraper *s) {
    if (!s) return;
    irl_scraper_stop(s);
    for (size_t i = 0; i < s->n; i++) {
        free(s->t[i].id);
        free(s->t[i].host);
        free(s->t[i].path);
        ir_buf_free(&s->t[i].page);
    }
    free(s->t);
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
