/* The scraper against a server in this process whose paths misbehave as
 * engines do: a good page, garbage, a 503, a page that never comes, a page
 * that never ends, one that announces 64 MiB, and a port that refuses. Each gets its own outcome,
 * the good one is read every round and never fails whatever the others do, and a stop in the middle
 * of it all leaves nothing behind (ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <uv.h>

#include "load/ir_load.h"

/* ---- the misbehaving server ---------------------------------------------------------- */

static const char good_page[] = "# TYPE vllm:num_requests_running gauge\n"
                                "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
                                "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1.0\n"
                                "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n";

/* An engine with two data-parallel ranks (vLLM's `engine` label). */
static const char dp_page[] = "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
                              "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1.0\n"
                              "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.25\n"
                              "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 5.0\n"
                              "vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 2.0\n"
                              "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0.5\n";
static _Atomic uint64_t dp_requests;

typedef struct server {
    uv_loop_t loop;
    uv_async_t stop;
    irn_server *srv;
    uv_thread_t thread;
    uv_sem_t ready;
    int port;
} server;

static char chunk[64 * 1024];

static void end_on_abort(irn_resp *resp, void *ud) {
    irn_resp_end(resp);
}

static void pour(irn_resp *resp, void *ud) {
    while (!irn_resp_aborted(resp)) {
        int64_t q = irn_resp_write(resp, chunk, sizeof chunk);
        if (q < 0 || q >= 256 * 1024) return; /* on_drain comes back here */
    }
}

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    const char *p = req->path;
    if (strcmp(p, "/good/metrics") == 0) {
        irn_resp_send(resp, 200, "text/plain", good_page, sizeof good_page - 1, NULL, 0);
    } else if (strcmp(p, "/dp/metrics") == 0) {
        atomic_fetch_add(&dp_requests, 1);
        irn_resp_send(resp, 200, "text/plain", dp_page, sizeof dp_page - 1, NULL, 0);
    } else if (strcmp(p, "/garbage/metrics") == 0) {
        irn_resp_send(resp, 200, "text/plain", "\x01\x02{{{ not metrics\n", 18, NULL, 0);
    } else if (strcmp(p, "/status/metrics") == 0) {
        irn_resp_send(resp, 503, "text/plain", "busy", 4, NULL, 0);
    } else if (strcmp(p, "/hang/metrics") == 0) {
        irn_resp_on_abort(resp, end_on_abort, NULL); /* never answered */
    } else if (strcmp(p, "/huge/metrics") == 0) {
        /* Announces 64 MiB, sends a little, then waits: the head alone is enough. */
        irn_resp_on_abort(resp, end_on_abort, NULL);
        irn_resp_start(resp, 200, NULL, 0, 64 << 20);
        irn_resp_write(resp, chunk, 1024);
    } else if (strcmp(p, "/endless/metrics") == 0) {
        irn_resp_on_abort(resp, end_on_abort, NULL);
        irn_resp_on_drain(resp, pour, NULL);
        irn_resp_start(resp, 200, NULL, 0, -1);
        pour(resp, NULL);
    } else {
        irn_resp_send(resp, 404, NULL, "", 0, NULL, 0);
    }
}

static void on_stop(uv_async_t *a) {
    server *s = a->data;
    irn_server_close(s->srv, NULL, NULL);
    irn_server_close_all(s->srv);
    uv_close((uv_handle_t *)&s->stop, NULL);
}

static void serve(void *arg) {
    server *s = arg;
    uv_sem_post(&s->ready);
    uv_run(&s->loop, UV_RUN_DEFAULT);
}

static void server_start(server *s) {
    memset(chunk, 'x', sizeof chunk);
    assert_int_equal(uv_loop_init(&s->loop), 0);
    irn_server_cfg c;
    irn_server_cfg_init(&c);
    c.host = "127.0.0.1";
    c.port = 0; /* in this process only: the scraper is told the bound port */
    c.on_request = on_request;
    c.header_timeout_ns = 60ull * 1000000000ull;
    assert_int_equal(irn_server_new(&s->loop, &c, &s->srv), 0);
    s->port = irn_server_port(s->srv);
    uv_async_init(&s->loop, &s->stop, on_stop);
    s->stop.data = s;
    uv_sem_init(&s->ready, 0);
    assert_int_equal(uv_thread_create(&s->thread, serve, s), 0);
    uv_sem_wait(&s->ready);
}

static void server_stop(server *s) {
    uv_async_send(&s->stop);
    uv_thread_join(&s->thread);
    uv_loop_close(&s->loop);
    uv_sem_destroy(&s->ready);
}

