/* cache.c: per-loop recycling of requests, responses and upstream clients.
 * A kept struct keeps its buffers (up to KEEP_BYTES each) and its arena's
 * first chunk, so a typical request allocates nothing. */
#include "net/net_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum {
    KEEP_STRUCTS = 256,        /* of each kind, per loop */
    KEEP_BYTES = 16 * 1024 + 1 /* buffer capacity worth keeping */
};

/* A kept struct's first pointer holds the free list's link: what it keeps must lie past it. */
_Static_assert(offsetof(irn_request, body) >= sizeof(void *), "link overlaps the body");
_Static_assert(offsetof(irn_resp, head) >= sizeof(void *), "link overlaps the head");
_Static_assert(offsetof(irn_client, head) >= sizeof(void *), "link overlaps the head");

/* Keeps p (with its buffer b emptied) on f when b is small enough and f has room;
 * frees both otherwise. f NULL: no cache. */
static void keep_or_free(ir_freelist *f, void *p, ir_buf *b) {
    if (f && b->cap <= KEEP_BYTES) {
        ir_buf_reset(b);
        if (ir_freelist_push(f, p)) return;
    }
    ir_buf_free(b);
    free(p);
}

irn_cache *irn_cache_new(void) {
    irn_cache *c = malloc(sizeof *c);
    if (!c) return NULL;
    ir_freelist_init(&c->reqs, KEEP_STRUCTS);
    ir_freelist_init(&c->resps, KEEP_STRUCTS);
    ir_freelist_init(&c->clients, KEEP_STRUCTS);
    return c;
}

static void request_destroy(irn_request *req) {
    ir_buf_free(&req->body);
    ir_arena_free(req->arena);
    free(req);
}

void irn_cache_free(irn_cache *c) {
    if (!c) return;
    irn_request *req;
    while ((req = ir_freelist_pop(&c->reqs))) request_destroy(req);
    irn_resp *resp;
    while ((resp = ir_freelist_pop(&c->resps))) keep_or_free(NULL, resp, &resp->head);
    irn_client *cl;
    while ((cl = ir_freelist_pop(&c->clients))) keep_or_free(NULL, cl, &cl->head);
    free(c);
}

irn_request *irn__request_new(irn_cache *cache, size_t max_body, size_t max_arena) {
    irn_request *req = cache ? ir_freelist_pop(&cache->reqs) : NULL;
    if (req) {
        ir_buf body = req->body;
        ir_arena *a = req->arena;
        memset(req, 0, sizeof *req);
        req->body = body;
        ir_buf_rearm(&req->body, max_body, KEEP_BYTES);
        req->arena = a;
        ir_arena_set_max(a, max_arena);
    } else {
        req = calloc(1, sizeof *req);
        if (!req) return NULL;
        ir_buf_init(&req->body, max_body);
        req->arena = ir_arena_new(4096, max_arena);
        if (!req->arena) {
            free(req);
            return NULL;
        }
    }
    req->cache = cache;
    return req;
}

void irn_request_free(irn_request *req) {
    if (!req) return;
    if (req->cache && req->body.cap <= KEEP_BYTES) {
        ir_arena_reset(req->arena); /* back to its first chunk */
        ir_buf_reset(&req->body);
        if (ir_freelist_push(&req->cache->reqs, req)) return;
    }
    request_destroy(req);
}

irn_resp *irn__resp_new(irn_request *req, const irn_server_cfg *cfg) {
    irn_cache *cache = cfg->cache;
    irn_resp *resp = cache ? ir_freelist_pop(&cache->resps) : NULL;
    if (resp) {
        ir_buf head = resp->head;
        memset(resp, 0, sizeof *resp);
        resp->head = head; /* empty; irn_resp_start sets its cap */
    } else if (!(resp = calloc(1, sizeof *resp))) {
        return NULL;
    }
    resp->cache = cache;
    resp->req = req;
    resp->content_length = -1;
    resp->high = cfg->write_high_water;
    resp->low = cfg->write_low_water;
    resp->maxq = cfg->max_write_queue;
    return resp;
}

void irn__resp_release(irn_resp *resp) {
    irn_request_free(resp->req);
    resp->req = NULL;
    keep_or_free(resp->cache ? &resp->cache->resps : NULL, resp, &resp->head);
}

irn_client *irn__client_alloc(irn_cache *cache, size_t max_head) {
    irn_client *cl = cache ? ir_freelist_pop(&cache->clients) : NULL;
    if (cl) {
        ir_buf head = cl->head;
        memset(cl, 0, sizeof *cl);
        cl->head = head;
        ir_buf_rearm(&cl->head, max_head, KEEP_BYTES);
    } else {
        if (!(cl = calloc(1, sizeof *cl))) return NULL;
        ir_buf_init(&cl->head, max_head);
    }
    cl->cache = cache;
    return cl;
}

void irn__client_release(irn_client *cl) {
    keep_or_free(cl->cache ? &cl->cache->clients : NULL, cl, &cl->head);
}
