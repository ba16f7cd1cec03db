/* fleet.c: replicas, their atomic counters, leases and passive health. */
#include "gateway/gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu-bp.h>

/* A model's tokenizer: builtin:sim, or a tokenizer.json and its chat template
 * loaded now, with its caches (tokenizer.cache_tokens, tokenizer.parse_cache_bytes;
 * none when 0, or when out of memory: they only save time). One that cannot load is an error,
 * unless the model says tokenizer_optional (then a warning, and no tokenizer). */
static int hf_fail(const gw_model_cfg *c, size_t i, const char *key, const char *why, char *err,
                   size_t errlen) {
    if (c->tokenizer_optional) {
        IR_WARN("fleet", "models[%zu].%s: %s; model %s routes without cache predictions", i, key,
                why, c->name);
        return 0;
    }
    snprintf(err, errlen, "models[%zu].%s: %s", i, key, why);
    return -1;
}

int gw_tokset_load(const gw_model_cfg *c, size_t i, const gw_tokenizer_cfg *tc, gw_tokset **out,
                   char *err, size_t errlen) {
    *out = NULL;
    const char *spec = c->tokenizer;
    if (!spec) return 0;
    gw_tokset *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "models[%zu].tokenizer: out of memory", i);
        return -1;
    }
    atomic_init(&t->refs, 1);
    t->kind = GW_TOK_SIM;
    if (strcmp(spec, IRT_SIM_SPEC) == 0) {
        *out = t;
        return 0;
    }
    char why[512], msg[700];
    t->hf = irt_load(spec, why, sizeof why);
    if (!t->hf) {
        free(t);
        snprintf(msg, sizeof msg, "cannot load '%s': %s", spec, why);
        return hf_fail(c, i, "tokenizer", msg, err, errlen);
    }
    irt_chat_opts o = {.template_path = c->chat_template,
                       .content_format = c->chat_template_content_format,
                       .kwargs = c->chat_template_kwargs.obj};
    t->chat = irt_chat_load(spec, &o, why, sizeof why);
    if (!t->chat) {
        irt_free(t->hf);
        free(t);
        return hf_fail(c, i, c->chat_template ? "chat_template" : "tokenizer", why, err, errlen);
    }
    if (irt_chat_uses_harmony(t->chat) && irt_harmony_check(t->hf, why, sizeof why)) {
        irt_chat_free(t->chat);
        irt_free(t->hf);
        free(t);
        snprintf(msg, sizeof msg, "cannot load '%s': %s", spec, why);
        return hf_fail(c, i, "tokenizer", msg, err, errlen);
    }
    t->kind = GW_TOK_HF;
    if (tc && tc->cache_tokens > 0) t->tcache = irt_cache_new(t->hf, (size_t)tc->cache_tokens);
    if (tc && tc->parse_cache_bytes) t->pcache = irt_parse_cache_new(tc->parse_cache_bytes);
    if (irt_chat_uses_harmony(t->chat)) {
        char today[64];
        irt_harmony_today(today);
        IR_INFO("fleet",
                "models[%zu].tokenizer: model %s is gpt-oss: its chats are rendered as vLLM "
                "renders them with openai-harmony, dated %s (VLLM_SYSTEM_START_DATE, else the "
                "local date)",
                i, c->name, today);
    }
    *out = t;
    return 0;
}

void gw_tokset_free(gw_tokset *t) {
    if (!t) return;
    irt_cache_free(t->tcache);
    irt_parse_cache_free(t->pcache);
    irt_free(t->hf);
    irt_chat_free(t->chat);
    free(t);
}

/* A worker's read of the pointer and its reference are one RCU read-side section:
 * the control thread waits for a grace period before it drops the model's own
 * reference, so no worker can take one on a tokenizer already counted free. */
gw_tokset *gw_model_toks_take(const gw_model *m) {
    urcu_bp_read_lock();
    gw_tokset *t = atomic_load_explicit(&((gw_model *)m)->toks, memory_order_acquire);
    if (t) atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    urcu_bp_read_unlock();
    return t;
}

void gw_tokset_put(gw_tokset *t) {
    if (t) atomic_fetch_sub_explicit(&t->refs, 1, memory_order_release);
}

void gw_model_set_toks(gw_fleet *f, gw_model *m, gw_tokset *t) {
    atomic_store(&m->tok, t ? (int)t->kind : GW_TOK_NONE);
    gw_tokset *old = atomic_exchange_explicit(&m->toks, t, memory_order_acq_rel);
    if (!old) return;
    urcu_bp_synchronize_rcu(); /* every worker that read old has its reference now */
    gw_tokset_put(old);
    old->retired_next = f->toks_retired;
    f->toks_retired = old;
}

