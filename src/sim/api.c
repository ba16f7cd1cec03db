/* api.c: the simulator's OpenAI-compatible HTTP API, shaped like vLLM's
 * server (field order, nulls and omissions as in tests/fixtures/vllm). */
#include "sim/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SIM_VLLM_VERSION "0.10.1.1"

/* One inference request in flight. Owned by the API; freed once both the
 * response ended and the engine let go of the sequence. */
typedef struct inflight {
    sim_api *api;
    irn_resp *resp;
    sim_seq *seq; /* NULL once finished or aborted */
    sim_kind kind;
    bool stream, include_usage, continuous_usage;
    char id[160];
    char model[256];
    long long created;
    size_t prompt_len, cached, target;
    ir_buf text;    /* non-streamed output */
    ir_buf chunk;   /* scratch for one SSE event's JSON */
    ir_buf pending; /* SSE events not yet written: one write per engine step */
    uint32_t *out;  /* output ids, kept for the final response */
    size_t nout;
    struct inflight *next, *prev;
    sim_engine *eng; /* the data-parallel rank serving it */
} inflight;

/* vLLM's internal data-parallel balancer (DPLBAsyncMPClient, vllm/v1/engine/
 * core_client.py): each rank's (waiting, running) as last published (every 100 ms
 * by vLLM's DP coordinator), plus one waiting for every request sent there since. */
#define SIM_LB_REFRESH_NS (100ull * 1000000ull)
typedef struct sim_lb {
    uint64_t at_ns; /* when the counts were taken; 0: never */
    uint32_t waiting[SIM_DP_MAX], running[SIM_DP_MAX];
} sim_lb;

struct sim_api {
    uv_loop_t *loop;
    sim_engine *eng; /* rank 0 */
    sim_engine *ranks[SIM_DP_MAX];
    uint32_t nranks;
    sim_lb lb;
    const sim_cfg *cfg;
    long long started;
    ir_rng rng;
    inflight *live; /* every inflight, for shutdown */
    /* the fault switch set by the admin route */
    sim_fault fault;
    uint64_t fault_left; /* requests left to affect; UINT64_MAX = until cleared */
    sim_api_hooks hooks;
};

/* ---- small helpers ----------------------------------------------------------------- */

static void jstr(ir_buf *b, const char *s) {
    ir_json_append_string(b, s, strlen(s));
}

static int send_json(irn_resp *resp, int status, ir_buf *body) {
    return irn_resp_send(resp, status, "application/json", body->data ? body->data : "", body->len,
                         NULL, 0);
}

/* {"error":{"message":...,"type":...,"param":...,"code":status}} */
static void send_error(irn_resp *resp, int status, const char *type, const char *param,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void send_error(irn_resp *resp, int status, const char *type, const char *param,
                       const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_buf b;
    ir_buf_init(&b, 0);
    ir_buf_append_str(&b, "{\"error\":{\"message\":");
    jstr(&b, msg);
    ir_buf_append_str(&b, ",\"type\":");
    jstr(&b, type);
    ir_buf_append_str(&b, ",\"param\":");
    if (param)
        jstr(&b, param);
    else
        ir_buf_append_str(&b, "null");
    ir_buf_appendf(&b, ",\"code\":%d}}", status);
    send_json(resp, status, &b);
    ir_buf_free(&b);
}

static bool served(const sim_cfg *c, const char *model) {
    for (size_t i = 0; i < c->nmodel_names; i++)
        if (strcmp(c->model_names[i], model) == 0) return true;
    return false;
}

static void random_hex(ir_rng *r, char *out, size_t nhex) {
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < nhex; i++) out[i] = hx[ir_rng_below(r, 16)];
    out[nhex] = '\0';
}

/* ---- response bodies ----------------------------------------------------------------- */

static void usage_json(ir_buf *b, const inflight *f, bool drop_nulls) {
    ir_buf_appendf(b, "{\"prompt_tokens\":%zu,\"total_tokens\":%zu,\"completion_tokens\":%zu",
                   f->prompt_len, f->prompt_len + f->nout, f->nout);
    bool details = f->api->cfg->prompt_tokens_details && f->cached > 0;
    if (details)
        ir_buf_appendf(b, ",\"prompt_tokens_details\":{\"cached_tokens\":%zu}", f->cached);
    else if (!drop_nulls)
        ir_buf_append_str(b, ",\"prompt_tokens_details\":null");
    ir_buf_append_str(b, "}");
}

static const char *finish_name(sim_finish why) {
    return why == SIM_FINISH_LENGTH ? "length" : "stop";
}

static void chunk_prefix(ir_buf *b, const inflight *f) {
    ir_buf_append_str(b, "{\"id\":");
    jstr(b, f->id);
    ir_buf_append_str(b, f->kind == SIM_KIND_CHAT ? ",\"object\":\"chat.completion.chunk\""
                                                  : ",\"object\":\"text_completion\"");
    ir_buf_appendf(b, ",\"created\":%lld,\"model\":", f->created);
    jstr(b, f->model);
}

/* Queues one SSE event holding the JSON in f->chunk. */
static void emit(inflight *f) {
    ir_sse_encode_data(&f->pending, f->chunk.data, f->chunk.len);
    ir_buf_reset(&f->chunk);
}

/* Writes the queued events at once. Returns false when the client cannot take
 * them (gone, or too slow to keep the queue bounded). */
static bool flush(inflight *f) {
    if (f->pending.len == 0) return true;
    int64_t r = irn_resp_write(f->resp, f->pending.data, f->pending.len);
    ir_buf_reset(&f->pending);
    return r >= 0;
}

