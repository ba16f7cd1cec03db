/* request.h: the gateway's request path, for the files that make it up.
 *
 * A proxied request goes through these stages, each in a file of its own
 * (docs/internals/gateway.md says what each takes and gives):
 *
 *    1. accept          pipeline.c, routes.c  the route; local answers
 *    2. resolve         resolve.c             `model` and its alias
 *    3. prepare         prepare.c             the prompt's tokens (may run off the loop)
 *    4. hash            prepare.c             the prompt's block hashes
 *    5. match           prepare.c             what each replica holds of them
 *    6. offer           choose.c              the candidates
 *    7. choose          choose.c              the policy's pick, under a lease
 *    8. forward         forward.c             the upstream request; retries
 *    9. stream back     stream.c              head, body and end, back to the client
 *   10. finish          finish.c              feedback to the index, metrics, the log
 *
 * Layers, bottom up; a file calls only into files of its own layer or below:
 *    request.c, finish.c, headers.c,         the request object and its lifecycle;
 *    predict.c                                the KV index's side of an attempt
 *    resolve.c, prepare.c, choose.c, stream.c
 *    forward.c
 *    pipeline.c, routes.c
 *    worker.c                                 the thread, its loop and listener
 * The stream stage tells the forward stage that an attempt may be retried through
 * gw_req.again, a callback that forward.c sets, so nothing calls upward.
 *
 * Everything here runs on one worker's loop; nothing is shared across threads
 * except through gw_app (see gateway.h).
 */
#ifndef GW_REQUEST_H
#define GW_REQUEST_H

#include "gateway/gateway.h"

typedef struct gw_req gw_req;
typedef struct gw_trace gw_trace;

/* One worker thread: its loop, listener, upstream pool and recycling lists. */
struct gw_worker {
    gw_app *app;
    uint32_t id;
    uv_loop_t loop;
    uv_thread_t thread;
    uv_async_t wake;
    uv_timer_t grace;
    irn_server *srv;
    irn_pool *pool;
    irn_cache *cache;  /* recycled net structs, for this loop */
    ir_freelist greqs; /* recycled gw_req */
    ir_rng rng;
    _Atomic uint64_t stop_grace_ns; /* set by gw_worker_stop, read on the loop */
    _Atomic int stop_requested;
    bool stopping, started;
    bool cutting;  /* the drain's time is up: the connections left are closed by the gateway */
    uint64_t live; /* requests in this worker */
    int port;
    /* Attempts still waiting for their response head (stream.c moves those whose
     * replica the health checks mark down); recheck is set by gw_worker_recheck. */
    gw_req *waiting;
    _Atomic int recheck;
    /* Before each poll: the CPU time of the turn of the loop that ends there. */
    uv_prepare_t turn;
    struct iro_series *turn_cpu;
    uint64_t turn_start; /* the thread's CPU clock at the last poll */
    /* A moving average of how long this worker's tokenizer.json bodies took to
     * prepare, wherever they ran (prepare.c); 0: none measured yet. */
    double prep_avg_ns;
};

/* The body sent on, as parts: the client's bytes before `model`'s value, the
 * new value (in the request's arena), the client's bytes after it. */
#define GW_SPLICE_PARTS 3

/* Another attempt may be made: the last one failed before any byte reached the
 * client. status and msg are the answer to give when no attempt is left. */
typedef void (*gw_again_fn)(gw_req *r, int status, const char *msg);

/* The stage after an asynchronous one (prepare) resumes the request with this. */
typedef void (*gw_step_fn)(gw_req *r);

/* Where a tokenizer.json model's body is prepared (prepare.c): on the event loop
 * when it is at most tokenizer.inline_bytes, or at most inline_warm_bytes while
 * avg, the worker's moving average of preparation times (0: none yet), is under
 * inline_warm; else on a tokenizer thread. gw_prep_average folds one more
 * preparation time (ns) into avg (a weight of 1/8; the first sets it). */
bool gw_prep_on_loop(const gw_tokenizer_cfg *c, size_t body_len, double avg);
double gw_prep_average(double avg, uint64_t ns);