irp_policy *gw_model_policy_take(const gw_model *m) {
    urcu_bp_read_lock();
    irp_policy *p = atomic_load_explicit(&((gw_model *)m)->policy, memory_order_acquire);
    if (p) irp_policy_hold(p);
    urcu_bp_read_unlock();
    return p;
}

void gw_policy_put(irp_policy *p) {
    if (p) irp_policy_drop(p);
}

void gw_model_set_policy(gw_fleet *f, gw_model *m, irp_policy *p) {
    if (p) irp_policy_hold(p); /* the model's own */
    irp_policy *old = atomic_exchange_explicit(&m->policy, p, memory_order_acq_rel);
    if (!old) return;
    urcu_bp_synchronize_rcu(); /* every worker that read old holds it now */
    irp_policy_drop(old);
    if (f->npol_retired == f->pol_retired_cap) {
        size_t cap = f->pol_retired_cap * 2 + 8;
        irp_policy **grown = realloc(f->pol_retired, cap * sizeof *grown);
        if (!grown) return; /* out of memory: old is kept, unfreed, rather than freed early */
        f->pol_retired = grown, f->pol_retired_cap = cap;
    }
    f->pol_retired[f->npol_retired++] = old;
}

static void sweep_policies(gw_fleet *f) {
    size_t k = 0;
    for (size_t i = 0; i < f->npol_retired; i++) {
        if (irp_policy_holders(f->pol_retired[i]) == 0)
            irp_policy_free(f->pol_retired[i]);
        else
            f->pol_retired[k++] = f->pol_retired[i];
    }
    f->npol_retired = k;
}

void gw_fleet_sweep(gw_fleet *f) {
    sweep_policies(f);
    gw_tokset **p = &f->toks_retired;
    while (*p) {
        gw_tokset *t = *p;
        if (atomic_load_explicit(&t->refs, memory_order_acquire) != 0) {
            p = &t->retired_next;
            continue;
        }
        *p = t->retired_next;
        gw_tokset_free(t);
    }
}

void gw_fleet_set_models(gw_fleet *f, gw_model_list *list) {
    gw_model_list *old =
        (gw_model_list *)atomic_exchange_explicit(&f->mlist, list, memory_order_acq_rel);
    if (!old) return;
    old->retired_next = f->mlist_retired;
    f->mlist_retired = old;
}

static int init_models(gw_fleet *f, const gw_config *cfg, char *err, size_t errlen) {
    const gw_model_cfg *mc = cfg->models.items;
    gw_model_list *list = calloc(1, sizeof *list + (f->nmodels + 1) * sizeof list->items[0]);
    if (!list) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    gw_fleet_set_models(f, list);
    for (size_t i = 0; i < f->nmodel_slots; i++) f->models[i].index = (uint32_t)i;
    for (size_t i = 0; i < f->nmodels; i++) {
        gw_model *m = &f->models[i];
        const char *pname = mc[i].policy ? mc[i].policy : cfg->routing.default_policy;
        m->cfg = &mc[i];
        irp_config pc;
        gw_policy_config(&cfg->routing, &pc);
        irp_policy *pol = irp_policy_new(pname, &pc);
        if (!pol) {
            snprintf(err, errlen, "models[%zu].policy: unknown policy '%s' (known: %s)", i, pname,
                     irp_names());
            return -1;
        }
        gw_model_set_policy(f, m, pol);
        gw_tokset *t;
        if (gw_tokset_load(&mc[i], i, &cfg->tokenizer, &t, err, errlen)) return -1;
        gw_model_set_toks(f, m, t);
        atomic_store(&m->active, 1);
        list->items[list->n++] = m;
    }
    return 0;
}

/* The KV index, with every replica's capacity: its kv_capacity_blocks, else the
 * default (the engine's own number replaces it once the load scraper reads it). */
static int init_index(gw_fleet *f, char *err, size_t errlen) {
    f->block_size = (uint32_t)f->cfg->index.block_size;
    f->index = irx_new((uint32_t)f->nslots);
    if (!f->index) {
        snprintf(err, errlen, "out of memory (KV index)");
        return -1;
    }
    irx_ev_set_lookahead(f->index, f->cfg->index.eviction_lookahead);
    for (size_t i = 0; i < f->nreplicas; i++) {
        uint32_t cap = gw_capacity_blocks(f, f->replicas[i].cfg->kv_capacity_blocks);
        if (irx_set_capacity(f->index, (uint32_t)i, cap)) {
            snprintf(err, errlen, "out of memory (KV index)");
            return -1;
        }
    }
    return 0;
}

