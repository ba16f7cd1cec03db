/* test_openloop.c: trust tests for the open-loop harness: Poisson arrivals,
 * determinism, TTFT/TPOT/ITL against a server with known timing, coordinated
 * omission, a blocked client loop showing up as send lag, the summary
 * arithmetic (goodput, prediction accuracy, Prometheus sums), and a run
 * spread over several base URLs (gateways). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "net/ir_net.h"

/* ---- a test server with known timing, on its own thread ----------------------- */

typedef enum { SRV_TIMED, SRV_SERIAL, SRV_FAST } srv_mode;

typedef struct tsrv {
    srv_mode mode;
    int ttft_ms, itl_ms, tokens, service_ms;
    int cached; /* usage's cached_tokens (of 100 prompt tokens) */
    uv_loop_t loop;
    uv_async_t stop;
    irn_server *srv;
    int port;
    int resets; /* POSTs to /reset_prefix_cache seen (server thread; read after stop) */
    int served; /* other requests */
    /* SRV_TIMED: each stream's first token and end, in ms after its request, as the
     * server's own clock saw them (server thread; read after stop) */
    double seen_first[64], seen_end[64];
    int nseen;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ready;
    /* SRV_SERIAL: one request served at a time, FIFO */
    irn_resp *queue[4096];
    size_t qhead, qtail;
    bool busy;
    uv_timer_t serial_timer;
} tsrv;

typedef struct tstream {
    tsrv *s;
    irn_resp *resp;
    uv_timer_t t;
    int step;
    uint64_t t0;
    double first; /* ms after t0 */
} tstream;

static const char *chunk =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok\"}}]}\n\n";
static const char *usage_fmt = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":100,"
                               "\"completion_tokens\":%d,\"prompt_tokens_details\":"
                               "{\"cached_tokens\":%d}}}\n\ndata: [DONE]\n\n";

static const irn_header resp_headers[] = {
    {"content-type", 12, "text/event-stream", 17},
    {"x-inferrail-replica", 19, "t1", 2},
    {"x-inferrail-prompt-tokens", 25, "100", 3},
    {"x-inferrail-cached-tokens", 25, "40", 2},
};

static void stream_closed(uv_handle_t *h) {
    free(h->data);
}

static void stream_step(uv_timer_t *t) {
    tstream *st = t->data;
    tsrv *s = st->s;
    double ms = (double)(uv_hrtime() - st->t0) / 1e6;
    if (st->step == 0) st->first = ms;
    if (st->step < st->s->tokens) {
        irn_resp_write(st->resp, chunk, strlen(chunk));
        st->step++;
        uv_timer_start(&st->t, stream_step, (uint64_t)st->s->itl_ms, 0);
        return;
    }
    char u[256];
    int n = snprintf(u, sizeof u, usage_fmt, st->s->tokens, st->s->cached);
    irn_resp_finish(st->resp, u, (size_t)n);
    if (s->nseen < 64) {
        s->seen_first[s->nseen] = st->first;
        s->seen_end[s->nseen++] = ms;
    }
    uv_close((uv_handle_t *)&st->t, stream_closed);
}

static void answer_now(tsrv *s, irn_resp *resp, int tokens) {
    ir_buf b;
    ir_buf_init(&b, 0);
    for (int i = 0; i < tokens; i++) ir_buf_append_str(&b, chunk);
    ir_buf_appendf(&b, usage_fmt, tokens, s->cached);
    irn_resp_start(resp, 200, resp_headers, 4, -1);
    irn_resp_finish(resp, b.data, b.len);
    ir_buf_free(&b);
}

static void serial_next(tsrv *s);

static void serial_done(uv_timer_t *t) {
    tsrv *s = t->data;
    answer_now(s, s->queue[s->qhead++ % 4096], 1);
    s->busy = false;
    serial_next(s);
}

static void serial_next(tsrv *s) {
    if (s->busy || s->qhead == s->qtail) return;
    s->busy = true;
    uv_timer_start(&s->serial_timer, serial_done, (uint64_t)s->service_ms, 0);
}

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    tsrv *s = ud;
    if (strcmp(req->path, "/reset_prefix_cache") == 0) {
        s->resets += strcmp(req->method, "POST") == 0;
        irn_resp_send(resp, 200, NULL, "", 0, NULL, 0);
        return;
    }
    s->served++;
    if (s->mode == SRV_FAST) {
        answer_now(s, resp, s->tokens);
    } else if (s->mode == SRV_SERIAL) {
        s->queue[s->qtail++ % 4096] = resp;
        serial_next(s);
    } else {
        tstream *st = calloc(1, sizeof *st);
        st->s = s;
        st->resp = resp;
        st->t0 = uv_hrtime();
        irn_resp_start(resp, 200, resp_headers, 4, -1);
        uv_timer_init(&s->loop, &st->t);
        st->t.data = st;
        uv_timer_start(&st->t, stream_step, (uint64_t)s->ttft_ms, 0);
    }
}

