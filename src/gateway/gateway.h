/* gateway.h: inferrail-gateway internals.
 *
 * Threads: N workers, each with its own libuv loop, an SO_REUSEPORT listener
 * and an upstream connection pool; plus the control thread (the process's
 * main thread) that runs the admin port, the health checker and the model-card
 * refresher. Shared between them, without a lock on the hot path: the config
 * (each version immutable; a SIGHUP reload publishes a new one through an atomic
 * pointer, gw_live), the fleet's slots (members join and leave through an atomic
 * flag, members.c), per-replica atomic counters and health, the policies (atomic
 * state), and the model cards (behind a mutex, read only by GET /v1/models).
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
#include "load/ir_load.h"
#include "net/ir_net.h"
#include "obs/ir_obs.h"
#include "policy/ir_policy.h"
#include "tokenize/ir_tokenize.h"

/* ---- configuration ---------------------------------------------------------------- */
typedef struct gw_server_cfg {
    char *listen;
    char *admin_listen;
    int64_t workers;
    uint64_t request_timeout_ns;
    uint64_t header_read_timeout_ns;
    uint64_t shutdown_timeout_ns;
    uint64_t shutdown_delay_ns; /* SIGTERM: serve this long, /ready 503, before draining */
    uint64_t max_header_bytes;
    int64_t max_headers;
    uint64_t max_body_bytes;
    int64_t max_connections;
    uint64_t max_write_queue;
    bool busy_poll;
} gw_server_cfg;

typedef struct gw_upstream_cfg {
    bool http2;
    uint64_t connect_timeout_ns;
    uint64_t response_timeout_ns;
    uint64_t non_streaming_timeout_ns;
    uint64_t idle_timeout_ns;
    int64_t max_idle_per_replica;
    uint64_t keepalive_timeout_ns;
    bool x_forwarded_for; /* append the client's address to X-Forwarded-For */
} gw_upstream_cfg;

/* The cost model's engine shape: P(u, c) = a*u + b*u*(c + u/2) + d, named as the
 * simulator's flags are (so a calibration of one sets the other). */
typedef struct gw_cost_model_cfg {
    double load_factor;      /* bounded loads for cost_model (looser than prefix_hash's) */
    int64_t load_floor;      /* in flight under which the bound holds no replica back */
    double work_weight;      /* weight of the prefill a choice adds for those behind it */
    double tie_tolerance;    /* scores closer than this share of the cold prefill are equal */
    double prefill_token_us; /* a */
    double prefill_pair_ns;  /* b */
    double prefill_fixed_ms; /* d */
    double decode_token_ms;  /* time per output token */
    double cpu_token_us;     /* loading one token's KV from the CPU tier */
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
    double hit_tolerance;           /* kv_aware: score differences below this are ties */
    gw_cost_model_cfg cost_model;
    gw_sglang_cfg sglang_cache_aware;
} gw_routing_cfg;

/* The policies' knobs from the routing section. */
void gw_policy_config(const gw_routing_cfg *c, irp_config *out);

typedef struct gw_retry_cfg {
    int64_t max_attempts;
    uint64_t backoff_ns;
    uint64_t max_backoff_ns;
} gw_retry_cfg;

typedef struct gw_health_cfg {
    uint64_t interval_ns;
    uint64_t timeout_ns;
    char *path; /* probed under each replica's URL path */
    int64_t unhealthy_threshold;
    int64_t healthy_threshold;
    uint64_t ejection_backoff_ns;
    uint64_t max_ejection_backoff_ns;
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
    /* What the policies take of a prediction, by its source (docs/internals/kv-events.md):
     * events are exact (1); these scale the others' predicted cached tokens. */
    double approximate_trust; /* the gateway's own guesses */
    double fallback_trust;    /* approximate after a gap no replay covered */
    double stale_trust;       /* events, while the engine's event socket is disconnected */
    bool eviction_lookahead;  /* events-fed replicas: leave out blocks about to be evicted */
} gw_index_cfg;

/* replicas[].kv_events: the engine's KV event publisher (vLLM's --kv-events-config). */
typedef struct gw_kv_events_cfg {
    char *endpoint;        /* tcp://host:5557 (its PUB socket); NULL: tracked approximately */
    char *replay_endpoint; /* tcp://host:5558 (its ROUTER socket); NULL: gaps cannot be replayed */
    char *topic;           /* the topic it publishes on; "" */
} gw_kv_events_cfg;

typedef struct gw_load_cfg {
    uint64_t scrape_interval_ns; /* ns */
    uint64_t scrape_timeout_ns;
    uint64_t max_age_ns;
} gw_load_cfg;

typedef struct gw_decision_log_cfg {
    char *path;         /* NULL: none */
    double sample_rate; /* 0..1; 0: off */
} gw_decision_log_cfg;

typedef struct gw_observability_cfg {
    char *otlp_endpoint;       /* NULL: no traces (trace.c) */
    double trace_sample_ratio; /* 0..1 */
    gw_decision_log_cfg decision_log;
} gw_observability_cfg;

typedef struct gw_replica_cfg {
    char *id;
    char *url;
    ir_cfg_strlist models; /* empty: every model */
    int64_t max_concurrency;
    int64_t max_pending;
    int64_t kv_capacity_blocks;
    ir_cfg_map headers; /* name -> value, added to every request sent to it */
    gw_kv_events_cfg kv_events;
    int64_t data_parallel_size; /* the engine's DP ranks; N > 1 is expanded (dp.c) */
    /* A data-parallel target (dp.c): one rank of an engine, pinned by the
     * X-data-parallel-rank header; id is <replica id>/dp<rank>. */
    bool dp_target;
    int64_t dp_rank;
} gw_replica_cfg;

/* discovery.dns[].kv_events: every member's engine publishes its KV events on
 * these ports of the member's own address (tcp://<ip>:<port>), as the engines of a
 * Kubernetes headless Service started with one --kv-events-config do. */
