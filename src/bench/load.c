/* load.c: closed-loop load for the simulator and gateway benchmarks:
 * `streams` (N concurrent SSE streams), `soak` (many requests, memory growth)
 * and `rps` (throughput at fixed concurrency). */
#include "bench/bench.h"
#include "net/ir_net.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

typedef struct load_opts {
    ir_url url;
    const char *path;
    const char *model;
    int n;           /* streams: concurrent streams; soak/rps: total requests (0 = by duration) */
    int concurrency; /* soak/rps */
    double duration; /* rps: seconds */
    int max_tokens;
    bool stream;
    int pid; /* soak: process whose memory is watched */
    int warmup;
    bool distinct; /* a different prompt per request */
} load_opts;

typedef struct load_run load_run;

typedef struct call {
    load_run *run;
    char *own_body; /* the request's own body with --distinct */
    irn_client *h;
    ir_buf body_in;
    ir_sse_decoder sse;
    int status;
    bool saw_done;
    long completion_tokens;
    uint64_t t0;
    char replica[64];
    int slot;
} call;

struct load_run {
    uv_loop_t *loop;
    irn_pool *pool;
    load_opts o;
    char *body;
    size_t body_len;
    irn_header hdrs[2];
    int started, finished, errors, inflight, target;
    uint64_t t_start, t_end, deadline;
    double *lat;
    size_t nlat, lat_cap;
    /* per-replica counts from x-inferrail-replica */
    char replicas[16][64];
    int replica_n[16];
    int nreplicas;
    int errors_by_status[6]; /* 0: transport, 1..5: status class */
};

static void start_one(load_run *r);

static int on_sse(void *ud, const ir_sse_event *ev) {
    call *c = ud;
    if (ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0) {
        c->saw_done = true;
        return 0;
    }
    const char *u = strstr(ev->data, "\"completion_tokens\":");
    if (u) c->completion_tokens = strtol(u + 20, NULL, 10);
    return 0;
}

static void on_head(void *ud, int status, const irn_header *h, size_t n) {
    call *c = ud;
    c->status = status;
    const irn_header *rep = irn_headers_find(h, n, "x-inferrail-replica");
    if (rep) snprintf(c->replica, sizeof c->replica, "%.*s", (int)rep->value_len, rep->value);
}

static void on_body(void *ud, const char *data, size_t len) {
    call *c = ud;
    if (c->run->o.stream)
        ir_sse_feed(&c->sse, data, len);
    else
        ir_buf_append(&c->body_in, data, len);
}

static void count_replica(load_run *r, const char *name) {
    if (!name[0]) return;
    for (int i = 0; i < r->nreplicas; i++) {
        if (strcmp(r->replicas[i], name) == 0) {
            r->replica_n[i]++;
            return;
        }
    }
    if (r->nreplicas < 16) {
        snprintf(r->replicas[r->nreplicas], 64, "%s", name);
        r->replica_n[r->nreplicas++] = 1;
    }
}

static void on_done(void *ud, int err) {
    call *c = ud;
    load_run *r = c->run;
    uint64_t now = ir_now_ns();
    bool ok = err == 0 && c->status == 200;
    if (ok && r->o.stream) ok = c->saw_done && c->completion_tokens == r->o.max_tokens;
    if (ok && !r->o.stream) {
        const char *u = c->body_in.data ? strstr(c->body_in.data, "\"completion_tokens\":") : NULL;
        ok = u && strtol(u + 20, NULL, 10) == r->o.max_tokens;
    }
    if (!ok) {
        r->errors++;
        r->errors_by_status[err ? 0 : (c->status / 100) % 6]++;
        if (r->errors <= 3) {
            if (err)
                fprintf(stderr, "request failed: %s\n", irn_strerror(err));
            else if (c->status != 200)
                fprintf(stderr, "request failed: status %d\n", c->status);
            else
                fprintf(stderr, "request failed: status 200 but %s\n",
                        r->o.stream && !c->saw_done ? "the stream ended without [DONE]"
                                                    : "not max_tokens completion tokens");
        }
    }
    /* Latencies are of the successes only: a fast 404 is not a fast answer. */
    if (ok && r->nlat == r->lat_cap) {
        r->lat_cap = r->lat_cap ? r->lat_cap * 2 : 4096;
        r->lat = realloc(r->lat, r->lat_cap * sizeof *r->lat);
    }
    if (ok) r->lat[r->nlat++] = (double)(now - c->t0) / 1e6;
    count_replica(r, c->replica);
    r->finished++;
    r->inflight--;
    r->t_end = now;
    ir_buf_free(&c->body_in);
    ir_sse_free(&c->sse);
    free(c->own_body);
    free(c);
    bool more = r->o.duration > 0 ? now < r->deadline : r->started < r->target;
    if (more && r->o.concurrency) start_one(r);
    if (r->inflight == 0) irn_pool_close(r->pool, NULL, NULL);
}

