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

/* A member's id is <name>-<ip>-<port>: the name leaves room for an IPv6 address
 * and, with data_parallel_size N, for its targets' /dp<N-1>. */
#define GW_DNS_NAME_MAX (GW_REPLICA_ID_MAX - 46)

static size_t name_max(const gw_dns_group_cfg *g) {
    if (g->data_parallel_size <= 1) return GW_DNS_NAME_MAX;
    char suffix[32];
    int n = gw_dp_id("", g->data_parallel_size - 1, suffix, sizeof suffix);
    return n ? 0 : GW_DNS_NAME_MAX - strlen(suffix);
}

bool gw_dns_wants_events(const gw_dns_kv_events_cfg *e) {
    return e->port || e->port_srv;
}

/* A DNS name as c-ares would ask for it: 1 to 253 bytes of labels of 1 to 63 of
 * A-Z a-z 0-9 _ -, split by dots (a trailing dot allowed). */
static bool dns_name_ok(const char *s) {
    size_t n = s ? strlen(s) : 0, label = 0;
    if (n == 0 || n > 253) return false;
    for (const char *p = s; *p; p++) {
        if (*p == '.') {
            if (label == 0) return false;
            label = 0;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                   (*p >= '0' && *p <= '9') || *p == '_' || *p == '-') {
            if (++label > 63) return false;
        } else {
            return false;
        }
    }
    return true;
}

/* kv_events' SRV names: well formed, and each in place of its port, not beside it. */
static void check_srv_names(const gw_dns_kv_events_cfg *e, size_t i, ir_cfg_errors *errs) {
    const char *keys[2] = {"port_srv", "replay_port_srv"},
               *names[2] = {e->port_srv, e->replay_port_srv};
    const char *fixed_keys[2] = {"port", "replay_port"};
    int64_t fixed[2] = {e->port, e->replay_port};
    for (int k = 0; k < 2; k++) {
        if (!names[k]) continue;
        if (!dns_name_ok(names[k]))
            ir_cfg_errors_add(errs,
                              "discovery.dns[%zu].kv_events.%s: '%s' is not a DNS name (e.g. "
                              "_kv-events._tcp.vllm.inference.svc.cluster.local)",
                              i, keys[k], names[k]);
        if (fixed[k])
            ir_cfg_errors_add(errs, "discovery.dns[%zu].kv_events.%s: give %s or %s, not both", i,
                              keys[k], fixed_keys[k], keys[k]);
    }
}

/* kv_events: its ports, and their ranks' ports (port plus r), within 1..65535 and
 * apart from each other (ports from SRV records are checked as they come). */
static void check_events(const gw_dns_group_cfg *g, size_t i, ir_cfg_errors *errs) {
    const gw_dns_kv_events_cfg *e = &g->kv_events;
    int64_t last = g->data_parallel_size > 1 ? g->data_parallel_size - 1 : 0;
    check_srv_names(e, i, errs);
    if (!gw_dns_wants_events(e)) {
        if (e->replay_port || e->replay_port_srv || (e->topic && *e->topic))
            ir_cfg_errors_add(errs,
                              "discovery.dns[%zu].kv_events.port: required with kv_events "
                              "(the port of each member's KV event publisher), or port_srv",
                              i);
        return;
    }
    const char *keys[2] = {"port", "replay_port"};
    int64_t ports[2] = {e->port, e->replay_port};
    for (int k = 0; k < 2; k++)
        if (ports[k] && ports[k] + last > 65535)
            ir_cfg_errors_add(errs,
                              "discovery.dns[%zu].kv_events.%s: %lld cannot serve "
                              "data_parallel_size %lld: rank r publishes on the port plus r "
                              "(vLLM), and %lld passes 65535",
                              i, keys[k], (long long)ports[k], (long long)g->data_parallel_size,
                              (long long)(ports[k] + last));
    if (e->port && e->replay_port && e->replay_port <= e->port + last &&
        e->port <= e->replay_port + last)
        ir_cfg_errors_add(errs,
                          "discovery.dns[%zu].kv_events.replay_port: %lld collides with the "
                          "publishers' ports %lld..%lld (with data_parallel_size N, each "
                          "socket takes N ports from its own)",
                          i, (long long)e->replay_port, (long long)e->port,
                          (long long)(e->port + last));
}

static void check_group(const gw_config *c, size_t i, ir_cfg_errors *errs) {
    const gw_dns_group_cfg *g = &((const gw_dns_group_cfg *)c->discovery.dns.items)[i];
    if (g->name && (!gw_replica_id_ok(g->name) || strlen(g->name) > name_max(g)))
        ir_cfg_errors_add(
            errs, "discovery.dns[%zu].name: must be 1 to %zu of A-Z a-z 0-9 . _ - :%s", i,
            name_max(g),
            g->data_parallel_size > 1 ? " (data_parallel_size gives member ids a /dp<r> suffix)"
                                      : "");
    check_events(g, i, errs);
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
        else if (!strchr(u.host, ':') && !dns_name_ok(u.host)) /* c-ares refused it at run time */
            ir_cfg_errors_add(errs,
                              "discovery.dns[%zu].url: '%s' is not a DNS name (1 to 253 bytes, "
                              "labels of 1 to 63 of A-Z a-z 0-9 _ -)",
                              i, u.host);
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
