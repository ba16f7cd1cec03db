/* prepare.c: stages 3 to 5, what the gateway knows of the prompt before it chooses:
 * its tokens, their block hashes, and what each replica holds of them.
 *
 * A model with a tokenizer (models[].tokenizer) has its prompts tokenized as its
 * engines will tokenize them: builtin:sim for chats and completions, a tokenizer.json
 * for completions and for chats rendered with the model's chat template (irt_chat,
 * as vLLM prepares a chat) or, for gpt-oss, with openai-harmony (irt_harmony_ids). Anything else
 * routes without a prediction, its prompt length estimated from the body (four bytes a token). A
 * tokenizer.json model's bodies over tokenizer.inline_bytes are tokenized on the tokenizer threads,
 * the rest (and builtin:sim) on the loop; gw_stage_prepare calls next() when it is done. */
#include "gateway/request.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

void gw_prompt_free(gw_prompt *p) {
    irt_ids_free(&p->ids);
    free(p->hashes);
    free(p->cached);
    free(p->cache_salt);
    free(p->user);
    ir_buf_free(&p->text);
    memset(p, 0, sizeof *p);
}

/* A completion's prompt through a tokenizer.json: a string (or a list of one) with
 * the special tokens the engine adds (unless add_special_tokens is false), or token
 * ids as given. */
static int hf_prompt_ids(const gw_tokset *m, const json_t *body, gw_prompt *p) {
    json_t *v = json_object_get(body, "prompt");
    if (json_is_array(v) && json_array_size(v) == 1 && json_is_string(json_array_get(v, 0)))
        v = json_array_get(v, 0);
    bool add;
    if (irt_add_special_tokens(body, false, &add)) return IRT_EINVAL;
    if (json_is_string(v)) {
        if (ir_buf_append(&p->text, json_string_value(v), json_string_length(v))) return IRT_ENOMEM;
        return irt_encode_cached(m->hf, m->tcache, json_string_value(v), json_string_length(v), add,
                                 &p->ids);
    }
    if (!json_is_array(v) || json_array_size(v) == 0) return IRT_EINVAL;
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (!json_is_integer(x)) return IRT_EUNSUPPORTED; /* a batch of prompts */
        if (json_integer_value(x) < 0 || json_integer_value(x) > UINT32_MAX) return IRT_EINVAL;
        if (irt_ids_push(&p->ids, (uint32_t)json_integer_value(x))) return IRT_ENOMEM;
    }
    return IRT_OK;
}

/* A chat through the model's template, prepared as vLLM prepares it, then
 * tokenized as vLLM tokenizes chats: without adding special tokens (the
 * template wrote them) unless the body asks for add_special_tokens. */
static int hf_chat_ids(const gw_tokset *m, const json_t *body, gw_prompt *p) {
    char err[256];
    /* gpt-oss: vLLM renders the chat with openai-harmony, not a template */
    if (irt_chat_uses_harmony(m->chat))
        return irt_harmony_ids(m->hf, m->tcache, body, NULL, &p->ids, &p->text, err, sizeof err);
    bool add;
    if (irt_add_special_tokens(body, true, &add)) return IRT_EINVAL;
    int rc = irt_chat_render(m->chat, body, &p->text, err, sizeof err);
    if (rc != IRT_OK) return rc;
    return irt_encode_cached(m->hf, m->tcache, p->text.data ? p->text.data : "", p->text.len, add,
                             &p->ids);
}

static int prompt_ids(const gw_tokset *m, const json_t *body, bool chat, gw_prompt *p) {
    /* The engine cuts such a prompt to its last tokens, in a way that depends on its
     * version and tokenizer (special tokens kept or not): no prediction. */
    json_t *cut = json_object_get(body, "truncate_prompt_tokens");
    if (cut && !json_is_null(cut)) return IRT_EUNSUPPORTED;
    if (m->kind == GW_TOK_SIM) {
        const char *param, *msg;
        return irt_sim_prompt_ids(body, chat, &p->ids, &p->text, &param, &msg);
    }
    if (chat) return hf_chat_ids(m, body, p);
    return hf_prompt_ids(m, body, p);
}

