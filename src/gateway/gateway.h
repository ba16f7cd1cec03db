/* gateway.h: inferrail-gateway internals.
 *
 * Threads: N workers, each with its own libuv loop, an SO_REUSEPORT listener
 * and an upstream connection pool; plus the control thread (the process's
 * main thread) that runs the admin port, the health checker and the model-card
 * refresher. Shared between them, without a lock on the hot path: the config
 * (immutable after start), the fleet's per-replica atomic counters and health,
 * the policies (atomic state), and the model cards (behind a mutex, read only
 * by GET /v1/models).
 *
 * The port is the process's own: before the workers bind with SO_REUSEPORT,
 * irn_listen_probe binds it without, which fails while any other process
 * listens there. Start-up failures exit 1 after freeing what was started.
 * Signals (gw_main.c): the first SIGTERM/SIGINT drains (app.stopping, /ready
 * 503), a second one cuts; a reaper thread joins the workers so the signal
 * handles stay installed until the end.
 */
#ifndef IR_GATEWAY_H
#define IR_GATEWAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "core/ir_core.h"
#include "index/ir_index.h"
#include "net/ir_net.h"
#include "policy/ir_policy.h"
#include "tokenize/ir_tokenize.h"

/* ---- configuration ---------------------------------------------------------------- */
typedef struct gw_server_cfg {
    char *listen;
    char *admin_listen;
    int64_t workers;
    uint64_t request_timeout;
    uint64_t header_read_timeout;
    uint64_t shutdown_timeout;
    uint64_t max_header_bytes;
    int64_t max_headers;
    uint64_t max_body_bytes;
    int64_t max_connections;
    uint64_t max_write_queue;
    bool busy_poll;
} gw_server_cfg;

typedef struct gw_upstream_cfg {
    bool http2;
    uint64_t connect_timeout;
    uint64_t response_timeout;
    uint64_t idle_timeout;
    int64_t max_idle_per_replica;
    uint64_t keepalive_timeout;
    bool x_forwarded_for; /* append the client's address to X-Forwarded-For */
} gw_upstream_cfg;

/* The cost model's engine shape: P(u, c) = a*u + b*u*(c + u/2) + d, named as the
 * simulator's flags are (so a calibration of one sets the other). */
typedef struct gw_cost_model_cfg {
    double load_factor;      /* bounded loads for cost_model (looser than prefix_hash's) */
    double prefill_token_us; /* a */
    double prefill_pair_ns;  /* b */
    double prefill_fixed_ms; /* d */
    double decode_token_ms;  /* time per output token */
    double kv_pressure;      /* engine KV usage above which a replica is avoided */
    int64_t hot_replicas;    /* most replicas a hot prefix spreads over; 0: all */
    bool session_affinity;
} gw_cost_model_cfg;

typedef struct gw_sglang_cfg {
    double cache_threshold;
    int64_t balance_abs_threshold;
    double balance_rel_threshold;
} gw_sglang_cfg;

typedef struct gw_routing_cfg {
    char *default_policy;
    int64_t seed;
    double load_factor;             /* bounded loads: at most c times the mean in flight */
    int64_t prefix_blocks;          /* prefix_hash: leading blocks that name a prefix */
    double hit_weight, load_weight; /* kv_aware */
    gw_cost_model_cfg cost_model;
    gw_sglang_cfg sglang_cache_aware;
} gw_routing_cfg;

/* The policies' knobs from the routing section. */
void gw_policy_config(const gw_routing_cfg *c, irp_config *out);

typedef struct gw_retry_cfg {
    int64_t max_attempts;
    uint64_t backoff;
    uint64_t max_backoff;
} gw_retry_cfg;

typedef struct gw_health_cfg {
    uint64_t interval;
    uint64_t timeout;
    int64_t unhealthy_threshold;
    int64_t healthy_threshold;
    uint64_t ejection_backoff;
    uint64_t max_ejection_backoff;
    int64_t max_ejection_percent;
} gw_health_cfg;

