/* ir_net.h: the net module's public header.
 *
 * HTTP/1.1 and h2c (HTTP/2 over cleartext, with nghttp2) on libuv: a server
 * (used by the simulator and the gateway), a client with a per-loop connection
 * pool speaking either (gateway upstreams, benchmark, health checks), and the
 * socket-free HTTP/1.1 request parser both build on.
 *
 * Threading: every object here belongs to the loop (and so the thread) that
 * created it and must only be used from that thread. The multi-threaded model
 * is one loop per worker thread, each with its own irn_server listening on the
 * same port with `reuseport` set (after irn_listen_probe made sure no other
 * process holds it), and its own irn_pool. There are no globals.
 *
 * Contract (libuv style):
 *   - A call that takes a callback and returns an error never fires that
 *     callback. Callbacks never fire from inside the call that registered
 *     them; they fire from the loop.
 *   - Long-lived objects (irn_server, irn_pool, irn_client) are opaque; the
 *     caller owns them from creation until their close/done callback has
 *     returned, after which their memory is gone.
 *   - Every buffer is capped; the caps are in the cfg structs below.
 *
 * Errors are negative ints: libuv's UV_E* codes (bind/listen failures) or the
 * IRN_E* codes below. irn_strerror() names both.
 */
#ifndef IR_NET_H
#define IR_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include <uv.h>

#include "core/ir_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ------------------------------------------------------------- */
enum {
    IRN_EINVAL = -20001,    /* bad argument or call out of sequence */
    IRN_ENOMEM = -20002,    /* allocation failed or a cap was hit */
    IRN_ENOBUFS = -20003,   /* server: write queue full, try after on_drain */
    IRN_ECLOSED = -20004,   /* server: the client connection is gone */
    IRN_ESHUTDOWN = -20005, /* the server/pool is closing */
    /* client request outcomes (on_done) */
    IRN_ERESOLVE = -20010,         /* host name did not resolve */
    IRN_ECONNECT = -20011,         /* connect failed or was refused */
    IRN_ECONNECT_TIMEOUT = -20012, /* connect (incl. resolving) timed out */
    IRN_ECLOSED_EARLY = -20013,    /* closed before any response byte: retryable */
    IRN_EHEAD_TIMEOUT = -20014,    /* no complete response head within head_timeout */
    IRN_EIDLE_TIMEOUT = -20015,    /* no byte within idle_timeout mid-response */
    IRN_ECLOSED_MID = -20016,      /* closed after part of the response */
    IRN_EPARSE = -20017,           /* malformed response, or over a cap */
    IRN_ECANCELED = -20018,        /* irn_client_cancel or irn_pool_close */
};

/* Names an IRN_E* or UV_E* code. Never NULL. */
const char *irn_strerror(int err);

/* The scope id of an IPv6 zone (RFC 4007), as a host written fe80::1%zone carries
 * it: a number, or the index of the network interface of that name; 0 when it is
 * neither (an unknown interface, empty, or past 32 bits). A host with a zone
 * connects (and binds) with that scope id, and never with scope 0. */
unsigned irn_ip6_zone_index(const char *zone);

/* ---- headers -------------------------------------------------------------
 * Names and values are NUL-terminated as well as counted. */
typedef struct irn_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} irn_header;

/* Case-insensitive lookup of the first header named `name`; NULL if absent. */
const irn_header *irn_headers_find(const irn_header *h, size_t n, const char *name);

/* "OK", "Not Found", ...; "Unknown" for codes it does not know. */
const char *irn_status_reason(int status);

/* Appends the OpenAI/vLLM error body
 *   {"error":{"message":"...","type":"...","param":null,"code":<status>}}
 * `type` NULL picks the default: "BadRequestError" for 400, "NotFoundError" for
 * 404, "InternalServerError" for 500, else the HTTP reason phrase (the type
 * vLLM's HTTPException handler uses, e.g. "Payload Too Large"). */
int irn_error_body(ir_buf *out, int status, const char *type, const char *message);

/* ---- requests ------------------------------------------------------------
 * One parsed request. Owned by the server (or the parser until taken); the
 * handler reads it and must not modify it except `user`. Strings live in
 * `arena`, which the handler may also allocate from: everything is freed when
 * the response ends (irn_resp_end / irn_resp_send). */
