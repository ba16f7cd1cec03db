/* sim.h: internals of inferrail-sim, a CPU mock of a vLLM (or SGLang) engine.
 *
 * The engine runs on one libuv loop. It owns every sequence it accepts: a
 * sequence lives from sim_engine_submit until its on_finish callback returns
 * or sim_engine_abort is called, whichever comes first; after that the
 * pointer is gone. Callbacks never fire from inside submit or abort.
 */
#ifndef IR_SIM_H
#define IR_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/ir_core.h"
#include "tokenize/ir_tokenize.h"

#define SIM_MAX_MODEL_NAMES 8

typedef enum { SIM_ENGINE_VLLM, SIM_ENGINE_SGLANG } sim_engine_kind;

typedef struct sim_cfg {
    char host[256];
    uint16_t port;
    const char *model_names[SIM_MAX_MODEL_NAMES];
    size_t nmodel_names;
    uint32_t block_size;
    uint32_t num_gpu_blocks;
    uint32_t num_cpu_blocks;      /* the CPU tier's capacity in blocks; 0: none */
    double cpu_transfer_token_us; /* loading one CPU-tier token back to the GPU */
    uint32_t max_num_seqs;
    uint32_t max_model_len;
    bool prompt_tokens_details;
    double prefill_token_us; /* a: per uncached token */
    double prefill_pair_ns;  /* b: per (uncached token x attended token) */
    double prefill_fixed_ms; /* d: per prefill */
    double decode_token_ms;  /* time per output token at batch size 1 */
    double decode_batch_us;  /* added per extra running sequence */
    bool zero_latency;
    sim_engine_kind engine;
    size_t max_body_bytes;
    size_t max_write_queue;      /* response bytes queued per connection (h2: per stream, twice
                                    that per connection) before a request is dropped */
    bool enable_faults;          /* the fault switches (admin route and header) */
    uint32_t data_parallel_size; /* engine ranks behind the port (vLLM --data-parallel-size) */
    uint32_t dp_rank;            /* this engine's rank: its metrics' engine label */
    uint32_t workers;            /* unused: the simulator is single-threaded */
} sim_cfg;

void sim_cfg_defaults(sim_cfg *c);
#define SIM_DP_MAX 64

/* ---- latency model ------------------------------------------------------------ */
/* Prefill cost in ns of u uncached tokens attending to c cached ones:
 * P(u,c) = a*u + b*u*(c + u/2) + d. */
uint64_t sim_prefill_ns(const sim_cfg *c, uint64_t u, uint64_t cached);
/* Time per output token in ns while `running` sequences decode. */
uint64_t sim_decode_ns(const sim_cfg *c, uint32_t running);

/* ---- prefix cache -----------------------------------------------------------------
 * num_gpu_blocks blocks. A block with ref == 0 sits in the free queue, oldest
 * first; allocation takes the queue's head and evicts the hash it carried. Held
 * blocks (ref > 0) are never evicted. Every operation is O(1) (hash lookups
 * expected O(1)).
 *
 * The CPU tier (--num-cpu-blocks, off when 0): an LRU of hashes, oldest first.
 * A hashed block that the GPU evicts is copied there first (unless its hash is
 * already there), evicting the CPU tier's least recently used unpinned hash
 * when it is full (when every hash is pinned, the copy is dropped). A prefix
 * hit found there is loaded back into fresh GPU blocks and the CPU copy stays,
 * touched, as vLLM's OffloadingConnector keeps it. */
typedef struct sim_block {
    ir_hash128 hash;
    uint32_t ref;
    int32_t prev, next; /* free queue links, -1 at the ends */
    bool hashed;        /* registered in the map */
    bool in_free;
} sim_block;

typedef struct sim_cpu_slot {
    ir_hash128 hash;
    int32_t prev, next; /* LRU links (oldest first), or the free-slot list's next */
    uint32_t pins;      /* a load in progress: not evicted */
} sim_cpu_slot;

typedef struct sim_kv {
    sim_block *b;
    uint32_t n;
    int32_t free_head, free_tail;
    uint32_t nfree;
    ir_map hashed; /* a registered block's hash (its 16 bytes) -> its index; at most n */
    uint32_t nhashed;
    /* Called when a registered hash goes (evicted or reset), for KV events. */
    void (*on_removed)(void *ud, ir_hash128 h);
    void *removed_ud;
    /* The CPU tier: nc slots, ncused of them in the LRU; cmap: hash -> slot. */
    sim_cpu_slot *c;
    uint32_t nc, ncused;
    int32_t lru_head, lru_tail, cfree;
    ir_map cmap;
    uint64_t cpu_stored, cpu_evicted, cpu_dropped; /* copies made, evicted, refused */
    /* Called when the CPU tier stores (stored) or drops a hash, for KV events. */
    void (*on_cpu)(void *ud, ir_hash128 h, bool stored);
    void *cpu_ud;
} sim_kv;