/* The prompt, as far as the gateway follows it (prepare.c). Its arrays are the
 * request's, freed by gw_prompt_free. */
typedef enum {
    GW_PREDICT_NONE,        /* the model has no tokenizer */
    GW_PREDICT_OK,          /* tokenized, hashed and matched */
    GW_PREDICT_UNSUPPORTED, /* a request the tokenizer does not follow (a batch, a chat
                               without a template the gateway renders) */
    GW_PREDICT_INVALID,     /* the engine will refuse it (no prompt, bad messages) */
    GW_PREDICT_TEMPLATE,    /* the chat template refused it, or ran past a bound */
    GW_PREDICT_BUSY,        /* the tokenizer queue was full (tokenizer.max_queue) */
    GW_PREDICT_SLOW,        /* it waited past tokenizer.max_wait for a thread */
    GW_PREDICT_TOO_LARGE,   /* a tokenizer.json model's body over tokenizer.max_body_bytes */
} gw_predict_state;
#define GW_PREDICT_STATES 8
/* The state's `result` in inferrail_tokenized_requests_total, the seed's names:
 * NONE is "unavailable", OK "tokenized", the rest their own in lower case.
 * (/admin/explain's `prediction` keeps its documented "none" and "ok".) */
const char *gw_predict_state_name(gw_predict_state s);

typedef struct gw_prompt {
    gw_predict_state state;
    irt_ids ids;        /* its tokens */
    ir_hash128 *hashes; /* its full blocks' chained hashes */
    size_t nhashes;     /* full blocks */
    size_t usable;      /* blocks an engine can report cached (irx_usable_blocks) */
    uint32_t *cached;   /* per replica slot: leading blocks the index says it holds */
    ir_buf text;        /* the text the engine will tokenize, when known */
    char *cache_salt;   /* the body's cache_salt (may hold NULs; NUL-terminated), or NULL */
    size_t cache_salt_len;
    char *user; /* the body's `user` (a session key, NUL-terminated), or NULL */
    size_t user_len;
} gw_prompt;

/* Stages 3 to 5 as pure steps on a body (the request's stages and /admin/explain
 * both use them). tokenize fills p (state NONE when m has no tokenizer); hash and
 * match do nothing unless the state is OK. gw_prompt_free frees what they made. */
/* t: the model's tokenizer (gw_model_toks_take), NULL when it has none. */
void gw_prompt_tokenize(const gw_tokset *t, const char *body, size_t len, bool chat, gw_prompt *p);
/* Whether a body of len bytes is too large to predict with t (a tokenizer.json,
 * over tokenizer.max_body_bytes): it routes as GW_PREDICT_TOO_LARGE. */
bool gw_prompt_too_large(const gw_app *app, const gw_tokset *t, size_t len);
void gw_prompt_hash(const gw_fleet *f, const gw_model *m, gw_prompt *p);
void gw_prompt_match(const gw_fleet *f, gw_prompt *p);
void gw_prompt_free(gw_prompt *p);

/* Bytes of the engine's body kept to read its usage from. */
#define GW_TAIL_BYTES 768

/* One client request through its attempts. It lives until the client's response
 * has ended and no upstream request or timer refers to it; gw_req_done frees it
 * then. Its memory: the struct (recycled per worker), the net request's arena
 * (headers, path, the spliced model name). */
