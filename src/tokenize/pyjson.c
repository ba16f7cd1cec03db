/* pyjson.c: a request body read as Python's json.loads reads it, on top of
 * jansson. jansson already keeps a duplicate key's first position and last
 * value, as json.loads does; it refuses what json.loads accepts:
 *   - integers past 64 bits (json.loads: a Python int of any size);
 *   - NaN, Infinity, -Infinity (json.loads: float('nan'), float('inf'));
 *   - reals past the double range, 1e400 (json.loads: inf).
 * A text is first read by jflat.c's irt_jfast_loadb (jansson's values, without
 * its byte-at-a-time lexer), then, when that declines, by jansson. Only when
 * jansson refuses a text is it scanned once: each such token
 * outside strings becomes a marker object {"<key>": "<text>"}, and jansson
 * reads the result. The key holds 128 random bits drawn once per process, so
 * a client cannot write a marker of its own. The template engine turns a
 * marker back into the number (tv_from_json); everywhere else a marker is an
 * object, not a string or a number, so code that wants one of those refuses
 * it as it refuses any other wrong type. A text whose markers would take it
 * past four times its length plus 4 KiB keeps jansson's error. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "tokenize/ir_tokenize.h"
#include "tokenize/jscan.h"

#define KEY_PREFIX "ir-pyjson-"
#define KEY_LEN    (sizeof(KEY_PREFIX) - 1 + 32)

static char marker_key[KEY_LEN + 1];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void make_key(void) {
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
        for (size_t i = 0; i < sizeof r; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            r[i] = (unsigned char)(x >> 56);
        }
    }
    int n = snprintf(marker_key, sizeof marker_key, "%s", KEY_PREFIX);
    for (size_t i = 0; i < sizeof r; i++)
        n += snprintf(marker_key + n, sizeof marker_key - (size_t)n, "%02x", r[i]);
}

static const char *key(void) {
    pthread_once(&key_once, make_key);
    return marker_key;
}

typedef struct out {
    char *p;
    size_t len, cap, max;
} out;

static int put(out *o, const char *s, size_t n) {
    if (o->len + n > o->max) return -1;
    if (o->len + n > o->cap) {
        size_t c = o->cap ? o->cap : 256;
        while (c < o->len + n) c *= 2;
        if (c > o->max) c = o->max;
        char *p = realloc(o->p, c);
        if (!p) return -1;
        o->p = p;
        o->cap = c;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    return 0;
}

static int put_marker(out *o, const char *text, size_t n) {
    const char *k = key();
    return put(o, "{\"", 2) || put(o, k, strlen(k)) || put(o, "\":\"", 3) || put(o, text, n) ||
           put(o, "\"}", 2);
}

static bool has(const char *s, size_t len, size_t i, const char *word) {
    size_t n = strlen(word);
    return len - i >= n && !memcmp(s + i, word, n);
}

static size_t digits(const char *s, size_t len, size_t i) {
    while (i < len && s[i] >= '0' && s[i] <= '9') i++;
    return i;
}

/* The end of the JSON number token at i (at least one byte), and whether it
 * is an integer (no fraction, no exponent). */
static size_t number_end(const char *s, size_t len, size_t i, bool *integer) {
    size_t k = i + (s[i] == '-');
    k = digits(s, len, k);
    *integer = true;
    if (k < len && s[k] == '.') {
        *integer = false;
        k = digits(s, len, k + 1);
    }
    if (k < len && (s[k] == 'e' || s[k] == 'E')) {
        *integer = false;
        k++;
        if (k < len && (s[k] == '+' || s[k] == '-')) k++;
        k = digits(s, len, k);
    }
    return k > i ? k : i + 1;
}

/* Whether the digits of an integer token (sign apart) lie past int64. */
static bool past_int64(const char *t, size_t n) {
    bool neg = t[0] == '-';
    const char *d = t + neg;
    size_t nd = n - neg;
    if (nd != 19) return nd > 19;
    return memcmp(d, neg ? "9223372036854775808" : "9223372036854775807", 19) > 0;
}