static void stream_token_chunk(inflight *f, const char *piece, size_t n, const char *finish) {
    ir_buf *b = &f->chunk;
    chunk_prefix(b, f);
    if (f->kind == SIM_KIND_CHAT) {
        ir_buf_append_str(b, ",\"choices\":[{\"index\":0,\"delta\":{\"content\":");
        ir_json_append_string(b, piece, n);
        ir_buf_append_str(b, "},\"logprobs\":null,\"finish_reason\":");
        if (finish) {
            jstr(b, finish);
            ir_buf_append_str(b, ",\"stop_reason\":null}]");
        } else {
            ir_buf_append_str(b, "null}]");
        }
        if (f->continuous_usage) {
            ir_buf_append_str(b, ",\"usage\":");
            usage_json(b, f, true);
        }
    } else {
        ir_buf_append_str(b, ",\"choices\":[{\"index\":0,\"text\":");
        ir_json_append_string(b, piece, n);
        ir_buf_append_str(b, ",\"logprobs\":null,\"finish_reason\":");
        if (finish)
            jstr(b, finish);
        else
            ir_buf_append_str(b, "null");
        ir_buf_append_str(b, ",\"stop_reason\":null}],\"usage\":");
        if (f->continuous_usage)
            usage_json(b, f, true);
        else
            ir_buf_append_str(b, "null");
    }
    ir_buf_append_str(b, "}");
}

static void full_response(inflight *f, sim_finish why, ir_buf *b) {
    ir_buf_append_str(b, "{\"id\":");
    jstr(b, f->id);
    if (f->kind == SIM_KIND_CHAT) {
        ir_buf_appendf(b,
                       ",\"object\":\"chat.completion\",\"created\":%lld,\"model\":", f->created);
        jstr(b, f->model);
        ir_buf_append_str(b, ",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\","
                             "\"content\":");
        ir_json_append_string(b, f->text.data ? f->text.data : "", f->text.len);
        ir_buf_append_str(b, ",\"refusal\":null,\"annotations\":null,\"audio\":null,"
                             "\"function_call\":null,\"tool_calls\":[],\"reasoning_content\":null},"
                             "\"logprobs\":null,\"finish_reason\":");
        jstr(b, finish_name(why));
        ir_buf_append_str(b, ",\"stop_reason\":null}],\"service_tier\":null,"
                             "\"system_fingerprint\":null,\"usage\":");
        usage_json(b, f, false);
        ir_buf_append_str(b, ",\"prompt_logprobs\":null,\"kv_transfer_params\":null}");
    } else {
        ir_buf_appendf(b,
                       ",\"object\":\"text_completion\",\"created\":%lld,\"model\":", f->created);
        jstr(b, f->model);
        ir_buf_append_str(b, ",\"choices\":[{\"index\":0,\"text\":");
        ir_json_append_string(b, f->text.data ? f->text.data : "", f->text.len);
        ir_buf_append_str(b, ",\"logprobs\":null,\"finish_reason\":");
        jstr(b, finish_name(why));
        ir_buf_append_str(b, ",\"stop_reason\":null,\"prompt_logprobs\":null}],"
                             "\"service_tier\":null,\"system_fingerprint\":null,\"usage\":");
        usage_json(b, f, false);
        ir_buf_append_str(b, ",\"kv_transfer_params\":null}");
    }
}

/* ---- inflight lifetime ---------------------------------------------------------------- */

static void inflight_free(inflight *f) {
    sim_api *api = f->api;
    if (f->prev)
        f->prev->next = f->next;
    else
        api->live = f->next;
    if (f->next) f->next->prev = f->prev;
    ir_buf_free(&f->text);
    ir_buf_free(&f->chunk);
    ir_buf_free(&f->pending);
    free(f->out);
    free(f);
}

static void on_client_gone(irn_resp *resp, void *ud) {
    inflight *f = ud;
    if (f->seq) {
        sim_engine_abort(f->eng, f->seq);
        f->seq = NULL;
    }
    irn_resp_end(resp);
    inflight_free(f);
}

static void on_tokens(void *ud, sim_seq *s, size_t from, size_t to) {
    inflight *f = ud;
    const uint32_t *ids = sim_seq_output(s);
    if (from == 0) f->cached = sim_seq_cached_tokens(s);
    for (size_t i = from; i < to; i++) f->out[f->nout++] = ids[i];
    if (!f->stream) return;
    for (size_t i = from; i < to; i++) {
        char piece[3];
        int n = irt_sim_piece(ids[i], piece);
        if (n < 0) n = 0;
        /* The last token travels with finish_reason, as vLLM sends it. */
        if (i + 1 == f->target) break;
        stream_token_chunk(f, piece, (size_t)n, NULL);
        emit(f);
    }
    /* When this step ends the sequence, on_finish follows at once and sends
     * everything in one write. */
    if (to < f->target && !flush(f)) {
        /* The client cannot keep up or is gone: the engine finishes the abort
         * once this callback returns, and never calls back for it again. The
         * response is cut, not ended: ended, an h2 stream (or a chunked one) would
         * look complete, and its queued bytes would wait for a window. */
        sim_engine_abort(f->eng, s);
        f->seq = NULL;
        irn_resp_on_abort(f->resp, NULL, NULL);
        irn_resp_close(f->resp);
        inflight_free(f);
    }
}

