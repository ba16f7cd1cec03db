/* fleet.c: HTTP helpers and the fleet of fresh processes a comparison runs
 * against: simulators on free loopback ports and, given a policy, a gateway
 * configured to route across them. */
#include "bench/bench.h"
#include "load/ir_load.h"
#include "net/ir_net.h"
#include "tokenize/ir_tokenize.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- GET on a private loop ------------------------------------------------------- */

typedef struct get_ctx {
    ir_buf *out;
    int status, err;
    irn_pool *pool;
} get_ctx;

static void g_head(void *ud, int status, const irn_header *h, size_t n) {
    ((get_ctx *)ud)->status = status;
}
static void g_body(void *ud, const char *d, size_t n) {
    ir_buf_append(((get_ctx *)ud)->out, d, n);
}
static void g_done(void *ud, int err) {
    get_ctx *g = ud;
    g->err = err;
    irn_pool_close(g->pool, NULL, NULL);
}

int bench_http_get(const char *url, ir_buf *out, double timeout_s) {
    ir_url u;
    if (ir_url_parse(url, &u)) return IRN_EINVAL;
    uv_loop_t loop;
    uv_loop_init(&loop);
    get_ctx g = {out, 0, 0, irn_pool_new(&loop, NULL)};
    uint64_t to = (uint64_t)(timeout_s * 1e9);
    irn_client_req q = {.host = u.host,
                        .port = u.port,
                        .method = "GET",
                        .path = u.path[0] ? u.path : "/",
                        .connect_timeout_ns = to,
                        .head_timeout_ns = to,
                        .idle_timeout_ns = to};
    static const irn_client_cbs cbs = {g_head, g_body, g_done};
    irn_client *c;
    int rc = irn_client_request(g.pool, &q, &cbs, &g, &c);
    if (rc) {
        g.err = rc;
        irn_pool_close(g.pool, NULL, NULL);
    }
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return g.err ? g.err : g.status;
}

uint16_t bench_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    uint16_t port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &l) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

void bench_exe_dir(char *out, size_t len) {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) {
        snprintf(out, len, ".");
        return;
    }
    buf[n] = 0;
    snprintf(out, len, "%s", dirname(buf));
}

/* ---- processes --------------------------------------------------------------------- */