uint32_t gw_capacity_blocks(const gw_fleet *f, int64_t kv_capacity_blocks) {
    int64_t cap =
        kv_capacity_blocks > 0 ? kv_capacity_blocks : f->cfg->index.default_capacity_blocks;
    return (uint32_t)IR_MIN(cap, GW_MAX_CAPACITY_BLOCKS);
}

void gw_policy_config(const gw_routing_cfg *c, irp_config *o) {
    irp_config_defaults(o);
    o->load_factor = c->load_factor;
    o->prefix_blocks = (uint32_t)c->prefix_blocks;
    o->hit_weight = c->hit_weight;
    o->load_weight = c->load_weight;
    o->hit_tolerance = c->hit_tolerance;
    o->prefill_a = c->cost_model.prefill_token_us * 1e-6;
    o->prefill_b = c->cost_model.prefill_pair_ns * 1e-9;
    o->prefill_d = c->cost_model.prefill_fixed_ms * 1e-3;
    o->tpot = c->cost_model.decode_token_ms * 1e-3;
    o->cpu_token_s = c->cost_model.cpu_token_us * 1e-6;
    o->kv_pressure = c->cost_model.kv_pressure;
    o->cost_load_factor = c->cost_model.load_factor;
    o->cost_load_floor = (uint32_t)c->cost_model.load_floor;
    o->work_weight = c->cost_model.work_weight;
    o->tie_tolerance = c->cost_model.tie_tolerance;
    o->hot_replicas = (uint32_t)c->cost_model.hot_replicas;
    o->session_affinity = c->cost_model.session_affinity;
    o->cache_threshold = c->sglang_cache_aware.cache_threshold;
    o->balance_abs_threshold = (uint32_t)c->sglang_cache_aware.balance_abs_threshold;
    o->balance_rel_threshold = c->sglang_cache_aware.balance_rel_threshold;
}

int gw_fleet_init(gw_fleet *f, const gw_config *cfg, char *err, size_t errlen) {
    memset(f, 0, sizeof *f);
    f->cfg = cfg;
    f->nmodels = cfg->models.n;
    f->nreplicas = cfg->replicas.n;
    /* With discovery, every slot exists from the start: members come and go in them. */
    /* Room for replicas that a reload adds: twice the configured ones, at least 8 more. */
    f->nslots = cfg->discovery.dns.n
                    ? GW_MAX_REPLICAS
                    : IR_MIN(GW_MAX_REPLICAS, IR_MAX(2 * cfg->replicas.n, cfg->replicas.n + 8));
    /* Room for models that a reload adds, as for replicas (a model's bit in a
     * replica's model_mask caps them at GW_MAX_MODELS). */
    f->nmodel_slots = IR_MIN(GW_MAX_MODELS, IR_MAX(2 * cfg->models.n, cfg->models.n + 8));
    f->models = calloc(f->nmodel_slots, sizeof *f->models);
    f->replicas = calloc(f->nslots, sizeof *f->replicas);
    pthread_mutex_init(&f->eject_mu, NULL);
    if (!f->models || !f->replicas) {
        snprintf(err, errlen, "out of memory");
        gw_fleet_free(f);
        return -1;
    }
    if (init_models(f, cfg, err, errlen)) {
        gw_fleet_free(f);
        return -1;
    }
    const gw_replica_cfg *rc = cfg->replicas.items;
    for (size_t i = 0; i < f->nreplicas; i++) {
        gw_replica *r = &f->replicas[i];
        r->cfg = &rc[i];
        r->index = (uint32_t)i;
        if (ir_url_parse(rc[i].url, &r->url)) {
            snprintf(err, errlen, "replicas[%zu].url: not an http URL", i);
            gw_fleet_free(f);
            return -1;
        }
        gw_replica_models(f, r);
        if (gw_replica_headers_init(r)) {
            snprintf(err, errlen, "out of memory");
            gw_fleet_free(f);
            return -1;
        }
        /* Optimistic until the first probe says otherwise. */
        atomic_store(&r->healthy, 1);
        atomic_store(&r->active, 1);
    }
    if (init_index(f, err, errlen) || gw_kvsub_start(f, err, errlen)) {
        gw_fleet_free(f);
        return -1;
    }
    return 0;
}

