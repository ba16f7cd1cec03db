/* trace.c: spans, W3C traceparent headers and the OTLP/HTTP JSON encoding (see
 * ir_obs.h). The encoding follows the protobuf JSON mapping of
 * ExportTraceServiceRequest as OTLP specifies it: ids as lower-case hex, 64-bit
 * integers (times, intValue) as decimal strings, enums as numbers. */
#include "obs/ir_obs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1; /* upper case is not allowed by the spec */
}

/* n bytes from 2n hex digits; -1 on a non-hex digit. */
static int unhex(const char *s, uint8_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static bool all_zero(const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (b[i]) return false;
    return true;
}

int iro_traceparent_parse(const char *s, size_t len, iro_span_ctx *out) {
    /* version(2) - trace(32) - span(16) - flags(2) = 55 bytes */
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
    while (len && (*s == ' ' || *s == '\t')) s++, len--;
    if (len < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-') return -1;
    uint8_t ver;
    if (unhex(s, &ver, 1) || ver == 0xff) return -1;
    if (ver == 0 && len != 55) return -1;
    if (ver != 0 && len > 55 && s[55] != '-') return -1;
    iro_span_ctx c;
    if (unhex(s + 3, c.trace_id, 16) || unhex(s + 36, c.span_id, 8) || unhex(s + 53, &c.flags, 1))
        return -1;
    if (all_zero(c.trace_id, 16) || all_zero(c.span_id, 8)) return -1;
    *out = c;
    return 0;
}

static void hex(const uint8_t *b, size_t n, char *out) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = '\0';
}

void iro_traceparent_format(const iro_span_ctx *c, char *out) {
    memcpy(out, "00-", 3);
    hex(c->trace_id, 16, out + 3);
    out[35] = '-';
    hex(c->span_id, 8, out + 36);
    out[52] = '-';
    hex(&c->flags, 1, out + 53);
}

/* xorshift128+ per thread, seeded from getrandom. */
static _Thread_local uint64_t rng[2];

static uint64_t next(void) {
    if (!rng[0] && !rng[1]) {
        if (getrandom(rng, sizeof rng, 0) != (ssize_t)sizeof rng || (!rng[0] && !rng[1])) {
            rng[0] = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&rng;
            rng[1] = 0x9e3779b97f4a7c15ull;
        }
    }
    uint64_t a = rng[0], b = rng[1];
    rng[0] = b;
    a ^= a << 23;
    rng[1] = a ^ b ^ (a >> 17) ^ (b >> 26);
    return rng[1] + b;
}

void iro_trace_random_id(uint8_t *out, size_t n) {
    do {
        for (size_t i = 0; i < n; i += 8) {
            uint64_t v = next();
            memcpy(out + i, &v, n - i < 8 ? n - i : 8);
        }
    } while (all_zero(out, n));
}

uint64_t iro_unix_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static iro_attr *attr(iro_span *s, const char *key, iro_attr_type t) {
    if (s->nattrs >= IRO_SPAN_ATTRS) return NULL;
    iro_attr *a = &s->attrs[s->nattrs++];
    a->key = key;
    a->type = t;
    return a;
}

void iro_span_str(iro_span *s, const char *key, const char *v) {
    iro_attr *a = attr(s, key, IRO_ATTR_STR);
    if (a) snprintf(a->v.s, sizeof a->v.s, "%s", v ? v : "");
}
void iro_span_int(iro_span *s, const char *key, int64_t v) {
    iro_attr *a = attr(s, key, IRO_ATTR_INT);
    if (a) a->v.i = v;
}
void iro_span_double(iro_span *s, const char *key, double v) {
    iro_attr *a = attr(s, key, IRO_ATTR_DOUBLE);
    if (a) a->v.d = v;
}
void iro_span_bool(iro_span *s, const char *key, bool v) {
    iro_attr *a = attr(s, key, IRO_ATTR_BOOL);
    if (a) a->v.b = v;
}

static int encode_attr(ir_buf *o, const iro_attr *a) {
    int rc = ir_buf_append_lit(o, "{\"key\":");
    rc |= ir_json_append_string(o, a->key, strlen(a->key));
    switch (a->type) {
    case IRO_ATTR_STR:
        rc |= ir_buf_append_lit(o, ",\"value\":{\"stringValue\":");
        rc |= ir_json_append_string(o, a->v.s, strlen(a->v.s));
        rc |= ir_buf_append_lit(o, "}}");
        break;
    case IRO_ATTR_INT:
        rc |= ir_buf_appendf(o, ",\"value\":{\"intValue\":\"%lld\"}}", (long long)a->v.i);
        break;
    case IRO_ATTR_DOUBLE:
        /* JSON has no NaN or infinity: those become 0 */
        rc |= ir_buf_appendf(o, ",\"value\":{\"doubleValue\":%.17g}}",
                             isfinite(a->v.d) ? a->v.d : 0.0);
        break;
    case IRO_ATTR_BOOL:
        rc |= ir_buf_appendf(o, ",\"value\":{\"boolValue\":%s}}", a->v.b ? "true" : "false");
        break;
    }
    return rc;
}

static int encode_span(ir_buf *o, const iro_span *s) {
    char tid[33], sid[17], pid[17];
    hex(s->trace_id, 16, tid);
    hex(s->span_id, 8, sid);
    int rc = ir_buf_appendf(o, "{\"traceId\":\"%s\",\"spanId\":\"%s\"", tid, sid);
    if (!all_zero(s->parent_id, 8)) {
        hex(s->parent_id, 8, pid);
        rc |= ir_buf_appendf(o, ",\"parentSpanId\":\"%s\"", pid);
    }
    rc |= ir_buf_append_lit(o, ",\"name\":");
    rc |= ir_json_append_string(o, s->name, strlen(s->name));
    rc |= ir_buf_appendf(
        o, ",\"kind\":%d,\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":\"%llu\"", (int)s->kind,
        (unsigned long long)s->start_ns, (unsigned long long)s->end_ns);
    rc |= ir_buf_append_lit(o, ",\"attributes\":[");
    for (size_t i = 0; i < s->nattrs && i < IRO_SPAN_ATTRS; i++) {
        if (i) rc |= ir_buf_append_lit(o, ",");
        rc |= encode_attr(o, &s->attrs[i]);
    }
    rc |= ir_buf_appendf(o, "],\"status\":{\"code\":%d}}", (int)s->status);
    return rc;
}

int iro_otlp_encode(ir_buf *o, const char *service, const iro_span *spans, size_t n) {
    int rc = ir_buf_append_lit(o, "{\"resourceSpans\":[{\"resource\":{\"attributes\":[{\"key\":"
                                  "\"service.name\",\"value\":{\"stringValue\":");
    rc |= ir_json_append_string(o, service, strlen(service));
    rc |= ir_buf_append_lit(o,
                            "}}]},\"scopeSpans\":[{\"scope\":{\"name\":\"inferrail\"},\"spans\":[");
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i) rc |= ir_buf_append_lit(o, ",");
        rc |= encode_span(o, &spans[i]);
    }
    rc |= ir_buf_append_lit(o, "]}]}]}");
    return rc ? -1 : 0;
}
