/* Property: any page the registry writes parses back, with src/load's reader, to
 * the same samples: names, every label value (escapes and all) and every value
 * bit for bit, in the order written. Random families, label values drawn from an
 * alphabet of the characters that need escaping, random records, both formats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "load/ir_load.h"
#include "obs/ir_obs.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static unsigned pick(unsigned n) {
    return (unsigned)(next() % n);
}

#define MAXF 5
#define MAXS 5
#define MAXL 3

typedef struct want {
    char name[64];
    char labels[MAXL + 1][2][64]; /* name, value */
    size_t nlabels;
    double value;
} want;

#define MAXW (MAXF * MAXS * (IRO_MAX_BUCKETS + 3))
static want wants[MAXW];
static size_t nwants, got;

static void random_value(char *out, size_t cap) {
    static const char alpha[] = "ab\"\\\n,={} \t#x\xc3\xa9"; /* é as its two bytes */
    size_t n = pick(12);
    size_t k = 0;
    for (size_t i = 0; i < n && k + 2 < cap; i++) {
        size_t c = pick(sizeof alpha - 1);
        if ((unsigned char)alpha[c] >= 0x80) { /* keep the two bytes together */
            out[k++] = '\xc3';
            out[k++] = '\xa9';
        } else {
            out[k++] = alpha[c];
        }
    }
    out[k] = '\0';
}

static double random_gauge(void) {
    static const double special[] = {0, -1, 1e300, -1e-300, 0.1, 1e15, 123456789.125, INFINITY};
    if (pick(3) == 0) return special[pick(IR_ARRAY_LEN(special))];
    return ((double)(int64_t)next()) / (double)(1 + pick(1000000));
}

static void expect(const char *name, const char *suffix, char (*lv)[2][64], size_t nl,
                   const char *le, double v) {
    want *w = &wants[nwants++];
    snprintf(w->name, sizeof w->name, "%s%s", name, suffix);
    memcpy(w->labels, lv, nl * sizeof *lv);
    w->nlabels = nl;
    if (le) {
        snprintf(w->labels[nl][0], 64, "le");
        snprintf(w->labels[nl][1], 64, "%s", le);
        w->nlabels++;
    }
    w->value = v;
}

static int check(void *ud, const irl_sample *s) {
    assert_true(got < nwants);
    const want *w = &wants[got++];
    assert_int_equal(s->name_len, strlen(w->name));
    assert_memory_equal(s->name, w->name, s->name_len);
    size_t eq = 0; /* labels on the line: count the '=' outside quotes */
    bool q = false;
    for (size_t i = 0; i < s->labels_len; i++) {
        char c = s->labels[i];
        if (q && c == '\\')
            i++;
        else if (c == '"')
            q = !q;
        else if (!q && c == '=')
            eq++;
    }
    assert_int_equal(eq, w->nlabels);
    for (size_t i = 0; i < w->nlabels; i++) {
        char v[128];
        assert_true(irl_prom_label(s, w->labels[i][0], v, sizeof v));
        assert_string_equal(v, w->labels[i][1]);
    }
    if (isnan(w->value))
        assert_true(isnan(s->value));
    else if (s->value != w->value)
        fail_msg("%s: read %.17g, wrote %.17g", w->name, s->value, w->value);
    return 0;
}

static void one_page(iro_format fmt) {
    iro_registry *r = iro_registry_new(fmt);
    nwants = got = 0;
    size_t nf = 1 + pick(MAXF);
    for (size_t fi = 0; fi < nf; fi++) {
        char name[48];
        snprintf(name, sizeof name, "%sf%zu_%u", pick(2) ? "ns:" : "", fi, pick(1000));
        static const char *pool[] = {"model", "replica", "status", "policy", "x_y"};
        const char *labels[MAXL + 1] = {0};
        size_t nl = pick(MAXL + 1);
        for (size_t i = 0; i < nl; i++) labels[i] = pool[(fi + i) % IR_ARRAY_LEN(pool)];
        int type = (int)pick(3);
        double bounds[IRO_MAX_BUCKETS];
        size_t nb = 1 + pick(12);
        double b = (pick(2) ? 1e-4 : 1) * (1 + pick(5));
        for (size_t i = 0; i < nb; i++) bounds[i] = b, b = b * (1.5 + pick(3)) + pick(2) * 0.1;
        iro_family *f = type == 0   ? iro_counter(r, name, "help \\ with\nnewline", labels)
                        : type == 1 ? iro_gauge(r, name, "g", labels)
                                    : iro_histogram(r, name, "h", labels, bounds, nb);
        assert_non_null(f);
        size_t ns = nl ? 1 + pick(MAXS) : 1; /* no labels: one series */
        for (size_t si = 0; si < ns; si++) {
            char lv[MAXL + 1][2][64];
            const char *vals[MAXL + 1];
            for (size_t i = 0; i < nl; i++) {
                snprintf(lv[i][0], 64, "%s", labels[i]);
                random_value(lv[i][1], 40);
                if (i == 0) /* distinct */
                    snprintf(lv[i][1] + strlen(lv[i][1]), 8, "%u", (unsigned)(si & 63));
                vals[i] = lv[i][1];
            }
            iro_series *s = iro_series_get(f, vals);
            assert_non_null(s);
            if (type == 0) {
                uint64_t n = 0;
                double d = 0;
                for (unsigned k = pick(5); k > 0; k--) {
                    uint64_t by = next() % 1000000;
                    iro_inc(s, by);
                    n += by;
                }
                if (pick(2)) {
                    iro_add(s, 0.25);
                    d += 0.25;
                }
                expect(name, "", lv, nl, NULL, (double)n + d);
            } else if (type == 1) {
                double v = random_gauge();
                iro_set(s, v);
                expect(name, "", lv, nl, NULL, v);
            } else {
                uint64_t counts[IRO_MAX_BUCKETS + 1] = {0};
                double sum = 0;
                for (unsigned k = pick(40); k > 0; k--) {
                    double v = bounds[pick((unsigned)nb)] * (pick(2) ? 1 : 1.3) + pick(2) * 1e9;
                    iro_observe(s, v);
                    sum += v;
                    size_t bi = 0;
                    while (bi < nb && v > bounds[bi]) bi++;
                    counts[bi]++;
                }
                uint64_t cum = 0;
                char le[64];
                for (size_t bi = 0; bi <= nb; bi++) {
                    cum += counts[bi];
                    if (bi < nb)
                        iro_format_value(bounds[bi], IRO_FMT_PYTHON, le, sizeof le);
                    else
                        snprintf(le, sizeof le, "+Inf");
                    expect(name, "_bucket", lv, nl, le, (double)cum);
                }
                expect(name, "_count", lv, nl, NULL, (double)cum);
                expect(name, "_sum", lv, nl, NULL, sum);
            }
        }
    }
    ir_buf o;
    ir_buf_init(&o, 0);
    assert_int_equal(iro_write(r, &o), 0);
    size_t bad = 99;
    irl_prom_parse(o.data, o.len, check, NULL, &bad);
    assert_int_equal(bad, 0);
    assert_int_equal(got, nwants);
    ir_buf_free(&o);
    iro_registry_free(r);
}

static void test_roundtrip(void **st) {
    for (int i = 0; i < 400; i++) one_page(i % 2 ? IRO_FMT_PYTHON : IRO_FMT_PLAIN);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_roundtrip)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