typedef struct gw_dns_kv_events_cfg {
    int64_t port;        /* its PUB socket; 0: members are tracked approximately */
    int64_t replay_port; /* its replay ROUTER socket; 0: gaps cannot be replayed */
    char *topic;         /* the topic it publishes on; "" */
    /* SRV names whose records give each member its own port (instead of port and
     * replay_port): a record's target that resolves to a member's address gives that
     * member the record's port. NULL: none. */
    char *port_srv, *replay_port_srv;
} gw_dns_kv_events_cfg;

/* Whether a group's members follow KV events (kv_events.port or .port_srv). */
bool gw_dns_wants_events(const gw_dns_kv_events_cfg *e);

/* discovery.dns[]: a DNS name whose addresses are replicas. */
typedef struct gw_dns_group_cfg {
    char *name;            /* members are named <name>-<ip>-<port>[/dp<r>] */
    char *url;             /* http://NAME:PORT[/base]; with srv, NAME is the SRV name */
    ir_cfg_strlist models; /* empty: every model */
    uint64_t refresh_ns;
    bool srv; /* ports (and targets) from SRV records */
    int64_t max_concurrency, max_pending, kv_capacity_blocks;
    gw_dns_kv_events_cfg kv_events;
    int64_t data_parallel_size; /* each member's DP ranks; N > 1: N targets per member */
} gw_dns_group_cfg;

typedef struct gw_discovery_cfg {
    ir_cfg_list dns;            /* gw_dns_group_cfg */
    ir_cfg_strlist nameservers; /* host:port; empty: /etc/resolv.conf */
} gw_discovery_cfg;
typedef struct gw_tokenizer_cfg {
    int64_t workers;      /* threads tokenizing bodies over inline_bytes */
    uint64_t max_wait_ns; /* ns a body may wait for a thread before it goes without a prediction */
    int64_t max_queue;    /* bodies waiting or being tokenized, all workers together */
    int64_t cache_tokens; /* ids each tokenizer.json model keeps for repeated pieces; 0: none */
    uint64_t parse_cache_bytes; /* bytes of parsed chat messages each such model keeps; 0: none */
    uint64_t max_body_bytes;    /* a tokenizer.json model's larger bodies get no prediction */
    uint64_t inline_bytes;      /* bodies up to this are tokenized on the event loop */
    /* Bodies up to inline_warm_bytes also stay on the loop while the worker's recent
     * bodies took under inline_warm_ns each to prepare (0: off). */
    uint64_t inline_warm_bytes, inline_warm_ns;
} gw_tokenizer_cfg;

typedef struct gw_config {
    gw_server_cfg server;
    gw_upstream_cfg upstream;
    gw_routing_cfg routing;
    gw_retry_cfg retry;
    gw_health_cfg health;
    gw_logging_cfg logging;
    gw_index_cfg index;
    gw_load_cfg load;
    gw_observability_cfg observability;
    gw_tokenizer_cfg tokenizer;
    ir_cfg_list models;   /* gw_model_cfg */
    ir_cfg_list replicas; /* gw_replica_cfg */
    gw_discovery_cfg discovery;
} gw_config;

extern const ir_cfg_schema gw_config_schema;

/* Loads and cross-checks (replica models exist, ids and aliases unique, policy
 * names known). Every problem goes to errs with its path. */
ir_cfg *gw_config_load(const char *path, gw_config *out, ir_cfg_errors *errs);
void gw_config_check(const gw_config *c, ir_cfg_errors *errs);
/* discovery.* (discovery_cfg.c): group names, urls, models, nameservers. */
void gw_check_discovery(const gw_config *c, ir_cfg_errors *errs);
/* Whether a DNS group serves the model (names it, or names none). */
bool gw_dns_serves(const gw_config *c, const char *model);
/* Data parallelism (dp.c): every replica with data_parallel_size N > 1 becomes N
 * routing targets <id>/dp<r> (r = 0..N-1), in its place and in rank order, each
 * with dp_target set, its rank, and its kv_events endpoints' tcp ports plus r
 * (vLLM's offset_endpoint_port). New strings and the list go to owner's arena.
 * Problems (an id, a port or the target count past their caps) go to errs with
 * their paths, and c is left as it was. Run after gw_config_check passed. */
#define GW_DP_MAX 64
void gw_config_expand_dp(gw_config *c, ir_cfg *owner, ir_cfg_errors *errs);
/* ep with its tcp port plus rank into out; -1 when it has no tcp port or the sum
 * passes 65535 (or out is too small). */
int gw_dp_endpoint(const char *ep, int64_t rank, char *out, size_t cap);
/* Configured replicas' kv_events sockets that would share a port: each takes its
 * port plus 0..N-1 (data_parallel_size N) on its host, and no two of them (a
 * replica's publisher and replay sockets included) may overlap on one host (the
 * same host string, whatever its case; names that resolve alike are not
 * compared). Errors name replicas[i].kv_events.endpoint or .replay_endpoint. */
void gw_check_event_ports(const gw_config *c, ir_cfg_errors *errs);
/* A DP target's id, <base>/dp<rank>, into out; -1 when it does not fit in cap. */
int gw_dp_id(const char *base, int64_t rank, char *out, size_t cap);
/* The header that pins a request to a DP rank (vLLM and SGLang read it). */
#define GW_DP_HEADER "x-data-parallel-rank"
/* Replica ids: 1 to GW_REPLICA_ID_MAX of A-Z a-z 0-9 . _ - : */
#define GW_REPLICA_ID_MAX 64
bool gw_replica_id_ok(const char *id);

/* ---- fleet -------------------------------------------------------------------------- */
#define GW_MAX_REPLICAS 256
/* How deep a request body may nest, as Python's json (vLLM's parser) takes it: about
 * its recursion limit of 1,000. Deeper bodies are answered 400. */
#define GW_JSON_MAX_DEPTH 1000
/* The largest KV cache the index sizes a replica's view for, in blocks: 16,777,216
 * (268 million tokens at 16 a block, about 30 times the largest GPU cache of a small
 * model). An engine that reports more is taken at this, with a warning: the view's
 * memory is reserved for its capacity. */
#define GW_MAX_CAPACITY_BLOCKS (1 << 24)
#define GW_MAX_MODELS          256 /* bits of gw_replica.model_mask */

