/* ir_policy.h: the policy module's public header.
 *
 * A routing policy is a table of function pointers (one file per policy).
 * The gateway only ever offers a policy candidates that serve the model, are
 * healthy and have room; the policy picks one of them.
 *
 * Threading: a policy instance is shared by every worker thread. Its state is
 * either immutable or atomic; per-call randomness comes from the caller's
 * generator (one per worker), so a fixed routing.seed replays the same choices
 * for the same sequence of calls on a worker.
 */
#ifndef IR_POLICY_H
#define IR_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a policy knows about one candidate replica. The gateway's own counters
 * are always current; the engine's numbers come from its metrics page and are
 * valid only when engine_fresh (a report younger than load.max_age). */
typedef struct irp_candidate {
    uint32_t replica;                 /* the fleet's index of the replica */
    uint32_t in_flight;               /* requests sent and not finished */
    uint32_t pending;                 /* requests still waiting for their first body byte
                                         (their prefill: a stream's head comes earlier) */
    uint64_t prompt_tokens_in_flight; /* prompt tokens of the requests in flight */
    uint64_t pending_prompt_tokens;   /* prompt tokens of those still pending */
    /* Of those, the tokens the KV index predicted uncached when each was routed
     * (cost_model's queue estimate). 0: unknown, pending_prompt_tokens stands
     * in (a routed prompt always has at least one uncached token, so 0 with
     * pending > 0 can only mean unknown). */
    uint64_t pending_uncached_tokens;
    /* Of the same pending requests, the sum of u * (2c + u) (u uncached, c cached
     * tokens): twice their prefills' attention terms. 0: unknown. */
    uint64_t pending_work;
    /* Seconds the oldest pending request has been in its prefill, as the gateway
     * sees it (since pending went from 0, or since the last first byte); 0 unknown. */
    double pending_head_s;
    uint64_t predicted_cached_tokens; /* what the KV index predicts it holds of this prompt */
    /* Of the rest, the tokens it holds off the GPU (an event-fed replica's CPU tier):
     * loaded instead of computed. */
    uint64_t predicted_cpu_tokens;
    uint32_t max_concurrency;    /* the replica's cap on in_flight */
    uint64_t kv_capacity_blocks; /* its KV cache, in blocks (0: unknown) */
    bool engine_fresh;           /* the engine's numbers below are current */
    uint32_t engine_running, engine_waiting;
    double engine_kv_usage; /* 0..1 */
    /* When the KV index last emptied its view of the replica (ir_now_ns(); 0: never):
     * an engine restart, a cache reset, an event gap (irx_replica_cleared_ns). */
    uint64_t cleared_ns;
} irp_candidate;

/* The request being routed. */
typedef struct irp_request {
    uint64_t prompt_tokens; /* exact when tokenized, else estimated */
    ir_rng *rng;            /* the calling worker's generator */
    bool predicted;         /* predicted_cached_tokens come from the KV index */
    /* The prompt's full blocks, chained (ir_block_hash_chain); NULL and 0 when it
     * was not tokenized. blocks[i] names the prompt's first (i+1)*block_size tokens. */
    const ir_hash128 *blocks;
    size_t nblocks;
    uint32_t block_size;
    /* The prompt's text as the engine will see it (for text-based policies); NULL
     * when not known. Not owned; valid during choose only. */
    const char *text;
    size_t text_len;
    /* A session-affinity key (a header or the body's `user`); NULL when none. */
    const char *session;
    size_t session_len;
    /* A what-if (POST /admin/explain): choose answers as it would now, and must
     * leave the policy's state as it was (round_robin does not take a turn). */
    bool dry_run;
    /* In the assigned hook only: the tokens of the prompt the KV index predicts the
     * chosen replica holds on its GPU (before any trust discount); 0 elsewhere. */
    uint64_t assigned_cached_tokens;
} irp_request;

/* The knobs of every policy, with the defaults of irp_config_defaults. One
 * struct for all, so the config file and the tests set them the same way. */