static void on_finish(void *ud, sim_seq *s, sim_finish why) {
    inflight *f = ud;
    f->seq = NULL;
    if (!f->resp) {
        inflight_free(f);
        return;
    }
    if (f->stream) {
        char piece[3];
        int n = f->nout ? irt_sim_piece(f->out[f->nout - 1], piece) : 0;
        if (n < 0) n = 0;
        stream_token_chunk(f, piece, (size_t)n, finish_name(why));
        emit(f);
        if (f->include_usage) {
            chunk_prefix(&f->chunk, f);
            ir_buf_append_str(&f->chunk, ",\"choices\":[],\"usage\":");
            usage_json(&f->chunk, f, true);
            ir_buf_append_str(&f->chunk, "}");
            emit(f);
        }
        ir_buf_append_str(&f->pending, "data: [DONE]\n\n");
        irn_resp_finish(f->resp, f->pending.data, f->pending.len);
        ir_buf_reset(&f->pending);
    } else {
        irt_sim_decode(f->out, f->nout, &f->text);
        ir_buf body;
        ir_buf_init(&body, 0);
        full_response(f, why, &body);
        send_json(f->resp, 200, &body);
        ir_buf_free(&body);
    }
    inflight_free(f);
}

static const sim_seq_cbs seq_cbs = {on_tokens, on_finish};

/* ---- request validation ----------------------------------------------------------------- */

static int fail(sim_err *e, int status, const char *type, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(sim_err *e, int status, const char *type, const char *param, const char *fmt, ...) {
    e->status = status;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

#define BAD(e, param, ...) fail((e), 400, "BadRequestError", (param), __VA_ARGS__)

/* An optional integer field; a present value of another type is an error. */
static int opt_int(sim_err *e, json_t *body, const char *key, bool *has, long long *out) {
    json_t *v = json_object_get(body, key);
    *has = false;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v)) return BAD(e, key, "`%s` must be an integer.", key);
    *has = true;
    *out = json_integer_value(v);
    return 0;
}

static int opt_bool(sim_err *e, json_t *body, const char *key, bool *out) {
    json_t *v = json_object_get(body, key);
    *out = false;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) return BAD(e, key, "`%s` must be a boolean.", key);
    *out = json_is_true(v);
    return 0;
}

/* Rejects what the simulator cannot answer the way vLLM would. */
static int reject_unsupported(sim_err *e, json_t *body, sim_kind kind) {
    bool has;
    long long v;
    if (opt_int(e, body, "n", &has, &v)) return -1;
    if (has && v != 1) return BAD(e, "n", "`n` > 1 is not supported by the simulator.");
    if (opt_int(e, body, "best_of", &has, &v)) return -1;
    if (has && v != 1) return BAD(e, "best_of", "`best_of` is not supported by the simulator.");
    json_t *lp = json_object_get(body, "logprobs");
    bool want_lp = lp && !json_is_null(lp) && !json_is_false(lp);
    json_t *tlp = json_object_get(body, "top_logprobs");
    if (want_lp || (tlp && !json_is_null(tlp) && kind == SIM_KIND_CHAT &&
                    !(json_is_integer(tlp) && json_integer_value(tlp) == 0)))
        return BAD(e, want_lp ? "logprobs" : "top_logprobs",
                   "`logprobs` is not supported by the simulator.");
    json_t *plp = json_object_get(body, "prompt_logprobs");
    if (plp && !json_is_null(plp))
        return BAD(e, "prompt_logprobs", "`prompt_logprobs` is not supported by the simulator.");
    json_t *echo = json_object_get(body, "echo");
    if (echo && json_is_true(echo))
        return BAD(e, "echo", "`echo` is not supported by the simulator.");
    return 0;
}

/* The prompt's token ids: the chat template then builtin:sim, or the prompt
 * string, or ids given directly (irt_sim_prompt_ids, which the gateway shares). */
static int prompt_ids(sim_err *e, json_t *body, sim_kind kind, irt_ids *ids) {
    const char *param, *msg;
    int rc = irt_sim_prompt_ids(body, kind == SIM_KIND_CHAT, ids, NULL, &param, &msg);
    if (rc == IRT_OK) return 0;
    if (rc == IRT_ENOMEM) return fail(e, 500, "InternalServerError", NULL, "out of memory");
    if (rc == IRT_EUNSUPPORTED)
        return BAD(e, param, "Batched prompts are not supported by the simulator.");
    return BAD(e, param, "%s", msg);
}

