/* discovery.c: DNS groups (discovery.dns[]) resolved with c-ares on the control
 * loop: c-ares's sockets are libuv polls, its timeouts a timer's tick, so no
 * thread ever blocks on a lookup. Every address a group's name resolves to is a
 * fleet member named <group>-<ip>-<port>; members.c does the joining and the
 * leaving. A failed round keeps the group's last members.
 *
 * A SIGHUP reload that changes discovery builds a new gw_discovery from the new
 * file (its own channel, so new nameservers apply) and hands it what the old one
 * knew (gw_discovery_adopt): a group kept by name, url, srv, kv_events and
 * data_parallel_size keeps its members (their KV event streams too) and its next
 * round, their models and caps changed in place; a new group is looked up at once.
 * The members of a group removed, renamed, pointed elsewhere or given other ranks
 * or KV events are handed over: they keep serving until every group of the new
 * discovery has had its first answer, then leave (make before break: a group
 * renamed over the same addresses leaves no moment with neither; their streams
 * close then). One that a new group finds again by the same id, url, rank and KV
 * events stays, as that group's member, with its stream.
 *
 * With kv_events, each member's engine is followed at the member's own address
 * (tcp://<ip>:<port>); with data_parallel_size N, each address is N targets
 * <member>/dp<r>, made by dp.c's rules (ids, ports plus r) as a configured
 * replica's ranks are. members.c opens and closes their streams as they join and
 * leave (gw_kvsub_member).
 *
 * kv_events.port_srv and replay_port_srv take those ports from SRV records instead
 * (a Kubernetes headless Service publishes one SRV name per named port, each
 * record's target a pod's host name): each round also asks for those names and
 * looks up their targets, and a member whose address a target resolves to gets
 * that record's port. A failed event lookup keeps the ports last found; a member
 * whose ports change leaves and joins again with its new streams. */
#include "gateway/gateway.h"

#include <ares.h>
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DNS_TICK_MS      20
#define DNS_TTL_FLOOR_NS 1000000000ull /* a TTL brings a round sooner, never under this */

typedef struct dns_addr {
    char ip[INET6_ADDRSTRLEN];
    uint16_t port;
} dns_addr;

struct dns_group;

/* One of kv_events' SRV names (0: port_srv, 1: replay_port_srv): its records'
 * targets are looked up, and each address found takes its record's port. */
typedef struct dns_evsrv {
    struct dns_group *g;
    const char *name;                /* the SRV name */
    const char *key;                 /* port_srv or replay_port_srv, for the log */
    int status;                      /* the round's first failure, or ARES_SUCCESS */
    bool failing;                    /* the last round's lookup failed (logged once) */
    dns_addr found[GW_MAX_REPLICAS]; /* this round's: target addresses, record ports */
    size_t nfound;
    dns_addr known[GW_MAX_REPLICAS]; /* the last good round's */
    size_t nknown;
} dns_evsrv;

typedef struct dns_group {
    gw_discovery *d;
    const gw_dns_group_cfg *cfg;
    ir_url url;          /* host: the name looked up */
    gw_replica_cfg tmpl; /* what every member gets but its id, url, rank and endpoints */
    int64_t ranks;       /* routing targets per address: data_parallel_size */
    /* the targets that are members: their slots, addresses and ranks */
    int members[GW_MAX_REPLICAS];
    dns_addr maddr[GW_MAX_REPLICAS];
    int64_t mrank[GW_MAX_REPLICAS];
    int64_t mports[GW_MAX_REPLICAS][2]; /* their KV event ports: publisher, replay; 0: none */
    size_t nmembers;
    dns_evsrv *evsrv[2]; /* kv_events.port_srv, replay_port_srv; NULL: not named (owned) */
    /* the round in progress */
    bool busy;
    int outstanding; /* lookups not answered yet, plus one while they are sent */
    int status;      /* the round's first failure, or ARES_SUCCESS */
    dns_addr found[GW_MAX_REPLICAS];
    size_t nfound;
    int64_t min_ttl;             /* seconds; -1: none */
    uint64_t ttl_ns;             /* the last good round's TTL wait (floored); 0: none */
    uint64_t next;               /* monotonic ns of the next round */
    bool failing;                /* the last round failed (logged once) */
    bool warned_shared;          /* members sharing an address, and so event ports (logged once) */
    bool warned_ports;           /* event ports from SRV records left out (logged once) */
    bool warned_room;            /* a target found no slot (logged once until one joins again) */
    bool warned_many;            /* more addresses than GW_MAX_REPLICAS (logged once) */
    bool warned_unusable;        /* an address no request can reach (logged once) */
    bool warned_targets;         /* some SRV targets did not resolve (logged once) */
    int targets, targets_failed; /* this round's SRV targets, and those that failed */
    int target_status;           /* the first SRV target's failure */
    /* a member's new KV event ports, taken when two rounds in a row give them (one round's
     * ports, hostile or flapping, cannot make it leave and join: a slot each time) */
    int64_t mpending[GW_MAX_REPLICAS][2];
    bool done_once; /* a round has ended (start-up waits for it) */
    bool answered;  /* a round has succeeded (a reload's handover waits for it) */
} dns_group;

typedef struct dns_sock {
    uv_poll_t poll;
    ares_socket_t fd;
    gw_discovery *d;
    struct dns_sock *next;
} dns_sock;

/* A member of a group that a reload removed or changed, serving until the new
 * discovery has settled (group: its old group's name, in the retired config). */
typedef struct dns_outgoing {
    int slot;
    const char *group;
} dns_outgoing;