/* ---- the scraper's view ------------------------------------------------------------------ */

enum { GOOD, GARBAGE, STATUS, HANG, ENDLESS, HUGE, REFUSED, NT };

typedef struct seen {
    _Atomic uint64_t results[NT][IRL_SCRAPE_RESULTS];
    _Atomic int bad_report; /* a report that is not the good page's */
    _Atomic uint64_t no_head;
} seen;

static void on_report(void *ud, size_t i, uint64_t tag, irl_result res, const irl_report *r,
                      uint64_t at) {
    seen *s = ud;
    if (tag != 0) atomic_store(&s->bad_report, 1);
    atomic_fetch_add(&s->results[i][res], 1);
    if (res == IRL_SCRAPE_OK) {
        if (i != GOOD || r->running != 3 || r->waiting != 1 || r->kv_usage != 0.25)
            atomic_store(&s->bad_report, 1);
        if (at == 0) atomic_fetch_add(&s->no_head, 1);
    } else if (r) {
        atomic_store(&s->bad_report, 1);
    }
}

static uint64_t got(seen *s, int i, irl_result r) {
    return atomic_load(&s->results[i][r]);
}

static bool enough(seen *s) {
    return got(s, GOOD, IRL_SCRAPE_OK) >= 20 && got(s, GARBAGE, IRL_SCRAPE_UNREADABLE) >= 2 &&
           got(s, STATUS, IRL_SCRAPE_STATUS) >= 2 && got(s, HANG, IRL_SCRAPE_TIMEOUT) >= 2 &&
           got(s, ENDLESS, IRL_SCRAPE_TOO_LARGE) >= 2 && got(s, HUGE, IRL_SCRAPE_TOO_LARGE) >= 2 &&
           got(s, REFUSED, IRL_SCRAPE_ERROR) >= 2;
}

static void misbehaving_engines(void **st) {
    server srv;
    server_start(&srv);
    const char *paths[NT] = {"/good/metrics",
                             "/garbage/metrics",
                             "/status/metrics",
                             "/hang/metrics",
                             "/endless/metrics",
                             "/huge/metrics",
                             "/x"};
    irl_target t[NT];
    for (int i = 0; i < NT; i++)
        t[i] = (irl_target){
            .id = paths[i], .host = "127.0.0.1", .port = (uint16_t)srv.port, .path = paths[i]};
    t[REFUSED].port = 1; /* nothing listens on a privileged port here: refused */
    seen s;
    memset(&s, 0, sizeof s);
    /* A generous timeout: the good page must never miss it on a loaded machine,
     * the hung one always does. */
    irl_scraper_cfg c = {.interval_ns = 20 * 1000000ull,
                         .timeout_ns = 1500 * 1000000ull,
                         .max_page = 256 * 1024,
                         .on_report = on_report,
                         .ud = &s};
    irl_scraper *sc = irl_scraper_new(&c, t, NT, NT);
    assert_non_null(sc);
    assert_int_equal(irl_scraper_start(sc), 0);
    for (int k = 0; k < 3000 && !enough(&s); k++) uv_sleep(10);
    irl_scrape_stats good, hang;
    irl_scraper_stats(sc, GOOD, &good);
    irl_scraper_stats(sc, HANG, &hang);
    irl_scraper_stop(sc); /* with the hung and endless scrapes in flight */
    assert_true(enough(&s));
    for (int r = 1; r < IRL_SCRAPE_RESULTS; r++) assert_int_equal(got(&s, GOOD, r), 0);
    assert_int_equal(atomic_load(&s.bad_report), 0);
    assert_int_equal(atomic_load(&s.no_head), 0);
    assert_true(good.answering);
    assert_true(good.results[IRL_SCRAPE_OK] >= 20);
    assert_false(hang.answering);
    /* One scrape in flight per target: the hung page, timed out at 1.5 s, was
     * scraped far fewer times than the good one. */
    assert_true(got(&s, HANG, IRL_SCRAPE_TIMEOUT) * 5 < got(&s, GOOD, IRL_SCRAPE_OK));
    /* A page past the cap is asked again every IRL_TOO_LARGE_ROUNDS rounds only. */
    assert_true(got(&s, ENDLESS, IRL_SCRAPE_TOO_LARGE) * 5 < got(&s, GOOD, IRL_SCRAPE_OK));
    assert_true(got(&s, HUGE, IRL_SCRAPE_TOO_LARGE) * 5 < got(&s, GOOD, IRL_SCRAPE_OK));
    uint64_t before = got(&s, GOOD, IRL_SCRAPE_OK);
    uv_sleep(100);
    assert_int_equal(got(&s, GOOD, IRL_SCRAPE_OK), before); /* nothing after stop */
    irl_scraper_free(sc);
    server_stop(&srv);
}