static void on_stop(uv_async_t *a) {
    tsrv *s = a->data;
    irn_server_close(s->srv, NULL, NULL);
    irn_server_close_all(s->srv);
    uv_close((uv_handle_t *)&s->stop, NULL);
    uv_close((uv_handle_t *)&s->serial_timer, NULL);
}

static void *srv_main(void *arg) {
    tsrv *s = arg;
    uv_loop_init(&s->loop);
    irn_server_cfg cfg;
    irn_server_cfg_init(&cfg);
    cfg.host = "127.0.0.1";
    cfg.on_request = on_request;
    cfg.ud = s;
    assert_int_equal(irn_server_new(&s->loop, &cfg, &s->srv), 0);
    uv_async_init(&s->loop, &s->stop, on_stop);
    s->stop.data = s;
    uv_timer_init(&s->loop, &s->serial_timer);
    s->serial_timer.data = s;
    pthread_mutex_lock(&s->mu);
    s->port = irn_server_port(s->srv);
    s->ready = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    uv_run(&s->loop, UV_RUN_DEFAULT);
    uv_loop_close(&s->loop);
    return NULL;
}

static tsrv *srv_start(srv_mode mode) {
    tsrv *s = calloc(1, sizeof *s);
    s->mode = mode;
    s->ttft_ms = 80;
    s->itl_ms = 15;
    s->tokens = 10;
    s->service_ms = 50;
    s->cached = 32;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_create(&s->th, NULL, srv_main, s);
    pthread_mutex_lock(&s->mu);
    while (!s->ready) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return s;
}

/* Stops the server's loop and waits for its thread; s stays to be read, then freed. */
static void srv_join(tsrv *s) {
    uv_async_send(&s->stop);
    pthread_join(s->th, NULL);
}

/* Returns the resets it saw; *served (may be NULL) the other requests. */
static int srv_stop_count(tsrv *s, int *served) {
    srv_join(s);
    int resets = s->resets;
    if (served) *served = s->served;
    free(s);
    return resets;
}

static int srv_stop(tsrv *s) {
    return srv_stop_count(s, NULL);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Stops a SRV_TIMED server; *first and *end: the median first token and end of its
 * streams as the server timed them. */
static void srv_stop_timed(tsrv *s, double *first, double *end) {
    srv_join(s);
    assert_true(s->nseen > 0);
    *first = median(s->seen_first, s->nseen);
    *end = median(s->seen_end, s->nseen);
    free(s);
}

/* ---- helpers ---------------------------------------------------------------------- */

static void small_w6(bench_workload *w, double rate, size_t n, uint64_t seed) {
    json_t *p = json_object();
    bench_param_parse(p, "p_min=20");
    bench_param_parse(p, "p_max=40");
    bench_param_parse(p, "out_min=4");
    bench_param_parse(p, "out_max=4");
    bench_wl_opts o = {.name = "w6", .rate = rate, .n = n, .seed = seed, .params = p};
    char err[256] = "";
    assert_int_equal(bench_workload_build(&o, w, err, sizeof err), 0);
    json_decref(p);
}

static json_t *run_against(tsrv *s, bench_workload *w, double stall_at, double stall_ms) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", s->port);
    bench_run_cfg c = {.base_url = url,
                       .wl = w,
                       .rate = 1,
                       .slo_ttft_ms = 2000,
                       .slo_tpot_ms = 100,
                       .timeout_s = 30,
                       .stall_at_s = stall_at,
                       .stall_ms = stall_ms};
    char err[256] = "";
    json_t *doc = bench_run(&c, err, sizeof err);
    assert_non_null(doc);
    return doc;
}

static double S(json_t *doc, const char *a, const char *b) {
    json_t *v = json_object_get(json_object_get(doc, "summary"), a);
    if (b) v = json_object_get(v, b);
    return json_number_value(v);
}

/* ---- tests -------------------------------------------------------------------------- */