static const irn_client_cbs cbs = {on_head, on_body, on_done};

static void start_one(load_run *r) {
    call *c = calloc(1, sizeof *c);
    c->run = r;
    ir_buf_init(&c->body_in, 1 << 20);
    ir_sse_init(&c->sse, 1 << 20, on_sse, c);
    c->t0 = ir_now_ns();
    irn_client_req q = {.host = r->o.url.host,
                        .port = r->o.url.port,
                        .method = "POST",
                        .path = r->o.path,
                        .headers = r->hdrs,
                        .nheaders = 1,
                        .body = r->body,
                        .body_len = r->body_len,
                        .connect_timeout_ns = 10000000000ull,
                        .head_timeout_ns = 60000000000ull,
                        .idle_timeout_ns = 60000000000ull};
    if (r->o.distinct) {
        /* Same length, different text: the server's caches churn. */
        size_t n = r->body_len;
        c->own_body = malloc(n + 1);
        memcpy(c->own_body, r->body, n + 1);
        char *mark = strstr(c->own_body, "Say something");
        if (mark) {
            char tag[16];
            snprintf(tag, sizeof tag, "%012d", r->started);
            memcpy(mark, tag, 12);
        }
        q.body = c->own_body;
    }
    r->started++;
    r->inflight++;
    if (irn_client_request(r->pool, &q, &cbs, c, &c->h) != 0) {
        r->inflight--;
        r->errors++;
        r->finished++;
        ir_buf_free(&c->body_in);
        ir_sse_free(&c->sse);
        free(c->own_body);
        free(c);
    }
}

static void raise_fd_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void load_usage(const char *cmd) {
    printf("Usage: inferrail-bench %s --url URL [options]\n\n", cmd);
    if (strcmp(cmd, "streams") == 0)
        printf("Opens N SSE streams at once against one server; prints the total time and the\n"
               "errors. Exit status 1 when any stream failed.\n\n");
    else if (strcmp(cmd, "soak") == 0)
        printf("Sends many requests at a fixed concurrency and reports how much the resident\n"
               "memory of --pid grew (after a warmup). Exit status 1 when any request failed.\n\n");
    else
        printf("Closed-loop requests per second at a fixed concurrency; rps counts successes\n"
               "only. Exit status 1 when any request failed.\n\n");
    printf("Options:\n"
           "  --url URL          server base URL (default http://127.0.0.1:8000)\n"
           "  --path P           request path (default /v1/chat/completions)\n"
           "  --model M          the request's model (default: none sent)\n"
           "  --n N, --requests N  streams: concurrent streams (default 2000); soak and rps:\n"
           "                     total requests (soak default 35000; rps: by --duration)\n"
           "  --concurrency C    soak and rps: requests in flight (default 64 and 32)\n"
           "  --duration S       rps: seconds to run when --n is not given (default 5)\n"
           "  --max-tokens T     max_tokens of each request; a success has exactly T (default "
           "16)\n"
           "  --no-stream        plain JSON responses instead of SSE\n"
           "  --pid PID          soak: the server process whose memory is watched (required)\n"
           "  --warmup W         soak: requests before the first memory reading (default 2000)\n"
           "  --distinct         a different prompt per request (caches churn)\n"
           "  --help             this text\n");
}