int sim_kv_init(sim_kv *kv, uint32_t nblocks);
/* Adds a CPU tier of ncpu blocks (after sim_kv_init; 0 leaves it off). -1: no memory. */
int sim_kv_init_cpu(sim_kv *kv, uint32_t ncpu);
void sim_kv_free(sim_kv *kv);
int32_t sim_kv_lookup(const sim_kv *kv, ir_hash128 h);
/* The number of leading hashes that are cached. */
uint32_t sim_kv_match(const sim_kv *kv, const ir_hash128 *hs, uint32_t n);
/* Takes a reference on a cached block (leaving the free queue if it was there). */
void sim_kv_acquire(sim_kv *kv, int32_t idx);
/* A fresh block with ref 1, evicting the oldest free one (into the CPU tier when
 * there is one); -1 when none is free. */
int32_t sim_kv_alloc(sim_kv *kv);
/* Drops a reference; at zero the block joins the free queue's tail, still cached. */
void sim_kv_release(sim_kv *kv, int32_t idx);
/* Registers a full block's hash. A hash that is already cached stays with its
 * first block (this one then remains unregistered). */
bool sim_kv_set_hash(sim_kv *kv, int32_t idx, ir_hash128 h); /* true: newly registered */
/* Forgets the hashes of every free block and the whole CPU tier. Returns the
 * number of GPU hashes forgotten. */
uint32_t sim_kv_reset(sim_kv *kv);

/* The CPU tier. */
bool sim_kv_cpu_has(const sim_kv *kv, ir_hash128 h);
/* How many of hs[from..n) are in the CPU tier, counted from `from` until one is not. */
uint32_t sim_kv_match_cpu(const sim_kv *kv, const ir_hash128 *hs, uint32_t from, uint32_t n);
/* Makes the hs[0..n) that are in the CPU tier its most recently used, the first
 * one last (a prefix's head outlives its tail), as vLLM's touch does. */
void sim_kv_cpu_touch(sim_kv *kv, const ir_hash128 *hs, uint32_t n);
/* Pins (pin) or unpins hs[0..n), each of which must be in the CPU tier. */
void sim_kv_cpu_pin(sim_kv *kv, const ir_hash128 *hs, uint32_t n, bool pin);

/* ---- metrics ------------------------------------------------------------------------ */
/* A histogram: its buckets, and its series in the engine's metrics registry
 * (metrics.c), which counts. */
typedef struct sim_hist {
    const double *bounds; /* upper bounds, ascending, +Inf implied */
    size_t nb;
    struct iro_series *s; /* NULL until sim_metrics_init */
} sim_hist;

void sim_hist_init(sim_hist *h, const double *bounds, size_t nb);
void sim_hist_observe(sim_hist *h, double v);

typedef struct sim_metrics sim_metrics;

typedef enum { SIM_FINISH_STOP, SIM_FINISH_LENGTH, SIM_FINISH_ABORT, SIM_FINISH_COUNT } sim_finish;

typedef struct sim_stats {
    uint64_t prompt_tokens, generation_tokens;
    uint64_t prefix_queries, prefix_hits; /* in tokens; GPU hits only, as vLLM counts */
    uint64_t cpu_queries, cpu_hits;       /* the CPU tier's, vLLM's external_prefix_cache_* */
    uint64_t preemptions;
    uint64_t finished[SIM_FINISH_COUNT];
    uint64_t requests_received;
    sim_hist ttft, itl, e2e, queue, prefill, decode, inference, prompt_len, gen_len;
    double created;       /* wall time the counters started, for _created series */
    sim_metrics *metrics; /* the registry of the page, owned (metrics.c) */
} sim_stats;

/* ---- engine ------------------------------------------------------------------------ */
typedef struct sim_engine sim_engine;
typedef struct sim_seq sim_seq;

typedef struct sim_seq_cbs {
    /* Output tokens [from, to) were generated; from == 0 means the first token. */
    void (*on_tokens)(void *ud, sim_seq *s, size_t from, size_t to);
    /* The sequence ended. The pointer is invalid once this returns. */
    void (*on_finish)(void *ud, sim_seq *s, sim_finish why);
} sim_seq_cbs;

typedef struct sim_submit {
    const uint32_t *prompt;
    size_t prompt_len;
    size_t max_tokens; /* output tokens to generate when has_max_tokens */
    bool has_max_tokens;
    uint64_t seed;          /* mixes into the generated text */
    const char *cache_salt; /* the request's (copied), or NULL */
    const sim_seq_cbs *cbs;
    void *ud;
} sim_submit;

sim_engine *sim_engine_new(uv_loop_t *loop, const sim_cfg *cfg);
/* Rank cfg->dp_rank of a data-parallel engine: its own queues, cache and stats,
 * with its series (engine="<rank>") in rank0's metrics registry (rank0 NULL: a
 * registry of its own, as sim_engine_new). Free the other ranks before rank0. */
sim_engine *sim_engine_new_rank(uv_loop_t *loop, const sim_cfg *cfg, sim_engine *rank0);
/* Aborts what is left (no callbacks) and frees; closes its timer handle, so
 * the loop must run once more for the close to complete. */