/* A member's settings when a reload changed its group's models or caps (the slot's
 * own dyn_cfg may be read by workers, so a new one is published instead). */
typedef struct dns_cfg {
    gw_replica_cfg cfg;
    struct dns_cfg *next;
} dns_cfg;

struct gw_discovery {
    gw_app *app;
    const gw_discovery_cfg *cfg;
    dns_cfg *cfgs; /* kept until free: members may point to them */
    uv_loop_t *loop;
    ares_channel ch;
    bool channel_ok, started, stopping;
    uv_timer_t tick;
    dns_sock *socks;
    dns_group *groups;
    size_t ngroups;
    dns_outgoing outgoing[GW_MAX_REPLICAS];
    size_t noutgoing;
};

/* ---- c-ares on the loop ------------------------------------------------------------ */

static void on_sock_closed(uv_handle_t *h) {
    free(h->data);
}

static void on_sock_io(uv_poll_t *p, int status, int events) {
    dns_sock *s = p->data;
    ares_socket_t r = ARES_SOCKET_BAD, w = ARES_SOCKET_BAD;
    if (status < 0 || (events & UV_READABLE)) r = s->fd;
    if (status < 0 || (events & UV_WRITABLE)) w = s->fd;
    ares_process_fd(s->d->ch, r, w);
}

static void on_sock_state(void *data, ares_socket_t fd, int readable, int writable) {
    gw_discovery *d = data;
    dns_sock **pp = &d->socks;
    while (*pp && (*pp)->fd != fd) pp = &(*pp)->next;
    dns_sock *s = *pp;
    if (!readable && !writable) {
        if (!s) return;
        *pp = s->next;
        uv_poll_stop(&s->poll);
        uv_close((uv_handle_t *)&s->poll, on_sock_closed);
        return;
    }
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s || uv_poll_init_socket(d->loop, &s->poll, fd)) {
            free(s);
            IR_ERROR("discovery", "cannot watch a DNS socket");
            return;
        }
        s->fd = fd;
        s->d = d;
        s->poll.data = s;
        s->next = d->socks;
        d->socks = s;
    }
    uv_poll_start(&s->poll, (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0),
                  on_sock_io);
}

/* ---- one group's round --------------------------------------------------------------- */

static bool sockaddr_addr(const struct sockaddr *sa, dns_addr *a) {
    *a = (dns_addr){0};
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &v4->sin_addr, a->ip, sizeof a->ip);
        a->port = ntohs(v4->sin_port);
        return true;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &v6->sin6_addr, a->ip, sizeof a->ip);
        a->port = ntohs(v6->sin6_port);
        return true;
    }
    return false;
}

static bool addr_same(const dns_addr *a, const dns_addr *b) {
    return a->port == b->port && strcmp(a->ip, b->ip) == 0;
}

static void note_ttl(dns_group *g, int64_t ttl) {
    if (ttl >= 0 && (g->min_ttl < 0 || ttl < g->min_ttl)) g->min_ttl = ttl;
}

/* Adds a to set (of n, at most GW_MAX_REPLICAS), once; false when the set is full. */
static bool add_addr(dns_addr *set, size_t *n, const dns_addr *a) {
    for (size_t i = 0; i < *n; i++)
        if (addr_same(&set[i], a)) return true;
    if (*n >= GW_MAX_REPLICAS) return false;
    set[(*n)++] = *a;
    return true;
}

/* An address no request could reach: unspecified, multicast or broadcast, or IPv6
 * link-local (an answer carries no zone to reach it through). */
static bool unusable(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET) {
        uint32_t v = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);
        return v == 0 || (v >> 28) == 0xe || v == 0xffffffffu;
    }
    const struct in6_addr *v6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_UNSPECIFIED(v6) || IN6_IS_ADDR_MULTICAST(v6) || IN6_IS_ADDR_LINKLOCAL(v6);
}

static bool is_member_addr(const dns_group *g, const dns_addr *a) {
    for (size_t i = 0; i < g->nmembers; i++)
        if (addr_same(&g->maddr[i], a)) return true;
    return false;
}

/* A full set (more answers than members allowed): an address that is a member already
 * takes the place of one that is not, so that answers given in another order each time
 * (round robin) do not swap members in and out. True when a took a place. */
static bool keep_member_addr(const dns_group *g, dns_addr *set, size_t n, const dns_addr *a) {
    if (set != g->found || !is_member_addr(g, a)) return false;
    for (size_t i = 0; i < n; i++)
        if (!is_member_addr(g, &set[i])) {
            set[i] = *a;
            return true;
        }
    return false;
}

/* The addresses of a lookup's answer into set, their TTLs into g's. */
static void add_answer(dns_group *g, const struct ares_addrinfo *res, dns_addr *set, size_t *n) {
    dns_addr a;
    for (const struct ares_addrinfo_node *x = res->nodes; x; x = x->ai_next) {
        if (!x->ai_addr || !sockaddr_addr(x->ai_addr, &a)) continue;
        if (unusable(x->ai_addr)) {
            if (!g->warned_unusable)
                IR_WARN("discovery",
                        "group %s: left out %s, which no request can reach (unspecified, "
                        "multicast, or link-local: an answer carries no zone); logged once",
                        g->cfg->name, a.ip);
            g->warned_unusable = true;
            continue;
        }
        note_ttl(g, x->ai_ttl);
        if (add_addr(set, n, &a) || keep_member_addr(g, set, *n, &a)) continue;
        if (!g->warned_many) {
            IR_WARN("discovery",
                    "group %s: more than %d addresses; the rest are left out (logged once)",
                    g->cfg->name, GW_MAX_REPLICAS);
            g->warned_many = true;
        }
    }
}

