/* resolve.c: stage 2, the body's `model`: which configured model it names (by name
 * or alias), or the error to answer. Only `model` is read, by a scanner that follows
 * JSON's rules; every comparison is bounded by the bytes the body has. */
#include "gateway/request.h"

#include <stdio.h>
#include <string.h>

void gw_unknown_model_message(const char *name, size_t len, char *out, size_t cap) {
    size_t cut = len <= GW_SHOWN_NAME ? len : GW_SHOWN_NAME; /* at a character boundary */
    while (cut < len && cut > 0 && ((unsigned char)name[cut] & 0xC0) == 0x80) cut--;
    /* A NUL ("\u0000" in the body) shows as U+FFFD: cut there, the name would read as
     * another (a model that exists, say). */
    char shown[GW_SHOWN_NAME * 3];
    size_t k = 0;
    for (size_t i = 0; i < cut; i++) {
        if (name[i]) {
            shown[k++] = name[i];
        } else {
            memcpy(shown + k, "\xEF\xBF\xBD", 3);
            k += 3;
        }
    }
    if (cut == len)
        snprintf(out, cap, "The model `%.*s` does not exist.", (int)k, shown);
    else
        snprintf(out, cap, "The model `%.*s\u2026` (%zu bytes) does not exist.", (int)k, shown,
                 len);
}

static void fail(gw_resolution *o, int status, const char *msg) {
    o->model = NULL;
    o->status = status;
    o->message = msg;
}

/* Whether the value at sp is the JSON literal lit (null, true). */
static bool is_literal(const char *body, const ir_json_span *sp, const char *lit) {
    size_t n = strlen(lit);
    return !sp->is_string && sp->end - sp->start == n && memcmp(body + sp->start, lit, n) == 0;
}

/* `model` is a string: a name or an alias, or unknown. */
static void by_name(const gw_fleet *f, const char *body, gw_resolution *o) {
    const ir_json_span *sp = &o->span;
    ir_buf name; /* decoded, never longer than the token */
    ir_buf_init(&name, sp->end - sp->start + 1);
    const gw_model *m = NULL;
    if (ir_json_unescape(body + sp->start, sp->end - sp->start, &name) == 0)
        m = gw_fleet_model(f, name.data ? name.data : "", name.len);
    if (!m) {
        gw_unknown_model_message(name.data ? name.data : "", name.len, o->text, sizeof o->text);
        fail(o, 404, o->text);
        o->type = "NotFoundError";
    } else {
        o->model = m;
        o->rewrite = strlen(m->cfg->name) != name.len || memcmp(m->cfg->name, name.data, name.len);
    }
    ir_buf_free(&name);
}

void gw_resolve_model(const gw_fleet *f, const char *body, size_t len, gw_resolution *o) {
    memset(o, 0, sizeof *o);
    static const char *const keys[] = {"model", "stream"};
    ir_json_span sp[2];
    int res[2], found = IR_JSON_INVALID;
    if (ir_json_scan_keys(body, len, keys, 2, sp, res, GW_JSON_MAX_DEPTH) == 0) {
        found = res[0];
        o->span = sp[0];
        /* only a literal true streams: anything else (absent, false, null, or a form
         * pydantic would also take as true, such as 1) counts as not streamed, which only
         * gives such a request the longer wait and no max_pending cap */
        o->streams = res[1] == IR_JSON_FOUND && is_literal(body, &sp[1], "true");
    }
    o->found = found == IR_JSON_FOUND;
    if (found == IR_JSON_INVALID) {
        fail(o, 400, "The request body is not a valid JSON object.");
    } else if (o->found && o->span.is_string && o->span.end - o->span.start > 2) {
        by_name(f, body, o);
    } else if (!o->found || is_literal(body, &o->span, "null") || o->span.is_string) {
        /* absent, null or "" (vLLM serves its model for an empty name too): the only
         * model, when there is one */
        const gw_model_list *ml = gw_fleet_models(f);
        if (ml->n != 1) {
            fail(o, 400, "`model` is required: this gateway serves several models.");
            return;
        }
        o->model = ml->items[0];
        o->rewrite = true;
    } else {
        fail(o, 400, "`model` must be a string.");
    }
}

int gw_splice_parts(const char *body, size_t len, const ir_json_span *sp, bool found,
                    const char *name, ir_arena *arena, irn_part out[GW_SPLICE_PARTS],
                    size_t *nparts) {
    size_t nl = strlen(name), most = nl * 6 + 16; /* every byte escaped, "model":, a comma */
    char *mem = ir_arena_alloc(arena, most);
    if (!mem) return -1;
    ir_buf mid;
    ir_buf_fixed(&mid, mem, most);
    size_t cut = found ? sp->start : sp->obj_open + 1, rest = found ? sp->end : cut;
    int rc = found ? 0 : ir_buf_append_str(&mid, "\"model\":");
    rc |= ir_json_append_string(&mid, name, nl);
    if (!found && !sp->obj_empty) rc |= ir_buf_append(&mid, ",", 1);
    if (rc) return -1;
    out[0] = (irn_part){body, cut};
    out[1] = (irn_part){mid.data, mid.len};
    out[2] = (irn_part){body + rest, len - rest};
    *nparts = GW_SPLICE_PARTS;
    return 0;
}

/* The body sent on is the client's with `model` rewritten, as parts: no copy. */
static int splice_body(gw_req *r, const gw_resolution *o) {
    return gw_splice_parts(r->body, r->body_len, &o->span, o->found, o->model->cfg->name,
                           r->req->arena, r->parts, &r->nparts);
}

/* A request that does not stream waits for its head as long as the engine generates:
 * each attempt up to non_streaming_timeout (forward.c), and all of them up to the
 * longer of that and request_timeout. */
static void set_deadline(gw_req *r, const gw_resolution *o) {
    const gw_config *cfg = gw_live(r->w->app);
    r->unary = !o->streams;
    uint64_t wait = cfg->upstream.non_streaming_timeout_ns;
    if (r->unary && r->arrival + wait > r->deadline) r->deadline = r->arrival + wait;
}

int gw_stage_resolve(gw_req *r) {
    gw_resolution o;
    gw_resolve_model(&r->w->app->fleet, r->body, r->body_len, &o);
    if (!o.model) {
        gw_req_fail_with(r, o.status, o.type, o.message, NULL, 0);
        return -1;
    }
    r->model = o.model;
    set_deadline(r, &o);
    if (o.rewrite && splice_body(r, &o)) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "The request body is too large to rewrite `model` in (server.max_body_bytes is "
                 "%llu bytes).",
                 (unsigned long long)r->w->app->cfg.server.max_body_bytes);
        gw_req_fail(r, 413, msg);
        return -1;
    }
    return 0;
}
