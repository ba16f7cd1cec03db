/* bench.h: inferrail-bench internals: one function per subcommand, plus the
 * open-loop harness (workloads, runner, fleet, summaries) they share. */
#ifndef IR_BENCH_H
#define IR_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/ir_core.h"

int bench_tokenize_sim(int argc, char **argv);
int bench_streams(int argc, char **argv);
int bench_soak(int argc, char **argv);
int bench_rps(int argc, char **argv);
int bench_run_main(int argc, char **argv);
int bench_compare_main(int argc, char **argv);
int bench_capacity_main(int argc, char **argv);
int bench_report_main(int argc, char **argv);
int bench_workload_main(int argc, char **argv);
int bench_calibrate_main(int argc, char **argv);
/* calibrate.c: the least-squares fit of t = a*u + b*u*(c + u/2) + d over n points
 * (seconds, tokens). -1 when fewer than 3 points or they do not determine it. */
int bench_cal_fit(const double *u, const double *c, const double *t, size_t n, double *a, double *b,
                  double *d);
/* The number after the last `"key"` and its colon in s[0..len); -1 when none. */
double bench_cal_usage(const char *s, size_t len, const char *key);
/* calibrate --cpu-tier: the least-squares rate r of extra = r * tokens through the
 * origin over n points (tokens loaded from the CPU tier, the seconds a prefill took
 * beyond the fitted shape). -1 when no point has tokens. */
int bench_cal_fit_rate(const double *tokens, const double *extra, size_t n, double *rate);

/* Sorted-sample percentiles. */
double bench_percentile(double *sorted, size_t n, double p);
int bench_cmp_double(const void *a, const void *b);
/* Resident set size of a process in KiB (from /proc), -1 when unknown. */
long bench_rss_kib(int pid);

/* ---- workloads ------------------------------------------------------------
 * A workload is a list of requests, each with its scheduled time, built from
 * a seed alone: the same options give byte-identical bodies and times. */
#define BENCH_MAX_REQUESTS 200000

typedef struct bench_req {
    uint64_t at_ns; /* scheduled send time, from the start of the run */
    char *body;     /* the JSON request body (malloc'd) */
    size_t body_len;
    uint32_t prompt_tokens; /* builtin:sim tokens of the rendered chat */
    uint32_t max_tokens;    /* the completion length asked for */
    uint32_t reused_tokens; /* whole-block prefix seen in an earlier request */
    uint32_t session;       /* conversation / agent / prompt group */
    uint32_t turn;          /* 0 for the first request of a session */
} bench_req;

typedef struct bench_wl_opts {
    const char *name;  /* w1..w6, llmd-shared-prefix, sglang-gsp, prefix-repetition, trace */
    const char *model; /* "model" field of every body */
    double rate;       /* mean requests per second (Poisson); unused by trace */
    size_t n;          /* total requests, warmup included */
    size_t warmup;     /* the first `warmup` are discarded from results */
    uint64_t seed;
    size_t block_size; /* for the reuse ceiling; 0: 16 */
    /* The fleet's caches, for the finite-cache ceilings: cache_replicas caches of
     * cache_blocks blocks each; 0 in either: not computed (NaN). */
    size_t cache_blocks, cache_replicas;
    const char *sharegpt; /* w2: replay conversations from this file */
    json_t *params;       /* overrides, {"key": number}; may be NULL */
    const char *trace;    /* trace: the Mooncake JSONL file to replay */
    double speedup;       /* K: every arrival time is divided by K; 0: 1 */
} bench_wl_opts;

typedef struct bench_workload {
    char name[32];
    bench_req *reqs;
    size_t n;
    size_t warmup;
    double reuse_ceiling; /* over the measured requests */
    /* The same share for the fleet's finite caches pooled into one
     * (cache_replicas x cache_blocks blocks): Belady's MIN with bypass and per-block
     * hits, an upper bound for any routing, and LRU in the simulator's order, a
     * reference only. NaN when the cache size was not given (ceiling.c). */
    double reuse_ceiling_finite, pooled_lru_hit_rate;
    size_t cache_blocks, cache_replicas;
    /* The working set, in blocks of the block size, over every request (warmup
     * included): distinct whole blocks, and those a later request hits again. */
    size_t distinct_blocks, reused_blocks;
    json_t *params; /* every parameter actually used (owned) */
    double speedup; /* K the times were divided by (1 when none) */
    double rate;    /* nominal (model-time) rate; a trace's mean rate */
} bench_workload;