struct gw_req {
    gw_worker *w;
    irn_request *req;
    irn_resp *resp; /* NULL once ended */
    const gw_model *model;
    const char *body; /* the client's body */
    size_t body_len;
    /* What is sent: the body with `model` rewritten, as parts that point into
     * body and the arena, valid across attempts; nparts 0: body as it is. */
    irn_part parts[GW_SPLICE_PARTS];
    size_t nparts;
    char rid[160];
    uint64_t arrival, deadline;
    /* The last attempt's send to its engine and that engine's response head (0: none
     * yet), for the access log's engine share of the request's time. */
    uint64_t up_sent, up_head;
    uint64_t prepare_start; /* when stage 3 began (inferrail_tokenize_seconds) */
    uint64_t prompt_tokens;
    int attempt;
    uint64_t tried[GW_MAX_REPLICAS / 64];
    gw_replica *rep;    /* the replica of the current lease */
    irp_policy *policy; /* the policy that chose it (a reload may replace the model's) */
    const char *last_replica;
    bool lease_pending;
    irn_client *up;
    irn_header *fwd; /* headers for the engine, in the request's arena */
    size_t nfwd;
    uv_timer_t *timer;          /* backoff between attempts; NULL once closing */
    int timers_closing;         /* closed timers whose close callback is still due */
    struct gw_tokwork *tokwork; /* prepare on a tokenizer thread, until its callback */
    gw_again_fn again;          /* set by the forward stage */
    bool head_sent, client_gone, retry_on_done, paused;
    bool cut; /* gone because the drain's time ran out (client_gone is set too) */
    /* In w->waiting (an attempt sent, no head yet); moving: cancelled because its
     * replica went down, to be sent elsewhere at once; sse: the engine's answer is
     * an event stream (a stall mid-stream ends it with an error event). */
    bool waiting, moving, move_now, sse;
    gw_req *wprev, *wnext;
    char sse_end[4]; /* an event stream's last 4 bytes sent, oldest first */
    uint8_t sse_seen;
    int last_status; /* the last retryable engine answer, for the final error */
    int up_status;   /* the running attempt's engine status; 0: no answer yet */
    int status;      /* what the client got, for the access log */
    int last_err;
    /* What the gateway knows of the prompt (prepare.c), when the model is tokenized. */
    gw_prompt prompt;
    irx_rec rec;               /* what the current attempt recorded in the KV index */
    uint64_t predicted_cached; /* the prediction for the current attempt's replica */
    gw_lease_tokens lease;     /* what the current lease counts */
    char tail[GW_TAIL_BYTES];  /* the last bytes of the engine's body (for its usage) */
    size_t tail_len;
    const gw_replica *last_rep; /* the replica of the last attempt, for the metrics */
    bool streamed;              /* the engine answers with an event stream */
    bool unary; /* the body does not ask for a stream: the head comes after the whole answer */
    bool first_byte_seen; /* its TTFT was recorded */
    bool aborted;         /* the engine broke the response after it started */
    gw_trace *tr;         /* the spans of a sampled request (trace.c), owned; else NULL */
};

/* ---- request.c: the object and its lifecycle ---------------------------------------- */

/* A new request (recycled when the worker has one), with its id, deadline and the
 * response's abort and drain hooks set. NULL when out of memory: nothing was sent. */
gw_req *gw_req_new(gw_worker *w, irn_request *req, irn_resp *resp);

/* The one way to fail a request: answers the client with an error in the OpenAI
 * shape (when it still has a response), counts it and frees the request if nothing
 * else refers to it. r must not be used afterwards. type NULL: the status's
 * default; extra: headers added to x-request-id (up to 6). */
void gw_req_fail(gw_req *r, int status, const char *msg);
void gw_req_fail_with(gw_req *r, int status, const char *type, const char *msg,
                      const irn_header *extra, size_t nextra);

/* Answers with an error and counts it, but leaves the freeing to the caller, who
 * still refers to r (an upstream callback, before gw_req_done). */
void gw_req_answer_error(gw_req *r, int status, const char *type, const char *msg,
                         const irn_header *extra, size_t nextra);

/* Frees r when nothing refers to it any more (the response ended, no upstream
 * request, no timer); finish (finish.c) runs first. Safe to call at any time, but
 * r must not be used after a call that may have freed it. */
void gw_req_done(gw_req *r);

/* Counts the client's leaving, once. */
void gw_req_mark_gone(gw_req *r);
/* Whether the client left, asking the net layer too (see request.c). */
bool gw_req_client_left(gw_req *r);
/* Ends the client's response cleanly, when it still has one. */
void gw_req_end_client(gw_req *r);
/* Gives the lease on r->rep back. */
void gw_req_release(gw_req *r);
/* Closes the backoff timer (if any); gw_req_done waits for its close callback. */
void gw_req_close_timer(gw_req *r);
/* Puts r in its worker's list of attempts waiting for a head, or takes it out
 * (either is a no-op when already done). */