/* ---- targets that come and go ------------------------------------------------------------ */

enum { SLOTS = 3, TAGS = 8 };
typedef struct tally {
    _Atomic uint64_t n[SLOTS][TAGS];  /* reports by slot and tag */
    _Atomic uint64_t ok[SLOTS][TAGS]; /* of those, readable pages */
} tally;

static void count(void *ud, size_t i, uint64_t tag, irl_result res, const irl_report *r,
                  uint64_t at) {
    (void)r;
    (void)at;
    tally *y = ud;
    if (i >= SLOTS || tag >= TAGS) return;
    atomic_fetch_add(&y->n[i][tag], 1);
    if (res == IRL_SCRAPE_OK) atomic_fetch_add(&y->ok[i][tag], 1);
}

static bool wait_ok(tally *y, size_t i, uint64_t tag, uint64_t want) {
    for (int k = 0; k < 3000; k++) {
        if (atomic_load(&y->ok[i][tag]) >= want) return true;
        uv_sleep(10);
    }
    return false;
}

static irl_target at(server *srv, const char *path, uint64_t tag) {
    return (irl_target){
        .id = path, .host = "127.0.0.1", .port = (uint16_t)srv->port, .path = path, .tag = tag};
}

static void targets_follow_membership(void **st) {
    server srv;
    server_start(&srv);
    tally y;
    memset(&y, 0, sizeof y);
    /* The hung page's timeout is far longer than the test waits for a change. */
    irl_scraper_cfg c = {.interval_ns = 20 * 1000000ull,
                         .timeout_ns = 30000 * 1000000ull,
                         .on_report = count,
                         .ud = &y};
    irl_target first = at(&srv, "/good/metrics", 1);
    irl_scraper *sc = irl_scraper_new(&c, &first, 1, SLOTS);
    assert_non_null(sc);
    assert_int_equal(irl_scraper_targets(sc), 1);
    assert_int_equal(irl_scraper_set(sc, SLOTS, &first), -1);
    assert_int_equal(irl_scraper_start(sc), 0);
    assert_true(wait_ok(&y, 0, 1, 3));
    /* A target that joins later is scraped. */
    irl_target late = at(&srv, "/good/metrics", 5);
    assert_int_equal(irl_scraper_set(sc, 1, &late), 0);
    assert_true(wait_ok(&y, 1, 5, 3));
    /* A hung target, replaced while its scrape hangs: the new one is scraped long
     * before the old one's timeout, and the old one never reports. */
    irl_target hung = at(&srv, "/hang/metrics", 2);
    assert_int_equal(irl_scraper_set(sc, 2, &hung), 0);
    uv_sleep(200); /* its first scrape is in flight by now */
    assert_int_equal(irl_scraper_targets(sc), 3);
    irl_target next = at(&srv, "/good/metrics", 3);
    assert_int_equal(irl_scraper_set(sc, 2, &next), 0);
    assert_true(wait_ok(&y, 2, 3, 3));
    assert_int_equal(atomic_load(&y.n[2][2]), 0);
    irl_scrape_stats stats;
    irl_scraper_stats(sc, 2, &stats);
    assert_int_equal(stats.results[IRL_SCRAPE_TIMEOUT], 0); /* counts restart per target */
    assert_true(stats.results[IRL_SCRAPE_OK] >= 3);
    /* A removed target is no longer scraped. */
    assert_int_equal(irl_scraper_set(sc, 0, NULL), 0);
    for (int k = 0; k < 3000 && irl_scraper_targets(sc) != 2; k++) uv_sleep(10);
    assert_int_equal(irl_scraper_targets(sc), 2);
    uv_sleep(100); /* a scrape in flight when it was removed may still end */
    uint64_t gone = atomic_load(&y.n[0][1]);
    uint64_t other = atomic_load(&y.ok[1][5]);
    assert_true(wait_ok(&y, 1, 5, other + 5));
    assert_int_equal(atomic_load(&y.n[0][1]), gone);
    irl_scraper_stop(sc);
    /* Changes while stopped apply at once. */
    assert_int_equal(irl_scraper_set(sc, 0, &first), 0);
    assert_int_equal(irl_scraper_targets(sc), 3);
    irl_scraper_free(sc);
    server_stop(&srv);
}

