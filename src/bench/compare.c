/* compare.c: `inferrail-bench compare` (policies side by side, each run on a
 * fresh gateway and fresh simulators, every policy given the same requests
 * at the same times) and `inferrail-bench capacity` (the highest rate at
 * which the SLO holds). */
#include "bench/bench.h"
#include "policy/ir_policy.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_POLICIES 16
#define MAX_REPS     64
#define MAX_RATES    32

typedef struct fleet_args {
    char sim_bin[4096], gw_bin[4096];
    int replicas;
    const char *sim_args;
    bool no_gateway;
    bool kv_events;
} fleet_args;

static const struct option fleet_opts[] = {
    {"replicas", required_argument, 0, 1000},   {"sim-args", required_argument, 0, 1001},
    {"sim-bin", required_argument, 0, 1002},    {"gateway-bin", required_argument, 0, 1003},
    {"no-gateway", no_argument, 0, 1004},       {"policies", required_argument, 0, 1005},
    {"policy", required_argument, 0, 1005},     {"repetitions", required_argument, 0, 1006},
    {"start-rate", required_argument, 0, 1007}, {"max-rate", required_argument, 0, 1008},
    {"steps", required_argument, 0, 1009},      {"probe-seconds", required_argument, 0, 1010},
    {"kv-events", no_argument, 0, 1011},        {"warmup-seconds", required_argument, 0, 1012},
};

typedef struct cmp_opts {
    bench_common c;
    fleet_args f;
    char *policies_buf;
    const char *policies[MAX_POLICIES];
    size_t npol;
    int reps;
    double rates[MAX_RATES]; /* compare: --rate R1,R2,.. runs the comparison at each */
    size_t nrates;
    double start_rate, max_rate;
    int steps;
    double probe_s; /* capacity: each probe lasts about this long (more requests at high rates) */
    double warm_s;  /* capacity: each probe's warm-up lasts at least this long (model seconds) */
} cmp_opts;

static int mkdir_p(const char *path) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) && errno != EEXIST ? -1 : 0;
}

/* The finite-cache ceilings use the fleet's own cache size: each simulator's GPU
 * blocks (and CPU tier) from --sim-args, times --replicas. -1 when the user gave
 * one. */
static int fleet_cache(cmp_opts *o) {
    if (o->c.cache_blocks || o->c.cache_replicas) {
        fprintf(stderr, "inferrail-bench: the cache size comes from --replicas and --sim-args "
                        "(--num-gpu-blocks-override, --num-cpu-blocks) here\n");
        return -1;
    }
    o->c.cache_blocks = bench_sim_cache_blocks(o->f.sim_args);
    o->c.cache_replicas = o->f.no_gateway ? 1 : (size_t)(o->f.replicas > 0 ? o->f.replicas : 1);
    return 0;
}

