/* api.h: the simulator's HTTP API on top of the engine (internal to inferrail-sim). */
#ifndef IR_SIM_API_H
#define IR_SIM_API_H

#include "net/ir_net.h"
#include "sim/sim.h"

typedef enum {
    SIM_FAULT_NONE,
    SIM_FAULT_CLOSE,       /* close the connection without answering */
    SIM_FAULT_HANG,        /* never answer */
    SIM_FAULT_DELAY,       /* wait delay_ms, then answer normally */
    SIM_FAULT_STATUS,      /* answer `status` with an error body */
    SIM_FAULT_REFUSE,      /* stop listening for delay_ms: connections are refused */
    SIM_FAULT_DROP_EVENTS, /* the next `delay_ms` KV event batches skip the PUB socket */
} sim_fault_mode;

typedef struct sim_fault {
    sim_fault_mode mode;
    uint64_t delay_ms;
    int status;
} sim_fault;

/* Parses "close", "hang", "delay=MS", "status=CODE", "refuse=MS" or "none". */
int sim_fault_parse(const char *spec, sim_fault *out);

/* ---- request parsing (no I/O: the fuzz target drives it) ---- */
typedef enum { SIM_KIND_CHAT, SIM_KIND_COMPLETION } sim_kind;

typedef struct sim_req {
    irt_ids ids; /* prompt token ids */
    bool stream, include_usage, continuous_usage;
    bool has_max_tokens;
    long long max_tokens;
    uint64_t seed;
    char *cache_salt; /* NULL: none */
} sim_req;

typedef struct sim_err {
    int status;       /* 400, 404, 500 */
    const char *type; /* "BadRequestError", "NotFoundError", ... */
    char param[64];   /* "" when none */
    char message[1024];
} sim_err;

/* Validates a request body as vLLM does and tokenizes its prompt. Returns 0
 * (free r with sim_req_free) or -1 with e filled. */
int sim_req_parse(const sim_cfg *cfg, sim_kind kind, const char *body, size_t len, sim_req *r,
                  sim_err *e);
void sim_req_free(sim_req *r);

typedef struct sim_api sim_api;

typedef struct sim_api_hooks {
    /* Asked to stop (on) or resume listening; for_ms > 0 resumes by itself. */
    void (*on_refuse)(void *ud, uint64_t for_ms, bool on);
    /* Test hook: a validated inference request is about to be submitted;
     * returning non-zero means the hook answered it. */
    int (*on_accept)(void *ud, irn_request *req, irn_resp *resp);
    void *ud;
} sim_api_hooks;

sim_api *sim_api_new(uv_loop_t *loop, sim_engine *eng, const sim_api_hooks *hooks);
/* The API of a data-parallel engine: n ranks (ranks[r] is rank r; not owned). A
 * request's X-data-parallel-rank header picks its rank; without one, vLLM's
 * internal balancer does (the least waiting * 4 + running). */
sim_api *sim_api_new_ranks(uv_loop_t *loop, sim_engine *const *ranks, uint32_t n,
                           const sim_api_hooks *hooks);
/* Aborts what is in flight (without touching responses, which the server
 * closes) and frees. */
void sim_api_free(sim_api *api);
/* The irn_server request callback. */
void sim_api_handle(sim_api *api, irn_request *req, irn_resp *resp);

#endif
