/* sglang_cache_aware.c: SGLang's cache_aware policy, rebuilt as a peer baseline.
 *
 * Followed: the SGLang Model Gateway (sgl-router) as documented in
 * docs/advanced_features/sgl_model_gateway.md ("Cache-Aware Policy Tuning")
 * and described in the header of sgl-router/src/policies/cache_aware.rs, with
 * that document's defaults: cache_threshold 0.3, balance_abs_threshold 64,
 * balance_rel_threshold 1.5, max tree size 2^26. (The first sglang-router,
 * v0.1, documented 0.5, 32, 1.0001 and 2^24; set those in the config to
 * compare with it.)
 *
 * The rule, per request, over the candidates offered:
 *   1. Balance check, on load = in_flight (SGLang counts the router's own
 *      outstanding requests per worker): if max - min > balance_abs_threshold
 *      AND max > balance_rel_threshold * min, the least loaded candidate wins
 *      (the first of equals, as SGLang's min_by_key).
 *   2. Otherwise the candidate whose tree shares the longest prefix with the
 *      request's text wins if matched / text length > cache_threshold (ties at
 *      random);
 *   3. otherwise the candidate with the SMALLEST tree wins (ties at random):
 *      load-blind by design, as in SGLang. It is what makes one worker take
 *      every miss under skew; tests/unit/policy/test_no_load_blind.c shows it.
 *   A request without text matches nothing (rate 0) and goes by step 3.
 *
 * The trees. One approximate radix tree per replica slot (below
 * IRP_MAX_REPLICAS; a candidate above it has an empty tree that never grows),
 * over the bytes of the text (SGLang counts Unicode characters; bytes differ
 * only in how a non-ASCII match rate is counted). A node's label is a run of
 * bytes; matching may stop inside a label and counts the bytes that matched.
 * Each tree keeps its nodes on one LRU list in which a parent is always more
 * recent than its children (a path is touched leaf first), so the list's
 * tail is always a leaf: when the tree holds more than max_tree_chars bytes,
 * tail leaves are evicted until it fits. SGLang evicts from a background
 * thread every 120 s; evicting at insert keeps the cap exact without a thread.
 *
 * Differences from SGLang, both deliberate: the text is inserted into the
 * chosen replica's tree in the `assigned` hook (SGLang inserts in select), so
 * that /admin/explain and a send that never happens record nothing; and a
 * replica that leaves the fleet (replica_removed) or joins it (replica_added,
 * whose slot may be reused) has its tree cleared.
 *
 * Threads: each tree has its own mutex, held while matching or inserting;
 * choose locks the candidates' trees one at a time, never two at once.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "policy/ir_policy.h"
#include "policy/policy_util.h"

typedef struct sg_node {
    struct sg_node *parent, *child, *next; /* first child, next sibling */
    struct sg_node *newer, *older;         /* the LRU list (root not on it) */
    size_t len;
    char label[]; /* len bytes, not NUL-terminated */
} sg_node;

typedef struct sg_tree {
    pthread_mutex_t mu;
    sg_node *root;    /* len 0; its own allocation (a struct ending in a flexible
                       * array cannot sit inside another: clang refuses it) */
    sg_node *lru_new; /* most recent */
    sg_node *lru_old; /* least recent: always a leaf */
    size_t chars;     /* bytes held in labels */
} sg_tree;

typedef struct sg_state {
    irp_config cfg;
    sg_tree trees[IRP_MAX_REPLICAS];
} sg_state;

/* ---- the LRU list -------------------------------------------------------- */

static void lru_unlink(sg_tree *t, sg_node *x) {
    if (x->newer)
        x->newer->older = x->older;
    else
        t->lru_new = x->older;
    if (x->older)
        x->older->newer = x->newer;
    else
        t->lru_old = x->newer;
    x->newer = x->older = NULL;
}

