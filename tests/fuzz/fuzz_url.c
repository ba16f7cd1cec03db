/* fuzz_url: replica URLs and host:port strings (src/core/misc.c) on arbitrary
 * bytes, with the IPv6 zone checks of the gateway (src/gateway/ip6zone.c) on what
 * they accept, and an endpoint's %25 unescaping. An accepted host is never empty
 * and has no brackets; a zone ('%') only comes from inside brackets, once, and is
 * never empty; unescaping never makes an endpoint longer. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_host(const char *h, bool bracketed) {
    if (!h[0] || strchr(h, '[') || strchr(h, ']')) abort();
    const char *pct = strchr(h, '%');
    if (pct && (!bracketed || !pct[1] || pct == h || strchr(pct + 1, '%'))) abort();
    char why[256];
    (void)gw_ip6_zone_problem(h, why, sizeof why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    ir_url u;
    if (ir_url_parse(s, &u) == 0) check_host(u.host, strncmp(s + 7, "[", 1) == 0);
    char host[256];
    uint16_t port;
    if (ir_hostport_parse(s, host, sizeof host, &port) == 0) check_host(host, s[0] == '[');
    char why[256];
    (void)gw_ep_zone_problem(s, why, sizeof why);
    size_t before = strlen(s);
    gw_ep_unescape_zone(s);
    if (strlen(s) > before) abort();
    free(s);
    return 0;
}