/* A copy of the string member `key` with its length (a JSON string may hold NULs,
 * "a\u0000b"), NUL-terminated; NULL when absent, not a string, or out of memory. */
static char *string_member(const json_t *body, const char *key, size_t *len) {
    json_t *s = json_object_get(body, key);
    if (!json_is_string(s)) return NULL;
    size_t n = json_string_length(s);
    char *c = malloc(n + 1);
    if (!c) return NULL;
    memcpy(c, json_string_value(s), n);
    c[n] = '\0';
    *len = n;
    return c;
}

/* What of the body salts the chain (cache_salt) and keys a session (user). */
static void keep_cache_salt(gw_prompt *p, const json_t *body) {
    p->cache_salt = string_member(body, "cache_salt", &p->cache_salt_len);
    p->user = string_member(body, "user", &p->user_len);
    if (p->user && !p->user_len) free(p->user), p->user = NULL;
}

void gw_prompt_tokenize(const gw_tokset *m, const char *body, size_t len, bool chat, gw_prompt *p) {
    memset(p, 0, sizeof *p);
    if (!m) return;
    /* json.loads rules; a chat's messages seen before come parsed from the cache */
    json_error_t e;
    irt_parsed parsed;
    ir_skip_utf8_bom(&body, &len);
    irt_chat_loads(chat ? m->pcache : NULL, body, len, JSON_ALLOW_NUL, &e, &parsed);
    json_t *doc = parsed.doc;
    if (!json_is_object(doc)) {
        irt_parsed_release(&parsed);
        p->state = GW_PREDICT_INVALID;
        return;
    }
    /* The text is the body's strings plus the template's markers: bounded by twice
     * the body, and a margin for very short ones. */
    ir_buf_init(&p->text, 4 * len + 65536);
    /* room for about the body's size at once: the template writes the text in
     * many small pieces, which would otherwise grow it by doubling (no room is
     * fine: it grows) */
    (void)ir_buf_reserve(&p->text, len);
    keep_cache_salt(p, doc);
    int rc = prompt_ids(m, doc, chat, p);
    irt_parsed_release(&parsed);
    p->state = rc == IRT_OK             ? GW_PREDICT_OK
               : rc == IRT_EUNSUPPORTED ? GW_PREDICT_UNSUPPORTED
               : rc == IRT_ETEMPLATE    ? GW_PREDICT_TEMPLATE
                                        : GW_PREDICT_INVALID;
}

void gw_prompt_hash(const gw_fleet *f, const gw_model *m, gw_prompt *p) {
    if (p->state != GW_PREDICT_OK) return;
    uint32_t bs = f->block_size;
    size_t n = p->ids.len / bs;
    if (n > 0 && !(p->hashes = malloc(n * sizeof *p->hashes))) {
        p->state = GW_PREDICT_NONE;
        return;
    }
    ir_hash128 root = ir_block_hash_root_n(m->cfg->name, NULL, p->cache_salt, p->cache_salt_len);
    p->nhashes = ir_block_hash_chain(root, p->ids.ids, p->ids.len, bs, p->hashes, n);
    p->usable = irx_usable_blocks(p->nhashes, p->ids.len, bs);
}

void gw_prompt_match(const gw_fleet *f, gw_prompt *p) {
    if (p->state != GW_PREDICT_OK) return;
    /* cached[0..n): GPU blocks per replica slot; cached[n..2n): CPU-tier blocks after them */
    size_t n = f->nslots;
    p->cached = calloc(2 * n, sizeof *p->cached);
    if (!p->cached) {
        p->state = GW_PREDICT_NONE;
        return;
    }
    irx_lookup(f->index, p->hashes, p->usable, p->cached);
    if (f->kvsub) irx_ev_lookup_cpu(f->index, p->hashes, p->usable, p->cached, p->cached + n);
}