/* Gaps are exponential with the asked mean; counts per second have variance ~ mean. */
static void test_poisson(void **st) {
    bench_workload w;
    double rate = 50;
    size_t n = 20000;
    small_w6(&w, rate, n, 7);
    double sum = 0, sq = 0;
    size_t below_mean = 0;
    for (size_t i = 1; i < n; i++) {
        double g = (double)(w.reqs[i].at_ns - w.reqs[i - 1].at_ns) / 1e9;
        sum += g;
        sq += g * g;
        below_mean += g < 1 / rate;
    }
    double m = sum / (double)(n - 1), var = sq / (double)(n - 1) - m * m;
    assert_true(fabs(m * rate - 1) < 0.03);      /* mean gap 1/rate */
    assert_true(fabs(sqrt(var) / m - 1) < 0.05); /* CV of an exponential is 1 */
    double frac = (double)below_mean / (double)(n - 1);
    assert_true(fabs(frac - (1 - exp(-1))) < 0.02); /* P(gap < mean) = 1 - 1/e */
    size_t secs = (size_t)((double)w.reqs[n - 1].at_ns / 1e9);
    double *cnt = calloc(secs + 1, sizeof *cnt);
    for (size_t i = 0; i < n; i++) {
        size_t b = (size_t)((double)w.reqs[i].at_ns / 1e9);
        if (b < secs) cnt[b]++;
    }
    double cm = 0, cv = 0;
    for (size_t i = 0; i < secs; i++) cm += cnt[i];
    cm /= (double)secs;
    for (size_t i = 0; i < secs; i++) cv += (cnt[i] - cm) * (cnt[i] - cm);
    cv /= (double)(secs - 1);
    assert_true(cv / cm > 0.75 && cv / cm < 1.3); /* index of dispersion ~ 1 */
    free(cnt);
    bench_workload_free(&w);
}

/* Same seed: same bodies and times for every workload; another seed differs;
 * another rate keeps the bodies. */
static void test_determinism(void **st) {
    const char *names[] = {"w1", "w2", "w3", "w4", "w5", "w6"};
    for (size_t k = 0; k < 6; k++) {
        json_t *p = json_object();
        if (k == 0 || k == 4) {
            bench_param_parse(p, "sys_min=100");
            bench_param_parse(p, "sys_max=300");
        }
        if (k == 4) bench_param_parse(p, "hot_tokens=200");
        if (k == 3) {
            bench_param_parse(p, "doc_min=50");
            bench_param_parse(p, "doc_max=100");
        }
        if (k == 1 || k == 2) {
            bench_param_parse(p, "think_min_s=0.1");
            bench_param_parse(p, "think_max_s=0.2");
        }
        bench_workload a, b, c, d;
        char err[256] = "";
        bench_wl_opts o = {.name = names[k], .rate = 5, .n = 60, .seed = 3, .params = p};
        assert_int_equal(bench_workload_build(&o, &a, err, sizeof err), 0);
        assert_int_equal(bench_workload_build(&o, &b, err, sizeof err), 0);
        o.seed = 4;
        assert_int_equal(bench_workload_build(&o, &c, err, sizeof err), 0);
        o.seed = 3;
        o.rate = 10;
        assert_int_equal(bench_workload_build(&o, &d, err, sizeof err), 0);
        size_t diff = 0, same_body = 0;
        for (size_t i = 0; i < a.n; i++) {
            assert_int_equal(a.reqs[i].at_ns, b.reqs[i].at_ns);
            assert_int_equal(a.reqs[i].body_len, b.reqs[i].body_len);
            assert_memory_equal(a.reqs[i].body, b.reqs[i].body, a.reqs[i].body_len);
            assert_int_equal(a.reqs[i].prompt_tokens, b.reqs[i].prompt_tokens);
            diff += strcmp(a.reqs[i].body, c.reqs[i].body) != 0;
            same_body += strcmp(a.reqs[i].body, d.reqs[i].body) == 0;
            assert_true(a.reqs[i].reused_tokens <= a.reqs[i].prompt_tokens);
            assert_int_equal(a.reqs[i].reused_tokens % 16, 0);
        }
        assert_true(diff > a.n / 2);
        if (k != 1 && k != 2) assert_int_equal(same_body, a.n); /* sessions follow the times */
        assert_true(a.reuse_ceiling == b.reuse_ceiling);
        if (k == 5)
            assert_true(a.reuse_ceiling == 0); /* w6 shares nothing */
        else
            assert_true(a.reuse_ceiling > 0.2);
        bench_workload_free(&a);
        bench_workload_free(&b);
        bench_workload_free(&c);
        bench_workload_free(&d);
        json_decref(p);
    }
}

