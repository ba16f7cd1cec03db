/* engine.c: the simulated engine: a FIFO prefill queue on a virtual timeline,
 * batch-dependent decode, a real prefix cache and preemption. */
#include "sim/sim.h"

#include "obs/ir_obs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { SEQ_WAITING, SEQ_PREFILL, SEQ_DECODE } seq_state;

struct sim_seq {
    sim_engine *eng;
    const sim_seq_cbs *cbs;
    void *ud;
    seq_state state;
    /* tokens = prompt followed by the output generated so far */
    uint32_t *tokens;
    size_t ntok, prompt_len;
    uint32_t *plan; /* the output this sequence will produce */
    size_t plan_len, generated;
    bool by_length; /* finishes on max_tokens rather than a stop */
    /* KV blocks held, in order; the first nhashed are registered */
    int32_t *blocks;
    size_t nblocks, blocks_cap, nhashed;
    ir_block_chain chain; /* after the last registered block */
    ir_hash128 root;      /* the engine's, or salted by the request's cache_salt */
    char *salt;           /* the request's cache_salt (NULL: none), for KV events */
    size_t cached_tokens, cpu_tokens;
    bool scheduled_once;
    bool abort_pending;
    uint64_t t_arrive, t_sched, t_prefill_start, t_first, t_last, next_t;
    int32_t heap_idx;
    struct sim_seq *prev, *next; /* waiting queue or running list */
};

typedef struct seq_list {
    sim_seq *head, *tail;
    uint32_t n;
} seq_list;

struct sim_engine {
    uv_loop_t *loop;
    uv_timer_t timer;
    sim_cfg cfg;
    sim_kv kv;
    ir_hash128 root;
    seq_list waiting, running;
    sim_seq **heap;
    size_t heap_n, heap_cap;
    uint64_t prefill_busy_until;
    uint64_t armed_for;
    bool in_tick;
    sim_seq *active; /* the sequence whose callback is running */
    sim_stats stats;
    /* pre-tokenized words for generated text: [0] without, [1] with a leading space */
    irt_ids words[64][2];
    sim_kvpub *pub; /* KV events, or NULL */
};

