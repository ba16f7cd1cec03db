/* report.c: `inferrail-bench report DIR... --out REPORT_DIR`: a Markdown
 * report from compare and capacity results, with charts drawn by gnuplot
 * (SVG) from data files written next to them, so every chart can be
 * regenerated and checked by hand. */
#include "bench/bench.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ITEMS 256

typedef struct rep_in {
    json_t *compares[MAX_ITEMS]; /* summary.json documents */
    char *cmp_dir[MAX_ITEMS];
    size_t ncmp;
    json_t *caps[MAX_ITEMS];
    size_t ncap;
} rep_in;

static bool has_schema(json_t *d, const char *prefix) {
    const char *s = ir_json_str(d, "schema");
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Collects compare summaries and capacity results from dir and its subfolders. */
/* Keeps path when it is a compare summary or a capacity result; false otherwise. */
static bool take(rep_in *in, const char *path, const char *dir) {
    json_t *j = json_load_file(path, 0, NULL);
    if (j && has_schema(j, "inferrail-bench/compare") && in->ncmp < MAX_ITEMS) {
        in->cmp_dir[in->ncmp] = strdup(dir);
        in->compares[in->ncmp++] = j;
        return true;
    }
    if (j && has_schema(j, "inferrail-bench/capacity") && in->ncap < MAX_ITEMS) {
        in->caps[in->ncap++] = j;
        return true;
    }
    json_decref(j);
    return false;
}

static void scan(rep_in *in, const char *dir, int depth) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char *names[1024];
    size_t n = 0;
    while ((e = readdir(d)) && n < 1024)
        if (e->d_name[0] != '.') names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, (int (*)(const void *, const void *))strcmp);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (depth < 2 && strcmp(names[i], "logs") != 0) scan(in, path, depth + 1);
        } else if (strcmp(names[i], "summary.json") == 0 ||
                   (strstr(names[i], "capacity") && strstr(names[i], ".json"))) {
            take(in, path, dir);
        }
        free(names[i]);
    }
}

/* A folder is searched; a file named on the command line is read whatever its
 * name (capacity --out cap.json), and one that is not a result is an error. */
static int scan_arg(rep_in *in, const char *arg) {
    struct stat st;
    if (stat(arg, &st) != 0) {
        fprintf(stderr, "report: %s: no such file or folder\n", arg);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        scan(in, arg, 0);
        return 0;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", arg);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (take(in, arg, dir)) return 0;
    fprintf(stderr, "report: %s: not a compare summary or a capacity result\n", arg);
    return -1;
}

static double num(json_t *o, const char *a, const char *b) {
    json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static FILE *open_in(const char *dir, const char *name) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "report: cannot write %s\n", path);
    return f;
}

static const char *gp_head =
    "set terminal svg size 800,450 dynamic font 'sans,11' background '#ffffff'\n"
    "set termoption noenhanced\nset grid\nset key outside right\n";