static bool found_has(const dns_group *g, const dns_addr *a) {
    for (size_t i = 0; i < g->nfound; i++)
        if (addr_same(&g->found[i], a)) return true;
    return false;
}

/* tcp://<ip>:<port> moved to rank r's port (dp.c's rule, as vLLM's); NULL: no port. */
static char *target_endpoint(const char *ip, int64_t port, int64_t r, char *out) {
    char base[GW_EV_ENDPOINT_MAX];
    bool v6 = strchr(ip, ':') != NULL;
    if (!port) return NULL;
    snprintf(base, sizeof base, "tcp://%s%s%s:%lld", v6 ? "[" : "", ip, v6 ? "]" : "",
             (long long)port);
    return gw_dp_endpoint(base, r, out, GW_EV_ENDPOINT_MAX) ? NULL : out;
}

void gw_dns_member_tmpl(const gw_dns_group_cfg *c, gw_replica_cfg *out) {
    *out = (gw_replica_cfg){.models = c->models,
                            .max_concurrency = c->max_concurrency,
                            .max_pending = c->max_pending,
                            .kv_capacity_blocks = c->kv_capacity_blocks,
                            .kv_events.topic = c->kv_events.topic,
                            .data_parallel_size = c->data_parallel_size};
}

int gw_dns_target(const gw_dns_group_cfg *c, const char *path, const char *ip, uint16_t port,
                  int64_t r, gw_dns_target_cfg *t) {
    return gw_dns_target_ports(c, path, ip, port, r, c->kv_events.port, c->kv_events.replay_port,
                               t);
}

int gw_dns_target_ports(const gw_dns_group_cfg *c, const char *path, const char *ip, uint16_t port,
                        int64_t r, int64_t ev_port, int64_t replay_port, gw_dns_target_cfg *t) {
    bool v6 = strchr(ip, ':') != NULL, ranked = c->data_parallel_size > 1;
    char base[GW_REPLICA_ID_MAX + 1];
    int n = snprintf(base, sizeof base, "%s-%s-%u", c->name, ip, port);
    if (n < 0 || (size_t)n >= sizeof base || r < 0 || r >= (ranked ? c->data_parallel_size : 1))
        return -1;
    if (ranked ? gw_dp_id(base, r, t->id, sizeof t->id)
               : snprintf(t->id, sizeof t->id, "%s", base) < 0)
        return -1;
    if (strlen(t->id) > GW_REPLICA_ID_MAX) return -1;
    int un = snprintf(t->url, sizeof t->url, "http://%s%s%s:%u%s", v6 ? "[" : "", ip, v6 ? "]" : "",
                      port, path);
    if (un < 0 || (size_t)un >= sizeof t->url) return -1;
    gw_dns_member_tmpl(c, &t->cfg);
    t->cfg.id = t->id;
    t->cfg.url = t->url;
    t->cfg.dp_target = ranked;
    t->cfg.dp_rank = ranked ? r : 0;
    t->cfg.kv_events.endpoint = target_endpoint(ip, ev_port, r, t->events[0]);
    t->cfg.kv_events.replay_endpoint =
        t->cfg.kv_events.endpoint ? target_endpoint(ip, replay_port, r, t->events[1]) : NULL;
    return ev_port && !t->cfg.kv_events.endpoint ? -1 : 0;
}

static bool strlist_same(const ir_cfg_strlist *a, const ir_cfg_strlist *b) {
    if (a->n != b->n) return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->items[i] ? a->items[i] : "", b->items[i] ? b->items[i] : "") != 0)
            return false;
    return true;
}

/* Member r's settings become its group's template (with its own id and url),
 * published as a new dns_cfg; false when out of memory (it keeps its settings). */
static bool take_tmpl(dns_group *g, gw_replica *r) {
    dns_cfg *c = calloc(1, sizeof *c);
    if (!c) {
        IR_WARN("discovery", "replica %s: out of memory; it keeps its settings", r->cfg->id);
        return false;
    }
    c->cfg = *r->cfg; /* its own id, url, rank and KV events; the group's models and caps */
    c->cfg.models = g->tmpl.models;
    c->cfg.max_concurrency = g->tmpl.max_concurrency;
    c->cfg.max_pending = g->tmpl.max_pending;
    c->cfg.kv_capacity_blocks = g->tmpl.kv_capacity_blocks;
    c->next = g->d->cfgs;
    g->d->cfgs = c;
    atomic_store(&r->cfg, &c->cfg);
    return true;
}

/* Member slot takes its group's models and caps when they differ from its own (a
 * reload changed them, or it came back to its old slot with settings of before);
 * then its series and model mask follow its settings and the fleet's models, which
 * a reload may have changed while it was away (the mask is made when a slot is
 * filled, and a slot that comes back keeps it). */
static void retune(dns_group *g, int slot) {
    gw_fleet *f = &g->d->app->fleet;
    gw_replica *r = &f->replicas[slot];
    const gw_replica_cfg *o = r->cfg, *t = &g->tmpl;
    bool same = strlist_same(&o->models, &t->models) && o->max_concurrency == t->max_concurrency &&
                o->max_pending == t->max_pending && o->kv_capacity_blocks == t->kv_capacity_blocks;
    bool cap_changed = o->kv_capacity_blocks != t->kv_capacity_blocks;
    if (!same && !take_tmpl(g, r)) return;
    gw_metrics_replica_models(g->d->app, r); /* its series for models new to it, first */
    gw_replica_models(f, r);
    if (cap_changed) {
        irx_set_capacity(f->index, (uint32_t)slot, gw_capacity_blocks(f, t->kv_capacity_blocks));
    }
}