int sim_req_parse(const sim_cfg *cfg, sim_kind kind, const char *data, size_t len, sim_req *r,
                  sim_err *e) {
    memset(r, 0, sizeof *r);
    memset(e, 0, sizeof *e);
    irt_ids_init(&r->ids);
    json_error_t jerr;
    /* as vLLM's json.loads reads it: numbers past 64 bits, NaN, Infinity */
    ir_skip_utf8_bom(&data, &len);
    json_t *body = irt_json_loads(data ? data : "", len, 0, &jerr);
    if (!body)
        return fail(e, 400, "BadRequestError", NULL, "JSON decode error: %s (line %d, column %d)",
                    jerr.text, jerr.line, jerr.column);
    int rc = -1;
    if (!json_is_object(body)) {
        BAD(e, NULL, "The request body must be a JSON object.");
        goto out;
    }
    json_t *m = json_object_get(body, "model");
    if (m && !json_is_null(m)) {
        if (!json_is_string(m)) {
            BAD(e, "model", "`model` must be a string.");
            goto out;
        }
        /* an empty name is the served model, as vLLM's _is_model_supported has it */
        if (json_string_length(m) && !served(cfg, json_string_value(m))) {
            fail(e, 404, "NotFoundError", "model", "The model `%s` does not exist.",
                 json_string_value(m));
            goto out;
        }
    }
    if (opt_bool(e, body, "stream", &r->stream)) goto out;
    json_t *so = json_object_get(body, "stream_options");
    if (so && !json_is_null(so)) {
        if (!r->stream) {
            BAD(e, "stream_options", "Stream options can only be defined when `stream=True`.");
            goto out;
        }
        if (!json_is_object(so)) {
            BAD(e, "stream_options", "`stream_options` must be an object.");
            goto out;
        }
        r->include_usage = json_is_true(json_object_get(so, "include_usage"));
        r->continuous_usage =
            r->include_usage && json_is_true(json_object_get(so, "continuous_usage_stats"));
    }
    if (reject_unsupported(e, body, kind)) goto out;
    json_t *salt = json_object_get(body, "cache_salt");
    if (salt && !json_is_null(salt)) { /* vLLM's check, on the raw value */
        if (!json_is_string(salt) || !json_string_length(salt)) {
            BAD(e, "cache_salt", "Parameter 'cache_salt' must be a non-empty string if provided.");
            goto out;
        }
        if (!(r->cache_salt = strdup(json_string_value(salt)))) {
            fail(e, 500, "InternalServerError", NULL, "out of memory");
            goto out;
        }
    }
    bool has_mct = false;
    long long mct = 0;
    if (opt_int(e, body, "max_tokens", &r->has_max_tokens, &r->max_tokens)) goto out;
    if (kind == SIM_KIND_CHAT && opt_int(e, body, "max_completion_tokens", &has_mct, &mct))
        goto out;
    if (has_mct) {
        r->has_max_tokens = true;
        r->max_tokens = mct;
    }
    const char *max_param = has_mct ? "max_completion_tokens" : "max_tokens";
    if (r->has_max_tokens && r->max_tokens < 1) {
        BAD(e, max_param, "max_tokens must be at least 1.");
        goto out;
    }
    bool has_seed;
    long long seed = 0;
    if (opt_int(e, body, "seed", &has_seed, &seed)) goto out;
    r->seed = (uint64_t)seed;
    if (prompt_ids(e, body, kind, &r->ids)) goto out;
    size_t n = r->ids.len;
    /* vLLM's chat path appends " None" to these two messages; completions do not. */
    const char *tail = kind == SIM_KIND_CHAT ? " None" : "";
    if (n >= cfg->max_model_len) {
        BAD(e, kind == SIM_KIND_CHAT ? "messages" : "prompt",
            "This model's maximum context length is %u tokens. However, your request has %zu "
            "input tokens. Please reduce the length of the input messages.%s",
            cfg->max_model_len, n, tail);
        goto out;
    }
    if (r->has_max_tokens && (unsigned long long)r->max_tokens > cfg->max_model_len - n) {
        BAD(e, max_param,
            "'max_tokens' or 'max_completion_tokens' is too large: %lld. This model's maximum "
            "context length is %u tokens and your request has %zu input tokens (%lld > %u - "
            "%zu).%s",
            r->max_tokens, cfg->max_model_len, n, r->max_tokens, cfg->max_model_len, n, tail);
        goto out;
    }
    rc = 0;
out:
    json_decref(body);
    if (rc) sim_req_free(r);
    return rc;
}

void sim_req_free(sim_req *r) {
    irt_ids_free(&r->ids);
    free(r->cache_salt);
    r->cache_salt = NULL;
}

/* The rank with the least waiting * 4 + running, from the counts as last taken,
 * scanning from rank 0 (vLLM's eng_start_index of a single API server); the
 * choice then counts one more waiting until the next refresh. */
static sim_engine *balance(sim_api *api) {
    sim_lb *lb = &api->lb;
    uint64_t now = ir_now_ns();
    if (!lb->at_ns || now - lb->at_ns >= SIM_LB_REFRESH_NS) {
        for (uint32_t r = 0; r < api->nranks; r++) {
            lb->waiting[r] = sim_engine_waiting(api->ranks[r]);
            lb->running[r] = sim_engine_running(api->ranks[r]);
        }
        lb->at_ns = now;
    }
    uint32_t best = 0;
    uint64_t best_score = UINT64_MAX;
    for (uint32_t r = 0; r < api->nranks; r++) {
        uint64_t score = (uint64_t)lb->waiting[r] * 4 + lb->running[r];
        if (score < best_score) best_score = score, best = r;
    }
    lb->waiting[best]++;
    return api->ranks[best];
}

/* The rank that serves a request: the one X-data-parallel-rank names (a value that
 * is not an integer is ignored, as vLLM's _get_data_parallel_rank does), else the
 * balancer's. NULL with e filled for a rank out of range (vLLM: a 400). */
static sim_engine *pick_rank(sim_api *api, irn_request *req, sim_err *e) {
    const char *h = irn_request_header(req, "x-data-parallel-rank");
    char *end = NULL;
    long long r = h ? strtoll(h, &end, 10) : 0;
    if (!h || !*h || *end) return balance(api);
    if (r >= 0 && r < (long long)api->nranks) return api->ranks[r];
    fail(e, 400, "BadRequestError", NULL, "data_parallel_rank %lld is out of range [0, %u).", r,
         api->nranks);
    return NULL;
}

