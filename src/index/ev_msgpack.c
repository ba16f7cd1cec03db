/* ev_msgpack.c: a bound check on msgpack bytes before msgpack-c unpacks them.
 *
 * msgpack-c allocates a container's elements when it reads the container's
 * count, so 5 bytes claiming 2^32 elements would ask for about 100 GB. Every
 * element takes at least one byte, so a well-formed value never has more
 * elements pending than bytes left: this walk checks that, without building
 * anything, and that one whole value is there. */
#include <stdint.h>
#include <string.h>

#include "index/index_internal.h"

static uint64_t be(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

/* The header at p: its size in bytes (*hdr), the payload bytes after it (*skip)
 * and the elements it holds (*items). -1 for 0xc1, which msgpack never uses. */
static int header(const uint8_t *p, size_t left, size_t *hdr, uint64_t *skip, uint64_t *items) {
    uint8_t c = p[0];
    *hdr = 1, *skip = 0, *items = 0;
    if (c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3) return 0;
    if (c >= 0x80 && c <= 0x8f) return *items = 2u * (c & 0x0f), 0;
    if (c >= 0x90 && c <= 0x9f) return *items = c & 0x0f, 0;
    if (c >= 0xa0 && c <= 0xbf) return *skip = c & 0x1f, 0;
    static const uint8_t fixed[] = {[0xca - 0xc4] = 4, [0xcb - 0xc4] = 8, [0xcc - 0xc4] = 1,
                                    [0xcd - 0xc4] = 2, [0xce - 0xc4] = 4, [0xcf - 0xc4] = 8,
                                    [0xd0 - 0xc4] = 1, [0xd1 - 0xc4] = 2, [0xd2 - 0xc4] = 4,
                                    [0xd3 - 0xc4] = 8, [0xd4 - 0xc4] = 2, [0xd5 - 0xc4] = 3,
                                    [0xd6 - 0xc4] = 5, [0xd7 - 0xc4] = 9, [0xd8 - 0xc4] = 17};
    if (c >= 0xca && c <= 0xd8) return *skip = fixed[c - 0xc4], 0;
    int lb; /* bytes of the length that follows */
    switch (c) {
    case 0xc4:
    case 0xc7:
    case 0xd9:
        lb = 1;
        break;
    case 0xc5:
    case 0xc8:
    case 0xda:
    case 0xdc:
    case 0xde:
        lb = 2;
        break;
    case 0xc6:
    case 0xc9:
    case 0xdb:
    case 0xdd:
    case 0xdf:
        lb = 4;
        break;
    default:
        return -1;
    }
    if (left < 1 + (size_t)lb) return -1;
    uint64_t n = be(p + 1, lb);
    *hdr = 1 + (size_t)lb;
    if (c == 0xdc || c == 0xdd)
        *items = n;
    else if (c == 0xde || c == 0xdf)
        *items = 2 * n;
    else
        *skip = n + (c >= 0xc7 && c <= 0xc9); /* ext: its type byte */
    return 0;
}

int irx_msgpack_sane(const void *buf, size_t len) {
    const uint8_t *p = buf;
    size_t off = 0;
    uint64_t pending = 1;
    while (pending > 0) {
        if (off >= len) return -1;
        size_t hdr;
        uint64_t skip, items;
        if (header(p + off, len - off, &hdr, &skip, &items)) return -1;
        off += hdr;
        if (skip > len - off) return -1;
        off += (size_t)skip;
        pending = pending - 1 + items;
        if (pending > len - off) return -1;
    }
    return 0;
}