typedef struct irn_request {
    const char *method; /* "GET", "POST", ... */
    const char *target; /* the raw request-target, "/v1/x?a=b" */
    const char *path;   /* target up to '?', not percent-decoded */
    const char *query;  /* after '?', "" when none */
    const irn_header *headers;
    size_t nheaders;
    ir_buf body;            /* the whole (de-chunked) body; len 0 when none */
    int64_t content_length; /* -1 when the request had no Content-Length */
    bool chunked;           /* the body came with Transfer-Encoding: chunked */
    bool keep_alive;        /* the connection may serve another request */
    bool expect_continue;   /* Expect: 100-continue with a body to come */
    uint8_t http_major, http_minor;
    const char *peer; /* "ip:port" of the client; "" outside the server */
    ir_arena *arena;
    void *user;              /* free for the handler */
    struct irn_cache *cache; /* where the request goes back when freed; NULL: free() */
} irn_request;

/* Case-insensitive header lookup; the value or NULL. */
const char *irn_request_header(const irn_request *req, const char *name);

/* ---- the socket-free HTTP/1.1 request parser -----------------------------
 * Fed arbitrary byte chunks; stops after the headers of each request and
 * after each complete request so that the caller can act (100-continue,
 * early rejection, answering in order). Its output never depends on how the
 * input is split. */
typedef struct irn_h1_limits {
    size_t max_header_bytes; /* request line + headers, raw bytes; 0: 64 KiB */
    size_t max_headers;      /* 0: 100 */
    size_t max_body_bytes;   /* 0: 16 MiB */
    size_t max_arena_bytes;  /* cap of each request's arena; 0: 64 MiB */
} irn_h1_limits;

typedef enum irn_h1_event {
    IRN_H1_MORE,    /* every byte consumed; feed more */
    IRN_H1_HEADERS, /* headers complete: irn_h1_parser_request() has them, no body yet */
    IRN_H1_REQUEST, /* a request is complete: take it with irn_h1_parser_take() */
    IRN_H1_ERROR,   /* bad input or a limit: see irn_h1_parser_error(); final */
} irn_h1_event;

typedef struct irn_h1_parser irn_h1_parser;

irn_h1_parser *irn_h1_parser_new(const irn_h1_limits *lim); /* NULL on OOM */
/* Requests come from (and go back to) this per-loop cache; see irn_cache_new. */
void irn_h1_parser_set_cache(irn_h1_parser *p, struct irn_cache *cache);
void irn_h1_parser_free(irn_h1_parser *p);
/* Parses from data; *consumed says how many bytes were used. Call again with
 * the rest (even an empty rest after IRN_H1_HEADERS: a request without a body
 * completes on the next call). After IRN_H1_REQUEST the next call first drops
 * the request unless it was taken. After IRN_H1_ERROR every call returns it. */
irn_h1_event irn_h1_parser_feed(irn_h1_parser *p, const char *data, size_t len, size_t *consumed);
/* The request being parsed (valid after IRN_H1_HEADERS), or NULL. */
irn_request *irn_h1_parser_request(irn_h1_parser *p);
/* After IRN_H1_REQUEST: hands the request to the caller (free it with
 * irn_request_free); the parser moves on to the next one. */
irn_request *irn_h1_parser_take(irn_h1_parser *p);
/* The HTTP status for the error (400, 413, 431) and a message; 0 when none. */
int irn_h1_parser_error(const irn_h1_parser *p, const char **message);
/* True when no byte of a next request has been seen (an idle connection). */
bool irn_h1_parser_idle(const irn_h1_parser *p);
void irn_request_free(irn_request *req);

/* ---- server ------------------------------------------------------------- */
typedef struct irn_server irn_server;
typedef struct irn_resp irn_resp;

/* Accepts (0) or rejects (an HTTP status >= 400) a request once its headers
 * are in. On rejection the server answers that status with an error body
 * without sending 100 Continue and closes the connection. */
typedef int (*irn_on_headers_cb)(void *ud, irn_request *req);
/* A complete request. The handler must eventually end `resp` exactly once
 * (irn_resp_end or irn_resp_send), now or later from any callback on this
 * loop, even after an abort. */
typedef void (*irn_on_request_cb)(void *ud, irn_request *req, irn_resp *resp);
typedef void (*irn_resp_cb)(irn_resp *resp, void *ud);
typedef void (*irn_close_cb)(void *ud);

/* An answer the server gives by itself: an on_headers rejection, or a request it
 * cannot take (400 bad syntax, 408 timeouts, 413 too large, 431 header limits). */