/* ---- the tokenizer threads ---------------------------------------------------------
 * A body over tokenizer.inline_bytes is prepared on libuv's thread pool (sized
 * tokenizer.workers at start-up), on a copy of the body: the client may leave
 * meanwhile, and the request stays alive (r->tokwork) until the callback, which
 * resumes the pipeline or, when the client has gone, lets the request go. */
typedef struct gw_tokwork {
    uv_work_t work;
    gw_req *r;
    gw_step_fn next;
    gw_tokset *toks; /* the model's tokenizer, held until tok_done */
    char *body;
    size_t len;
    bool chat;
    uint64_t queued_at, max_wait;
    uint64_t cost_ns; /* how long the thread took to prepare it */
    gw_prompt prompt; /* filled by the thread */
} gw_tokwork;

static void tok_work(uv_work_t *w) {
    gw_tokwork *t = w->data;
    if (ir_now_ns() - t->queued_at > t->max_wait) {
        memset(&t->prompt, 0, sizeof t->prompt);
        t->prompt.state = GW_PREDICT_SLOW;
        return;
    }
    uint64_t t0 = ir_now_ns();
    gw_prompt_tokenize(t->toks, t->body, t->len, t->chat, &t->prompt);
    t->cost_ns = ir_now_ns() - t0;
}

/* The worker's moving average of preparation times (bodies over inline_bytes). */
double gw_prep_average(double avg, uint64_t ns) {
    double x = (double)ns;
    return avg > 0 ? avg + (x - avg) / 8.0 : x;
}

static void prep_observe(gw_worker *w, uint64_t ns) {
    w->prep_avg_ns = gw_prep_average(w->prep_avg_ns, ns);
}

/* Whether a tokenizer.json model's body is prepared on the event loop: up to
 * inline_bytes always; up to inline_warm_bytes while this worker's recent bodies
 * were cheap (their pieces came from the caches), since the hop to a thread and
 * back costs two wake-ups, more than such a body's preparation on slow-waking
 * machines (about 200 us each here, ADR 0006; bench/results/gateway/tokenize).
 * A body that turns out costly raises the average, and the next ones hop again. */
bool gw_prep_on_loop(const gw_tokenizer_cfg *c, size_t body_len, double avg) {
    if (body_len <= c->inline_bytes) return true;
    return c->inline_warm_ns && body_len <= c->inline_warm_bytes && avg > 0 &&
           avg < (double)c->inline_warm_ns;
}

static void prepared(gw_req *r, gw_step_fn next) {
    /* tokenized, or an estimate (four bytes a token) */
    r->prompt_tokens = r->prompt.state == GW_PREDICT_OK ? r->prompt.ids.len : r->body_len / 4;
    next(r);
}

static void tok_done(uv_work_t *w, int status) {
    gw_tokwork *t = w->data;
    gw_req *r = t->r;
    atomic_fetch_sub_explicit(&r->w->app->stats.tokenize_queued, 1, memory_order_relaxed);
    r->tokwork = NULL;
    r->prompt = t->prompt;
    if (status) r->prompt.state = GW_PREDICT_SLOW; /* cancelled */
    if (!status && t->cost_ns) prep_observe(r->w, t->cost_ns);
    gw_step_fn next = t->next;
    gw_tokset_put(t->toks);
    free(t->body);
    free(t);
    if (!r->resp) { /* the client left while it waited: nothing more to do */
        gw_req_done(r);
        return;
    }
    prepared(r, next);
}