/* TTFT CDF per policy: every measured request of every repetition. */
static void chart_cdf(const char *out, json_t *cmp, const char *dir, FILE *gp, FILE *md) {
    const char *w = ir_json_str(cmp, "chart_id");
    char dat[256];
    snprintf(dat, sizeof dat, "ttft-cdf-%s.dat", w);
    FILE *f = open_in(out, dat);
    if (!f) return;
    const char *pol;
    json_t *pv;
    size_t block = 0;
    ir_buf plot;
    ir_buf_init(&plot, 1 << 20);
    json_object_foreach(json_object_get(cmp, "policies"), pol, pv) {
        double *v = NULL;
        size_t n = 0, cap = 0, i;
        json_t *file;
        json_array_foreach(json_object_get(pv, "runs"), i, file) {
            char path[4400];
            snprintf(path, sizeof path, "%s/%s", dir, json_string_value(file));
            json_t *run = json_load_file(path, 0, NULL);
            size_t j;
            json_t *r;
            json_array_foreach(json_object_get(run, "requests"), j, r) {
                json_t *t = json_object_get(r, "ttft_ms");
                if (!json_is_number(t)) continue;
                if (n == cap) {
                    cap = cap ? cap * 2 : 1024;
                    v = realloc(v, cap * sizeof *v);
                }
                v[n++] = json_number_value(t);
            }
            json_decref(run);
        }
        if (n == 0) {
            free(v);
            continue;
        }
        qsort(v, n, sizeof *v, bench_cmp_double);
        fprintf(f, "# %s\n", pol);
        for (i = 0; i < n; i++) fprintf(f, "%.3f %.6f\n", v[i], (double)(i + 1) / (double)n);
        fprintf(f, "\n\n");
        ir_buf_appendf(&plot, "%s'%s' index %zu with steps lw 2 title '%s'", block ? ", " : "", dat,
                       block, pol);
        block++;
        free(v);
    }
    fclose(f);
    if (!block) {
        ir_buf_free(&plot);
        return;
    }
    fprintf(gp,
            "%sset output 'ttft-cdf-%s.svg'\nset title 'TTFT CDF, %s'\n"
            "set logscale x\nset xlabel 'TTFT (ms, from the scheduled time)'\n"
            "set ylabel 'share of requests'\nset yrange [0:1]\nplot %s\nunset logscale x\n"
            "set yrange [*:*]\n",
            gp_head, w, w, plot.data);
    fprintf(md, "![TTFT CDF, %s](ttft-cdf-%s.svg)\n\n", w, w);
    ir_buf_free(&plot);
}

/* Requests and in-flight requests per replica over time, from repetition 0. */
/* A compare summary's --speedup (1 for results from before it existed). */
static double speedup_of(json_t *c) {
    json_t *k = json_object_get(c, "speedup");
    return json_is_number(k) && json_number_value(k) > 0 ? json_number_value(k) : 1;
}

static void chart_replicas(const char *out, json_t *cmp, const char *dir, FILE *gp, FILE *md) {
    const char *w = ir_json_str(cmp, "chart_id");
    const char *pol;
    json_t *pv;
    json_object_foreach(json_object_get(cmp, "policies"), pol, pv) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir,
                 json_string_value(json_array_get(json_object_get(pv, "runs"), 0)));
        json_t *run = json_load_file(path, 0, NULL);
        json_t *rs = json_object_get(run, "requests");
        if (!json_array_size(rs)) {
            json_decref(run);
            continue;
        }
        char names[BENCH_MAX_REPLICAS * 2][48];
        size_t nr = 0, i, j;
        json_t *r;
        json_array_foreach(rs, i, r) {
            const char *rep = ir_json_str(r, "replica");
            if (!rep) rep = "direct";
            for (j = 0; j < nr && strcmp(names[j], rep); j++) {}
            if (j == nr && nr < IR_ARRAY_LEN(names)) snprintf(names[nr++], 48, "%s", rep);
        }
        char dat[256];
        snprintf(dat, sizeof dat, "replicas-%s-%s.dat", w, pol);
        FILE *f = open_in(out, dat);
        if (!f) {
            json_decref(run);
            continue;
        }
        ir_buf p1, p2;
        ir_buf_init(&p1, 1 << 20);
        ir_buf_init(&p2, 1 << 20);
        for (j = 0; j < nr; j++) {
            /* events: +1 at send, -1 at end, as (time, delta) pairs */
            size_t n = json_array_size(rs), m = 0;
            double(*ev)[2] = calloc(2 * n, sizeof *ev);
            json_array_foreach(rs, i, r) {
                const char *rep = ir_json_str(r, "replica");
                if (strcmp(rep ? rep : "direct", names[j])) continue;
                double s = num(r, "sched_ms", NULL) + num(r, "send_lag_ms", NULL);
                ev[m][0] = s / 1000, ev[m++][1] = 1;
                ev[m][0] = num(r, "end_ms", NULL) / 1000, ev[m++][1] = -1;
            }
            qsort(ev, m, sizeof *ev, bench_cmp_double);
            fprintf(f, "# %s: time_s in_flight requests_sent\n", names[j]);
            double in = 0, sent = 0;
            for (size_t k = 0; k < m; k++) {
                in += ev[k][1];
                sent += ev[k][1] > 0;
                fprintf(f, "%.4f %.0f %.0f\n", ev[k][0], in, sent);
            }
            fprintf(f, "\n\n");
            free(ev);
            ir_buf_appendf(&p1, "%s'%s' index %zu using 1:2 with steps lw 1.5 title '%s'",
                           j ? ", " : "", dat, j, names[j]);
            ir_buf_appendf(&p2, "%s'%s' index %zu using 1:3 with steps lw 1.5 title '%s'",
                           j ? ", " : "", dat, j, names[j]);
        }
        fclose(f);
        fprintf(gp,
                "%sset terminal svg size 800,600\nset output 'replicas-%s-%s.svg'\n"
                "set multiplot layout 2,1 title 'Per replica over time, %s, %s (repetition 0)'\n"
                "set title 'in flight'\nset xlabel ''\nset ylabel 'requests'\nplot %s\n"
                "set title 'requests sent (cumulative)'\nset xlabel 'time (s)'\nplot %s\n"
                "unset multiplot\n",
                gp_head, w, pol, w, pol, p1.data, p2.data);
        fprintf(md, "![per replica, %s, %s](replicas-%s-%s.svg)\n\n", w, pol, w, pol);
        ir_buf_free(&p1);
        ir_buf_free(&p2);
        json_decref(run);
    }
}

