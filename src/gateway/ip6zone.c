/* ip6zone.c: link-local IPv6 addresses and their zones (RFC 4007) in replica URLs
 * and kv_events endpoints. A link-local address (fe80::/10) is the same on every
 * link, so it means nothing without the interface it is reached through: written
 * fe80::1%eth0 (or %2, an interface number; in a URL also %25eth0, RFC 6874). The
 * gateway connects with that interface as the socket's scope id (net's
 * irn_ip6_zone_index; libzmq reads the same zone in a tcp:// endpoint). */
#include "gateway/gateway.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

const char *gw_ip6_zone_problem(const char *host, char *why, size_t cap) {
    const char *pct = strchr(host, '%');
    char addr[INET6_ADDRSTRLEN];
    size_t an = pct ? (size_t)(pct - host) : strlen(host);
    unsigned char a[16];
    if (an >= sizeof addr) an = sizeof addr - 1;
    memcpy(addr, host, an);
    addr[an] = '\0';
    if (inet_pton(AF_INET6, addr, a) != 1) {
        if (!pct) return NULL; /* a name or an IPv4 address */
        snprintf(why, cap, "'%s' is not an IPv6 address, so it takes no zone", addr);
        return why;
    }
    bool link_local = a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
    if (!pct && link_local)
        snprintf(why, cap,
                 "the link-local address %s needs a zone naming the interface it is reached "
                 "through, e.g. [%s%%eth0]",
                 addr, addr);
    else if (pct && !link_local)
        snprintf(why, cap, "a zone (%s) belongs to a link-local address (fe80::/10), not to %s",
                 pct, addr);
    else if (pct && irn_ip6_zone_index(pct + 1) == 0)
        snprintf(why, cap,
                 "zone '%s' of %s is neither a network interface of this machine nor an "
                 "interface number",
                 pct + 1, addr);
    else
        return NULL;
    return why;
}

/* tcp://[addr%zone]:port: its host, the zone written %zone (a %25 dropped). */
static bool ep_v6_host(const char *ep, char *host, size_t cap) {
    uint16_t port;
    return ep && strncmp(ep, "tcp://", 6) == 0 && ep[6] == '[' &&
           ir_hostport_parse(ep + 6, host, cap, &port) == 0;
}

const char *gw_ep_zone_problem(const char *ep, char *why, size_t cap) {
    char host[256];
    return ep_v6_host(ep, host, sizeof host) ? gw_ip6_zone_problem(host, why, cap) : NULL;
}

void gw_ep_unescape_zone(char *ep) {
    char *open = ep ? strchr(ep, '[') : NULL, *close = open ? strchr(open, ']') : NULL;
    char *pct = open && close ? memchr(open, '%', (size_t)(close - open)) : NULL;
    if (pct && pct[1] == '2' && pct[2] == '5' && pct + 3 < close)
        memmove(pct + 1, pct + 3, strlen(pct + 3) + 1);
}