typedef struct gw_logging_cfg {
    char *level;
    char *format;
    bool log_prompts;
    bool access_log;
} gw_logging_cfg;

typedef struct gw_model_cfg {
    char *name;
    ir_cfg_strlist aliases;
    char *policy;            /* NULL: routing.default_policy */
    char *tokenizer;         /* NULL: prompts are not tokenized, nothing is predicted */
    bool tokenizer_optional; /* a tokenizer that cannot load is a warning, not an error */
    char *chat_template;     /* a chat template file instead of the tokenizer's, or NULL */
    char *chat_template_content_format; /* auto, string or openai (vLLM's flag) */
    ir_cfg_map chat_template_kwargs;    /* default kwargs, under each request's */
} gw_model_cfg;

typedef struct gw_index_cfg {
    int64_t block_size;              /* tokens per KV block, as the engines use */
    int64_t default_capacity_blocks; /* a replica's KV cache when nothing else says */
} gw_index_cfg;

typedef struct gw_replica_cfg {
    char *id;
    char *url;
    ir_cfg_strlist models; /* empty: every model */
    int64_t max_concurrency;
    int64_t max_pending;
    int64_t kv_capacity_blocks;
    ir_cfg_map headers; /* name -> value, added to every request sent to it */
} gw_replica_cfg;

typedef struct gw_tokenizer_cfg {
    int64_t workers;   /* threads tokenizing bodies over GW_TOKENIZE_INLINE bytes */
    uint64_t max_wait; /* ns a body may wait for a thread before it goes without a prediction */
    int64_t max_queue; /* bodies waiting or being tokenized, all workers together */
} gw_tokenizer_cfg;

typedef struct gw_config {
    gw_server_cfg server;
    gw_upstream_cfg upstream;
    gw_routing_cfg routing;
    gw_retry_cfg retry;
    gw_health_cfg health;
    gw_logging_cfg logging;
    gw_index_cfg index;
    gw_tokenizer_cfg tokenizer;
    ir_cfg_list models;   /* gw_model_cfg */
    ir_cfg_list replicas; /* gw_replica_cfg */
} gw_config;

extern const ir_cfg_schema gw_config_schema;

/* Loads and cross-checks (replica models exist, ids and aliases unique, policy
 * names known). Every problem goes to errs with its path. */
ir_cfg *gw_config_load(const char *path, gw_config *out, ir_cfg_errors *errs);
void gw_config_check(const gw_config *c, ir_cfg_errors *errs);
/* Replica ids: 1 to GW_REPLICA_ID_MAX of A-Z a-z 0-9 . _ - : */
#define GW_REPLICA_ID_MAX 64
bool gw_replica_id_ok(const char *id);

/* ---- fleet -------------------------------------------------------------------------- */
#define GW_MAX_REPLICAS 256

typedef struct gw_replica {
    const gw_replica_cfg *cfg;
    ir_url url;
    uint32_t index;
    uint64_t model_mask[4]; /* bit m: serves model m */
    _Atomic uint32_t in_flight;
    _Atomic uint32_t pending;
    _Atomic uint64_t prompt_tokens;
    _Atomic uint64_t pending_tokens;   /* prompt tokens of requests still waiting for a head */
    _Atomic uint64_t pending_uncached; /* of those, the tokens predicted uncached */
    _Atomic int healthy;               /* 1 when the health checker says so */
    _Atomic uint64_t ejected_until;    /* monotonic ns; passive ejection */
    _Atomic uint32_t consecutive_failures;
    _Atomic uint32_t ejections;
    /* counters for /metrics */
    _Atomic uint64_t requests, failures;
    /* the KV index's predictions for requests it served, and how they compared with
     * what the engine reported (usage.prompt_tokens_details.cached_tokens) */
    _Atomic uint64_t predicted_tokens, reported_tokens;
    _Atomic uint64_t predictions_exact, predictions_over, predictions_under;
    _Atomic int reports_cached; /* its engine has reported cached_tokens at least once */
    /* replicas[i].headers, checked, lowercase names; point into the config */
    irn_header *extra;
    size_t nextra;
} gw_replica;

