/* test_calibrate.c: calibrate's fit recovers a known prefill shape exactly from
 * noiseless points and within a few percent under noise, and likewise the CPU
 * tier's transfer time per token; the usage reader finds the last value of a key,
 * with or without spaces around the colon. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "bench/bench.h"

static double shape(double a, double b, double d, double u, double c) {
    return a * u + b * u * (c + u / 2) + d;
}

static void fit_recovers_the_shape(void **state) {
    const double a = 100e-6, b = 3.3e-9, d = 5e-3;
    double u[12], c[12], t[12];
    static const double us[] = {128, 512, 1024, 2048, 4096, 128, 256, 128, 1024, 2048, 1024, 3072};
    static const double cs[] = {0, 0, 0, 0, 0, 1024, 2048, 4096, 2048, 1024, 3072, 512};
    for (int i = 0; i < 12; i++) u[i] = us[i], c[i] = cs[i], t[i] = shape(a, b, d, us[i], cs[i]);
    double fa, fb, fd;
    assert_int_equal(bench_cal_fit(u, c, t, 12, &fa, &fb, &fd), 0);
    assert_true(fabs(fa - a) < 1e-9 && fabs(fb - b) < 1e-13 && fabs(fd - d) < 1e-7);
    /* +-1 ms of noise (alternating), as a loaded machine adds: still close */
    for (int i = 0; i < 12; i++) t[i] += (i % 2 ? 1e-3 : -1e-3);
    assert_int_equal(bench_cal_fit(u, c, t, 12, &fa, &fb, &fd), 0);
    assert_true(fabs(fa - a) / a < 0.05);
    assert_true(fabs(fb - b) / b < 0.15);
    assert_true(fabs(fd - d) < 1.5e-3);
    /* too few points, or points that cannot separate the terms */
    assert_int_equal(bench_cal_fit(u, c, t, 2, &fa, &fb, &fd), -1);
    double same_u[4] = {100, 100, 100, 100}, zero_c[4] = {0}, tt[4] = {1, 1, 1, 1};
    assert_int_equal(bench_cal_fit(same_u, zero_c, tt, 4, &fa, &fb, &fd), -1);
}

static double us(const char *s, const char *k) {
    return bench_cal_usage(s, strlen(s), k);
}

static void reads_usage(void **state) {
    const char *tail = "data: {\"usage\":{\"prompt_tokens\":2064,\"completion_tokens\" : 33,"
                       "\"prompt_tokens_details\":{\"cached_tokens\": 2048}}}\n\ndata: [DONE]\n\n";
    assert_int_equal((int)us(tail, "prompt_tokens"), 2064);
    assert_int_equal((int)us(tail, "completion_tokens"), 33);
    assert_int_equal((int)us(tail, "cached_tokens"), 2048);
    assert_int_equal((int)us(tail, "total_tokens"), -1);
    assert_int_equal((int)us("\"prompt_tokens\":1 \"prompt_tokens\":7", "prompt_tokens"), 7);
    assert_int_equal((int)us("\"prompt_tokens_details\":null", "prompt_tokens"), -1);
}

/* --cpu-tier: extra = rate * tokens through the origin. */
static void fit_rate_recovers_the_transfer_time(void **state) {
    double tok[3] = {512, 1024, 2048}, ex[3], r;
    for (int i = 0; i < 3; i++) ex[i] = 5e-6 * tok[i];
    assert_int_equal(bench_cal_fit_rate(tok, ex, 3, &r), 0);
    assert_true(fabs(r - 5e-6) < 1e-12);
    /* +-1 ms of noise: the longest load weighs most */
    ex[0] += 1e-3, ex[1] -= 1e-3, ex[2] += 1e-3;
    assert_int_equal(bench_cal_fit_rate(tok, ex, 3, &r), 0);
    assert_true(fabs(r - 5e-6) / 5e-6 < 0.15);
    double none[2] = {0, 0};
    assert_int_equal(bench_cal_fit_rate(none, ex, 2, &r), -1);
    assert_int_equal(bench_cal_fit_rate(tok, ex, 0, &r), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(fit_recovers_the_shape),
                                       cmocka_unit_test(reads_usage),
                                       cmocka_unit_test(fit_rate_recovers_the_transfer_time)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