/* Builds the workload. Returns 0, or -1 with a message in err. */
int bench_workload_build(const bench_wl_opts *o, bench_workload *w, char *err, size_t errlen);
void bench_workload_free(bench_workload *w);
/* Parses "k=v" into params (numbers only). -1 on bad input. */
int bench_param_parse(json_t *params, const char *kv);
/* Trace replay: appends the text of the first `tokens` (<= 512 or the block
 * size) builtin:sim tokens of block `id`. Every piece is 3 bytes and every word
 * starts with a space, so the text is exactly `tokens` tokens whatever comes
 * before or after it (a newline, a space or another block), and the text of
 * fewer tokens is a prefix of the text of more. -1 when out is full. */
int bench_trace_block_text(uint64_t id, size_t tokens, ir_buf *out);
/* Parses "2s", "100ms", or a bare number of milliseconds. */
int bench_parse_ms(const char *s, double *ms);
/* A whole argument as a number in [lo, hi] (no trailing text): 0, else -1. */
int bench_parse_real(const char *s, double lo, double hi, double *out);
/* A whole argument as an integer in [0, max], written in digits: 0, else -1. */
int bench_parse_uint(const char *s, double max, size_t *out);

/* ---- finite-cache ceilings (ceiling.c; ADR 0021) -------------------------
 * A block trace: every request's whole blocks in arrival order, each as a dense id
 * (equal ids: equal chained hashes, so equal prefixes). */
typedef struct bench_btrace {
    uint32_t *id; /* id[0..n) */
    size_t n, cap;
    size_t *start; /* request r's blocks: id[start[r]..start[r + 1]) */
    size_t nreq, start_cap;
    uint32_t n_ids; /* every id is below it */
} bench_btrace;

void bench_btrace_init(bench_btrace *t);
void bench_btrace_free(bench_btrace *t);
/* Appends one request's blocks. -1 when out of memory. */
int bench_btrace_add(bench_btrace *t, const uint32_t *ids, size_t n);
/* Hits of Belady's MIN with bypass over one cache of cap blocks, one per block
 * access (not only leading blocks), counted on requests from_req onwards (the
 * ones before only fill the cache). The most any demand-filled cache of cap
 * blocks can hit. -1 when out of memory. */
int bench_min_hits(const bench_btrace *t, size_t cap, size_t from_req, size_t *hits);
/* Hits of one engine's LRU of cap blocks (the simulator's order: requests one at
 * a time, leading cached blocks only, freed last-first), counted as above. */
int bench_lru_hits(const bench_btrace *t, size_t cap, size_t from_req, size_t *hits);

/* ---- the open-loop runner ----------------------------------------------- */
typedef enum {
    BENCH_OK = 0,
    BENCH_E_HTTP4,      /* 4xx */
    BENCH_E_HTTP5,      /* 5xx */
    BENCH_E_HTTP,       /* other non-200 */
    BENCH_E_CONNECT,    /* resolve/connect failure or timeout */
    BENCH_E_TIMEOUT,    /* head or idle timeout */
    BENCH_E_CLOSED,     /* connection closed before or mid response */
    BENCH_E_PARSE,      /* malformed HTTP, SSE or JSON */
    BENCH_E_INCOMPLETE, /* stream ended without usage or [DONE] */
    BENCH_E_SEND,       /* the request could not be started */
    BENCH_E_COUNT
} bench_err_kind;

const char *bench_err_name(bench_err_kind k);