static int parse(int argc, char **argv, cmp_opts *o, void (*usage)(FILE *)) {
    memset(o, 0, sizeof *o);
    bench_common_init(&o->c);
    o->f.replicas = 3;
    o->reps = 1;
    o->start_rate = 1;
    o->max_rate = 1000;
    o->steps = 4;
    char dir[3000];
    bench_exe_dir(dir, sizeof dir);
    snprintf(o->f.sim_bin, sizeof o->f.sim_bin, "%s/inferrail-sim", dir);
    snprintf(o->f.gw_bin, sizeof o->f.gw_bin, "%s/inferrail-gateway", dir);
    size_t nc;
    const struct option *co = bench_common_options(&nc);
    struct option all[64];
    memcpy(all, co, nc * sizeof *co);
    memcpy(all + nc, fleet_opts, sizeof fleet_opts);
    memset(&all[nc + IR_ARRAY_LEN(fleet_opts)], 0, sizeof all[0]);
    optind = 1;
    int ch;
    size_t u;
    bool bad = false;
    while (!bad && (ch = getopt_long(argc, argv, "", all, NULL)) != -1) {
        switch (ch) {
        case 'h':
            usage(stdout);
            return 1;
        case 1000:
            bad = bench_parse_uint(optarg, BENCH_MAX_REPLICAS, &u) || u < 1;
            o->f.replicas = (int)u;
            break;
        case 1001:
            o->f.sim_args = optarg;
            break;
        case 1002:
            snprintf(o->f.sim_bin, sizeof o->f.sim_bin, "%s", optarg);
            break;
        case 1003:
            snprintf(o->f.gw_bin, sizeof o->f.gw_bin, "%s", optarg);
            break;
        case 1004:
            o->f.no_gateway = true;
            break;
        case 1011:
            o->f.kv_events = true;
            break;
        case 1005:
            free(o->policies_buf);
            o->policies_buf = strdup(optarg);
            o->npol = 0;
            for (char *sp, *t = strtok_r(o->policies_buf, ",", &sp); t && o->npol < MAX_POLICIES;
                 t = strtok_r(NULL, ",", &sp))
                o->policies[o->npol++] = t;
            break;
        case 1006:
            bad = bench_parse_uint(optarg, MAX_REPS, &u) || u < 1;
            o->reps = (int)u;
            break;
        case 1007:
            bad = bench_parse_real(optarg, 1e-6, 1e6, &o->start_rate);
            break;
        case 1008:
            bad = bench_parse_real(optarg, 1e-6, 1e6, &o->max_rate);
            break;
        case 1009:
            bad = bench_parse_uint(optarg, 30, &u);
            o->steps = (int)u;
            break;
        case 1010:
            bad = bench_parse_real(optarg, 0, 1e6, &o->probe_s);
            break;
        case 1012:
            bad = bench_parse_real(optarg, 0, 1e6, &o->warm_s);
            break;
        case 'r': /* a rate, or a ladder of them */
            o->nrates = 0;
            for (const char *p = optarg; *p && o->nrates < MAX_RATES;) {
                char *end;
                double r = strtod(p, &end);
                if (end == p || !(r > 0) || (*end && *end != ',')) {
                    fprintf(stderr, "inferrail-bench: bad rate '%s'\n", optarg);
                    usage(stderr);
                    return -1;
                }
                o->rates[o->nrates++] = r;
                p = *end ? end + 1 : end;
            }
            o->c.rate = o->nrates ? o->rates[0] : 0;
            break;
        default: {
            int rc = bench_common_opt(&o->c, ch, optarg);
            if (rc) {
                if (rc < 0) fprintf(stderr, "inferrail-bench: bad value '%s'\n", optarg);
                usage(stderr);
                return -1;
            }
        }
        }
    }
    if (bad) {
        fprintf(stderr,
                "inferrail-bench: bad value '%s' (--replicas 1..%d, --repetitions 1..%d, "
                "--start-rate and --max-rate > 0, --steps 0..30, seconds >= 0)\n",
                optarg, BENCH_MAX_REPLICAS, MAX_REPS);
        usage(stderr);
        return -1;
    }
    if (fleet_cache(o)) return -1;
    for (size_t p = 0; p < o->npol; p++) {
        char base[64];
        bool ev;
        if (bench_policy_variant(o->policies[p], base, sizeof base, &ev) || !irp_find(base)) {
            fprintf(stderr,
                    "inferrail-bench: bad policy '%s' (one of %s, perhaps with +events or "
                    "+events-nolookahead)\n",
                    o->policies[p], irp_names());
            return -1;
        }
    }
    return 0;
}

static void free_opts(cmp_opts *o) {
    free(o->policies_buf);
    bench_common_free(&o->c);
}

/* Everything a run needs that is not its fleet's doing, checked before the first fleet
 * starts: the workload with its parameters (built once at `rate`), the binaries. 0, or 2
 * with a message. */
static int check_setup(cmp_opts *o, double rate, const char *cmd) {
    bench_workload w;
    if (bench_common_workload(&o->c, rate, o->c.seed, &w)) {
        fprintf(stderr, "inferrail-bench %s: nothing was run\n", cmd);
        return 2;
    }
    bench_workload_free(&w);
    if (access(o->f.sim_bin, X_OK) != 0) {
        fprintf(stderr, "inferrail-bench %s: no simulator at %s (--sim-bin)\n", cmd, o->f.sim_bin);
        return 2;
    }
    if (!o->f.no_gateway && access(o->f.gw_bin, X_OK) != 0) {
        fprintf(stderr, "inferrail-bench %s: no gateway at %s (--gateway-bin)\n", cmd, o->f.gw_bin);
        return 2;
    }
    return 0;
}

/* --gateways N needs gateways: 0, or 2 with a message. */
static int check_gateways(const cmp_opts *o, const char *cmd) {
    if (o->c.gateways > 1 && o->f.no_gateway) {
        fprintf(stderr, "inferrail-bench %s: --gateways %d and --no-gateway exclude each other\n",
                cmd, o->c.gateways);
        return 2;
    }
    return 0;
}