/* An outgoing member named t's id: the same target (url, rank, KV events), it is
 * g's member from now on (its slot; it never left, its stream stays); another, it
 * leaves now that its successor joins (-1). */
static int claim_outgoing(dns_group *g, const gw_dns_target_cfg *t) {
    gw_discovery *d = g->d;
    gw_fleet *f = &d->app->fleet;
    for (size_t i = 0; i < d->noutgoing; i++) {
        const dns_outgoing o = d->outgoing[i];
        gw_replica *r = &f->replicas[o.slot];
        if (strcmp(r->dyn_id, t->id) != 0) continue;
        d->outgoing[i] = d->outgoing[--d->noutgoing];
        if (gw_replica_same_target(r, t->url, &t->cfg)) return o.slot;
        gw_fleet_leave(f, (uint32_t)o.slot);
        IR_INFO("discovery", "group %s: replica %s left (the group changed)", o.group, t->id);
        return -1;
    }
    return -1;
}

static bool has_target(const dns_group *g, const dns_addr *a, int64_t r) {
    for (size_t k = 0; k < g->nmembers; k++)
        if (g->mrank[k] == r && addr_same(&g->maddr[k], a)) return true;
    return false;
}

/* Members on one address (SRV targets with several ports on one host) would read
 * the same event ports: said once per group. */
static void warn_shared_address(dns_group *g, const dns_addr *a) {
    for (size_t k = 0;
         k < g->nmembers && !g->warned_shared && gw_dns_wants_events(&g->cfg->kv_events); k++) {
        if (g->maddr[k].port == a->port || strcmp(g->maddr[k].ip, a->ip) != 0) continue;
        IR_WARN("discovery",
                "group %s: members at %s share that address, and so the KV event ports "
                "of kv_events: each stream reads the same engine; give such engines groups "
                "of their own",
                g->cfg->name, a->ip);
        g->warned_shared = true;
    }
}

/* The port that q's records give the address ip (the lowest, when several do; said
 * once per group); 0: none. */
static int64_t srv_port_of(dns_group *g, const dns_evsrv *q, const char *ip) {
    int64_t port = 0;
    bool several = false;
    for (size_t i = 0; i < q->nknown; i++) {
        if (strcmp(q->known[i].ip, ip) != 0) continue;
        several |= port && port != q->known[i].port;
        if (!port || q->known[i].port < port) port = q->known[i].port;
    }
    if (several && !g->warned_ports) {
        IR_WARN("discovery",
                "group %s: several kv_events.%s records (%s) resolve to %s; its members there "
                "take the lowest port, %lld",
                g->cfg->name, q->key, q->name, ip, (long long)port);
        g->warned_ports = true;
    }
    return port;
}

/* The KV event ports of the member at ip, publisher's and replay's (0: none): the
 * group's, or its SRV records'. Ports from records whose ranks would pass 65535 or
 * overlap (port plus r) are left out, said once per group. */
static void member_ports(dns_group *g, const char *ip, int64_t out[2]) {
    const gw_dns_kv_events_cfg *e = &g->cfg->kv_events;
    out[0] = g->evsrv[0] ? srv_port_of(g, g->evsrv[0], ip) : e->port;
    out[1] = g->evsrv[1] ? srv_port_of(g, g->evsrv[1], ip) : e->replay_port;
    int64_t last = g->ranks - 1, pub = out[0], replay = out[1];
    const char *why = NULL;
    if (!out[0]) {
        out[1] = 0;
    } else if (out[0] + last > 65535) {
        why = "the publisher's ranks pass port 65535; no events";
        out[0] = out[1] = 0;
    } else if (out[1] &&
               (out[1] + last > 65535 || (out[1] <= out[0] + last && out[0] <= out[1] + last))) {
        why = "the replay ranks pass port 65535 or overlap the publisher's; no replay";
        out[1] = 0;
    }
    if (why && !g->warned_ports) {
        IR_WARN("discovery",
                "group %s: the member at %s has KV event ports %lld and replay %lld from SRV "
                "records, with data_parallel_size %lld: %s",
                g->cfg->name, ip, (long long)pub, (long long)replay, (long long)g->ranks, why);
        g->warned_ports = true;
    }
}

static bool ports_same(const int64_t a[2], const int64_t b[2]) {
    return a[0] == b[0] && a[1] == b[1];
}

/* Target (a, r) joins the fleet (or stays, handed over by a reload). */
static void join_target(dns_group *g, const dns_addr *a, int64_t r) {
    warn_shared_address(g, a);
    gw_fleet *f = &g->d->app->fleet;
    gw_dns_target_cfg t;
    int64_t ports[2];
    member_ports(g, a->ip, ports);
    bool ok =
        gw_dns_target_ports(g->cfg, g->url.path, a->ip, a->port, r, ports[0], ports[1], &t) == 0;
    int slot = ok ? claim_outgoing(g, &t) : -1;
    if (ok && slot < 0) slot = gw_fleet_join(f, t.id, t.url, &t.cfg);
    if (slot < 0 || g->nmembers >= GW_MAX_REPLICAS) {
        if (!g->warned_room)
            IR_WARN("discovery",
                    "group %s: no room for replica %s (at most %d replicas, and a slot a "
                    "member left is kept 10 s); logged once until one joins again",
                    g->cfg->name, ok ? t.id : a->ip, GW_MAX_REPLICAS);
        g->warned_room = true;
        if (slot >= 0) gw_fleet_leave(f, (uint32_t)slot);
        return;
    }
    g->warned_room = false;
    retune(g, slot); /* it may have come back to its old slot, as it was then */
    g->members[g->nmembers] = slot;
    g->maddr[g->nmembers] = *a;
    memcpy(g->mports[g->nmembers], ports, sizeof ports);
    memcpy(g->mpending[g->nmembers], ports, sizeof ports);
    g->mrank[g->nmembers++] = r;
    IR_INFO("discovery", "group %s: replica %s joined (%s%s%s)", g->cfg->name, t.id, t.url,
            t.cfg.kv_events.endpoint ? ", KV events at " : "",
            t.cfg.kv_events.endpoint ? t.cfg.kv_events.endpoint : "");
}