/* Multi-turn sessions resend their history: each turn extends the last one. */
static void test_sessions_grow(void **st) {
    json_t *p = json_object();
    bench_param_parse(p, "think_min_s=0.5");
    bench_param_parse(p, "think_max_s=0.5");
    bench_workload w;
    char err[256] = "";
    bench_wl_opts o = {.name = "w2", .rate = 20, .n = 200, .seed = 1, .params = p};
    assert_int_equal(bench_workload_build(&o, &w, err, sizeof err), 0);
    size_t later = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (w.reqs[i].turn == 0) continue;
        later++;
        for (size_t j = i; j-- > 0;) {
            if (w.reqs[j].session != w.reqs[i].session) continue;
            assert_int_equal(w.reqs[j].turn + 1, w.reqs[i].turn);
            assert_true(w.reqs[i].at_ns - w.reqs[j].at_ns >= 500000000ull); /* think time */
            assert_true(w.reqs[i].prompt_tokens > w.reqs[j].prompt_tokens);
            assert_true(w.reqs[i].reused_tokens + 16 >= w.reqs[j].prompt_tokens - 16);
            break;
        }
    }
    assert_true(later > 50);
    bench_workload_free(&w);
    json_decref(p);
}

/* TTFT, TPOT (from usage tokens) and ITL against a server with known timing. */
static void test_known_timing(void **st) {
    tsrv *s = srv_start(SRV_TIMED);
    bench_workload w;
    small_w6(&w, 20, 12, 1);
    json_t *doc = run_against(s, &w, 0, 0);
    double first, end;
    srv_stop_timed(s, &first, &end);
    assert_int_equal(S(doc, "errors", NULL), 0);
    double ttft = S(doc, "ttft_ms", "p50"), tpot = S(doc, "tpot_ms", "p50");
    double itl = S(doc, "itl_ms", "p50"), e2e = S(doc, "e2e_ms", "p50");
    double gap = (end - first) / 9; /* the server's own time between tokens */
    print_message("harness ttft %.1f tpot %.1f itl %.1f e2e %.1f; server first %.1f "
                  "gap %.1f end %.1f ms\n",
                  ttft, tpot, itl, e2e, first, gap, end);
    /* The server's timers set floors the harness cannot measure under (ms granularity
     * allows 1 ms less). The ceilings follow what the server's own clock saw, not the
     * set times: on a loaded machine its timers fire late (a CI run saw a TTFT over
     * twice the 80 ms set), and the harness can only see what was sent. Twice that,
     * plus slack for the client's own late wake-ups, still fails a wrong unit or a
     * token count off by half. */
    assert_true(ttft >= 80 && ttft < 2 * first + 40);
    assert_true(tpot >= 14 && tpot < 2 * gap + 10);
    assert_true(itl >= 14 && itl < 2 * gap + 10);
    assert_true(e2e >= 80 + 9 * 15 && e2e < 2 * end + 40);
    assert_int_equal(S(doc, "ttft_ms", "n"), 12);
    assert_true(fabs(S(doc, "hit_rate", NULL) - 0.32) < 1e-9);
    json_t *per = json_object_get(json_object_get(doc, "summary"), "per_replica");
    assert_int_equal(json_integer_value(json_object_get(per, "t1")), 12);
    json_t *pred = json_object_get(json_object_get(doc, "summary"), "prediction");
    json_t *pc = json_object_get(pred, "cached_tokens"),
           *pp = json_object_get(pred, "prompt_tokens");
    assert_true(json_number_value(json_object_get(pc, "over")) == 1);
    assert_true(json_number_value(json_object_get(pc, "mean_error")) == 8);
    assert_true(json_number_value(json_object_get(pp, "exact")) == 1);
    assert_true(S(doc, "goodput", NULL) == 1);
    json_decref(doc);
    bench_workload_free(&w);
}

/* A server that serves one request at a time (50 ms each) gets 40 req/s: the
 * queue grows, and the latencies, counted from the schedule, show it. */
static void test_coordinated_omission(void **st) {
    tsrv *s = srv_start(SRV_SERIAL);
    bench_workload w;
    small_w6(&w, 40, 40, 2);
    json_t *doc = run_against(s, &w, 0, 0);
    srv_stop(s);
    assert_int_equal(S(doc, "errors", NULL), 0);
    /* 40 requests need 2 s of service; they arrive within about 1 s. */
    assert_true(S(doc, "e2e_ms", "max") > 700);
    assert_true(S(doc, "e2e_ms", "p50") > 200);
    assert_true(S(doc, "send_lag_ms", "p99") < 50); /* the client kept its schedule */
    /* Each completion is at least k service times after the first schedule. */
    json_t *rs = json_object_get(doc, "requests");
    double *ends = calloc(json_array_size(rs), sizeof *ends);
    size_t i;
    json_t *r;
    json_array_foreach(rs, i, r) ends[i] = json_number_value(json_object_get(r, "end_ms"));
    qsort(ends, json_array_size(rs), sizeof *ends, bench_cmp_double);
    for (i = 0; i < json_array_size(rs); i++) assert_true(ends[i] >= 50.0 * (double)(i + 1) - 1);
    free(ends);
    json_decref(doc);
    bench_workload_free(&w);
}

