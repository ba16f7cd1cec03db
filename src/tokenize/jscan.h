/* jscan.h: the structural scanner of the chat parse cache (parse_cache.c),
 * internal to the tokenize module (the unit tests and the fuzz target read it).
 *
 * It finds, in a chat body, the raw bytes of each element of the top-level
 * "messages" array, without decoding anything: it follows strings (and their
 * backslash escapes), nesting depth and the separators between elements only.
 * jansson then reads each piece and checks everything the scanner does not. */
#ifndef IR_JSCAN_H
#define IR_JSCAN_H

#include <stddef.h>

#include <jansson.h>

/* Nesting deeper than this anywhere in a body is a doubt: the whole body is then
 * read by jansson, whose limit (JSON_PARSER_MAX_DEPTH, 2048) counts the two
 * levels above each element that a piece read alone would not. */
#define IRT_JSCAN_MAX_DEPTH 1024

typedef struct irt_jspan {
    size_t off, len; /* the element's bytes, s[off .. off + len) */
    size_t nvals;    /* values in it, roughly (1 + its ':' and ','): for the cache's budget */
} irt_jspan;

typedef struct irt_jscan {
    size_t arr_off, arr_len; /* the "messages" array, its brackets included */
    irt_jspan *elems;        /* its elements in order (malloc'd; irt_jscan_free) */
    size_t nelems, cap;
} irt_jscan;

enum {
    IRT_JSCAN_OK = 0,     /* a top-level "messages" array, split into elements */
    IRT_JSCAN_NONE = 1,   /* a well-formed object without a "messages" array */
    IRT_JSCAN_DOUBT = -1, /* anything else: not an object, malformed, an escaped
                           * top-level key, "messages" twice, too deep, out of memory */
};

/* Scans s[0 .. len); fills out on IRT_JSCAN_OK (out is zeroed first). */
int irt_jscan_chat(const char *s, size_t len, irt_jscan *out);
void irt_jscan_free(irt_jscan *j);

/* jflat.c: an element that is a flat object of strings ({"role": "user",
 * "content": "..."}) read without jansson's lexer, to exactly the value
 * json_loadb(s, n, flags) reads (members in the same order). NULL declines:
 * anything else, which the caller reads with jansson. New reference. */
json_t *irt_jflat_object(const char *s, size_t n, size_t flags);

/* jflat.c: any JSON text read without jansson's lexer, to exactly the value
 * json_loadb(s, n, flags) reads; NULL declines (see jflat.c for what), and the
 * caller then reads it with jansson. New reference. */
json_t *irt_jfast_loadb(const char *s, size_t n, size_t flags);

#endif
