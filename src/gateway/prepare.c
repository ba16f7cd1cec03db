/* prepare.c: stages 3 to 5, what the gateway knows of the prompt before it chooses:
 * its tokens, their block hashes, and what each replica holds of them.
 *
 * Until a tokenizer and the KV index are wired in, the prompt's length is estimated
 * from the body (four bytes a token) and nothing is hashed or matched. When the
 * tokenizer lands, gw_stage_prepare hands large bodies to a worker pool and calls
 * next() back on the request's loop (uv_queue_work's after-callback does that). */
#include "gateway/request.h"

void gw_stage_prepare(gw_req *r, gw_step_fn next) {
    r->prompt_tokens = r->body_len / 4;
    next(r);
}

void gw_stage_hash(gw_req *r) {
    (void)r; /* no KV index yet: no block hashes are needed */
}

void gw_stage_match(gw_req *r) {
    (void)r; /* no KV index yet: every candidate's predicted_cached_tokens stays 0 */
}
