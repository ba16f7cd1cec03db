/* The metrics registry: families, series, recording from threads, removal and
 * revival, the text page's exact form, escapes, caps and bad names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "obs/ir_obs.h"

static char *page(iro_registry *r, ir_buf *b) {
    ir_buf_reset(b);
    assert_int_equal(iro_write(r, b), 0);
    return b->len ? b->data : "";
}

static void test_counter_gauge_page(void **st) {
    iro_registry *r = iro_registry_new(IRO_FMT_PLAIN);
    const char *lab[] = {"model", "status", NULL};
    iro_family *c = iro_counter(r, "x_requests_total", "Requests.\nTwo \\ lines.", lab);
    iro_family *g = iro_gauge(r, "x_in_flight", "In flight.", NULL);
    assert_non_null(c);
    assert_non_null(g);
    iro_series *a = iro_series_of(c, "m\"1", "2xx");
    iro_series *b = iro_series_of(c, "m\n2\\", "5xx");
    assert_ptr_equal(a, iro_series_of(c, "m\"1", "2xx"));
    iro_inc(a, 3);
    iro_add(b, 0.5);
    iro_series *gs = iro_series_get(g, NULL);
    iro_set(gs, 7);
    iro_add(gs, -2.25);
    ir_buf o;
    ir_buf_init(&o, 0);
    assert_string_equal(page(r, &o), "# HELP x_requests_total Requests.\\nTwo \\\\ lines.\n"
                                     "# TYPE x_requests_total counter\n"
                                     "x_requests_total{model=\"m\\\"1\",status=\"2xx\"} 3\n"
                                     "x_requests_total{model=\"m\\n2\\\\\",status=\"5xx\"} 0.5\n"
                                     "# HELP x_in_flight In flight.\n"
                                     "# TYPE x_in_flight gauge\n"
                                     "x_in_flight 4.75\n");
    assert_true(iro_read(a) == 3);
    ir_buf_free(&o);
    iro_registry_free(r);
}

static void test_histogram_page(void **st) {
    iro_registry *r = iro_registry_new(IRO_FMT_PLAIN);
    const double b[] = {0.1, 1, 10};
    const char *lab[] = {"replica", NULL};
    iro_family *h = iro_histogram(r, "x_seconds", "Latency.", lab, b, 3);
    iro_series *s = iro_series_of(h, "r1");
    iro_observe(s, 0.05);
    iro_observe(s, 0.1); /* on a bound: counted in it (le) */
    iro_observe(s, 5);
    iro_observe(s, 100);
    iro_observe(s, NAN); /* ignored */
    ir_buf o;
    ir_buf_init(&o, 0);
    assert_string_equal(page(r, &o), "# HELP x_seconds Latency.\n"
                                     "# TYPE x_seconds histogram\n"
                                     "x_seconds_bucket{replica=\"r1\",le=\"0.1\"} 2\n"
                                     "x_seconds_bucket{replica=\"r1\",le=\"1.0\"} 2\n"
                                     "x_seconds_bucket{replica=\"r1\",le=\"10.0\"} 3\n"
                                     "x_seconds_bucket{replica=\"r1\",le=\"+Inf\"} 4\n"
                                     "x_seconds_count{replica=\"r1\"} 4\n"
                                     "x_seconds_sum{replica=\"r1\"} 105.15\n");
    ir_buf_free(&o);
    iro_registry_free(r);
}

static void test_bad_names(void **st) {
    iro_registry *r = iro_registry_new(IRO_FMT_PLAIN);
    const char *le[] = {"le", NULL}, *dunder[] = {"__x", NULL}, *colon[] = {"a:b", NULL};
    const double b[] = {1, 1}, inf[] = {1, INFINITY};
    assert_null(iro_counter(r, "1abc", "", NULL));
    assert_null(iro_counter(r, "a-b", "", NULL));
    assert_null(iro_counter(r, "", "", NULL));
    assert_null(iro_counter(r, "ok", "", dunder));
    assert_null(iro_counter(r, "ok", "", colon));
    assert_null(iro_histogram(r, "h", "", le, (const double[]){1}, 1));
    assert_null(iro_histogram(r, "h", "", NULL, b, 2));
    assert_null(iro_histogram(r, "h", "", NULL, inf, 2));
    assert_non_null(iro_counter(r, "ns:ok_total", "", NULL));
    /* the same name again: the same family, or NULL when it clashes */
    iro_family *f = iro_counter(r, "ns:ok_total", "", NULL);
    assert_ptr_equal(f, iro_counter(r, "ns:ok_total", "other help", NULL));
    assert_null(iro_gauge(r, "ns:ok_total", "", NULL));
    const char *one[] = {"a", NULL};
    assert_null(iro_counter(r, "ns:ok_total", "", one));
    /* a value over the cap gets no series */
    char big[IRO_MAX_VALUE + 2];
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    iro_family *g = iro_gauge(r, "g", "", one);
    assert_null(iro_series_of(g, big));
    iro_inc(NULL, 1); /* a NULL series records nothing */
    iro_registry_free(r);
}