/* One run on a fresh fleet; the results document or NULL. */
static json_t *fleet_run(const cmp_opts *o, const char *policy, double rate, uint64_t seed,
                         const char *log_dir, const char *tag) {
    char base[64];
    bool events = false;
    if (bench_policy_variant(policy, base, sizeof base, &events)) return NULL; /* parse() checked */
    events |= o->f.kv_events;
    bench_fleet_opts fo = {.sim_bin = o->f.sim_bin,
                           .gw_bin = o->f.gw_bin,
                           .replicas = o->f.no_gateway ? 1 : o->f.replicas,
                           .sim_args = o->f.sim_args,
                           .policy = o->f.no_gateway ? NULL : base,
                           .model = o->c.model,
                           .seed = seed,
                           .log_dir = log_dir,
                           .tag = tag,
                           .speedup = o->c.speedup,
                           .kv_events = events,
                           .no_lookahead = bench_policy_no_lookahead(policy),
                           .gateways = o->c.gateways};
    bench_fleet f;
    char err[512] = "";
    if (bench_fleet_start(&fo, &f, err, sizeof err)) {
        fprintf(stderr, "inferrail-bench: %s\n", err);
        return NULL;
    }
    json_t *doc =
        bench_common_run(&o->c, f.base_ptr, f.n_base, rate, seed, f.engine_ptr, (size_t)f.n);
    double gw_req[BENCH_MAX_GATEWAYS];
    bench_fleet_gateway_requests(&f, gw_req);
    int n_gw = f.n_gw;
    json_t *seeds = json_array();
    for (int g = 0; g < n_gw; g++)
        json_array_append_new(seeds, json_integer((json_int_t)f.gw_seed[g]));
    json_t *exited = bench_fleet_exited(&f);
    bench_fleet_stop(&f);
    if (json_array_size(exited)) {
        char *names = json_dumps(exited, JSON_COMPACT);
        fprintf(stderr,
                "compare: %s: %s exited during the run (see %s): the run is not a "
                "measurement of the fleet it names\n",
                tag, names ? names : "?", log_dir);
        free(names);
    }
    if (doc) {
        json_t *c = json_object_get(doc, "config");
        json_object_set(c, "exited", exited);
        json_object_set_new(c, "policy", json_string(o->f.no_gateway ? "direct" : policy));
        json_object_set_new(c, "replicas", json_integer(fo.replicas));
        json_object_set_new(c, "gateways", json_integer(n_gw));
        /* What each gateway says it proxied (warmup included): proof that all took part. */
        json_t *gr = json_array();
        for (int g = 0; g < n_gw; g++)
            json_array_append_new(gr, gw_req[g] >= 0 ? json_integer((json_int_t)gw_req[g])
                                                     : json_null());
        json_object_set_new(c, "gateway_requests", gr);
        json_object_set_new(c, "gateway_seeds", seeds);
        json_object_set_new(c, "sim_args", json_string(o->f.sim_args ? o->f.sim_args : ""));
        json_object_set_new(c, "kv_events", json_boolean(events));
        char eff[1024] = "";
        bench_sim_args_scaled(o->f.sim_args, o->c.speedup, eff, sizeof eff);
        json_object_set_new(c, "sim_args_effective", json_string(eff));
    } else {
        json_decref(seeds);
    }
    json_decref(exited);
    return doc;
}

/* Whether fleet_run's run lost a simulator or gateway while it ran (config.exited). */
static bool lost_process(json_t *doc) {
    return json_array_size(json_object_get(json_object_get(doc, "config"), "exited")) > 0;
}

/* ---- medians over repetitions ---------------------------------------------------------- */

static double median(double *v, size_t n) {
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i])) v[m++] = v[i];
    if (m == 0) return NAN;
    qsort(v, m, sizeof *v, bench_cmp_double);
    return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
}