typedef enum { GW_TOK_NONE, GW_TOK_SIM, GW_TOK_HF } gw_tok_kind;

typedef struct gw_model {
    const gw_model_cfg *cfg;
    uint32_t index;
    irp_policy *policy;
    gw_tok_kind tok;   /* how its prompts are tokenized */
    irt_tokenizer *hf; /* GW_TOK_HF: the loaded tokenizer.json */
    irt_chat *chat;    /* GW_TOK_HF: its chat template and special tokens */
} gw_model;

typedef struct gw_fleet {
    const gw_config *cfg;
    irx_index *index; /* the approximate KV index, shared by every worker */
    uint32_t block_size;
    gw_replica *replicas;
    size_t nreplicas;
    gw_model *models;
    size_t nmodels;
} gw_fleet;

int gw_fleet_init(gw_fleet *f, const gw_config *cfg, char *err, size_t errlen);
void gw_fleet_free(gw_fleet *f);
/* A model by name or alias; NULL when unknown. */
const gw_model *gw_fleet_model(const gw_fleet *f, const char *name, size_t len);
bool gw_replica_serves(const gw_replica *r, uint32_t model);
bool gw_replica_available(const gw_replica *r, uint64_t now);

/* The replicas a request of `model` may be offered: they serve it, are healthy
 * (probes pass, not ejected) and have room under both caps. Replicas whose bit
 * is set in `exclude` (may be NULL) are left out. *healthy counts the healthy
 * ones that serve the model, with or without room. */
size_t gw_fleet_candidates(const gw_fleet *f, uint32_t model, uint64_t now, const uint64_t *exclude,
                           irp_candidate *out, size_t *healthy);

/* Writes body with its top-level `model` value replaced by the JSON string
 * `name` (found) or inserted as the first member (absent); every other byte is
 * kept. sp comes from ir_json_scan_key. */
int gw_splice_model(const char *body, size_t len, const ir_json_span *sp, bool found,
                    const char *name, ir_buf *out);

/* The 404 message for an unknown model. A name over GW_SHOWN_NAME bytes is cut at a
 * character boundary and marked with an ellipsis and its full length. */
#define GW_SHOWN_NAME 256
void gw_unknown_model_message(const char *name, size_t len, char *out, size_t cap);

/* A lease: one request's claim on a replica's concurrency and pending slots.
 * Taking one never overshoots the caps, whatever the races. */
/* A lease's tokens: the prompt's, and of those the ones predicted uncached (the
 * prefill work the engine has still to do; equal to prompt without a prediction). */
typedef struct gw_lease_tokens {
    uint64_t prompt, uncached;
} gw_lease_tokens;
bool gw_lease_take(gw_replica *r, gw_lease_tokens t);
/* The response head arrived: no longer pending. */
void gw_lease_head(gw_replica *r, gw_lease_tokens t);
void gw_lease_release(gw_replica *r, bool pending_still, gw_lease_tokens t);
/* Passive health: a failed or a good attempt. */
/* Ejection never takes out more than health.max_ejection_percent of the fleet's
 * healthy replicas, so requests that make every engine fail cannot empty it. */
void gw_replica_failed(gw_fleet *f, gw_replica *r, uint64_t now);
void gw_replica_succeeded(gw_replica *r);

/* ---- model cards ---------------------------------------------------------------------- */
typedef struct gw_cards gw_cards;
gw_cards *gw_cards_new(const gw_fleet *f);
void gw_cards_free(gw_cards *c);
/* Replaces what replica r said of its models (a /v1/models body). */
void gw_cards_update(gw_cards *c, uint32_t replica, const char *body, size_t len);
/* Renders GET /v1/models: configured models then aliases, in config order. */
int gw_cards_render(gw_cards *c, ir_buf *out);