void gw_fleet_free(gw_fleet *f) {
    for (size_t i = 0; i < f->npol_retired; i++) irp_policy_free(f->pol_retired[i]);
    free(f->pol_retired);
    f->pol_retired = NULL;
    f->npol_retired = f->pol_retired_cap = 0;
    for (size_t i = 0; f->models && i < f->nmodels; i++) {
        irp_policy_free(f->models[i].policy);
        gw_tokset_free(atomic_exchange(&f->models[i].toks, NULL));
    }
    while (f->toks_retired) {
        gw_tokset *t = f->toks_retired;
        f->toks_retired = t->retired_next;
        gw_tokset_free(t);
    }
    free((gw_model_list *)atomic_exchange(&f->mlist, NULL));
    while (f->mlist_retired) {
        gw_model_list *l = f->mlist_retired;
        f->mlist_retired = l->retired_next;
        free(l);
    }
    gw_kvsub_stop(f);
    irx_free(f->index);
    f->index = NULL;
    pthread_mutex_destroy(&f->eject_mu);
    for (size_t i = 0; f->replicas && i < f->nreplicas; i++) free(f->replicas[i].extra);
    free(f->models);
    free(f->replicas);
    f->models = NULL;
    f->replicas = NULL;
}

static bool same(const char *s, const char *name, size_t len) {
    return strlen(s) == len && memcmp(s, name, len) == 0;
}

const gw_model *gw_fleet_model(const gw_fleet *f, const char *name, size_t len) {
    const gw_model_list *l = gw_fleet_models(f);
    for (size_t i = 0; i < l->n; i++) {
        const gw_model_cfg *c = l->items[i]->cfg;
        if (same(c->name, name, len)) return l->items[i];
        for (size_t a = 0; a < c->aliases.n; a++)
            if (same(c->aliases.items[a], name, len)) return l->items[i];
    }
    return NULL;
}

bool gw_replica_cfg_serves(const gw_replica_cfg *c, const char *name) {
    const ir_cfg_strlist *want = &c->models;
    bool serves = want->n == 0;
    for (size_t k = 0; k < want->n && !serves; k++)
        serves = want->items[k] && strcmp(want->items[k], name) == 0;
    return serves;
}

void gw_replica_models(const gw_fleet *f, gw_replica *r) {
    uint64_t mask[4] = {0};
    for (size_t m = 0; m < f->nmodels; m++)
        if (gw_replica_cfg_serves(r->cfg, f->models[m].cfg->name)) mask[m / 64] |= 1ull << (m % 64);
    for (size_t w = 0; w < 4; w++)
        atomic_store_explicit(&r->model_mask[w], mask[w], memory_order_relaxed);
}

bool gw_replica_serves(const gw_replica *r, uint32_t model) {
    return model < 256 && (atomic_load_explicit(&r->model_mask[model / 64], memory_order_relaxed) >>
                           (model % 64)) &
                              1;
}

bool gw_replica_available(const gw_replica *r, uint64_t now) {
    return gw_replica_member(r) && atomic_load_explicit(&r->healthy, memory_order_relaxed) &&
           atomic_load_explicit(&r->ejected_until, memory_order_relaxed) <= now;
}

/* Increments *v unless it already reached cap; *was gets the value it had. */
static bool inc_below(_Atomic uint32_t *v, uint32_t cap, uint32_t *was) {
    uint32_t cur = atomic_load_explicit(v, memory_order_relaxed);
    do {
        if (cur >= cap) return false;
    } while (!atomic_compare_exchange_weak_explicit(v, &cur, cur + 1, memory_order_acq_rel,
                                                    memory_order_relaxed));
    *was = cur;
    return true;
}

/* u * (2c + u) for a lease: twice its prefill's attention term, in tokens^2. */
static uint64_t lease_work(gw_lease_tokens t) {
    uint64_t u = t.uncached, c = t.prompt > t.uncached ? t.prompt - t.uncached : 0;
    return u * (2 * c + u);
}

/* A pending slot under max_pending, with the lease's prefill counted pending. */
static bool lease_pend(gw_replica *r, gw_lease_tokens t) {
    uint32_t was;
    if (!inc_below(&r->pending, (uint32_t)r->cfg->max_pending, &was)) return false;
    if (was == 0) atomic_store_explicit(&r->prefill_since, ir_now_ns(), memory_order_relaxed);
    atomic_fetch_add_explicit(&r->pending_tokens, t.prompt, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->pending_uncached, t.uncached, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->pending_work, lease_work(t), memory_order_relaxed);
    return true;
}