static double getnum(json_t *sum, const char *a, const char *b) {
    json_t *v = json_object_get(sum, a);
    if (b) v = json_object_get(v, b);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *jnum(double v) {
    return isfinite(v) ? json_real(round(v * 1000) / 1000) : json_null();
}

/* The median of one figure across the summaries. */
static json_t *med_of(json_t **sums, size_t n, const char *a, const char *b) {
    double v[MAX_REPS];
    for (size_t i = 0; i < n; i++) v[i] = getnum(sums[i], a, b);
    return jnum(median(v, n));
}

static json_t *policy_summary(json_t **sums, size_t n, json_t *files) {
    json_t *p = json_object();
    static const char *lat[] = {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "send_lag_ms"};
    static const char *pct[] = {"p50", "p90", "p99", "p99_9"};
    for (size_t k = 0; k < IR_ARRAY_LEN(lat); k++) {
        json_t *d = json_object();
        for (size_t j = 0; j < IR_ARRAY_LEN(pct); j++)
            json_object_set_new(d, pct[j], med_of(sums, n, lat[k], pct[j]));
        json_object_set_new(p, lat[k], d);
    }
    static const char *flat[] = {"hit_rate",
                                 "engine_hit_rate",
                                 "goodput",
                                 "goodput_rps",
                                 "throughput_rps",
                                 "errors",
                                 "requests",
                                 "reuse_ceiling",
                                 "reuse_ceiling_finite",
                                 "pooled_lru_hit_rate",
                                 "in_flight_max_over_mean"};
    for (size_t k = 0; k < IR_ARRAY_LEN(flat); k++)
        json_object_set_new(p, flat[k], med_of(sums, n, flat[k], NULL));
    json_t *per = json_object();
    for (size_t i = 0; i < n; i++) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(sums[i], "per_replica"), k, v)
            json_object_set_new(per, k, json_null());
    }
    const char *k;
    json_t *v;
    json_object_foreach(per, k, v) {
        double x[MAX_REPS];
        for (size_t i = 0; i < n; i++) {
            json_t *c = json_object_get(json_object_get(sums[i], "per_replica"), k);
            x[i] = c ? json_number_value(c) : 0;
        }
        json_object_set_new(per, k, jnum(median(x, n)));
    }
    json_object_set_new(p, "per_replica", per);
    json_t *pc = json_object_get(json_object_get(sums[0], "prediction"), "cached_tokens");
    if (pc) {
        json_t *d = json_object();
        static const char *pk[] = {"exact", "over", "under", "mean_error"};
        for (size_t j = 0; j < 4; j++) {
            double x[MAX_REPS];
            for (size_t i = 0; i < n; i++)
                x[i] = getnum(json_object_get(sums[i], "prediction"), "cached_tokens", pk[j]);
            json_object_set_new(d, pk[j], jnum(median(x, n)));
        }
        json_object_set_new(p, "prediction_cached_tokens", d);
    }
    json_object_set_new(p, "repetitions", json_integer((json_int_t)n));
    json_object_set_new(p, "runs", files);
    return p;
}

static void compare_usage(FILE *f) {
    fprintf(f, "Usage: inferrail-bench compare --workload W --policies P1,P2,.. --rate R[,R2..]\n"
               "         --requests N --out DIR [--replicas 3] [--repetitions K] [--warmup W]\n"
               "         [--speedup K] [--trace FILE]\n"
               "         [--seed S] [--sim-args \"...\"] [--slo-ttft 2s --slo-tpot 100ms]\n"
               "         [--param K=V] [--sharegpt FILE] [--sim-bin B] [--gateway-bin B]\n"
               "         [--model M] [--block-size B] [--timeout D] [--progress]   (as in run;\n"
               "                          the engines' metrics are scraped by compare itself)\n"
               "         [--no-gateway]   (straight to one simulator, for checking the harness)\n"
               "         [--kv-events]    (the simulators publish KV events, followed by the\n"
               "                          gateway: the exact index, CPU tiers included; for\n"
               "                          one policy only, name it P+events, e.g.\n"
               "                          --policies cost_model,cost_model+events)\n"
               "         [--reset-prefix-cache-at S[@R][,..]]  (POST /reset_prefix_cache to\n"
               "                          simulator R, default 1, S model seconds into the\n"
               "                          measured phase)\n"
               "         [--direct-share F[@R]]  (another client: a share F of the requests\n"
               "                          go straight to simulator R, default 1, bypassing\n"
               "                          the gateway; left out of the summary)\n"
               "         [--gateways N]   (N gateways, configured alike, in front of the same\n"
               "                          simulators; requests spread over them by --spread\n"
               "                          alternate (default) or session)\n"
               "Each run gets a fresh gateway and fresh simulators on free loopback ports;\n"
               "repetition k uses seed S+k for every policy. Writes DIR/<w>-<policy>-rep<k>.json\n"
               "and DIR/summary.json (medians over repetitions); a ladder of rates writes one\n"
               "such folder per rate, DIR/rate-<R>. --speedup K divides every simulator latency,\n"
               "arrival gap, think time and SLO by K (rates stay in model time).\n"
               "Beside the reuse ceiling (one infinite cache), every summary has the finite-\n"
               "cache ceiling (Belady's MIN over --replicas caches of the simulators' blocks,\n"
               "--num-gpu-blocks-override plus --num-cpu-blocks, pooled: what no routing can\n"
               "beat) and pooled LRU (one LRU of that size: a reference, not a bound).\n");
}