static void lru_push_new(sg_tree *t, sg_node *x) {
    x->newer = NULL;
    x->older = t->lru_new;
    if (t->lru_new) t->lru_new->newer = x;
    t->lru_new = x;
    if (!t->lru_old) t->lru_old = x;
}

/* Places x just newer than y (y on the list). */
static void lru_insert_newer(sg_tree *t, sg_node *x, sg_node *y) {
    x->older = y;
    x->newer = y->newer;
    if (y->newer)
        y->newer->older = x;
    else
        t->lru_new = x;
    y->newer = x;
}

/* Makes the path from x up to the root the most recent, x first, so that
 * every parent ends up newer than its child. */
static void touch_path(sg_tree *t, sg_node *x) {
    for (; x && x != t->root; x = x->parent) {
        lru_unlink(t, x);
        lru_push_new(t, x);
    }
}

/* ---- nodes ------------------------------------------------------------- */

static sg_node *node_new(const char *s, size_t len) {
    sg_node *x = calloc(1, sizeof *x + len);
    if (!x) return NULL;
    memcpy(x->label, s, len);
    x->len = len;
    return x;
}

static sg_node *child_of(const sg_node *x, unsigned char first) {
    for (sg_node *c = x->child; c; c = c->next)
        if ((unsigned char)c->label[0] == first) return c;
    return NULL;
}

static void child_remove(sg_node *parent, sg_node *x) {
    for (sg_node **p = &parent->child; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            return;
        }
}

static void child_add(sg_node *parent, sg_node *x) {
    x->parent = parent;
    x->next = parent->child;
    parent->child = x;
}

static size_t common(const char *a, size_t an, const char *b, size_t bn) {
    size_t n = an < bn ? an : bn, i = 0;
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* ---- match, insert, evict ---------------------------------------------- */

static size_t tree_match(const sg_tree *t, const char *s, size_t len) {
    const sg_node *x = t->root;
    size_t done = 0;
    while (done < len) {
        const sg_node *c = child_of(x, (unsigned char)s[done]);
        if (!c) break;
        size_t k = common(c->label, c->len, s + done, len - done);
        done += k;
        if (k < c->len) break;
        x = c;
    }
    return done;
}

/* Splits x after k bytes: a new node holds label[0..k) and becomes x's parent. */
static sg_node *split(sg_tree *t, sg_node *x, size_t k) {
    sg_node *head = node_new(x->label, k);
    if (!head) return NULL;
    sg_node *parent = x->parent;
    child_remove(parent, x);
    child_add(parent, head);
    memmove(x->label, x->label + k, x->len - k);
    x->len -= k;
    x->next = NULL;
    child_add(head, x);
    lru_insert_newer(t, head, x);
    return head;
}

static void evict(sg_tree *t, size_t max) {
    while (t->chars > max && t->lru_old) {
        sg_node *x = t->lru_old; /* a leaf: see touch_path */
        lru_unlink(t, x);
        child_remove(x->parent, x);
        t->chars -= x->len;
        free(x);
    }
}

static void tree_insert(sg_tree *t, const char *s, size_t len, size_t max) {
    if (len > max) len = max;
    sg_node *x = t->root;
    size_t done = 0;
    while (done < len) {
        sg_node *c = child_of(x, (unsigned char)s[done]);
        if (!c) {
            sg_node *leaf = node_new(s + done, len - done);
            if (!leaf) break;
            child_add(x, leaf);
            lru_push_new(t, leaf);
            t->chars += leaf->len;
            x = leaf;
            break;
        }
        size_t k = common(c->label, c->len, s + done, len - done);
        if (k < c->len) {
            sg_node *head = split(t, c, k);
            if (!head) break;
            c = head;
        }
        done += k;
        x = c;
    }
    touch_path(t, x);
    evict(t, max);
}

static void tree_clear(sg_tree *t) {
    while (t->lru_old) {
        sg_node *x = t->lru_old;
        lru_unlink(t, x);
        free(x);
    }
    t->root->child = NULL;
    t->chars = 0;
}

/* ---- the policy ---------------------------------------------------------- */

static sg_tree *tree_of(sg_state *s, uint32_t replica) {
    return replica < IRP_MAX_REPLICAS ? &s->trees[replica] : NULL;
}

static size_t match_len(sg_state *s, uint32_t replica, const irp_request *req) {
    sg_tree *t = tree_of(s, replica);
    if (!t || !req->text || !req->text_len) return 0;
    pthread_mutex_lock(&t->mu);
    size_t m = tree_match(t, req->text, req->text_len);
    pthread_mutex_unlock(&t->mu);
    return m;
}

static size_t tree_chars(sg_state *s, uint32_t replica) {
    sg_tree *t = tree_of(s, replica);
    if (!t) return 0;
    pthread_mutex_lock(&t->mu);
    size_t n = t->chars;
    pthread_mutex_unlock(&t->mu);
    return n;
}

static bool imbalanced(const irp_config *cfg, const irp_candidate *c, size_t n, size_t *least) {
    uint32_t mx = 0, mn = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        if (c[i].in_flight > mx) mx = c[i].in_flight;
        if (c[i].in_flight < mn) mn = c[i].in_flight, *least = i;
    }
    return mx - mn > cfg->balance_abs_threshold &&
           (double)mx > cfg->balance_rel_threshold * (double)mn;
}