/* The engine's own view of its load, from its last readable metrics page.
 * Written by the scraper's thread only (load.c), read by any; at_ns is stored
 * last (release), so a reader that sees it sees the numbers of that report or
 * a later one. */
typedef struct gw_engine_load {
    _Atomic uint64_t at_ns; /* when the report's page answered (monotonic); 0: none yet */
    _Atomic uint32_t running, waiting;
    _Atomic uint32_t kv_usage_ppm; /* KV usage in millionths */
    _Atomic uint64_t prefix_queries, prefix_hits, preemptions;
    _Atomic uint64_t capacity_blocks; /* the engine's KV capacity in index blocks; 0: unknown */
    _Atomic uint64_t restarts;        /* prefix counters seen going backwards */
    _Atomic uint64_t max_age_seen_ns; /* the oldest report a policy was handed */
} gw_engine_load;

#define GW_EV_ENDPOINT_MAX 80 /* a discovered member's tcp://[v6]:port */
typedef struct gw_replica {
    /* Its settings: a SIGHUP reload may swap them for new ones (the old stay valid). */
    _Atomic(const gw_replica_cfg *) cfg;
    ir_url url;
    uint32_t index;
    _Atomic uint64_t model_mask[4]; /* bit m: serves model m */
    _Atomic uint32_t in_flight;
    _Atomic uint32_t pending;
    _Atomic uint64_t prompt_tokens;
    _Atomic uint64_t pending_tokens;   /* prompt tokens of requests before their first body byte */
    _Atomic uint64_t pending_uncached; /* of those, the tokens predicted uncached */
    /* Of the same requests, the sum of u * (2c + u), u uncached and c cached tokens:
     * twice the attention term of their prefills (cost_model's queue estimate). */
    _Atomic uint64_t pending_work;
    /* When the oldest pending request's prefill began, as far as the gateway can
     * tell (monotonic ns): when pending went from 0 to 1, or the last first body
     * byte while others were pending (a FIFO prefill queue starts the next one then). */
    _Atomic uint64_t prefill_since;
    _Atomic int healthy; /* 1 when the health checker says so */
    /* 1 when its engine's metrics page reports other data-parallel ranks but not this
     * target's (data_parallel_size above the engine's): not offered (load.c) */
    _Atomic int no_rank;
    _Atomic uint64_t ejected_until; /* monotonic ns; passive ejection */
    _Atomic uint32_t consecutive_failures;
    _Atomic uint32_t ejections;
    /* counters for /metrics */
    _Atomic uint64_t requests, failures;
    /* the KV index's predictions for requests it served, and how they compared with
     * what the engine reported (usage.prompt_tokens_details.cached_tokens) */
    _Atomic uint64_t predicted_tokens, reported_tokens;
    _Atomic uint64_t predictions_exact, predictions_over, predictions_under;
    _Atomic int reports_cached;       /* its engine has reported cached_tokens at least once */
    gw_engine_load engine;            /* its engine's last report (load.c) */
    _Atomic uint64_t ejections_total; /* passive ejections, never reset */
    /* its series in the metrics registry (metrics.c); a reused slot gets new ones */
    _Atomic(struct gw_rmetrics *) metrics;
    /* replicas[i].headers, checked, lowercase names; point into the config */
    irn_header *extra;
    size_t nextra;
    char dp_value[24]; /* a data-parallel target's X-data-parallel-rank value */
    /* Membership (members.c). A slot never moves: a request's pointer to it stays
     * valid after the replica leaves. Readers check gw_replica_member first. */
    _Atomic int active;       /* a member now; configured replicas always are */
    _Atomic uint32_t gen;     /* bumped on every join: the prober restarts its counts */
    _Atomic uint64_t left_at; /* monotonic ns of its leaving; 0 while a member */
    bool dynamic;             /* from discovery: cfg is dyn_cfg */
    gw_replica_cfg dyn_cfg;   /* its group's settings, with its own id, url and events */
    char dyn_id[GW_REPLICA_ID_MAX + 1];
    char dyn_url[320];
    char dyn_events[2][GW_EV_ENDPOINT_MAX]; /* its kv_events endpoint and replay endpoint */
} gw_replica;

typedef enum { GW_TOK_NONE, GW_TOK_SIM, GW_TOK_HF } gw_tok_kind;

/* A model's tokenizer, as one object a reload can replace (fleet.c). refs counts
 * the model's own reference (while it is the model's current one) and each request
 * tokenizing with it (gw_model_toks_take .. gw_tokset_put); the control thread
 * frees a replaced one once refs is 0 (gw_fleet_sweep). */
typedef struct gw_tokset {
    gw_tok_kind kind;        /* GW_TOK_SIM or GW_TOK_HF */
    irt_tokenizer *hf;       /* GW_TOK_HF: the loaded tokenizer.json */
    irt_chat *chat;          /* GW_TOK_HF: its chat template and special tokens */
    irt_cache *tcache;       /* GW_TOK_HF: its repeated pieces (tokenizer.cache_tokens), or NULL */
    irt_parse_cache *pcache; /* GW_TOK_HF: chat messages kept parsed (parse_cache_bytes), or NULL */
    _Atomic uint32_t refs;
    struct gw_tokset *retired_next; /* on f->toks_retired once replaced */
} gw_tokset;

/* A model's slot. A slot never moves and lives until exit: a request's pointer to
 * it stays valid after a reload removes the model (its cfg and policy then stay
 * those it had). A model that a reload brings back by the same name gets its old
 * slot (and metric series) again. */
typedef struct gw_model {
    _Atomic(const gw_model_cfg *) cfg; /* a reload may swap it (new aliases, policy) */
    uint32_t index;
    _Atomic(irp_policy *) policy; /* a reload may swap it; requests keep the one they used */
    _Atomic(gw_tokset *) toks; /* its tokenizer now; NULL: none (take it with gw_model_toks_take) */
    _Atomic int tok;           /* gw_tok_kind of toks */
    _Atomic int active;        /* configured now (in the fleet's model list) */
} gw_model;

/* The configured models in config order, as one immutable list that a reload
 * replaces whole (the old ones are kept until exit). */
