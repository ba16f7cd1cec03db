/* discovery_cfg.c: the checks of discovery.* that the schema cannot make. */
#include "gateway/gateway.h"

#include <string.h>

bool gw_dns_serves(const gw_config *c, const char *model) {
    const gw_dns_group_cfg *g = c->discovery.dns.items;
    for (size_t i = 0; i < c->discovery.dns.n; i++) {
        if (g[i].models.n == 0) return true;
        for (size_t m = 0; m < g[i].models.n; m++)
            if (g[i].models.items[m] && strcmp(g[i].models.items[m], model) == 0) return true;
    }
    return false;
}

static bool model_known(const gw_config *c, const char *name) {
    const gw_model_cfg *m = c->models.items;
    for (size_t k = 0; k < c->models.n; k++)
        if (m[k].name && name && strcmp(m[k].name, name) == 0) return true;
    return false;
}

/* A member's id is <name>-<ip>-<port>: the name leaves room for an IPv6 address. */
#define GW_DNS_NAME_MAX (GW_REPLICA_ID_MAX - 46)

static void check_group(const gw_config *c, size_t i, ir_cfg_errors *errs) {
    const gw_dns_group_cfg *g = &((const gw_dns_group_cfg *)c->discovery.dns.items)[i];
    if (g->name && (!gw_replica_id_ok(g->name) || strlen(g->name) > GW_DNS_NAME_MAX))
        ir_cfg_errors_add(errs,
                          "discovery.dns[%zu].name: must be 1 to %d of A-Z a-z 0-9 . _ - :", i,
                          GW_DNS_NAME_MAX);
    for (size_t j = 0; g->name && j < i; j++) {
        const gw_dns_group_cfg *o = &((const gw_dns_group_cfg *)c->discovery.dns.items)[j];
        if (o->name && strcmp(o->name, g->name) == 0) {
            ir_cfg_errors_add(errs, "discovery.dns[%zu].name: '%s' is used by discovery.dns[%zu]",
                              i, g->name, j);
            break;
        }
    }
    ir_url u;
    if (g->url && ir_url_parse(g->url, &u) == 0) {
        size_t pl = strlen(u.path);
        if (strpbrk(u.path, "?#") || (pl >= 3 && strcmp(u.path + pl - 3, "/v1") == 0))
            ir_cfg_errors_add(errs,
                              "discovery.dns[%zu].url: '%s': give the engines' base URL, without "
                              "/v1, a query or a fragment",
                              i, g->url);
    }
    for (size_t m = 0; m < g->models.n; m++)
        if (!model_known(c, g->models.items[m]))
            ir_cfg_errors_add(errs,
                              "discovery.dns[%zu].models[%zu]: '%s' is not a configured model name",
                              i, m, g->models.items[m] ? g->models.items[m] : "");
    if (g->refresh_ns < 10 * 1000000ull)
        ir_cfg_errors_add(errs, "discovery.dns[%zu].refresh: at least 10ms", i);
}

void gw_check_discovery(const gw_config *c, ir_cfg_errors *errs) {
    for (size_t i = 0; i < c->discovery.dns.n; i++) check_group(c, i, errs);
    for (size_t i = 0; i < c->discovery.nameservers.n; i++) {
        char host[256];
        uint16_t port;
        const char *s = c->discovery.nameservers.items[i];
        if (!s || ir_hostport_parse(s, host, sizeof host, &port) || !*host || !port)
            ir_cfg_errors_add(errs,
                              "discovery.nameservers[%zu]: '%s' is not a host:port (e.g. "
                              "10.0.0.2:53)",
                              i, s ? s : "");
    }
}