typedef struct irp_config {
    /* prefix_hash: consistent hashing with bounded loads. */
    double load_factor;       /* c: no replica above c times the mean in flight (1.25) */
    double cost_load_factor;  /* cost_model's c (2.0): its queue term already spreads load */
    uint32_t cost_load_floor; /* cost_model: a replica under this many in flight is never
                                 held back by the bound (8) */
    uint32_t prefix_blocks;   /* leading blocks that name a prefix (4) */
    uint32_t vnodes;          /* points per replica on the ring (64) */
    /* kv_aware: score = hit_weight * hit fraction - load_weight * normalised load. */
    double hit_weight;    /* 1.0 */
    double load_weight;   /* 1.0 */
    uint32_t load_floor;  /* in flight that counts as fully loaded, at least (4) */
    double hit_tolerance; /* scores closer than this times hit_weight are equal (0.05) */
    /* cost_model: P(u, c) = a*u + b*u*(c + u/2) + d, in seconds. */
    double prefill_a;      /* s per uncached token (100e-6) */
    double prefill_b;      /* s per token pair (3.3e-9) */
    double prefill_d;      /* s fixed per prefill (5e-3) */
    double tpot;           /* s per output token (20e-3) */
    double cpu_token_s;    /* s per token loaded from the CPU tier instead of computed (5e-6) */
    double kv_pressure;    /* engine KV usage above which a replica is avoided (0.95) */
    double work_weight;    /* weight of the prefill a choice adds for those behind it (1) */
    double tie_tolerance;  /* scores closer than this share of the cold prefill are equal (0.05) */
    uint32_t hot_replicas; /* most replicas a hot prefix is spread over (0: all) */
    double hot_util;       /* prefill utilisation one replica may take of a prefix (0.7) */
    double hot_window_s;   /* time constant of the per-prefix arrival rate, s (10) */
    bool session_affinity; /* prefer the replica a session used last */
    /* sglang_cache_aware: the defaults documented for SGLang Model Gateway
     * (docs/advanced_features/sgl_model_gateway.md, "Cache-Aware Policy
     * Tuning"); the first sglang-router (v0.1) documented 0.5, 32, 1.0001, 2^24. */
    double cache_threshold;         /* 0.3 */
    uint32_t balance_abs_threshold; /* 64 */
    double balance_rel_threshold;   /* 1.5 */
    uint64_t max_tree_chars;        /* per worker tree, in bytes of text (2^26) */
} irp_config;

void irp_config_defaults(irp_config *c);

/* What a policy says of one candidate, for POST /admin/explain. NaN: not known. */
typedef struct irp_explain {
    double score;             /* as the policy weighs it; its doc says which end wins */
    double estimated_ttft_ms; /* policies with a cost model */
} irp_explain;

/* One policy: a file defines one table. name, choose are required; create,
 * destroy and every hook may be NULL. The hooks let a policy keep state about
 * the fleet (as HAProxy's load-balancing algorithms do); they are called from
 * any worker thread, so what they touch must be atomic or locked. */
typedef struct irp_vtable {
    const char *name;
    /* Creates the shared state from the knobs (may return NULL when stateless). */
    void *(*create)(const irp_config *cfg);
    void (*destroy)(void *state);
    /* Returns an index into c[0..n), n >= 1. Anything else is a bug in the
     * policy: see irp_choose. */
    size_t (*choose)(void *state, const irp_request *req, const irp_candidate *c, size_t n);

    /* A request was sent to a replica (after choose), and later released from
     * it: finished, failed or retried elsewhere. Each assigned has one released. */
    void (*assigned)(void *state, uint32_t replica, const irp_request *req);
    void (*released)(void *state, uint32_t replica, const irp_request *req);
    /* A replica passed or failed its health checks. */
    void (*replica_up)(void *state, uint32_t replica);
    void (*replica_down)(void *state, uint32_t replica);
    /* A replica joined or left the fleet (the index is the fleet's, as in
     * irp_candidate.replica; a removed index may be reused by a later add). */
    void (*replica_added)(void *state, uint32_t replica);
    void (*replica_removed)(void *state, uint32_t replica);
    /* Optional: fills out[0..n) with each candidate's score (and TTFT estimate), as
     * choose would weigh them now, without changing any state. */
    void (*explain)(void *state, const irp_request *req, const irp_candidate *c, size_t n,
                    irp_explain *out);
} irp_vtable;