typedef struct gw_model_list {
    struct gw_model_list *retired_next;
    size_t n;
    gw_model *items[];
} gw_model_list;

typedef struct gw_kvsub gw_kvsub;

/* The KV event subscriber (kvsub.c): one thread owns a SUB socket (and a DEALER
 * for replays) per replica with kv_events, and applies what its engine publishes
 * to the index. What each replica's view rests on: */
enum {
    GW_KV_SOURCE_APPROX = 0,   /* no events configured: the gateway's own guesses */
    GW_KV_SOURCE_EVENTS = 1,   /* the engine's events, complete */
    GW_KV_SOURCE_PARTIAL = 2,  /* events, lacking blocks: orphans, or ones stored unseen */
    GW_KV_SOURCE_FALLBACK = 3, /* approximate after a gap that could not be replayed */
    GW_KV_SOURCE_STALE = 4,    /* events, but the engine's PUB socket is disconnected */
};
typedef struct gw_kvsub_stats {
    _Atomic uint64_t batches, events, blocks_stored, blocks_removed, clears, orphans, refused;
    _Atomic uint64_t replayed, gaps, fallbacks, decode_errors, restarts, reconnects;
    _Atomic uint64_t other_group;   /* events of a KV cache group the index does not follow */
    _Atomic uint64_t other_rank;    /* batches another data-parallel rank published (skipped) */
    _Atomic uint64_t lag_us;        /* the last batch: now minus its ts (engine clock) */
    _Atomic uint64_t last_batch_ns; /* monotonic time of the last applied batch; 0 never */
    _Atomic int source;             /* GW_KV_SOURCE_* */
    _Atomic int connected;          /* the SUB socket is connected to the engine */
    /* the parity self-test: requests answered, and of those the ones whose every full
     * prompt block the engine's events then showed stored */
    _Atomic uint64_t parity_checks, parity_agree;
    /* a check whose blocks had not all arrived yet when the response ended: the
     * subscriber thread looks again as batches come, until GW_PARITY_WAIT_NS */
    _Atomic(struct gw_parity *) parity_pending;
} gw_kvsub_stats;

#define GW_PARITY_WAIT_NS (500ull * 1000000ull)
/* One parity check still open: owned by whoever took it out of parity_pending. */
typedef struct gw_parity {
    uint64_t deadline_ns;
    uint32_t slot, n;
    char rid[160];  /* the request's id, for the log */
    ir_hash128 h[]; /* the prompt's n full blocks */
} gw_parity;

typedef void (*gw_member_fn)(void *ud, gw_replica *r, bool joined);
#define GW_MEMBER_LISTENERS 4

typedef struct gw_fleet {
    /* The running configuration: the one loaded at start, then each SIGHUP reload's
     * (reload.c). What it points to never changes and lives until exit. */
    _Atomic(const gw_config *) cfg;
    irx_index *index; /* the KV index, shared by every worker */
    /* the KV event subscriber (kvsub.c): NULL until a replica with kv_events is a
     * member; set once (by the control thread, or at init), then kept until exit */
    _Atomic(gw_kvsub *) kvsub;
    /* the decision log, for the parity self-test's mismatches: set by
     * gw_decisions_open, cleared by gw_decisions_close, which runs only once the
     * subscriber has stopped (free_app); NULL when the log is off */
    _Atomic(iro_dlog *) dlog;
    uint32_t block_size;
    gw_replica *replicas;     /* nslots of them */
    _Atomic size_t nreplicas; /* slots in use (members or not), grows only */
    size_t nslots;            /* fixed: GW_MAX_REPLICAS with discovery, else the config's */
    gw_model *models;         /* nmodel_slots of them; slot i has index i */
    _Atomic size_t nmodels;   /* slots used (by a model configured now or before), grows only */
    size_t nmodel_slots;      /* fixed at start: room for models that reloads add */
    _Atomic(const gw_model_list *) mlist; /* the models configured now, in config order */
    gw_model_list *mlist_retired;         /* lists that reloads replaced (control thread) */
    gw_tokset *toks_retired;              /* tokenizers that reloads replaced, not yet freed */
    irp_policy **pol_retired;             /* policies that reloads replaced, not yet freed */
    size_t npol_retired, pol_retired_cap;
    /* Held while one ejection is decided (gw_replica_failed, off the hot path), so
     * that racing workers never eject past health.max_ejection_percent together. */
    pthread_mutex_t eject_mu;
    /* Told on the control thread (the only writer of membership) after a replica
     * joins (joined) and after it leaves (!joined), in the order they listened: the
     * metrics (metrics.c) and the engine scraper (load.c) follow members so. */
    struct gw_member_listener {
        gw_member_fn fn;
        void *ud;
    } listeners[GW_MEMBER_LISTENERS];
    size_t nlisteners;
} gw_fleet;

/* Adds / removes a membership listener, on the control thread (or before it
 * runs). gw_fleet_listen returns -1 when GW_MEMBER_LISTENERS already listen. */
int gw_fleet_listen(gw_fleet *f, gw_member_fn fn, void *ud);
void gw_fleet_unlisten(gw_fleet *f, gw_member_fn fn, void *ud);

int gw_fleet_init(gw_fleet *f, const gw_config *cfg, char *err, size_t errlen);
/* The capacity a replica's view gets: its own kv_capacity_blocks, else the default
 * (index.default_capacity_blocks), at most GW_MAX_CAPACITY_BLOCKS. */
uint32_t gw_capacity_blocks(const gw_fleet *f, int64_t kv_capacity_blocks);
/* What the policies take of replica slot's prediction: 1 for events, else the
 * configured trust of its source (index.*_trust). */
double gw_prediction_trust(const gw_fleet *f, uint32_t slot);
/* Its source now, GW_KV_SOURCE_*. */
int gw_index_source(const gw_fleet *f, uint32_t slot);
/* A source's name, as /admin/explain's index_source gives it ("approximate" for
 * any value out of range). */
const char *gw_index_source_name(int source);
/* Starts f->kvsub when some replica, or some discovery.dns group, has kv_events (0
 * and nothing when none); follows the configured replicas' events. */