/* v with 3 decimals into buf (32 bytes), or "–" when not known (older results). */
static const char *opt3(double v, char *buf) {
    if (isfinite(v))
        snprintf(buf, 32, "%.3f", v);
    else
        snprintf(buf, 32, "–");
    return buf;
}

/* A clustered bar chart: rows are workloads, columns policies. */
/* mark (may be NULL): a key of each compare summary's top level (reuse_ceiling)
 * drawn as one point over each workload's cluster of bars, titled mark_title. */
static void chart_bars(const char *out, rep_in *in, const char *name, const char *title,
                       const char *ylabel, const char *a, const char *b, const char *mark,
                       const char *mark_title, FILE *gp, FILE *md) {
    char dat[128];
    snprintf(dat, sizeof dat, "%s.dat", name);
    FILE *f = open_in(out, dat);
    if (!f) return;
    const char *cols[16];
    size_t nc = 0;
    for (size_t i = 0; i < in->ncmp; i++) {
        const char *pol;
        json_t *pv;
        json_object_foreach(json_object_get(in->compares[i], "policies"), pol, pv) {
            size_t j;
            for (j = 0; j < nc && strcmp(cols[j], pol); j++) {}
            if (j == nc && nc < 16) cols[nc++] = pol;
        }
    }
    fprintf(f, "workload");
    for (size_t j = 0; j < nc; j++) fprintf(f, " %s", cols[j]);
    if (mark) fprintf(f, " %s", mark);
    fprintf(f, "\n");
    for (size_t i = 0; i < in->ncmp; i++) {
        json_t *ps = json_object_get(in->compares[i], "policies");
        fprintf(f, "%s", ir_json_str(in->compares[i], "workload"));
        for (size_t j = 0; j < nc; j++) {
            double v = num(json_object_get(ps, cols[j]), a, b);
            if (isfinite(v))
                fprintf(f, " %.4f", v);
            else
                fprintf(f, " NaN");
        }
        if (mark) {
            double m = num(in->compares[i], mark, NULL);
            fprintf(f, isfinite(m) ? " %.4f" : " NaN", m);
        }
        fprintf(f, "\n");
    }
    fclose(f);
    if (!nc) return;
    fprintf(gp,
            "%sset output '%s.svg'\nset title '%s'\nset ylabel '%s'\nset xlabel ''\n"
            "set style data histograms\nset style histogram clustered gap 1\n"
            "set style fill solid 0.8 border -1\nset yrange [0:*]\n"
            "plot for [c=2:%zu] '%s' using c:xtic(1) title columnheader(c)",
            gp_head, name, title, ylabel, nc + 1, dat);
    if (mark) /* clusters sit at x = 0, 1, ...: one marker over each */
        fprintf(gp, ", '%s' skip 1 using 0:%zu with points pt 9 ps 1.5 lc rgb 'black' title '%s'",
                dat, nc + 2, mark_title);
    fprintf(gp, "\nset style data lines\nset yrange [*:*]\n");
    fprintf(md, "![%s](%s.svg)\n\n", title, name);
}