void gw_req_wait_head(gw_req *r);
void gw_req_unwait(gw_req *r);

/* ---- metrics.c: recording, on the worker's thread, lock-free ----------------------- */
/* A lease was taken on rep after ns of choosing (stage 7). */
void gw_metrics_decision(gw_req *r, const gw_replica *rep, uint64_t ns);
/* The first body byte of a streamed response went to the client. */
void gw_metrics_first_byte(gw_req *r);
void gw_metrics_retry(gw_req *r);
void gw_metrics_disconnect(gw_req *r);
/* The prepare stage's outcome (r->prompt.state). */
void gw_metrics_tokenized(gw_req *r);
/* The gateway answered status itself. */
void gw_metrics_error(gw_req *r, int status);
/* An error answered before any model was known (the server's own 400, 408, 413 and
 * 431, a wrong method's 405, an unknown route's 404 as reason route_not_found):
 * counted under model "none". */
void gw_metrics_error_unrouted(gw_app *app, int status);
/* The request's one outcome and its duration, on the replica of its last attempt. */
void gw_metrics_finish(gw_req *r, const gw_replica *last);

/* inferrail_responses_total: every answer the client port gives, by class. */
void gw_count_response(gw_stats *st, int status);
/* The id a response carries: the client's x-request-id when well formed, else a
 * new one. req is NULL for a request the server could not read. */
void gw_request_id(gw_worker *w, const irn_request *req, char *out, size_t n);

/* ---- finish.c ------------------------------------------------------------------------ */
/* The last stage, once per request, just before it is freed: the access log (and,
 * as they come, the index's feedback and per-request metrics). */
void gw_finish(gw_req *r);

/* ---- headers.c ------------------------------------------------------------------------ */
/* Whether header h (one of hs[0..n)) stops at the gateway: hop-by-hop by RFC 9110
 * (7.6.1: the fixed list, and every header a Connection header names), or one the
 * gateway sets itself (host, content-length, expect, x-request-id). */
bool gw_header_stops_here(const irn_header *hs, size_t n, const irn_header *h);
/* r->fwd: the client's headers that go on to the engine, plus x-request-id, in the
 * request's arena. -1 when the arena is out of room. */
int gw_headers_for_engine(gw_req *r);
/* The engine's response headers that go on to the client, plus x-request-id and
 * x-inferrail-replica, in the arena; *cl gets the engine's Content-Length (-1: none).
 * NULL when out of room. */
irn_header *gw_headers_for_client(gw_req *r, const irn_header *h, size_t n, size_t *nout,
                                  int64_t *cl);

/* ---- predict.c ------------------------------------------------------------------------ */
/* Records r's prompt on r->rep in the KV index (the attempt was sent); its blocks
 * stay pinned until gw_predict_release or gw_predict_undo. A prompt of whole blocks
 * that the replica holds entirely is recorded one block short: the engine
 * recomputes its last block in a fresh block and leaves the cached one where it
 * was (counted as an extra block at release). The blocks the engine takes at
 * admission beyond those (the trailing partial block, the first output token's
 * block) are reserved in the index at once. */
void gw_predict_record(gw_req *r);
/* Takes back what the current attempt recorded: the engine refused it, answered
 * with an error, or failed before answering. */
void gw_predict_undo(gw_req *r);
/* The engine ran the current attempt and freed its blocks (it completed, or it was
 * cut off after the head): irx_release with the blocks it spent beyond the
 * recorded prompt blocks, ceil((prompt + completion) / block_size) - recorded, as
 * the simulator and vLLM hold them (the trailing partial block and the decode
 * blocks). The completion comes from usage.completion_tokens in the body's tail;
 * without usage (a stream without include_usage, or cut off) it is taken as 1
 * token, which undercounts decode blocks: later predictions on that replica may
 * then be too high until the closed loop corrects them. */
void gw_predict_release(gw_req *r);
/* The last `"completion_tokens":N` in a body's tail; -1 if there is none. */
int64_t gw_reported_completion(const char *tail, size_t len);
/* Keeps the last GW_TAIL_BYTES of the engine's body, where its usage is. */
void gw_predict_keep_tail(gw_req *r, const char *data, size_t len);
/* The engine's usage.prompt_tokens_details.cached_tokens in a body's tail; -1 if there
 * is no usage, GW_USAGE_NO_DETAILS if its details are null. */
