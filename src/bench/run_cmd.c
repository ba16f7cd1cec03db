/* run_cmd.c: `inferrail-bench run` (one open-loop run against a base URL)
 * and `inferrail-bench workload` (print a workload, for determinism checks). */
#include "bench/bench.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <xxhash.h>

static void run_usage(FILE *f) {
    fprintf(f, "Usage: inferrail-bench run --base-url URL[,URL2..] --workload W --rate R\n"
               "         --requests N --out FILE.json [options]\n"
               "  several base URLs (gateways in front of the same engines, at most 8): each\n"
               "  request goes to one of them (--spread)\n"
               "  --gateways N          check that --base-url names N gateways\n"
               "  --spread S            alternate (request i to URL i mod N; a chat's turns land\n"
               "                        on either) or session (a chat stays on one) (alternate)\n"
               "  W: w1..w6, llmd-shared-prefix, sglang-gsp, prefix-repetition, or trace\n"
               "  --trace FILE          replay a Mooncake JSONL trace (workload trace; no --rate)\n"
               "  --speedup K           arrival gaps and think times divided by K, SLOs too\n"
               "  --model M             model field of every request (inferrail/sim-8b)\n"
               "  --seed S              workload and arrival seed (1)\n"
               "  --warmup K            first K requests are sent, then discarded (0)\n"
               "  --slo-ttft D          goodput SLO on TTFT (2s)\n"
               "  --slo-tpot D          goodput SLO on TPOT (100ms)\n"
               "  --engine-metrics U,.. engine base URLs whose /metrics are scraped before/after\n"
               "  --sharegpt FILE       w2: replay ShareGPT-format conversations\n"
               "  --param K=V           override a workload parameter (docs/bench-workloads.md)\n"
               "  --block-size B        block size for the reuse ceilings (16)\n"
               "  --cache-blocks N      each engine's KV cache in blocks (GPU plus any CPU\n"
               "                        tier): adds the finite-cache ceiling (Belady's MIN\n"
               "                        over the engines' caches pooled, an upper bound for\n"
               "                        any routing) and pooled LRU (a reference, not a bound)\n"
               "  --cache-replicas R    how many such caches (default: the --engine-metrics\n"
               "                        count; one of the two is needed with --cache-blocks)\n"
               "  --timeout D           per request head/idle timeout (300s)\n"
               "  --progress            a status line per second on stderr\n"
               "  --stall-at S --stall-ms MS   test hook: block the client loop once\n"
               "  --reset-prefix-cache-at S[@E][,..]  POST /reset_prefix_cache to engine E\n"
               "                        (1-based, of --engine-metrics; default 1) S model seconds\n"
               "                        into the measured phase (what the approximate index\n"
               "                        cannot see; results: \"actions\")\n"
               "  --direct-share F[@E]  another client of engine E (default 1): a share F of\n"
               "                        the requests (chosen from the seed) go straight to it,\n"
               "                        left out of the summary (its \"direct\")\n");
}

static const struct option common_opts[] = {
    {"base-url", required_argument, 0, 'u'},
    {"model", required_argument, 0, 'm'},
    {"workload", required_argument, 0, 'w'},
    {"rate", required_argument, 0, 'r'},
    {"requests", required_argument, 0, 'n'},
    {"seed", required_argument, 0, 's'},
    {"warmup", required_argument, 0, 'W'},
    {"slo-ttft", required_argument, 0, 'T'},
    {"slo-tpot", required_argument, 0, 'P'},
    {"out", required_argument, 0, 'o'},
    {"engine-metrics", required_argument, 0, 'e'},
    {"sharegpt", required_argument, 0, 'g'},
    {"param", required_argument, 0, 'k'},
    {"block-size", required_argument, 0, 'b'},
    {"cache-blocks", required_argument, 0, 'C'},
    {"cache-replicas", required_argument, 0, 'Q'},
    {"timeout", required_argument, 0, 't'},
    {"progress", no_argument, 0, 'p'},
    {"stall-at", required_argument, 0, 'A'},
    {"stall-ms", required_argument, 0, 'M'},
    {"speedup", required_argument, 0, 'K'},
    {"trace", required_argument, 0, 'R'},
    {"reset-prefix-cache-at", required_argument, 0, 'X'},
    {"direct-share", required_argument, 0, 'D'},
    {"gateways", required_argument, 0, 'G'},
    {"spread", required_argument, 0, 'S'},
    {"help", no_argument, 0, 'h'},
};

