/* dp.c: data-parallel engines. vLLM (and SGLang) started with --data-parallel-size N
 * run N engine cores behind one HTTP port: each rank has its own scheduler, KV
 * cache and KV event stream, and a request names its rank with the
 * X-data-parallel-rank header. A replica with data_parallel_size N is therefore N
 * routing targets, made here from the loaded file before anything else reads it:
 * the fleet, the index, the KV event subscriber, the scraper, the metrics and
 * reloads then see N ordinary replicas. */
#include "gateway/gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A header name in a replica's headers, whatever its case. */
static json_t *header_named(json_t *obj, const char *name) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) if (strcasecmp(k, name) == 0) return v;
    return NULL;
}

int gw_dp_endpoint(const char *ep, int64_t rank, char *out, size_t cap) {
    if (!ep || strncmp(ep, "tcp://", 6) != 0) return -1;
    const char *colon = strrchr(ep + 6, ':');
    if (!colon || !colon[1]) return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port <= 0 || port + rank > 65535 || rank < 0) return -1;
    int n = snprintf(out, cap, "%.*s:%ld", (int)(colon - ep), ep, port + (long)rank);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

int gw_dp_id(const char *base, int64_t rank, char *out, size_t cap) {
    int n = snprintf(out, cap, "%s/dp%lld", base, (long long)rank);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* The targets replica i needs: its ids and endpoints must hold for its last rank. */
static void check_one(const gw_replica_cfg *r, size_t i, ir_cfg_errors *errs) {
    int64_t last = r->data_parallel_size - 1;
    char buf[512];
    if (gw_dp_id(r->id, last, buf, sizeof buf) || strlen(buf) > GW_REPLICA_ID_MAX)
        ir_cfg_errors_add(errs,
                          "replicas[%zu].id: '%s' is too long for data_parallel_size %lld: its "
                          "targets' ids (%s) must fit in %d bytes",
                          i, r->id, (long long)r->data_parallel_size, buf, GW_REPLICA_ID_MAX);
    if (r->headers.obj && header_named(r->headers.obj, GW_DP_HEADER))
        ir_cfg_errors_add(errs,
                          "replicas[%zu].headers: sets X-data-parallel-rank, which "
                          "data_parallel_size %lld sets per target",
                          i, (long long)r->data_parallel_size);
    const char *eps[2] = {r->kv_events.endpoint, r->kv_events.replay_endpoint};
    const char *keys[2] = {"endpoint", "replay_endpoint"};
    for (int k = 0; k < 2; k++)
        if (eps[k] && gw_dp_endpoint(eps[k], last, buf, sizeof buf))
            ir_cfg_errors_add(errs,
                              "replicas[%zu].kv_events.%s: '%s' cannot serve data_parallel_size "
                              "%lld: rank r publishes on the port plus r (vLLM), so it must be "
                              "tcp://host:port with port + %lld at most 65535",
                              i, keys[k], eps[k], (long long)r->data_parallel_size,
                              (long long)last);
}

/* The tcp ports one of a replica's kv_events sockets takes: port .. port + N - 1 on
 * host (rank r binds the port plus r). */
typedef struct ev_range {
    size_t replica;
    const char *key; /* endpoint or replay_endpoint */
    const char *ep;
    char host[256];
    long first, last;
} ev_range;

/* ep's range with N ranks; false when ep is not tcp://host:port with room for them
 * (gw_check_kv_events and check_one say why). */
static bool ev_range_of(const char *ep, int64_t n, ev_range *out) {
    char buf[512];
    if (!ep || gw_dp_endpoint(ep, n - 1, buf, sizeof buf)) return false;
    const char *host = ep + 6, *colon = strrchr(host, ':');
    if ((size_t)(colon - host) >= sizeof out->host) return false;
    snprintf(out->host, sizeof out->host, "%.*s", (int)(colon - host), host);
    out->ep = ep;
    out->first = strtol(colon + 1, NULL, 10);
    out->last = out->first + (long)n - 1;
    return true;
}

static void add_overlap(const ev_range *a, const ev_range *b, const gw_replica_cfg *reps,
                        ir_cfg_errors *errs) {
    ir_cfg_errors_add(errs,
                      "replicas[%zu].kv_events.%s: '%s' takes ports %ld..%ld of %s "
                      "(data_parallel_size %lld), which overlap replicas[%zu].kv_events.%s's "
                      "%ld..%ld: rank r binds the port plus r (vLLM), so each engine's sockets "
                      "need N ports of their own",
                      b->replica, b->key, b->ep, b->first, b->last, b->host,
                      (long long)IR_MAX(reps[b->replica].data_parallel_size, 1), a->replica, a->key,
                      a->first, a->last);
}

void gw_check_event_ports(const gw_config *c, ir_cfg_errors *errs) {
    const gw_replica_cfg *reps = c->replicas.items;
    ev_range *rs = calloc(2 * c->replicas.n + 1, sizeof *rs);
    size_t n = 0;
    for (size_t i = 0; rs && i < c->replicas.n; i++) {
        const gw_kv_events_cfg *e = &reps[i].kv_events;
        int64_t ranks = IR_MAX(reps[i].data_parallel_size, 1);
        if (!ev_range_of(e->endpoint, ranks, &rs[n])) continue; /* no events (or an error) */
        rs[n].replica = i;
        rs[n++].key = "endpoint";
        if (!ev_range_of(e->replay_endpoint, ranks, &rs[n])) continue;
        rs[n].replica = i;
        rs[n++].key = "replay_endpoint";
    }
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < k; j++)
            if (strcasecmp(rs[j].host, rs[k].host) == 0 && rs[j].first <= rs[k].last &&
                rs[k].first <= rs[j].last) {
                add_overlap(&rs[j], &rs[k], reps, errs);
                break;
            }
    free(rs);
}