static int parse_opts(int argc, char **argv, load_opts *o, const char *cmd) {
    static const struct option opts[] = {
        {"url", required_argument, 0, 'u'},      {"path", required_argument, 0, 'p'},
        {"model", required_argument, 0, 'm'},    {"n", required_argument, 0, 'n'},
        {"requests", required_argument, 0, 'n'}, {"concurrency", required_argument, 0, 'c'},
        {"duration", required_argument, 0, 'd'}, {"max-tokens", required_argument, 0, 't'},
        {"no-stream", no_argument, 0, 'S'},      {"pid", required_argument, 0, 'P'},
        {"warmup", required_argument, 0, 'w'},   {"help", no_argument, 0, 'h'},
        {"distinct", no_argument, 0, 'D'},       {0, 0, 0, 0},
    };
    memset(o, 0, sizeof *o);
    o->path = "/v1/chat/completions";
    o->max_tokens = 16;
    o->stream = true;
    const char *url = "http://127.0.0.1:8000";
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'u':
            url = optarg;
            break;
        case 'p':
            o->path = optarg;
            break;
        case 'm':
            o->model = optarg;
            break;
        case 'n':
            o->n = atoi(optarg);
            break;
        case 'c':
            o->concurrency = atoi(optarg);
            break;
        case 'd':
            o->duration = atof(optarg);
            break;
        case 't':
            o->max_tokens = atoi(optarg);
            break;
        case 'S':
            o->stream = false;
            break;
        case 'P':
            o->pid = atoi(optarg);
            break;
        case 'w':
            o->warmup = atoi(optarg);
            break;
        case 'D':
            o->distinct = true;
            break;
        case 'h':
            load_usage(cmd);
            return 1;
        default:
            return -1;
        }
    }
    if (ir_url_parse(url, &o->url)) {
        fprintf(stderr, "inferrail-bench: --url: not an http URL: %s\n", url);
        return -1;
    }
    return 0;
}

static void make_body(load_run *r) {
    ir_buf b;
    ir_buf_init(&b, 0);
    bool chat = strstr(r->o.path, "chat") != NULL;
    ir_buf_append_str(&b, "{");
    if (r->o.model) ir_buf_appendf(&b, "\"model\":\"%s\",", r->o.model);
    if (chat)
        ir_buf_append_str(&b, "\"messages\":[{\"role\":\"user\",\"content\":\"Say something about "
                              "caches and routers.\"}]");
    else
        ir_buf_append_str(&b, "\"prompt\":\"Say something about caches and routers.\"");
    ir_buf_appendf(&b, ",\"max_tokens\":%d", r->o.max_tokens);
    if (r->o.stream)
        ir_buf_append_str(&b, ",\"stream\":true,\"stream_options\":{\"include_usage\":true}");
    ir_buf_append_str(&b, "}");
    r->body = ir_buf_steal(&b, &r->body_len);
    r->hdrs[0] = (irn_header){"content-type", 12, "application/json", 16};
}

/* Runs `total` requests (or for duration) with `concurrency` in flight;
 * concurrency 0 starts them all at once. */