void bench_common_init(bench_common *c) {
    memset(c, 0, sizeof *c);
    c->model = "inferrail/sim-8b";
    c->seed = 1;
    c->slo_ttft_ms = 2000;
    c->slo_tpot_ms = 100;
    c->block_size = 16;
    c->speedup = 1;
    c->params = json_object();
}

void bench_common_free(bench_common *c) {
    json_decref(c->params);
    free(c->engine_buf);
    free(c->base_buf);
}

/* --base-url U1[,U2..]: -1 when more than BENCH_MAX_GATEWAYS or one is empty. */
static int base_urls(bench_common *c, const char *arg) {
    free(c->base_buf);
    c->base_buf = strdup(arg);
    c->n_base = 0;
    c->base_url = NULL;
    if (!c->base_buf) return -1;
    char *p = c->base_buf;
    for (char *comma; p; p = comma ? comma + 1 : NULL) {
        comma = strchr(p, ',');
        if (comma) *comma = 0;
        if (!*p || c->n_base == BENCH_MAX_GATEWAYS) return -1;
        c->base[c->n_base++] = p;
    }
    c->base_url = c->base[0];
    return 0;
}

/* A whole number in [1, max] into out; -1 otherwise. */
static int parse_count(const char *arg, double max, size_t *out) {
    size_t v;
    if (bench_parse_uint(arg, max, &v) || v < 1) return -1;
    *out = v;
    return 0;
}

/* Handles one common option; 1 when it was not one, -1 on a bad value. */
int bench_common_opt(bench_common *c, int ch, const char *arg) {
    double ms;
    switch (ch) {
    case 'u':
        return base_urls(c, arg);
    case 'G': {
        size_t g;
        if (parse_count(arg, BENCH_MAX_GATEWAYS, &g)) return -1;
        c->gateways = (int)g;
        return 0;
    }
    case 'S':
        return bench_spread_parse(arg, &c->spread);
    case 'm':
        c->model = arg;
        return 0;
    case 'w':
        c->workload = arg;
        return 0;
    case 'r':
        return bench_parse_real(arg, 1e-9, 1e9, &c->rate);
    case 'n':
        return parse_count(arg, 1e9, &c->requests);
    case 's': {
        char *end;
        errno = 0;
        c->seed = strtoull(arg, &end, 10);
        return end != arg && !*end && !errno && arg[0] != '-' ? 0 : -1;
    }
    case 'W':
        return bench_parse_uint(arg, 1e9, &c->warmup);
    case 'T':
        return bench_parse_ms(arg, &c->slo_ttft_ms);
    case 'P':
        return bench_parse_ms(arg, &c->slo_tpot_ms);
    case 'o':
        c->out = arg;
        return 0;
    case 'g':
        c->sharegpt = arg;
        return 0;
    case 'k':
        return bench_param_parse(c->params, arg);
    case 'b':
        return parse_count(arg, 1 << 20, &c->block_size);
    case 'C':
        return parse_count(arg, 1e9, &c->cache_blocks);
    case 'Q':
        return parse_count(arg, 4096, &c->cache_replicas);
    case 't':
        if (bench_parse_ms(arg, &ms)) return -1;
        c->timeout_s = ms / 1000;
        return 0;
    case 'p':
        c->progress = true;
        return 0;
    case 'A':
        return bench_parse_real(arg, 0, 1e9, &c->stall_at_s);
    case 'M':
        return bench_parse_real(arg, 0, 1e9, &c->stall_ms);
    case 'K': {
        char *end;
        c->speedup = strtod(arg, &end);
        return end != arg && !*end && c->speedup > 0 && c->speedup <= 1000 ? 0 : -1;
    }
    case 'X': {
        int n = bench_reset_parse(arg, c->reset_at, c->reset_engine, BENCH_MAX_ACTIONS);
        if (n < 0) return -1;
        c->n_reset = (size_t)n;
        c->reset_spec = arg;
        return 0;
    }
    case 'D':
        c->direct_spec = arg;
        return bench_direct_parse(arg, &c->direct_share, &c->direct_engine);
    case 'R':
        c->trace = arg;
        if (!c->workload) c->workload = "trace";
        return 0;
    case 'e': {
        free(c->engine_buf);
        c->engine_buf = strdup(arg);
        c->n_engine = 0;
        for (char *sp, *t = strtok_r(c->engine_buf, ",", &sp); t && c->n_engine < 64;
             t = strtok_r(NULL, ",", &sp))
            c->engine[c->n_engine++] = t;
        return 0;
    }
    default:
        return 1;
    }
}

