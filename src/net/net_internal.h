/* net_internal.h: helpers shared by the net module's files; not public. */
#ifndef IR_NET_INTERNAL_H
#define IR_NET_INTERNAL_H

#include "net/ir_net.h"

#include <llhttp.h>
#include <strings.h>

/* Collects header fields and values from llhttp's split callbacks into one
 * capped buffer of "name\0value\0" pairs. */
typedef struct irn__hdrs {
    ir_buf raw;
    ir_buf ents; /* size_t[4] per header: name_off, name_len, value_off, value_len */
    size_t n;
    size_t max_n;
    size_t name_off, name_len, cur_off;
    bool in_part;
} irn__hdrs;

#define IRN_HDRS_TOO_BIG  (-1)
#define IRN_HDRS_TOO_MANY (-2)

/* The 413 message, naming the limit: writes it to buf and returns buf. */
const char *irn__body_too_large(size_t limit, char *buf, size_t n);

void irn__hdrs_init(irn__hdrs *h, size_t max_bytes, size_t max_n);
void irn__hdrs_reset(irn__hdrs *h);
void irn__hdrs_free(irn__hdrs *h);
int irn__hdrs_name(irn__hdrs *h, const char *at, size_t len);
int irn__hdrs_name_done(irn__hdrs *h);
int irn__hdrs_value(irn__hdrs *h, const char *at, size_t len);
int irn__hdrs_value_done(irn__hdrs *h);
/* Fills out[0..n) pointing into h->raw (valid until the next change of h). */
/* Header i of h (i < h->n), pointing into h: valid until h changes. */
irn_header irn__hdrs_at(const irn__hdrs *h, size_t i);
void irn__hdrs_fill(const irn__hdrs *h, irn_header *out);
/* Copies the header bytes into the arena once and sets req->headers/nheaders
 * over that copy. -1 when the arena is full. */
int irn__hdrs_to_request(const irn__hdrs *h, irn_request *req);

/* a[0..alen) equals the C string b, ignoring ASCII case. Inline: b is most often a
 * literal, so its length is known and a mismatch in length costs one compare. */
static inline bool irn__streq_ci(const char *a, size_t alen, const char *b) {
    return alen == __builtin_strlen(b) && strncasecmp(a, b, alen) == 0;
}
/* Whether s[0..n) holds CR, LF or NUL (or, unless allow_space, any byte <= ' '):
 * what may not go into a request line or a header. */
bool irn__bad_text(const char *s, size_t n, bool allow_space);
/* Appends "host:port", an IPv6 literal in brackets (Host and :authority); -1 past b's cap. */
int irn__append_authority(ir_buf *b, const char *host, size_t hl, uint16_t port);
/* Whether a comma-separated header value contains `token` (case-insensitive). */
bool irn__has_token(const char *value, size_t len, const char *token);
/* Milliseconds for a uv timer, rounding up; 0 stays 0. */
uint64_t irn__ns_to_ms(uint64_t ns);
/* Resolves host:port for listening/connecting, synchronously, numeric first. */
int irn__addr_numeric(const char *host, uint16_t port, struct sockaddr_storage *out);
/* Copies the address to connect to from a resolver answer: IPv4 first. */
void irn__addrinfo_pick(const struct addrinfo *res, struct sockaddr_storage *out);
/* A uv_getaddrinfo answer: picks the address into out and frees res. 0, or
 * IRN_ERESOLVE when the lookup failed. */
int irn__addrinfo_take(int status, struct addrinfo *res, struct sockaddr_storage *out);
/* ---- HTTP/1.1 response parsing (h1_response.c), socket-free ----
 * Internal names carry `irn__` (as libuv's `uv__`), public ones `irn_`.
 * One parser per upstream connection, restarted for each response. */
typedef struct irn__h1r_cbs {
    /* The final status, as soon as its head is parsed (headers not yet
     * delivered); false stops the parser. Optional. */
    bool (*on_final)(void *ud, int status);
    /* The final head, with the first body byte or at the end of a bodiless
     * response; headers point into the parser (valid until its next start).
     * false stops the parser. */
    bool (*on_head)(void *ud, int status, const irn_header *headers, size_t n);
    /* A span of the (de-chunked) body: 0 goes on, 1 pauses after this span
     * (feed returns PAUSED), -1 stops the parser. */
    int (*on_body)(void *ud, const char *at, size_t len);
} irn__h1r_cbs;

typedef struct irn__h1r {
    llhttp_t ll;
    irn__hdrs hdrs; /* the final head's headers, capped */
    irn_header *harr;
    const irn__h1r_cbs *cbs;
    void *ud;
    const char *why;  /* after ERROR: what was wrong (static text) */
    int status;       /* of the final head */
    bool head_method; /* the request was HEAD: no body follows any head */
    bool in_1xx;
    bool head_seen;      /* the final head was parsed */
    bool head_delivered; /* ... and given to on_head */
    bool msg_done;
} irn__h1r;

