/* bench_obs.c: what recording one streamed request costs in the metrics
 * registry: the records the gateway makes per request (its outcome, TTFT,
 * duration, the routing decision and its time, prompt and predicted cached
 * tokens), from T threads at once, each into series of its own replica or all
 * into the same ones. Goal: at most 200 ns per request.
 *
 *   build/inferrail-obsbench [threads] [requests per thread]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"
#include "obs/ir_obs.h"

typedef struct rec {
    iro_series *requests, *ttft, *duration, *decisions, *decision_s, *prompt, *cached;
    long n;
} rec;

static void *run(void *ud) {
    rec *r = ud;
    double t = 0.001;
    for (long i = 0; i < r->n; i++) {
        iro_inc(r->requests, 1);
        iro_observe(r->ttft, t);
        iro_observe(r->duration, t * 40);
        iro_inc(r->decisions, 1);
        iro_observe(r->decision_s, 2e-6);
        iro_inc(r->prompt, 812);
        iro_inc(r->cached, 512);
        t = t < 2 ? t * 1.01 : 0.001;
    }
    return NULL;
}

static rec make(iro_registry *reg, const char *replica, long n) {
    const char *mrs[] = {"model", "replica", "status", NULL},
               *mpr[] = {"model", "policy", "replica", NULL};
    const char *p[] = {"policy", NULL}, *m[] = {"model", NULL};
    const double *lb = iro_latency_buckets;
    size_t nb = iro_latency_nbuckets;
    static const double fast[] = {1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 1e-2};
    rec r = {
        iro_series_of(iro_counter(reg, "inferrail_requests_total", "R", mrs), "m", replica, "2xx"),
        iro_series_of(iro_histogram(reg, "inferrail_ttft_seconds", "T", mpr, lb, nb), "m", "p2c",
                      replica),
        iro_series_of(iro_histogram(reg, "inferrail_request_duration_seconds", "D", mpr, lb, nb),
                      "m", "p2c", replica),
        iro_series_of(iro_counter(reg, "inferrail_routing_decisions_total", "C", mpr), "m", "p2c",
                      replica),
        iro_series_of(iro_histogram(reg, "inferrail_routing_decision_seconds", "S", p, fast, 8),
                      "p2c"),
        iro_series_of(iro_counter(reg, "inferrail_prompt_tokens_total", "P", m), "m"),
        iro_series_of(iro_counter(reg, "inferrail_predicted_cached_tokens_total", "K", m), "m"),
        n};
    return r;
}

static double once(int threads, long n, bool shared) {
    iro_registry *reg = iro_registry_new(IRO_FMT_PLAIN);
    pthread_t t[64];
    rec r[64];
    for (int i = 0; i < threads; i++) {
        char id[16];
        snprintf(id, sizeof id, "r%d", shared ? 0 : i);
        r[i] = make(reg, id, n);
    }
    uint64_t t0 = ir_now_ns();
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, run, &r[i]);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    uint64_t dt = ir_now_ns() - t0;
    iro_registry_free(reg);
    /* wall time per request per thread: what one worker pays per request */
    return (double)dt / (double)n;
}

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: inferrail-obsbench [threads 1..64] [requests per thread]\n"
               "The metrics registry's recording cost, threads racing (bench/obs).\n");
        return 0;
    }
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    long n = argc > 2 ? atol(argv[2]) : 2000000;
    if (threads < 1 || threads > 64 || n < 1) {
        fprintf(stderr, "usage: inferrail-obsbench [threads 1..64] [requests per thread]\n");
        return 2;
    }
    printf("threads %d, %ld requests each, 7 records per request\n", threads, n);
    for (int k = 0; k < 3; k++) {
        printf("  own replica's series   %6.1f ns per request\n", once(threads, n, false));
        printf("  one shared series set  %6.1f ns per request\n", once(threads, n, true));
    }
    return 0;
}