/* Three ranked targets on one engine's page (ranks 0, 1 and a rank 2 it lacks)
 * and one for the whole engine: the ranks share one scrape a round, each gets its
 * own numbers (or its own "no_rank"), and the whole-engine target scrapes on
 * its own. When the leader leaves, the next rank takes over the scrape. */
typedef struct dp_seen {
    _Atomic uint64_t ok[4], no_rank[4];
    _Atomic int wrong; /* a report with another rank's numbers */
} dp_seen;

static void dp_count(void *ud, size_t i, uint64_t tag, irl_result res, const irl_report *r,
                     uint64_t at) {
    (void)at;
    dp_seen *y = ud;
    if (i >= 4) return;
    if (res == IRL_SCRAPE_NO_RANK) atomic_fetch_add(&y->no_rank[i], 1);
    if (res != IRL_SCRAPE_OK) return;
    atomic_fetch_add(&y->ok[i], 1);
    double want[4] = {3, 5, -1, 8}; /* slot 3: the whole engine, both ranks summed */
    if (r->running != want[i] || tag != i) atomic_store(&y->wrong, 1);
}

static bool dp_wait(dp_seen *y, size_t i, uint64_t want) {
    for (int k = 0; k < 3000; k++) {
        if (atomic_load(&y->ok[i]) >= want) return true;
        uv_sleep(10);
    }
    return false;
}

static void ranks_share_a_scrape(void **st) {
    server srv;
    server_start(&srv);
    dp_seen y;
    memset(&y, 0, sizeof y);
    irl_scraper_cfg c = {.interval_ns = 20 * 1000000ull,
                         .timeout_ns = 2000 * 1000000ull,
                         .on_report = dp_count,
                         .ud = &y};
    irl_target t[4];
    for (uint32_t i = 0; i < 4; i++)
        t[i] = (irl_target){.id = "dp",
                            .host = "127.0.0.1",
                            .port = (uint16_t)srv.port,
                            .path = "/dp/metrics",
                            .tag = i,
                            .ranked = i < 3,
                            .rank = i};
    irl_scraper *sc = irl_scraper_new(&c, t, 4, 4);
    assert_non_null(sc);
    assert_int_equal(irl_scraper_start(sc), 0);
    assert_true(dp_wait(&y, 0, 10) && dp_wait(&y, 1, 10) && dp_wait(&y, 3, 10));
    irl_scraper_stop(sc);
    uint64_t rounds = atomic_load(&y.ok[0]), whole = atomic_load(&y.ok[3]);
    assert_int_equal(atomic_load(&y.wrong), 0);
    assert_true(atomic_load(&y.no_rank[2]) >= rounds - 1);
    /* One scrape for the three ranks and one for the whole engine, a round (two
     * rounds of slack for a stop in between); 4 a round without the sharing. */
    assert_true(atomic_load(&dp_requests) <= rounds + whole + 2);
    /* The leader leaves: rank 1 leads, and is still read right. */
    assert_int_equal(irl_scraper_set(sc, 0, NULL), 0);
    uint64_t before = atomic_load(&y.ok[1]);
    assert_int_equal(irl_scraper_start(sc), 0);
    assert_true(dp_wait(&y, 1, before + 10));
    assert_int_equal(atomic_load(&y.wrong), 0);
    irl_scraper_free(sc);
    server_stop(&srv);
    (void)st;
}

static void names_and_idle(void **st) {
    assert_string_equal(irl_result_name(IRL_SCRAPE_OK), "ok");
    assert_string_equal(irl_result_name(IRL_SCRAPE_TOO_LARGE), "too_large");
    assert_string_equal(irl_result_name(IRL_SCRAPE_UNREADABLE), "unreadable");
    assert_string_equal(irl_result_name(IRL_SCRAPE_RESULTS), "unknown");
    /* No targets: starts and stops; stop twice and free without start are fine. */
    irl_scraper_cfg c = {0};
    irl_scraper *sc = irl_scraper_new(&c, NULL, 0, 0);
    assert_non_null(sc);
    assert_int_equal(irl_scraper_start(sc), 0);
    irl_scraper_stop(sc);
    irl_scraper_stop(sc);
    irl_scraper_free(sc);
    irl_scraper_free(irl_scraper_new(&c, NULL, 0, 0));
    irl_scraper_free(NULL);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN); /* the endless page writes to scrapes the scraper cut */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_idle),
        cmocka_unit_test(targets_follow_membership),
        cmocka_unit_test(ranks_share_a_scrape),
        cmocka_unit_test(misbehaving_engines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
