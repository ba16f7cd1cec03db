/* cost_model.c: the lowest estimated time to first token, behind four guards.
 *
 * The estimate, per candidate i (irp_cost_ttft), in seconds:
 *
 *   TTFT_i = Q_i + P(u_i, c_i),   P(u, c) = a*u + b*u*(c + u/2) + d
 *
 * c_i = predicted_cached_tokens (the KV index), u_i = prompt_tokens - c_i; a,
 * b, d = prefill_a, prefill_b, prefill_d (the simulator's model shape, or what
 * `inferrail-bench calibrate` fits on a real engine). Q_i, the queue wait, is
 * the prefill still ahead of this request on the replica:
 *   - the gateway's own: its p = pending requests (sent, no first body byte yet)
 *     carry U uncached tokens (pending_uncached_tokens, else
 *     pending_prompt_tokens) and W = sum of u*(2c + u) over them (pending_work),
 *     so their prefills sum to Q_gw = a*U + b*W/2 + d*p. Without W (0: unknown)
 *     they are taken as p prompts of U/p tokens with nothing cached, b*U^2/(2p)
 *     for the middle term, which undercounts prompts of mixed lengths (the sum of
 *     squares is smallest when they are equal). The oldest of them has been in
 *     its prefill for pending_head_s; up to one mean prefill (Q_gw/p) of that is
 *     done and is taken off;
 *   - the engine's, when engine_fresh: engine_waiting requests, each taken to
 *     cost a prefill of the gateway's mean pending prompt (U/p), or of this
 *     prompt when nothing is pending: Q_eng = waiting * P(avg, 0);
 *   - Q_i = max(Q_gw, Q_eng): the engine's queue includes the gateway's own
 *     requests, so the two are not added; the engine's number also sees other
 *     gateways' traffic, the gateway's own is never stale.
 * The estimate stands for a FIFO prefill queue (vLLM's scheduler, the
 * simulator); decode is not counted (tpot is kept for calibration only).
 *
 * The guards, in order:
 *   1. Bounded load: a candidate is eligible only if in_flight + 1 <=
 *      max(ceil(c * (total_in_flight + 1) / n), cost_load_floor), c =
 *      cost_load_factor (2.0; looser than prefix_hash's 1.25, since the queue
 *      term below already moves work off a replica whose prefill queue grows):
 *      no replica is taken above c times the mean in flight, once it has
 *      cost_load_floor (8) in flight. Below the floor, in flight that decodes
 *      costs a new prompt little and the estimate decides; with 1 or 2 in flight
 *      per replica the bound alone sent warm prompts to cold replicas. The least
 *      loaded candidate always qualifies.
 *   2. KV pressure: a candidate whose engine reports (engine_fresh) KV usage
 *      above kv_pressure is dropped while an eligible one without pressure
 *      exists (a full cache evicts what the index predicts, and preempts).
 *   3. Session affinity (session_affinity, off by default): a request with a
 *      session key goes to the replica its session was last sent to, if that
 *      replica is still eligible. Sessions are remembered in a direct-mapped,
 *      lock-free table of 4096 slots (a collision forgets the older session).
 *   4. Hot-prefix replication. The prefix (the key of prefix_hash: the hash of
 *      block min(nblocks, prefix_blocks) - 1, or the text's first bytes) has a
 *      decaying arrival rate r (per second, time constant hot_window_s),
 *      counted in the `assigned` hook so that /admin/explain never counts. One
 *      request of it costs w = P(u*, c*) on a warm replica (c* the largest
 *      prediction among the candidates), so the prefix asks r * w of one
 *      replica's prefill time per second. When that exceeds hot_util, the
 *      prefix is spread over k = ceil(r * w / hot_util) replicas (at most
 *      hot_replicas, 0 for all, and the eligible count): the k eligible
 *      candidates that hold the most of it, ties by a rendezvous hash of
 *      (prefix, replica) so the set is stable. Within the set every member
 *      is costed as if warm (Q_i + w), so the least queued one wins, and a
 *      cold member pays one full prefill, once, before it is warm too.
 *      Without replication the queue term alone spreads a hot prefix only
 *      after its warm replica has queued about a cold prefill's worth.
 *      The rates live in 64 stripes of 16 entries, each stripe behind its own
 *      mutex (held for a few loads and stores); a full stripe replaces its
 *      slowest entry. The k members are picked by quickselect, O(n).
 * Then the eligible (or hot-set) candidate with the lowest score wins (score_of:
 * the estimate with the prefill weighted 1 + work_weight); scores closer than
 * tie_tolerance (0.05) times the prompt's cold prefill count as equal, equal
 * scores go to the fewest in flight, then to the replica that has written the
 * fewest uncached tokens into its cache (counted in the `assigned` hook, reset
 * when the replica joins or leaves; for a prefix never seen, the least written
 * comes first), and remaining ties at random with req->rng.
 *
 * A fleet of more than IRP_MAX_REPLICAS candidates (above the gateway's cap)
 * goes to the least loaded candidate.
 *
 * Knobs: prefill_a, prefill_b, prefill_d, cost_load_factor, cost_load_floor,
 * work_weight, tie_tolerance, kv_pressure,
 * session_affinity, prefix_blocks, hot_replicas, hot_util, hot_window_s.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "policy/ir_policy.h"
#include "policy/policy_util.h"

#define CM_STRIPES       64u
#define CM_STRIPE_SLOTS  16u
#define CM_SESSION_SLOTS 4096u

/* Depths (in blocks) at which a prefix's arrivals are compared with the one before:
 * from prefix_blocks, each about 19% deeper than the last (CM_DEPTHS of them reach
 * 577 blocks from 4). */