/* A client loop that blocks for 150 ms shows up as send lag. */
static void test_blocked_loop(void **st) {
    tsrv *s = srv_start(SRV_FAST);
    bench_workload w;
    small_w6(&w, 200, 120, 3);
    json_t *doc = run_against(s, &w, 0.2, 150);
    assert_true(S(doc, "send_lag_ms", "max") > 100);
    size_t late = 0, i;
    json_t *r;
    json_array_foreach(json_object_get(doc, "requests"), i, r) {
        double lag = json_number_value(json_object_get(r, "send_lag_ms"));
        assert_true(lag >= 0);
        late += lag > 50;
        /* TTFT counts from the schedule, so it includes the lag. */
        json_t *tt = json_object_get(r, "ttft_ms");
        if (json_is_number(tt)) assert_true(json_number_value(tt) >= lag);
    }
    assert_true(late >= 10);
    json_decref(doc);
    /* Without the stall the same run keeps its schedule. */
    doc = run_against(s, &w, 0, 0);
    assert_true(S(doc, "send_lag_ms", "p50") < 5);
    json_decref(doc);
    srv_stop(s);
    bench_workload_free(&w);
}

/* Timed actions (--reset-prefix-cache-at): each is POSTed once, no earlier than
 * asked, during the measured phase; one due after the last request is not sent. */
static void test_actions(void **st) {
    tsrv *s = srv_start(SRV_FAST);
    bench_workload w;
    small_w6(&w, 50, 50, 4); /* about 1 s */
    char base[64], url[96];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", s->port);
    snprintf(url, sizeof url, "%s/reset_prefix_cache", base);
    bench_action acts[] = {{0.2, url}, {0.4, url}, {600, url}, {0.1, "not a url"}};
    bench_run_cfg c = {.base_url = base,
                       .wl = &w,
                       .rate = 1,
                       .slo_ttft_ms = 2000,
                       .slo_tpot_ms = 100,
                       .timeout_s = 30,
                       .actions = acts,
                       .n_actions = 4};
    char err[256] = "";
    json_t *doc = bench_run(&c, err, sizeof err);
    assert_non_null(doc);
    assert_int_equal(srv_stop(s), 2);
    assert_int_equal(S(doc, "errors", NULL), 0);
    json_t *a = json_object_get(doc, "actions");
    assert_int_equal(json_array_size(a), 4);
    for (size_t i = 0; i < 2; i++) {
        json_t *x = json_array_get(a, i);
        assert_int_equal(json_integer_value(json_object_get(x, "status")), 200);
        /* libuv timers count whole milliseconds of a clock read before t0 */
        double sent = json_number_value(json_object_get(x, "sent_s"));
        if (sent < acts[i].at_s - 0.002) fprintf(stderr, "action %zu sent at %g s\n", i, sent);
        assert_true(sent >= acts[i].at_s - 0.002);
    }
    assert_true(json_is_null(json_object_get(json_array_get(a, 2), "sent_s")));
    assert_true(json_is_null(json_object_get(json_array_get(a, 3), "sent_s")));
    assert_non_null(json_object_get(json_array_get(a, 3), "error"));
    json_decref(doc);
    bench_workload_free(&w);
}

/* --direct-share: the chosen requests go to the other server, the same ones for a
 * seed, about the share asked; the summary counts them apart. */