typedef struct bench_rec {
    uint64_t sched_ns;  /* scheduled, from the start of the phase */
    uint64_t send_ns;   /* handed to the client */
    uint64_t first_ns;  /* first content token; 0 when none */
    uint64_t end_ns;    /* done (success or failure) */
    double itl_max_ms;  /* largest gap between content chunks */
    long prompt_tokens; /* usage; -1 when absent */
    long completion_tokens;
    long cached_tokens;     /* usage.prompt_tokens_details.cached_tokens; 0 when absent */
    long hdr_prompt_tokens; /* x-inferrail-prompt-tokens; -1 when absent */
    long hdr_cached_tokens; /* x-inferrail-cached-tokens; -1 when absent */
    uint32_t chunks;        /* content chunks */
    int status;
    bench_err_kind err;
    char replica[48]; /* x-inferrail-replica; "" when absent */
    bool direct;      /* sent straight to bench_run_cfg.direct_url, not to base_url */
    uint8_t gateway;  /* which of the run's base URLs it was sent to */
} bench_rec;

/* A timed action of the measured phase: an empty POST to url (a simulator's or
 * vLLM's /reset_prefix_cache) at_s wall seconds after the phase starts, on the
 * runner's own loop, so it neither blocks nor delays the schedule. */
typedef struct bench_action {
    double at_s;
    const char *url; /* http://host:port/path; borrowed */
} bench_action;
#define BENCH_MAX_ACTIONS 16

/* ---- several gateways -------------------------------------------------------
 * A run can send through up to BENCH_MAX_GATEWAYS base URLs (gateways in front
 * of the same engines), each request to one of them. */
#define BENCH_MAX_GATEWAYS 8
typedef enum {
    BENCH_SPREAD_ALTERNATE = 0, /* request i to gateway i mod N: a chat's turns land on either */
    BENCH_SPREAD_SESSION,       /* session s to gateway s mod N: a chat stays on one gateway */
} bench_spread;
/* The gateway (0..n-1) that request i of session `session` goes to; 0 when n <= 1. */
size_t bench_spread_pick(bench_spread s, size_t i, uint32_t session, size_t n);
/* "alternate" or "session"; -1 for anything else. */
int bench_spread_parse(const char *name, bench_spread *out);
const char *bench_spread_name(bench_spread s);

typedef struct bench_run_cfg {
    const char *base_url;         /* http://host:port[/prefix]; used when n_base is 0 */
    const char *const *base_urls; /* n_base >= 1: several gateways, spread by `spread` */
    size_t n_base;
    bench_spread spread;
    const bench_workload *wl;
    double rate; /* recorded only; the schedule is in wl */
    uint64_t seed;
    double slo_ttft_ms, slo_tpot_ms;
    double timeout_s;               /* per request head/idle timeout; 0: 300 */
    const char *const *engine_urls; /* /metrics base URLs; may be NULL */
    size_t n_engine;
    double stall_at_s, stall_ms; /* test hook: block the loop once */
    bool progress;               /* a line per second on stderr */
    const bench_action *actions; /* recorded in the results' "actions" */
    size_t n_actions;            /* at most BENCH_MAX_ACTIONS */
    /* Another client of one engine: the requests that bench_direct_pick chooses
     * (warmup included) go straight to direct_url (an engine's base URL), and
     * are left out of the summary (counted in its "direct"). NULL: none. */
    const char *direct_url;
    double direct_share;
} bench_run_cfg;

/* Whether request i of a schedule built from seed goes to the direct client: a
 * hash of (seed, i) below share, so the same requests for every policy. */
bool bench_direct_pick(uint64_t seed, size_t i, double share);

/* Runs the workload open loop and returns the results document (owned). */
json_t *bench_run(const bench_run_cfg *cfg, char *err, size_t errlen);
/* Writes JSON to path (pretty, sorted as built). -1 on failure. */
int bench_write_json(const json_t *doc, const char *path);

/* The summary of records (measured ones only); exported for tests. */
typedef struct bench_sum_in {
    const bench_rec *recs;
    size_t n;
    double slo_ttft_ms, slo_tpot_ms;
    const double *itl_ms; /* every inter-token gap, ms */
    size_t n_itl;
    size_t n_gateways; /* > 1: a per_gateway breakdown (requests, hit rate) */
} bench_sum_in;
json_t *bench_summarize(const bench_sum_in *in);
/* Prediction accuracy of header values against usage: {n, exact, over, under,
 * mean_error, mean_abs_error}; NULL when no request carried the header. */
json_t *bench_prediction(const long *pred, const long *actual, size_t n);

/* ---- HTTP helpers and the fleet ------------------------------------------ */
/* GET url into out (capped at 8 MiB), on its own short-lived loop. Returns
 * the status, or a negative IRN_E* code. */
