/* overhead.c: an open-loop load generator for the gateway overhead benchmark.
 *
 *   ir-overhead --url URL --rate R --requests N [--warmup W] [--path P] [--body JSON]
 *               [--max-connections C]
 *
 * Requests are due at a fixed rate (evenly spaced) whatever earlier ones are
 * doing. A timerfd armed at each due time (microsecond resolution) wakes the
 * loop, so requests leave one by one rather than in millisecond bursts that
 * would queue behind each other. Latency is
 * measured from the actual send to the end of the response (the server's
 * time) and, separately, from the scheduled time (what a client would see).
 * With --max-connections, at most C requests are in flight (so at most C
 * keep-alive connections open); a due request waits for one to free up, and
 * the wait shows in send_lag and latency_from_schedule. Without a cap, a
 * proxy that slows down makes the client open ever more connections.
 * Prints one JSON line. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "net/ir_net.h"

typedef struct ol {
    uv_loop_t loop;
    uv_poll_t tick; /* watches tfd */
    int tfd;
    irn_pool *pool;
    ir_url url;
    const char *path;
    const char *body;
    size_t body_len;
    double rate;
    int total, warmup, sent, done, errors, inflight;
    int max_inflight; /* 0: no cap; else requests wait for a free connection */
    bool held;        /* a due request waits for one */
    uint64_t t0;
    double *lat_send, *lat_sched, *lag;
    size_t nrec;
    irn_header hdr;
    irn_pool_stats ps;
} ol;

typedef struct call {
    ol *o;
    int idx;
    uint64_t sched, sent;
    int status;
} call;

static void finish_if_done(ol *o) {
    if (o->done != o->total || !o->pool) return;
    irn_pool_stats_get(o->pool, &o->ps);
    uv_poll_stop(&o->tick);
    uv_close((uv_handle_t *)&o->tick, NULL);
    irn_pool_close(o->pool, NULL, NULL);
    o->pool = NULL;
}

static void on_head(void *ud, int status, const irn_header *h, size_t n) {
    ((call *)ud)->status = status;
}
static void on_body(void *ud, const char *d, size_t n) {}

static void on_done(void *ud, int err) {
    call *c = ud;
    ol *o = c->o;
    uint64_t now = ir_now_ns();
    if (err || c->status != 200) o->errors++;
    if (c->idx >= o->warmup) {
        o->lat_send[o->nrec] = (double)(now - c->sent) / 1e3;
        o->lat_sched[o->nrec] = (double)(now - c->sched) / 1e3;
        o->lag[o->nrec] = (double)(c->sent - c->sched) / 1e3;
        o->nrec++;
    }
    o->done++;
    o->inflight--;
    free(c);
    if (o->held) { /* send the held request from the timer, outside the pool's callback */
        o->held = false;
        struct itimerspec its = {.it_value = {0, 1}}; /* absolute 1 ns: already past */
        timerfd_settime(o->tfd, TFD_TIMER_ABSTIME, &its, NULL);
    }
    finish_if_done(o);
}

static const irn_client_cbs cbs = {on_head, on_body, on_done};

static uint64_t due_at(const ol *o, int i) {
    return o->t0 + (uint64_t)((double)i * 1e9 / o->rate);
}