typedef enum {
    IRN__H1R_MORE,   /* every byte used, the response goes on */
    IRN__H1R_PAUSED, /* on_body paused: bytes past *used wait for the next feed */
    IRN__H1R_DONE,   /* the response is complete; bytes past *used are not its own */
    IRN__H1R_ERROR,  /* malformed, over the caps, or stopped by a callback */
} irn__h1r_ev;

/* Caps: head bytes and header count (as irn_pool_cfg's). -1 on OOM. */
int irn__h1r_init(irn__h1r *p, size_t max_header_bytes, size_t max_headers, const irn__h1r_cbs *cbs,
                  void *ud);
void irn__h1r_free(irn__h1r *p);
/* Readies the parser for the response to a new request. */
void irn__h1r_start(irn__h1r *p, bool head_method);
irn__h1r_ev irn__h1r_feed(irn__h1r *p, const char *data, size_t n, size_t *used);
/* The peer closed: true when that completes a close-delimited response. */
bool irn__h1r_eof(irn__h1r *p);
/* After DONE: whether the connection may carry another request. */
bool irn__h1r_keep_alive(const irn__h1r *p);

/* Bytes asked of the socket per read, and the most a client connection holds back. */
#define IRN__READ_BUF_SIZE (64 * 1024)

/* Monotonic milliseconds, for deadlines kept outside uv timers. */
static inline uint64_t irn__now_ms(void) {
    return ir_now_ns() / 1000000;
}

/* Where to connect to host:port: 0 with *out filled (a numeric address: connect
 * at once), 1 when the name is being resolved (cb then gets the answer, for
 * irn__addrinfo_take), or IRN_ERESOLVE. gai->data is the caller's. */
int irn__resolve(uv_loop_t *loop, uv_getaddrinfo_t *gai, uv_getaddrinfo_cb cb, const char *host,
                 uint16_t port, struct sockaddr_storage *out);

/* A connection-specific field, which has no place in HTTP/2 (RFC 9113 8.2.2):
 * connection, keep-alive, proxy-connection, transfer-encoding, upgrade, te, and
 * content-length (h2 frames the body itself). Host is not one: a client turns it
 * into :authority itself. */
bool irn__h1_only_header(const char *name, size_t len);

/* Sets req->path and req->query from req->target (query "" when there is none);
 * the path is copied into the arena only when a query follows. -1: arena full. */
int irn__split_target(irn_request *req);

/* A queued socket write that owns a copy of its bytes; its callback frees it. */
typedef struct irn__wreq {
    uv_write_t w; /* w.data: the owner */
    size_t n;     /* bytes queued */
    char data[];
} irn__wreq;
/* Queues a copy of parts[0..nparts), less their first skip bytes (what a
 * uv_try_write already took), on s; cb gets the irn__wreq, whose w.data is
 * owner and which it frees. *n: the bytes queued (0: nothing left to write). 0,
 * IRN_ENOMEM or IRN_ECLOSED (uv_write refused). */
int irn__write_copy(uv_stream_t *s, const uv_buf_t *parts, int nparts, size_t skip, void *owner,
                    uv_write_cb cb, size_t *n);

/* ---- the h2 send loop (h2_send.c), shared by the h2 server and client ---- */
#define IRN__H2_PUMP_LIMIT (256 * 1024) /* stop framing while the socket queue holds this */
#define IRN__H2_SEND_BATCH (64 * 1024)  /* frames coalesced into one socket write */
struct nghttp2_session;
typedef struct irn__h2_out {
    void *ctx;
    size_t (*queued)(void *ctx);              /* bytes written but not yet on the wire */
    int (*write)(void *ctx, const ir_buf *b); /* queues b's bytes (copied); != 0: dead */
    bool *want_flush; /* set (by a callback) while framing: go round again */
    const bool *dead; /* optional: stop framing once it reads true */
} irn__h2_out;
/* Frames what the session has to send, in writes of up to IRN__H2_SEND_BATCH
 * bytes, while the queue stays under IRN__H2_PUMP_LIMIT; again while
 * *want_flush was set meanwhile. 0, IRN_EPARSE (nghttp2 failed), IRN_ENOMEM,
 * IRN_ECLOSED (*dead) or the error of write. */
int irn__h2_send(struct nghttp2_session *s, const irn__h2_out *out);

/* Copies len bytes of the body made of parts[0..n), from offset off, to dst. */
void irn__parts_copy(const irn_part *parts, unsigned n, size_t off, char *dst, size_t len);

/* ---- recycling (cache.c) ---- */
struct irn_cache {
    ir_freelist reqs, resps, clients;
};
/* A request with an empty body (capped at max_body) and an arena, from cache
 * when it holds one (cache may be NULL); NULL on OOM. */