static void leave(dns_group *g, int slot, const char *why) {
    gw_fleet *f = &g->d->app->fleet;
    IR_INFO("discovery", "group %s: replica %s left%s", g->cfg->name, f->replicas[slot].dyn_id,
            why);
    gw_fleet_leave(f, (uint32_t)slot);
}

/* Whether member i keeps its slot this round: its address was found, and its event
 * ports are the ones it has, or new ones not yet given by two rounds in a row. */
static bool stays(dns_group *g, size_t i) {
    int64_t ports[2];
    member_ports(g, g->maddr[i].ip, ports);
    if (ports_same(ports, g->mports[i])) {
        memcpy(g->mpending[i], ports, sizeof ports);
        return true;
    }
    bool again = ports_same(ports, g->mpending[i]);
    memcpy(g->mpending[i], ports, sizeof ports);
    return !again;
}

static void keep_member(dns_group *g, size_t to, size_t from) {
    g->members[to] = g->members[from];
    g->maddr[to] = g->maddr[from];
    memcpy(g->mports[to], g->mports[from], sizeof g->mports[0]);
    memcpy(g->mpending[to], g->mpending[from], sizeof g->mpending[0]);
    g->mrank[to] = g->mrank[from];
}

/* The round succeeded: the addresses found are the members now (each as
 * data_parallel_size targets). */
static void apply(dns_group *g) {
    size_t kept = 0, ngone = 0;
    int gone[GW_MAX_REPLICAS];
    for (size_t i = 0; i < g->nmembers; i++) {
        if (!found_has(g, &g->maddr[i])) {
            gone[ngone++] = g->members[i]; /* leaves once the new members are in */
        } else if (stays(g, i)) {
            keep_member(g, kept++, i);
        } else { /* the same id comes back with its new ports: it must leave first */
            leave(g, g->members[i], " (its KV event ports changed)");
        }
    }
    g->nmembers = kept;
    for (size_t i = 0; i < g->nfound; i++)     /* who joined: before anyone leaves, so that a */
        for (int64_t r = 0; r < g->ranks; r++) /* new set of members never meets an empty one */
            if (!has_target(g, &g->found[i], r)) join_target(g, &g->found[i], r);
    for (size_t i = 0; i < ngone; i++) leave(g, gone[i], "");
}

/* The members handed over by a reload leave (every group has had its first
 * answer: those it found again were claimed). Each line is logged once its member
 * is out, so the last one's time ends the handover (the stress scenario reads it). */
static void release_outgoing(gw_discovery *d) {
    gw_fleet *f = &d->app->fleet;
    for (size_t i = 0; i < d->noutgoing; i++) {
        const dns_outgoing o = d->outgoing[i];
        gw_fleet_leave(f, (uint32_t)o.slot);
        IR_INFO("discovery", "group %s: replica %s left (the group changed)", o.group,
                f->replicas[o.slot].dyn_id);
    }
    d->noutgoing = 0;
}

/* A good round: an event SRV name's answers become its known ports, or, when its
 * own lookup failed, the last ones found stay (logged once). */
static void settle_evsrv(dns_evsrv *q) {
    if (!q) return;
    const char *group = q->g->cfg->name;
    if (q->status == ARES_SUCCESS) {
        if (q->failing)
            IR_INFO("discovery", "group %s: kv_events.%s %s resolves again", group, q->key,
                    q->name);
        q->failing = false;
        memcpy(q->known, q->found, q->nfound * sizeof q->found[0]);
        q->nknown = q->nfound;
        return;
    }
    if (!q->failing)
        IR_WARN("discovery",
                "group %s: looking up kv_events.%s %s failed: %s; its members keep the ports "
                "last found",
                group, q->key, q->name, ares_strerror(q->status));
    q->failing = true;
}

/* Whether every group has had a good answer: the members a reload handed over leave
 * then, and not before (a reload during a DNS outage emptied the fleet otherwise). */
static bool answered_all(const gw_discovery *d) {
    for (size_t i = 0; i < d->ngroups; i++)
        if (!d->groups[i].answered) return false;
    return true;
}

/* SRV targets that did not resolve: logged once while some do; when none does, the
 * round fails with the first one's reason. */
static void judge_targets(dns_group *g) {
    if (g->status != ARES_SUCCESS || !g->targets_failed) {
        if (g->status == ARES_SUCCESS) g->warned_targets = false;
        return;
    }
    if (g->targets_failed == g->targets) {
        g->status = g->target_status;
        return;
    }
    if (!g->warned_targets)
        IR_WARN("discovery",
                "group %s: %d of %d SRV targets of %s did not resolve (the first: %s); the "
                "others are the members (logged once)",
                g->cfg->name, g->targets_failed, g->targets, g->url.host,
                g->target_status == ARES_EBADQUERY ? "port 0" : ares_strerror(g->target_status));
    g->warned_targets = true;
}