int gw_kvsub_start(gw_fleet *f, char *err, size_t errlen);
void gw_kvsub_stop(gw_fleet *f);
/* Membership (members.c, control thread): replica r joined, and its kv_events (if
 * any) are followed from now on, in a stream of their own (the subscriber starts
 * if none runs; a failure is logged and r is tracked approximately); or r left,
 * and its stream (if any) closes. The subscriber thread opens and closes streams
 * in the order they were asked for, within a poll interval. */
void gw_kvsub_member(gw_fleet *f, gw_replica *r, bool joined);
/* The counters of the replica in slot, or NULL when it has no kv_events stream. */
gw_kvsub_stats *gw_kvsub_replica(const gw_fleet *f, uint32_t slot);
/* Link-local IPv6 hosts and their zones (ip6zone.c). The problem with host (an
 * address as ir_url_parse leaves it, fe80::1%eth0) into why, or NULL when none: a
 * link-local address without a zone, a zone on another address, or a zone that is
 * neither an interface here nor a number. */
const char *gw_ip6_zone_problem(const char *host, char *why, size_t cap);
/* The same for a tcp://[addr%zone]:port endpoint's host (NULL for other hosts). */
const char *gw_ep_zone_problem(const char *ep, char *why, size_t cap);
/* tcp://[fe80::1%25eth0]:port (a URL's escaped zone) becomes [fe80::1%eth0], in
 * place: libzmq reads the zone after a bare %. */
void gw_ep_unescape_zone(char *ep);
/* Whether tcp:// endpoint ep names its host by a DNS name (not an IPv4 or a
 * bracketed IPv6 literal); the name is copied into host (cap bytes). */
bool gw_ep_dns_host(const char *ep, char *host, size_t cap);
/* ep (tcp://host:port) with address ip in the host's place, in brackets when it
 * is IPv6, into out; -1 when ep is not tcp:// or out is too small. */
int gw_ep_at_addr(const char *ep, const char *ip, char *out, size_t cap);
/* Checks an endpoint pair; path names the kv_events key (replicas[i].kv_events). */
void gw_check_kv_events(const gw_kv_events_cfg *c, size_t i, ir_cfg_errors *errs);
/* Closes a check: agreed when the events now show its blocks, or when final is
 * false puts it back for a later look (returns false then). */
bool gw_parity_settle(const gw_fleet *f, gw_kvsub_stats *st, gw_parity *p, bool final);
/* Hands a check that could not settle at once to the subscriber thread. */
void gw_parity_defer(const gw_fleet *f, gw_kvsub_stats *st, gw_parity *p);
/* The subscriber thread settles the pending check when it can (all of it: final). */
void gw_parity_poll(const gw_fleet *f, gw_kvsub_stats *st, bool final);
/* Adds index_source ("approximate", "events", "events-partial",
 * "approximate-after-gap" or "events-stale"), prediction_trust and, for event-fed
 * replicas, index_view_age_ms, index_event_blocks, index_cpu_blocks,
 * index_orphan_blocks and index_unseen_blocks to an /admin/explain row. */
void gw_index_source_json(const gw_fleet *f, uint32_t slot, json_t *row);
void gw_fleet_free(gw_fleet *f);
/* A model by name or alias, among those configured now; NULL when unknown. */
const gw_model *gw_fleet_model(const gw_fleet *f, const char *name, size_t len);
/* The models configured now, in config order (never NULL after gw_fleet_init). */
static inline const gw_model_list *gw_fleet_models(const gw_fleet *f) {
    return atomic_load_explicit(&f->mlist, memory_order_acquire);
}
/* The model's tokenizer now, with a reference the caller gives back with
 * gw_tokset_put (any thread, no waiting); NULL when the model has none. */
gw_tokset *gw_model_toks_take(const gw_model *m);
void gw_tokset_put(gw_tokset *t);
/* Loads models[i]'s tokenizer (c) with its caches sized by tc (cache_tokens ids,
 * parse_cache_bytes; none when 0, when tc is NULL, or when out of memory: they only
 * save time): 0 with *out (NULL when it has none, or when it is tokenizer_optional
 * and failed, which is logged); -1 with err naming the key. */
int gw_tokset_load(const gw_model_cfg *c, size_t i, const gw_tokenizer_cfg *tc, gw_tokset **out,
                   char *err, size_t errlen);
void gw_tokset_free(gw_tokset *t);
/* Control thread: makes t (may be NULL) m's tokenizer; the one it replaces is freed
 * once no request holds it (gw_fleet_sweep). */
void gw_model_set_toks(gw_fleet *f, gw_model *m, gw_tokset *t);
/* The model's policy now, held (irp_policy_hold) until the caller gives it back with
 * gw_policy_put (any thread, no waiting). The control thread, which alone replaces and
 * frees policies, may read m->policy as it is. */
irp_policy *gw_model_policy_take(const gw_model *m);
void gw_policy_put(irp_policy *p);
/* Control thread: makes p m's policy (the model holds it); the one it replaces is freed
 * once no request holds it (gw_fleet_sweep). */
void gw_model_set_policy(gw_fleet *f, gw_model *m, irp_policy *p);
/* Control thread: frees the replaced tokenizers and policies that nothing holds any more. */
void gw_fleet_sweep(gw_fleet *f);
/* Control thread: publishes list as the models configured now (the old list is
 * kept until exit). */
void gw_fleet_set_models(gw_fleet *f, gw_model_list *list);
bool gw_replica_serves(const gw_replica *r, uint32_t model);
/* Sets r->model_mask from r->cfg->models (the models named so far, configured now
 * or before: a request of a removed model may still retry). */
void gw_replica_models(const gw_fleet *f, gw_replica *r);
/* Whether replica settings c serve model `name` (c->models names it, or names none). */
bool gw_replica_cfg_serves(const gw_replica_cfg *c, const char *name);