static size_t sg_choose(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    sg_state *s = state;
    if (!s) return irp_least_loaded(req, c, n);
    size_t least = 0;
    if (imbalanced(&s->cfg, c, n, &least)) return least;
    irp_argmin best, smallest;
    irp_argmin_init(&best);
    irp_argmin_init(&smallest);
    for (size_t i = 0; i < n; i++) {
        irp_argmin_offer(&best, req->rng, i, -(double)match_len(s, c[i].replica, req));
        irp_argmin_offer(&smallest, req->rng, i, (double)tree_chars(s, c[i].replica));
    }
    double rate = req->text_len ? -best.best / (double)req->text_len : 0.0;
    return rate > s->cfg.cache_threshold ? best.pick : smallest.pick;
}

static void sg_assigned(void *state, uint32_t replica, const irp_request *req) {
    sg_state *s = state;
    sg_tree *t = s ? tree_of(s, replica) : NULL;
    if (!t || !req || !req->text || !req->text_len) return;
    pthread_mutex_lock(&t->mu);
    tree_insert(t, req->text, req->text_len, (size_t)s->cfg.max_tree_chars);
    pthread_mutex_unlock(&t->mu);
}

static void sg_forget(void *state, uint32_t replica) {
    sg_state *s = state;
    sg_tree *t = s ? tree_of(s, replica) : NULL;
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    tree_clear(t);
    pthread_mutex_unlock(&t->mu);
}

static void *sg_create(const irp_config *cfg) {
    sg_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cfg = *cfg;
    for (size_t i = 0; i < IRP_MAX_REPLICAS; i++) {
        pthread_mutex_init(&s->trees[i].mu, NULL);
        if (!(s->trees[i].root = calloc(1, sizeof(sg_node)))) {
            s->trees[i].root = NULL;
            for (size_t k = 0; k <= i; k++) {
                free(s->trees[k].root);
                pthread_mutex_destroy(&s->trees[k].mu);
            }
            free(s);
            return NULL;
        }
    }
    return s;
}

static void sg_destroy(void *state) {
    sg_state *s = state;
    if (!s) return;
    for (size_t i = 0; i < IRP_MAX_REPLICAS; i++) {
        tree_clear(&s->trees[i]);
        free(s->trees[i].root);
        pthread_mutex_destroy(&s->trees[i].mu);
    }
    free(s);
}

const irp_vtable irp_sglang_cache_aware = {.name = "sglang_cache_aware",
                                           .create = sg_create,
                                           .destroy = sg_destroy,
                                           .choose = sg_choose,
                                           .assigned = sg_assigned,
                                           .replica_added = sg_forget,
                                           .replica_removed = sg_forget};