static void round_done(dns_group *g) {
    uint64_t now = ir_now_ns();
    judge_targets(g);
    if (g->status != ARES_SUCCESS) {
        if (!g->failing)
            IR_WARN("discovery", "group %s: looking up %s failed: %s; keeping its %zu members",
                    g->cfg->name, g->url.host, ares_strerror(g->status), g->nmembers);
        g->failing = true;
    } else {
        if (g->failing)
            IR_INFO("discovery", "group %s: %s resolves again", g->cfg->name, g->url.host);
        g->failing = false;
        g->answered = true;
        for (int k = 0; k < 2; k++) settle_evsrv(g->evsrv[k]);
        apply(g);
    }
    /* The next round: at refresh, or sooner when the answers' TTLs say so; a failed
     * round keeps the last good round's TTL, so a short-lived record is asked again
     * at its own pace. */
    uint64_t wait = g->cfg->refresh_ns;
    if (g->status == ARES_SUCCESS)
        g->ttl_ns =
            g->min_ttl < 0 ? 0 : IR_MAX((uint64_t)g->min_ttl * 1000000000ull, DNS_TTL_FLOOR_NS);
    if (g->ttl_ns && g->ttl_ns < wait) wait = g->ttl_ns;
    g->next = now + wait;
    g->done_once = true;
    if (answered_all(g->d)) release_outgoing(g->d);
}

static void lookup_done(dns_group *g) {
    if (--g->outstanding > 0) return;
    g->busy = false;
    if (!g->d->stopping) round_done(g);
}

static void on_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
    (void)timeouts;
    dns_group *g = arg;
    if (status == ARES_SUCCESS && res)
        add_answer(g, res, g->found, &g->nfound);
    else if (g->status == ARES_SUCCESS)
        g->status = status == ARES_SUCCESS ? ARES_ENODATA : status;
    if (res) ares_freeaddrinfo(res);
    lookup_done(g);
}

/* An event SRV record's target: its addresses, with the record's port. */
static void on_ev_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
    (void)timeouts;
    dns_evsrv *q = arg;
    if (status == ARES_SUCCESS && res)
        add_answer(q->g, res, q->found, &q->nfound);
    else if (q->status == ARES_SUCCESS)
        q->status = status == ARES_SUCCESS ? ARES_ENODATA : status;
    if (res) ares_freeaddrinfo(res);
    lookup_done(q->g);
}

static void lookup_addrs_cb(dns_group *g, const char *host, uint16_t port,
                            ares_addrinfo_callback cb, void *arg) {
    struct ares_addrinfo_hints h = {.ai_family = AF_UNSPEC, .ai_flags = ARES_AI_NUMERICSERV};
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    g->outstanding++;
    ares_getaddrinfo(g->d->ch, host, service, &h, cb, arg);
}

static void lookup_addrs(dns_group *g, const char *host, uint16_t port) {
    lookup_addrs_cb(g, host, port, on_addrinfo, g);
}

/* An SRV record's target: its failure is its own (a target that is gone, or has no
 * address), not the round's, unless every target fails (round_done). */
static void on_target_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
    (void)timeouts;
    dns_group *g = arg;
    if (status == ARES_SUCCESS && res) {
        add_answer(g, res, g->found, &g->nfound);
    } else {
        if (!g->targets_failed++) g->target_status = status == ARES_SUCCESS ? ARES_ENODATA : status;
    }
    if (res) ares_freeaddrinfo(res);
    lookup_done(g);
}

static void lookup_target(dns_group *g, const char *host, uint16_t port) {
    g->targets++;
    if (port == 0) { /* c-ares refuses service "0" (ARES_ESERVICE) */
        if (!g->targets_failed++) g->target_status = ARES_EBADQUERY;
        return;
    }
    lookup_addrs_cb(g, host, port, on_target_addrinfo, g);
}

/* An SRV reply's records into *srv (NULL, or ares_free_data them), their TTL
 * (which ares_parse_srv_reply drops) noted from the raw reply; the status. */
static int read_srv(dns_group *g, int status, const unsigned char *abuf, int alen,
                    struct ares_srv_reply **srv) {
    *srv = NULL;
    if (status == ARES_SUCCESS) status = ares_parse_srv_reply(abuf, alen, srv);
    uint32_t ttl;
    if (status == ARES_SUCCESS && alen > 0 && gw_dns_srv_ttl(abuf, (size_t)alen, &ttl) == 0)
        note_ttl(g, ttl);
    return status;
}

/* The records of an event SRV name: each target's addresses are looked up. A failure
 * is the name's own, not the round's (members come and go by the group's name). */
static void on_ev_srv(void *arg, int status, int timeouts, unsigned char *abuf, int alen) {
    (void)timeouts;
    dns_evsrv *q = arg;
    dns_group *g = q->g;
    struct ares_srv_reply *srv;
    status = read_srv(g, status, abuf, alen, &srv);
    if (status != ARES_SUCCESS) {
        if (q->status == ARES_SUCCESS) q->status = status;
    } else if (!g->d->stopping) {
        for (struct ares_srv_reply *s = srv; s; s = s->next)
            lookup_addrs_cb(g, s->host, s->port, on_ev_addrinfo, q);
    }
    if (srv) ares_free_data(srv);
    lookup_done(g);
}

/* SRV records name targets and ports; each target's addresses are then looked up. */
static void on_srv(void *arg, int status, int timeouts, unsigned char *abuf, int alen) {
    (void)timeouts;
    dns_group *g = arg;
    struct ares_srv_reply *srv;
    status = read_srv(g, status, abuf, alen, &srv);
    if (status != ARES_SUCCESS) {
        if (g->status == ARES_SUCCESS) g->status = status;
    } else if (!g->d->stopping) {
        for (struct ares_srv_reply *s = srv; s; s = s->next) lookup_target(g, s->host, s->port);
    }
    if (srv) ares_free_data(srv);
    lookup_done(g);
}