const struct option *bench_common_options(size_t *n) {
    *n = IR_ARRAY_LEN(common_opts);
    return common_opts;
}

int bench_common_workload(const bench_common *c, double rate, uint64_t seed, bench_workload *w) {
    bench_wl_opts o = {.name = c->workload,
                       .model = c->model,
                       .rate = rate,
                       .n = c->requests + c->warmup,
                       .warmup = c->warmup,
                       .seed = seed,
                       .block_size = c->block_size,
                       .cache_blocks = c->cache_blocks,
                       .cache_replicas = c->cache_replicas,
                       .sharegpt = c->sharegpt,
                       .params = c->params,
                       .trace = c->trace,
                       .speedup = c->speedup};
    char err[512] = "";
    if (bench_workload_build(&o, w, err, sizeof err)) {
        fprintf(stderr, "inferrail-bench: %s\n", err);
        return -1;
    }
    return 0;
}

void bench_raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

int bench_reset_parse(const char *spec, double *at, int *engine, size_t cap) {
    size_t n = 0;
    const char *p = spec;
    while (*p) {
        char *end;
        double s = strtod(p, &end);
        if (end == p || !(s >= 0) || s > 1e6 || n == cap) return -1;
        long e = 1;
        if (*end == '@') {
            p = end + 1;
            e = strtol(p, &end, 10);
            if (end == p || e < 1 || e > BENCH_MAX_REPLICAS) return -1;
        }
        if (*end && *end != ',') return -1;
        at[n] = s;
        engine[n++] = (int)e;
        p = *end ? end + 1 : end;
        if (*end && !*p) return -1; /* a trailing comma */
    }
    return n ? (int)n : -1;
}

int bench_direct_parse(const char *spec, double *share, int *engine) {
    char *end;
    double f = strtod(spec, &end);
    if (end == spec || !(f > 0 && f < 1)) return -1;
    long e = 1;
    if (*end == '@') {
        const char *p = end + 1;
        e = strtol(p, &end, 10);
        if (end == p || e < 1 || e > BENCH_MAX_REPLICAS) return -1;
    }
    if (*end) return -1;
    *share = f;
    *engine = (int)e;
    return 0;
}

/* The resets of the common options as runner actions on the engines: model
 * seconds divided by K. urls holds the strings. -1 when an engine is missing. */
static int reset_actions(const bench_common *c, const char *const *engines, size_t n_engine,
                         bench_action *acts, char (*urls)[600]) {
    for (size_t i = 0; i < c->n_reset; i++) {
        size_t e = (size_t)c->reset_engine[i];
        if (e > n_engine) {
            fprintf(stderr,
                    "inferrail-bench: --reset-prefix-cache-at: engine %zu of %zu (give the "
                    "engines with --engine-metrics)\n",
                    e, n_engine);
            return -1;
        }
        const char *u = engines[e - 1];
        size_t l = strlen(u);
        while (l && u[l - 1] == '/') l--;
        snprintf(urls[i], sizeof urls[i], "%.*s/reset_prefix_cache", (int)l, u);
        acts[i].at_s = c->reset_at[i] / c->speedup;
        acts[i].url = urls[i];
    }
    return 0;
}

/* One run of the common options against base_url; the results document.
 * SLOs are given in model time, so they are divided by --speedup like the
 * latencies they judge. */