/* ---- membership (members.c) ---------------------------------------------------------
 * Called on the control thread only (discovery); readers on any thread never wait.
 * A replica that joins takes a slot: its own old one when the same id comes back,
 * else a fresh one, else the slot of a departed member that has been idle (no
 * request in flight) for GW_SLOT_QUARANTINE_NS, so that no reader that saw it a
 * member can still be using it. tmpl gives every setting but id and url (its
 * models, headers and kv_events topic must outlive the member; its kv_events
 * endpoints, at most GW_EV_ENDPOINT_MAX - 1 bytes, are copied into the slot). An
 * old slot is taken back only when its url and kv_events are the same. Returns
 * the slot, or -1 (fleet full, bad url, endpoints too long). A replica that
 * leaves finishes its running requests, gets no new ones, drops out of the KV
 * index (its KV event stream closes) and of the metrics. */
#define GW_SLOT_QUARANTINE_NS (10ull * 1000000000ull)
int gw_fleet_join(gw_fleet *f, const char *id, const char *url, const gw_replica_cfg *tmpl);
/* Whether discovered replica r is the target that url and tmpl describe: the same
 * url, data-parallel rank and kv_events (endpoints and topic). */
bool gw_replica_same_target(const gw_replica *r, const char *url, const gw_replica_cfg *tmpl);
/* A configured replica (a reload added or replaced it): a fresh slot, with cfg as
 * its settings (cfg must outlive the member). The slot, or -1 (no room, bad url). */
int gw_fleet_add(gw_fleet *f, const gw_replica_cfg *cfg);
/* A configured replica back in the slot it left (a reload removed it, and a later
 * one adds it again with the same url, headers and KV events: the caller checks),
 * with cfg as its settings; no new slot is spent. The slot, or -1 (slot is a
 * member, or a discovered replica's). */
int gw_fleet_rejoin(gw_fleet *f, uint32_t slot, const gw_replica_cfg *cfg);
void gw_fleet_leave(gw_fleet *f, uint32_t slot);
bool gw_replica_member(const gw_replica *r);
bool gw_replica_available(const gw_replica *r, uint64_t now);

/* The replicas a request of `model` may be offered: they serve it, are healthy
 * (probes pass, not ejected) and have room under max_concurrency, and under
 * max_pending too when `pends` (a streamed request: see gw_lease_tokens). Replicas
 * whose bit is set in `exclude` (may be NULL) are left out. *healthy counts the
 * healthy ones that serve the model, with or without room. */
size_t gw_fleet_candidates(const gw_fleet *f, uint32_t model, uint64_t now, bool pends,
                           const uint64_t *exclude, irp_candidate *out, size_t *healthy);
/* The same, and why[i] (an entry for each slot below f->nreplicas as read at the
 * call) says why replica i was left out, or NULL when it is offered: "not a
 * member" (a free slot), "does not serve the model", "unhealthy", "ejected",
 * "already tried" (in exclude) or "full". /admin/explain shows these. */
size_t gw_fleet_candidates_why(const gw_fleet *f, uint32_t model, uint64_t now, bool pends,
                               const uint64_t *exclude, irp_candidate *out, size_t *healthy,
                               const char **why);

/* The 404 message for an unknown model. A name over GW_SHOWN_NAME bytes is cut at a
 * character boundary and marked with an ellipsis and its full length; a NUL in it
 * shows as U+FFFD. out: GW_SHOWN_NAME * 3 + 96 bytes hold any message. */
#define GW_SHOWN_NAME 256
void gw_unknown_model_message(const char *name, size_t len, char *out, size_t cap);

/* A lease: one request's claim on a replica's concurrency and pending slots.
 * Taking one never overshoots the caps, whatever the races. */
/* A lease's tokens: the prompt's, and of those the ones predicted uncached (the
 * prefill work the engine has still to do; equal to prompt without a prediction).
 * Taking a lease that makes the replica's pending 1, and the head of a lease while
 * others stay pending, restart the replica's prefill_since clock. */
/* pends: the request counts as pending until its first body byte (a streamed
 * request: the engine sends its head at once, and the first chunk after the
 * prefill). A request that does not stream gets its head and body only once the
 * whole answer is generated, so its wait says nothing of the prefill queue: it
 * takes a concurrency slot only, and max_pending does not cap it. */