int bench_http_get(const char *url, ir_buf *out, double timeout_s);
/* A free loopback TCP port, or 0. */
uint16_t bench_free_port(void);

/* ---- the options run, compare and capacity share ------------------------------- */
typedef struct bench_common {
    const char *base_url, *model, *workload, *out, *sharegpt;
    double rate;
    size_t requests, warmup, block_size;
    size_t cache_blocks, cache_replicas; /* --cache-blocks, --cache-replicas (0: unknown) */
    uint64_t seed;
    double slo_ttft_ms, slo_tpot_ms, timeout_s;
    json_t *params;
    char *engine_buf;
    char *engine[64];
    size_t n_engine;
    bool progress;
    double stall_at_s, stall_ms;
    double speedup;    /* --speedup K (1 when not given) */
    const char *trace; /* --trace FILE */
    /* --reset-prefix-cache-at: model seconds into the measured phase, and the
     * 1-based engine (of --engine-metrics, or compare's simulators) to reset */
    double direct_share; /* --direct-share F@E: F of the requests straight to engine E */
    int direct_engine;
    const char *direct_spec;
    double reset_at[BENCH_MAX_ACTIONS];
    int reset_engine[BENCH_MAX_ACTIONS];
    size_t n_reset;
    const char *reset_spec;
    char *base_buf; /* --base-url U1[,U2..]: its copy, split into base[] */
    const char *base[BENCH_MAX_GATEWAYS];
    size_t n_base;
    int gateways;        /* --gateways N (0 when not given) */
    bench_spread spread; /* --spread */
} bench_common;

/* Parses "S[@E][,S[@E]..]" (model seconds >= 0, engine E >= 1, default 1) into
 * at/engine (cap entries). Returns the count, or -1 on bad input or too many. */
int bench_reset_parse(const char *spec, double *at, int *engine, size_t cap);
/* Parses "F[@E]" (0 < F < 1, engine E >= 1, default 1). -1 on bad input. */
int bench_direct_parse(const char *spec, double *share, int *engine);

struct option;
void bench_common_init(bench_common *c);
void bench_common_free(bench_common *c);
/* Handles one getopt_long result; 0 done, 1 not a common option, -1 bad value. */
int bench_common_opt(bench_common *c, int ch, const char *arg);
const struct option *bench_common_options(size_t *n);
int bench_common_workload(const bench_common *c, double rate, uint64_t seed, bench_workload *w);
/* One run through the n_base URLs (gateways), spread by c->spread. */
json_t *bench_common_run(const bench_common *c, const char *const *base_urls, size_t n_base,
                         double rate, uint64_t seed, const char *const *engines, size_t n_engine);
void bench_raise_fd_limit(void);

/* Simulators (and, given a policy, a gateway in front) on free loopback
 * ports, each run fresh; logs go to log_dir. */
#define BENCH_MAX_REPLICAS 16
typedef struct bench_fleet_opts {
    const char *sim_bin, *gw_bin;
    int replicas;
    const char *sim_args; /* extra simulator flags, split on spaces */
    const char *policy;   /* NULL: no gateway; base_url is the first simulator */
    const char *model;
    uint64_t seed;
    const char *log_dir; /* NULL: /dev/null */
    const char *tag;     /* names the log files */
    double speedup;      /* K: every simulator latency parameter divided by K; 0: 1 */
    bool kv_events;      /* simulators publish KV events; the gateways follow them */
    bool no_lookahead;   /* with kv_events: the gateways' index.eviction_lookahead off */
    int gateways;        /* gateways in front of the same simulators, configured alike; 0: 1 */
} bench_fleet_opts;