#define GW_USAGE_NO_DETAILS (-2)
int64_t gw_reported_cached(const char *tail, size_t len);
/* An attempt ended without error: if the engine answered 2xx (a refusal ran none of
 * the prompt), counts the prediction against the engine's report,
 * and corrects the index when the engine held less. */
void gw_predict_feedback(gw_req *r);

/* ---- resolve.c ------------------------------------------------------------------------- */
/* What the body's `model` resolves to. Pure: no request, no allocation kept. */
typedef struct gw_resolution {
    const gw_model *model; /* NULL: answer `status` with `message` */
    int status;
    const char *type; /* the error's type; NULL: the status's default */
    const char *message;
    bool rewrite; /* the body must name model->cfg->name instead */
    bool found;   /* `model` is present (rewrite its value) or not (insert it) */
    bool streams; /* the body asks for a streamed answer ("stream": true) */
    ir_json_span span;
    char text[GW_SHOWN_NAME * 3 + 96]; /* holds message when it is built (a NUL shows in 3 bytes) */
} gw_resolution;
void gw_resolve_model(const gw_fleet *f, const char *body, size_t len, gw_resolution *out);
/* The body with its top-level `model` replaced by the JSON string `name` (found) or
 * inserted as the first member (absent), as the tests' reference (tests/fuzz/splice_model.h) writes
 * it, but as parts that point into body and a short piece (the new value) made in arena. -1 when
 * the arena is full. */
int gw_splice_parts(const char *body, size_t len, const ir_json_span *sp, bool found,
                    const char *name, ir_arena *arena, irn_part out[GW_SPLICE_PARTS],
                    size_t *nparts);
/* Stage 2: resolves r's model and rewrites its body as needed. 0: go on; -1: the
 * request was answered (and is gone). */
int gw_stage_resolve(gw_req *r);

/* ---- prepare.c ------------------------------------------------------------------------- */
/* Stage 3: the prompt's tokens. Calls next(r) once done, on r's loop: today at once;
 * with a tokenizer, from a worker pool for large bodies. */
void gw_stage_prepare(gw_req *r, gw_step_fn next);
/* Stage 4: the prompt's block hashes (nothing yet: no KV index). */
void gw_stage_hash(gw_req *r);
/* Stage 5: each replica's predicted cached blocks (nothing yet: no KV index). */
void gw_stage_match(gw_req *r);

/* ---- choose.c -------------------------------------------------------------------------- */
typedef enum { GW_CHOSEN, GW_NONE_HEALTHY, GW_ALL_FULL } gw_choice;
/* Stages 6 and 7: offers the policy the candidates (untried replicas first) and
 * takes a lease on its pick; a pick that lost a race for its last slot is dropped
 * and the policy asked again. On GW_CHOSEN, r->rep holds the lease. */
gw_choice gw_choose(gw_req *r);
/* What the policy is told of r (valid while r's prompt is). */
void gw_policy_request(gw_req *r, irp_request *q);
/* The request's session key (cost_model's session affinity): the header
 * x-session-id when present and not empty, else the body's `user` (p->user, known
 * when the model's prompts are tokenized), else none (NULL, 0). Points into hs or
 * p. */
#define GW_SESSION_HEADER "x-session-id"
void gw_session_of(const irn_header *hs, size_t n, const gw_prompt *p, const char **s, size_t *len);
void gw_policy_request_of(const gw_prompt *p, uint64_t prompt_tokens, uint32_t block_size,
                          ir_rng *rng, irp_request *q);
/* Sets each candidate's predicted_cached_tokens from r's match (stage 5). */
void gw_predictions(const gw_fleet *f, const gw_prompt *p, irp_candidate *cand, size_t n);

/* ---- stream.c -------------------------------------------------------------------------- */
/* Stage 9: the upstream request's callbacks. They stream the engine's answer back,
 * and end each attempt: success, a failure the client sees, or r->again. */