static size_t count_targets(const gw_config *c, ir_cfg_errors *errs) {
    const gw_replica_cfg *reps = c->replicas.items;
    size_t total = 0;
    for (size_t i = 0; i < c->replicas.n; i++) {
        if (reps[i].data_parallel_size > 1) check_one(&reps[i], i, errs);
        total += reps[i].data_parallel_size > 1 ? (size_t)reps[i].data_parallel_size : 1;
    }
    if (total > GW_MAX_REPLICAS)
        ir_cfg_errors_add(errs,
                          "replicas: %zu routing targets, at most %d (each data_parallel_size "
                          "rank is one)",
                          total, GW_MAX_REPLICAS);
    return total;
}

static char *endpoint_at(ir_arena *a, const char *ep, int64_t rank) {
    char buf[512];
    if (!ep) return NULL;
    if (gw_dp_endpoint(ep, rank, buf, sizeof buf)) return NULL; /* checked before */
    return ir_arena_strdup(a, buf);
}

/* Rank r of replica src into *dst; false when the arena is full. */
static bool make_target(ir_arena *a, const gw_replica_cfg *src, int64_t r, gw_replica_cfg *dst) {
    char id[GW_REPLICA_ID_MAX + 1];
    if (gw_dp_id(src->id, r, id, sizeof id)) return false; /* checked before */
    *dst = *src;
    dst->dp_target = true;
    dst->dp_rank = r;
    dst->id = ir_arena_strdup(a, id);
    dst->kv_events.endpoint = endpoint_at(a, src->kv_events.endpoint, r);
    dst->kv_events.replay_endpoint = endpoint_at(a, src->kv_events.replay_endpoint, r);
    return dst->id && (!src->kv_events.endpoint || dst->kv_events.endpoint) &&
           (!src->kv_events.replay_endpoint || dst->kv_events.replay_endpoint);
}

void gw_config_expand_dp(gw_config *c, ir_cfg *owner, ir_cfg_errors *errs) {
    size_t before = errs->n, total = count_targets(c, errs);
    if (errs->n > before || total == c->replicas.n) return;
    ir_arena *a = ir_cfg_arena(owner);
    gw_replica_cfg *out = a ? ir_arena_calloc(a, total * sizeof *out) : NULL;
    const gw_replica_cfg *in = c->replicas.items;
    size_t k = 0;
    for (size_t i = 0; out && i < c->replicas.n; i++) {
        if (in[i].data_parallel_size <= 1) {
            out[k++] = in[i];
            continue;
        }
        for (int64_t r = 0; out && r < in[i].data_parallel_size; r++)
            if (!make_target(a, &in[i], r, &out[k++])) out = NULL;
    }
    if (!out) {
        ir_cfg_errors_add(errs, "replicas: out of memory expanding data_parallel_size");
        return;
    }
    c->replicas.items = out;
    c->replicas.n = total;
}
