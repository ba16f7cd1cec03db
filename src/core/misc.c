/* misc.c: seeded RNG and address parsing. */
#include "core/ir_core.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void ir_rng_seed(ir_rng *r, uint64_t seed) {
    r->s = seed;
}

uint64_t ir_rng_next(ir_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double ir_rng_double(ir_rng *r) {
    return (double)(ir_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t ir_rng_below(ir_rng *r, uint64_t n) {
    if (n == 0) return 0;
    /* Rejection sampling keeps the choice exactly uniform. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = ir_rng_next(r);
    while (x >= limit);
    return x % n;
}

static int parse_port(const char *s, size_t n, uint16_t *port) {
    if (n == 0 || n > 5) return -1;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535) return -1;
    *port = (uint16_t)v;
    return 0;
}

static int valid_host(const char *h, size_t n) {
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == ':'))
            return 0;
    }
    return 1;
}

/* What is inside brackets: an IPv6 address, maybe with a zone (RFC 4007: %eth0, %2),
 * also written %25eth0 as in a URL (RFC 6874). Copied into out with the zone as
 * %zone; -1 when invalid or too long. */
static int copy_v6_host(const char *h, size_t hn, char *out, size_t cap) {
    const char *pct = memchr(h, '%', hn);
    size_t an = pct ? (size_t)(pct - h) : hn;
    if (!valid_host(h, an)) return -1;
    const char *z = pct ? pct + 1 : NULL;
    size_t zn = pct ? hn - an - 1 : 0;
    if (z && zn > 2 && z[0] == '2' && z[1] == '5') { /* %25eth0: the '%' percent-encoded */
        z += 2;
        zn -= 2;
    }
    if (z && (!valid_host(z, zn) || memchr(z, ':', zn) || memchr(z, '%', zn))) return -1;
    if (an + (z ? zn + 1 : 0) >= cap) return -1;
    memcpy(out, h, an);
    if (z) {
        out[an] = '%';
        memcpy(out + an + 1, z, zn);
    }
    out[an + (z ? zn + 1 : 0)] = '\0';
    return 0;
}

int ir_hostport_parse(const char *s, char *host, size_t hostlen, uint16_t *port) {
    const char *colon;
    const char *h = s;
    size_t hn;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') return -1;
        colon = close + 1;
        if (parse_port(colon + 1, strlen(colon + 1), port)) return -1;
        return copy_v6_host(s + 1, (size_t)(close - s - 1), host, hostlen);
    } else {
        colon = strrchr(s, ':');
        if (!colon) return -1;
        hn = (size_t)(colon - s);
        if (memchr(s, ':', hn)) return -1; /* bare IPv6 needs brackets */
        if (hn == 0) {
            h = "0.0.0.0";
            hn = 7;
        } else if (!valid_host(h, hn)) {
            return -1;
        }
    }
    if (hn >= hostlen) return -1;
    if (parse_port(colon + 1, strlen(colon + 1), port)) return -1;
    memcpy(host, h, hn);
    host[hn] = '\0';
    return 0;
}

int ir_url_parse(const char *s, ir_url *out) {
    if (strncasecmp(s, "http://", 7) != 0) return -1;
    const char *p = s + 7;
    const char *slash = strchr(p, '/');
    size_t authlen = slash ? (size_t)(slash - p) : strlen(p);
    if (authlen == 0 || authlen >= sizeof out->host + 8) return -1;
    char auth[sizeof out->host + 8];
    memcpy(auth, p, authlen);
    auth[authlen] = '\0';
    if (strchr(auth, '@')) return -1; /* userinfo is not supported */
    const char *lastcolon = strrchr(auth, ':');
    int has_port = lastcolon && (auth[0] != '[' || (lastcolon > strchr(auth, ']')));
    if (has_port) {
        if (ir_hostport_parse(auth, out->host, sizeof out->host, &out->port)) return -1;
        if (auth[0] == ':') return -1;
    } else {
        const char *h = auth;
        size_t hn = authlen;
        if (auth[0] == '[') {
            if (auth[authlen - 1] != ']') return -1;
            if (copy_v6_host(h + 1, hn - 2, out->host, sizeof out->host)) return -1;
        } else {
            if (!valid_host(h, hn) || hn >= sizeof out->host) return -1;
            memcpy(out->host, h, hn);
            out->host[hn] = '\0';
        }
        out->port = 80;
    }
    const char *path = slash ? slash : "";
    if (strlen(path) >= sizeof out->path) return -1;
    strcpy(out->path, path);
    /* Drop a trailing slash so "http://h:1/" and "http://h:1" mean the same base. */
    size_t pl = strlen(out->path);
    if (pl && out->path[pl - 1] == '/') out->path[pl - 1] = '\0';
    return 0;
}