static bool prepare_on_thread(gw_req *r, gw_tokset *toks, bool chat, gw_step_fn next) {
    gw_app *app = r->w->app;
    if (atomic_fetch_add_explicit(&app->stats.tokenize_queued, 1, memory_order_relaxed) >=
        app->cfg.tokenizer.max_queue) {
        atomic_fetch_sub_explicit(&app->stats.tokenize_queued, 1, memory_order_relaxed);
        memset(&r->prompt, 0, sizeof r->prompt);
        r->prompt.state = GW_PREDICT_BUSY;
        return false;
    }
    gw_tokwork *t = calloc(1, sizeof *t);
    char *copy = t ? malloc(r->body_len ? r->body_len : 1) : NULL;
    if (!copy) {
        free(t);
        atomic_fetch_sub_explicit(&app->stats.tokenize_queued, 1, memory_order_relaxed);
        return false; /* tokenize inline */
    }
    memcpy(copy, r->body, r->body_len);
    *t = (gw_tokwork){.r = r,
                      .next = next,
                      .toks = toks,
                      .body = copy,
                      .len = r->body_len,
                      .chat = chat,
                      .queued_at = ir_now_ns(),
                      .max_wait = app->cfg.tokenizer.max_wait_ns};
    t->work.data = t;
    if (uv_queue_work(&r->w->loop, &t->work, tok_work, tok_done)) {
        free(copy);
        free(t);
        atomic_fetch_sub_explicit(&app->stats.tokenize_queued, 1, memory_order_relaxed);
        return false;
    }
    r->tokwork = t;
    return true;
}

const char *gw_predict_state_name(gw_predict_state s) {
    static const char *const names[GW_PREDICT_STATES] = {"unavailable", "tokenized", "unsupported",
                                                         "invalid",     "template",  "busy",
                                                         "slow",        "too_large"};
    return (unsigned)s < GW_PREDICT_STATES ? names[s] : "unavailable";
}

bool gw_prompt_too_large(const gw_app *app, const gw_tokset *t, size_t len) {
    return t && t->kind == GW_TOK_HF && len > app->cfg.tokenizer.max_body_bytes;
}

void gw_stage_prepare(gw_req *r, gw_step_fn next) {
    r->prepare_start = ir_now_ns();
    if (!gw_route_predicts(r->req->path)) { /* routed by load alone */
        memset(&r->prompt, 0, sizeof r->prompt);
        prepared(r, next);
        return;
    }
    bool chat = strcmp(r->req->path, "/v1/chat/completions") == 0;
    /* the model's tokenizer now: a reload may replace it, this request keeps it */
    gw_tokset *toks = gw_model_toks_take(r->model);
    if (gw_prompt_too_large(r->w->app, toks, r->body_len)) {
        gw_tokset_put(toks);
        memset(&r->prompt, 0, sizeof r->prompt);
        r->prompt.state = GW_PREDICT_TOO_LARGE; /* its tokens would come too late to help */
        prepared(r, next);
        return;
    }
    /* builtin:sim costs less than a hop to a thread: it always stays on the loop */
    bool hf = toks && toks->kind == GW_TOK_HF;
    if (hf && !gw_prep_on_loop(&r->w->app->cfg.tokenizer, r->body_len, r->w->prep_avg_ns)) {
        if (prepare_on_thread(r, toks, chat, next)) return;
        if (r->prompt.state == GW_PREDICT_BUSY) {
            gw_tokset_put(toks);
            prepared(r, next);
            return;
        }
    }
    gw_prompt_tokenize(toks, r->body, r->body_len, chat, &r->prompt);
    if (hf && r->body_len > r->w->app->cfg.tokenizer.inline_bytes)
        prep_observe(r->w, ir_now_ns() - r->prepare_start);
    gw_tokset_put(toks);
    prepared(r, next);
}

void gw_stage_hash(gw_req *r) {
    gw_prompt_hash(&r->w->app->fleet, r->model, &r->prompt);
    gw_metrics_tokenized(r); /* its outcome, and the time stages 3 and 4 took */
}

void gw_stage_match(gw_req *r) {
    gw_prompt_match(&r->w->app->fleet, &r->prompt);
}