static void handle_inference(sim_api *api, irn_request *req, irn_resp *resp, sim_kind kind) {
    sim_req pr;
    sim_err err;
    if (sim_req_parse(api->cfg, kind, req->body.data, req->body.len, &pr, &err)) {
        send_error(resp, err.status, err.type, err.param[0] ? err.param : NULL, "%s", err.message);
        return;
    }
    sim_engine *eng = pick_rank(api, req, &err);
    if (!eng) {
        send_error(resp, err.status, err.type, NULL, "%s", err.message);
        sim_req_free(&pr);
        return;
    }
    irt_ids ids = pr.ids;
    size_t n = ids.len;
    bool stream = pr.stream, include_usage = pr.include_usage, continuous = pr.continuous_usage;
    bool has_max = pr.has_max_tokens;
    long long max_tokens = pr.max_tokens;
    if (api->hooks.on_accept && api->hooks.on_accept(api->hooks.ud, req, resp)) goto out;

    inflight *f = calloc(1, sizeof *f);
    size_t cap = has_max ? (size_t)max_tokens : 256;
    if (f) f->out = malloc(cap * sizeof *f->out);
    if (!f || !f->out) {
        if (f) free(f);
        send_error(resp, 500, "InternalServerError", NULL, "out of memory");
        goto out;
    }
    f->api = api;
    f->eng = eng;
    f->resp = resp;
    f->kind = kind;
    f->stream = stream;
    f->include_usage = include_usage;
    f->continuous_usage = continuous;
    f->prompt_len = n;
    f->created = (long long)time(NULL);
    snprintf(f->model, sizeof f->model, "%s", api->cfg->model_names[0]);
    ir_buf_init(&f->text, 0);
    ir_buf_init(&f->chunk, 0);
    ir_buf_init(&f->pending, 0);
    const char *rid = irn_request_header(req, "x-request-id");
    const char *prefix = kind == SIM_KIND_CHAT ? "chatcmpl-" : "cmpl-";
    if (rid && *rid && strlen(rid) < 128) {
        snprintf(f->id, sizeof f->id, "%s%s", prefix, rid);
    } else {
        char hex[33];
        random_hex(&api->rng, hex, 32);
        snprintf(f->id, sizeof f->id, "%s%s", prefix, hex);
    }
    f->next = api->live;
    if (api->live) api->live->prev = f;
    api->live = f;
    sim_submit sub = {.prompt = ids.ids,
                      .prompt_len = n,
                      .max_tokens = has_max ? (size_t)max_tokens : 0,
                      .has_max_tokens = has_max,
                      .seed = pr.seed,
                      .cache_salt = pr.cache_salt,
                      .cbs = &seq_cbs,
                      .ud = f};
    f->seq = sim_engine_submit(eng, &sub);
    if (!f->seq) {
        send_error(resp, 500, "InternalServerError", NULL, "out of memory");
        inflight_free(f);
        goto out;
    }
    f->target = sim_seq_target(f->seq);
    if (f->target > cap) { /* cannot happen: without max_tokens the target is below 256 */
        sim_engine_abort(eng, f->seq);
        send_error(resp, 500, "InternalServerError", NULL, "output buffer too small");
        inflight_free(f);
        goto out;
    }
    irn_resp_on_abort(resp, on_client_gone, f);
    if (stream) {
        irn_header h[] = {{"content-type", 12, "text/event-stream; charset=utf-8", 32}};
        irn_resp_start(resp, 200, h, 1, -1);
        if (kind == SIM_KIND_CHAT) {
            chunk_prefix(&f->chunk, f);
            ir_buf_append_str(&f->chunk, ",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
                                         "\"assistant\",\"content\":\"\"},\"logprobs\":null,"
                                         "\"finish_reason\":null}]");
            if (continuous) {
                ir_buf_append_str(&f->chunk, ",\"usage\":");
                usage_json(&f->chunk, f, true);
            }
            ir_buf_append_str(&f->chunk, "}");
            /* Queued, not written: it goes out with the first token, after the
             * prefill, as vLLM sends its role chunk; the head goes now. */
            emit(f);
            irn_resp_send_head(f->resp);
        }
    }
out:
    irt_ids_free(&ids);
    free(pr.cache_salt);
}

/* ---- other routes --------------------------------------------------------------------- */

/* POST /tokenize, as vLLM answers it: a completion's `prompt` or a chat's `messages`
 * under builtin:sim, {"count", "max_model_len", "tokens", "token_strs": null}. */
static void handle_tokenize(sim_api *api, irn_request *req, irn_resp *resp) {
    json_t *body = json_loadb(req->body.data ? req->body.data : "", req->body.len, 0, NULL);
    if (!json_is_object(body)) {
        json_decref(body);
        send_error(resp, 400, "BadRequestError", NULL, "The request body must be a JSON object.");
        return;
    }
    irt_ids ids = {0};
    const char *param = NULL, *msg = "invalid prompt";
    bool chat = json_object_get(body, "messages") != NULL;
    int rc = irt_sim_prompt_ids(body, chat, &ids, NULL, &param, &msg);
    json_decref(body);
    if (rc != IRT_OK) {
        irt_ids_free(&ids);
        send_error(resp, 400, "BadRequestError", param, "%s", msg);
        return;
    }
    ir_buf b;
    ir_buf_init(&b, 0);
    ir_buf_appendf(&b, "{\"count\":%zu,\"max_model_len\":%u,\"tokens\":[", ids.len,
                   api->cfg->max_model_len);
    for (size_t i = 0; i < ids.len; i++) ir_buf_appendf(&b, i ? ",%u" : "%u", ids.ids[i]);
    ir_buf_append_str(&b, "],\"token_strs\":null}");
    irn_resp_send(resp, 200, "application/json", b.data, b.len, NULL, 0);
    ir_buf_free(&b);
    irt_ids_free(&ids);
}