static void chart_capacity(const char *out, rep_in *in, FILE *gp, FILE *md) {
    FILE *f = open_in(out, "capacity.dat");
    if (!f) return;
    fprintf(f, "# label capacity_rps\n");
    for (size_t i = 0; i < in->ncap; i++)
        fprintf(f, "\"%s %s\" %.4f\n",
                ir_json_str(in->caps[i], "workload") ? ir_json_str(in->caps[i], "workload") : "?",
                ir_json_str(in->caps[i], "policy") ? ir_json_str(in->caps[i], "policy") : "?",
                num(in->caps[i], "capacity_rps", NULL));
    fclose(f);
    fprintf(gp,
            "%sset output 'capacity.svg'\nset title 'Capacity: highest rate with p99 TTFT and "
            "p99 TPOT within the SLO'\nset ylabel 'requests/s'\nset xlabel ''\n"
            "set style fill solid 0.8 border -1\nset boxwidth 0.6\nset yrange [0:*]\n"
            "set xtics rotate by -30\nplot 'capacity.dat' using 0:2:xtic(1) with boxes notitle\n"
            "set xtics norotate\nset yrange [*:*]\n",
            gp_head);
    fprintf(md, "![capacity](capacity.svg)\n\n");
}

static void fmt(char *o, size_t n, double v, const char *f) {
    if (isfinite(v))
        snprintf(o, n, f, v);
    else
        snprintf(o, n, "–");
}

static void table(FILE *md, json_t *cmp) {
    fprintf(md,
            "| policy | TTFT p50 / p90 / p99 (ms) | TPOT p50 / p99 (ms) | e2e p99 (ms) | hit rate "
            "(usage / engines) | goodput | errors | requests per replica (medians by name) |\n"
            "|---|---|---|---|---|---|---|---|\n");
    const char *pol;
    json_t *p;
    json_object_foreach(json_object_get(cmp, "policies"), pol, p) {
        char a[32], b[32], c[32], d[32], e[32], g[32], h[32], i[32], k[32], l[32];
        fmt(a, 32, num(p, "ttft_ms", "p50"), "%.0f");
        fmt(b, 32, num(p, "ttft_ms", "p90"), "%.0f");
        fmt(c, 32, num(p, "ttft_ms", "p99"), "%.0f");
        fmt(d, 32, num(p, "tpot_ms", "p50"), "%.1f");
        fmt(e, 32, num(p, "tpot_ms", "p99"), "%.1f");
        fmt(g, 32, num(p, "e2e_ms", "p99"), "%.0f");
        fmt(h, 32, num(p, "hit_rate", NULL), "%.3f");
        fmt(i, 32, num(p, "engine_hit_rate", NULL), "%.3f");
        fmt(k, 32, num(p, "goodput", NULL), "%.2f");
        fmt(l, 32, num(p, "errors", NULL), "%.0f");
        fprintf(md, "| %s | %s / %s / %s | %s / %s | %s | %s / %s | %s | %s | ", pol, a, b, c, d, e,
                g, h, i, k, l);
        const char *r;
        json_t *v;
        int first = 1;
        json_object_foreach(json_object_get(p, "per_replica"), r, v) {
            fprintf(md, "%s%s %.0f", first ? "" : ", ", r, json_number_value(v));
            first = 0;
        }
        fprintf(md, " |\n");
    }
    fprintf(md, "\n");
}

static void report_usage(FILE *f) {
    fprintf(f, "Usage: inferrail-bench report DIR|FILE [...] --out REPORT_DIR [--title T]\n"
               "Reads every compare summary.json and capacity*.json under DIR (two levels),\n"
               "and each FILE named (a capacity --out file, whatever its name),\n"
               "writes REPORT_DIR/README.md, the charts' data files and gnuplot script, and\n"
               "runs gnuplot (gnuplot-nox) to draw the SVG charts.\n");
}

