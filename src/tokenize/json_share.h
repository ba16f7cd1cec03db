/* json_share.h: jansson values shared by threads as immortal values.
 *
 * jansson 2.14's json_incref and json_decref leave a value whose count is
 * (size_t)-1 alone (the count of true, false and null), and they read the count
 * plainly before changing it atomically, so a value shared by threads must never
 * have its count changed. Setting every node's count to (size_t)-1 before the
 * value is published makes it immortal: any thread may take and drop references
 * to it, none of them writes. Its owner, once no other thread can see it, sets
 * the counts back to 1 and drops it. ADR 0020 tells why. */
#ifndef IR_TOKENIZE_JSON_SHARE_H
#define IR_TOKENIZE_JSON_SHARE_H

#include <stddef.h>

#include <jansson.h>

#define IRT_JSON_IMMORTAL ((size_t)-1)

/* Sets the count of every node of v (a tree: each node held once) to n; true,
 * false and null are jansson's own immortal singletons and stay so. Recurses
 * once per level of nesting: callers bound the depth. */
static inline void irt_json_set_counts(json_t *v, size_t n) {
    if (!v || json_is_true(v) || json_is_false(v) || json_is_null(v)) return;
    v->refcount = n;
    size_t i;
    json_t *x;
    const char *k;
    if (json_is_array(v)) json_array_foreach(v, i, x) irt_json_set_counts(x, n);
    if (json_is_object(v)) json_object_foreach(v, k, x) irt_json_set_counts(x, n);
}

#endif