/* POST /detokenize: {"tokens": [...]} back to {"prompt": text}. */
static void handle_detokenize(irn_request *req, irn_resp *resp) {
    json_t *body = json_loadb(req->body.data ? req->body.data : "", req->body.len, 0, NULL);
    json_t *t = json_object_get(body, "tokens");
    size_t n = json_is_array(t) ? json_array_size(t) : 0;
    uint32_t *ids = calloc(n ? n : 1, sizeof *ids);
    bool ok = json_is_array(t) && ids;
    for (size_t i = 0; ok && i < n; i++) {
        json_t *x = json_array_get(t, i);
        ok =
            json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) <= UINT32_MAX;
        if (ok) ids[i] = (uint32_t)json_integer_value(x);
    }
    ir_buf text, b;
    ir_buf_init(&text, 0);
    ir_buf_init(&b, 0);
    if (ok) ok = irt_sim_decode(ids, n, &text) == 0;
    if (ok) {
        ir_buf_append_str(&b, "{\"prompt\":");
        ir_json_append_string(&b, text.data ? text.data : "", text.len);
        ir_buf_append_str(&b, "}");
        irn_resp_send(resp, 200, "application/json", b.data, b.len, NULL, 0);
    } else {
        send_error(resp, 400, "BadRequestError", "tokens", "`tokens` must be a list of token ids.");
    }
    ir_buf_free(&b);
    ir_buf_free(&text);
    free(ids);
    json_decref(body);
}

static void handle_models(sim_api *api, irn_resp *resp) {
    const sim_cfg *c = api->cfg;
    ir_buf b;
    ir_buf_init(&b, 0);
    ir_buf_append_str(&b, "{\"object\":\"list\",\"data\":[");
    for (size_t i = 0; i < c->nmodel_names; i++) {
        char perm[33];
        random_hex(&api->rng, perm, 32);
        if (i) ir_buf_append_str(&b, ",");
        ir_buf_append_str(&b, "{\"id\":");
        jstr(&b, c->model_names[i]);
        ir_buf_appendf(&b, ",\"object\":\"model\",\"created\":%lld,\"owned_by\":\"vllm\",\"root\":",
                       api->started);
        jstr(&b, c->model_names[0]);
        ir_buf_appendf(
            &b,
            ",\"parent\":null,\"max_model_len\":%u,\"permission\":[{\"id\":\"modelperm-%s"
            "\",\"object\":\"model_permission\",\"created\":%lld,"
            "\"allow_create_engine\":false,\"allow_sampling\":true,"
            "\"allow_logprobs\":true,\"allow_search_indices\":false,"
            "\"allow_view\":true,\"allow_fine_tuning\":false,\"organization\":\"*\","
            "\"group\":null,\"is_blocking\":false}]}",
            c->max_model_len, perm, api->started);
    }
    ir_buf_append_str(&b, "]}");
    send_json(resp, 200, &b);
    ir_buf_free(&b);
}

static void handle_metrics(sim_api *api, irn_resp *resp) {
    ir_buf b;
    ir_buf_init(&b, 0);
    sim_metrics_render_ranks(api->ranks, api->nranks, &b);
    irn_resp_send(resp, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, NULL, 0);
    ir_buf_free(&b);
}

/* ---- faults ------------------------------------------------------------------------------ */

int sim_fault_parse(const char *spec, sim_fault *out) {
    memset(out, 0, sizeof *out);
    if (!spec || !*spec || strcmp(spec, "none") == 0) {
        out->mode = SIM_FAULT_NONE;
        return 0;
    }
    char mode[32];
    const char *eq = strchr(spec, '=');
    size_t ml = eq ? (size_t)(eq - spec) : strlen(spec);
    if (ml >= sizeof mode) return -1;
    memcpy(mode, spec, ml);
    mode[ml] = '\0';
    long long arg = 0;
    if (eq) {
        char *end;
        arg = strtoll(eq + 1, &end, 10);
        if (*end || end == eq + 1 || arg < 0) return -1;
    }
    if (strcmp(mode, "close") == 0 && !eq) {
        out->mode = SIM_FAULT_CLOSE;
    } else if (strcmp(mode, "hang") == 0 && !eq) {
        out->mode = SIM_FAULT_HANG;
    } else if (strcmp(mode, "delay") == 0 && eq) {
        out->mode = SIM_FAULT_DELAY;
        out->delay_ms = (uint64_t)arg;
    } else if (strcmp(mode, "status") == 0 && eq && arg >= 400 && arg <= 599) {
        out->mode = SIM_FAULT_STATUS;
        out->status = (int)arg;
    } else if (strcmp(mode, "drop-events") == 0 && eq && arg > 0) {
        out->mode = SIM_FAULT_DROP_EVENTS;
        out->delay_ms = (uint64_t)arg;
    } else if (strcmp(mode, "refuse") == 0 && eq && arg > 0) {
        /* Listening stops, so the admin route is unreachable too: the
         * duration is required and the listener comes back by itself. */
        out->mode = SIM_FAULT_REFUSE;
        out->delay_ms = (uint64_t)arg;
    } else {
        return -1;
    }
    return 0;
}

typedef struct delayed {
    uv_timer_t timer;
    sim_api *api;
    irn_request *req;
    irn_resp *resp;
    bool gone;
} delayed;

static void route(sim_api *api, irn_request *req, irn_resp *resp);

static void on_delayed_closed(uv_handle_t *h) {
    free(h->data);
}

static void on_delay_done(uv_timer_t *t) {
    delayed *d = t->data;
    if (d->gone)
        irn_resp_end(d->resp);
    else {
        irn_resp_on_abort(d->resp, NULL, NULL);
        route(d->api, d->req, d->resp);
    }
    uv_close((uv_handle_t *)&d->timer, on_delayed_closed);
}

