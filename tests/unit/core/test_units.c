/* Duration and size parsing, duration formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "core/ir_core.h"

static uint64_t dur(const char *s) {
    uint64_t v = 12345;
    assert_int_equal(ir_parse_duration_ns(s, &v), 0);
    return v;
}

static void durations_parse(void **state) {
    assert_int_equal(dur("0"), 0);
    assert_int_equal(dur("0s"), 0);
    assert_int_equal(dur("7ns"), 7);
    assert_int_equal(dur("100us"), 100000);
    assert_int_equal(dur("250ms"), 250000000);
    assert_int_equal(dur("2s"), 2000000000ull);
    assert_int_equal(dur("1.5s"), 1500000000ull);
    assert_int_equal(dur("0.25s"), 250000000ull);
    assert_int_equal(dur("5m"), 300000000000ull);
    assert_int_equal(dur("1h"), 3600000000000ull);
    assert_int_equal(dur("1.5h"), 5400000000000ull);
    assert_int_equal(dur("0.001ms"), 1000);
    /* Fractions below a nanosecond are cut, never rounded up. */
    assert_int_equal(dur("1.9ns"), 1);
    assert_int_equal(dur("0.0000000001h"), 360);
    assert_int_equal(dur("0.0000000000001h"), 0);
    assert_int_equal(dur("3\xc2\xb5s"), 3000);
    assert_int_equal(dur("0.1234567891234h"), 444444440844ull);
    /* The largest value that fits, and one past it. */
    assert_int_equal(dur("18446744073709551615ns"), UINT64_MAX);
}

static void durations_reject(void **state) {
    const char *bad[] = {
        "",
        "5",
        "0.0",
        "-1s",
        "+1s",
        " 1s",
        "1s ",
        "1 s",
        "1.s",
        ".5s",
        "1.5",
        "1sec",
        "1S",
        "1d",
        "1ms2",
        "1h30m",
        "abc",
        "s",
        "1e3ms",
        "0x10s",
        "1..5s",
        "18446744073709551616ns",
        "18446744073709551615s",
        "99999999999999999999h",
        "5124096h",
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(bad); i++) {
        uint64_t v = 42;
        if (ir_parse_duration_ns(bad[i], &v) != -1) fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(v, 42);
    }
    uint64_t v;
    assert_int_equal(ir_parse_duration_ns(NULL, &v), -1);
}

static uint64_t size(const char *s) {
    uint64_t v = 12345;
    assert_int_equal(ir_parse_size(s, &v), 0);
    return v;
}

static void sizes_parse(void **state) {
    assert_int_equal(size("0"), 0);
    assert_int_equal(size("1000"), 1000);
    assert_int_equal(size("17B"), 17);
    assert_int_equal(size("10KB"), 10000);
    assert_int_equal(size("2MB"), 2000000);
    assert_int_equal(size("3GB"), 3000000000ull);
    assert_int_equal(size("512KiB"), 512 * 1024);
    assert_int_equal(size("4MiB"), 4 * 1024 * 1024);
    assert_int_equal(size("1GiB"), 1024ull * 1024 * 1024);
    assert_int_equal(size("18446744073709551615"), UINT64_MAX);
}

static void sizes_reject(void **state) {
    const char *bad[] = {
        "",
        "-1",
        "1.5MiB",
        "4 MiB",
        "4mib",
        "4MIB",
        "4Mi",
        "MiB",
        "4M",
        "4KiB ",
        " 4",
        "4TB",
        "0x10",
        "1e3",
        "18446744073709551616",
        "17179869184GiB",
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(bad); i++) {
        uint64_t v = 42;
        if (ir_parse_size(bad[i], &v) != -1) fail_msg("accepted \"%s\"", bad[i]);
        assert_int_equal(v, 42);
    }
}

static void durations_format(void **state) {
    char out[32];
    const struct {
        uint64_t ns;
        const char *want;
    } cases[] = {
        {0, "0s"},
        {1, "1ns"},
        {1500, "1500ns"},
        {250000000, "250ms"},
        {1500000000, "1500ms"},
        {2000000000, "2s"},
        {90000000000ull, "90s"},
        {120000000000ull, "2m"},
        {7200000000000ull, "2h"},
        {UINT64_MAX, "18446744073709551615ns"},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(cases); i++) {
        ir_format_duration(cases[i].ns, out, sizeof out);
        assert_string_equal(out, cases[i].want);
    }
    /* A short buffer truncates and stays terminated. */
    ir_format_duration(250000000, out, 3);
    assert_string_equal(out, "25");
}

/* Formatting then parsing gives back the same value. */
static void durations_round_trip(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 7);
    for (int i = 0; i < 10000; i++) {
        uint64_t ns = ir_rng_next(&r) >> (ir_rng_below(&r, 64));
        if (i % 3 == 0) ns -= ns % 1000000; /* favour round values */
        char out[32];
        ir_format_duration(ns, out, sizeof out);
        uint64_t back;
        assert_int_equal(ir_parse_duration_ns(out, &back), 0);
        assert_int_equal(back, ns);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(durations_parse),  cmocka_unit_test(durations_reject),
        cmocka_unit_test(sizes_parse),      cmocka_unit_test(sizes_reject),
        cmocka_unit_test(durations_format), cmocka_unit_test(durations_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