bool gw_lease_take(gw_replica *r, gw_lease_tokens t) {
    uint32_t was;
    if (!inc_below(&r->in_flight, (uint32_t)r->cfg->max_concurrency, &was)) return false;
    if (t.pends && !lease_pend(r, t)) {
        atomic_fetch_sub_explicit(&r->in_flight, 1, memory_order_acq_rel);
        return false;
    }
    atomic_fetch_add_explicit(&r->prompt_tokens, t.prompt, memory_order_relaxed);
    atomic_fetch_add_explicit(&r->requests, 1, memory_order_relaxed);
    return true;
}

static void lease_unpend(gw_replica *r, gw_lease_tokens t) {
    atomic_fetch_sub_explicit(&r->pending_tokens, t.prompt, memory_order_relaxed);
    atomic_fetch_sub_explicit(&r->pending_uncached, t.uncached, memory_order_relaxed);
    atomic_fetch_sub_explicit(&r->pending_work, lease_work(t), memory_order_relaxed);
}

void gw_lease_head(gw_replica *r, gw_lease_tokens t) {
    if (atomic_fetch_sub_explicit(&r->pending, 1, memory_order_acq_rel) > 1)
        atomic_store_explicit(&r->prefill_since, ir_now_ns(), memory_order_relaxed);
    lease_unpend(r, t);
}

void gw_lease_release(gw_replica *r, bool pending_still, gw_lease_tokens t) {
    if (pending_still) { /* it left before its first byte: the head clock stays */
        atomic_fetch_sub_explicit(&r->pending, 1, memory_order_acq_rel);
        lease_unpend(r, t);
    }
    atomic_fetch_sub_explicit(&r->in_flight, 1, memory_order_acq_rel);
    atomic_fetch_sub_explicit(&r->prompt_tokens, t.prompt, memory_order_relaxed);
}

static void eject_capped(gw_fleet *f, gw_replica *r, const gw_health_cfg *h, uint64_t now,
                         uint32_t n);

void gw_replica_failed(gw_fleet *f, gw_replica *r, uint64_t now) {
    const gw_health_cfg *h = &f->cfg->health;
    atomic_fetch_add_explicit(&r->failures, 1, memory_order_relaxed);
    uint32_t n = atomic_fetch_add_explicit(&r->consecutive_failures, 1, memory_order_acq_rel) + 1;
    if (n < (uint32_t)h->unhealthy_threshold) return;
    pthread_mutex_lock(&f->eject_mu);
    eject_capped(f, r, h, now, n);
    pthread_mutex_unlock(&f->eject_mu);
}

/* Ejects r unless that takes out more than max_ejection_percent of the healthy
 * replicas. Under f->eject_mu. */
static void eject_capped(gw_fleet *f, gw_replica *r, const gw_health_cfg *h, uint64_t now,
                         uint32_t n) {
    size_t healthy = 0, ejected = 0;
    for (size_t i = 0; i < f->nreplicas; i++) {
        if (!gw_replica_member(&f->replicas[i]) ||
            !atomic_load_explicit(&f->replicas[i].healthy, memory_order_relaxed))
            continue;
        healthy++;
        if (atomic_load_explicit(&f->replicas[i].ejected_until, memory_order_relaxed) > now)
            ejected++;
    }
    if ((ejected + 1) * 100 > (size_t)h->max_ejection_percent * healthy) {
        atomic_store_explicit(&r->consecutive_failures, 0, memory_order_release);
        return; /* ejecting it would leave too few */
    }
    /* Ejected for a backoff that doubles on every repeat, up to the cap. A replica back
     * for longer than the cap since its last ejection ended (an engine restarted once,
     * say) starts from the base again: the doubling is for one that keeps failing. */
    uint64_t last_end = atomic_load_explicit(&r->ejected_until, memory_order_relaxed);
    if (last_end && now > last_end + h->max_ejection_backoff_ns)
        atomic_store_explicit(&r->ejections, 0, memory_order_relaxed);
    uint32_t times = atomic_fetch_add_explicit(&r->ejections, 1, memory_order_acq_rel);
    atomic_fetch_add_explicit(&r->ejections_total, 1, memory_order_relaxed);
    uint64_t backoff = h->ejection_backoff_ns;
    for (uint32_t i = 0; i < times && backoff < h->max_ejection_backoff_ns; i++) backoff *= 2;
    if (backoff > h->max_ejection_backoff_ns) backoff = h->max_ejection_backoff_ns;
    atomic_store_explicit(&r->ejected_until, now + backoff, memory_order_release);
    atomic_store_explicit(&r->consecutive_failures, 0, memory_order_release);
    IR_WARN("fleet", "replica %s ejected for %llu ms after %u consecutive failures", r->cfg->id,
            (unsigned long long)(backoff / 1000000), n);
}