static void test_remove_and_revive(void **st) {
    iro_registry *r = iro_registry_new(IRO_FMT_PLAIN);
    const char *lab[] = {"model", "replica", NULL}, *rl[] = {"replica", NULL};
    iro_family *c = iro_counter(r, "x_total", "X.", lab);
    iro_family *g = iro_gauge(r, "x_up", "Up.", rl);
    iro_series *a = iro_series_of(c, "m", "r1"), *b = iro_series_of(c, "m", "r2");
    iro_series *ga = iro_series_of(g, "r1");
    iro_inc(a, 5);
    iro_inc(b, 1);
    iro_set(ga, 1);
    assert_int_equal(iro_remove_label(r, "replica", "r1"), 2);
    assert_int_equal(iro_remove_label(r, "replica", "r1"), 0);
    ir_buf o;
    ir_buf_init(&o, 0);
    char *p = page(r, &o);
    assert_null(strstr(p, "r1"));
    assert_non_null(strstr(p, "x_total{model=\"m\",replica=\"r2\"} 1\n"));
    /* x_up has no live series: no HELP or TYPE either */
    assert_null(strstr(p, "x_up"));
    iro_inc(a, 1); /* a late record into a removed series is harmless and not shown */
    assert_null(strstr(page(r, &o), "r1"));
    /* the same name comes back: the same memory, from zero */
    assert_ptr_equal(iro_series_of(c, "m", "r1"), a);
    assert_non_null(strstr(page(r, &o), "x_total{model=\"m\",replica=\"r1\"} 0\n"));
    iro_series_remove(b);
    assert_null(strstr(page(r, &o), "r2"));
    ir_buf_free(&o);
    iro_registry_free(r);
}

static void test_cap(void **st) {
    iro_registry *r = iro_registry_new(IRO_FMT_PLAIN);
    const char *lab[] = {"k", NULL};
    iro_family *c = iro_counter(r, "x_total", "X.", lab);
    char v[16];
    for (int i = 0; i < 100; i++) {
        snprintf(v, sizeof v, "v%d", i);
        iro_inc(iro_series_of(c, v), 1);
    }
    ir_buf o;
    ir_buf_init(&o, 256);
    assert_int_equal(iro_write(r, &o), -1);
    ir_buf_free(&o);
    iro_registry_free(r);
}

static void test_format(void **st) {
    char s[64];
    struct {
        double v;
        iro_format f;
        const char *want;
    } cases[] = {
        {0, IRO_FMT_PLAIN, "0"},
        {12, IRO_FMT_PLAIN, "12"},
        {-3, IRO_FMT_PLAIN, "-3"},
        {0.1, IRO_FMT_PLAIN, "0.1"},
        {1e20, IRO_FMT_PLAIN, "1e+20"},
        {INFINITY, IRO_FMT_PLAIN, "+Inf"},
        {-INFINITY, IRO_FMT_PLAIN, "-Inf"},
        {NAN, IRO_FMT_PLAIN, "NaN"},
        {12, IRO_FMT_PYTHON, "12.0"},
        {0.0001, IRO_FMT_PYTHON, "0.0001"},
        {1e-05, IRO_FMT_PYTHON, "1e-05"},
        {15000000, IRO_FMT_PYTHON, "1.5e+07"},
        {123456, IRO_FMT_PYTHON, "123456.0"},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) {
        iro_format_value(cases[i].v, cases[i].f, s, sizeof s);
        assert_string_equal(s, cases[i].want);
    }
}

/* ---- threads: every record is counted, and pages stay consistent while they run */

typedef struct shared {
    iro_series *c, *h;
    _Atomic int stop;
} shared;

#define PER_THREAD 200000
#define THREADS    4

static void *recorder(void *ud) {
    shared *x = ud;
    for (int i = 0; i < PER_THREAD; i++) {
        iro_inc(x->c, 1);
        iro_observe(x->h, (double)(i % 7));
    }
    return NULL;
}

static void test_threads(void **st) {
    iro_registry *r = iro_registry_new(IRO_FMT_PLAIN);
    const double b[] = {1, 3, 5};
    shared x = {iro_series_get(iro_counter(r, "c_total", "C.", NULL), NULL),
                iro_series_get(iro_histogram(r, "h", "H.", NULL, b, 3), NULL), 0};
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, recorder, &x);
    double last = 0;
    uint64_t cum[4];
    for (int k = 0; k < 200; k++) {
        double v = iro_read(x.c);
        assert_true(v >= last);
        last = v;
        iro_read_hist(x.h, cum, 4, NULL);
        for (int i = 1; i < 4; i++) assert_true(cum[i - 1] <= cum[i]);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    assert_true(iro_read(x.c) == (double)THREADS * PER_THREAD);
    double sum;
    iro_read_hist(x.h, cum, 4, &sum);
    assert_int_equal(cum[3], THREADS * PER_THREAD);
    /* i % 7 over 0..6: 0,1 <= 1; 2,3 <= 3; 4,5 <= 5; 6 over */
    uint64_t per = PER_THREAD / 7,
             rest = PER_THREAD % 7; /* 200000 = 28571*7 + 3: 0,1,2 once more */
    assert_int_equal(cum[0], THREADS * (2 * per + 2));
    assert_int_equal(cum[1], THREADS * (4 * per + 3));
    assert_true(rest == 3);
    iro_registry_free(r);
}

static void collect(void *ud) {
    iro_set(ud, 42);
}

static void test_collect_hook(void **st) {
    iro_registry *r = iro_registry_new(IRO_FMT_PLAIN);
    iro_series *g = iro_series_get(iro_gauge(r, "g", "G.", NULL), NULL);
    assert_int_equal(iro_registry_on_collect(r, collect, g), 0);
    ir_buf o;
    ir_buf_init(&o, 0);
    assert_non_null(strstr(page(r, &o), "g 42\n"));
    ir_buf_free(&o);
    iro_registry_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_gauge_page),
        cmocka_unit_test(test_histogram_page),
        cmocka_unit_test(test_bad_names),
        cmocka_unit_test(test_remove_and_revive),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_collect_hook),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