typedef struct bench_fleet {
    int n;
    int sim_pid[BENCH_MAX_REPLICAS];
    uint16_t sim_port[BENCH_MAX_REPLICAS];
    uint16_t ev_port[BENCH_MAX_REPLICAS][2]; /* KV events: PUB and replay; 0 without */
    int n_gw;                                /* gateways started (0 without a policy) */
    int gw_pid[BENCH_MAX_GATEWAYS];
    uint16_t gw_port[BENCH_MAX_GATEWAYS], admin_port[BENCH_MAX_GATEWAYS];
    uint64_t gw_seed[BENCH_MAX_GATEWAYS];  /* each gateway's routing.seed */
    char base_url[BENCH_MAX_GATEWAYS][64]; /* without a policy: [0] is the first simulator */
    const char *base_ptr[BENCH_MAX_GATEWAYS];
    size_t n_base; /* base URLs to send to: n_gw, or 1 without a gateway */
    char engine_url[BENCH_MAX_REPLICAS][64];
    const char *engine_ptr[BENCH_MAX_REPLICAS];
} bench_fleet;

int bench_fleet_start(const bench_fleet_opts *o, bench_fleet *f, char *err, size_t errlen);
/* A policy name of compare's --policies: a gateway policy, or one with the
 * suffix "+events" (e.g. cost_model+events: that policy, the simulators
 * publishing KV events and the gateway following them), so that the exact and
 * the approximate index run side by side on the same arrivals. Writes the
 * gateway's policy to base and whether events are on to kv_events. The suffix
 * "+events-nolookahead" is "+events" with the gateway's index.eviction_lookahead
 * off (bench_policy_no_lookahead), to measure what the lookahead does on the same
 * arrivals. -1 on an empty name or policy, another suffix, or a name that does
 * not fit. */
int bench_policy_variant(const char *name, char *base, size_t len, bool *kv_events);
bool bench_policy_no_lookahead(const char *name);
void bench_fleet_stop(bench_fleet *f);
/* The processes of f that exited on their own since they started (killed, or
 * crashed), as a JSON array of names ("sim-1".., "gateway-1"..; empty when none);
 * each is reaped and left out of bench_fleet_stop. Call it before the stop. */
json_t *bench_fleet_exited(bench_fleet *f);
/* Gateway g's routing.seed for a run of seed `seed`: the seed itself for the first,
 * seed + g * 1,000,003 for the others. Gateways that share a seed (and one worker each)
 * draw the same random tie-breaks for requests that arrive together, so they pile
 * those on the same replica: on w1, one arrival sequence in four lost 4 points of hit
 * rate that way (bench/results/events/two-gateways). */
uint64_t bench_gateway_seed(uint64_t seed, int g);
/* Each gateway's inferrail_requests_total so far (from its admin /metrics) into out[0..n_gw);
 * -1 where the page could not be read. */
void bench_fleet_gateway_requests(const bench_fleet *f, double *out);
/* The directory of this executable, for finding inferrail-sim and -gateway. */
void bench_exe_dir(char *out, size_t len);
/* The simulator flags for a speed-up of K: sim_args (may be NULL) with the
 * value of every latency flag (--prefill-token-us, --prefill-pair-ns,
 * --prefill-fixed-ms, --decode-token-ms, --decode-batch-us) divided by K, and
 * those it does not set added at the simulator's default divided by K. With
 * K == 1, sim_args unchanged. -1 when out is too small or a value is bad. */
int bench_sim_args_scaled(const char *sim_args, double k, char *out, size_t len);
/* One simulator's cache in blocks as sim_args (may be NULL) sets it:
 * --num-gpu-blocks-override (default 4096) plus --num-cpu-blocks (default 0). */
size_t bench_sim_cache_blocks(const char *sim_args);
/* Writes the gateway's YAML config; exported for tests. The gateway tokenizes with
 * builtin:sim, and its KV index and cost model get the simulators' shape from
 * sim_args (the effective flags, after --speedup; NULL: the simulator's defaults):
 * block size, KV capacity, the latency parameters and the CPU tier's transfer time.
 * ev_ports (may be NULL): each simulator's KV event ports (PUB, replay), which its
 * replica then follows (kv_events). speedup (K, <= 0 as 1) divides the gateway's
 * load scrape interval and max age (100 ms and 250 ms), to a floor of 10 ms.
 * no_lookahead turns index.eviction_lookahead off (it is on by default). */
int bench_gateway_yaml(ir_buf *out, const char *listen, const char *admin, const char *policy,
                       uint64_t seed, const char *model, const uint16_t *ports, int n,
                       const char *sim_args, const uint16_t (*ev_ports)[2], double speedup,
                       bool no_lookahead);

#endif