#define IRN_ERROR_MAX_HEADERS 8
typedef struct irn_error_answer {
    int status;          /* what is answered; read only */
    const char *type;    /* the error body's "type"; NULL: irn_error_body's default */
    const char *message; /* the error body's "message"; the server's text (or NULL) */
    irn_header headers[IRN_ERROR_MAX_HEADERS]; /* added to the response */
    size_t nheaders;
    char buf[256]; /* room for the callback's own strings, e.g. a generated id */
} irn_error_answer;
/* Lets the application dress such answers like its own (a request id, Allow):
 * it may add headers and pick the body's type and message. req: the request
 * when its head was read, else NULL. Strings must outlive the call: e->buf,
 * req's arena, or static. Framing headers (Content-Length, Transfer-Encoding,
 * Connection, Content-Type) are the server's and are dropped. */
typedef void (*irn_on_error_cb)(void *ud, const irn_request *req, irn_error_answer *e);

/* ---- per-loop recycling --------------------------------------------------
 * An optional cache of the structs that every request allocates (requests
 * with their body buffers and arenas, responses, upstream clients): freed
 * ones are kept and reused instead of going back to malloc. One per event
 * loop, used by that loop's thread only, given to its servers and pools
 * through their cfg. The caller owns it and frees it after everything that
 * was given it is gone (after uv_run returns). */
typedef struct irn_cache irn_cache;
irn_cache *irn_cache_new(void);
void irn_cache_free(irn_cache *c);

typedef struct irn_server_cfg {
    const char *host;             /* numeric or a name; NULL/"" = all IPv4 addresses */
    uint16_t port;                /* 0 picks a free port, see irn_server_port */
    bool reuseport;               /* SO_REUSEPORT: several loops may listen on the port */
    int backlog;                  /* 0: 511 */
    size_t max_header_bytes;      /* 0: 64 KiB -> 431 */
    size_t max_headers;           /* 0: 100 -> 431 */
    size_t max_body_bytes;        /* 0: 16 MiB -> 413 */
    size_t max_arena_bytes;       /* per request arena cap; 0: 64 MiB */
    uint64_t header_timeout_ns;   /* complete headers, and keep-alive idle; 0: 30 s */
    uint64_t body_timeout_ns;     /* whole body after the headers -> 408; 0: 60 s */
    size_t write_high_water;      /* irn_resp_write returns >= this: pause; 0: 256 KiB */
    size_t write_low_water;       /* on_drain fires below this; 0: 64 KiB */
    size_t max_write_queue;       /* writes refused (IRN_ENOBUFS) past this; 0: 8 MiB */
    size_t max_connections;       /* accepted then closed past this; 0: unlimited */
    irn_on_headers_cb on_headers; /* optional */
    irn_on_request_cb on_request; /* required */
    irn_on_error_cb on_error;     /* optional */
    void *ud;                     /* passed to all three */
    /* h2c (HTTP/2 over cleartext TCP): a connection that starts with the
     * HTTP/2 preface, or an HTTP/1.1 request with `Upgrade: h2c` and
     * HTTP2-Settings, is served as HTTP/2; each stream is an irn_request
     * answered through the irn_resp API. Off: HTTP/1.1 only. */
    bool h2c;
    uint32_t h2_max_streams;   /* SETTINGS_MAX_CONCURRENT_STREAMS; 0: 256 */
    size_t h2_max_conn_buffer; /* request bodies + response bytes buffered per
                                  h2 connection; 0: 64 MiB */
    /* h2: an h2 connection's response bytes are one queue, as an HTTP/1.1
     * connection's are: irn_resp_write reports the bytes queued on the whole
     * connection (all its streams, unframed, plus the socket's), on_drain fires
     * when that falls to write_low_water, and writes are refused past
     * max_write_queue on one stream or twice that on the connection (room for
     * the one write each stream's producer makes before it sees the mark). A
     * stream whose response bytes wait this long without one going out (its
     * window stays shut, the client does not read) is reset, and its handler
     * gets on_abort; 0: 60 s. */
    uint64_t h2_stall_timeout_ns;
    irn_cache *cache; /* optional, see irn_cache_new */
    /* Optional: counters the server adds to as well as its own stats, with relaxed
     * atomics, so that another thread may read them at any time and several servers
     * (one per worker) may share one set. Owned by the caller; they must outlive the
     * server. */
    struct irn_server_counters *counters;
} irn_server_cfg;

typedef struct irn_server_counters {
    _Atomic uint64_t conns_accepted;
    _Atomic uint64_t conns_active; /* of every server sharing the set */
    _Atomic uint64_t accept_pauses;
} irn_server_counters;

typedef struct irn_server_stats {
    uint64_t conns_accepted;
    uint64_t conns_active;
    uint64_t requests;
    uint64_t errors_sent;   /* 400/408/413/431 answered by the server itself */
    uint64_t h2_conns;      /* connections served as h2c (prior knowledge or upgrade) */
    uint64_t accept_pauses; /* out of file descriptors: the listener paused (server.c) */
} irn_server_stats;

