/* zmq_dl.c: opens libzmq on first use (see zmq_dl.h). */
#include "gateway/gateway.h"
#include <pthread.h>
#include <stdio.h>
#include <zmq.h>

/* The table's own names, not the zmq_* macros of zmq_dl.h. */
#include "gateway/zmq_dl.h"

gw_zmq_api gw_zmq;

/* The shared object's name in Debian's libzmq5 (the soname, so no -dev needed). */
#define ZMQ_SONAME "libzmq.so.5"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_err[256];
static int load_rc;

static void load(void) {
    const gw_dl_sym syms[] = {
        {"zmq_ctx_new", (void **)&gw_zmq.ctx_new},
        {"zmq_ctx_term", (void **)&gw_zmq.ctx_term},
        {"zmq_socket", (void **)&gw_zmq.socket},
        {"zmq_close", (void **)&gw_zmq.close},
        {"zmq_connect", (void **)&gw_zmq.connect},
        {"zmq_socket_monitor", (void **)&gw_zmq.socket_monitor},
        {"zmq_setsockopt", (void **)&gw_zmq.setsockopt},
        {"zmq_send", (void **)&gw_zmq.send},
        {"zmq_msg_init", (void **)&gw_zmq.msg_init},
        {"zmq_msg_close", (void **)&gw_zmq.msg_close},
        {"zmq_msg_recv", (void **)&gw_zmq.msg_recv},
        {"zmq_msg_data", (void **)&gw_zmq.msg_data},
        {"zmq_msg_size", (void **)&gw_zmq.msg_size},
        {"zmq_msg_more", (void **)&gw_zmq.msg_more},
        {"zmq_poll", (void **)&gw_zmq.poll},
        {"zmq_errno", (void **)&gw_zmq.errno_},
        {"zmq_strerror", (void **)&gw_zmq.strerror},
    };
    load_rc =
        gw_dl_open(ZMQ_SONAME, "libzmq5", syms, IR_ARRAY_LEN(syms), load_err, sizeof load_err);
}

int gw_zmq_load(char *err, size_t errlen) {
    pthread_once(&once, load);
    if (load_rc) snprintf(err, errlen, "%s", load_err);
    return load_rc;
}