static int spawn(char *const *argv, const char *log) {
    pid_t pid = fork();
    if (pid != 0) return pid;         /* -1 on failure */
    prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the bench */
    int fd = open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    execv(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static void stop_pid(int pid) {
    if (pid <= 0) return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        if (waitpid(pid, NULL, WNOHANG) == pid) return;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

static bool alive(int pid) {
    return waitpid(pid, NULL, WNOHANG) == 0;
}

/* Polls url until it answers (200, or any status once `any` is set) or the process dies. */
static int wait_up(const char *url, int pid, double secs, bool any) {
    double t0 = (double)ir_now_ns() / 1e9;
    while ((double)ir_now_ns() / 1e9 - t0 < secs) {
        if (!alive(pid)) return -1;
        ir_buf b;
        ir_buf_init(&b, 1 << 20);
        int st = bench_http_get(url, &b, 1);
        ir_buf_free(&b);
        if (st == 200 || (any && st > 0)) return 0;
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* The simulator's latency flags and their defaults (src/sim/engine.c). */
static const struct {
    const char *flag;
    double def;
} sim_latency[] = {
    {"--prefill-token-us", 100}, {"--prefill-pair-ns", 3.3}, {"--prefill-fixed-ms", 5},
    {"--decode-token-ms", 20},   {"--decode-batch-us", 100}, {"--cpu-transfer-token-us", 5},
};

static int scaled_value(char *out, size_t len, size_t *at, const char *flag, const char *v,
                        double k) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= 0)) return -1;
    int n = snprintf(out + *at, len - *at, "%s%s %.6g", *at ? " " : "", flag, x / k);
    if (n < 0 || (size_t)n >= len - *at) return -1;
    *at += (size_t)n;
    return 0;
}

int bench_sim_args_scaled(const char *sim_args, double k, char *out, size_t len) {
    if (len == 0 || !(k > 0)) return -1;
    out[0] = 0;
    size_t at = 0;
    bool seen[IR_ARRAY_LEN(sim_latency)] = {0};
    char copy[1024];
    if (snprintf(copy, sizeof copy, "%s", sim_args ? sim_args : "") >= (int)sizeof copy) return -1;
    char *sp, *t = strtok_r(copy, " ", &sp);
    while (t) {
        size_t f = IR_ARRAY_LEN(sim_latency);
        const char *eq = strchr(t, '=');
        size_t nlen = eq ? (size_t)(eq - t) : strlen(t);
        for (size_t i = 0; i < IR_ARRAY_LEN(sim_latency) && k != 1; i++)
            if (strlen(sim_latency[i].flag) == nlen && memcmp(t, sim_latency[i].flag, nlen) == 0)
                f = i;
        if (f < IR_ARRAY_LEN(sim_latency)) { /* --flag V or --flag=V */
            const char *v = eq ? eq + 1 : strtok_r(NULL, " ", &sp);
            if (!v || scaled_value(out, len, &at, sim_latency[f].flag, v, k)) return -1;
            seen[f] = true;
        } else {
            int n = snprintf(out + at, len - at, "%s%s", at ? " " : "", t);
            if (n < 0 || (size_t)n >= len - at) return -1;
            at += (size_t)n;
        }
        t = strtok_r(NULL, " ", &sp);
    }
    for (size_t i = 0; i < IR_ARRAY_LEN(sim_latency) && k != 1; i++) {
        char v[32];
        snprintf(v, sizeof v, "%.17g", sim_latency[i].def);
        if (!seen[i] && scaled_value(out, len, &at, sim_latency[i].flag, v, k)) return -1;
    }
    return 0;
}

/* The value of `--flag V` (or --flag=V) in args, else def. */
static double sim_flag(const char *args, const char *flag, double def) {
    size_t fl = strlen(flag);
    for (const char *p = args ? strstr(args, flag) : NULL; p; p = strstr(p + 1, flag)) {
        if ((p != args && p[-1] != ' ') || (p[fl] != ' ' && p[fl] != '=')) continue;
        char *end;
        double v = strtod(p + fl + 1, &end);
        if (end != p + fl + 1) return v;
    }
    return def;
}

size_t bench_sim_cache_blocks(const char *sim_args) {
    double gpu = sim_flag(sim_args, "--num-gpu-blocks-override", 4096);
    double cpu = sim_flag(sim_args, "--num-cpu-blocks", 0);
    return (size_t)fmin(fmax(gpu, 0), 1e9) + (size_t)fmin(fmax(cpu, 0), 1e9);
}

/* The gateway's load scrape follows the speed-up as the simulators do: its
 * defaults (load.scrape_interval 100ms, max_age 250ms) divided by K, so that a
 * report is as fresh in model time as at K = 1. The config's floor of 10 ms
 * bounds it: above K = 10 reports are staler than K times the defaults. The
 * latency parameters come from the effective simulator flags, already divided. */
static void gateway_yaml_load(ir_buf *out, double speedup) {
    double k = speedup > 0 ? speedup : 1;
    double every = fmax(10, round(100 / k)), age = fmax(every, round(250 / k));
    ir_buf_appendf(out, "load: {scrape_interval: %.0fms, max_age: %.0fms}\n", every, age);
}

int bench_gateway_yaml(ir_buf *out, const char *listen, const char *admin, const char *policy,
                       uint64_t seed, const char *model, const uint16_t *ports, int n,
                       const char *sim_args, const uint16_t (*ev_ports)[2], double speedup,
                       bool no_lookahead) {
    ir_buf_appendf(out, "# written by inferrail-bench for one run\n");
    ir_buf_appendf(out, "server: {listen: \"%s\", admin_listen: \"%s\", workers: 1}\n", listen,
                   admin);
    ir_buf_appendf(out,
                   "routing: {default_policy: %s, seed: %llu, cost_model: {prefill_token_us: "
                   "%.9g, prefill_pair_ns: %.9g, prefill_fixed_ms: %.9g, decode_token_ms: %.9g, "
                   "cpu_transfer_token_us: %.9g}}\n",
                   policy, (unsigned long long)seed, sim_flag(sim_args, "--prefill-token-us", 100),
                   sim_flag(sim_args, "--prefill-pair-ns", 3.3),
                   sim_flag(sim_args, "--prefill-fixed-ms", 5),
                   sim_flag(sim_args, "--decode-token-ms", 20),
                   sim_flag(sim_args, "--cpu-transfer-token-us", 5));
    ir_buf_appendf(out, "index: {block_size: %.0f%s}\n", sim_flag(sim_args, "--block-size", 16),
                   no_lookahead ? ", eviction_lookahead: false" : "");
    gateway_yaml_load(out, speedup);
    ir_buf_appendf(out, "models:\n  - name: %s\n    aliases: [sim]\n    tokenizer: \"%s\"\n", model,
                   IRT_SIM_SPEC);
    ir_buf_appendf(out, "replicas:\n");
    double blocks = sim_flag(sim_args, "--num-gpu-blocks-override", 4096);
    for (int i = 0; i < n; i++) {
        ir_buf_appendf(out,
                       "  - {id: sim-%d, url: \"http://127.0.0.1:%u\", models: [%s], "
                       "kv_capacity_blocks: %.0f",
                       i + 1, ports[i], model, blocks);
        if (ev_ports && ev_ports[i][0])
            ir_buf_appendf(out,
                           ", kv_events: {endpoint: \"tcp://127.0.0.1:%u\", replay_endpoint: "
                           "\"tcp://127.0.0.1:%u\"}",
                           ev_ports[i][0], ev_ports[i][1]);
        ir_buf_appendf(out, "}\n");
    }
    return out->data ? 0 : -1;
}

static void log_path(char *out, size_t len, const bench_fleet_opts *o, const char *what) {
    if (o->log_dir)
        snprintf(out, len, "%s/%s%s%s.log", o->log_dir, o->tag ? o->tag : "", o->tag ? "-" : "",
                 what);
    else
        snprintf(out, len, "/dev/null");
}

/* Spawns simulator i on a fresh free port. */
static void spawn_sim(const bench_fleet_opts *o, bench_fleet *f, int i, const char *extra,
                      const char *model) {
    char port[16], log[4200];
    f->sim_port[i] = bench_free_port();
    snprintf(port, sizeof port, "%u", f->sim_port[i]);
    char *argv[96] = {(char *)o->sim_bin,    "--port",     port, "--enable-prompt-tokens-details",
                      "--served-model-name", (char *)model};
    int a = 6;
    char events[300];
    if (o->kv_events) { /* vLLM's --kv-events-config, on two more free ports */
        f->ev_port[i][0] = bench_free_port();
        f->ev_port[i][1] = bench_free_port();
        snprintf(events, sizeof events,
                 "{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", \"endpoint\": "
                 "\"tcp://127.0.0.1:%u\", \"replay_endpoint\": \"tcp://127.0.0.1:%u\"}",
                 f->ev_port[i][0], f->ev_port[i][1]);
        argv[a++] = "--kv-events-config";
        argv[a++] = events;
    }
    char copy[1024];
    snprintf(copy, sizeof copy, "%s", extra);
    for (char *sp, *t = strtok_r(copy, " ", &sp); t && a < 94; t = strtok_r(NULL, " ", &sp))
        argv[a++] = t;
    argv[a] = NULL;
    char what[32];
    snprintf(what, sizeof what, "sim-%d", i + 1);
    log_path(log, sizeof log, o, what);
    f->sim_pid[i] = spawn(argv, log);
    snprintf(f->engine_url[i], sizeof f->engine_url[i], "http://127.0.0.1:%u", f->sim_port[i]);
    f->engine_ptr[i] = f->engine_url[i];
}

uint64_t bench_gateway_seed(uint64_t seed, int g) {
    return seed + (uint64_t)g * 1000003u;
}

/* Gateway g's file name part: "gateway" for the first, "gateway-2" and on for the others. */
static void gw_what(char *out, size_t len, int g) {
    if (g == 0)
        snprintf(out, len, "gateway");
    else
        snprintf(out, len, "gateway-%d", g + 1);
}

/* Writes gateway g's config for fresh free ports and spawns it; -1 when the
 * config cannot be written. Every gateway gets the same config but its ports and
 * its routing seed (bench_gateway_seed). */
static int spawn_gateway(const bench_fleet_opts *o, bench_fleet *f, int g, const char *model,
                         char *log, size_t loglen, char *err, size_t errlen) {
    f->gw_port[g] = bench_free_port();
    f->admin_port[g] = bench_free_port();
    char listen[32], admin[32], cfgpath[4200], what[32];
    snprintf(listen, sizeof listen, "127.0.0.1:%u", f->gw_port[g]);
    snprintf(admin, sizeof admin, "127.0.0.1:%u", f->admin_port[g]);
    gw_what(what, sizeof what, g);
    ir_buf y;
    ir_buf_init(&y, 1 << 20);
    char eff[1024];
    if (bench_sim_args_scaled(o->sim_args, o->speedup > 0 ? o->speedup : 1, eff, sizeof eff))
        snprintf(eff, sizeof eff, "%s", o->sim_args ? o->sim_args : "");
    f->gw_seed[g] = bench_gateway_seed(o->seed, g);
    bench_gateway_yaml(&y, listen, admin, o->policy, f->gw_seed[g], model, f->sim_port, f->n, eff,
                       o->kv_events ? (const uint16_t(*)[2])f->ev_port : NULL, o->speedup,
                       o->no_lookahead);
    if (o->log_dir)
        snprintf(cfgpath, sizeof cfgpath, "%s/%s%s%s.yaml", o->log_dir, o->tag ? o->tag : "",
                 o->tag ? "-" : "", what);
    else
        snprintf(cfgpath, sizeof cfgpath, "/tmp/inferrail-bench-%d-%s.yaml", (int)getpid(), what);
    FILE *fp = fopen(cfgpath, "w");
    if (!fp || fwrite(y.data, 1, y.len, fp) != y.len) {
        if (fp) fclose(fp);
        ir_buf_free(&y);
        snprintf(err, errlen, "cannot write %s", cfgpath);
        return -1;
    }
    fclose(fp);
    ir_buf_free(&y);
    log_path(log, loglen, o, what);
    char *argv[] = {(char *)o->gw_bin, "--config", cfgpath, NULL};
    f->gw_pid[g] = spawn(argv, log);
    snprintf(f->base_url[g], sizeof f->base_url[g], "http://%s", listen);
    f->base_ptr[g] = f->base_url[g];
    return 0;
}

/* A free port is only free until someone takes it: a process that exits
 * while starting (another one bound its port first) is started again on new
 * ports, up to this many times in all. One that hangs is not. */
#define START_TRIES 3

/* Starts the simulators and waits until each answers /health; -1 with err. */
static int start_sims(const bench_fleet_opts *o, bench_fleet *f, const char *extra,
                      const char *model, char *err, size_t errlen) {
    for (int i = 0; i < o->replicas; i++) {
        spawn_sim(o, f, i, extra, model);
        f->n = i + 1;
    }
    for (int i = 0; i < f->n; i++) {
        for (int tries = 1;; tries++) {
            char url[128];
            snprintf(url, sizeof url, "%s/health", f->engine_url[i]);
            if (f->sim_pid[i] > 0 && wait_up(url, f->sim_pid[i], 10, false) == 0) break;
            bool died = f->sim_pid[i] > 0 && !alive(f->sim_pid[i]);
            if (!died || tries >= START_TRIES) {
                snprintf(err, errlen, "simulator %d did not come up (see its log)", i + 1);
                return -1;
            }
            fprintf(stderr,
                    "inferrail-bench: simulator %d exited while starting; again on a new "
                    "port\n",
                    i + 1);
            spawn_sim(o, f, i, extra, model); /* the dead one was reaped by wait_up */
        }
    }
    return 0;
}

/* Starts gateway g and waits until it answers; -1 with err. */
static int start_gateway(const bench_fleet_opts *o, bench_fleet *f, int g, const char *model,
                         char *err, size_t errlen) {
    char log[4200], url[128];
    f->n_gw = g + 1;
    for (int tries = 1;; tries++) {
        if (spawn_gateway(o, f, g, model, log, sizeof log, err, errlen)) return -1;
        snprintf(url, sizeof url, "%s/health", f->base_url[g]);
        /* Any answer means it listens; give it a moment to see its replicas healthy. */
        if (f->gw_pid[g] > 0 && wait_up(url, f->gw_pid[g], 15, true) == 0) break;
        bool died = f->gw_pid[g] > 0 && !alive(f->gw_pid[g]);
        char who[32] = "the gateway"; /* "gateway N" when there are several */
        if (o->gateways > 1) snprintf(who, sizeof who, "gateway %d", g + 1);
        if (!died || tries >= START_TRIES) {
            snprintf(err, errlen, "%s did not come up (see %s)", who, log);
            return -1;
        }
        fprintf(stderr, "inferrail-bench: %s exited while starting (see %s); again on new ports\n",
                who, log);
        f->gw_pid[g] = 0; /* reaped by wait_up */
    }
    wait_up(url, f->gw_pid[g], 3, false);
    return 0;
}

int bench_fleet_start(const bench_fleet_opts *o, bench_fleet *f, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    int ngw = o->gateways > 0 ? o->gateways : 1;
    if (o->replicas < 1 || o->replicas > BENCH_MAX_REPLICAS) {
        snprintf(err, errlen, "--replicas must be 1..%d", BENCH_MAX_REPLICAS);
        return -1;
    }
    if (ngw > BENCH_MAX_GATEWAYS) {
        snprintf(err, errlen, "--gateways must be 1..%d", BENCH_MAX_GATEWAYS);
        return -1;
    }
    const char *model = o->model ? o->model : "inferrail/sim-8b";
    char extra[1024];
    if (bench_sim_args_scaled(o->sim_args, o->speedup > 0 ? o->speedup : 1, extra, sizeof extra)) {
        snprintf(err, errlen, "--sim-args: too long, or a latency flag has a bad value");
        return -1;
    }
    if (start_sims(o, f, extra, model, err, errlen)) {
        bench_fleet_stop(f);
        return -1;
    }
    if (!o->policy) {
        snprintf(f->base_url[0], sizeof f->base_url[0], "%s", f->engine_url[0]);
        f->base_ptr[0] = f->base_url[0];
        f->n_base = 1;
        return 0;
    }
    for (int g = 0; g < ngw; g++) {
        if (start_gateway(o, f, g, model, err, errlen)) {
            bench_fleet_stop(f);
            return -1;
        }
    }
    f->n_base = (size_t)f->n_gw;
    return 0;
}

void bench_fleet_gateway_requests(const bench_fleet *f, double *out) {
    for (int g = 0; g < f->n_gw; g++) {
        char url[128];
        snprintf(url, sizeof url, "http://127.0.0.1:%u/metrics", f->admin_port[g]);
        ir_buf page;
        ir_buf_init(&page, 8u << 20);
        int st = bench_http_get(url, &page, 5);
        out[g] = st == 200 && page.data
                     ? irl_prom_sum(page.data, page.len, "inferrail_requests_total")
                     : -1;
        ir_buf_free(&page);
    }
}

json_t *bench_fleet_exited(bench_fleet *f) {
    json_t *out = json_array();
    char name[32];
    for (int i = 0; i < f->n; i++)
        if (f->sim_pid[i] > 0 && !alive(f->sim_pid[i])) {
            snprintf(name, sizeof name, "sim-%d", i + 1);
            json_array_append_new(out, json_string(name));
            f->sim_pid[i] = 0; /* reaped */
        }
    for (int g = 0; g < f->n_gw; g++)
        if (f->gw_pid[g] > 0 && !alive(f->gw_pid[g])) {
            snprintf(name, sizeof name, "gateway-%d", g + 1);
            json_array_append_new(out, json_string(name));
            f->gw_pid[g] = 0;
        }
    return out;
}

void bench_fleet_stop(bench_fleet *f) {
    for (int g = 0; g < f->n_gw; g++) {
        stop_pid(f->gw_pid[g]);
        f->gw_pid[g] = 0;
    }
    f->n_gw = 0;
    for (int i = 0; i < f->n; i++) stop_pid(f->sim_pid[i]);
    f->n = 0;
}

static const char no_lookahead_suffix[] = "+events-nolookahead";

bool bench_policy_no_lookahead(const char *name) {
    const char *plus = strchr(name, '+');
    return plus && strcmp(plus, no_lookahead_suffix) == 0;
}

int bench_policy_variant(const char *name, char *base, size_t len, bool *kv_events) {
    static const char suffix[] = "+events";
    const char *plus = strchr(name, '+');
    size_t n = plus ? (size_t)(plus - name) : strlen(name);
    *kv_events = plus != NULL;
    if (plus && strcmp(plus, suffix) != 0 && strcmp(plus, no_lookahead_suffix) != 0) return -1;
    if (n == 0 || n >= len) return -1;
    memcpy(base, name, n);
    base[n] = 0;
    return 0;
}