static void start_round(dns_group *g) {
    g->busy = true;
    g->outstanding = 1; /* held until every lookup is sent: answers may come at once */
    g->status = ARES_SUCCESS;
    g->nfound = 0;
    g->min_ttl = -1;
    g->targets = g->targets_failed = 0;
    g->target_status = ARES_SUCCESS;
    if (g->cfg->srv) {
        g->outstanding++;
        ares_query(g->d->ch, g->url.host, ns_c_in, ns_t_srv, on_srv, g);
    } else {
        lookup_addrs(g, g->url.host, g->url.port);
    }
    for (int k = 0; k < 2; k++) {
        dns_evsrv *q = g->evsrv[k];
        if (!q) continue;
        q->status = ARES_SUCCESS;
        q->nfound = 0;
        g->outstanding++;
        ares_query(g->d->ch, q->name, ns_c_in, ns_t_srv, on_ev_srv, q);
    }
    lookup_done(g);
}

static void on_tick(uv_timer_t *t) {
    gw_discovery *d = t->data;
    if (d->stopping) return;
    ares_process_fd(d->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD); /* timeouts and retries */
    uint64_t now = ir_now_ns();
    for (size_t i = 0; i < d->ngroups && !d->stopping; i++)
        if (!d->groups[i].busy && now >= d->groups[i].next) start_round(&d->groups[i]);
}

/* ---- lifetime ------------------------------------------------------------------------- */

int gw_dns_set_servers(struct ares_channeldata *ch, const ir_cfg_strlist *ns) {
    if (!ns || ns->n == 0) return ARES_SUCCESS;
    ir_buf csv;
    ir_buf_init(&csv, 1 << 16);
    for (size_t i = 0; i < ns->n; i++) {
        if (i) ir_buf_append_lit(&csv, ",");
        ir_buf_append_str(&csv, ns->items[i]);
    }
    int rc = ir_buf_append(&csv, "", 1) ? ARES_ENOMEM : ares_set_servers_ports_csv(ch, csv.data);
    ir_buf_free(&csv);
    return rc;
}

static int set_nameservers(gw_discovery *d, char *err, size_t errlen) {
    int rc = gw_dns_set_servers(d->ch, &d->cfg->nameservers);
    if (rc != ARES_SUCCESS) snprintf(err, errlen, "discovery.nameservers: %s", ares_strerror(rc));
    return rc == ARES_SUCCESS ? 0 : -1;
}

