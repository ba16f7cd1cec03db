/* reload.c: SIGHUP rereads the config file and applies what can change while
 * requests run. The new settings are published as a whole (gw_fleet.cfg, replica
 * and model cfg pointers, model policies, the model list); nothing they replace is
 * freed before exit, so a request that started under the old ones finishes under
 * them. The exceptions are a model's tokenizer and its policy, which can be large (a
 * cost_model's is about 280 KB): a replaced one is freed once no request holds it
 * (fleet.c, gw_fleet_sweep).
 *
 * Models are matched by name: one that stays keeps its slot (its index in replicas'
 * model masks, its metric series, its policy unless that changed), one that is new
 * takes a fresh slot, one that left keeps its slot, unlisted (its requests finish;
 * new ones get a 404), and gets it back if a later reload names it again. Every
 * tokenizer that changed is loaded before anything is applied: one that fails
 * refuses the whole file. */
#include "gateway/gateway.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One reload's leftovers: its file's strings, its config, the discovery it replaced
 * (the policies it replaced are the fleet's to free once unused: gw_model_set_policy). */
typedef struct gw_retired {
    ir_cfg *owner;
    gw_config *loaded, *live;
    gw_discovery *disc; /* the discovery it replaced (stopped) */
    struct gw_retired *next;
} gw_retired;

static bool str_differs(const char *a, const char *b) {
    return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

static bool strlist_differs(const ir_cfg_strlist *a, const ir_cfg_strlist *b) {
    if (a->n != b->n) return true;
    for (size_t i = 0; i < a->n; i++)
        if (str_differs(a->items[i], b->items[i])) return true;
    return false;
}

/* ---- keys that need a restart ---------------------------------------------------------- */

static bool json_differs(const json_t *a, const json_t *b) {
    size_t na = a ? json_object_size(a) : 0, nb = b ? json_object_size(b) : 0;
    return na != nb || (na && !json_equal(a, b));
}

/* Whether a model's tokenizer must load again. */
static bool toks_differ(const gw_model_cfg *a, const gw_model_cfg *b) {
    return str_differs(a->tokenizer, b->tokenizer) ||
           a->tokenizer_optional != b->tokenizer_optional ||
           str_differs(a->chat_template, b->chat_template) ||
           str_differs(a->chat_template_content_format, b->chat_template_content_format) ||
           json_differs(a->chat_template_kwargs.obj, b->chat_template_kwargs.obj);
}

static bool discovery_differs(const gw_config *a, const gw_config *b) {
    if (a->discovery.dns.n != b->discovery.dns.n ||
        strlist_differs(&a->discovery.nameservers, &b->discovery.nameservers))
        return true;
    const gw_dns_group_cfg *x = a->discovery.dns.items, *y = b->discovery.dns.items;
    for (size_t i = 0; i < a->discovery.dns.n; i++)
        if (str_differs(x[i].name, y[i].name) || str_differs(x[i].url, y[i].url) ||
            strlist_differs(&x[i].models, &y[i].models) || x[i].refresh_ns != y[i].refresh_ns ||
            x[i].srv != y[i].srv || x[i].max_concurrency != y[i].max_concurrency ||
            x[i].max_pending != y[i].max_pending ||
            x[i].kv_capacity_blocks != y[i].kv_capacity_blocks ||
            x[i].data_parallel_size != y[i].data_parallel_size ||
            x[i].kv_events.port != y[i].kv_events.port ||
            x[i].kv_events.replay_port != y[i].kv_events.replay_port ||
            str_differs(x[i].kv_events.topic, y[i].kv_events.topic) ||
            str_differs(x[i].kv_events.port_srv, y[i].kv_events.port_srv) ||
            str_differs(x[i].kv_events.replay_port_srv, y[i].kv_events.replay_port_srv))
            return true;
    return false;
}

/* Names every restart-only key that changed; they keep their running value. */
static size_t warn_restart_keys(const gw_config *o, const gw_config *n) {
    const struct {
        const char *key;
        bool changed;
    } keys[] = {
        {"server.listen", str_differs(o->server.listen, n->server.listen)},
        {"server.admin_listen", str_differs(o->server.admin_listen, n->server.admin_listen)},
        {"server.workers", o->server.workers != n->server.workers},
        {"server.request_timeout", o->server.request_timeout_ns != n->server.request_timeout_ns},
        {"server.header_read_timeout",
         o->server.header_read_timeout_ns != n->server.header_read_timeout_ns},
        {"server.shutdown_timeout", o->server.shutdown_timeout_ns != n->server.shutdown_timeout_ns},
        {"server.max_header_bytes", o->server.max_header_bytes != n->server.max_header_bytes},
        {"server.max_headers", o->server.max_headers != n->server.max_headers},
        {"server.max_body_bytes", o->server.max_body_bytes != n->server.max_body_bytes},
        {"server.max_connections", o->server.max_connections != n->server.max_connections},
        {"server.max_write_queue", o->server.max_write_queue != n->server.max_write_queue},
        {"server.busy_poll", o->server.busy_poll != n->server.busy_poll},
        {"upstream.http2", o->upstream.http2 != n->upstream.http2},
        {"upstream.max_idle_per_replica",
         o->upstream.max_idle_per_replica != n->upstream.max_idle_per_replica},
        {"upstream.keepalive_timeout",
         o->upstream.keepalive_timeout_ns != n->upstream.keepalive_timeout_ns},
        {"health.interval", o->health.interval_ns != n->health.interval_ns},
        {"logging.format", str_differs(o->logging.format, n->logging.format)},
        {"index.block_size", o->index.block_size != n->index.block_size},
        {"index.default_capacity_blocks",
         o->index.default_capacity_blocks != n->index.default_capacity_blocks},
        {"index.eviction_lookahead", o->index.eviction_lookahead != n->index.eviction_lookahead},
        {"tokenizer.workers", o->tokenizer.workers != n->tokenizer.workers},
        {"tokenizer.max_wait", o->tokenizer.max_wait_ns != n->tokenizer.max_wait_ns},
        {"tokenizer.max_queue", o->tokenizer.max_queue != n->tokenizer.max_queue},
        {"tokenizer.cache_tokens", o->tokenizer.cache_tokens != n->tokenizer.cache_tokens},
        {"tokenizer.parse_cache_bytes",
         o->tokenizer.parse_cache_bytes != n->tokenizer.parse_cache_bytes},
        {"tokenizer.max_body_bytes", o->tokenizer.max_body_bytes != n->tokenizer.max_body_bytes},
        {"tokenizer.inline_bytes", o->tokenizer.inline_bytes != n->tokenizer.inline_bytes},
        {"tokenizer.inline_warm_bytes",
         o->tokenizer.inline_warm_bytes != n->tokenizer.inline_warm_bytes},
        {"tokenizer.inline_warm", o->tokenizer.inline_warm_ns != n->tokenizer.inline_warm_ns},
        {"observability.otlp_endpoint",
         str_differs(o->observability.otlp_endpoint, n->observability.otlp_endpoint)},
        {"observability.trace_sample_ratio",
         o->observability.trace_sample_ratio != n->observability.trace_sample_ratio},
        {"observability.decision_log.path",
         str_differs(o->observability.decision_log.path, n->observability.decision_log.path)},
        {"observability.decision_log.sample_rate",
         o->observability.decision_log.sample_rate != n->observability.decision_log.sample_rate},
        {"load.scrape_interval", o->load.scrape_interval_ns != n->load.scrape_interval_ns},
        {"load.scrape_timeout", o->load.scrape_timeout_ns != n->load.scrape_timeout_ns},
        {"load.max_age", o->load.max_age_ns != n->load.max_age_ns},
    };
    size_t k = 0;
    for (size_t i = 0; i < IR_ARRAY_LEN(keys); i++)
        if (keys[i].changed) {
            IR_WARN("reload", "%s changed: it needs a restart, and keeps its running value",
                    keys[i].key);
            k++;
        }
    return k;
}

/* The running settings, with the reloadable sections of the new file. */
static void merge(gw_config *live, const gw_config *o, const gw_config *n) {
    *live = *o;
    live->replicas = n->replicas;
    live->models = n->models;
    live->discovery = n->discovery;
    live->routing = n->routing;
    live->retry = n->retry;
    live->health = n->health;
    live->health.interval_ns = o->health.interval_ns;
    live->upstream.connect_timeout_ns = n->upstream.connect_timeout_ns;
    live->upstream.response_timeout_ns = n->upstream.response_timeout_ns;
    live->upstream.non_streaming_timeout_ns = n->upstream.non_streaming_timeout_ns;
    live->upstream.idle_timeout_ns = n->upstream.idle_timeout_ns;
    live->upstream.x_forwarded_for = n->upstream.x_forwarded_for;
    live->logging.level = n->logging.level;
    live->logging.access_log = n->logging.access_log;
    live->logging.log_prompts = n->logging.log_prompts;
}

/* ---- replicas ------------------------------------------------------------------------------ */

static const gw_replica_cfg *find_cfg(const gw_config *c, const char *id) {
    const gw_replica_cfg *r = c->replicas.items;
    for (size_t i = 0; i < c->replicas.n; i++)
        if (strcmp(r[i].id, id) == 0) return &r[i];
    return NULL;
}

/* A configured member (not one discovery found) named id; -1 when none. */
static int find_member(const gw_fleet *f, const char *id) {
    for (size_t i = 0; i < f->nreplicas; i++) {
        const gw_replica *r = &f->replicas[i];
        if (!r->dynamic && gw_replica_member(r) && strcmp(r->cfg->id, id) == 0) return (int)i;
    }
    return -1;
}

static bool headers_differ(const gw_replica_cfg *a, const gw_replica_cfg *b) {
    return json_differs(a->headers.obj, b->headers.obj);
}

static bool events_differ(const gw_replica_cfg *a, const gw_replica_cfg *b) {
    const gw_kv_events_cfg *x = &a->kv_events, *y = &b->kv_events;
    return str_differs(x->endpoint, y->endpoint) ||
           str_differs(x->replay_endpoint, y->replay_endpoint) ||
           (x->endpoint && str_differs(x->topic, y->topic));
}

/* Another target: another address, headers or KV events (a new slot and event stream). */
static bool target_differs(const gw_replica_cfg *a, const gw_replica_cfg *b) {
    return str_differs(a->url, b->url) || headers_differ(a, b) || events_differ(a, b);
}

typedef struct counts {
    size_t added, removed, replaced, updated, failed; /* failed: could not be added */
} counts;

/* A slot that configured replica c left, with the same target: it goes back there
 * (removed and added again by reloads, it would spend a new slot each time). */
static int departed_slot(gw_fleet *f, const gw_replica_cfg *c) {
    size_t used = atomic_load(&f->nreplicas);
    for (size_t i = 0; i < used; i++) {
        const gw_replica *r = &f->replicas[i];
        const gw_replica_cfg *o = r->cfg;
        if (r->dynamic || gw_replica_member(r) || !o || strcmp(o->id, c->id) != 0) continue;
        if (!target_differs(o, c) && o->dp_target == c->dp_target && o->dp_rank == c->dp_rank)
            return (int)i;
    }
    return -1;
}

static bool add_replica(gw_fleet *f, const gw_replica_cfg *c, counts *n) {
    int old = departed_slot(f, c);
    if (old >= 0 && gw_fleet_rejoin(f, (uint32_t)old, c) >= 0) return true; /* activate sizes it */
    if (gw_fleet_add(f, c) >= 0) return true;
    IR_WARN("reload", "replica %s: no free slot or a bad url (restart to add it)", c->id);
    n->failed++;
    return false;
}

/* A member whose settings changed. Its address, headers or KV events: a new slot
 * (and event stream), the old one finishing its requests. Its models and caps: in
 * place. */
static void update_replica(gw_fleet *f, uint32_t slot, const gw_replica_cfg *c, counts *n) {
    gw_replica *r = &f->replicas[slot];
    const gw_replica_cfg *o = r->cfg;
    if (target_differs(o, c)) {
        gw_fleet_leave(f, slot);
        if (add_replica(f, c, n)) n->replaced++;
        return;
    }
    bool cap_changed = o->kv_capacity_blocks != c->kv_capacity_blocks;
    if (strlist_differs(&o->models, &c->models) || o->max_concurrency != c->max_concurrency ||
        o->max_pending != c->max_pending || cap_changed)
        n->updated++;
    r->cfg = c; /* its model_mask follows in publish_models, after its metric series */
    if (cap_changed) {
        irx_set_capacity(f->index, slot, gw_capacity_blocks(f, c->kv_capacity_blocks));
    }
}

static void apply_replicas(gw_fleet *f, const gw_config *n, counts *k) {
    size_t used = f->nreplicas;
    for (size_t i = 0; i < used; i++) { /* who changed or left */
        gw_replica *r = &f->replicas[i];
        if (r->dynamic || !gw_replica_member(r)) continue;
        const gw_replica_cfg *c = find_cfg(n, r->cfg->id);
        if (c) {
            update_replica(f, (uint32_t)i, c, k);
        } else {
            gw_fleet_leave(f, (uint32_t)i);
            k->removed++;
        }
    }
    const gw_replica_cfg *rc = n->replicas.items;
    for (size_t i = 0; i < n->replicas.n; i++) /* who joined */
        if (find_member(f, rc[i].id) < 0 && add_replica(f, &rc[i], k)) k->added++;
}

/* ---- models and policies -------------------------------------------------------------------- */

/* Whether a policy built from b would differ from one built from a: every key the
 * policies read (gw_policy_config) is compared; one left out is silently not reloaded. */
static bool routing_differs(const gw_routing_cfg *a, const gw_routing_cfg *b) {
    const gw_cost_model_cfg *x = &a->cost_model, *y = &b->cost_model;
    return str_differs(a->default_policy, b->default_policy) || a->seed != b->seed ||
           a->load_factor != b->load_factor || a->prefix_blocks != b->prefix_blocks ||
           a->hit_weight != b->hit_weight || a->load_weight != b->load_weight ||
           a->hit_tolerance != b->hit_tolerance || x->load_factor != y->load_factor ||
           x->load_floor != y->load_floor || x->work_weight != y->work_weight ||
           x->tie_tolerance != y->tie_tolerance || x->cpu_token_us != y->cpu_token_us ||
           x->prefill_token_us != y->prefill_token_us || x->prefill_pair_ns != y->prefill_pair_ns ||
           x->prefill_fixed_ms != y->prefill_fixed_ms || x->decode_token_ms != y->decode_token_ms ||
           x->kv_pressure != y->kv_pressure || x->hot_replicas != y->hot_replicas ||
           x->session_affinity != y->session_affinity ||
           a->sglang_cache_aware.cache_threshold != b->sglang_cache_aware.cache_threshold ||
           a->sglang_cache_aware.balance_abs_threshold !=
               b->sglang_cache_aware.balance_abs_threshold ||
           a->sglang_cache_aware.balance_rel_threshold !=
               b->sglang_cache_aware.balance_rel_threshold;
}

/* What the new file makes of each of its models, decided (and its tokenizer
 * loaded) before anything changes. */
typedef struct model_plan {
    gw_model *slot;
    bool fresh, back; /* a slot never used; a slot whose model a reload removed */
    bool retok;       /* toks replaces the model's tokenizer */
    bool realias;     /* a model that stays, with other aliases */
    gw_tokset *toks;
    irp_policy *policy; /* replaces the model's policy, or NULL */
} model_plan;

typedef struct mcounts {
    size_t added, removed, retok, policies, realiased;
} mcounts;

static gw_model *slot_named(gw_fleet *f, const char *name) {
    for (size_t i = 0; i < f->nmodels; i++)
        if (strcmp(f->models[i].cfg->name, name) == 0) return &f->models[i];
    return NULL;
}

static const char *policy_name(const gw_model_cfg *c, const gw_config *cfg) {
    return c->policy ? c->policy : cfg->routing.default_policy;
}

static void plan_free(model_plan *plan, size_t n) {
    for (size_t i = 0; plan && i < n; i++) {
        gw_tokset_free(plan[i].toks);
        irp_policy_free(plan[i].policy);
    }
    free(plan);
}

/* models[i]: its slot, its tokenizer if that changed, its policy if that changed. */
static int plan_model(gw_fleet *f, const gw_config *o, const gw_config *n, size_t i, size_t *next,
                      model_plan *p, ir_cfg_errors *errs) {
    const gw_model_cfg *c = &((const gw_model_cfg *)n->models.items)[i];
    p->slot = slot_named(f, c->name);
    if (!p->slot) {
        if (*next >= f->nmodel_slots) {
            ir_cfg_errors_add(errs,
                              "models[%zu].name: no room for another model (%zu slots); "
                              "restart to add it",
                              i, f->nmodel_slots);
            return -1;
        }
        p->slot = &f->models[(*next)++];
        p->fresh = true;
    }
    p->back = !p->fresh && !atomic_load(&p->slot->active);
    const gw_model_cfg *was = p->fresh ? NULL : p->slot->cfg;
    p->retok = !was || p->back || toks_differ(was, c);
    p->realias = was && !p->back && strlist_differs(&was->aliases, &c->aliases);
    char err[800];
    /* tokenizer.* keeps its running value: the cache is sized as at start */
    if (p->retok && gw_tokset_load(c, i, &o->tokenizer, &p->toks, err, sizeof err)) {
        ir_cfg_errors_add(errs, "%s", err);
        return -1;
    }
    if (was && !p->back && !routing_differs(&o->routing, &n->routing) &&
        strcmp(policy_name(was, o), policy_name(c, n)) == 0)
        return 0;
    irp_config pc;
    gw_policy_config(&n->routing, &pc);
    if (!(p->policy = irp_policy_new(policy_name(c, n), &pc))) {
        ir_cfg_errors_add(errs, "models[%zu].policy: out of memory", i);
        return -1;
    }
    return 0;
}

/* Every model of the new file planned, or NULL with the problems in errs. */
static model_plan *plan_models(gw_fleet *f, const gw_config *o, const gw_config *n,
                               ir_cfg_errors *errs) {
    model_plan *plan = calloc(n->models.n + 1, sizeof *plan);
    if (!plan) {
        ir_cfg_errors_add(errs, "models: out of memory");
        return NULL;
    }
    size_t next = f->nmodels;
    for (size_t i = 0; i < n->models.n; i++)
        if (plan_model(f, o, n, i, &next, &plan[i], errs)) {
            plan_free(plan, n->models.n);
            return NULL;
        }
    return plan;
}

static bool planned(const model_plan *plan, size_t n, const gw_model *m) {
    for (size_t i = 0; i < n; i++)
        if (plan[i].slot == m) return true;
    return false;
}

/* The models of live take their slots (their settings, policies and tokenizers);
 * those it no longer names leave the list. A replaced policy is freed once the requests
 * that chose with it have released it (gw_model_set_policy). */
static void apply_models(gw_fleet *f, const gw_config *live, model_plan *plan, mcounts *k) {
    const gw_model_cfg *mc = live->models.items;
    size_t nm = live->models.n;
    for (size_t i = 0; i < f->nmodels; i++) { /* who left */
        gw_model *m = &f->models[i];
        if (!atomic_load(&m->active) || planned(plan, nm, m)) continue;
        atomic_store(&m->active, 0);
        gw_model_set_toks(f, m, NULL);
        k->removed++;
    }
    for (size_t i = 0; i < nm; i++) {
        model_plan *p = &plan[i];
        gw_model *m = p->slot;
        atomic_store(&m->cfg, &mc[i]);
        if (p->policy) {
            gw_model_set_policy(f, m, p->policy); /* the old one freed once unused */
            if (!p->fresh) k->policies++;
            p->policy = NULL;
        }
        if (p->retok) {
            gw_model_set_toks(f, m, p->toks);
            p->toks = NULL;
            k->retok += !p->fresh && !p->back;
        }
        if (p->fresh) atomic_store(&f->nmodels, (size_t)m->index + 1);
        atomic_store(&m->active, 1);
        k->added += p->fresh || p->back;
        k->realiased += p->realias;
    }
}

/* The metric series of the models that came or went; every member's series for the
 * models its settings now name, then its model mask (names may map to new slots);
 * then the new list. */
static void publish_models(gw_app *app, gw_model_list *list, const model_plan *plan, size_t nm) {
    gw_fleet *f = &app->fleet;
    for (size_t i = 0; i < nm; i++) {
        list->items[list->n++] = plan[i].slot;
        if (plan[i].fresh || plan[i].back || plan[i].retok)
            gw_metrics_model_join(app, plan[i].slot);
    }
    for (size_t i = 0; i < f->nreplicas; i++) {
        gw_replica *r = &f->replicas[i];
        if (!gw_replica_member(r)) continue;
        gw_metrics_replica_models(app, r);
        gw_replica_models(f, r);
    }
    for (size_t i = 0; i < f->nmodels; i++)
        if (!atomic_load(&f->models[i].active)) gw_metrics_model_leave(app, &f->models[i]);
    gw_fleet_set_models(f, list);
}

/* ---- discovery ------------------------------------------------------------------------------ */

/* The new discovery takes over from the running one (which stops); returns the old
 * one, to free at exit. */
static gw_discovery *apply_discovery(gw_app *app, gw_discovery *d) {
    gw_discovery *old = app->disc;
    gw_discovery_adopt(d, old);
    gw_discovery_stop(old);
    if (d) gw_discovery_start(d);
    app->disc = d;
    return old;
}

/* ---- the reload ----------------------------------------------------------------------------- */

static void refused(const char *path, ir_cfg_errors *errs) {
    for (size_t i = 0; i < errs->n; i++) IR_ERROR("reload", "%s: %s", path, errs->msgs[i]);
    IR_ERROR("reload", "%s: %zu problem%s: the file is refused, the running configuration kept",
             path, errs->n, errs->n == 1 ? "" : "s");
}

/* The new discovery when the file changes it (*changed), with its channel set up
 * (the new nameservers); -1 with the problem in errs. */
static int plan_discovery(gw_app *app, const gw_config *n, bool *changed, gw_discovery **out,
                          ir_cfg_errors *errs) {
    *out = NULL;
    *changed = discovery_differs(gw_live(app), n);
    if (!*changed || n->discovery.dns.n == 0) return 0;
    char err[512];
    *out = gw_discovery_new(app, &n->discovery, uv_default_loop(), err, sizeof err);
    if (!*out) ir_cfg_errors_add(errs, "%s", err);
    return *out ? 0 : -1;
}

/* What a reload makes before it changes anything. */
typedef struct reload_plan {
    model_plan *models;
    bool disc_changed;
    gw_discovery *disc; /* NULL: none (or unchanged) */
} reload_plan;

/* The file, loaded and checked, its models and discovery planned; NULL when refused
 * (logged). */
static ir_cfg *load_file(gw_app *app, const char *path, gw_config *loaded, reload_plan *plan) {
    ir_cfg_errors errs = {0};
    ir_cfg *owner = gw_config_load(path, loaded, &errs);
    if (owner && !(plan->models = plan_models(&app->fleet, gw_live(app), loaded, &errs))) {
        ir_cfg_free(owner);
        owner = NULL;
    }
    if (owner && plan_discovery(app, loaded, &plan->disc_changed, &plan->disc, &errs)) {
        plan_free(plan->models, loaded->models.n);
        plan->models = NULL;
        ir_cfg_free(owner);
        owner = NULL;
    }
    if (!owner) refused(path, &errs);
    ir_cfg_errors_free(&errs);
    return owner;
}

int gw_reload(gw_app *app, const char *path) {
    gw_retired *ret = calloc(1, sizeof *ret);
    gw_config *loaded = calloc(1, sizeof *loaded), *live = calloc(1, sizeof *live);
    reload_plan rp = {0};
    ir_cfg *owner = ret && loaded && live ? load_file(app, path, loaded, &rp) : NULL;
    model_plan *plan = rp.models;
    size_t nm = owner ? loaded->models.n : 0;
    gw_model_list *list = owner ? calloc(1, sizeof *list + (nm + 1) * sizeof list->items[0]) : NULL;
    if (!owner || !list) {
        if (owner) IR_ERROR("reload", "out of memory: the running configuration is kept");
        plan_free(plan, nm);
        gw_discovery_stop(rp.disc);
        gw_discovery_free(rp.disc); /* never started: no handle to wait for */
        ir_cfg_free(owner);
        free(list), free(ret), free(loaded), free(live);
        return -1;
    }
    gw_fleet *f = &app->fleet;
    const gw_config *o = gw_live(app);
    size_t restart = warn_restart_keys(o, loaded);
    merge(live, o, loaded);
    /* The new settings first, then what points into them. */
    atomic_store_explicit(&f->cfg, live, memory_order_release);
    counts k = {0};
    mcounts mk = {0};
    apply_models(f, live, plan, &mk);
    apply_replicas(f, live, &k);
    publish_models(app, list, plan, nm);
    plan_free(plan, nm);
    if (rp.disc_changed) ret->disc = apply_discovery(app, rp.disc);
    gw_fleet_sweep(f);
    ir_log_level lvl = IR_LOG_INFO;
    if (ir_log_parse_level(live->logging.level, &lvl) == 0) ir_log_set_level(lvl);
    *ret = (gw_retired){
        .owner = owner, .loaded = loaded, .live = live, .disc = ret->disc, .next = app->retired};
    app->retired = ret;
    IR_INFO("reload",
            "%s: applied: replicas added %zu, removed %zu, replaced %zu, updated %zu, not added "
            "%zu; models added %zu, removed %zu, with new aliases %zu, new policies %zu, new "
            "tokenizers %zu; keys that need a restart: %zu; discovery %s",
            path, k.added, k.removed, k.replaced, k.updated, k.failed, mk.added, mk.removed,
            mk.realiased, mk.policies, mk.retok, restart,
            rp.disc_changed ? "renewed" : "unchanged");
    return 0;
}

void gw_reload_free(gw_app *app) {
    while (app->retired) {
        gw_retired *r = app->retired;
        app->retired = r->next;
        gw_discovery_free(r->disc);
        ir_cfg_free(r->owner);
        free(r->loaded);
        free(r->live);
        free(r);
    }
}