/* ---- the whole gateway ------------------------------------------------------------------ */
typedef struct gw_stats {
    _Atomic uint64_t requests, responses_2xx, responses_4xx, responses_5xx;
    _Atomic uint64_t retries, client_disconnects, rejected_full, upstream_errors;
    _Atomic int64_t tokenize_queued; /* bodies on or waiting for a tokenizer thread */
} gw_stats;

typedef struct gw_worker gw_worker;

typedef struct gw_app {
    gw_config cfg;
    ir_cfg *cfg_owner;
    gw_fleet fleet;
    gw_cards *cards;
    gw_stats stats;
    size_t nworkers;
    gw_worker **workers;
    char listen_host[256];
    uint16_t listen_port;
    char admin_host[256];
    uint16_t admin_port;
    _Atomic int stopping;   /* set by the first SIGTERM/SIGINT: draining */
    struct gw_control *ctl; /* the control loop, owned */
    bool *started;          /* started[i]: workers[i] is bound and running */
} gw_app;

/* How long a second SIGTERM waits for the workers to cut their requests before
 * the process leaves without them. */
#define GW_FORCE_EXIT_MS 500

/* Workers (worker.c). */
gw_worker *gw_worker_new(gw_app *app, uint32_t id);
int gw_worker_start(gw_worker *w);                    /* binds and starts the thread */
void gw_worker_stop(gw_worker *w, uint64_t grace_ns); /* asynchronous */
void gw_worker_join(gw_worker *w);
void gw_worker_free(gw_worker *w);
int gw_worker_port(const gw_worker *w);

/* The control loop (control.c): admin port, health checks, model cards. */
typedef struct gw_control gw_control;
gw_control *gw_control_new(gw_app *app, uv_loop_t *loop);
int gw_control_start(gw_control *c);
void gw_control_stop(gw_control *c);
void gw_control_free(gw_control *c);
int gw_metrics_render(gw_app *app, ir_buf *out);
/* The KV index's metrics (metrics_kv.c). */
void gw_metrics_render_kv(const gw_fleet *f, ir_buf *out);

/* Upstream headers (upstream_headers.c). The headers of one attempt on rep:
 * fwd (the client's, less hop-by-hop ones) less the ones rep's configured
 * headers replace (an Authorization with the replica's API key, say) and,
 * with upstream.x_forwarded_for, less the client's X-Forwarded-For; then
 * rep's headers; then X-Forwarded-For with the client's address appended.
 * Allocated from req's arena; NULL (and *n = 0) when it is full. */
irn_header *gw_upstream_headers(const gw_app *app, const gw_replica *rep, irn_request *req,
                                const irn_header *fwd, size_t nfwd, size_t *n);
/* Checks replicas[i].headers: names are tokens and not framing or hop-by-hop
 * headers, values are strings without CR, LF or NUL. */
void gw_check_replica_headers(const gw_replica_cfg *r, size_t i, ir_cfg_errors *errs);
int gw_replica_headers_init(gw_replica *r);

/* Readiness and state (ready.c). Ready: not draining, and every configured
 * model has a healthy replica. `why` (may be NULL) gets the JSON body of
 * /ready. gw_ready_answer sends it: 200 when ready, else 503. */
bool gw_app_ready(gw_app *app, uint64_t now, ir_buf *why);
int gw_ready_answer(gw_app *app, irn_resp *resp, const irn_header *headers, size_t nheaders);
/* GET /admin/state: version, commit, drain state, replicas, as JSON. */
void gw_state_render(gw_app *app, ir_buf *out);
/* Appends s escaped as a Prometheus label value (backslash, quote, newline). */
void gw_prom_label_value(ir_buf *out, const char *s);

int gw_main(int argc, char **argv);

/* Request ids (request.c), shared with the control thread. */
bool gw_request_id_ok(const char *s);
void gw_request_id_new(ir_rng *r, char out[33]);

#endif
