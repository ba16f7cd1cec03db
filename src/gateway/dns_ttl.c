/* dns_ttl.c: the smallest TTL of a DNS reply's SRV answers. c-ares 1.18 (Debian 12)
 * parses SRV replies without their TTLs (ares_parse_srv_reply), and its record API
 * that has them (ares_dns_record_t) only exists from 1.28; so discovery reads the
 * TTLs itself from the raw reply that ares_query hands it (ADR 0015). Only the
 * header, the question section and the answers' fixed fields are read: names are
 * skipped, never followed, so a compression pointer cannot loop. Every read is
 * checked against len. */
#include "gateway/gateway.h"

#define DNS_HEADER  12
#define DNS_T_SRV   33
#define DNS_C_IN    1
#define DNS_TTL_MAX 0x7fffffffu /* RFC 2181: a TTL with its top bit set reads as 0 */

static unsigned get16(const unsigned char *p) {
    return (unsigned)p[0] << 8 | p[1];
}

static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Skips the name at *off: labels up to a zero byte or a compression pointer.
 * -1 when it runs past len or uses a reserved label type. */
static int skip_name(const unsigned char *b, size_t len, size_t *off) {
    size_t o = *off;
    for (size_t labels = 0; labels < 128; labels++) {
        if (o >= len) return -1;
        unsigned c = b[o];
        if (c == 0) {
            *off = o + 1;
            return 0;
        }
        if ((c & 0xC0) == 0xC0) {
            if (o + 2 > len) return -1;
            *off = o + 2;
            return 0;
        }
        if (c & 0xC0) return -1; /* 01 and 10: reserved (EDNS's extended labels) */
        o += 1 + c;
    }
    return -1; /* longer than any name can be (255 bytes) */
}

int gw_dns_srv_ttl(const unsigned char *b, size_t len, uint32_t *ttl) {
    if (!b || len < DNS_HEADER) return -1;
    unsigned qd = get16(b + 4), an = get16(b + 6);
    size_t off = DNS_HEADER;
    for (unsigned i = 0; i < qd; i++) {
        if (skip_name(b, len, &off) || off + 4 > len) return -1;
        off += 4; /* type, class */
    }
    bool found = false;
    uint32_t min = 0;
    for (unsigned i = 0; i < an; i++) {
        if (skip_name(b, len, &off) || off + 10 > len) return -1;
        unsigned type = get16(b + off), cls = get16(b + off + 2), rdlen = get16(b + off + 8);
        uint32_t t = get32(b + off + 4);
        off += 10;
        if (off + rdlen > len) return -1;
        off += rdlen;
        if (type != DNS_T_SRV || cls != DNS_C_IN) continue; /* a CNAME on the way, say */
        if (t > DNS_TTL_MAX) t = 0;
        if (!found || t < min) min = t;
        found = true;
    }
    if (!found) return -1;
    *ttl = min;
    return 0;
}