static const double ttft_b[] = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double itl_b[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                               0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
static const double req_b[] = {0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                               5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                               60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
static const double tok_b[] = {1,    2,    5,    10,    20,    50,    100,    200,   500,
                               1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000};

/* SGLang's default buckets. */
static const double sg_ttft_b[] = {0.1, 0.2, 0.4, 0.6, 0.8, 1,  2,   4,   6,
                                   8,   10,  20,  40,  60,  80, 100, 200, 400};
static const double sg_itl_b[] = {0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025,
                                  0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400,
                                  0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000};
static const double sg_e2e_b[] = {0.1, 0.2, 0.4, 0.6, 0.8, 1,   2,   4,   6,    8,    10,
                                  20,  40,  60,  80,  100, 200, 400, 600, 1200, 1800, 2400};

static const char *const words[64] = {
    "the",    "model",   "returns", "tokens",  "quickly", "when",    "cache",   "holds",
    "prefix", "blocks",  "router",  "sends",   "every",   "request", "to",      "replica",
    "that",   "already", "has",     "most",    "of",      "its",     "prompt",  "in",
    "memory", "so",      "first",   "token",   "latency", "drops",   "and",     "fewer",
    "gpus",   "serve",   "same",    "traffic", "a",       "long",    "system",  "context",
    "is",     "shared",  "by",      "users",   "who",     "ask",     "short",   "questions",
    "decode", "runs",    "one",     "step",    "at",      "time",    "while",   "prefill",
    "reads",  "whole",   "input",   "before",  "any",     "output",  "appears", "here"};

/* ---- configuration and cost model ---------------------------------------------------- */

void sim_cfg_defaults(sim_cfg *c) {
    memset(c, 0, sizeof *c);
    strcpy(c->host, "127.0.0.1");
    c->port = 8000;
    c->block_size = 16;
    c->num_gpu_blocks = 4096;
    c->cpu_transfer_token_us = 5;
    c->max_num_seqs = 256;
    c->max_model_len = 32768;
    c->prefill_token_us = 100;
    c->prefill_pair_ns = 3.3;
    c->prefill_fixed_ms = 5;
    c->decode_token_ms = 20;
    c->decode_batch_us = 100;
    c->engine = SIM_ENGINE_VLLM;
    c->max_body_bytes = 32u << 20;
    c->max_write_queue = 16u << 20;
    c->data_parallel_size = 1;
}

uint64_t sim_prefill_ns(const sim_cfg *c, uint64_t u, uint64_t cached) {
    if (c->zero_latency) return 0;
    double ns = c->prefill_token_us * 1e3 * (double)u +
                c->prefill_pair_ns * (double)u * ((double)cached + (double)u / 2.0) +
                c->prefill_fixed_ms * 1e6;
    return ns <= 0 ? 0 : (uint64_t)llround(ns);
}

/* Loading `tokens` tokens from the CPU tier back into GPU blocks. */
static uint64_t cpu_load_ns(const sim_cfg *c, uint64_t tokens) {
    if (c->zero_latency) return 0;
    double ns = c->cpu_transfer_token_us * 1e3 * (double)tokens;
    return ns <= 0 ? 0 : (uint64_t)llround(ns);
}

uint64_t sim_decode_ns(const sim_cfg *c, uint32_t running) {
    if (c->zero_latency) return 0;
    double extra = running > 1 ? (double)(running - 1) * c->decode_batch_us * 1e3 : 0;
    double ns = c->decode_token_ms * 1e6 + extra;
    return ns <= 0 ? 0 : (uint64_t)llround(ns);
}

/* ---- histograms ------------------------------------------------------------------------ */

void sim_hist_init(sim_hist *h, const double *bounds, size_t nb) {
    memset(h, 0, sizeof *h);
    h->bounds = bounds;
    h->nb = nb > IRO_MAX_BUCKETS ? IRO_MAX_BUCKETS : nb;
}

void sim_hist_observe(sim_hist *h, double v) {
    iro_observe(h->s, v);
}

/* ---- lists and the timer heap --------------------------------------------------------- */

static void list_push_back(seq_list *l, sim_seq *s) {
    s->prev = l->tail;
    s->next = NULL;
    if (l->tail)
        l->tail->next = s;
    else
        l->head = s;
    l->tail = s;
    l->n++;
}

static void list_push_front(seq_list *l, sim_seq *s) {
    s->prev = NULL;
    s->next = l->head;
    if (l->head)
        l->head->prev = s;
    else
        l->tail = s;
    l->head = s;
    l->n++;
}

static void list_remove(seq_list *l, sim_seq *s) {
    if (s->prev)
        s->prev->next = s->next;
    else
        l->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        l->tail = s->prev;
    s->prev = s->next = NULL;
    l->n--;
}

static void heap_swap(sim_engine *e, size_t a, size_t b) {
    sim_seq *t = e->heap[a];
    e->heap[a] = e->heap[b];
    e->heap[b] = t;
    e->heap[a]->heap_idx = (int32_t)a;
    e->heap[b]->heap_idx = (int32_t)b;
}

static bool heap_less(sim_engine *e, size_t a, size_t b) {
    return e->heap[a]->next_t < e->heap[b]->next_t;
}

static void heap_up(sim_engine *e, size_t i) {
    while (i > 0 && heap_less(e, i, (i - 1) / 2)) {
        heap_swap(e, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(sim_engine *e, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < e->heap_n && heap_less(e, l, m)) m = l;
        if (r < e->heap_n && heap_less(e, r, m)) m = r;
        if (m == i) return;
        heap_swap(e, i, m);
        i = m;
    }
}

static int heap_push(sim_engine *e, sim_seq *s) {
    if (e->heap_n == e->heap_cap) {
        size_t nc = e->heap_cap ? e->heap_cap * 2 : 64;
        sim_seq **p = realloc(e->heap, nc * sizeof *p);
        if (!p) return -1;
        e->heap = p;
        e->heap_cap = nc;
    }
    s->heap_idx = (int32_t)e->heap_n;
    e->heap[e->heap_n++] = s;
    heap_up(e, e->heap_n - 1);
    return 0;
}

static void heap_remove(sim_engine *e, sim_seq *s) {
    if (s->heap_idx < 0) return;
    size_t i = (size_t)s->heap_idx;
    e->heap_n--;
    if (i != e->heap_n) {
        heap_swap(e, i, e->heap_n);
        heap_down(e, i);
        heap_up(e, i);
    }
    s->heap_idx = -1;
}

static void tick(uv_timer_t *t);

static void arm_timer(sim_engine *e) {
    if (e->in_tick) return; /* tick re-arms once it is done */
    if (e->heap_n == 0) {
        uv_timer_stop(&e->timer);
        e->armed_for = 0;
        return;
    }
    uint64_t due = e->heap[0]->next_t;
    if (e->armed_for && e->armed_for <= due && uv_is_active((uv_handle_t *)&e->timer)) return;
    uint64_t now = ir_now_ns();
    uint64_t ms = due > now ? (due - now + 999999) / 1000000 : 0;
    e->armed_for = due;
    uv_timer_start(&e->timer, tick, ms, 0);
}

/* ---- sequences --------------------------------------------------------------------------- */

static int push_block(sim_seq *s, int32_t b) {
    if (s->nblocks == s->blocks_cap) {
        size_t nc = s->blocks_cap ? s->blocks_cap * 2 : 8;
        int32_t *p = realloc(s->blocks, nc * sizeof *p);
        if (!p) return -1;
        s->blocks = p;
        s->blocks_cap = nc;
    }
    s->blocks[s->nblocks++] = b;
    return 0;
}

/* Frees a sequence's blocks last-first, so the tail of its prefix is evicted first. */
static void release_blocks(sim_engine *e, sim_seq *s) {
    for (size_t i = s->nblocks; i-- > 0;) sim_kv_release(&e->kv, s->blocks[i]);
    s->nblocks = 0;
    s->nhashed = 0;
    s->chain = ir_block_chain_at(s->root, NULL, 0);
}

/* Registers the hashes of blocks that became full. */
static void hash_full_blocks(sim_engine *e, sim_seq *s) {
    size_t bs = e->cfg.block_size;
    while (s->nhashed < s->nblocks && (s->nhashed + 1) * bs <= s->ntok) {
        ir_hash128 parent = s->chain.one;
        const uint32_t *ids = s->tokens + s->nhashed * bs;
        ir_hash128 h = ir_block_hash_next(&s->chain, ids, bs);
        if (sim_kv_set_hash(&e->kv, s->blocks[s->nhashed], h))
            sim_kvpub_stored(e->pub, s->nhashed ? &parent : NULL, h, ids, s->salt);
        s->nhashed++;
    }
}

static void free_seq(sim_seq *s) {
    free(s->salt);
    free(s->tokens);
    free(s->plan);
    free(s->blocks);
    free(s);
}

/* Builds the output this sequence will produce: words from a fixed list,
 * chosen by a generator seeded from the prompt, cut at plan_len tokens. */
static int make_plan(sim_engine *e, sim_seq *s, uint64_t seed) {
    s->plan = malloc((s->plan_len ? s->plan_len : 1) * sizeof *s->plan);
    if (!s->plan) return -1;
    ir_rng r;
    ir_rng_seed(&r, seed);
    size_t n = 0;
    bool first = true;
    while (n < s->plan_len) {
        const irt_ids *w = &e->words[ir_rng_below(&r, 64)][first ? 0 : 1];
        first = false;
        for (size_t i = 0; i < w->len && n < s->plan_len; i++) s->plan[n++] = w->ids[i];
    }
    return 0;
}

/* Room for the next token: a new block when the last one is full. On a full
 * cache, the most recently scheduled running sequence is preempted (possibly
 * this one). Returns false when `s` itself was preempted. */
static void preempt(sim_engine *e, sim_seq *v);

static bool ensure_room(sim_engine *e, sim_seq *s) {
    size_t bs = e->cfg.block_size;
    while (s->ntok + 1 > s->nblocks * bs) {
        int32_t b = sim_kv_alloc(&e->kv);
        if (b >= 0) {
            if (push_block(s, b)) {
                sim_kv_release(&e->kv, b);
                return false;
            }
            continue;
        }
        sim_seq *victim = e->running.tail;
        if (!victim) return false;
        preempt(e, victim);
        if (victim == s) return false;
    }
    return true;
}

static void finish(sim_engine *e, sim_seq *s, sim_finish why);
static void schedule(sim_engine *e);

/* ---- scheduling -------------------------------------------------------------------------- */

/* What a prompt finds cached: `gpu` leading blocks on the GPU, then `cpu` more in
 * the CPU tier, and the tokens that the engine reports as cached. */
typedef struct prefix_hit {
    uint32_t gpu, cpu;
    size_t cached, cpu_tokens;
} prefix_hit;

/* As vLLM: the GPU lookup stops a block short of a whole prompt (its last token
 * is always computed); the CPU tier (the OffloadingConnector) is asked from
 * there over every full block, and a load that reaches the prompt's end
 * recomputes its last token, so a whole prompt reports ntok - 1 cached. */
static prefix_hit find_prefix(const sim_engine *e, const ir_hash128 *hs, size_t full, size_t ntok) {
    size_t bs = e->cfg.block_size;
    prefix_hit h = {0};
    h.gpu = sim_kv_match(&e->kv, hs, (uint32_t)full);
    size_t max_hit = ntok ? (ntok - 1) / bs : 0;
    if (h.gpu > max_hit) h.gpu = (uint32_t)max_hit;
    if (e->kv.nc) h.cpu = sim_kv_match_cpu(&e->kv, hs, h.gpu, (uint32_t)full);
    h.cached = (size_t)(h.gpu + h.cpu) * bs;
    if (h.cached >= ntok) h.cached = ntok ? ntok - 1 : 0;
    h.cpu_tokens = h.cached - (size_t)h.gpu * bs;
    return h;
}

/* Counts a prompt's first scheduling: vLLM's prefix_cache_* count GPU hits, its
 * external_prefix_cache_* what the connector was asked for and found. */
static void count_first_schedule(sim_engine *e, sim_seq *s, const prefix_hit *h, uint64_t now) {
    size_t gpu_tokens = (size_t)h->gpu * e->cfg.block_size;
    s->scheduled_once = true;
    s->cached_tokens = h->cached;
    s->cpu_tokens = h->cpu_tokens;
    s->t_sched = now;
    e->stats.prefix_queries += s->ntok;
    e->stats.prefix_hits += gpu_tokens;
    if (e->kv.nc && s->ntok > gpu_tokens) {
        e->stats.cpu_queries += s->ntok - gpu_tokens;
        e->stats.cpu_hits += (size_t)h->cpu * e->cfg.block_size;
    }
    e->stats.prompt_tokens += s->prompt_len;
    sim_hist_observe(&e->stats.queue, (double)(now - s->t_arrive) / 1e9);
}

/* Tries to start the prefill of the waiting queue's head. */
static bool admit(sim_engine *e, sim_seq *s, uint64_t now) {
    size_t bs = e->cfg.block_size;
    size_t full = s->ntok / bs;
    ir_hash128 *hs = full ? malloc(full * sizeof *hs) : NULL;
    if (full && !hs) return false;
    ir_block_hash_chain(s->root, s->tokens, s->ntok, bs, hs, full);
    prefix_hit h = find_prefix(e, hs, full, s->ntok);
    size_t need = (s->ntok + bs - 1) / bs;
    if (need == 0) need = 1;
    size_t fresh = need - h.gpu; /* blocks loaded from the CPU tier are fresh GPU blocks */
    /* Cached blocks that are free now stop being free once acquired. */
    uint32_t hit_free = 0;
    for (uint32_t i = 0; i < h.gpu; i++)
        if (e->kv.b[sim_kv_lookup(&e->kv, hs[i])].in_free) hit_free++;
    if (e->kv.nfree < hit_free + fresh) {
        free(hs);
        return false;
    }
    for (uint32_t i = 0; i < h.gpu; i++) {
        int32_t b = sim_kv_lookup(&e->kv, hs[i]);
        sim_kv_acquire(&e->kv, b);
        push_block(s, b);
    }
    s->nhashed = h.gpu;
    s->chain = ir_block_chain_at(s->root, hs, h.gpu);
    /* The CPU copies being loaded are touched and pinned, so that the GPU blocks
     * evicted to make room cannot push them out of the tier. */
    if (e->kv.nc) {
        sim_kv_cpu_touch(&e->kv, hs, (uint32_t)full);
        sim_kv_cpu_pin(&e->kv, hs + h.gpu, h.cpu, true);
    }
    for (size_t i = 0; i < fresh; i++) push_block(s, sim_kv_alloc(&e->kv));
    if (e->kv.nc) sim_kv_cpu_pin(&e->kv, hs + h.gpu, h.cpu, false);
    free(hs);
    /* The prompt's full blocks are cached as soon as they are scheduled: any
     * later request's prefill runs after this one on the FIFO queue. Loaded
     * blocks are stored on the GPU again here. */
    hash_full_blocks(e, s);

    size_t u = s->ntok - h.cached;
    if (!s->scheduled_once) count_first_schedule(e, s, &h, now);
    uint64_t start = e->prefill_busy_until > now ? e->prefill_busy_until : now;
    /* The load, then the prefill of the rest attending to everything cached. */
    uint64_t end =
        start + cpu_load_ns(&e->cfg, h.cpu_tokens) + sim_prefill_ns(&e->cfg, u, h.cached);
    e->prefill_busy_until = end;
    s->t_prefill_start = start;
    s->state = SEQ_PREFILL;
    s->next_t = end;
    list_push_back(&e->running, s);
    heap_push(e, s);
    return true;
}

static void schedule(sim_engine *e) {
    uint64_t now = ir_now_ns();
    while (e->waiting.head && e->running.n < e->cfg.max_num_seqs) {
        sim_seq *s = e->waiting.head;
        list_remove(&e->waiting, s);
        if (!admit(e, s, now)) {
            list_push_front(&e->waiting, s);
            break; /* FIFO: the head waits for room */
        }
    }
    arm_timer(e);
}

static void preempt(sim_engine *e, sim_seq *v) {
    heap_remove(e, v);
    list_remove(&e->running, v);
    release_blocks(e, v);
    v->state = SEQ_WAITING;
    list_push_front(&e->waiting, v);
    e->stats.preemptions++;
}

static void finish(sim_engine *e, sim_seq *s, sim_finish why) {
    heap_remove(e, s);
    if (s->state == SEQ_WAITING)
        list_remove(&e->waiting, s);
    else
        list_remove(&e->running, s);
    release_blocks(e, s);
    e->stats.finished[why]++;
    if (why != SIM_FINISH_ABORT) {
        uint64_t now = s->t_last;
        sim_hist_observe(&e->stats.e2e, (double)(now - s->t_arrive) / 1e9);
        sim_hist_observe(&e->stats.inference, (double)(now - s->t_prefill_start) / 1e9);
        sim_hist_observe(&e->stats.decode, (double)(now - s->t_first) / 1e9);
        sim_hist_observe(&e->stats.prompt_len, (double)s->prompt_len);
        sim_hist_observe(&e->stats.gen_len, (double)s->generated);
    }
}

/* Emits the tokens that are due for one sequence. Returns true when it ended. */
static bool advance(sim_engine *e, sim_seq *s, uint64_t now) {
    size_t from = s->generated;
    if (s->state == SEQ_PREFILL) {
        uint64_t t = s->next_t;
        if (s->generated == 0) {
            sim_hist_observe(&e->stats.ttft, (double)(t - s->t_arrive) / 1e9);
            sim_hist_observe(&e->stats.prefill, (double)(t - s->t_prefill_start) / 1e9);
            s->t_first = t;
        }
        s->state = SEQ_DECODE;
        if (s->generated == 0) {
            /* Prefill yields the first output token. */
            if (!ensure_room(e, s)) return false;
            s->tokens[s->ntok++] = s->plan[0];
            s->generated = 1;
            s->t_last = t;
            e->stats.generation_tokens++;
            hash_full_blocks(e, s);
        } else {
            s->t_last = t; /* resumed after a preemption: recomputed, continue */
        }
        s->next_t = t + sim_decode_ns(&e->cfg, e->running.n);
    }
    while (s->generated < s->plan_len && s->next_t <= now) {
        if (!ensure_room(e, s)) break; /* preempted: it waits for a new prefill */
        uint64_t t = s->next_t;
        s->tokens[s->ntok++] = s->plan[s->generated++];
        sim_hist_observe(&e->stats.itl, (double)(t - s->t_last) / 1e9);
        s->t_last = t;
        e->stats.generation_tokens++;
        hash_full_blocks(e, s);
        s->next_t = t + sim_decode_ns(&e->cfg, e->running.n);
    }
    e->active = s;
    if (s->generated > from) s->cbs->on_tokens(s->ud, s, from, s->generated);
    if (s->abort_pending) {
        e->active = NULL;
        finish(e, s, SIM_FINISH_ABORT);
        free_seq(s);
        return true;
    }
    if (s->generated >= s->plan_len) {
        sim_finish why = s->by_length ? SIM_FINISH_LENGTH : SIM_FINISH_STOP;
        finish(e, s, why);
        s->cbs->on_finish(s->ud, s, why);
        e->active = NULL;
        free_seq(s);
        return true;
    }
    e->active = NULL;
    return false;
}

static void tick(uv_timer_t *t) {
    sim_engine *e = t->data;
    e->armed_for = 0;
    e->in_tick = true;
    uint64_t now = ir_now_ns();
    /* Take every sequence that is due before emitting, so callbacks see a
     * consistent heap. */
    while (e->heap_n && e->heap[0]->next_t <= now) {
        sim_seq *s = e->heap[0];
        heap_remove(e, s);
        bool ended = advance(e, s, now);
        /* A preempted sequence waits in the queue, off the heap. */
        if (!ended && s->state != SEQ_WAITING && s->heap_idx < 0) heap_push(e, s);
    }
    e->in_tick = false;
    schedule(e);
}

/* ---- public API ---------------------------------------------------------------------------- */

sim_engine *sim_engine_new(uv_loop_t *loop, const sim_cfg *cfg) {
    return sim_engine_new_rank(loop, cfg, NULL);
}

sim_engine *sim_engine_new_rank(uv_loop_t *loop, const sim_cfg *cfg, sim_engine *rank0) {
    sim_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->loop = loop;
    e->cfg = *cfg;
    if (e->cfg.block_size == 0) e->cfg.block_size = 16;
    if (e->cfg.max_num_seqs == 0) e->cfg.max_num_seqs = 1;
    if (sim_kv_init(&e->kv, cfg->num_gpu_blocks ? cfg->num_gpu_blocks : 1)) {
        free(e);
        return NULL;
    }
    if (sim_kv_init_cpu(&e->kv, cfg->num_cpu_blocks)) {
        sim_kv_free(&e->kv);
        free(e);
        return NULL;
    }
    e->root = ir_block_hash_root(cfg->nmodel_names ? cfg->model_names[0] : "sim", NULL, NULL);
    for (int i = 0; i < 64; i++) {
        char sp[64];
        snprintf(sp, sizeof sp, " %s", words[i]);
        irt_ids_init(&e->words[i][0]);
        irt_ids_init(&e->words[i][1]);
        irt_sim_encode(words[i], strlen(words[i]), &e->words[i][0]);
        irt_sim_encode(sp, strlen(sp), &e->words[i][1]);
    }
    sim_stats *st = &e->stats;
    sim_hist_init(&st->ttft, ttft_b, IR_ARRAY_LEN(ttft_b));
    sim_hist_init(&st->itl, itl_b, IR_ARRAY_LEN(itl_b));
    sim_hist_init(&st->e2e, req_b, IR_ARRAY_LEN(req_b));
    sim_hist_init(&st->queue, req_b, IR_ARRAY_LEN(req_b));
    sim_hist_init(&st->prefill, req_b, IR_ARRAY_LEN(req_b));
    sim_hist_init(&st->decode, req_b, IR_ARRAY_LEN(req_b));
    sim_hist_init(&st->inference, req_b, IR_ARRAY_LEN(req_b));
    if (cfg->engine == SIM_ENGINE_SGLANG) {
        sim_hist_init(&st->ttft, sg_ttft_b, IR_ARRAY_LEN(sg_ttft_b));
        sim_hist_init(&st->itl, sg_itl_b, IR_ARRAY_LEN(sg_itl_b));
        sim_hist_init(&st->e2e, sg_e2e_b, IR_ARRAY_LEN(sg_e2e_b));
    }
    sim_hist_init(&st->prompt_len, tok_b, IR_ARRAY_LEN(tok_b));
    sim_hist_init(&st->gen_len, tok_b, IR_ARRAY_LEN(tok_b));
    st->created = ir_wall_time();
    if (sim_metrics_init(st, &e->cfg, rank0 ? sim_metrics_registry(&rank0->stats) : NULL)) {
        sim_kv_free(&e->kv);
        for (int i = 0; i < 64; i++) {
            irt_ids_free(&e->words[i][0]);
            irt_ids_free(&e->words[i][1]);
        }
        free(e);
        return NULL;
    }
    uv_timer_init(loop, &e->timer);
    e->timer.data = e;
    return e;
}

static void on_timer_closed(uv_handle_t *h) {
    free(h->data);
}

void sim_engine_free(sim_engine *e) {
    if (!e) return;
    while (e->running.head) {
        sim_seq *s = e->running.head;
        list_remove(&e->running, s);
        free_seq(s);
    }
    while (e->waiting.head) {
        sim_seq *s = e->waiting.head;
        list_remove(&e->waiting, s);
        free_seq(s);
    }
    free(e->heap);
    sim_metrics_free(&e->stats);
    sim_kv_free(&e->kv);
    for (int i = 0; i < 64; i++) {
        irt_ids_free(&e->words[i][0]);
        irt_ids_free(&e->words[i][1]);
    }
    uv_timer_stop(&e->timer);
    uv_close((uv_handle_t *)&e->timer, on_timer_closed);
}

sim_seq *sim_engine_submit(sim_engine *e, const sim_submit *req) {
    sim_seq *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->eng = e;
    s->cbs = req->cbs;
    s->ud = req->ud;
    s->heap_idx = -1;
    s->prompt_len = req->prompt_len;
    s->by_length = req->has_max_tokens;
    /* Without max_tokens the "model" stops by itself after 16 to 128 tokens. */
    uint64_t seed = req->seed ^ 0x51ED5EEDull;
    for (size_t i = 0; i < req->prompt_len; i++)
        seed = (seed ^ (uint64_t)req->prompt[i]) * 0x100000001B3ull;
    s->plan_len = req->has_max_tokens ? req->max_tokens : 16 + seed % 113;
    if (s->plan_len == 0) s->plan_len = 1; /* vLLM always yields at least one token */
    s->tokens = malloc((req->prompt_len + s->plan_len + 1) * sizeof *s->tokens);
    /* A salt keeps the request's blocks apart from every other salt's, as vLLM's
     * extra keys do: its chain starts at a root of its own. */
    s->root = e->root;
    if (req->cache_salt) {
        s->salt = strdup(req->cache_salt);
        s->root = ir_block_hash_root(e->cfg.nmodel_names ? e->cfg.model_names[0] : "sim", NULL,
                                     req->cache_salt);
    }
    if (!s->tokens || (req->cache_salt && !s->salt) || make_plan(e, s, seed)) {
        free_seq(s);
        return NULL;
    }
    if (req->prompt_len) memcpy(s->tokens, req->prompt, req->prompt_len * sizeof *s->tokens);
    s->ntok = req->prompt_len;
    s->chain = ir_block_chain_at(s->root, NULL, 0);
    s->t_arrive = ir_now_ns();
    s->state = SEQ_WAITING;
    e->stats.requests_received++;
    list_push_back(&e->waiting, s);
    if (!e->in_tick) {
        /* Admission happens on the loop, never inside submit's caller. */
        schedule(e);
    }
    return s;
}

void sim_engine_abort(sim_engine *e, sim_seq *s) {
    if (s == e->active) {
        /* Called from inside this sequence's callback: finish once it returns. */
        s->abort_pending = true;
        return;
    }
    finish(e, s, SIM_FINISH_ABORT);
    free_seq(s);
    if (!e->in_tick) schedule(e);
}

uint32_t sim_engine_reset_prefix_cache(sim_engine *e) {
    /* Every cached block free: one AllBlocksCleared, as vLLM publishes; else the
     * blocks in use stay cached and each freed hash is a BlockRemoved. The CPU
     * tier is emptied too (each copy a BlockRemoved with medium CPU, or within
     * the AllBlocksCleared). */
    uint32_t free_hashed = 0;
    for (int32_t i = e->kv.free_head; i >= 0; i = e->kv.b[i].next) free_hashed += e->kv.b[i].hashed;
    bool all = free_hashed == e->kv.nhashed;
    if (all) e->kv.on_removed = NULL, e->kv.on_cpu = NULL;
    uint32_t n = sim_kv_reset(&e->kv);
    if (all && e->pub) {
        sim_kvpub_cleared(e->pub);
        sim_engine_set_publisher(e, e->pub);
    }
    return n;
}

static void on_removed(void *ud, ir_hash128 h) {
    sim_kvpub_removed(ud, h);
}

static void on_cpu(void *ud, ir_hash128 h, bool stored) {
    if (stored)
        sim_kvpub_cpu_stored(ud, h);
    else
        sim_kvpub_cpu_removed(ud, h);
}

void sim_engine_set_publisher(sim_engine *e, sim_kvpub *p) {
    e->pub = p;
    e->kv.on_removed = p ? on_removed : NULL;
    e->kv.removed_ud = p;
    e->kv.on_cpu = p ? on_cpu : NULL;
    e->kv.cpu_ud = p;
}

sim_kvpub *sim_engine_publisher(const sim_engine *e) {
    return e->pub;
}

const sim_stats *sim_engine_stats(const sim_engine *e) {
    return &e->stats;
}
uint32_t sim_engine_running(const sim_engine *e) {
    return e->running.n;
}
uint32_t sim_engine_waiting(const sim_engine *e) {
    return e->waiting.n;
}
double sim_engine_kv_usage(const sim_engine *e) {
    return 1.0 - (double)e->kv.nfree / (double)e->kv.n;
}
const sim_kv *sim_engine_kv(const sim_engine *e) {
    return &e->kv;
}
const sim_cfg *sim_engine_cfg(const sim_engine *e) {
    return &e->cfg;
}

size_t sim_seq_prompt_len(const sim_seq *s) {
    return s->prompt_len;
}
size_t sim_seq_cached_tokens(const sim_seq *s) {
    return s->cached_tokens;
}
size_t sim_seq_cpu_tokens(const sim_seq *s) {
    return s->cpu_tokens;
}
size_t sim_seq_generated(const sim_seq *s) {
    return s->generated;
}
size_t sim_seq_target(const sim_seq *s) {
    return s->plan_len;
}
const uint32_t *sim_seq_output(const sim_seq *s) {
    return s->tokens + s->prompt_len;
}
uint64_t sim_seq_arrival_ns(const sim_seq *s) {
    return s->t_arrive;
}
