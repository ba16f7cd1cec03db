/* kvsub_dns.c: the KV event subscriber's resolver (kvsub_dns.h), and the
 * helpers that tell an endpoint's DNS name from an address literal and put an
 * address in its place (gateway.h).
 *
 * libzmq resolves a tcp:// host name itself, with getaddrinfo, IPv4 only unless
 * the socket has ZMQ_IPV6, and then preferring AAAA records. So it either misses a
 * name that has only AAAA records or, with ZMQ_IPV6, connects over IPv6 to an
 * engine that binds IPv4 only (a wildcard endpoint binds IPv4 only in libzmq);
 * and it never honours discovery.nameservers. So the subscriber looks such names
 * up with c-ares and connects to the address found: IPv4 when the name has one,
 * else IPv6. */
#include "gateway/kvsub_dns.h"

#include <ares.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

struct gw_kvdns {
    ares_channel ch;
};

typedef struct lookup {
    gw_kvdns_cb cb;
    void *arg;
} lookup;

/* ---- endpoints -------------------------------------------------------------------- */

/* The host part of tcp://host:port (brackets kept) and its length; NULL: not tcp. */
static const char *tcp_host(const char *ep, size_t *len) {
    if (!ep || strncmp(ep, "tcp://", 6) != 0) return NULL;
    const char *h = ep + 6, *colon = strrchr(h, ':');
    if (!colon || colon == h) return NULL;
    *len = (size_t)(colon - h);
    return h;
}

bool gw_ep_dns_host(const char *ep, char *host, size_t cap) {
    size_t n;
    const char *h = tcp_host(ep, &n);
    if (!h || h[0] == '[' || n == 0 || n >= cap || n >= 256) return false;
    memcpy(host, h, n);
    host[n] = '\0';
    struct in_addr v4;
    if (inet_pton(AF_INET, host, &v4) == 1 || strchr(host, ':') || strchr(host, '%')) return false;
    return true;
}

int gw_ep_at_addr(const char *ep, const char *ip, char *out, size_t cap) {
    size_t n;
    const char *h = tcp_host(ep, &n);
    if (!h) return -1;
    bool v6 = strchr(ip, ':') != NULL;
    int w = snprintf(out, cap, "tcp://%s%s%s%s", v6 ? "[" : "", ip, v6 ? "]" : "", h + n);
    return w < 0 || (size_t)w >= cap ? -1 : 0;
}

/* ---- the channel ------------------------------------------------------------------- */

gw_kvdns *gw_kvdns_new(const ir_cfg_strlist *nameservers, char *err, size_t errlen) {
    gw_kvdns *d = calloc(1, sizeof *d);
    int rc = d ? ares_library_init(ARES_LIB_INIT_ALL) : ARES_ENOMEM;
    if (rc != ARES_SUCCESS) {
        free(d);
        snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
        return NULL;
    }
    struct ares_options o = {.timeout = 1000, .tries = 2};
    rc = ares_init_options(&d->ch, &o, ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
    if (rc == ARES_SUCCESS && (rc = gw_dns_set_servers(d->ch, nameservers)) != ARES_SUCCESS)
        ares_destroy(d->ch);
    if (rc != ARES_SUCCESS) {
        ares_library_cleanup();
        free(d);
        snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
        return NULL;
    }
    return d;
}

void gw_kvdns_free(gw_kvdns *d) {
    if (!d) return;
    ares_destroy(d->ch); /* answers what is in flight with ARES_EDESTRUCTION */
    ares_library_cleanup();
    free(d);
}

/* The address to connect to: the first IPv4 one, else the first IPv6 one. */
static bool pick(const struct ares_addrinfo *res, gw_kvdns_answer *a) {
    const struct ares_addrinfo_node *v4 = NULL, *v6 = NULL;
    for (const struct ares_addrinfo_node *x = res ? res->nodes : NULL; x; x = x->ai_next) {
        if (!x->ai_addr) continue;
        if (x->ai_family == AF_INET && !v4) v4 = x;
        if (x->ai_family == AF_INET6 && !v6) v6 = x;
        if (x->ai_ttl >= 0 && (a->ttl < 0 || x->ai_ttl < a->ttl)) a->ttl = x->ai_ttl;
    }
    if (v4)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)v4->ai_addr)->sin_addr, a->ip,
                  sizeof a->ip);
    else if (v6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)v6->ai_addr)->sin6_addr, a->ip,
                  sizeof a->ip);
    return v4 || v6;
}

static void on_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
    (void)timeouts;
    lookup *l = arg;
    gw_kvdns_answer a = {.ttl = -1};
    a.ok = status == ARES_SUCCESS && pick(res, &a);
    a.why = status == ARES_SUCCESS ? "no address in the answer" : ares_strerror(status);
    if (res) ares_freeaddrinfo(res);
    l->cb(l->arg, &a);
    free(l);
}

void gw_kvdns_lookup(gw_kvdns *d, const char *host, gw_kvdns_cb cb, void *arg) {
    lookup *l = malloc(sizeof *l);
    if (!l) {
        cb(arg, &(gw_kvdns_answer){.ttl = -1, .why = "out of memory"});
        return;
    }
    *l = (lookup){cb, arg};
    struct ares_addrinfo_hints h = {.ai_family = AF_UNSPEC};
    ares_getaddrinfo(d->ch, host, NULL, &h, on_addrinfo, l);
}

size_t gw_kvdns_items(gw_kvdns *d, zmq_pollitem_t *items) {
    ares_socket_t socks[ARES_GETSOCK_MAXNUM];
    /* c-ares's own bit macros shift an int by up to 31: undefined for the last one. */
    unsigned bits = (unsigned)ares_getsock(d->ch, socks, ARES_GETSOCK_MAXNUM);
    size_t n = 0;
    for (unsigned i = 0; i < ARES_GETSOCK_MAXNUM && n < GW_KVDNS_SOCKS; i++) {
        short ev = (short)((bits & (1u << i) ? ZMQ_POLLIN : 0) |
                           (bits & (1u << (i + ARES_GETSOCK_MAXNUM)) ? ZMQ_POLLOUT : 0));
        if (ev) items[n++] = (zmq_pollitem_t){NULL, socks[i], ev, 0};
    }
    return n;
}

void gw_kvdns_process(gw_kvdns *d, const zmq_pollitem_t *items, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (!items[i].revents) continue;
        bool err = items[i].revents & ZMQ_POLLERR;
        ares_process_fd(d->ch,
                        (items[i].revents & ZMQ_POLLIN) || err ? items[i].fd : ARES_SOCKET_BAD,
                        (items[i].revents & ZMQ_POLLOUT) || err ? items[i].fd : ARES_SOCKET_BAD);
    }
    ares_process_fd(d->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* timeouts and retries */
}