int bench_report_main(int argc, char **argv) {
    static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                         {"title", required_argument, 0, 't'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *out = NULL, *title = "Inferrail benchmark report";
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == 'o')
            out = optarg;
        else if (ch == 't')
            title = optarg;
        else if (ch == 'h') {
            report_usage(stdout);
            return 0;
        } else {
            report_usage(stderr);
            return 2;
        }
    }
    if (!out || optind >= argc) {
        report_usage(stderr);
        return 2;
    }
    rep_in in = {0};
    for (int i = optind; i < argc; i++)
        if (scan_arg(&in, argv[i])) return 1;
    if (!in.ncmp && !in.ncap) {
        fprintf(stderr, "report: no compare or capacity results found\n");
        return 1;
    }
    mkdir(out, 0755);
    FILE *gp = open_in(out, "charts.gp"), *md = open_in(out, "README.md");
    if (!gp || !md) return 1;
    fprintf(gp, "# Written by inferrail-bench report; run `gnuplot charts.gp` in this folder.\n");
    fprintf(md, "# %s\n\n", title);
    fprintf(md, "Generated by `inferrail-bench report`. Latencies count from each request's "
                "scheduled (open-loop) send time; figures are medians over repetitions. "
                "The hit rate is cached over prompt tokens, from usage and from the engines' "
                "counters; the ceiling is what one replica with an infinite cache would hit, "
                "the finite-cache ceiling what no routing can beat with the fleet's caches "
                "(Belady's MIN over the caches pooled; docs/bench-harness.md). Requests per "
                "replica are medians by replica name: an imbalance that falls on another replica "
                "in each repetition shows less there (bench/proof/summarize.py gives each "
                "repetition's busiest replica over the mean).\n\n");
    if (in.ncmp) {
        fprintf(md,
                "## Summary\n\n| workload | rate (req/s) | speed-up | replicas | requests × reps | "
                "reuse ceiling | finite-cache ceiling | best p99 TTFT | best hit rate |\n"
                "|---|---|---|---|---|---|---|---|---|\n");
        for (size_t i = 0; i < in.ncmp; i++) {
            json_t *c = in.compares[i];
            const char *bt = "–", *bh = "–", *pol;
            char fin[32], ceil3[32], best_t[96] = "–", best_h[96] = "–";
            double vt = INFINITY, vh = -1;
            json_t *p;
            /* Best among the policies that lost no request (median errors 0): a lower tail
             * bought with failures is no better. */
            json_object_foreach(json_object_get(c, "policies"), pol, p) {
                if (num(p, "errors", NULL) != 0) continue;
                if (num(p, "ttft_ms", "p99") < vt) vt = num(p, "ttft_ms", "p99"), bt = pol;
                if (num(p, "hit_rate", NULL) > vh) vh = num(p, "hit_rate", NULL), bh = pol;
            }
            if (isfinite(vt)) snprintf(best_t, sizeof best_t, "%s (%.0f ms)", bt, vt);
            if (vh >= 0) snprintf(best_h, sizeof best_h, "%s (%.3f)", bh, vh);
            /* Several gateways in front of the replicas: said beside their count. */
            json_int_t gws = json_integer_value(json_object_get(c, "gateways"));
            char gw[48] = "";
            if (gws > 1) snprintf(gw, sizeof gw, " (%lld gateways)", (long long)gws);
            fprintf(md, "| %s | %.3g | %g× | %lld%s | %lld × %lld | %s | %s | %s | %s |\n",
                    ir_json_str(c, "workload"), num(c, "rate", NULL), speedup_of(c),
                    json_integer_value(json_object_get(c, "replicas")), gw,
                    json_integer_value(json_object_get(c, "requests")),
                    json_integer_value(json_object_get(c, "repetitions")),
                    opt3(num(c, "reuse_ceiling", NULL), ceil3),
                    opt3(num(c, "reuse_ceiling_finite", NULL), fin), best_t, best_h);
        }
        fprintf(md, "\n");
        chart_bars(out, &in, "p99-ttft", "p99 TTFT per policy and workload", "ms", "ttft_ms", "p99",
                   NULL, NULL, gp, md);
        chart_bars(out, &in, "hit-rate", "Prefix hit rate per policy and workload (usage)",
                   "cached / prompt tokens", "hit_rate", NULL, "reuse_ceiling", "reuse ceiling", gp,
                   md);
    }
    if (in.ncap) {
        fprintf(md, "## Capacity\n\nThe highest rate (model time) at which p99 TTFT and p99 TPOT "
                    "(model time) held the SLO with no error; – when none held or a probe did "
                    "not run, ≥ when `--max-rate` stopped the search first.\n\n"
                    "| workload | policy | replicas | speed-up | SLO p99 TTFT / TPOT (ms) | "
                    "capacity (req/s) | probes |\n|---|---|---|---|---|---|---|\n");
        for (size_t i = 0; i < in.ncap; i++) {
            json_t *k = in.caps[i];
            double cap = num(k, "capacity_rps", NULL);
            char capb[48] = "–";
            if (isfinite(cap) && cap > 0)
                snprintf(capb, sizeof capb, "%s%.3g",
                         json_is_true(json_object_get(k, "at_least")) ? "≥ " : "", cap);
            fprintf(md, "| %s | %s | %lld | %g× | %.0f / %.0f | %s | %zu |\n",
                    ir_json_str(k, "workload") ? ir_json_str(k, "workload") : "?",
                    ir_json_str(k, "policy") ? ir_json_str(k, "policy") : "?",
                    json_integer_value(json_object_get(k, "replicas")), speedup_of(k),
                    num(k, "slo_ttft_ms", NULL), num(k, "slo_tpot_ms", NULL), capb,
                    json_array_size(json_object_get(k, "probes")));
        }
        fprintf(md, "\n");
        chart_capacity(out, &in, gp, md);
    }
    for (size_t i = 0; i < in.ncmp; i++) {
        json_t *c = in.compares[i];
        /* Chart names: the workload, numbered when a workload appears twice. */
        size_t dup = 0;
        for (size_t j = 0; j < i; j++)
            dup += strcmp(ir_json_str(in.compares[j], "workload"), ir_json_str(c, "workload")) == 0;
        char id[64];
        if (dup)
            snprintf(id, sizeof id, "%s-%zu", ir_json_str(c, "workload"), dup + 1);
        else
            snprintf(id, sizeof id, "%s", ir_json_str(c, "workload"));
        json_object_set_new(c, "chart_id", json_string(id));
        fprintf(md, "## %s at %.3g req/s, %lld replicas\n\n", ir_json_str(c, "workload"),
                num(c, "rate", NULL), json_integer_value(json_object_get(c, "replicas")));
        char fin[32], lru[32];
        fprintf(md,
                "Reuse ceiling %.3f; with the fleet's caches (finite-cache ceiling) %s, pooled "
                "LRU %s (a reference, not a bound). Results: `%s`.\n\n",
                num(c, "reuse_ceiling", NULL), opt3(num(c, "reuse_ceiling_finite", NULL), fin),
                opt3(num(c, "pooled_lru_hit_rate", NULL), lru), in.cmp_dir[i]);
        if (speedup_of(c) != 1)
            fprintf(md,
                    "Run at speed-up %g×: simulator latencies, arrival gaps and think times "
                    "divided by %g, so latencies here are wall-clock (multiply by %g for model "
                    "time); rates and SLOs are in model time.\n\n",
                    speedup_of(c), speedup_of(c), speedup_of(c));
        table(md, c);
        chart_cdf(out, c, in.cmp_dir[i], gp, md);
        chart_replicas(out, c, in.cmp_dir[i], gp, md);
    }
    fclose(gp);
    fclose(md);
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot charts.gp", out);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr,
                "report: gnuplot failed (%d); is gnuplot-nox installed? The data and "
                "charts.gp are in %s\n",
                rc, out);
    for (size_t i = 0; i < in.ncmp; i++) {
        json_decref(in.compares[i]);
        free(in.cmp_dir[i]);
    }
    for (size_t i = 0; i < in.ncap; i++) json_decref(in.caps[i]);
    fprintf(stderr, "report: wrote %s/README.md\n", out);
    return rc == 0 ? 0 : 1;
}