/* One comparison at o->c.rate into o->c.out. 0, 1 when a run failed, 2 on setup errors. */
static int compare_at(cmp_opts *o) {
    char logs[4200];
    snprintf(logs, sizeof logs, "%s/logs", o->c.out);
    if (mkdir_p(logs)) {
        fprintf(stderr, "inferrail-bench compare: cannot create %s\n", logs);
        return 2;
    }
    bench_raise_fd_limit();
    json_t *sums[MAX_POLICIES][MAX_REPS] = {{0}};
    json_t *files[MAX_POLICIES];
    double ceil[MAX_REPS], fin[MAX_REPS], lru[MAX_REPS], rate_seen = o->c.rate;
    int failed = 0;
    for (size_t p = 0; p < o->npol; p++) files[p] = json_array();
    for (int k = 0; k < MAX_REPS; k++) ceil[k] = fin[k] = lru[k] = NAN; /* a failed run: none */
    /* Repetition-major, so slow drift of a shared machine spreads over every policy. */
    for (int k = 0; k < o->reps; k++) {
        uint64_t seed = o->c.seed + (uint64_t)k;
        for (size_t p = 0; p < o->npol; p++) {
            char tag[128], path[4400];
            snprintf(tag, sizeof tag, "%s-%s-rep%d", o->c.workload, o->policies[p], k);
            snprintf(path, sizeof path, "%s/%s.json", o->c.out, tag);
            fprintf(stderr, "compare: %s (seed %llu, rate %g, %zu requests)\n", tag,
                    (unsigned long long)seed, o->c.rate, o->c.requests);
            json_t *doc = fleet_run(o, o->policies[p], o->c.rate, seed, logs, tag);
            if (!doc) {
                failed++;
                continue;
            }
            json_object_set_new(json_object_get(doc, "config"), "repetition", json_integer(k));
            if (!(getnum(json_object_get(doc, "summary"), "ok", NULL) > 0)) {
                fprintf(stderr, "compare: %s: every request failed (see %s)\n", tag, logs);
                failed++;
            } else if (lost_process(doc)) {
                failed++; /* said by fleet_run */
            }
            rate_seen = getnum(doc, "config", "rate"); /* a trace's own mean rate */
            if (bench_write_json(doc, path)) failed++;
            json_t *s = json_object_get(doc, "summary");
            sums[p][k] = json_incref(s);
            ceil[k] = getnum(s, "reuse_ceiling", NULL);
            fin[k] = getnum(s, "reuse_ceiling_finite", NULL);
            lru[k] = getnum(s, "pooled_lru_hit_rate", NULL);
            fprintf(stderr,
                    "compare: %s: ttft p99 %.1f ms, tpot p99 %.2f ms%s, hit %.3f, errors %g\n", tag,
                    getnum(s, "ttft_ms", "p99"), getnum(s, "tpot_ms", "p99"),
                    o->c.speedup != 1 ? " (wall)" : "", getnum(s, "hit_rate", NULL),
                    getnum(s, "errors", NULL));
            char *slash = strrchr(path, '/');
            json_array_append_new(files[p], json_string(slash ? slash + 1 : path));
            json_decref(doc);
        }
    }
    json_t *out = json_object();
    json_object_set_new(out, "schema", json_string("inferrail-bench/compare/1"));
    json_object_set_new(out, "workload", json_string(o->c.workload));
    json_object_set_new(out, "rate", json_real(isfinite(rate_seen) ? rate_seen : o->c.rate));
    json_object_set_new(out, "replicas", json_integer(o->f.no_gateway ? 1 : o->f.replicas));
    json_object_set_new(out, "gateways",
                        json_integer(o->f.no_gateway ? 0
                                     : o->c.gateways ? o->c.gateways
                                                     : 1));
    json_object_set_new(out, "spread", json_string(bench_spread_name(o->c.spread)));
    json_object_set_new(out, "kv_events", json_boolean(o->f.kv_events));
    json_object_set_new(out, "requests", json_integer((json_int_t)o->c.requests));
    json_object_set_new(out, "warmup", json_integer((json_int_t)o->c.warmup));
    json_object_set_new(out, "repetitions", json_integer(o->reps));
    json_object_set_new(out, "seed", json_integer((json_int_t)o->c.seed));
    json_object_set_new(out, "sim_args", json_string(o->f.sim_args ? o->f.sim_args : ""));
    json_object_set_new(out, "speedup", json_real(o->c.speedup));
    if (o->c.trace) json_object_set_new(out, "trace", json_string(o->c.trace));
    if (o->f.kv_events) json_object_set_new(out, "kv_events", json_true());
    if (o->c.reset_spec)
        json_object_set_new(out, "reset_prefix_cache_at", json_string(o->c.reset_spec));
    if (o->c.direct_spec) json_object_set_new(out, "direct_share", json_string(o->c.direct_spec));
    json_object_set_new(out, "params", json_deep_copy(o->c.params));
    json_object_set_new(
        out, "slo",
        json_pack("{s:f, s:f}", "ttft_ms", o->c.slo_ttft_ms, "tpot_ms", o->c.slo_tpot_ms));
    json_object_set_new(out, "reuse_ceiling", jnum(median(ceil, (size_t)o->reps)));
    json_object_set_new(out, "reuse_ceiling_finite", jnum(median(fin, (size_t)o->reps)));
    json_object_set_new(out, "pooled_lru_hit_rate", jnum(median(lru, (size_t)o->reps)));
    json_object_set_new(out, "cache",
                        json_pack("{s:I, s:I}", "replicas", (json_int_t)o->c.cache_replicas,
                                  "blocks_per_replica", (json_int_t)o->c.cache_blocks));
    json_t *pol = json_object();
    for (size_t p = 0; p < o->npol; p++) {
        json_t *have[MAX_REPS];
        size_t n = 0;
        for (int k = 0; k < o->reps; k++)
            if (sums[p][k]) have[n++] = sums[p][k];
        if (n)
            json_object_set_new(pol, o->policies[p], policy_summary(have, n, files[p]));
        else
            json_decref(files[p]);
        for (size_t i = 0; i < n; i++) json_decref(have[i]);
    }
    json_object_set_new(out, "policies", pol);
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", o->c.out);
    if (bench_write_json(out, path)) failed++;
    json_decref(out);
    fprintf(stderr, "compare: wrote %s%s\n", path, failed ? " (some runs failed)" : "");
    return failed ? 1 : 0;
}