#define CM_DEPTHS 32u

typedef struct cm_rate {
    uint64_t key;
    double rate;   /* arrivals per second, as of t_ns */
    uint64_t t_ns; /* 0: empty */
    /* The last arrival: its block hashes at the depths, its length and last block. */
    uint64_t at[CM_DEPTHS];
    uint64_t last;
    uint32_t nblocks;
    /* How many leading blocks the prefix's arrivals share, a moving average of each
     * arrival against the previous one; < 0: not measured yet. */
    double shared;
    uint32_t home; /* the replica its last arrival was sent to, + 1; 0: none */
} cm_rate;

typedef struct cm_stripe {
    pthread_mutex_t mu;
    cm_rate slot[CM_STRIPE_SLOTS];
} cm_stripe;

typedef struct cm_state {
    irp_config cfg;
    uint32_t depth[CM_DEPTHS]; /* the comparison depths, in blocks, increasing */
    cm_stripe stripes[CM_STRIPES];
    /* session slot: the session key's high 40 bits << 24 | (replica + 1); 0 empty */
    _Atomic uint64_t sessions[CM_SESSION_SLOTS];
    /* Per replica slot: the uncached tokens of every request assigned to it, what
     * it had to write into its KV cache (and so evict there). */
    _Atomic uint64_t written[IRP_MAX_REPLICAS];
} cm_state;

/* ---- the estimate ------------------------------------------------------ */

static double prefill(const irp_config *cfg, double u, double c) {
    return cfg->prefill_a * u + cfg->prefill_b * u * (c + u / 2.0) + cfg->prefill_d;
}

/* The prefill still ahead on the replica by the gateway's own counters. */
static double gateway_queue(const irp_config *cfg, const irp_candidate *c, double U) {
    double p = c->pending;
    if (p <= 0) return 0.0;
    double attn = c->pending_work ? (double)c->pending_work / 2.0 : U * U / (2.0 * p);
    double q = cfg->prefill_a * U + cfg->prefill_b * attn + cfg->prefill_d * p;
    double done = c->pending_head_s < q / p ? c->pending_head_s : q / p;
    return done > 0 ? q - done : q;
}