json_t *bench_common_run(const bench_common *c, const char *const *base_urls, size_t n_base,
                         double rate, uint64_t seed, const char *const *engines, size_t n_engine) {
    bench_action acts[BENCH_MAX_ACTIONS];
    char urls[BENCH_MAX_ACTIONS][600];
    if (reset_actions(c, engines, n_engine, acts, urls)) return NULL;
    if (c->direct_spec && (size_t)c->direct_engine > n_engine) {
        fprintf(stderr,
                "inferrail-bench: --direct-share: engine %d of %zu (give the engines with "
                "--engine-metrics)\n",
                c->direct_engine, n_engine);
        return NULL;
    }
    bench_workload w;
    if (bench_common_workload(c, rate, seed, &w)) return NULL;
    bench_run_cfg rc = {.base_urls = base_urls,
                        .n_base = n_base,
                        .spread = c->spread,
                        .wl = &w,
                        .rate = c->trace ? w.rate : rate,
                        .seed = seed,
                        .slo_ttft_ms = c->slo_ttft_ms / c->speedup,
                        .slo_tpot_ms = c->slo_tpot_ms / c->speedup,
                        .timeout_s = c->timeout_s,
                        .engine_urls = engines,
                        .n_engine = n_engine,
                        .stall_at_s = c->stall_at_s,
                        .stall_ms = c->stall_ms,
                        .progress = c->progress,
                        .actions = acts,
                        .n_actions = c->n_reset,
                        .direct_url = c->direct_spec ? engines[c->direct_engine - 1] : NULL,
                        .direct_share = c->direct_share};
    char err[512] = "";
    json_t *doc = bench_run(&rc, err, sizeof err);
    if (!doc) fprintf(stderr, "inferrail-bench: %s\n", err);
    if (doc && c->direct_spec)
        json_object_set_new(json_object_get(doc, "config"), "direct_share",
                            json_string(c->direct_spec));
    if (doc && c->reset_spec)
        json_object_set_new(json_object_get(doc, "config"), "reset_prefix_cache_at",
                            json_string(c->reset_spec));
    bench_workload_free(&w);
    return doc;
}

/* --cache-replicas defaults to the engines given; -1 (with a message) when the
 * cache size is half given. */
static int cache_fleet(bench_common *c, const char *cmd) {
    if (c->cache_blocks && !c->cache_replicas) c->cache_replicas = c->n_engine;
    if (!c->cache_blocks != !c->cache_replicas) {
        fprintf(stderr,
                "inferrail-bench %s: --cache-blocks needs --cache-replicas or --engine-metrics, "
                "and --cache-replicas needs --cache-blocks\n",
                cmd);
        return -1;
    }
    return 0;
}