int bench_compare_main(int argc, char **argv) {
    cmp_opts o;
    int rc = parse(argc, argv, &o, compare_usage);
    if (rc) {
        free_opts(&o);
        return rc > 0 ? 0 : 2;
    }
    if (!o.c.workload || (!(o.c.rate > 0) && !o.c.trace) || !o.c.requests || !o.c.out || !o.npol) {
        fprintf(stderr, "inferrail-bench compare: --workload, --policies, --rate (or --trace), "
                        "--requests and --out are required\n");
        free_opts(&o);
        return 2;
    }
    if (check_setup(&o, o.c.rate, "compare") || check_gateways(&o, "compare")) {
        free_opts(&o);
        return 2;
    }
    if (o.nrates <= 1) {
        rc = compare_at(&o);
        free_opts(&o);
        return rc;
    }
    /* A ladder of rates: one comparison per rate, in DIR/rate-<R>. */
    const char *top = o.c.out;
    int worst = 0;
    for (size_t i = 0; i < o.nrates && worst < 2; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/rate-%g", top, o.rates[i]);
        o.c.rate = o.rates[i];
        o.c.out = dir;
        fprintf(stderr, "compare: rate %g req/s (%zu of %zu)\n", o.rates[i], i + 1, o.nrates);
        rc = compare_at(&o);
        if (rc > worst) worst = rc;
    }
    o.c.out = top;
    free_opts(&o);
    return worst;
}

/* ---- capacity ---------------------------------------------------------------------------- */