static void test_direct_client(void **st) {
    size_t n = 0, same = 0;
    for (size_t i = 0; i < 10000; i++) {
        bool a = bench_direct_pick(7, i, 0.25);
        n += a;
        same += a == bench_direct_pick(8, i, 0.25);
        assert_true(a == bench_direct_pick(7, i, 0.25));
        assert_false(bench_direct_pick(7, i, 0));
    }
    assert_true(n > 2300 && n < 2700);
    assert_true(same < 9000); /* another seed picks other requests */
    double f;
    int e;
    assert_int_equal(bench_direct_parse("0.3@2", &f, &e), 0);
    assert_true(f == 0.3 && e == 2);
    assert_int_equal(bench_direct_parse("0.5", &f, &e), 0);
    assert_true(f == 0.5 && e == 1);
    static const char *const bad[] = {"", "0", "1", "1.5", "-0.1", "0.3@", "0.3@0", "0.3x", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(bench_direct_parse(bad[i], &f, &e), -1);

    tsrv *gw = srv_start(SRV_FAST), *eng = srv_start(SRV_FAST);
    bench_workload w;
    small_w6(&w, 100, 60, 5);
    w.warmup = 10;
    char base[64], direct[64];
    snprintf(base, sizeof base, "http://127.0.0.1:%d", gw->port);
    snprintf(direct, sizeof direct, "http://127.0.0.1:%d/v1", eng->port);
    bench_run_cfg c = {.base_url = base,
                       .wl = &w,
                       .rate = 1,
                       .seed = 5,
                       .slo_ttft_ms = 2000,
                       .slo_tpot_ms = 100,
                       .timeout_s = 30,
                       .direct_url = direct,
                       .direct_share = 0.3};
    char err[256] = "";
    json_t *doc = bench_run(&c, err, sizeof err);
    assert_non_null(doc);
    int to_gw, to_eng;
    srv_stop_count(gw, &to_gw);
    srv_stop_count(eng, &to_eng);
    size_t want = 0, want_measured = 0;
    for (size_t i = 0; i < 60; i++) {
        bool d = bench_direct_pick(5, i, 0.3);
        want += d;
        want_measured += d && i >= 10;
    }
    assert_true(want > 0 && want < 60);
    assert_int_equal(to_eng, (int)want);
    assert_int_equal(to_gw, 60 - (int)want);
    json_t *d = json_object_get(json_object_get(doc, "summary"), "direct");
    assert_int_equal(json_integer_value(json_object_get(d, "requests")), want_measured);
    assert_int_equal(json_integer_value(json_object_get(d, "errors")), 0);
    assert_int_equal(S(doc, "ttft_ms", "n"), 50 - (double)want_measured);
    size_t i, flagged = 0;
    json_t *r;
    json_array_foreach(json_object_get(doc, "requests"), i, r) flagged +=
        json_is_true(json_object_get(r, "direct"));
    assert_int_equal(flagged, want_measured);
    json_decref(doc);
    bench_workload_free(&w);
}

static void test_prediction_arithmetic(void **st) {
    long pred[] = {10, 12, 8, -1, 10, 0};
    long act[] = {10, 10, 10, 5, -1, 0};
    json_t *p = bench_prediction(pred, act, 6);
    assert_int_equal(json_integer_value(json_object_get(p, "n")), 4);
    assert_true(json_number_value(json_object_get(p, "exact")) == 0.5);
    assert_true(json_number_value(json_object_get(p, "over")) == 0.25);
    assert_true(json_number_value(json_object_get(p, "under")) == 0.25);
    assert_true(json_number_value(json_object_get(p, "mean_error")) == 0);
    assert_true(json_number_value(json_object_get(p, "mean_abs_error")) == 1);
    json_decref(p);
    long none[] = {-1, -1};
    assert_null(bench_prediction(none, act, 2));
}

static void test_summary_arithmetic(void **st) {
    bench_rec r[4] = {0};
    for (int i = 0; i < 4; i++) {
        r[i].sched_ns = (uint64_t)i * 1000000000ull;
        r[i].send_ns = r[i].sched_ns + 1000000;
        r[i].first_ns = r[i].sched_ns + (uint64_t)(i + 1) * 1000000000ull; /* ttft 1..4 s */
        r[i].end_ns = r[i].first_ns + 10 * 50000000ull;                    /* tpot 50 ms */
        r[i].completion_tokens = 11;
        r[i].prompt_tokens = 100;
        r[i].cached_tokens = 25;
        r[i].hdr_prompt_tokens = r[i].hdr_cached_tokens = -1;
        r[i].status = 200;
    }
    r[3].err = BENCH_E_HTTP5;
    double itl[] = {50, 50};
    bench_sum_in in = {r, 4, 2500, 100, itl, 2};
    json_t *s = bench_summarize(&in);
    assert_int_equal(json_integer_value(json_object_get(s, "errors")), 1);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(s, "errors_by_kind"), "http_5xx")), 1);
    /* good: ttft 1 s and 2 s pass 2.5 s; 3 s fails; the error fails */
    assert_true(json_number_value(json_object_get(s, "goodput")) == 0.5);
    assert_true(
        fabs(json_number_value(json_object_get(json_object_get(s, "tpot_ms"), "p50")) - 50) < 1e-6);
    assert_true(fabs(json_number_value(json_object_get(json_object_get(s, "ttft_ms"), "p50")) -
                     2000) < 1e-6);
    assert_true(fabs(json_number_value(json_object_get(json_object_get(s, "send_lag_ms"), "max")) -
                     1) < 1e-6);
    assert_true(json_number_value(json_object_get(s, "hit_rate")) == 0.25);
    assert_true(json_is_null(json_object_get(s, "in_flight_max_over_mean"))); /* no replica */
    json_decref(s);
    /* In flight from hand-off to end: a holds 1.499 + 2.499 s, b 3.499 + 4.499 s,
     * over a 7.5 s span; the busiest against the mean is 2b / (a + b). */
    for (int i = 0; i < 4; i++)
        snprintf(r[i].replica, sizeof r[i].replica, "%s", i < 2 ? "a" : "b");
    s = bench_summarize(&in);
    json_t *per = json_object_get(s, "per_replica_in_flight");
    assert_true(fabs(json_number_value(json_object_get(per, "a")) - 3.998 / 7.5) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(per, "b")) - 7.998 / 7.5) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(s, "in_flight_max_over_mean")) -
                     2 * 7.998 / (3.998 + 7.998)) < 1e-3); /* kept to 3 decimals */
    json_decref(s);
}