void irn_server_cfg_init(irn_server_cfg *cfg); /* zeroes; zero fields mean the defaults */
/* Whether host:port is free for this process: a bind without SO_REUSEPORT,
 * closed at once. Returns 0, or UV_EADDRINUSE while any socket (of this
 * process or another, SO_REUSEPORT or not) listens there. Call it before the
 * first of several `reuseport` servers binds, so that a second process cannot
 * silently share the port. Port 0 always passes. */
int irn_listen_probe(const char *host, uint16_t port);
/* Binds and listens. On error nothing is left behind and *out is NULL. */
int irn_server_new(uv_loop_t *loop, const irn_server_cfg *cfg, irn_server **out);
int irn_server_port(const irn_server *srv); /* the bound port */
void irn_server_stats_get(const irn_server *srv, irn_server_stats *st);
/* Graceful: stops accepting, closes idle connections, lets in-flight requests
 * finish (their responses carry Connection: close). `cb` fires once every
 * connection is closed; the server is freed after it returns. Call once. */
void irn_server_close(irn_server *srv, irn_close_cb cb, void *ud);
/* The deadline: closes every connection now; in-flight responses get on_abort.
 * Only after irn_server_close. */
void irn_server_close_all(irn_server *srv);

/* ---- responses -----------------------------------------------------------
 * An irn_resp (and its request) stays valid until the handler ends it, even
 * when the client went away first; after on_abort, writes return IRN_ECLOSED
 * and irn_resp_end only frees. Framing headers (Content-Length,
 * Transfer-Encoding, Connection) are the server's: ones passed in are dropped,
 * except that `Connection: close` is honoured. */

/* content_length >= 0 sends Content-Length; -1 streams chunked (HTTP/1.1) or
 * until close (HTTP/1.0). The head is held back and leaves with the first
 * body bytes, or at the end: one write to the socket instead of two. */
int irn_resp_start(irn_resp *resp, int status, const irn_header *headers, size_t nheaders,
                   int64_t content_length);
/* Queues body bytes (copied). Returns the bytes now queued on the connection
 * (>= write_high_water: the producer should pause until on_drain), or
 * IRN_ENOBUFS when the queue already holds max_write_queue, IRN_ECLOSED after
 * an abort, IRN_EINVAL past the Content-Length or before irn_resp_start. */
int64_t irn_resp_write(irn_resp *resp, const void *data, size_t len);
/* Sends the held head now, before any body byte: an event stream whose first
 * event waits for work (an engine's prefill) shows its head at once, as vLLM's
 * server does. 0, IRN_ECLOSED after an abort, IRN_EINVAL before irn_resp_start. */
int irn_resp_send_head(irn_resp *resp);
/* Ends the response and releases resp and its request. */
int irn_resp_end(irn_resp *resp);
/* irn_resp_write of the last bytes then irn_resp_end, in one write to the socket. */
int irn_resp_finish(irn_resp *resp, const void *data, size_t len);
/* start + write + end. `content_type` may be NULL. */
int irn_resp_send(irn_resp *resp, int status, const char *content_type, const void *body,
                  size_t len, const irn_header *extra, size_t nextra);
/* irn_resp_send of irn_error_body (type NULL = default) with application/json. */
int irn_resp_send_error(irn_resp *resp, int status, const char *type, const char *message);
/* Fires (once, from the loop) when the client disconnects, the connection
 * fails or the server closes it before the response ended. It comes from the
 * close callback: irn_resp_aborted() may say true (and writes IRN_ECLOSED)
 * earlier, and ending the response in between means it never fires. */
void irn_resp_on_abort(irn_resp *resp, irn_resp_cb cb, void *ud);
/* Fires when the queued bytes fall to write_low_water after a write returned
 * >= write_high_water. */
void irn_resp_on_drain(irn_resp *resp, irn_resp_cb cb, void *ud);
size_t irn_resp_queued(const irn_resp *resp);
bool irn_resp_aborted(const irn_resp *resp);
/* Drops the connection without answering (or mid-response) and releases resp
 * and its request, as irn_resp_end does; on_abort does not fire. For fault
 * injection and for handlers that must cut a client off. */
int irn_resp_close(irn_resp *resp);

/* ---- client --------------------------------------------------------------- */
typedef struct irn_pool irn_pool;
typedef struct irn_client irn_client;