typedef struct gw_lease_tokens {
    uint64_t prompt, uncached;
    bool pends;
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
/* The most of a replica's /v1/models page that is read (a vLLM page is a few KiB; an
 * adapter's card under 1 KiB): past it, the page is not read, and the last good one
 * stays. */
#define GW_CARDS_MAX_BYTES (1u << 20)
/* Replaces what replica r said of its models (a /v1/models body). Only the cards of
 * configured model names are kept, the first of each: the rest of a page is never
 * served, and a page of a million empty entries would otherwise stay parsed. */
void gw_cards_update(gw_cards *c, uint32_t replica, const char *body, size_t len);
/* Renders GET /v1/models: configured models then aliases, in config order. */
int gw_cards_render(gw_cards *c, ir_buf *out);

/* ---- the whole gateway ------------------------------------------------------------------ */
typedef struct gw_stats {
    _Atomic uint64_t requests, responses_2xx, responses_4xx, responses_5xx;
    _Atomic uint64_t retries, client_disconnects, rejected_full, upstream_errors;
    _Atomic uint64_t moved_hung;      /* attempts moved off a replica marked down */
    _Atomic uint64_t stalled_streams; /* responses cut by upstream.idle_timeout */
    _Atomic uint64_t cut_at_shutdown; /* requests the drain cut at server.shutdown_timeout */
    _Atomic int64_t tokenize_queued;  /* bodies on or waiting for a tokenizer thread */
    irn_server_counters clients;      /* the client port's connections, all workers */
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
    _Atomic int stopping;                 /* set by the first SIGTERM/SIGINT: draining */
    _Atomic int draining;                 /* the drain has begun (after server.shutdown_delay) */
    const char *cfg_path;                 /* the file SIGHUP rereads */
    struct gw_retired *retired;           /* what reloads replaced, kept until exit (reload.c) */
    struct gw_control *ctl;               /* the control loop, owned */
    struct gw_discovery *disc;            /* DNS discovery on the control loop, owned; NULL: none */
    irl_scraper *scraper;                 /* engine metrics (load.c), owned; NULL until started */
    struct gw_load *load;                 /* what load.c keeps between reports, owned */
    struct gw_load_metrics *load_metrics; /* metrics_load.c's families, owned */
    struct gw_kv_metrics *kv_metrics;     /* metrics_kv.c's families, owned */
    bool *started;                        /* started[i]: workers[i] is bound and running */
    struct gw_metrics *metrics;           /* the registry behind GET /metrics (metrics.c), owned */
    iro_dlog *dlog;                       /* the decision log (decision.c), owned; NULL when off */
    struct gw_tracer *tracer;             /* traces (trace.c), owned; NULL when off */
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
/* From the control thread: a replica went down; w moves the attempts that wait on
 * it (gw_stream_move_hung). A no-op once w was asked to stop. */
void gw_worker_recheck(gw_worker *w);
/* gw_worker_recheck on every started worker. */
void gw_app_replica_down(gw_app *app);

/* The control loop (control.c): admin port, health checks, model cards. */
typedef struct gw_control gw_control;
gw_control *gw_control_new(gw_app *app, uv_loop_t *loop);
int gw_control_start(gw_control *c);
/* Draining: health checks, model cards and engine scrapes stop; the admin port
 * keeps answering (/ready says 503 "draining") until gw_control_stop closes it. */
void gw_control_drain(gw_control *c);
void gw_control_stop(gw_control *c); /* drains, then closes the admin port */
void gw_control_free(gw_control *c);
/* Metrics (metrics.c): one obs registry per gateway. gw_metrics_init after the
 * fleet (it makes every replica's series); a replica that joins later gets its
 * series from gw_metrics_replica_join, one that leaves loses them from the page
 * with gw_metrics_replica_leave; its handles (r->metrics) stay valid for the
 * requests still on it, and gw_metrics_replica_free frees them once nothing refers
 * to r (gw_metrics_free frees those of the replicas still in the fleet). The
 * series themselves live as long as the registry: a replica that comes back by
 * the same id gets them again, from zero. gw_metrics_render appends GET /metrics. */
int gw_metrics_init(gw_app *app);
void gw_metrics_free(gw_app *app);
int gw_metrics_replica_join(gw_app *app, gw_replica *r);
void gw_metrics_replica_leave(gw_app *app, gw_replica *r);
void gw_metrics_replica_free(gw_replica *r);
int gw_metrics_render(gw_app *app, ir_buf *out);
/* A model that a reload added (or brought back, or whose tokenizer changed): its
 * own series. One that a reload removed: its series leave the page. A member whose
 * settings now name models its model_mask does not have yet: its series for them,
 * made before gw_replica_models routes them to it. Control thread. */
void gw_metrics_model_join(gw_app *app, const gw_model *md);
void gw_metrics_replica_models(gw_app *app, gw_replica *r);
void gw_metrics_model_leave(gw_app *app, const gw_model *md);
/* The engines' load reports, the scrapes and the decision log's records
 * (metrics_load.c): families of the registry with a collect hook of their own,
 * registered by gw_metrics_init and freed by gw_metrics_free. */
int gw_metrics_load_init(gw_app *app);
void gw_metrics_load_free(gw_app *app);
/* The KV event subscriber's counters, parity ratio and lag (metrics_kv.c), the
 * same way. */
int gw_metrics_kv_init(gw_app *app);
void gw_metrics_kv_free(gw_app *app);

/* Engine load (load.c): the scraper of every replica's /metrics, started and
 * stopped by the control loop. Its reports land in each gw_replica's engine,
 * size the replica's shadow in the KV index when kv_capacity_blocks is not set,
 * and reset that shadow when the engine restarted. */
int gw_load_start(gw_app *app);
void gw_load_stop(gw_app *app);
/* The decision log (decision.c): opened by the control loop's start, closed by
 * gw_control_free once the workers and the KV event subscriber are joined. */
int gw_decisions_open(gw_app *app);
void gw_decisions_close(gw_app *app);
/* Writes a parity mismatch (kvsub_parity.c) to the decision log, when the log is on
 * and samples the request: the replica, the full blocks the gateway predicted the
 * engine would store and how many of them its events showed. Any thread. */
void gw_decision_log_parity(const gw_fleet *f, const gw_parity *p, uint32_t shown);
/* Traces (trace.c): opened by the control loop's start when
 * observability.otlp_endpoint is set (loading libcurl then), closed after the
 * workers are joined. */
int gw_trace_open(gw_app *app);
void gw_trace_close(gw_app *app);
/* The endpoint's check for the config (an http:// or https:// URL). */
void gw_check_otlp_endpoint(const char *ep, ir_cfg_errors *errs);

/* Age of replica r's last report at `now`, or UINT64_MAX when it has none. */
uint64_t gw_engine_report_age(const gw_replica *r, uint64_t now);
/* ,"engine":{...} for GET /admin/state: the report's age in ms, whether it is
 * fresh, its numbers, and the scrapes by result (null age before any report). */
void gw_engine_state_json(gw_app *app, gw_replica *r, uint64_t now, ir_buf *out);
/* Fills c's engine fields from r's report when it is younger than max_age. */
void gw_engine_fill(gw_replica *r, uint64_t now, uint64_t max_age, irp_candidate *c);

/* DNS discovery (discovery.c), on the control loop: every group of cfg (which must
 * outlive it) is looked up at start and then every refresh, its addresses joining
 * and leaving the fleet (gw_fleet_join, gw_fleet_leave). NULL (err says why) on a
 * channel that cannot be set up, such as a bad nameserver. settled: every group
 * has had its first answer (or failure). stop closes its handles (the loop then
 * ends them); free after the loop has run and the workers are joined (members may
 * point to settings it holds). adopt, before d starts (a reload, on the control
 * thread): d's groups that old has by the same name, url and srv take over their
 * members (with d's models and caps) and their schedule; old's other members (and
 * those old was still handing over) are handed over to d: they serve on until d
 * has settled, then leave, but for those a group of d finds again by the same id
 * and url, which stay as its members. old may be NULL, and d too (then every
 * member of old leaves at once). */
typedef struct gw_discovery gw_discovery;
gw_discovery *gw_discovery_new(gw_app *app, const gw_discovery_cfg *cfg, uv_loop_t *loop, char *err,
                               size_t errlen);
int gw_discovery_start(gw_discovery *d);
bool gw_discovery_settled(const gw_discovery *d);
void gw_discovery_stop(gw_discovery *d);
void gw_discovery_adopt(gw_discovery *d, gw_discovery *old);
/* A group's members (discovery.c). gw_dns_member_tmpl: what every member of group c
 * gets but its id, url, rank and KV event endpoints (its strings point into c).
 * gw_dns_target: rank r (0 without data_parallel_size) of the member at ip:port, its
 * url ending in path (the group url's base path) into t: id <name>-<ip>-<port>, plus
 * /dp<r> with data_parallel_size N > 1 (dp.c's gw_dp_id), X-data-parallel-rank r,
 * and with kv_events the endpoints tcp://<ip>:<port + r> and tcp://<ip>:<replay_port
 * + r> (gw_dp_endpoint; [ip] for IPv6). t's strings point into t. -1 when something
 * does not fit, or r is not a rank of the group. */
typedef struct gw_dns_target_cfg {
    char id[GW_REPLICA_ID_MAX + 1];
    char url[640];
    char events[2][GW_EV_ENDPOINT_MAX];
    gw_replica_cfg cfg;
} gw_dns_target_cfg;
void gw_dns_member_tmpl(const gw_dns_group_cfg *c, gw_replica_cfg *out);
int gw_dns_target(const gw_dns_group_cfg *c, const char *path, const char *ip, uint16_t port,
                  int64_t r, gw_dns_target_cfg *t);
/* The same with the member's own KV event ports (from SRV records: kv_events.port_srv
 * and replay_port_srv), instead of the group's; 0: none (no events, or no replay). */
int gw_dns_target_ports(const gw_dns_group_cfg *c, const char *path, const char *ip, uint16_t port,
                        int64_t r, int64_t ev_port, int64_t replay_port, gw_dns_target_cfg *t);
/* The smallest TTL (seconds) of the SRV answers in a raw DNS reply (dns_ttl.c: c-ares
 * 1.18 gives SRV records without it; ADR 0015). 0, or -1 when the reply is
 * malformed or has no SRV answer. Reads nothing past len. */
int gw_dns_srv_ttl(const unsigned char *reply, size_t len, uint32_t *ttl);
/* Points a c-ares channel (an ares_channel) at the nameservers given as "host[:port]"
 * strings; none: the channel keeps the system's. A c-ares status (ARES_SUCCESS). Used
 * by discovery and by the KV event subscriber's own channel. */
struct ares_channeldata;
int gw_dns_set_servers(struct ares_channeldata *ch, const ir_cfg_strlist *ns);
void gw_discovery_free(gw_discovery *d);

/* The registry itself, for files that add families of their own (the engines' load
 * gauges, say: register them after gw_metrics_init, read values in a collect hook,
 * iro_registry_on_collect). NULL before gw_metrics_init. */
struct iro_registry *gw_metrics_registry(gw_app *app);
/* The worker's series of inferrail_loop_turn_cpu_seconds (worker.c observes it
 * before each poll); NULL before gw_metrics_init. */
struct iro_series *gw_metrics_loop_turn(gw_app *app, uint32_t worker);
/* Members of GET /admin/state from the registry, each starting with a comma (see
 * README, "The admin console"). */
void gw_metrics_state_replica(gw_app *app, const gw_replica *r, ir_buf *out);
void gw_metrics_state_model(gw_app *app, const gw_model *m, ir_buf *out);

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
/* Whether name[0..len) is a header name: a non-empty RFC 9110 token. */
bool gw_header_name_ok(const char *name, size_t len);
int gw_replica_headers_init(gw_replica *r);

/* Readiness and state (ready.c). Ready: not draining, and every configured
 * model has a healthy replica. `why` (may be NULL) gets the JSON body of
 * /ready. gw_ready_answer sends it: 200 when ready, else 503. */
bool gw_app_ready(gw_app *app, uint64_t now, ir_buf *why);
int gw_ready_answer(gw_app *app, irn_resp *resp, const irn_header *headers, size_t nheaders);
/* The admin console's page (generated from src/gateway/console/index.html). */
extern const char gw_console_html[];
extern const size_t gw_console_html_len;
/* GET /admin/state: version, commit, drain state, models, replicas, as JSON (README). */
void gw_state_render(gw_app *app, ir_buf *out);

/* The running configuration (see gw_fleet.cfg). */
static inline const gw_config *gw_live(const gw_app *app) {
    return atomic_load_explicit(&app->fleet.cfg, memory_order_acquire);
}

/* SIGHUP (reload.c): rereads path. A file with problems (a tokenizer that cannot
 * load, a nameserver c-ares refuses, included) is refused, each problem logged with
 * its path, and the running configuration kept. Otherwise replicas, models (added,
 * removed, reordered, aliases, policies, tokenizers), discovery, routing, retry,
 * health (but its interval), upstream timeouts and logging levels take effect at
 * once, without dropping a connection: requests already running finish under the
 * settings they started with. Keys that need a restart are named in a warning and keep their
 * running value. 0 when applied, -1 when refused. Main thread only. */
int gw_reload(gw_app *app, const char *path);
/* Frees what reloads replaced (at exit, once nothing runs). */
void gw_reload_free(gw_app *app);

/* Optional libraries (dl.c, ADR 0012): opens soname and sets each *syms[i].slot
 * to its function; 0, or -1 with a line naming the Debian package in err. The
 * callers (zmq_dl.c, curl_dl.c) do it once, under pthread_once. */
typedef struct gw_dl_sym {
    const char *name;
    void **slot;
} gw_dl_sym;
int gw_dl_open(const char *soname, const char *package, const gw_dl_sym *syms, size_t n, char *err,
               size_t errlen);

int gw_main(int argc, char **argv);

/* Request ids (request.c), shared with the control thread. A client's id is kept
 * when it is 1 to 128 letters, digits and -_.:/+=@~. */
bool gw_request_id_ok(const char *s);
void gw_request_id_new(ir_rng *r, char out[33]);

#endif