extern const irn_client_cbs gw_stream_cbs;
/* The client's write queue drained: the engine may send again. */
void gw_stream_on_drain(irn_resp *resp, void *ud);
/* Cancels every attempt of w still waiting for a head on a replica that the health
 * checks marked down; each goes to another replica at once (nothing reached its
 * client yet) without counting against retry.max_attempts. */
void gw_stream_move_hung(gw_worker *w);

/* ---- forward.c ------------------------------------------------------------------------- */
/* Stage 8: one attempt: choose a replica, send the request to it. On failure before
 * the first byte, backs off and tries again (r->again) while attempts and time
 * remain. r may be gone when it returns. */
void gw_forward(gw_req *r);

/* ---- pipeline.c, routes.c ------------------------------------------------------------- */
/* The net server's callbacks for the client port (pipeline.c). */
void gw_on_request(void *ud, irn_request *req, irn_resp *resp);
int gw_on_headers(void *ud, irn_request *req);
void gw_on_error(void *ud, const irn_request *req, irn_error_answer *e);

/* GW_ROUTE_PREFLIGHT: a browser's CORS preflight (OPTIONS with Origin and
 * Access-Control-Request-Method) on a route the gateway has. */
typedef enum {
    GW_ROUTE_NONE,
    GW_ROUTE_PROXY,
    GW_ROUTE_LOCAL,
    GW_ROUTE_BAD_METHOD,
    GW_ROUTE_PREFLIGHT
} gw_route;
/* routes.c: which route a request takes; *allow gets the methods it accepts. */
gw_route gw_route_of(const irn_request *req, const char **allow);
/* Whether a proxied path's prompt is tokenized and predicted (/v1/chat/completions and
 * /v1/completions); vLLM's other POST routes that name a model in a JSON body
 * (/v1/responses, /tokenize, /v1/embeddings, the pooling and scoring ones...) are
 * routed by load alone. */
bool gw_route_predicts(const char *path);
/* Dresses an answer given without an engine: the request id, and for a route the
 * gateway does not have, vLLM's 404/405 type, message and Allow. */
void gw_dress_answer(gw_worker *w, const irn_request *req, irn_error_answer *e);
/* Answers a request that is not proxied (a local route, 404, 405). */
void gw_answer_locally(gw_worker *w, irn_request *req, irn_resp *resp, gw_route k);

/* ---- explain.c ------------------------------------------------------------------------ */
/* POST /admin/explain: runs stages 2 to 7 on a body as a client would send it, and
 * writes the decision as JSON into out, forwarding and recording nothing. target is
 * the admin request's target (its ?path= says chat or completions). Returns the HTTP
 * status of the answer (out then holds an error body when it is not 200). */
int gw_explain(gw_app *app, const char *target, const char *body, size_t len, ir_buf *out);
/* A query value of n bytes (outside input: reads those n only), percent-decoded (%2F, as
 * clients' URL encoders write a '/'), into out (cap bytes, NUL-terminated); false when it
 * does not fit, an escape is cut or not hex, or it holds a NUL (fuzz_query_value). */
bool gw_query_value(const char *v, size_t n, char *out, size_t cap);

/* One JSON line for the decision log when r is sampled (decision.c): the
 * candidates c[0..n) offered, c[winner] chosen. */
void gw_decision_log(gw_req *r, const irp_candidate *c, size_t n, size_t winner);

/* Traces (trace.c). gw_trace_begin at a request's start when the gateway has a
 * tracer: sets r->tr when the trace is sampled. The others only with r->tr set:
 * gw_trace_route after a policy chose c[k] (the decision began at `since`);
 * gw_trace_headers as an attempt is sent: opens its upstream span and returns
 * hs[0..*nh) with the traceparent the engine gets (in the request's arena, or hs
 * itself when out of memory); gw_trace_finish ends and submits the spans and
 * frees r->tr. */
void gw_trace_begin(gw_req *r);
void gw_trace_route(gw_req *r, const irp_candidate *c, size_t n, size_t k, uint64_t since);
irn_header *gw_trace_headers(gw_req *r, irn_header *hs, size_t *nh);
void gw_trace_finish(gw_req *r);

#endif