typedef struct irp_policy irp_policy;

/* The policies this build has, NULL-terminated. */
const irp_vtable *const *irp_all(void);
const irp_vtable *irp_find(const char *name);
/* The names of irp_all(), comma-separated, for error messages. Built from the
 * table once; the string lives as long as the process. */
const char *irp_names(void);

/* A policy instance owns its state (create at new, destroy at free). */
/* cfg NULL: irp_config_defaults. The instance keeps no pointer to cfg. */
irp_policy *irp_policy_new(const char *name, const irp_config *cfg); /* NULL when unknown */
/* An instance of a table that irp_all() need not list (tests, plugins). */
irp_policy *irp_policy_new_from(const irp_vtable *vt, const irp_config *cfg);
void irp_policy_free(irp_policy *p);
const char *irp_policy_name(const irp_policy *p);
/* Holders: a count the user keeps of who still uses an instance (a new one has none;
 * the policy never reads it), so that a replaced instance is freed only once none
 * does. Any thread; drop's release pairs with holders' acquire. */
void irp_policy_hold(irp_policy *p);
void irp_policy_drop(irp_policy *p);
uint32_t irp_policy_holders(const irp_policy *p);

/* Asks the policy to choose among c[0..n). n == 1 returns 0 without asking.
 * An answer outside [0, n) is a bug in the policy: debug builds (NDEBUG
 * unset) abort on an assert; release builds count it (see
 * irp_policy_out_of_range), log it once, and return 0. */
size_t irp_choose(irp_policy *p, const irp_request *req, const irp_candidate *c, size_t n);
/* How many answers of this instance were out of range (release builds). */
uint64_t irp_policy_out_of_range(const irp_policy *p);

/* The hooks, for the gateway to call; each is a no-op when the policy leaves
 * it NULL. Callers: assigned once a request is sent to `replica`, released
 * once it is done with it (whatever the outcome); up/down on a health change;
 * added/removed when the fleet changes. */
void irp_policy_assigned(irp_policy *p, uint32_t replica, const irp_request *req);
void irp_policy_released(irp_policy *p, uint32_t replica, const irp_request *req);
void irp_policy_replica_up(irp_policy *p, uint32_t replica);
void irp_policy_replica_down(irp_policy *p, uint32_t replica);
void irp_policy_replica_added(irp_policy *p, uint32_t replica);
void irp_policy_replica_removed(irp_policy *p, uint32_t replica);
/* out[0..n): the policy's explain hook, or NaN everywhere when it has none. */
void irp_policy_explain(irp_policy *p, const irp_request *req, const irp_candidate *c, size_t n,
                        irp_explain *out);

/* The tables, one per file. */
extern const irp_vtable irp_round_robin;
extern const irp_vtable irp_random;
extern const irp_vtable irp_least_request;
extern const irp_vtable irp_p2c;
extern const irp_vtable irp_prefix_hash;
extern const irp_vtable irp_kv_aware;
extern const irp_vtable irp_cost_model;
extern const irp_vtable irp_sglang_cache_aware;

/* cost_model's estimate of one candidate's time to first token, in seconds
 * (queue wait + P(u, c); see cost_model.c), for /admin/explain and the
 * decision log. Pure: reads only its arguments. */
double irp_cost_ttft(const irp_config *cfg, const irp_request *req, const irp_candidate *c);

#ifdef __cplusplus
}
#endif
#endif