static int init_channel(gw_discovery *d, char *err, size_t errlen) {
    int rc = ares_library_init(ARES_LIB_INIT_ALL);
    if (rc != ARES_SUCCESS) {
        snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
        return -1;
    }
    struct ares_options o = {
        .sock_state_cb = on_sock_state, .sock_state_cb_data = d, .timeout = 1000, .tries = 2};
    rc =
        ares_init_options(&d->ch, &o, ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
    if (rc != ARES_SUCCESS) {
        ares_library_cleanup();
        snprintf(err, errlen, "c-ares: %s", ares_strerror(rc));
        return -1;
    }
    d->channel_ok = true;
    return set_nameservers(d, err, errlen);
}

/* false: out of memory */
static bool init_group(gw_discovery *d, dns_group *g, const gw_dns_group_cfg *c) {
    g->d = d;
    g->cfg = c;
    ir_url_parse(c->url, &g->url); /* checked with the config */
    size_t hl = strlen(g->url.host);
    if (hl >= 2 && g->url.host[0] == '[' && g->url.host[hl - 1] == ']') {
        memmove(g->url.host, g->url.host + 1, hl - 2);
        g->url.host[hl - 2] = '\0';
    }
    gw_dns_member_tmpl(c, &g->tmpl);
    const char *names[2] = {c->kv_events.port_srv, c->kv_events.replay_port_srv};
    const char *keys[2] = {"port_srv", "replay_port_srv"};
    g->ranks = c->data_parallel_size > 1 ? c->data_parallel_size : 1;
    g->min_ttl = -1;
    for (int k = 0; k < 2; k++) {
        if (!names[k]) continue;
        if (!(g->evsrv[k] = calloc(1, sizeof *g->evsrv[k]))) return false;
        *g->evsrv[k] = (dns_evsrv){.g = g, .name = names[k], .key = keys[k]};
    }
    return true;
}

gw_discovery *gw_discovery_new(gw_app *app, const gw_discovery_cfg *cfg, uv_loop_t *loop, char *err,
                               size_t errlen) {
    gw_discovery *d = calloc(1, sizeof *d);
    const ir_cfg_list *groups = &cfg->dns;
    if (d) d->groups = calloc(groups->n ? groups->n : 1, sizeof *d->groups);
    if (!d || !d->groups) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->app = app;
    d->cfg = cfg;
    d->loop = loop;
    d->ngroups = groups->n;
    bool ok = true;
    for (size_t i = 0; i < d->ngroups; i++)
        ok &= init_group(d, &d->groups[i], &((const gw_dns_group_cfg *)groups->items)[i]);
    if (!ok) snprintf(err, errlen, "out of memory");
    if (!ok || init_channel(d, err, errlen)) {
        gw_discovery_stop(d);
        gw_discovery_free(d);
        return NULL;
    }
    return d;
}

int gw_discovery_start(gw_discovery *d) {
    uv_timer_init(d->loop, &d->tick);
    d->tick.data = d;
    d->started = true;
    uv_timer_start(&d->tick, on_tick, 0, DNS_TICK_MS);
    return 0;
}

bool gw_discovery_settled(const gw_discovery *d) {
    for (size_t i = 0; i < d->ngroups; i++)
        if (!d->groups[i].done_once) return false;
    return true;
}

void gw_discovery_stop(gw_discovery *d) {
    if (!d || d->stopping) return;
    d->stopping = true;
    if (d->started) {
        uv_timer_stop(&d->tick);
        uv_close((uv_handle_t *)&d->tick, NULL);
    }
    if (d->channel_ok) {
        ares_destroy(d->ch); /* answers ARES_EDESTRUCTION; closes its sockets (on_sock_state) */
        ares_library_cleanup();
        d->channel_ok = false;
    }
    while (d->socks) {
        dns_sock *s = d->socks;
        d->socks = s->next;
        uv_poll_stop(&s->poll);
        uv_close((uv_handle_t *)&s->poll, on_sock_closed);
    }
}

/* ---- a reload ----------------------------------------------------------------------------- */

static dns_group *group_named(gw_discovery *d, const char *name) {
    for (size_t i = 0; d && i < d->ngroups; i++)
        if (strcmp(d->groups[i].cfg->name, name) == 0) return &d->groups[i];
    return NULL;
}

/* Group g of the new file takes over old group o's members and schedule. */
static void take_over(dns_group *g, dns_group *o) {
    memcpy(g->members, o->members, o->nmembers * sizeof o->members[0]);
    memcpy(g->maddr, o->maddr, o->nmembers * sizeof o->maddr[0]);
    memcpy(g->mrank, o->mrank, o->nmembers * sizeof o->mrank[0]);
    memcpy(g->mports, o->mports, o->nmembers * sizeof o->mports[0]);
    memcpy(g->mpending, o->mpending, o->nmembers * sizeof o->mpending[0]);
    g->nmembers = o->nmembers;
    for (int k = 0; k < 2; k++) { /* the event ports known (same_members: the same names) */
        dns_evsrv *q = g->evsrv[k], *oq = o->evsrv[k];
        if (!q || !oq) continue;
        memcpy(q->known, oq->known, oq->nknown * sizeof oq->known[0]);
        q->nknown = oq->nknown;
        q->failing = oq->failing;
    }
    g->failing = o->failing;
    g->ttl_ns = o->ttl_ns;
    g->done_once = o->done_once;
    g->answered = o->answered;
    uint64_t now = ir_now_ns(), soon = now + g->cfg->refresh_ns;
    g->next = o->busy ? now : IR_MIN(o->next, soon); /* a round cut short runs again */
    o->nmembers = 0;
    for (size_t i = 0; i < g->nmembers; i++) retune(g, g->members[i]);
}

/* Slot, of old group `group`, goes to d's outgoing members (it leaves at once when
 * there is no d, or no room). */
static void hand_over(gw_discovery *d, gw_fleet *f, int slot, const char *group) {
    if (d && d->noutgoing < GW_MAX_REPLICAS) {
        d->outgoing[d->noutgoing++] = (dns_outgoing){slot, group};
        return;
    }
    gw_fleet_leave(f, (uint32_t)slot);
    IR_INFO("discovery", "group %s: replica %s left (the group changed)", group,
            f->replicas[slot].dyn_id);
}

/* NULL and "" alike. */
static bool str_same(const char *a, const char *b) {
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Whether a reload's group b finds the same members as a: the same name, url and
 * srv, and targets with the same ranks and KV events (members keep their streams). */
static bool same_members(const gw_dns_group_cfg *a, const gw_dns_group_cfg *b) {
    const gw_dns_kv_events_cfg *x = &a->kv_events, *y = &b->kv_events;
    return strcmp(a->url, b->url) == 0 && a->srv == b->srv &&
           a->data_parallel_size == b->data_parallel_size && x->port == y->port &&
           x->replay_port == y->replay_port && str_same(x->topic, y->topic) &&
           str_same(x->port_srv, y->port_srv) && str_same(x->replay_port_srv, y->replay_port_srv);
}

void gw_discovery_adopt(gw_discovery *d, gw_discovery *old) {
    for (size_t i = 0; d && i < d->ngroups; i++) {
        dns_group *g = &d->groups[i], *o = group_named(old, g->cfg->name);
        if (o && same_members(o->cfg, g->cfg)) take_over(g, o);
    }
    if (!old) return;
    gw_fleet *f = &old->app->fleet;
    for (size_t i = 0; i < old->ngroups; i++) { /* groups gone or pointed elsewhere */
        dns_group *o = &old->groups[i];
        for (size_t k = 0; k < o->nmembers; k++) hand_over(d, f, o->members[k], o->cfg->name);
        o->nmembers = 0;
    }
    for (size_t k = 0; k < old->noutgoing; k++) /* those old was still handing over */
        hand_over(d, f, old->outgoing[k].slot, old->outgoing[k].group);
    old->noutgoing = 0;
    if (d && answered_all(d)) release_outgoing(d); /* every group kept, and answered */
}

void gw_discovery_free(gw_discovery *d) {
    if (!d) return;
    while (d->cfgs) {
        dns_cfg *c = d->cfgs;
        d->cfgs = c->next;
        free(c);
    }
    for (size_t i = 0; d->groups && i < d->ngroups; i++)
        for (int k = 0; k < 2; k++) free(d->groups[i].evsrv[k]);
    free(d->groups);
    free(d);
}