static void capacity_usage(FILE *f) {
    fprintf(f, "Usage: inferrail-bench capacity --workload w1..w6 --policy P --requests N\n"
               "         --out FILE.json [--replicas 3] [--start-rate 1] [--max-rate 1000]\n"
               "         [--steps 4] [--probe-seconds S] [--warmup W] [--warmup-seconds S]\n"
               "         [--seed S] [--sim-args \"...\"] [--no-gateway]\n"
               "         [--slo-ttft 2s --slo-tpot 100ms] [--param K=V] [--speedup K]\n"
               "         [--kv-events] [--gateways N] [--spread alternate|session]\n"
               "         [--sharegpt FILE] [--sim-bin B] [--gateway-bin B] (as compare)\n"
               "Doubles the rate from --start-rate until the SLO (p99 TTFT and p99 TPOT) breaks\n"
               "or a request fails, then bisects --steps times. Every probe gets a fresh fleet.\n"
               "--probe-seconds S measures at least rate x S requests per probe, and\n"
               "--warmup-seconds S discards at least the first rate x S (model seconds): a\n"
               "workload of conversations needs time to reach its later turns.\n");
}

static void progress(bool tty, int done, int total, const char *line) {
    if (!tty) {
        fprintf(stderr, "capacity: %s\n", line);
        return;
    }
    int w = 30, fill = total ? done * w / total : 0;
    if (fill > w) fill = w;
    char bar[64];
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = 0;
    fprintf(stderr, "\r\033[K[%s] %d/%d %s", bar, done, total, line);
    fflush(stderr);
}

