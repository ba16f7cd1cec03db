/* fuzz_dns_ttl: the SRV TTL reader (src/gateway/dns_ttl.c) on arbitrary bytes, as
 * a DNS server's reply. It must never read past the input (the copy is exactly
 * size bytes, so ASan sees any overread), and a TTL it returns follows RFC 2181
 * (at most 2^31 - 1). Reading the same bytes twice gives the same answer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *b = malloc(size ? size : 1);
    if (!b) return 0;
    memcpy(b, data, size);
    uint32_t t1 = 0, t2 = 0;
    int r1 = gw_dns_srv_ttl(b, size, &t1), r2 = gw_dns_srv_ttl(b, size, &t2);
    if (r1 != r2 || (r1 == 0 && (t1 != t2 || t1 > 0x7fffffffu))) abort();
    free(b);
    return 0;
}