static void test_gateway_yaml(void **st) {
    ir_buf b;
    ir_buf_init(&b, 0);
    uint16_t ports[2] = {8001, 8002};
    bench_gateway_yaml(&b, "127.0.0.1:8080", "127.0.0.1:9090", "p2c", 42, "inferrail/sim-8b", ports,
                       2, NULL, NULL, 1, false);
    assert_non_null(strstr(b.data, "default_policy: p2c"));
    assert_non_null(strstr(b.data, "load: {scrape_interval: 100ms, max_age: 250ms}"));
    assert_non_null(strstr(b.data, "{id: sim-2, url: \"http://127.0.0.1:8002\""));
    assert_non_null(strstr(b.data, "tokenizer: \"builtin:sim\""));
    assert_non_null(strstr(b.data, "prefill_token_us: 100,"));
    assert_non_null(strstr(b.data, "kv_capacity_blocks: 4096}"));
    assert_null(strstr(b.data, "kv_events"));
    ir_buf_free(&b);
    /* The simulators' flags (after --speedup) shape the index and the cost model. */
    ir_buf_init(&b, 0);
    bench_gateway_yaml(&b, "127.0.0.1:8080", "127.0.0.1:9090", "cost_model", 1, "m", ports, 2,
                       "--num-gpu-blocks-override 900 --prefill-token-us 10 --block-size=32 "
                       "--prefill-pair-ns 0.33 --prefill-fixed-ms 0.5 --decode-token-ms 2 "
                       "--cpu-transfer-token-us 0.5",
                       NULL, 4, true);
    /* At K = 4 the load scrape runs 4 times as often; 10 ms is the config's floor. */
    assert_non_null(strstr(b.data, "load: {scrape_interval: 25ms, max_age: 63ms}"));
    assert_non_null(strstr(b.data, "prefill_token_us: 10, prefill_pair_ns: 0.33, "
                                   "prefill_fixed_ms: 0.5, decode_token_ms: 2, "
                                   "cpu_transfer_token_us: 0.5}"));
    assert_non_null(strstr(b.data, "index: {block_size: 32, eviction_lookahead: false}"));
    assert_non_null(strstr(b.data, "kv_capacity_blocks: 900}"));
    ir_buf_free(&b);
    /* With KV events, each replica follows its simulator's ports. */
    ir_buf_init(&b, 0);
    const uint16_t ev[2][2] = {{15001, 15002}, {15003, 15004}};
    bench_gateway_yaml(&b, "127.0.0.1:8080", "127.0.0.1:9090", "cost_model", 1, "m", ports, 2, NULL,
                       ev, 30, false);
    assert_non_null(strstr(b.data, "load: {scrape_interval: 10ms, max_age: 10ms}"));
    assert_non_null(strstr(b.data, "index: {block_size: 16}\n"));
    assert_non_null(strstr(b.data, "kv_capacity_blocks: 4096, kv_events: {endpoint: "
                                   "\"tcp://127.0.0.1:15003\", replay_endpoint: "
                                   "\"tcp://127.0.0.1:15004\"}}"));
    ir_buf_free(&b);
}

/* Two base URLs (two gateways in front of the same engines): alternate sends request
 * i to URL i mod 2, so a chat's turns land on both; session keeps a chat on one. The
 * servers' own counts, each record's gateway and the per-gateway hit rates (the two
 * servers report different cached tokens) must all agree. */
static json_t *run_two(tsrv *a, tsrv *b, bench_workload *w, bench_spread spread) {
    char ua[64], ub[64];
    snprintf(ua, sizeof ua, "http://127.0.0.1:%d", a->port);
    snprintf(ub, sizeof ub, "http://127.0.0.1:%d/v1", b->port);
    const char *urls[2] = {ua, ub};
    bench_run_cfg c = {.base_urls = urls,
                       .n_base = 2,
                       .spread = spread,
                       .wl = w,
                       .rate = 1,
                       .slo_ttft_ms = 2000,
                       .slo_tpot_ms = 100,
                       .timeout_s = 30};
    char err[256] = "";
    json_t *doc = bench_run(&c, err, sizeof err);
    assert_non_null(doc);
    json_t *cfg = json_object_get(doc, "config");
    assert_int_equal(json_integer_value(json_object_get(cfg, "gateways")), 2);
    assert_string_equal(json_string_value(json_object_get(cfg, "spread")),
                        bench_spread_name(spread));
    assert_int_equal(json_array_size(json_object_get(cfg, "base_urls")), 2);
    return doc;
}