int bench_capacity_main(int argc, char **argv) {
    cmp_opts o;
    int rc = parse(argc, argv, &o, capacity_usage);
    if (rc) {
        free_opts(&o);
        return rc > 0 ? 0 : 2;
    }
    if (!o.c.workload || !o.c.requests || !o.c.out || (!o.npol && !o.f.no_gateway)) {
        fprintf(stderr, "inferrail-bench capacity: --workload, --policy, --requests and --out "
                        "are required\n");
        free_opts(&o);
        return 2;
    }
    if (o.c.trace) {
        fprintf(stderr, "inferrail-bench capacity: a trace keeps its own times; use compare\n");
        free_opts(&o);
        return 2;
    }
    if (check_setup(&o, o.start_rate, "capacity") || check_gateways(&o, "capacity")) {
        free_opts(&o);
        return 2;
    }
    const char *policy = o.npol ? o.policies[0] : "direct";
    char logs[4200];
    snprintf(logs, sizeof logs, "%s.logs", o.c.out);
    mkdir_p(logs);
    bench_raise_fd_limit();
    bool tty = isatty(2);
    double lo = 0, hi = 0, rate = o.start_rate;
    int probe = 0, bisect = 0, total = 4 + o.steps;
    bool unrun = false; /* a probe's fleet did not start or lost a process: no capacity */
    json_t *probes = json_array();
    size_t min_requests = o.c.requests, min_warmup = o.c.warmup;
    while (rate > 0 && rate <= o.max_rate) {
        o.c.requests = min_requests;
        if (o.probe_s > 0 && rate * o.probe_s > (double)min_requests)
            o.c.requests = (size_t)ceil(rate * o.probe_s);
        o.c.warmup = min_warmup;
        if (o.warm_s > 0 && rate * o.warm_s > (double)min_warmup)
            o.c.warmup = (size_t)ceil(rate * o.warm_s);
        char tag[128], line[256];
        snprintf(tag, sizeof tag, "%s-%s-probe%d", o.c.workload, policy, probe);
        snprintf(line, sizeof line, "probe %d: rate %.3g req/s ...", probe + 1, rate);
        progress(tty, probe, total, line);
        json_t *doc = fleet_run(&o, policy, rate, o.c.seed, logs, tag);
        if (!doc) {
            if (tty) fputc('\n', stderr);
            fprintf(stderr,
                    "inferrail-bench capacity: probe %d at %.3g req/s did not run (its fleet "
                    "did not start: see %s); no capacity is reported\n",
                    probe + 1, rate, logs);
            unrun = true;
            break;
        }
        if (lost_process(doc)) {
            if (tty) fputc('\n', stderr);
            fprintf(stderr,
                    "inferrail-bench capacity: probe %d at %.3g req/s lost a process of its "
                    "fleet (said above); no capacity is reported\n",
                    probe + 1, rate);
            json_decref(doc);
            unrun = true;
            break;
        }
        json_t *s = json_object_get(doc, "summary");
        double tt = s ? getnum(s, "ttft_ms", "p99") : NAN,
               tp = s ? getnum(s, "tpot_ms", "p99") : NAN;
        double errs = s ? getnum(s, "errors", NULL) : NAN;
        bool ok = s && errs == 0 && tt <= o.c.slo_ttft_ms / o.c.speedup &&
                  (!isfinite(tp) || tp <= o.c.slo_tpot_ms / o.c.speedup);
        json_array_append_new(probes,
                              json_pack("{s:f, s:I, s:I, s:b, s:o, s:o, s:o, s:o, s:o}", "rate",
                                        rate, "requests", (json_int_t)o.c.requests, "warmup",
                                        (json_int_t)o.c.warmup, "ok", ok, "ttft_p99_ms", jnum(tt),
                                        "tpot_p99_ms", jnum(tp), "errors", jnum(errs), "goodput",
                                        jnum(s ? getnum(s, "goodput", NULL) : NAN), "hit_rate",
                                        jnum(s ? getnum(s, "hit_rate", NULL) : NAN)));
        json_decref(doc);
        probe++;
        snprintf(line, sizeof line,
                 "probe %d: rate %.3g req/s: %s (ttft p99 %.0f ms, tpot p99 %.1f ms%s)", probe,
                 rate, ok ? "holds" : "breaks", tt, tp, o.c.speedup != 1 ? " wall" : "");
        progress(tty, probe, total, line);
        if (tty) fputc('\n', stderr);
        if (ok)
            lo = rate;
        else
            hi = rate;
        if (hi == 0) { /* still doubling */
            rate *= 2;
            if (total < probe + 1 + o.steps) total = probe + 1 + o.steps;
            continue;
        }
        if (bisect++ >= o.steps) break;
        total = probe + (o.steps - bisect + 1);
        rate = (lo + hi) / 2;
    }
    o.c.requests = min_requests, o.c.warmup = min_warmup;
    /* capacity_rps: null when a probe did not run or nothing held (down to --start-rate);
     * at_least: --max-rate stopped the doubling before anything broke. */
    bool capped = !unrun && hi == 0 && lo > 0;
    json_t *out = json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:f, s:f, s:o, s:o, s:o}", "schema",
                            "inferrail-bench/capacity/1", "workload", o.c.workload, "policy",
                            policy, "replicas", o.f.no_gateway ? 1 : o.f.replicas, "requests",
                            (json_int_t)o.c.requests, "seed", (json_int_t)o.c.seed, "slo_ttft_ms",
                            o.c.slo_ttft_ms, "slo_tpot_ms", o.c.slo_tpot_ms, "capacity_rps",
                            !unrun && lo > 0 ? jnum(lo) : json_null(), "first_failing_rps",
                            !unrun && hi > 0 ? jnum(hi) : json_null(), "probes", probes);
    json_object_set_new(out, "at_least", json_boolean(capped));
    if (unrun)
        json_object_set_new(out, "error",
                            json_string("a probe's fleet did not start or lost a process"));
    json_object_set_new(out, "sim_args", json_string(o.f.sim_args ? o.f.sim_args : ""));
    json_object_set_new(out, "speedup", json_real(o.c.speedup));
    json_object_set_new(out, "warmup_seconds", json_real(o.warm_s));
    json_object_set_new(out, "gateways",
                        json_integer(o.f.no_gateway ? 0
                                     : o.c.gateways ? o.c.gateways
                                                    : 1));
    json_object_set_new(out, "params", json_deep_copy(o.c.params));
    rc = bench_write_json(out, o.c.out) || unrun ? 1 : 0;
    if (unrun)
        printf("capacity %s %s: none (a probe did not run)\n", o.c.workload, policy);
    else if (lo == 0)
        printf("capacity %s %s: none (nothing held, down to %.3g req/s)\n", o.c.workload, policy,
               o.start_rate);
    else if (capped)
        printf("capacity %s %s: at least %.3g req/s (--max-rate %.3g reached, nothing broke)\n",
               o.c.workload, policy, lo, o.max_rate);
    else
        printf("capacity %s %s: %.3g req/s\n", o.c.workload, policy, lo);
    json_decref(out);
    free_opts(&o);
    return rc;
}