static void on_delayed_gone(irn_resp *resp, void *ud) {
    ((delayed *)ud)->gone = true;
}

static void on_hung_gone(irn_resp *resp, void *ud) {
    irn_resp_end(resp);
}

/* Applies a fault to one request. Returns true when the request was taken care of. */
static bool apply_fault(sim_api *api, const sim_fault *f, irn_request *req, irn_resp *resp) {
    switch (f->mode) {
    case SIM_FAULT_NONE:
        return false;
    case SIM_FAULT_DROP_EVENTS: /* a request header asks it of this request's events */
        for (uint32_t r = 0; r < api->nranks; r++)
            sim_kvpub_drop(sim_engine_publisher(api->ranks[r]), f->delay_ms);
        return false;
    case SIM_FAULT_REFUSE:
        if (api->hooks.on_refuse) api->hooks.on_refuse(api->hooks.ud, f->delay_ms, true);
        irn_resp_close(resp);
        return true;
    case SIM_FAULT_CLOSE:
        irn_resp_close(resp);
        return true;
    case SIM_FAULT_HANG:
        irn_resp_on_abort(resp, on_hung_gone, NULL);
        return true;
    case SIM_FAULT_STATUS:
        send_error(resp, f->status, irn_status_reason(f->status), NULL,
                   "Injected fault: status %d.", f->status);
        return true;
    case SIM_FAULT_DELAY: {
        delayed *d = calloc(1, sizeof *d);
        if (!d) return false;
        d->api = api;
        d->req = req;
        d->resp = resp;
        uv_timer_init(api->loop, &d->timer);
        d->timer.data = d;
        irn_resp_on_abort(resp, on_delayed_gone, d);
        uv_timer_start(&d->timer, on_delay_done, f->delay_ms, 0);
        return true;
    }
    }
    return false;
}

static void handle_admin_fault(sim_api *api, irn_request *req, irn_resp *resp) {
    if (strcmp(req->method, "DELETE") == 0) {
        api->fault.mode = SIM_FAULT_NONE;
        if (api->hooks.on_refuse) api->hooks.on_refuse(api->hooks.ud, 0, false);
        irn_resp_send(resp, 200, "application/json", "{\"fault\":\"none\"}", 16, NULL, 0);
        return;
    }
    json_error_t e;
    json_t *body = json_loadb(req->body.data ? req->body.data : "", req->body.len, 0, &e);
    const char *spec = body ? ir_json_str(body, "fault") : NULL;
    sim_fault f;
    if (!spec || sim_fault_parse(spec, &f)) {
        send_error(resp, 400, "BadRequestError", "fault", "%s",
                   "expected {\"fault\": \"close|hang|delay=MS|status=CODE|refuse=MS|drop-events=N|"
                   "none\", "
                   "\"count\": N}");
        json_decref(body);
        return;
    }
    json_t *cnt = json_object_get(body, "count");
    if (f.mode == SIM_FAULT_DROP_EVENTS) { /* not a request fault: it acts once, on the events */
        json_decref(body);
        if (!sim_engine_publisher(api->eng)) {
            send_error(resp, 400, "BadRequestError", "fault", "%s",
                       "drop-events needs --kv-events-config");
            return;
        }
        for (uint32_t r = 0; r < api->nranks; r++) /* every rank's stream */
            sim_kvpub_drop(sim_engine_publisher(api->ranks[r]), f.delay_ms);
        irn_resp_send(resp, 200, "application/json", "{\"fault\":\"set\"}", 15, NULL, 0);
        return;
    }
    if (f.mode == SIM_FAULT_REFUSE) {
        json_decref(body);
        /* Stop listening first: once the client reads the answer, connects fail. */
        if (api->hooks.on_refuse) api->hooks.on_refuse(api->hooks.ud, f.delay_ms, true);
        irn_resp_send(resp, 200, "application/json", "{\"fault\":\"set\"}", 15, NULL, 0);
        return;
    }
    api->fault = f;
    api->fault_left = json_is_integer(cnt) && json_integer_value(cnt) > 0
                          ? (uint64_t)json_integer_value(cnt)
                          : UINT64_MAX;
    json_decref(body);
    irn_resp_send(resp, 200, "application/json", "{\"fault\":\"set\"}", 15, NULL, 0);
}

/* ---- routing -------------------------------------------------------------------------------- */

typedef struct route_def {
    const char *path;
    const char *method;
} route_def;

static const route_def routes[] = {
    {"/v1/chat/completions", "POST"},
    {"/v1/completions", "POST"},
    {"/v1/models", "GET"},
    {"/health", "GET"},
    {"/metrics", "GET"},
    {"/version", "GET"},
    {"/reset_prefix_cache", "POST"},
    {"/tokenize", "POST"},
    {"/detokenize", "POST"},
};

