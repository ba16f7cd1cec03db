/* common.c: error names, header helpers, error bodies, the header collector. */
#include "net/net_internal.h"

#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *irn_strerror(int err) {
    switch (err) {
    case 0:
        return "ok";
    case IRN_EINVAL:
        return "invalid argument";
    case IRN_ENOMEM:
        return "out of memory or over a cap";
    case IRN_ENOBUFS:
        return "write queue full";
    case IRN_ECLOSED:
        return "connection closed";
    case IRN_ESHUTDOWN:
        return "shutting down";
    case IRN_ERESOLVE:
        return "host did not resolve";
    case IRN_ECONNECT:
        return "connect failed";
    case IRN_ECONNECT_TIMEOUT:
        return "connect timed out";
    case IRN_ECLOSED_EARLY:
        return "connection closed before any response byte";
    case IRN_EHEAD_TIMEOUT:
        return "timed out waiting for the response";
    case IRN_EIDLE_TIMEOUT:
        return "timed out mid-response";
    case IRN_ECLOSED_MID:
        return "connection closed mid-response";
    case IRN_EPARSE:
        return "malformed response";
    case IRN_ECANCELED:
        return "cancelled";
    default:
        break;
    }
    if (err < 0 && err > -20000) return uv_strerror(err);
    return "unknown error";
}

/* Eight bytes at a time (SWAR): header values are most of what goes through here. */
bool irn__bad_text(const char *s, size_t n, bool allow_space) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        uint64_t hit;
        if (allow_space) { /* a zero byte in v, v ^ CR.. or v ^ LF.. */
            uint64_t cr = v ^ (ones * '\r'), lf = v ^ (ones * '\n');
            hit = ((v - ones) & ~v) | ((cr - ones) & ~cr) | ((lf - ones) & ~lf);
        } else { /* a byte below 0x21 */
            hit = (v - ones * 0x21) & ~v;
        }
        if (hit & highs) return true;
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\r' || c == '\n' || c == '\0' || (!allow_space && c <= ' ')) return true;
    }
    return false;
}

int irn__append_authority(ir_buf *b, const char *host, size_t hl, uint16_t port) {
    bool v6 = memchr(host, ':', hl) != NULL;
    const char *zone = memchr(host, '%', hl);
    if (zone) hl = (size_t)(zone - host); /* a zone is the client's own business */
    return (v6 && ir_buf_append_lit(b, "[")) || ir_buf_append(b, host, hl) ||
                   (v6 && ir_buf_append_lit(b, "]")) || ir_buf_append_lit(b, ":") ||
                   ir_buf_append_uint(b, port)
               ? -1
               : 0;
}

bool irn__has_token(const char *v, size_t len, const char *token) {
    size_t tl = strlen(token);
    size_t i = 0;
    while (i < len) {
        while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
        size_t s = i;
        while (i < len && v[i] != ',') i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t')) e--;
        if (e - s == tl && strncasecmp(v + s, token, tl) == 0) return true;
    }
    return false;
}

uint64_t irn__ns_to_ms(uint64_t ns) {
    return ns ? (ns + 999999) / 1000000 : 0;
}

void irn__parts_copy(const irn_part *parts, unsigned n, size_t off, char *dst, size_t len) {
    for (unsigned i = 0; i < n && len; i++) {
        if (off >= parts[i].len) {
            off -= parts[i].len;
            continue;
        }
        size_t k = parts[i].len - off < len ? parts[i].len - off : len;
        memcpy(dst, (const char *)parts[i].data + off, k);
        dst += k;
        len -= k;
        off = 0;
    }
}

const irn_header *irn_headers_find(const irn_header *h, size_t n, const char *name) {
    if (!h || !name) return NULL;
    for (size_t i = 0; i < n; i++)
        if (irn__streq_ci(h[i].name, h[i].name_len, name)) return &h[i];
    return NULL;
}

const char *irn_request_header(const irn_request *req, const char *name) {
    const irn_header *h = irn_headers_find(req->headers, req->nheaders, name);
    return h ? h->value : NULL;
}

