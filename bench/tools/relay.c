/* relay.c: the floor for the gateway overhead benchmark.
 *
 *   ir-relay --port P --upstream HOST:PORT [--upstream HOST:PORT ...] [--busy-poll]
 *
 * A byte relay on one libuv loop: each client connection is paired with a new
 * connection to the next upstream in turn, and bytes are copied both ways as
 * they arrive. It parses nothing, so whatever latency it adds over going
 * straight to the engine is what any event-loop proxy on this machine pays for
 * two more hops through the kernel and two more process wakeups. Loopback
 * benchmarks only: no timeouts, no limits beyond one 64 KiB buffer per
 * direction (reading stops while a write is queued). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ir_core.h"
#include <uv.h>

#define MAX_UP 16
#define CHUNK  65536

typedef struct side side;
typedef struct pair pair;

struct side {
    uv_tcp_t tcp;
    pair *p;
    side *peer;
    char buf[CHUNK];
    uv_write_t wr; /* a write of the peer's bytes queued on this side */
    bool writing;
};

struct pair {
    side cl, up;
    uv_connect_t conn;
    int open_handles;
    bool closing;
};

typedef struct relay {
    uv_loop_t *loop;
    uv_tcp_t srv;
    struct sockaddr_storage up[MAX_UP];
    int nup, next;
} relay;

static void on_closed(uv_handle_t *h) {
    pair *p = ((side *)h->data)->p;
    if (--p->open_handles == 0) free(p);
}

static void pair_close(pair *p) {
    if (p->closing) return;
    p->closing = true;
    uv_close((uv_handle_t *)&p->cl.tcp, on_closed);
    uv_close((uv_handle_t *)&p->up.tcp, on_closed);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b) {
    (void)hint;
    side *s = h->data;
    *b = uv_buf_init(s->buf, CHUNK);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b);

static void on_written(uv_write_t *w, int status) {
    side *dst = w->data;
    dst->writing = false;
    if (status) {
        pair_close(dst->p);
        return;
    }
    if (!dst->p->closing) uv_read_start((uv_stream_t *)&dst->peer->tcp, on_alloc, on_read);
}

/* Bytes read on src go to its peer: straight away when the socket takes them,
 * else queued while src stops reading. */
static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
    side *src = st->data, *dst = src->peer;
    if (n == 0) return;
    if (n < 0) {
        pair_close(src->p);
        return;
    }
    uv_buf_t out = uv_buf_init(b->base, (unsigned)n);
    int w = uv_try_write((uv_stream_t *)&dst->tcp, &out, 1);
    if (w == n) return;
    if (w < 0 && w != UV_EAGAIN) {
        pair_close(src->p);
        return;
    }
    size_t done = w > 0 ? (size_t)w : 0;
    out = uv_buf_init(b->base + done, (unsigned)((size_t)n - done));
    uv_read_stop(st); /* src->buf stays untouched until the write completes */
    dst->writing = true;
    dst->wr.data = dst;
    if (uv_write(&dst->wr, (uv_stream_t *)&dst->tcp, &out, 1, on_written)) {
        dst->writing = false;
        pair_close(src->p);
    }
}

static void on_connected(uv_connect_t *c, int status) {
    pair *p = c->data;
    if (status || p->closing) {
        pair_close(p);
        return;
    }
    uv_tcp_nodelay(&p->up.tcp, 1);
    uv_read_start((uv_stream_t *)&p->cl.tcp, on_alloc, on_read);
    uv_read_start((uv_stream_t *)&p->up.tcp, on_alloc, on_read);
}

static void on_conn(uv_stream_t *srv, int status) {
    relay *r = srv->data;
    if (status) return;
    pair *p = calloc(1, sizeof *p);
    if (!p) return;
    side *sides[2] = {&p->cl, &p->up};
    for (int i = 0; i < 2; i++) {
        uv_tcp_init(r->loop, &sides[i]->tcp);
        sides[i]->tcp.data = sides[i];
        sides[i]->p = p;
        sides[i]->peer = sides[1 - i];
    }
    p->open_handles = 2;
    if (uv_accept(srv, (uv_stream_t *)&p->cl.tcp)) {
        pair_close(p);
        return;
    }
    uv_tcp_nodelay(&p->cl.tcp, 1);
    p->conn.data = p;
    const struct sockaddr *up = (const struct sockaddr *)&r->up[r->next++ % r->nup];
    if (uv_tcp_connect(&p->conn, &p->up.tcp, up, on_connected)) pair_close(p);
}

static void usage(FILE *f) {
    fprintf(f, "usage: ir-relay --port P --upstream HOST:PORT [--upstream HOST:PORT ...] "
               "[--busy-poll]\n");
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"port", required_argument, 0, 'p'},
        {"upstream", required_argument, 0, 'u'},
        {"busy-poll", no_argument, 0, 'b'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    relay r = {.loop = uv_default_loop()};
    int port = -1, ch;
    bool busy = false;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'p':
            port = atoi(optarg);
            break;
        case 'u': {
            char host[256];
            uint16_t hport;
            if (r.nup == MAX_UP || ir_hostport_parse(optarg, host, sizeof host, &hport) ||
                uv_ip4_addr(host, hport, (struct sockaddr_in *)&r.up[r.nup])) {
                fprintf(stderr, "ir-relay: bad --upstream %s (IPv4 HOST:PORT, at most %d)\n",
                        optarg, MAX_UP);
                return 2;
            }
            r.nup++;
            break;
        }
        case 'b':
            busy = true;
            break;
        default:
            usage(ch == 'h' ? stdout : stderr);
            return ch == 'h' ? 0 : 2;
        }
    }
    if (port < 0 || port > 65535 || r.nup == 0) {
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    uv_tcp_init(r.loop, &r.srv);
    r.srv.data = &r;
    int rc = uv_tcp_bind(&r.srv, (const struct sockaddr *)&addr, 0);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&r.srv, 4096, on_conn);
    if (rc) {
        fprintf(stderr, "ir-relay: listen on 127.0.0.1:%d: %s\n", port, uv_strerror(rc));
        return 1;
    }
    if (busy)
        while (uv_run(r.loop, UV_RUN_NOWAIT)) continue;
    else
        uv_run(r.loop, UV_RUN_DEFAULT);
    return 0;
}