static double queue_wait(const irp_config *cfg, const irp_request *req, const irp_candidate *c) {
    double p = c->pending;
    double U = (double)(c->pending_uncached_tokens ? c->pending_uncached_tokens
                                                   : c->pending_prompt_tokens);
    double q_gw = gateway_queue(cfg, c, U);
    double q_eng = 0.0;
    if (c->engine_fresh && c->engine_waiting) {
        double avg = p > 0 ? U / p : (double)req->prompt_tokens;
        q_eng = (double)c->engine_waiting * prefill(cfg, avg, 0.0);
    }
    return q_gw > q_eng ? q_gw : q_eng;
}

static double cached_of(const irp_request *req, const irp_candidate *c) {
    double pt = (double)req->prompt_tokens, cached = (double)c->predicted_cached_tokens;
    return cached < pt ? cached : pt;
}

/* The prompt's own time with `cached` tokens hit on the GPU. A CPU-tier hit is
 * priced between a GPU hit and a recompute: its tokens are loaded at cpu_token_s
 * each, and then count as context for the tokens still computed. */
static double compute(const irp_config *cfg, const irp_request *req, const irp_candidate *c,
                      double cached) {
    double rest = (double)req->prompt_tokens - cached;
    double cpu = (double)c->predicted_cpu_tokens < rest ? (double)c->predicted_cpu_tokens : rest;
    return cpu * cfg->cpu_token_s + prefill(cfg, rest - cpu, cached + cpu);
}

double irp_cost_ttft(const irp_config *cfg, const irp_request *req, const irp_candidate *c) {
    return queue_wait(cfg, req, c) + compute(cfg, req, c, cached_of(req, c));
}

/* What choose minimises: this request's wait, plus its prefill counted 1 +
 * work_weight times. The extra weight is the prefill's cost to the requests that
 * queue behind it on that replica (and the cache it evicts there): a cold prefill
 * elsewhere beats waiting for a warm replica only when the wait is longer than
 * (1 + work_weight) times what the miss adds. At 0 the choice is greedy on this
 * request's TTFT, which on w1 spread system prompts over replicas whenever the warm
 * one had a cold prefill in progress, duplicated them in caches too small for that,
 * and lost hits (0.85 against 0.89 in one run). */
static double score_of(const irp_config *cfg, const irp_request *req, const irp_candidate *c,
                       double cached) {
    double w = cfg->work_weight >= 0 ? cfg->work_weight : 0;
    return queue_wait(cfg, req, c) + (1.0 + w) * compute(cfg, req, c, cached);
}

/* ---- per-prefix arrival rates ----------------------------------------- */

static double decayed(const cm_rate *e, uint64_t now, double tau) {
    if (!e->t_ns) return 0.0;
    double dt = now > e->t_ns ? (double)(now - e->t_ns) * 1e-9 : 0.0;
    return e->rate * exp(-dt / tau);
}

static double tau_of(const irp_config *cfg) {
    return cfg->hot_window_s > 0 ? cfg->hot_window_s : 10.0;
}

static cm_rate *rate_find(cm_stripe *st, uint64_t key) {
    for (size_t i = 0; i < CM_STRIPE_SLOTS; i++)
        if (st->slot[i].t_ns && st->slot[i].key == key) return &st->slot[i];
    return NULL;
}

/* The slot to reuse for a new key: an empty one, else the slowest now. */
static cm_rate *rate_victim(cm_stripe *st, uint64_t now, double tau) {
    cm_rate *v = &st->slot[0];
    double vr = INFINITY;
    for (size_t i = 0; i < CM_STRIPE_SLOTS; i++) {
        double d = decayed(&st->slot[i], now, tau);
        if (d < vr) vr = d, v = &st->slot[i];
    }
    return v;
}

/* What choose knows of a prefix: its current arrival rate (per second), the
 * blocks its arrivals share (< 0: not measured), its home (replica + 1, 0: none)
 * and when its last arrival was sent there. */
typedef struct cm_prefix {
    double rate, shared;
    uint32_t home;
    uint64_t last_ns;
} cm_prefix;

