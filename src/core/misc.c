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

int ir_hostport_parse(const char *s, char *host, size_t hostlen, uint16_t *port) {
    const char *colon;
    const char *h = s;
    size_t hn;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') return -1;
        h = s + 1;
        hn = (size_t)(close - h);
        colon = close + 1;
        if (!valid_host(h, hn)) return -1;
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
            h++;
            hn -= 2;
        }
        if (!valid_host(h, hn) || hn >= sizeof out->host) return -1;
        memcpy(out->host, h, hn);
        out->host[hn] = '\0';
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