void sim_engine_free(sim_engine *e);
sim_seq *sim_engine_submit(sim_engine *e, const sim_submit *req);
/* The client went away: the sequence's slot and blocks are freed at once and
 * it is counted as an abort. No callback fires for it afterwards. */
void sim_engine_abort(sim_engine *e, sim_seq *s);
uint32_t sim_engine_reset_prefix_cache(sim_engine *e);

/* ---- KV events (kvevents.c): vLLM's --kv-events-config, in its wire format ---------------- */
typedef struct sim_kvpub_cfg {
    bool enabled;              /* enable_kv_cache_events */
    char endpoint[256];        /* PUB, bound (vLLM binds only a wildcard one) */
    char replay_endpoint[256]; /* ROUTER, bound; "" none */
    char topic[128];
    uint32_t buffer_steps; /* batches kept for replay */
    uint32_t rank;         /* data_parallel_rank of its batches */
} sim_kvpub_cfg;
typedef struct sim_kvpub sim_kvpub;
/* Reads vLLM's JSON; -1 with a message naming the field. */
int sim_kvpub_parse(const char *json, sim_kvpub_cfg *out, char *err, size_t errlen);
/* c moved to data-parallel rank `rank`: its tcp ports plus rank, as vLLM's
 * offset_endpoint_port does. -1 with a message for an endpoint without a tcp port
 * or a port past 65535. */
int sim_kvpub_cfg_rank(sim_kvpub_cfg *c, uint32_t rank, char *err, size_t errlen);
/* map: the map encoding (newer vLLM), else arrays; bytes: 32-byte block hashes, else
 * signed 64-bit integers. NULL with a message when a socket cannot be set up. */
sim_kvpub *sim_kvpub_new(uv_loop_t *loop, const sim_kvpub_cfg *c, uint32_t block_size, bool map,
                         bool bytes, char *err, size_t errlen);
void sim_kvpub_free(sim_kvpub *p); /* closes its timer: the loop must run once more */
/* Every call is a no-op on NULL. tokens: block_size token ids. */
void sim_kvpub_stored(sim_kvpub *p, const ir_hash128 *parent, ir_hash128 h, const uint32_t *tokens,
                      const char *salt);
void sim_kvpub_removed(sim_kvpub *p, ir_hash128 h);
/* The CPU tier, as vLLM's OffloadingConnector reports it: a BlockStored with medium
 * "CPU", no parent and no token ids; a BlockRemoved with medium "CPU". */
void sim_kvpub_cpu_stored(sim_kvpub *p, ir_hash128 h);
void sim_kvpub_cpu_removed(sim_kvpub *p, ir_hash128 h);
void sim_kvpub_cleared(sim_kvpub *p);
void sim_kvpub_drop(sim_kvpub *p, uint64_t batches); /* a fault: the next batches skip PUB */
void sim_engine_set_publisher(sim_engine *e, sim_kvpub *p);
sim_kvpub *sim_engine_publisher(const sim_engine *e);

/* Read-only views. */
const sim_stats *sim_engine_stats(const sim_engine *e);
uint32_t sim_engine_running(const sim_engine *e);
uint32_t sim_engine_waiting(const sim_engine *e);
double sim_engine_kv_usage(const sim_engine *e);
const sim_kv *sim_engine_kv(const sim_engine *e);
const sim_cfg *sim_engine_cfg(const sim_engine *e);

/* Per-sequence views, valid while the sequence lives. */
size_t sim_seq_prompt_len(const sim_seq *s);
size_t sim_seq_cached_tokens(const sim_seq *s); /* at first scheduling, GPU and CPU hits */
size_t sim_seq_cpu_tokens(const sim_seq *s);    /* of those, loaded from the CPU tier */
size_t sim_seq_generated(const sim_seq *s);
/* How many output tokens the sequence will produce in all. */
size_t sim_seq_target(const sim_seq *s);
const uint32_t *sim_seq_output(const sim_seq *s); /* the output ids so far */
uint64_t sim_seq_arrival_ns(const sim_seq *s);

/* ---- metrics page ------------------------------------------------------------------ */
/* The page's registry, vLLM or SGLang flavoured as c says; made when the engine is
 * (after its histograms' buckets are set), freed with it. -1: no memory. */
struct iro_registry;
/* shared: rank 0's registry, for a data-parallel rank's series (not owned); NULL: a
 * registry of its own. */
int sim_metrics_init(sim_stats *st, const sim_cfg *c, struct iro_registry *shared);
struct iro_registry *sim_metrics_registry(const sim_stats *st);
void sim_metrics_free(sim_stats *st);
/* Renders the Prometheus text page of the engine, vLLM or SGLang flavoured. */
int sim_metrics_render(const sim_engine *e, ir_buf *out);
/* The page of n data-parallel ranks sharing rank e[0]'s registry. */
int sim_metrics_render_ranks(sim_engine *const *e, size_t n, ir_buf *out);
/* A float as prometheus_client writes it ("1.0", "0.25", "+Inf", "1.5e+07"). */
void sim_metrics_format_value(double d, char *out, size_t n);

#endif