static cm_prefix rate_get(cm_state *s, uint64_t key) {
    cm_stripe *st = &s->stripes[key % CM_STRIPES];
    pthread_mutex_lock(&st->mu);
    cm_rate *e = rate_find(st, key);
    cm_prefix p = {0.0, -1.0, 0, 0};
    if (e) p = (cm_prefix){decayed(e, ir_now_ns(), tau_of(&s->cfg)), e->shared, e->home, e->t_ns};
    pthread_mutex_unlock(&st->mu);
    return p;
}

static uint64_t lo_of(const irp_request *req, size_t nb) {
    return req->blocks[nb - 1].lo;
}

/* How many leading blocks req shares with the prefix's previous arrival e: the
 * deepest depth where both have the same hash (chained: equal there means equal
 * before), or the shorter whole prompt when it is a prefix of the other. */
static double shared_with(const cm_state *s, const cm_rate *e, const irp_request *req) {
    size_t n = req->nblocks, m = e->nblocks, lo = n < m ? n : m, got = 0;
    for (size_t j = 0; j < CM_DEPTHS && s->depth[j] <= lo; j++) {
        if (lo_of(req, s->depth[j]) != e->at[j]) return (double)got;
        got = s->depth[j];
    }
    /* the previous prompt whole: a prefix of this one (or the same prompt) */
    if (m && m <= n && lo_of(req, m) == e->last) got = m;
    return (double)got;
}

/* Remembers req as the prefix's last arrival. */
static void remember(const cm_state *s, cm_rate *e, const irp_request *req) {
    size_t n = req->nblocks;
    for (size_t j = 0; j < CM_DEPTHS; j++)
        e->at[j] = s->depth[j] <= n ? lo_of(req, s->depth[j]) : 0;
    e->last = n ? lo_of(req, n) : 0;
    e->nblocks = (uint32_t)(n < UINT32_MAX ? n : UINT32_MAX);
}

/* Counts one arrival of `key`, sent to `replica`, and measures how much of it the
 * prefix shares. */
static void rate_add(cm_state *s, uint64_t key, const irp_request *req, uint32_t replica) {
    cm_stripe *st = &s->stripes[key % CM_STRIPES];
    uint64_t now = ir_now_ns();
    double tau = tau_of(&s->cfg);
    bool blocks = req->blocks && req->nblocks;
    pthread_mutex_lock(&st->mu);
    cm_rate *e = rate_find(st, key);
    double r = e ? decayed(e, now, tau) : 0.0;
    if (!e) {
        e = rate_victim(st, now, tau);
        memset(e, 0, sizeof *e);
        e->key = key, e->shared = -1.0;
    } else if (blocks && e->nblocks) {
        double l = shared_with(s, e, req);
        e->shared = e->shared < 0 ? l : e->shared + (l - e->shared) / 8.0;
    }
    if (blocks) remember(s, e, req);
    e->home = replica < UINT32_MAX ? replica + 1 : 0;
    e->rate = r + 1.0 / tau;
    e->t_ns = now ? now : 1;
    pthread_mutex_unlock(&st->mu);
}

/* ---- sessions ---------------------------------------------------------- */

static uint64_t session_key(const irp_request *req) {
    return XXH3_64bits(req->session, req->session_len);
}

static bool session_get(cm_state *s, uint64_t key, uint32_t *replica) {
    uint64_t v = atomic_load_explicit(&s->sessions[key % CM_SESSION_SLOTS], memory_order_relaxed);
    if (!v || (v >> 24) != (key >> 24)) return false;
    *replica = (uint32_t)(v & 0xffffff) - 1u;
    return true;
}

static void session_put(cm_state *s, uint64_t key, uint32_t replica) {
    if (replica >= 0xffffff) return;
    uint64_t v = (key >> 24) << 24 | (replica + 1u);
    atomic_store_explicit(&s->sessions[key % CM_SESSION_SLOTS], v, memory_order_relaxed);
}

