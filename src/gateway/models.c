/* models.c: model cards learned from the engines' /v1/models, served locally. */
#include "gateway/gateway.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gw_cards {
    pthread_mutex_t mu; /* only GET /v1/models and the refresher take it */
    const gw_fleet *fleet;
    json_t **by_replica; /* each replica's last "data" array, or NULL */
    long long started;
};

gw_cards *gw_cards_new(const gw_fleet *f) {
    gw_cards *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->by_replica = calloc(f->nslots, sizeof *c->by_replica);
    if (!c->by_replica) {
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->fleet = f;
    c->started = (long long)time(NULL);
    return c;
}

void gw_cards_free(gw_cards *c) {
    if (!c) return;
    for (size_t i = 0; i < c->fleet->nslots; i++) json_decref(c->by_replica[i]);
    free(c->by_replica);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static bool card_listed(const json_t *cards, const char *id) {
    size_t k;
    json_t *card;
    json_array_foreach(cards, k, card) if (strcmp(ir_json_str(card, "id"), id) == 0) return true;
    return false;
}

static bool model_configured(const gw_model_list *ml, const char *id) {
    for (size_t i = 0; i < ml->n; i++)
        if (strcmp(ml->items[i]->cfg->name, id) == 0) return true;
    return false;
}

/* The cards of `data` that name a configured model, the first of each name. */
static json_t *cards_kept(const gw_cards *c, const json_t *data) {
    const gw_model_list *ml = gw_fleet_models(c->fleet);
    json_t *kept = json_array();
    size_t k;
    json_t *card;
    json_array_foreach(data, k, card) {
        const char *id = ir_json_str(card, "id");
        if (kept && id && model_configured(ml, id) && !card_listed(kept, id))
            json_array_append(kept, card);
    }
    return kept;
}

void gw_cards_update(gw_cards *c, uint32_t replica, const char *body, size_t len) {
    if (replica >= c->fleet->nslots) return;
    json_error_t e;
    json_t *doc = json_loadb(body, len, 0, &e);
    json_t *data = json_object_get(doc, "data");
    if (!json_is_array(data)) {
        json_decref(doc);
        return; /* a page we cannot read keeps the last good one */
    }
    data = cards_kept(c, data);
    json_decref(doc);
#ifdef __GLIBC__
    /* A large page's parse took far more than its size in small blocks (a page of 1 MiB
     * of empty entries, about 70 MB); now freed, they go back to the system. */
    if (len > (64u << 10)) malloc_trim(0);
#endif
    if (!data) return;
    pthread_mutex_lock(&c->mu);
    json_t *old = c->by_replica[replica];
    c->by_replica[replica] = data;
    pthread_mutex_unlock(&c->mu);
    json_decref(old);
}

/* The first card for `name` that a replica serving the model reported. */
static json_t *find_card(gw_cards *c, const gw_model *m) {
    for (size_t i = 0; i < c->fleet->nreplicas; i++) {
        const gw_replica *r = &c->fleet->replicas[i];
        if (!gw_replica_member(r) || !gw_replica_serves(r, m->index) || !c->by_replica[i]) continue;
        size_t k;
        json_t *card;
        json_array_foreach(c->by_replica[i], k, card) {
            const char *id = ir_json_str(card, "id");
            if (id && strcmp(id, m->cfg->name) == 0) return card;
        }
    }
    return NULL;
}

int gw_cards_render(gw_cards *c, ir_buf *out) {
    json_t *list = json_array();
    pthread_mutex_lock(&c->mu);
    const gw_model_list *ml = gw_fleet_models(c->fleet);
    for (size_t i = 0; i < ml->n; i++) {
        const gw_model *m = ml->items[i];
        json_t *src = find_card(c, m);
        json_t *card;
        if (src) {
            card = json_deep_copy(src);
        } else {
            /* No engine answered yet: what the config says. */
            card =
                json_pack("{s:s, s:s, s:I, s:s, s:s, s:n, s:n, s:[]}", "id", m->cfg->name, "object",
                          "model", "created", (json_int_t)c->started, "owned_by", "inferrail",
                          "root", m->cfg->name, "parent", "max_model_len", "permission");
        }
        json_array_append_new(list, card);
        for (size_t a = 0; a < m->cfg->aliases.n; a++) {
            json_t *alias = json_deep_copy(card);
            json_object_set_new(alias, "id", json_string(m->cfg->aliases.items[a]));
            json_array_append_new(list, alias);
        }
    }
    pthread_mutex_unlock(&c->mu);
    json_t *doc = json_pack("{s:s, s:o}", "object", "list", "data", list);
    int rc = ir_json_append(out, doc, false);
    json_decref(doc);
    return rc;
}
