/* net_internal.h: helpers shared by the net module's files; not public. */
#ifndef IR_NET_INTERNAL_H
#define IR_NET_INTERNAL_H

#include "net/ir_net.h"

#include <llhttp.h>

/* Collects header fields and values from llhttp's split callbacks into one
 * capped buffer of "name\0value\0" pairs. */
typedef struct irn_hdrs {
    ir_buf raw;
    ir_buf ents; /* size_t[4] per header: name_off, name_len, value_off, value_len */
    size_t n;
    size_t max_n;
    size_t name_off, name_len, cur_off;
    bool in_part;
} irn_hdrs;

#define IRN_HDRS_TOO_BIG  (-1)
#define IRN_HDRS_TOO_MANY (-2)

void irn_hdrs_init(irn_hdrs *h, size_t max_bytes, size_t max_n);
void irn_hdrs_reset(irn_hdrs *h);
void irn_hdrs_free(irn_hdrs *h);
int irn_hdrs_name(irn_hdrs *h, const char *at, size_t len);
int irn_hdrs_name_done(irn_hdrs *h);
int irn_hdrs_value(irn_hdrs *h, const char *at, size_t len);
int irn_hdrs_value_done(irn_hdrs *h);
/* Fills out[0..n) pointing into h->raw (valid until the next change of h). */
void irn_hdrs_fill(const irn_hdrs *h, irn_header *out);

bool irn_streq_ci(const char *a, size_t alen, const char *b);
/* Whether a comma-separated header value contains `token` (case-insensitive). */
bool irn_has_token(const char *value, size_t len, const char *token);
/* Milliseconds for a uv timer, rounding up; 0 stays 0. */
uint64_t irn_ns_to_ms(uint64_t ns);
/* Resolves host:port for listening/connecting, synchronously, numeric first. */
int irn_addr_numeric(const char *host, uint16_t port, struct sockaddr_storage *out);

#endif