/* ---- choose ------------------------------------------------------------ */

/* Per-candidate guard results, computed once per choose. Fleets above
 * IRP_MAX_REPLICAS candidates (beyond the gateway's cap) skip the hot-prefix
 * set and session lookups work the same. */
typedef struct cm_scan {
    size_t n, ne;                         /* candidates, eligible ones */
    uint64_t elig[IRP_MAX_REPLICAS / 64]; /* bit i: c[i] passes guards 1 and 2 */
} cm_scan;

static bool kv_pressed(const irp_candidate *c, double th) {
    return c->engine_fresh && c->engine_kv_usage > th;
}

static bool is_elig(const cm_scan *sc, size_t i) {
    return sc->elig[i / 64] >> (i % 64) & 1;
}

/* Guards 1 and 2. Returns false when n is too large for the bitmap. */
static bool scan(cm_scan *sc, const irp_config *cfg, const irp_candidate *c, size_t n) {
    if (n > IRP_MAX_REPLICAS) return false;
    memset(sc, 0, sizeof *sc);
    sc->n = n;
    uint64_t cap = irp_load_cap(cfg->cost_load_factor, c, n);
    if (cap < cfg->cost_load_floor) cap = cfg->cost_load_floor;
    uint64_t cool[IRP_MAX_REPLICAS / 64] = {0};
    bool any_cool = false;
    for (size_t i = 0; i < n; i++) {
        if (!irp_under_cap(&c[i], cap)) continue;
        sc->elig[i / 64] |= 1ULL << (i % 64);
        if (!kv_pressed(&c[i], cfg->kv_pressure)) cool[i / 64] |= 1ULL << (i % 64), any_cool = true;
    }
    if (any_cool) memcpy(sc->elig, cool, sizeof cool);
    for (size_t w = 0; w < IRP_MAX_REPLICAS / 64; w++)
        sc->ne += (size_t)__builtin_popcountll(sc->elig[w]);
    return true;
}

typedef struct cm_rank {
    uint64_t cached, rdv;
    size_t idx;
} cm_rank;

/* x ranks before y: holds more of the prefix, then the higher rendezvous hash. */
static bool before(const cm_rank *x, const cm_rank *y) {
    return x->cached != y->cached ? x->cached > y->cached : x->rdv > y->rdv;
}