irn_request *irn__request_new(irn_cache *cache, size_t max_body, size_t max_arena);
/* A response for req with the server's write limits (h1 and h2 alike), from
 * cfg->cache when it holds one; NULL on OOM. */
irn_resp *irn__resp_new(irn_request *req, const irn_server_cfg *cfg);
/* Frees resp and its request, or keeps them in the cache. */
void irn__resp_release(irn_resp *resp);
/* A zeroed upstream client with an empty head buffer capped at max_head. */
struct irn_client *irn__client_alloc(irn_cache *cache, size_t max_head);
void irn__client_release(struct irn_client *cl);
/* Answers 500 in the error shape for a handler that ended without a response. */
int irn__resp_default_500(irn_resp *resp);
/* An answer the server gives by itself (h1 and h2 alike): fills e with status and
 * msg, lets cfg->on_error dress it, drops the headers it may not set, and writes
 * the error body. req: the request if its head was read (else NULL). */
int irn__error_answer_make(const irn_server_cfg *cfg, const irn_request *req, int status,
                           const char *msg, irn_error_answer *e, ir_buf *body);

/* ---- the server's response object (server.c for HTTP/1.1, h2_server.c for h2) */
/* What a response does on its protocol. resp.c's public irn_resp_* check their
 * arguments (resp not NULL; start: state 0 and a 3-digit status) and call these. */
typedef struct irn__resp_ops {
    int (*start)(irn_resp *resp, int status, const irn_header *headers, size_t nheaders,
                 int64_t content_length);
    /* last: the response ends after these bytes (h1 chunked: the terminator goes
     * out in the same write). */
    int64_t (*write)(irn_resp *resp, const void *data, size_t len, bool last);
    /* Sends a held head now (h1 holds it for the first body bytes; h2 sends it at
     * start). */
    int (*send_head)(irn_resp *resp);
    int (*end)(irn_resp *resp);   /* frees resp */
    int (*close)(irn_resp *resp); /* frees resp */
    size_t (*queued)(const irn_resp *resp);
} irn__resp_ops;
extern const irn__resp_ops irn__h1_resp_ops; /* server.c */
extern const irn__resp_ops irn__h2_resp_ops; /* h2_server.c */

struct conn;
struct irn__h2s_stream;

/* Where a response stands: nothing sent yet, or its head given (irn_resp_start). */
typedef enum { IRN__RESP_NEW = 0, IRN__RESP_STARTED = 1 } irn__resp_state;

struct irn_resp {
    struct conn *c;                  /* h1: NULL once detached */
    struct irn__h2s_stream *h2s;     /* h2: the stream; NULL once detached */
    const struct irn__resp_ops *ops; /* its protocol's */
    irn_request *req;
    irn__resp_state state;
    bool chunked;
    bool eof_framed;
    bool no_body; /* HEAD, 204, 304: writes are swallowed */
    bool close_after;
    bool aborted;
    bool above_high;
    bool term_written; /* the chunked terminator went out with the last write */
    irn_cache *cache;  /* where it goes back; NULL: free() */
    ir_buf head;       /* the response head, held back to go out with the first body bytes */
    int64_t content_length;
    uint64_t written;
    size_t high, low, maxq;
    irn_resp_cb on_abort, on_drain;
    void *abort_ud, *drain_ud;
};

/* ---- h2c server sessions (h2_server.c) ---------------------------------------
 * One per connection, socket-free: bytes in through irn__h2s_feed, bytes out
 * through io->write. server.c owns the socket and the timers. */
typedef struct irn__h2s irn__h2s;

typedef struct irn__h2s_io {
    void *ctx;
    /* Queues bytes on the socket (copied); < 0 when the connection is dead. */
    int (*write)(void *ctx, const uv_buf_t *parts, int nparts);
    size_t (*queued)(void *ctx);           /* bytes written but not yet on the wire */
    void (*schedule)(void *ctx);           /* call irn__h2s_flush soon, from the loop */
    void (*timer)(void *ctx, uint64_t ms); /* call irn__h2s_on_timer after ms; 0: never */
    /* The session is over: graceful = after the queued bytes, else at once. */
    void (*done)(void *ctx, bool graceful);
} irn__h2s_io;

/* cfg: the server's (defaults filled in); lim: its request limits; st: its
 * stats (may be NULL). Nothing is sent before irn__h2s_start. */
irn__h2s *irn__h2s_new(const irn_server_cfg *cfg, const irn_h1_limits *lim, irn_server_stats *st,
                       const char *peer, const irn__h2s_io *io);
/* Prior knowledge: sends SETTINGS; the client preface is expected in the input.
 * Upgrade: settings is the decoded HTTP2-Settings payload and req (taken over,
 * even on error) becomes stream 1. */