void gw_replica_succeeded(gw_replica *r) {
    if (atomic_load_explicit(&r->consecutive_failures, memory_order_relaxed))
        atomic_store_explicit(&r->consecutive_failures, 0, memory_order_relaxed);
}

/* Why replica rep is not offered, or NULL when it is; counts it in *healthy
 * when it serves the model and is up. The one place that decides eligibility. */
static const char *left_out(const gw_replica *rep, uint32_t model, uint64_t now, bool excluded,
                            uint32_t inf, uint32_t pen, bool pends, size_t *healthy) {
    if (!gw_replica_member(rep)) return "not a member";
    if (!gw_replica_serves(rep, model)) return "does not serve the model";
    if (!atomic_load_explicit(&rep->healthy, memory_order_relaxed)) return "unhealthy";
    if (atomic_load_explicit(&rep->no_rank, memory_order_relaxed)) return "no such rank";
    if (atomic_load_explicit(&rep->ejected_until, memory_order_relaxed) > now) return "ejected";
    (*healthy)++;
    if (excluded) return "already tried";
    if (inf >= (uint32_t)rep->cfg->max_concurrency ||
        (pends && pen >= (uint32_t)rep->cfg->max_pending))
        return "full";
    return NULL;
}

/* Seconds since the oldest pending request's prefill began (0 if the clock was
 * restarted after `now` was read). */
static double head_elapsed(const gw_replica *rep, uint64_t now) {
    uint64_t since = atomic_load_explicit(&rep->prefill_since, memory_order_relaxed);
    return since && since < now ? (double)(now - since) * 1e-9 : 0.0;
}

size_t gw_fleet_candidates_why(const gw_fleet *f, uint32_t model, uint64_t now, bool pends,
                               const uint64_t *exclude, irp_candidate *out, size_t *healthy,
                               const char **why) {
    size_t n = 0, slots = atomic_load_explicit(&f->nreplicas, memory_order_acquire);
    *healthy = 0;
    for (size_t i = 0; i < slots; i++) {
        gw_replica *rep = &f->replicas[i];
        bool excluded = exclude && (exclude[i / 64] >> (i % 64)) & 1;
        uint32_t inf = atomic_load_explicit(&rep->in_flight, memory_order_relaxed);
        uint32_t pen = atomic_load_explicit(&rep->pending, memory_order_relaxed);
        const char *reason = left_out(rep, model, now, excluded, inf, pen, pends, healthy);
        if (why) why[i] = reason;
        if (reason) continue;
        out[n++] = (irp_candidate){
            .replica = (uint32_t)i,
            .in_flight = inf,
            .pending = pen,
            .prompt_tokens_in_flight =
                atomic_load_explicit(&rep->prompt_tokens, memory_order_relaxed),
            .pending_prompt_tokens =
                atomic_load_explicit(&rep->pending_tokens, memory_order_relaxed),
            .pending_uncached_tokens =
                atomic_load_explicit(&rep->pending_uncached, memory_order_relaxed),
            .pending_work = atomic_load_explicit(&rep->pending_work, memory_order_relaxed),
            .pending_head_s = pen ? head_elapsed(rep, now) : 0.0,
            .max_concurrency = (uint32_t)rep->cfg->max_concurrency,
            .kv_capacity_blocks = f->index ? irx_capacity(f->index, (uint32_t)i) : 0,
            .cleared_ns = f->index ? irx_replica_cleared_ns(f->index, (uint32_t)i) : 0};
        gw_engine_fill(rep, now, f->cfg->load.max_age_ns, &out[n - 1]);
    }
    return n;
}

size_t gw_fleet_candidates(const gw_fleet *f, uint32_t model, uint64_t now, bool pends,
                           const uint64_t *exclude, irp_candidate *out, size_t *healthy) {
    return gw_fleet_candidates_why(f, model, now, pends, exclude, out, healthy, NULL);
}