/* Arms the timerfd for the next request's due time (CLOCK_MONOTONIC, as ir_now_ns). */
static void arm(ol *o) {
    if (o->sent >= o->total) return;
    uint64_t due = due_at(o, o->sent);
    struct itimerspec its = {.it_value = {(time_t)(due / 1000000000u), (long)(due % 1000000000u)}};
    timerfd_settime(o->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void on_tick(uv_poll_t *t, int status, int events) {
    (void)status;
    (void)events;
    ol *o = t->data;
    uint64_t expirations; /* drained so the fd stops polling readable; EAGAIN is fine */
    ssize_t rd = read(o->tfd, &expirations, sizeof expirations);
    (void)rd;
    uint64_t now = ir_now_ns();
    while (o->sent < o->total) {
        uint64_t due = due_at(o, o->sent);
        if (due > now) break;
        if (o->max_inflight && o->inflight >= o->max_inflight) {
            o->held = true;
            return; /* on_done re-arms */
        }
        call *c = calloc(1, sizeof *c);
        c->o = o;
        c->idx = o->sent;
        c->sched = due;
        c->sent = ir_now_ns();
        irn_client_req q = {.host = o->url.host,
                            .port = o->url.port,
                            .method = "POST",
                            .path = o->path,
                            .headers = &o->hdr,
                            .nheaders = 1,
                            .body = o->body,
                            .body_len = o->body_len,
                            .connect_timeout_ns = 5000000000ull,
                            .head_timeout_ns = 30000000000ull,
                            .idle_timeout_ns = 30000000000ull};
        irn_client *h;
        o->sent++;
        o->inflight++;
        if (irn_client_request(o->pool, &q, &cbs, c, &h)) {
            free(c);
            o->inflight--;
            o->errors++;
            o->done++;
        }
    }
    arm(o);
    finish_if_done(o);
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p) {
    if (!n) return NAN;
    double r = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(r), hi = (size_t)ceil(r);
    return v[lo] + (v[hi] - v[lo]) * (r - (double)lo);
}

static void dist(const char *name, double *v, size_t n) {
    qsort(v, n, sizeof *v, cmpd);
    printf("\"%s\":{\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p999\":%.1f,\"max\":%.1f}", name,
           pct(v, n, 50), pct(v, n, 90), pct(v, n, 99), pct(v, n, 99.9), n ? v[n - 1] : NAN);
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"url", required_argument, 0, 'u'},
        {"rate", required_argument, 0, 'r'},
        {"requests", required_argument, 0, 'n'},
        {"warmup", required_argument, 0, 'w'},
        {"path", required_argument, 0, 'p'},
        {"body", required_argument, 0, 'b'},
        {"max-connections", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    ol o;
    memset(&o, 0, sizeof o);
    const char *url = "http://127.0.0.1:8080";
    o.path = "/v1/completions";
    o.body = "{\"model\":\"inferrail/sim-8b\",\"prompt\":\"hello\",\"max_tokens\":1}";
    o.rate = 2000;
    o.total = 10000;
    o.warmup = 1000;
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'u':
            url = optarg;
            break;
        case 'r':
            o.rate = atof(optarg);
            break;
        case 'n':
            o.total = atoi(optarg);
            break;
        case 'w':
            o.warmup = atoi(optarg);
            break;
        case 'p':
            o.path = optarg;
            break;
        case 'b':
            o.body = optarg;
            break;
        case 'c':
            o.max_inflight = atoi(optarg);
            break;
        default:
            fprintf(ch == 'h' ? stdout : stderr,
                    "usage: ir-overhead --url URL --rate R --requests N [--warmup W] [--path P] "
                    "[--body JSON] [--max-connections C]\n");
            return ch == 'h' ? 0 : 2;
        }
    }
    if (ir_url_parse(url, &o.url) || o.rate <= 0 || o.total <= o.warmup) {
        fprintf(stderr, "ir-overhead: bad --url, --rate or --requests\n");
        return 2;
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    o.body_len = strlen(o.body);
    o.hdr = (irn_header){"content-type", 12, "application/json", 16};
    size_t n = (size_t)(o.total - o.warmup);
    o.lat_send = malloc(n * sizeof(double));
    o.lat_sched = malloc(n * sizeof(double));
    o.lag = malloc(n * sizeof(double));
    uv_loop_init(&o.loop);
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.max_idle_per_host = 1024;
    o.pool = irn_pool_new(&o.loop, &pc);
    o.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (o.tfd < 0 || uv_poll_init(&o.loop, &o.tick, o.tfd)) {
        fprintf(stderr, "ir-overhead: timerfd\n");
        return 1;
    }
    o.tick.data = &o;
    o.t0 = ir_now_ns() + 1000000; /* first request 1 ms from now */
    arm(&o);
    uv_poll_start(&o.tick, UV_READABLE, on_tick);
    uv_run(&o.loop, UV_RUN_DEFAULT);
    uv_loop_close(&o.loop);
    close(o.tfd);
    double secs = (double)(ir_now_ns() - o.t0) / 1e9;
    printf("{\"url\":\"%s\",\"rate\":%.0f,\"requests\":%d,\"measured\":%zu,\"errors\":%d,"
           "\"seconds\":%.2f,\"connections\":%llu,\"max_connections\":%d,\"units\":\"us\",",
           url, o.rate, o.total, o.nrec, o.errors, secs, (unsigned long long)o.ps.conns_created,
           o.max_inflight);
    dist("latency", o.lat_send, o.nrec);
    printf(",");
    dist("latency_from_schedule", o.lat_sched, o.nrec);
    printf(",");
    dist("send_lag", o.lag, o.nrec);
    printf("}\n");
    free(o.lat_send);
    free(o.lat_sched);
    free(o.lag);
    return o.errors ? 1 : 0;
}
