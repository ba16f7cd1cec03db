/* kvsub_dns.h: the KV event subscriber's own resolver (kvsub_dns.c), for
 * kv_events endpoints that name their host by a DNS name. A c-ares channel
 * used by the subscriber thread alone: its sockets are polled in the same
 * zmq_poll as the ZMQ sockets (as plain fds), so no thread blocks on a lookup. */
#ifndef IR_GATEWAY_KVSUB_DNS_H
#define IR_GATEWAY_KVSUB_DNS_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#include "core/ir_core.h"

#define GW_KVDNS_SOCKS 16 /* c-ares's sockets polled at once (ARES_GETSOCK_MAXNUM) */

typedef struct gw_kvdns gw_kvdns;

/* An answer: ok, the address to connect to (IPv4 when the name has one, else
 * IPv6) and the smallest TTL of the answer (seconds; -1: none); or the reason. */
typedef struct gw_kvdns_answer {
    bool ok;
    char ip[INET6_ADDRSTRLEN];
    int64_t ttl;
    const char *why; /* when !ok: c-ares's words */
} gw_kvdns_answer;
typedef void (*gw_kvdns_cb)(void *arg, const gw_kvdns_answer *a);

/* A channel with nameservers (host:port; empty: /etc/resolv.conf); NULL with err. */
gw_kvdns *gw_kvdns_new(const ir_cfg_strlist *nameservers, char *err, size_t errlen);
/* Destroys the channel: lookups in flight are answered (ok false) first. */
void gw_kvdns_free(gw_kvdns *d);
/* Looks host up (A and AAAA). cb may run before this returns (/etc/hosts). */
void gw_kvdns_lookup(gw_kvdns *d, const char *host, gw_kvdns_cb cb, void *arg);
/* c-ares's sockets as poll items (fd items) into items, at most GW_KVDNS_SOCKS. */
size_t gw_kvdns_items(gw_kvdns *d, zmq_pollitem_t *items);
/* After the poll: reads and writes the ready sockets, then c-ares's timeouts. */
void gw_kvdns_process(gw_kvdns *d, const zmq_pollitem_t *items, size_t n);

#endif