/* Moves the k best of r[0..m) to the front (quickselect, unordered). */
static void select_top(cm_rank *r, size_t m, size_t k) {
    size_t lo = 0, hi = m;
    while (hi - lo > 1) {
        cm_rank pivot = r[lo + (hi - lo) / 2];
        size_t i = lo, j = hi - 1;
        while (i <= j) {
            while (before(&r[i], &pivot)) i++;
            while (before(&pivot, &r[j])) j--;
            if (i <= j) {
                cm_rank t = r[i];
                r[i] = r[j], r[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j)
            hi = j + 1;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* How many replicas the prefix should be spread over (1: not hot). */
static size_t hot_k(cm_state *s, const cm_prefix *pf, double w, size_t ne) {
    double r = pf->rate;
    double util = s->cfg.hot_util > 0 ? s->cfg.hot_util : 0.7;
    double want = ceil(r * w / util);
    size_t lim = s->cfg.hot_replicas && s->cfg.hot_replicas < ne ? s->cfg.hot_replicas : ne;
    if (!(want > 1.0)) return 1;
    return want >= (double)lim ? lim : (size_t)want;
}

/* Narrows sc->elig to the k eligible candidates that hold the most of the
 * prefix (ties by rendezvous hash). k >= the eligible count keeps them all. */
static void hot_set(cm_scan *sc, uint64_t key, const irp_candidate *c, size_t k) {
    if (k >= sc->ne) return;
    cm_rank rank[IRP_MAX_REPLICAS];
    size_t m = 0;
    for (size_t i = 0; i < sc->n; i++)
        if (is_elig(sc, i))
            rank[m++] =
                (cm_rank){.cached = c[i].predicted_cached_tokens,
                          .rdv = irp_mix64(key ^ (c[i].replica + 1ULL) * 0x9e3779b97f4a7c15ULL),
                          .idx = i};
    select_top(rank, m, k);
    memset(sc->elig, 0, sizeof sc->elig);
    for (size_t j = 0; j < k; j++) sc->elig[rank[j].idx / 64] |= 1ULL << (rank[j].idx % 64);
    sc->ne = k;
}

/* The tokens of req every member of its prefix's hot set counts as holding: the
 * part of the prompt that the prefix's arrivals share (what replication puts on
 * every member), at most what the warmest candidate holds (cmax). Only that part:
 * a conversation's own history is on its replica alone, and counting it warm
 * everywhere scattered conversations off their history (w2's shared system
 * prompt made every chat one hot prefix). Not measured (no block hashes, or one
 * arrival): cmax, as before. */
static double hot_warm(const irp_request *req, double shared_blocks, double cmax) {
    if (shared_blocks < 0 || !req->blocks || !req->block_size) return cmax;
    double t = shared_blocks * (double)req->block_size;
    return t < cmax ? t : cmax;
}

/* The prefix's home: the candidate its last arrival was sent to, when the KV
 * index has emptied its view of that replica since (an engine restart, a cache
 * reset, an event gap), it is eligible, and no eligible candidate holds more of
 * this prompt than it does (n: none). *warm is then the part of the prompt the
 * prefix's arrivals share (at least what the home holds), which choose counts the
 * home as holding. A prefix lost to a reset is thus rebuilt where it was, as the
 * approximate index did by not seeing the reset, instead of wherever the queues
 * happen to be a little shorter: with the exact index (KV events), reset-w1 moved
 * the reset replica's groups onto the others, whose caches then overflowed (hit
 * rate 0.781 against 0.819). A prefix that was evicted instead is not sent home:
 * under eviction pressure its home is short of room, and sending prefixes back
 * there lowered pressure-w1's hit rates (0.478 against 0.499) and raised its p99. */
static size_t home_of(const irp_request *req, const cm_scan *sc, const irp_candidate *c,
                      const cm_prefix *pf, double cmax, double *warm) {
    if (!pf->home || pf->shared <= 0) return sc->n;
    for (size_t i = 0; i < sc->n; i++) {
        if (c[i].replica + 1 != pf->home) continue;
        if (c[i].cleared_ns <= pf->last_ns || !is_elig(sc, i) || cached_of(req, &c[i]) < cmax)
            return sc->n;
        *warm = hot_warm(req, pf->shared, (double)req->prompt_tokens);
        return i;
    }
    return sc->n;
}

/* What each eligible candidate has written into its cache, as a fraction in [0, 1)
 * for a tie-break (w[i] < w[j] when i wrote less than j). A replica counts as
 * having written at least its cache's size less than the most any candidate wrote,
 * so one that joined late (or sat idle) is preferred for as long as it takes to
 * fill its cache once, not until it has caught up with everything since the start. */
static void written_of(const cm_state *s, const cm_scan *sc, const irp_candidate *c,
                       uint32_t block_size, double *w) {
    double hi = 0.0;
    for (size_t i = 0; i < sc->n; i++) {
        uint32_t r = c[i].replica;
        w[i] = r < IRP_MAX_REPLICAS
                   ? (double)atomic_load_explicit(&s->written[r], memory_order_relaxed)
                   : 0.0;
        if (is_elig(sc, i) && w[i] > hi) hi = w[i];
    }
    double bs = block_size ? block_size : IRP_DEFAULT_BLOCK;
    for (size_t i = 0; i < sc->n; i++) {
        double cap = (double)c[i].kv_capacity_blocks * bs;
        if (cap > 0 && w[i] < hi - cap) w[i] = hi - cap;
        w[i] = hi > 0 ? 0.5 * w[i] / hi : 0.0;
    }
}

/* The choice among the eligible candidates, whose scores are in score[]: the
 * lowest score, where scores within `tol` of it count as equal; among equal scores
 * the fewest in flight; among those, the one that has written the fewest uncached
 * tokens into its cache (written_of); what is still tied, one at random (reservoir
 * sampling).
 *
 * tol is tie_tolerance times this prompt's cold prefill (at least a relative 1e-9
 * of the lowest score): differences smaller than that are below what the estimate
 * can tell apart. Without it, a short system prompt that every request shares
 * decided every miss: on w4 (RAG, a 100-token system prompt before 2 to 5
 * documents of 1,000 to 4,000 tokens) the replicas that held it won each new
 * document by the system prompt's 96 tokens, so one replica of three received no
 * request at all and its cache sat empty while the other two evicted (hit rate
 * 0.271 against 0.303 for one LRU cache of the fleet's size).
 * Equal scores are common when nothing distinguishes the candidates, such as a
 * new prefix that no replica holds while no prefill is queued: breaking those
 * ties at random placed llm-d's 12 groups 2, 4 and 6 to a replica, and the one
 * with 6 evicted its own prefixes. The in-flight count also weighs the
 * decodes, which the estimate leaves out. What a replica has written decides
 * next, as SGLang's policy sends a miss to its smallest tree: a replica that takes
 * more new prefixes than the others evicts sooner, and on w1 the long system
 * prompts of the tail were evicted and prefilled again.
 *
 * A new prefix (fresh: never seen, held nowhere) goes to the tied candidate that has
 * written the least first, then to the fewest in flight: where it lands its later
 * arrivals follow, so cache room matters longer than this moment's decodes. By the
 * in-flight count first, llm-d's 12 groups of 5 users landed 5, 4 and 3 to a replica
 * in 3 of 6 seeds, and the replica with 5 evicted most questions: p99 TTFT 1.47-1.70
 * times SGLang's policy's, whose smallest tree kept 4, 4 and 4. */
static size_t pick_of(const cm_state *s, const cm_scan *sc, const irp_candidate *c,
                      const double *score, double tol, const irp_request *req, bool fresh) {
    double lo = INFINITY;
    for (size_t i = 0; i < sc->n; i++)
        if (is_elig(sc, i) && score[i] < lo) lo = score[i];
    double eps = irp_tie_band(lo, tol);
    double w[IRP_MAX_REPLICAS];
    written_of(s, sc, c, req->block_size, w);
    irp_argmin m;
    irp_argmin_init(&m);
    for (size_t i = 0; i < sc->n; i++)
        if (is_elig(sc, i) && score[i] <= lo + eps)
            irp_argmin_offer(&m, req->rng, i,
                             fresh ? w[i] * 1e7 + (double)c[i].in_flight
                                   : (double)c[i].in_flight + w[i]);
    return m.ties ? m.pick : sc->n;
}

static size_t cm_choose(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    cm_state *s = state;
    cm_scan sc;
    if (!s || !scan(&sc, &s->cfg, c, n)) return irp_least_loaded(req, c, n);
    const irp_config *cfg = &s->cfg;

    if (cfg->session_affinity && req->session && req->session_len) {
        uint32_t r;
        if (session_get(s, session_key(req), &r))
            for (size_t i = 0; i < n; i++)
                if (c[i].replica == r && is_elig(&sc, i)) return i;
    }

    /* Hot prefix: the set it is spread over, and how much of this prompt every
     * member of it counts as holding (warm). Else its home, if no candidate holds
     * more of the prompt than the home does, counts as holding the shared part. */
    uint64_t key;
    bool hot = false, fresh = false;
    double warm = 0.0;
    size_t home = n;
    if (sc.ne > 1 && irp_prefix_key(req, cfg->prefix_blocks, &key)) {
        double cmax = 0.0;
        for (size_t i = 0; i < n; i++)
            if (is_elig(&sc, i) && cached_of(req, &c[i]) > cmax) cmax = cached_of(req, &c[i]);
        cm_prefix pf = rate_get(s, key);
        fresh = !pf.home && cmax == 0.0;
        size_t k = hot_k(s, &pf, prefill(cfg, (double)req->prompt_tokens - cmax, cmax), sc.ne);
        if (k > 1) {
            hot = true;
            warm = hot_warm(req, pf.shared, cmax);
            hot_set(&sc, key, c, k);
        } else {
            home = home_of(req, &sc, c, &pf, cmax, &warm);
        }
    }

    double score[IRP_MAX_REPLICAS];
    for (size_t i = 0; i < n; i++) {
        if (!is_elig(&sc, i)) continue;
        double cached = cached_of(req, &c[i]);
        if ((hot || i == home) && cached < warm) cached = warm;
        score[i] = score_of(cfg, req, &c[i], cached);
    }
    double tol = cfg->tie_tolerance > 0 ? cfg->tie_tolerance : 0.0;
    size_t pick =
        pick_of(s, &sc, c, score, tol * prefill(cfg, (double)req->prompt_tokens, 0.0), req, fresh);
    return pick < n ? pick : irp_least_loaded(req, c, n);
}

/* ---- hooks and lifetime ------------------------------------------------ */

static void cm_assigned(void *state, uint32_t replica, const irp_request *req) {
    cm_state *s = state;
    if (!s || !req) return;
    if (replica < IRP_MAX_REPLICAS && req->prompt_tokens > req->assigned_cached_tokens)
        atomic_fetch_add_explicit(&s->written[replica],
                                  req->prompt_tokens - req->assigned_cached_tokens,
                                  memory_order_relaxed);
    uint64_t key;
    if (irp_prefix_key(req, s->cfg.prefix_blocks, &key)) rate_add(s, key, req, replica);
    if (s->cfg.session_affinity && req->session && req->session_len)
        session_put(s, session_key(req), replica);
}

/* A replica slot that joins or leaves starts with nothing written (a new engine's
 * cache is empty; written_of then counts it one cache behind the others). */
static void cm_replica_changed(void *state, uint32_t replica) {
    cm_state *s = state;
    if (s && replica < IRP_MAX_REPLICAS)
        atomic_store_explicit(&s->written[replica], 0, memory_order_relaxed);
}

static void *cm_create(const irp_config *cfg) {
    cm_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cfg = *cfg;
    uint32_t d = cfg->prefix_blocks ? cfg->prefix_blocks : 1;
    for (size_t j = 0; j < CM_DEPTHS; j++) {
        s->depth[j] = d;
        uint32_t nd = (uint32_t)((double)d * 1.19);
        d = nd > d ? nd : d + 1;
    }
    for (size_t i = 0; i < CM_STRIPES; i++) pthread_mutex_init(&s->stripes[i].mu, NULL);
    return s;
}

static void cm_destroy(void *state) {
    cm_state *s = state;
    if (!s) return;
    for (size_t i = 0; i < CM_STRIPES; i++) pthread_mutex_destroy(&s->stripes[i].mu);
    free(s);
}

/* For /admin/explain: each candidate's estimated TTFT before the guards (the
 * lowest eligible one wins), as score and in milliseconds. */
static void cm_explain(void *state, const irp_request *req, const irp_candidate *c, size_t n,
                       irp_explain *out) {
    cm_state *s = state;
    if (!s) return;
    for (size_t i = 0; i < n; i++) {
        out[i].score = score_of(&s->cfg, req, &c[i], cached_of(req, &c[i]));
        out[i].estimated_ttft_ms = irp_cost_ttft(&s->cfg, req, &c[i]) * 1e3;
    }
}

const irp_vtable irp_cost_model = {.name = "cost_model",
                                   .create = cm_create,
                                   .destroy = cm_destroy,
                                   .choose = cm_choose,
                                   .assigned = cm_assigned,
                                   .replica_added = cm_replica_changed,
                                   .replica_removed = cm_replica_changed,
                                   .explain = cm_explain};