int irn__h2s_start(irn__h2s *h, const uint8_t *settings, size_t settings_len, irn_request *req);
/* Feeds one slice of the input (whole frames, bounded: see SLICE_FRAMES in
 * h2_server.c): returns the frames it held (>= 0), *used the bytes taken; the
 * caller keeps the rest and feeds it on a later turn of the loop. IRN_ECLOSED
 * once the session is done
 * (a client over the control frame budget gets GOAWAY(ENHANCE_YOUR_CALM) and the
 * rest of its input is dropped), IRN_EINVAL when nghttp2 failed it. */
int irn__h2s_feed_some(irn__h2s *h, const char *data, size_t len, size_t *used);
/* Feeds all of it, slice after slice (tests and the fuzz target). */
int irn__h2s_feed(irn__h2s *h, const char *data, size_t len);
void irn__h2s_flush(irn__h2s *h);
void irn__h2s_on_written(irn__h2s *h); /* a socket write completed */
void irn__h2s_on_timer(irn__h2s *h);
void irn__h2s_shutdown(irn__h2s *h);   /* GOAWAY; done once the open streams end */
bool irn__h2s_idle(const irn__h2s *h); /* no open stream */
/* The connection is gone: open responses get on_abort; frees the session. */
/* The connection is closing: its streams' responses read as aborted at once, as an h1
 * response does, though on_abort fires only when the session is freed. */
void irn__h2s_mark_aborted(irn__h2s *h);
void irn__h2s_free(irn__h2s *h);

/* Decodes base64url (no padding needed); -1 on bad input or past cap. */
int irn__base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *outlen);

/* ---- the client request handle (client.c; h2_client.c when the pool is h2) */
struct cconn;
struct irn__h2c_stream;
struct irn__h2c_pool;

struct irn_client {
    irn_pool *pool;
    irn_cache *cache; /* where it goes back; NULL: free() */
    struct cconn *conn;
    struct irn__h2c_stream *h2; /* h2 pools only */
    irn_client_cbs cbs;
    void *ud;
    ir_buf head;
    irn_part body[IRN_MAX_BODY_PARTS]; /* the body's pieces, none empty; the caller's bytes */
    unsigned nbody;
    size_t body_len; /* their sum */
    bool has_body;   /* a body was given, even an empty one */
    char host[256];
    uint16_t port;
    bool head_method;
    uint64_t connect_ms, head_ms, idle_ms;
    int err;
    bool got_bytes;
    bool canceled;
    bool paused;
    bool retried;
};

/* ---- h2c client connections (h2_client.c) ------------------------------------- */
typedef struct irn__h2c_pool irn__h2c_pool;

irn__h2c_pool *irn__h2c_pool_new(uv_loop_t *loop, const irn_pool_cfg *cfg, irn_pool_stats *st,
                                 irn_close_cb on_empty, void *ud);
/* Takes cl (allocated by irn_client_request, its common fields set) and
 * starts it; on error cl is left to the caller. */
int irn__h2c_request(irn__h2c_pool *hp, irn_client *cl, const char *method, const char *path,
                     const irn_header *headers, size_t nheaders);
/* Cancels everything and closes every connection; on_empty fires (from the
 * loop) once all are gone. */
void irn__h2c_pool_close(irn__h2c_pool *hp);
bool irn__h2c_pool_empty(const irn__h2c_pool *hp);
void irn__h2c_pool_free(irn__h2c_pool *hp);
void irn__h2c_cancel(irn_client *cl);
void irn__h2c_pause(irn_client *cl);
void irn__h2c_resume(irn_client *cl);

/* ---- lazy deadlines (server.c and client.c connections) ----
 * One uv timer per connection serves changing deadlines: it is re-armed only
 * when a deadline comes earlier than the armed one; a later or cleared one is
 * checked when the timer fires. See net.md. `armed` is 0 while idle. */
typedef struct irn__lazy {
    uint64_t due, armed; /* loop ms */
} irn__lazy;

static inline void irn__lazy_set(irn__lazy *z, uv_timer_t *t, uv_timer_cb cb, uint64_t ms) {
    z->due = uv_now(t->loop) + ms;
    if (!z->armed || z->due < z->armed) {
        z->armed = z->due;
        uv_timer_start(t, cb, ms, 0);
    }
}

/* In the timer's callback: true when the deadline has come; else re-arms for
 * what is left and returns false. */
static inline bool irn__lazy_fired(irn__lazy *z, uv_timer_t *t, uv_timer_cb cb) {
    z->armed = 0;
    uint64_t now = uv_now(t->loop);
    if (z->due <= now) return true;
    z->armed = z->due;
    uv_timer_start(t, cb, z->due - now, 0);
    return false;
}

#endif