const char *irn_status_reason(int status) {
    switch (status) {
    case 100:
        return "Continue";
    case 101:
        return "Switching Protocols";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 206:
        return "Partial Content";
    case 301:
        return "Moved Permanently";
    case 302:
        return "Found";
    case 304:
        return "Not Modified";
    case 307:
        return "Temporary Redirect";
    case 308:
        return "Permanent Redirect";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 406:
        return "Not Acceptable";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Payload Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 417:
        return "Expectation Failed";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 499:
        return "Client Closed Request";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}

int irn_error_body(ir_buf *out, int status, const char *type, const char *message) {
    if (!type) {
        switch (status) {
        case 400:
            type = "BadRequestError";
            break;
        case 404:
            type = "NotFoundError";
            break;
        case 500:
            type = "InternalServerError";
            break;
        default:
            type = irn_status_reason(status);
            break;
        }
    }
    if (!message) message = irn_status_reason(status);
    if (ir_buf_append_str(out, "{\"error\":{\"message\":") != 0) return -1;
    if (ir_json_append_string(out, message, strlen(message)) != 0) return -1;
    if (ir_buf_append_str(out, ",\"type\":") != 0) return -1;
    if (ir_json_append_string(out, type, strlen(type)) != 0) return -1;
    return ir_buf_appendf(out, ",\"param\":null,\"code\":%d}}", status);
}

static bool header_text_ok(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0') return false;
    return true;
}

int irn__error_answer_make(const irn_server_cfg *cfg, const irn_request *req, int status,
                           const char *msg, irn_error_answer *e, ir_buf *body) {
    memset(e, 0, sizeof *e);
    e->status = status;
    e->message = msg;
    /* A request whose head could not be built whole is no request to show. */
    if (req && (!req->method || !req->path)) req = NULL;
    if (cfg->on_error) cfg->on_error(cfg->ud, req, e);
    e->status = status;
    static const char *const framing[] = {
        "content-length", "transfer-encoding", "connection", "content-type",
        "keep-alive",     "proxy-connection",  "upgrade",    "te"};
    size_t k = 0;
    for (size_t i = 0; i < e->nheaders && i < IRN_ERROR_MAX_HEADERS; i++) {
        irn_header h = e->headers[i];
        if (!h.name || !h.value) continue;
        if (!h.name_len) h.name_len = strlen(h.name);
        if (!h.value_len) h.value_len = strlen(h.value);
        bool drop = !h.name_len || !header_text_ok(h.name, h.name_len) ||
                    !header_text_ok(h.value, h.value_len) || memchr(h.name, ':', h.name_len);
        for (size_t f = 0; !drop && f < IR_ARRAY_LEN(framing); f++)
            drop = irn__streq_ci(h.name, h.name_len, framing[f]);
        if (!drop) e->headers[k++] = h;
    }
    e->nheaders = k;
    return irn_error_body(body, status, e->type, e->message);
}

void irn__addrinfo_pick(const struct addrinfo *res, struct sockaddr_storage *out) {
    const struct addrinfo *pick = res;
    for (const struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    memset(out, 0, sizeof *out);
    memcpy(out, pick->ai_addr, pick->ai_addrlen);
}

int irn__addrinfo_take(int status, struct addrinfo *res, struct sockaddr_storage *out) {
    int rc = status < 0 || !res ? IRN_ERESOLVE : 0;
    if (rc == 0) irn__addrinfo_pick(res, out);
    uv_freeaddrinfo(res);
    return rc;
}

int irn__write_copy(uv_stream_t *s, const uv_buf_t *parts, int nparts, size_t skip, void *owner,
                    uv_write_cb cb, size_t *n) {
    size_t total = 0;
    for (int i = 0; i < nparts; i++) total += parts[i].len;
    *n = 0;
    if (total <= skip) return 0;
    total -= skip;
    irn__wreq *r = malloc(sizeof *r + total);
    if (!r) return IRN_ENOMEM;
    size_t off = 0;
    for (int i = 0; i < nparts; i++) {
        size_t len = parts[i].len, from = skip < len ? skip : len;
        skip -= from;
        memcpy(r->data + off, parts[i].base + from, len - from);
        off += len - from;
    }
    r->w.data = owner;
    r->n = total;
    uv_buf_t b = uv_buf_init(r->data, (unsigned)total);
    if (uv_write(&r->w, s, &b, 1, cb) != 0) {
        free(r);
        return IRN_ECLOSED;
    }
    *n = total;
    return 0;
}

int irn__resolve(uv_loop_t *loop, uv_getaddrinfo_t *gai, uv_getaddrinfo_cb cb, const char *host,
                 uint16_t port, struct sockaddr_storage *out) {
    if (host[0] && irn__addr_numeric(host, port, out) == 0) return 0;
    char ps[8];
    snprintf(ps, sizeof ps, "%u", port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    return uv_getaddrinfo(loop, gai, cb, host, ps, &hints) == 0 ? 1 : IRN_ERESOLVE;
}

bool irn__h1_only_header(const char *n, size_t nl) {
    return irn__streq_ci(n, nl, "connection") || irn__streq_ci(n, nl, "keep-alive") ||
           irn__streq_ci(n, nl, "proxy-connection") || irn__streq_ci(n, nl, "transfer-encoding") ||
           irn__streq_ci(n, nl, "upgrade") || irn__streq_ci(n, nl, "te") ||
           irn__streq_ci(n, nl, "content-length");
}

int irn__split_target(irn_request *req) {
    const char *q = strchr(req->target, '?');
    if (!q) {
        req->path = req->target;
        req->query = "";
        return 0;
    }
    req->path = ir_arena_strndup(req->arena, req->target, (size_t)(q - req->target));
    req->query = q + 1;
    return req->path ? 0 : -1;
}

/* An IPv6 address, maybe with a zone (%eth0 or %2): the zone becomes the scope id.
 * uv_ip6_addr reads only an interface name, and quietly leaves an unknown one (or a
 * number) as scope 0, which would connect nowhere: so the zone is read here. */
static int addr6_zoned(const char *host, uint16_t port, struct sockaddr_in6 *out) {
    const char *pct = strchr(host, '%');
    char addr[64];
    size_t an = pct ? (size_t)(pct - host) : strlen(host);
    if (an >= sizeof addr) return UV_EINVAL;
    memcpy(addr, host, an);
    addr[an] = '\0';
    if (uv_ip6_addr(addr, port, out) != 0) return UV_EINVAL;
    if (!pct) return 0;
    out->sin6_scope_id = irn_ip6_zone_index(pct + 1);
    return out->sin6_scope_id ? 0 : UV_EINVAL;
}

unsigned irn_ip6_zone_index(const char *zone) {
    if (!zone || !*zone) return 0;
    if (strspn(zone, "0123456789") == strlen(zone)) {
        unsigned long v = strlen(zone) <= 10 ? strtoul(zone, NULL, 10) : 0;
        return v <= 0xffffffffUL ? (unsigned)v : 0;
    }
    return if_nametoindex(zone);
}

int irn__addr_numeric(const char *host, uint16_t port, struct sockaddr_storage *out) {
    memset(out, 0, sizeof *out);
    if (!host || !*host) host = "0.0.0.0";
    if (uv_ip4_addr(host, port, (struct sockaddr_in *)out) == 0) return 0;
    char tmp[64];
    size_t hl = strlen(host);
    if (hl >= 2 && hl < sizeof tmp && host[0] == '[' && host[hl - 1] == ']') {
        memcpy(tmp, host + 1, hl - 2);
        tmp[hl - 2] = '\0';
        host = tmp;
    }
    return addr6_zoned(host, port, (struct sockaddr_in6 *)out);
}

/* ---- header collector ---------------------------------------------------- */

void irn__hdrs_init(irn__hdrs *h, size_t max_bytes, size_t max_n) {
    memset(h, 0, sizeof *h);
    ir_buf_init(&h->raw, max_bytes);
    ir_buf_init(&h->ents, (max_n + 1) * 4 * sizeof(size_t));
    h->max_n = max_n;
}

void irn__hdrs_reset(irn__hdrs *h) {
    ir_buf_reset(&h->raw);
    ir_buf_reset(&h->ents);
    h->n = 0;
    h->in_part = false;
}

void irn__hdrs_free(irn__hdrs *h) {
    ir_buf_free(&h->raw);
    ir_buf_free(&h->ents);
}

static int part(irn__hdrs *h, const char *at, size_t len) {
    if (!h->in_part) {
        h->cur_off = h->raw.len;
        h->in_part = true;
    }
    return ir_buf_append(&h->raw, at, len) == 0 ? 0 : IRN_HDRS_TOO_BIG;
}

int irn__hdrs_name(irn__hdrs *h, const char *at, size_t len) {
    return part(h, at, len);
}
int irn__hdrs_value(irn__hdrs *h, const char *at, size_t len) {
    return part(h, at, len);
}

int irn__hdrs_name_done(irn__hdrs *h) {
    if (h->n >= h->max_n) return IRN_HDRS_TOO_MANY;
    if (!h->in_part) h->cur_off = h->raw.len;
    h->name_off = h->cur_off;
    h->name_len = h->raw.len - h->cur_off;
    h->in_part = false;
    return ir_buf_append(&h->raw, "", 1) == 0 ? 0 : IRN_HDRS_TOO_BIG;
}

int irn__hdrs_value_done(irn__hdrs *h) {
    if (!h->in_part) h->cur_off = h->raw.len;
    h->in_part = false;
    size_t len = h->raw.len - h->cur_off;
    while (len > 0 &&
           (h->raw.data[h->cur_off + len - 1] == ' ' || h->raw.data[h->cur_off + len - 1] == '\t'))
        len--;
    h->raw.len = h->cur_off + len;
    size_t e[4] = {h->name_off, h->name_len, h->cur_off, len};
    if (ir_buf_append(&h->raw, "", 1) != 0) return IRN_HDRS_TOO_BIG;
    if (ir_buf_append(&h->ents, e, sizeof e) != 0) return IRN_HDRS_TOO_MANY;
    h->n++;
    return 0;
}

irn_header irn__hdrs_at(const irn__hdrs *h, size_t i) {
    size_t e[4];
    memcpy(e, h->ents.data + i * sizeof e, sizeof e);
    return (irn_header){h->raw.data + e[0], e[1], h->raw.data + e[2], e[3]};
}

void irn__hdrs_fill(const irn__hdrs *h, irn_header *out) {
    for (size_t i = 0; i < h->n; i++) out[i] = irn__hdrs_at(h, i);
}

int irn__hdrs_to_request(const irn__hdrs *h, irn_request *req) {
    size_t n = h->n;
    if (!n) return 0;
    char *raw = ir_arena_alloc(req->arena, h->raw.len);
    irn_header *hv = ir_arena_alloc(req->arena, n * sizeof *hv);
    if (!raw || !hv) return -1;
    memcpy(raw, h->raw.data, h->raw.len);
    irn__hdrs_fill(h, hv);
    for (size_t i = 0; i < n; i++) {
        hv[i].name = raw + (hv[i].name - h->raw.data);
        hv[i].value = raw + (hv[i].value - h->raw.data);
    }
    req->headers = hv;
    req->nheaders = n;
    return 0;
}

/* ---- base64url (HTTP2-Settings) ------------------------------------------- */

static int b64_val(unsigned char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '-' || ch == '+') return 62;
    if (ch == '_' || ch == '/') return 63;
    return -1;
}

int irn__base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap, size_t *outlen) {
    while (len > 0 && (in[len - 1] == '=' || in[len - 1] == ' ')) len--;
    uint32_t acc = 0;
    int bits = 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_val((unsigned char)in[i]);
        if (v < 0) return -1;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (n >= cap) return -1;
            out[n++] = (uint8_t)(acc >> bits);
        }
    }
    if (bits >= 6) return -1; /* a lone trailing character */
    *outlen = n;
    return 0;
}

const char *irn__body_too_large(size_t limit, char *buf, size_t n) {
    snprintf(buf, n, "Request body too large: the limit is %zu bytes", limit);
    return buf;
}