static void run_load(load_run *r, int total, int concurrency) {
    uv_loop_t loop;
    uv_loop_init(&loop);
    r->loop = &loop;
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.max_idle_per_host = (size_t)(concurrency ? concurrency : total) + 16;
    r->pool = irn_pool_new(&loop, &pc);
    r->target = total;
    r->o.concurrency = concurrency;
    r->t_start = ir_now_ns();
    r->deadline = r->t_start + (uint64_t)(r->o.duration * 1e9);
    int first = concurrency ? concurrency : total;
    if (total && first > total) first = total;
    for (int i = 0; i < first; i++) start_one(r);
    if (r->inflight == 0) irn_pool_close(r->pool, NULL, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
}

static void print_latency(load_run *r) {
    if (r->nlat == 0) {
        printf("\"latency_ms\":null"); /* no success: nothing measured */
    } else {
        qsort(r->lat, r->nlat, sizeof *r->lat, bench_cmp_double);
        printf("\"latency_ms\":{\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f,\"max\":%.3f}",
               bench_percentile(r->lat, r->nlat, 50), bench_percentile(r->lat, r->nlat, 90),
               bench_percentile(r->lat, r->nlat, 99), r->lat[r->nlat - 1]);
    }
    printf(",\"per_replica\":{");
    for (int i = 0; i < r->nreplicas; i++)
        printf("%s\"%s\":%d", i ? "," : "", r->replicas[i], r->replica_n[i]);
    printf("}");
}

int bench_streams(int argc, char **argv) {
    load_run r = {0};
    int rc = parse_opts(argc, argv, &r.o, "streams");
    if (rc) return rc > 0 ? 0 : 2;
    if (r.o.n <= 0) r.o.n = 2000;
    raise_fd_limit();
    make_body(&r);
    run_load(&r, r.o.n, 0);
    double secs = (double)(r.t_end - r.t_start) / 1e9;
    printf("{\"bench\":\"streams\",\"streams\":%d,\"max_tokens\":%d,\"completed\":%d,\"errors\":%d,"
           "\"total_s\":%.4f,",
           r.o.n, r.o.max_tokens, r.finished - r.errors, r.errors, secs);
    print_latency(&r);
    printf("}\n");
    free(r.body);
    free(r.lat);
    return r.errors ? 1 : 0;
}

int bench_rps(int argc, char **argv) {
    load_run r = {0};
    int rc = parse_opts(argc, argv, &r.o, "rps");
    if (rc) return rc > 0 ? 0 : 2;
    if (r.o.concurrency <= 0) r.o.concurrency = 32;
    if (r.o.duration <= 0 && r.o.n <= 0) r.o.duration = 5;
    raise_fd_limit();
    make_body(&r);
    run_load(&r, r.o.n, r.o.concurrency);
    double secs = (double)(r.t_end - r.t_start) / 1e9;
    int ok = r.finished - r.errors;
    printf("{\"bench\":\"rps\",\"concurrency\":%d,\"stream\":%s,\"requests\":%d,\"ok\":%d,"
           "\"errors\":%d,\"seconds\":%.3f,\"rps\":%.1f,",
           r.o.concurrency, r.o.stream ? "true" : "false", r.finished, ok, r.errors, secs,
           secs > 0 ? (double)ok / secs : 0.0);
    print_latency(&r);
    printf("}\n");
    free(r.body);
    free(r.lat);
    return r.errors ? 1 : 0;
}

int bench_soak(int argc, char **argv) {
    load_run r = {0};
    int rc = parse_opts(argc, argv, &r.o, "soak");
    if (rc) return rc > 0 ? 0 : 2;
    if (r.o.n <= 0) r.o.n = 35000;
    if (r.o.concurrency <= 0) r.o.concurrency = 64;
    if (r.o.warmup <= 0) r.o.warmup = 2000;
    if (r.o.pid <= 0) {
        fprintf(stderr, "inferrail-bench soak: --pid of the server is required\n");
        return 2;
    }
    raise_fd_limit();
    make_body(&r);
    /* A warmup settles allocator pools and connection buffers first. */
    load_run w = r;
    w.lat = NULL;
    w.started = 0;
    run_load(&w, r.o.warmup, r.o.concurrency);
    free(w.lat);
    long before = bench_rss_kib(r.o.pid);
    run_load(&r, r.o.n, r.o.concurrency);
    long after = bench_rss_kib(r.o.pid);
    double secs = (double)(r.t_end - r.t_start) / 1e9;
    printf("{\"bench\":\"soak\",\"requests\":%d,\"concurrency\":%d,\"errors\":%d,\"seconds\":%.2f,"
           "\"rss_before_kib\":%ld,\"rss_after_kib\":%ld,\"rss_growth_mb\":%.2f,",
           r.finished, r.o.concurrency, r.errors + w.errors, secs, before, after,
           (double)(after - before) / 1024.0);
    print_latency(&r);
    printf("}\n");
    free(r.body);
    free(r.lat);
    return r.errors ? 1 : 0;
}