static void route(sim_api *api, irn_request *req, irn_resp *resp) {
    const char *p = req->path;
    bool known = false;
    for (size_t i = 0; i < IR_ARRAY_LEN(routes); i++) {
        if (strcmp(p, routes[i].path) != 0) continue;
        known = true;
        if (strcmp(req->method, routes[i].method) != 0) {
            char msg[64];
            snprintf(msg, sizeof msg, "Method Not Allowed");
            irn_header allow = {"allow", 5, routes[i].method, strlen(routes[i].method)};
            ir_buf b;
            ir_buf_init(&b, 0);
            irn_error_body(&b, 405, "Method Not Allowed", msg);
            irn_resp_send(resp, 405, "application/json", b.data, b.len, &allow, 1);
            ir_buf_free(&b);
            return;
        }
    }
    if (!known) {
        send_error(resp, 404, "Not Found", NULL, "Not Found");
        return;
    }
    if (strcmp(p, "/v1/chat/completions") == 0)
        handle_inference(api, req, resp, SIM_KIND_CHAT);
    else if (strcmp(p, "/v1/completions") == 0)
        handle_inference(api, req, resp, SIM_KIND_COMPLETION);
    else if (strcmp(p, "/v1/models") == 0)
        handle_models(api, resp);
    else if (strcmp(p, "/health") == 0)
        irn_resp_send(resp, 200, NULL, "", 0, NULL, 0);
    else if (strcmp(p, "/metrics") == 0)
        handle_metrics(api, resp);
    else if (strcmp(p, "/version") == 0)
        irn_resp_send(resp, 200, "application/json", "{\"version\":\"" SIM_VLLM_VERSION "\"}",
                      strlen("{\"version\":\"" SIM_VLLM_VERSION "\"}"), NULL, 0);
    else if (strcmp(p, "/tokenize") == 0)
        handle_tokenize(api, req, resp);
    else if (strcmp(p, "/detokenize") == 0)
        handle_detokenize(req, resp);
    else if (strcmp(p, "/reset_prefix_cache") == 0) {
        for (uint32_t r = 0; r < api->nranks; r++) /* vLLM resets every rank */
            sim_engine_reset_prefix_cache(api->ranks[r]);
        irn_resp_send(resp, 200, NULL, "", 0, NULL, 0);
    }
}

/* Fault requests to a simulator without --enable-faults are refused, never
 * ignored: the caller learns which flag it forgot. */
static bool refuse_fault(irn_request *req, irn_resp *resp) {
    bool admin = strcmp(req->path, "/admin/fault") == 0;
    if (!admin && !irn_request_header(req, "x-inferrail-fault")) return false;
    send_error(resp, 403, "PermissionDeniedError", admin ? "fault" : "x-inferrail-fault", "%s",
               "fault injection is off: start inferrail-sim with --enable-faults");
    return true;
}

/* A request a counted fault may take: a completion or a chat. The gateway's health
 * probes, model-card fetches and metric scrapes between a test's requests would use
 * its count up otherwise. */
static bool inference(const irn_request *req) {
    return strcmp(req->method, "POST") == 0 && (strcmp(req->path, "/v1/completions") == 0 ||
                                                strcmp(req->path, "/v1/chat/completions") == 0);
}

/* The admin route's fault for this request, if any: until cleared for every route;
 * counted, for the next inference requests only. */
static bool take_fault(sim_api *api, const irn_request *req, sim_fault *f) {
    if (api->fault.mode == SIM_FAULT_NONE || api->fault_left == 0) return false;
    if (api->fault_left != UINT64_MAX) {
        if (!inference(req)) return false;
        api->fault_left--;
    }
    *f = api->fault;
    if (api->fault_left == 0) api->fault.mode = SIM_FAULT_NONE;
    return true;
}

void sim_api_handle(sim_api *api, irn_request *req, irn_resp *resp) {
    if (!api->cfg->enable_faults && refuse_fault(req, resp)) return;
    if (api->cfg->enable_faults) {
        if (strcmp(req->path, "/admin/fault") == 0) {
            if (strcmp(req->method, "POST") && strcmp(req->method, "DELETE")) {
                irn_header allow = {"allow", 5, "POST, DELETE", 12};
                ir_buf b;
                ir_buf_init(&b, 0);
                irn_error_body(&b, 405, "Method Not Allowed", "Method Not Allowed");
                irn_resp_send(resp, 405, "application/json", b.data, b.len, &allow, 1);
                ir_buf_free(&b);
            } else {
                handle_admin_fault(api, req, resp);
            }
            return;
        }
        const char *h = irn_request_header(req, "x-inferrail-fault");
        if (h) {
            sim_fault f;
            if (sim_fault_parse(h, &f)) {
                send_error(resp, 400, "BadRequestError", "x-inferrail-fault", "%s",
                           "unknown fault in x-inferrail-fault");
                return;
            }
            if (apply_fault(api, &f, req, resp)) return;
        } else {
            sim_fault f;
            if (take_fault(api, req, &f) && apply_fault(api, &f, req, resp)) return;
        }
    }
    route(api, req, resp);
}

sim_api *sim_api_new(uv_loop_t *loop, sim_engine *eng, const sim_api_hooks *hooks) {
    return sim_api_new_ranks(loop, &eng, 1, hooks);
}

sim_api *sim_api_new_ranks(uv_loop_t *loop, sim_engine *const *ranks, uint32_t n,
                           const sim_api_hooks *hooks) {
    if (n == 0 || n > SIM_DP_MAX || !ranks[0]) return NULL;
    sim_api *api = calloc(1, sizeof *api);
    if (!api) return NULL;
    api->loop = loop;
    api->eng = ranks[0];
    memcpy(api->ranks, ranks, n * sizeof *ranks);
    api->nranks = n;
    sim_engine *eng = ranks[0];
    api->cfg = sim_engine_cfg(eng);
    api->started = (long long)time(NULL);
    ir_rng_seed(&api->rng, ir_now_ns() ^ (uint64_t)getpid());
    if (hooks) api->hooks = *hooks;
    return api;
}

void sim_api_free(sim_api *api) {
    if (!api) return;
    while (api->live) {
        inflight *f = api->live;
        if (f->seq) sim_engine_abort(f->eng, f->seq);
        f->seq = NULL;
        if (f->resp) irn_resp_on_abort(f->resp, NULL, NULL);
        inflight_free(f);
    }
    free(api);
}