static int getopt_all(int argc, char **argv, bench_common *c, void (*usage)(FILE *)) {
    size_t n;
    const struct option *opts = bench_common_options(&n);
    struct option all[64];
    memcpy(all, opts, n * sizeof *opts);
    memset(&all[n], 0, sizeof all[n]);
    optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, "", all, NULL)) != -1) {
        if (ch == 'h') {
            usage(stdout);
            return 1;
        }
        int rc = bench_common_opt(c, ch, optarg);
        if (rc) {
            if (rc < 0) fprintf(stderr, "inferrail-bench: bad value '%s'\n", optarg);
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

/* A number, or "n/a" when the run could not measure it (null in the JSON). */
static void print_num(const json_t *v, const char *fmt) {
    if (json_is_number(v))
        printf(fmt, json_number_value(v));
    else
        printf("n/a");
}

static void print_line(const json_t *doc) {
    json_t *s = json_object_get(doc, "summary");
    json_t *t = json_object_get(s, "ttft_ms"), *p = json_object_get(s, "tpot_ms");
    json_t *l = json_object_get(s, "send_lag_ms");
    printf("requests %lld errors %lld", json_integer_value(json_object_get(s, "requests")),
           json_integer_value(json_object_get(s, "errors")));
    json_t *ek = json_object_get(s, "errors_by_kind");
    const char *k;
    json_t *v;
    bool first = true;
    json_object_foreach(ek, k, v) {
        printf("%s%s %lld", first ? " (" : ", ", k, json_integer_value(v));
        first = false;
    }
    if (!first) printf(")");
    json_t *sp = json_object_get(json_object_get(doc, "config"), "speedup");
    if (json_is_number(sp) && json_number_value(sp) != 1)
        printf("  (latencies in wall ms at speed-up %g: x %g for model time)",
               json_number_value(sp), json_number_value(sp));
    printf("  ttft p50 ");
    print_num(json_object_get(t, "p50"), "%.1f");
    printf(" p99 ");
    print_num(json_object_get(t, "p99"), "%.1f");
    printf(" ms  tpot p50 ");
    print_num(json_object_get(p, "p50"), "%.2f");
    printf(" p99 ");
    print_num(json_object_get(p, "p99"), "%.2f");
    printf(" ms  hit ");
    print_num(json_object_get(s, "hit_rate"), "%.3f");
    printf(" (engines ");
    print_num(json_object_get(s, "engine_hit_rate"), "%.3f");
    printf(", ceiling ");
    print_num(json_object_get(s, "reuse_ceiling"), "%.3f");
    if (json_is_number(json_object_get(s, "reuse_ceiling_finite"))) {
        printf(", finite-cache ceiling ");
        print_num(json_object_get(s, "reuse_ceiling_finite"), "%.3f");
        printf(", pooled LRU ");
        print_num(json_object_get(s, "pooled_lru_hit_rate"), "%.3f");
    }
    printf(")");
    json_t *pg = json_object_get(s, "per_gateway");
    for (size_t g = 0; g < json_array_size(pg); g++) {
        printf(g ? " / " : "  by gateway ");
        print_num(json_object_get(json_array_get(pg, g), "hit_rate"), "%.3f");
    }
    printf("  lag p99 ");
    print_num(json_object_get(l, "p99"), "%.3f");
    printf(" ms\n");
}

/* Exit status of a run whose document was written: 1 when no request succeeded (some
 * failing is a result, said on stderr). */
static int run_status(const json_t *doc) {
    json_t *s = json_object_get(doc, "summary");
    json_int_t n = json_integer_value(json_object_get(s, "requests"));
    json_int_t ok = json_integer_value(json_object_get(s, "ok"));
    if (n > 0 && ok == 0) {
        fprintf(stderr, "inferrail-bench run: every request failed (%lld of %lld)\n", (long long)n,
                (long long)n);
        return 1;
    }
    if (ok < n)
        fprintf(stderr, "inferrail-bench run: %lld of %lld requests failed (errors_by_kind)\n",
                (long long)(n - ok), (long long)n);
    json_t *hit = json_object_get(s, "hit_rate"), *ceil = json_object_get(s, "reuse_ceiling");
    if (json_is_number(hit) && json_is_number(ceil) &&
        json_number_value(hit) > json_number_value(ceil) + 0.005)
        fprintf(stderr,
                "inferrail-bench run: the hit rate %.3f is above the reuse ceiling %.3f, which "
                "assumes caches that start empty: the engines held these prompts from before "
                "(a run repeated against the same engines; restart them, or POST "
                "/reset_prefix_cache to each, between runs)\n",
                json_number_value(hit), json_number_value(ceil));
    return 0;
}

/* Whether `out` can be written, before a run that would be lost otherwise. */
static bool out_writable(const char *out) {
    if (strcmp(out, "-") == 0) return true;
    FILE *f = fopen(out, "a");
    if (!f) return false;
    fclose(f);
    return true;
}

int bench_run_main(int argc, char **argv) {
    bench_common c;
    bench_common_init(&c);
    int rc = getopt_all(argc, argv, &c, run_usage);
    if (rc) {
        bench_common_free(&c);
        return rc > 0 ? 0 : 2;
    }
    if (!c.base_url || !c.workload || (!(c.rate > 0) && !c.trace) || !c.requests || !c.out) {
        fprintf(stderr, "inferrail-bench run: --base-url, --workload, --rate (or --trace), "
                        "--requests and --out are required\n");
        bench_common_free(&c);
        return 2;
    }
    if (cache_fleet(&c, "run")) {
        bench_common_free(&c);
        return 2;
    }
    if (c.gateways && (size_t)c.gateways != c.n_base) {
        fprintf(stderr, "inferrail-bench run: --gateways %d but --base-url names %zu\n", c.gateways,
                c.n_base);
        bench_common_free(&c);
        return 2;
    }
    if (!out_writable(c.out)) {
        fprintf(stderr, "inferrail-bench run: cannot write %s\n", c.out);
        bench_common_free(&c);
        return 2;
    }
    bench_raise_fd_limit();
    json_t *doc = bench_common_run(&c, c.base, c.n_base, c.rate, c.seed,
                                   (const char *const *)c.engine, c.n_engine);
    rc = 1;
    if (doc) {
        rc = bench_write_json(doc, c.out) ? 1 : 0;
        if (rc)
            fprintf(stderr, "inferrail-bench: cannot write %s\n", c.out);
        else if (strcmp(c.out, "-") != 0)
            print_line(doc);
        if (rc == 0) rc = run_status(doc);
        json_decref(doc);
    }
    bench_common_free(&c);
    return rc;
}

/* "key":value, with null for NaN. */
static void print_json_num(const char *key, double v) {
    if (isfinite(v))
        printf("\"%s\":%.6f,", key, v);
    else
        printf("\"%s\":null,", key);
}

static void wl_usage(FILE *f) {
    fprintf(f, "Usage: inferrail-bench workload --workload W --rate R --requests N [--seed S]\n"
               "         [--warmup K] [--param K=V] [--sharegpt FILE] [--trace FILE]\n"
               "         [--speedup K] [--block-size B] [--cache-blocks N --cache-replicas R]\n"
               "         [--bodies]\n"
               "Prints one JSON line per request (time, tokens, body hash; the body with\n"
               "--bodies) and a last line with the reuse ceiling and the working set\n"
               "(distinct_blocks; reused_blocks, those a later request hits again). With\n"
               "--cache-blocks N (blocks per engine) and --cache-replicas R, also the\n"
               "finite-cache ceiling (Belady's MIN over R x N pooled blocks: what no routing\n"
               "over R caches of N blocks can beat) and pooled LRU (one engine of R x N\n"
               "blocks: a reference, not a bound); null without them.\n");
}

int bench_workload_main(int argc, char **argv) {
    bool bodies = false;
    /* --bodies is ours alone; drop it before the common parser sees it. */
    char **av = calloc((size_t)argc + 1, sizeof *av);
    int ac = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--bodies") == 0)
            bodies = true;
        else
            av[ac++] = argv[i];
    }
    bench_common c;
    bench_common_init(&c);
    int rc = getopt_all(ac, av, &c, wl_usage);
    free(av);
    if (rc || !c.workload || (!(c.rate > 0) && !c.trace) || !c.requests) {
        if (rc <= 0) wl_usage(stderr);
        bench_common_free(&c);
        return rc > 0 ? 0 : 2;
    }
    if (cache_fleet(&c, "workload")) {
        bench_common_free(&c);
        return 2;
    }
    bench_workload w;
    if (bench_common_workload(&c, c.rate, c.seed, &w)) {
        bench_common_free(&c);
        return 1;
    }
    for (size_t i = 0; i < w.n; i++) {
        const bench_req *q = &w.reqs[i];
        printf("{\"i\":%zu,\"at_ms\":%.3f,\"session\":%u,\"turn\":%u,\"prompt_tokens\":%u,"
               "\"reusable_tokens\":%u,\"max_tokens\":%u,\"body_xxh64\":\"%016llx\"",
               i, (double)q->at_ns / 1e6, q->session, q->turn, q->prompt_tokens, q->reused_tokens,
               q->max_tokens, (unsigned long long)XXH64(q->body, q->body_len, 0));
        if (bodies) printf(",\"body\":%s", q->body);
        printf("}\n");
    }
    char *params = json_dumps(w.params, JSON_COMPACT);
    printf("{\"workload\":\"%s\",\"requests\":%zu,\"warmup\":%zu,\"reuse_ceiling\":%.6f,"
           "\"distinct_blocks\":%zu,\"reused_blocks\":%zu,\"speedup\":%g,\"rate\":%g,",
           w.name, w.n, w.warmup, w.reuse_ceiling, w.distinct_blocks, w.reused_blocks, w.speedup,
           w.rate);
    print_json_num("reuse_ceiling_finite", w.reuse_ceiling_finite);
    print_json_num("pooled_lru_hit_rate", w.pooled_lru_hit_rate);
    printf("\"cache_blocks\":%zu,\"cache_replicas\":%zu,\"block_size\":%zu,\"params\":%s}\n",
           w.cache_blocks, w.cache_replicas, c.block_size, params);
    free(params);
    bench_workload_free(&w);
    bench_common_free(&c);
    return 0;
}
