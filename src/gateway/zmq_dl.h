/* zmq_dl.h: libzmq, opened only when some replica has kv_events.
 *
 * libzmq brings libstdc++, Kerberos, libsodium, OpenPGM and NORM with it: 2.7 MB
 * of resident memory in an idle gateway (6.7 against 4.0 MB), which every
 * deployment without KV events would pay for (docs/adr/0012-optional-libraries.md).
 * So the gateway does not link it: gw_zmq_load opens libzmq.so.5 with dlopen
 * the first time a subscriber starts, and the zmq_* calls of a file that
 * includes this header (after <zmq.h>) go through the table it filled.
 *
 * Only kvsub.c includes it, and only after gw_zmq_load has returned 0 may it
 * call a zmq_* function. The types and constants still come from <zmq.h>
 * (libzmq3-dev), so a mismatch of signatures is a compile error. */
#ifndef IR_GATEWAY_ZMQ_DL_H
#define IR_GATEWAY_ZMQ_DL_H

#include <stddef.h>
#include <zmq.h>

typedef struct gw_zmq_api {
    void *(*ctx_new)(void);
    int (*ctx_term)(void *ctx);
    void *(*socket)(void *ctx, int type);
    int (*close)(void *s);
    int (*connect)(void *s, const char *ep);
    int (*socket_monitor)(void *s, const char *addr, int events);
    int (*setsockopt)(void *s, int opt, const void *v, size_t len);
    int (*send)(void *s, const void *buf, size_t len, int flags);
    int (*msg_init)(zmq_msg_t *m);
    int (*msg_close)(zmq_msg_t *m);
    int (*msg_recv)(zmq_msg_t *m, void *s, int flags);
    void *(*msg_data)(zmq_msg_t *m);
    size_t (*msg_size)(const zmq_msg_t *m);
    int (*msg_more)(const zmq_msg_t *m);
    int (*poll)(zmq_pollitem_t *items, int n, long timeout);
    int (*errno_)(void);
    const char *(*strerror)(int e);
} gw_zmq_api;

/* Opens libzmq once (thread-safe; later calls return the first answer).
 * 0, or -1 with the reason in err (the library is missing, or lacks a symbol). */
int gw_zmq_load(char *err, size_t errlen);
/* The table; valid only after gw_zmq_load returned 0. */
extern gw_zmq_api gw_zmq;

#define zmq_ctx_new        gw_zmq.ctx_new
#define zmq_ctx_term       gw_zmq.ctx_term
#define zmq_socket         gw_zmq.socket
#define zmq_close          gw_zmq.close
#define zmq_connect        gw_zmq.connect
#define zmq_socket_monitor gw_zmq.socket_monitor
#define zmq_setsockopt     gw_zmq.setsockopt
#define zmq_send           gw_zmq.send
#define zmq_msg_init       gw_zmq.msg_init
#define zmq_msg_close      gw_zmq.msg_close
#define zmq_msg_recv       gw_zmq.msg_recv
#define zmq_msg_data       gw_zmq.msg_data
#define zmq_msg_size       gw_zmq.msg_size
#define zmq_msg_more       gw_zmq.msg_more
#define zmq_poll           gw_zmq.poll
#define zmq_errno          gw_zmq.errno_
#define zmq_strerror       gw_zmq.strerror

#endif