/* Per gateway: requests in the records, and whether some session used both. */
static bool sessions_cross(json_t *doc, size_t per[2]) {
    json_t *rs = json_object_get(doc, "requests"), *r;
    size_t i, n = json_array_size(rs);
    bool cross = false;
    per[0] = per[1] = 0;
    json_array_foreach(rs, i, r) {
        json_int_t g = json_integer_value(json_object_get(r, "gateway"));
        assert_true(g == 0 || g == 1);
        per[g]++;
        json_int_t sess = json_integer_value(json_object_get(r, "session"));
        for (size_t j = 0; j < n; j++) {
            json_t *o = json_array_get(rs, j);
            if (json_integer_value(json_object_get(o, "session")) == sess &&
                json_integer_value(json_object_get(o, "gateway")) != g)
                cross = true;
        }
    }
    return cross;
}

static void test_two_gateways(void **st) {
    json_t *p = json_object();
    bench_param_parse(p, "think_min_s=0.05");
    bench_param_parse(p, "think_max_s=0.05");
    bench_param_parse(p, "user_max=60");
    bench_workload w;
    char err[256] = "";
    bench_wl_opts o = {.name = "w2", .rate = 100, .n = 60, .seed = 3, .params = p};
    assert_int_equal(bench_workload_build(&o, &w, err, sizeof err), 0);
    assert_int_equal(bench_spread_pick(BENCH_SPREAD_ALTERNATE, 5, 2, 1), 0);
    assert_int_equal(bench_spread_pick(BENCH_SPREAD_ALTERNATE, 5, 2, 3), 2);
    assert_int_equal(bench_spread_pick(BENCH_SPREAD_SESSION, 5, 7, 3), 1);
    bench_spread sp;
    assert_int_equal(bench_spread_parse("session", &sp), 0);
    assert_int_equal(sp, BENCH_SPREAD_SESSION);
    assert_int_equal(bench_spread_parse("random", &sp), -1);
    for (int mode = 0; mode < 2; mode++) {
        tsrv *a = srv_start(SRV_FAST), *b = srv_start(SRV_FAST);
        b->cached = 64;
        bench_spread spread = mode ? BENCH_SPREAD_SESSION : BENCH_SPREAD_ALTERNATE;
        json_t *doc = run_two(a, b, &w, spread);
        int served[2];
        srv_stop_count(a, &served[0]);
        srv_stop_count(b, &served[1]);
        assert_int_equal(S(doc, "errors", NULL), 0);
        size_t per[2];
        bool cross = sessions_cross(doc, per);
        assert_int_equal(per[0], served[0]); /* what each server saw is what was recorded */
        assert_int_equal(per[1], served[1]);
        assert_true(per[0] > 5 && per[1] > 5);
        if (mode == 0) {
            size_t i;
            json_t *r;
            json_array_foreach(json_object_get(doc, "requests"), i, r)
                assert_int_equal(json_integer_value(json_object_get(r, "gateway")),
                                 json_integer_value(json_object_get(r, "i")) % 2);
            assert_true(cross); /* some chat's turns went to both gateways */
        } else {
            assert_false(cross);
        }
        json_t *pg = json_object_get(json_object_get(doc, "summary"), "per_gateway");
        assert_int_equal(json_array_size(pg), 2);
        for (size_t g = 0; g < 2; g++) {
            json_t *x = json_array_get(pg, g);
            assert_int_equal(json_integer_value(json_object_get(x, "requests")), per[g]);
            assert_true(
                fabs(json_number_value(json_object_get(x, "hit_rate")) - (g ? 0.64 : 0.32)) < 1e-9);
        }
        assert_true(fabs(S(doc, "hit_rate", NULL) -
                         (0.32 * (double)per[0] + 0.64 * (double)per[1]) / 60.0) < 1e-3);
        json_decref(doc);
    }
    bench_workload_free(&w);
    json_decref(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poisson),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_sessions_grow),
        cmocka_unit_test(test_known_timing),
        cmocka_unit_test(test_coordinated_omission),
        cmocka_unit_test(test_blocked_loop),
        cmocka_unit_test(test_actions),
        cmocka_unit_test(test_direct_client),
        cmocka_unit_test(test_prediction_arithmetic),
        cmocka_unit_test(test_summary_arithmetic),
        cmocka_unit_test(test_gateway_yaml),
        cmocka_unit_test(test_two_gateways),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