/* A number token that jansson refuses and json.loads reads: its marker text
 * (the digits, or I / -I for a real past the double range), or 0 when none.
 * Python refuses an int of more than 4,300 digits (sys.int_info's default
 * limit), and JSON a leading zero: those stay for jansson to refuse. */
static size_t number_marker(const char *t, size_t n, bool integer, const char **text) {
    size_t nd = n - (t[0] == '-');
    if (!nd) return 0;
    if (integer) {
        const char *d = t + (t[0] == '-');
        if ((d[0] == '0' && nd > 1) || nd > 4300 || !past_int64(t, n)) return 0;
        *text = t;
        return n;
    }
    char stack[128], *buf = n < sizeof stack ? stack : malloc(n + 1);
    if (!buf) return 0;
    memcpy(buf, t, n);
    buf[n] = 0;
    errno = 0;
    char *end;
    double v = strtod(buf, &end);
    bool inf = !*end && errno == ERANGE && isinf(v);
    if (buf != stack) free(buf);
    if (!inf) return 0;
    *text = v < 0 ? "-I" : "I";
    return strlen(*text);
}

static int scan_number(out *o, const char *s, size_t len, size_t *i, int *nmark) {
    const char *text;
    bool integer;
    size_t e = number_end(s, len, *i, &integer);
    size_t m = number_marker(s + *i, e - *i, integer, &text);
    int rc = m ? put_marker(o, text, m) : put(o, s + *i, e - *i);
    *nmark += m > 0;
    *i = e;
    return rc;
}

/* Rewrites the tokens; returns the number of markers, or -1 when over the cap. */
static int rewrite(const char *s, size_t len, out *o) {
    bool in_str = false;
    int nmark = 0;
    for (size_t i = 0; i < len;) {
        char c = s[i];
        int rc = 0;
        if (in_str) {
            size_t n = c == '\\' && i + 1 < len ? 2 : 1;
            in_str = c != '"';
            rc = put(o, s + i, n);
            i += n;
        } else if (c == '"') {
            in_str = true;
            rc = put(o, s + i++, 1);
        } else if (has(s, len, i, "NaN") || has(s, len, i, "Infinity") ||
                   has(s, len, i, "-Infinity")) {
            const char *t = c == 'N' ? "N" : c == 'I' ? "I" : "-I";
            rc = put_marker(o, t, strlen(t));
            i += c == 'N' ? 3 : c == 'I' ? 8 : 9;
            nmark++;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            rc = scan_number(o, s, len, &i, &nmark);
        } else {
            rc = put(o, s + i++, 1);
        }
        if (rc) return -1;
    }
    return nmark;
}

json_t *irt_json_loads(const char *s, size_t len, size_t flags, json_error_t *err) {
    json_error_t dummy;
    if (!err) err = &dummy;
    /* jflat.c reads what jansson reads, to the same value, without its lexer */
    json_t *v = irt_jfast_loadb(s, len, flags);
    if (v) return v;
    v = json_loadb(s, len, flags, err);
    if (v || !s || len > (SIZE_MAX - 4096) / 4) return v;
    out o = {.max = 4 * len + 4096};
    json_error_t e2;
    if (rewrite(s, len, &o) > 0) v = json_loadb(o.p, o.len, flags, &e2);
    free(o.p);
    return v;
}

const char *irt_json_number_text(const json_t *v, size_t *n) {
    if (!json_is_object(v) || json_object_size(v) != 1) return NULL;
    void *it = json_object_iter((json_t *)v);
    const char *k = json_object_iter_key(it);
    if (json_object_iter_key_len(it) != KEY_LEN || memcmp(k, key(), KEY_LEN)) return NULL;
    json_t *t = json_object_iter_value(it);
    if (!json_is_string(t)) return NULL;
    *n = json_string_length(t);
    return json_string_value(t);
}