typedef struct irn_pool_cfg {
    size_t max_idle_per_host; /* 0: 16 */
    uint64_t idle_timeout_ns; /* pooled connection lifetime when unused; 0: 30 s */
    size_t max_header_bytes;  /* response head cap; 0: 64 KiB */
    size_t max_headers;       /* 0: 100 */
    /* Requests go over h2c prior-knowledge connections, multiplexed: one
     * connection per host:port (another when its streams run out). */
    bool http2;
    uint32_t h2_stream_window; /* per-stream receive window (what a paused
                                  request may buffer); 0: 256 KiB */
    irn_cache *cache;          /* optional, see irn_cache_new */
} irn_pool_cfg;

typedef struct irn_pool_stats {
    uint64_t conns_created;
    uint64_t conns_reused; /* requests served on a pooled connection */
    uint64_t retries;      /* stale pooled connections retried */
    uint64_t requests;
    uint64_t idle; /* connections now idle in the pool */
} irn_pool_stats;

void irn_pool_cfg_init(irn_pool_cfg *cfg);
irn_pool *irn_pool_new(uv_loop_t *loop, const irn_pool_cfg *cfg); /* cfg may be NULL */
void irn_pool_stats_get(const irn_pool *pool, irn_pool_stats *st);
/* Cancels every request (on_done(IRN_ECANCELED)) and closes every connection;
 * `cb` fires when all are gone; the pool is freed after it returns. */
void irn_pool_close(irn_pool *pool, irn_close_cb cb, void *ud);

/* One piece of a request body sent in several (scatter-gather): a proxy that
 * rewrites one field sends the bytes before it, the new value and the bytes
 * after it, without copying the body. */
typedef struct irn_part {
    const void *data;
    size_t len;
} irn_part;
#define IRN_MAX_BODY_PARTS 4

typedef struct irn_client_req {
    const char *host; /* numeric IPs connect directly; names go via uv_getaddrinfo */
    uint16_t port;
    const char *method;        /* NULL: GET, or POST when a body is given */
    const char *path;          /* NULL: "/" */
    const irn_header *headers; /* copied; Host is added unless given */
    size_t nheaders;
    const void *body; /* sent as given with Content-Length; kept alive by the
                         caller until on_done */
    size_t body_len;
    /* Instead of body: the body as up to IRN_MAX_BODY_PARTS pieces, sent in order
     * (h1: one vectored write with the head; h2c: DATA framed from them). The
     * array is copied, the bytes are not: they stay valid until on_done, and
     * across any retry. body and body_parts together: IRN_EINVAL. */
    const irn_part *body_parts;
    size_t nbody_parts;
    uint64_t connect_timeout_ns; /* resolving + connecting; 0: none */
    uint64_t head_timeout_ns;    /* request sent -> the whole final response head, a
                                    deadline that bytes dribbled in or 1xx heads do not
                                    move; 0: none (idle_timeout then runs between bytes) */
    uint64_t idle_timeout_ns;    /* between response bytes; 0: none */
} irn_client_req;

typedef struct irn_client_cbs {
    /* The final response head; headers valid during the call. It comes with the
     * first body byte or at the end of the response, so a response whose framing
     * breaks before any body byte fails (IRN_EPARSE) without a head. 100 and 103
     * are skipped; any other status under 200 (a 101 nobody asked for) is
     * IRN_EPARSE. */
    void (*on_head)(void *ud, int status, const irn_header *headers, size_t nheaders);
    /* Decoded body bytes (chunked framing removed), as they arrive. */
    void (*on_body)(void *ud, const char *data, size_t len);
    /* Exactly once, last: 0 or an IRN_E* code. The handle is freed after it. */
    void (*on_done)(void *ud, int err);
} irn_client_cbs;

/* Starts a request. On success *out is the handle, valid until on_done
 * returns; no callback fires before this returns. On error (IRN_EINVAL,
 * IRN_ENOMEM, IRN_ESHUTDOWN) no callback ever fires. Network failures always
 * arrive through on_done. */
int irn_client_request(irn_pool *pool, const irn_client_req *req, const irn_client_cbs *cbs,
                       void *ud, irn_client **out);
/* Aborts: no on_head/on_body after this call; the connection is closed (never
 * pooled) and on_done(IRN_ECANCELED) fires later from the loop. Calling it
 * again before on_done is harmless; calling it after on_done is a bug. */
void irn_client_cancel(irn_client *c);
/* Stops / restarts the response: no on_body between pause and resume, even
 * for bytes already read (they are held, at most one read buffer, and
 * delivered from the loop after the resume). Reading and the idle timer
 * stop while paused. */
void irn_client_pause(irn_client *c);
void irn_client_resume(irn_client *c);
/* Whether any response byte was received (a failure after that is not safely
 * retryable). */
bool irn_client_got_bytes(const irn_client *c);

#ifdef __cplusplus
}
#endif
#endif
