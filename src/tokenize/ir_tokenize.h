/* ir_tokenize.h: the tokenize module's public header.
 *
 * Three parts: builtin:sim (the deterministic stand-in shared by the
 * simulator, the gateway and the benchmarks), chained block hashes, and
 * Hugging Face tokenizer.json pipelines.
 *
 * Ownership: a loaded tokenizer may be shared by any number of threads. Its
 * vocabulary, merges and pipeline are immutable; it also keeps a word cache
 * (pre-tokenized words to their ids, 2 MiB, lock-free seqlock slots) that any
 * thread fills and reads. Each thread that encodes or renders keeps its own
 * scratch memory between calls (at most 1 MiB of encode buffers and a 256 KiB
 * render arena), freed when the thread exits. ADR 0023. */
#ifndef IR_TOKENIZE_H
#define IR_TOKENIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/ir_core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A growable array of token ids. Zero-initialise, or use irt_ids_init. */
typedef struct irt_ids {
    uint32_t *ids;
    size_t len;
    size_t cap;
} irt_ids;

void irt_ids_init(irt_ids *v);
void irt_ids_free(irt_ids *v);
/* Appends one id; -1 on out of memory. */
int irt_ids_push(irt_ids *v, uint32_t id);

/* ---- builtin:sim ---------------------------------------------------------------
 * Pieces of at most three bytes. A piece boundary before byte i depends only
 * on bytes[i-1], bytes[i] and the length of the piece so far, so shared text
 * yields shared tokens and appending text never changes earlier tokens
 * (only, possibly, the last one). Ids encode their bytes, so decoding is exact:
 * id = b0 | b1 << 8 | b2 << 16, with 0 standing for a lone NUL byte. */
#define IRT_SIM_SPEC "builtin:sim"

/* Appends the ids of text to out. Returns -1 on out of memory. */
int irt_sim_encode(const char *text, size_t len, irt_ids *out);
/* Counts tokens without storing them. */
size_t irt_sim_count(const char *text, size_t len);
/* Appends the text of ids to out. Returns -1 on an id that is not a sim id. */
int irt_sim_decode(const uint32_t *ids, size_t n, ir_buf *out);
/* Decodes one id into at most 3 bytes; returns the byte count or -1. */
int irt_sim_piece(uint32_t id, char out[3]);

/* The simulator's chat template: for each message "<|role|>\n" content "\n",
 * then "<|assistant|>\n" when add_generation_prompt. Content is a string or a
 * list of {"type":"text","text":...} parts. Returns -1 and sets err when the
 * messages cannot be rendered (not a list, a message without role, an
 * unsupported content part). */
int irt_sim_render_chat(const json_t *messages, bool add_generation_prompt, ir_buf *out,
                        const char **err);

/* The prompt's token ids under builtin:sim, exactly as the simulator computes
 * them: a chat's `messages` rendered by irt_sim_render_chat (add_generation_prompt
 * defaults to true), or a completion's `prompt`: a string, a list of one string,
 * or a list of token ids. The text it tokenized (when any) is appended to text
 * (may be NULL). Returns IRT_OK; IRT_EINVAL with *param and *msg saying what is
 * wrong (msg: static, or the template's message); IRT_EUNSUPPORTED for a batch
 * of prompts; IRT_ENOMEM. */
int irt_sim_prompt_ids(const json_t *body, bool chat, irt_ids *ids, ir_buf *text,
                       const char **param, const char **msg);

/* Chained block hashes live in core (ir_hash128, ir_block_hash_*; see ADR 0001). */

/* ---- Hugging Face tokenizer.json ----------------------------------------
 * Token-exact with the Rust `tokenizers` library (0.22) for BPE models:
 * normalizers, pre-tokenizers, added tokens, post-processors and decoders as
 * that library defines them. Offsets are not computed. */

typedef struct irt_tokenizer irt_tokenizer;

enum {
    IRT_OK = 0,
    IRT_ENOMEM = -1,       /* out of memory */
    IRT_EINVAL = -2,       /* text is not valid UTF-8, or a bad argument */
    IRT_ETOOLONG = -3,     /* text longer than IRT_MAX_INPUT */
    IRT_EMODEL = -4,       /* the model cannot encode (e.g. unk_token not in vocab) */
    IRT_EUNSUPPORTED = -5, /* a request the tokenizer does not follow (a batch of prompts) */
    IRT_ETEMPLATE = -6,    /* the chat template refused the conversation (or ran past a bound) */
};

/* Largest text irt_encode accepts, in bytes; this bounds per-call memory. */
#define IRT_MAX_INPUT ((size_t)256 << 20)

/* Loads a tokenizer from a spec: a model directory holding tokenizer.json
 * (tokenizer_config.json and special_tokens_map.json, when present, are only
 * checked to be JSON objects: nothing is taken from them yet),
 * a path to a tokenizer.json file, or a repository in the local Hugging Face
 * cache ($HF_HOME/hub, else ~/.cache/huggingface/hub; HF_HUB_CACHE wins)
 * written org/name or org/name@revision. Nothing is downloaded.
 * On failure returns NULL and writes a message naming the component and its
 * JSON path into err. "builtin:sim" is not handled here. */
irt_tokenizer *irt_load(const char *spec, char *err, size_t errlen);
/* Loads from tokenizer.json text held in memory. */
irt_tokenizer *irt_load_json(const char *json, size_t len, char *err, size_t errlen);
void irt_free(irt_tokenizer *t);

/* Encodes text into out (out->len is reset first). add_special applies the
 * post-processor (e.g. a BOS token), as `add_special_tokens=True` does.
 * Returns IRT_OK or a negative IRT_E* code. Thread-safe. */
int irt_encode(const irt_tokenizer *t, const char *text, size_t len, bool add_special,
               irt_ids *out);

/* ---- the tokenization cache ---------------------------------------------------
 * Pieces of text between added tokens (special tokens such as a chat template's
 * <|im_start|>) are encoded independently of each other, so their ids can be
 * kept and reused: a shared system prompt, or a conversation's earlier turns, is
 * encoded once. A cache belongs to one tokenizer and is shared by any number of
 * threads; it holds at most max_tokens ids, and at most IRT_CACHE_BYTES_PER_TOKEN
 * times that in bytes (entries, ids and text together), evicting the least
 * recently used pieces. Pieces shorter than IRT_CACHE_MIN_BYTES are always
 * encoded. */
typedef struct irt_cache irt_cache;

#define IRT_CACHE_MIN_BYTES       32
#define IRT_CACHE_BYTES_PER_TOKEN 16

typedef struct irt_cache_stats {
    uint64_t hits, misses; /* lookups of pieces of IRT_CACHE_MIN_BYTES or more */
    uint64_t evictions;
    size_t tokens, entries, bytes; /* held now */
    size_t max_tokens, max_bytes;  /* the budget */
} irt_cache_stats;

/* A cache for t holding up to max_tokens ids; NULL when max_tokens is 0 or out
 * of memory. t must outlive it. Free with irt_cache_free, once no thread uses it. */
irt_cache *irt_cache_new(const irt_tokenizer *t, size_t max_tokens);
void irt_cache_free(irt_cache *c);
/* A snapshot of the counters (each read atomically; together, roughly). */
void irt_cache_get_stats(const irt_cache *c, irt_cache_stats *out);

/* irt_encode through cache: the same ids, with the pieces the cache holds copied
 * from it and the others encoded and added to it. cache NULL is irt_encode;
 * a cache made for another tokenizer is IRT_EINVAL. Thread-safe. */
int irt_encode_cached(const irt_tokenizer *t, irt_cache *cache, const char *text, size_t len,
                      bool add_special, irt_ids *out);

/* tiktoken's encode_ordinary: text encoded as plain text, the added tokens'
 * texts in it (<|start|>, ...) not looked for, no post-processor. The ids are
 * APPENDED to out (on failure out keeps its length). The cache serves text
 * in which no added token's text occurs. Thread-safe. */
int irt_encode_ordinary(const irt_tokenizer *t, irt_cache *cache, const char *text, size_t len,
                        irt_ids *out);

/* Decodes ids to text through the tokenizer's decoder, then, when the model
 * directory's tokenizer_config.json sets clean_up_tokenization_spaces, with
 * transformers' clean-up (" ." -> ".", " n't" -> "n't", ...), as
 * transformers' decode. *out is malloc'd and NUL-terminated; free() it.
 * Unknown ids are skipped. Thread-safe. */
int irt_decode(const irt_tokenizer *t, const uint32_t *ids, size_t n, bool skip_special, char **out,
               size_t *outlen);

/* Bytes of heap memory the loaded tokenizer holds. */
size_t irt_memory_bytes(const irt_tokenizer *t);
/* One past the largest id the tokenizer knows (model vocab and added tokens). */
size_t irt_vocab_size(const irt_tokenizer *t);
/* Looks up a token (added tokens first, then the model vocab). -1 when absent. */
int64_t irt_token_to_id(const irt_tokenizer *t, const char *tok, size_t len);
/* Short text for an IRT_E* code. */
const char *irt_strerror(int code);

/* ---- Jinja2 chat templates ---------------------------------------------------
 * A Jinja2 interpreter for chat templates, with Python's semantics, set up as
 * transformers' apply_chat_template sets Jinja2 up: an immutable sandbox,
 * trim_blocks and lstrip_blocks, loop controls, raise_exception, strftime_now
 * and tojson(ensure_ascii=False). No I/O. See docs/internals/template.md.
 *
 * A compiled template is immutable and may be rendered by any number of
 * threads at once; each render keeps its memory to itself (an arena that its
 * thread keeps between renders, ADR 0023). */
typedef struct irt_template irt_template;

/* Bounds of one template or render; 0 in a field takes its default. */
typedef struct irt_template_limits {
    size_t max_template; /* source bytes (default 1 MiB) */
    size_t max_output;   /* rendered bytes (default 64 MiB) */
    size_t max_memory;   /* bytes of values a render may hold (default 512 MiB) */
    uint64_t max_steps;  /* loop iterations and macro calls (default 10,000,000) */
    int max_depth;       /* nesting of the source and of macro calls (default 64); the
                          * source's tree (chains of filters, attributes, calls and
                          * operators included) at most 4 x max_depth levels high,
                          * a render's evals (macro bodies' included) nested at most
                          * 16 x max_depth deep */
} irt_template_limits;

/* Compiles src (limits may be NULL). On failure NULL, with a message such as
 * "line 3, column 7: unexpected end of template" in err. */
irt_template *irt_template_new(const char *src, size_t len, const irt_template_limits *limits,
                               char *err, size_t errlen);
void irt_template_free(irt_template *t);

/* Renders with the variables of the JSON object vars (messages, tools,
 * add_generation_prompt, bos_token, ...) and appends the text to out.
 * now_unix (seconds; 0 for the clock) is what strftime_now formats.
 * Returns IRT_OK; IRT_EINVAL with the template's message in err (a raised
 * exception, an undefined value used, a type error, a bound passed);
 * IRT_ENOMEM. The text is written into out as it is rendered; after an error
 * out is cut back to the length it had. */
int irt_template_render(const irt_template *t, const json_t *vars, int64_t now_unix, ir_buf *out,
                        char *err, size_t errlen);

/* Whether the template reads a top-level variable of this name anywhere
 * (as vLLM checks which chat_template_kwargs to pass). */
bool irt_template_reads(const irt_template *t, const char *name);
/* Whether the template loops over a message's content (vLLM's "openai"
 * content format) rather than printing it as a string. */
bool irt_template_iterates_content(const irt_template *t);

/* ---- chat requests, prepared as vLLM prepares them --------------------------------
 * A model's chat template and special tokens (from its tokenizer_config.json,
 * chat_template.jinja, or a file of its own), and the steps of vLLM's chat
 * preparation: messages normalised (text parts flattened or wrapped by the
 * content format, tool-call arguments parsed from JSON), tools, documents,
 * add_generation_prompt, continue_final_message, chat_template_kwargs passed
 * only when the template reads them. See docs/tokenizer.md for the version
 * followed. Immutable once loaded; any number of threads may render. */
typedef struct irt_chat irt_chat;

typedef struct irt_chat_opts {
    const char *template_path;  /* a template file (models[].chat_template), or NULL */
    const char *content_format; /* "auto" (or NULL), "string" or "openai" */
    const json_t *kwargs;       /* default chat_template_kwargs (an object), or NULL */
} irt_chat_opts;

/* The chat template of a tokenizer spec (see irt_load): its directory's
 * chat_template.jinja or tokenizer_config.json. A model without one loads
 * (irt_chat_has_template is then false). NULL with err on a bad template. */
irt_chat *irt_chat_load(const char *spec, const irt_chat_opts *o, char *err, size_t errlen);
/* From a tokenizer_config.json object (may be NULL) and, when template_src is
 * not NULL, that template instead of the config's. */
irt_chat *irt_chat_new(const json_t *tokenizer_config, const char *template_src,
                       const irt_chat_opts *o, char *err, size_t errlen);
void irt_chat_free(irt_chat *c);
bool irt_chat_has_template(const irt_chat *c);
/* ---- gpt-oss chats (harmony.c, harmony_ts.c) ------------------------------------
 * A Chat Completions body as vLLM renders it for a gpt-oss model: openai-harmony
 * messages (system: identity, knowledge cutoff, the date, reasoning effort,
 * channels; developer: the first system/developer message's text as
 * instructions, and the function tools as a TypeScript namespace; then the
 * conversation), rendered to ids with t, each text piece encoded as plain text,
 * ending "<|start|>assistant". date is the system message's "Current date"
 * (NULL: irt_harmony_today()). The ids are APPENDED to ids, and the prompt's
 * text (markers written out) to text unless it is NULL. Returns IRT_OK;
 * IRT_EINVAL for a request vLLM refuses; IRT_EUNSUPPORTED for one the gateway
 * does not follow (image or refusal parts, schema values it cannot print
 * exactly), with err saying why; IRT_EMODEL when t lacks Harmony's markers.
 * Thread-safe. */
int irt_harmony_ids(const irt_tokenizer *t, irt_cache *cache, const json_t *body, const char *date,
                    irt_ids *ids, ir_buf *text, char *err, size_t errlen);
/* IRT_OK when t has every marker irt_harmony_ids writes, else IRT_EMODEL with
 * err naming the first one missing. */
int irt_harmony_check(const irt_tokenizer *t, char *err, size_t errlen);
/* The date vLLM's gpt-oss system message carries: $VLLM_SYSTEM_START_DATE when
 * set and not empty (vLLM's own setting), else today's date on this process's
 * local clock (TZ), as YYYY-MM-DD, as vLLM's datetime.now() gives it. */
void irt_harmony_today(char out[64]);

/* Whether vLLM renders this model's chats with openai-harmony rather than a
 * template (gpt-oss: config.json's model_type "gpt_oss" in the spec's
 * directory). irt_chat_render then refuses its chats (IRT_EUNSUPPORTED): render
 * them with irt_harmony_ids. Completions are not affected. */
bool irt_chat_uses_harmony(const irt_chat *c);
/* "string" or "openai": the content format in force. */
const char *irt_chat_content_format(const irt_chat *c);

/* The variables the template is rendered with for a chat body (new reference),
 * as transformers receives them from vLLM. NULL with *rc set: IRT_EINVAL (the
 * engine refuses the body; err says why), IRT_EUNSUPPORTED (a per-request
 * chat_template, image/audio/video parts, a gpt-oss chat), IRT_ENOMEM. */
json_t *irt_chat_vars(const irt_chat *c, const json_t *body, int *rc, char *err, size_t errlen);
/* Renders a chat body's prompt text into text: IRT_OK, IRT_EINVAL,
 * IRT_EUNSUPPORTED, IRT_ETEMPLATE (the template's message in err), IRT_ENOMEM. */
int irt_chat_render(const irt_chat *c, const json_t *body, ir_buf *text, char *err, size_t errlen);
/* Whether a body's text is encoded with the tokenizer's special tokens, as vLLM reads
 * add_special_tokens: absent, true for a completion and false for a chat (whose
 * template wrote them). IRT_OK, or IRT_EINVAL for a value the engine refuses. */
int irt_add_special_tokens(const json_t *body, bool chat, bool *add);
/* The special tokens a template receives (bos_token, eos_token, ...; each a
 * string) from a tokenizer_config.json object. New reference. */
json_t *irt_special_tokens(const json_t *tokenizer_config);
/* A request body read by Python's json.loads rules (pyjson.c): what jansson
 * reads, as jansson reads it (a duplicate key keeps its first position and
 * its last value); and, where jansson refuses them, integers past 64 bits,
 * NaN, Infinity, -Infinity and reals past the double range, each read into
 * a marker object that the template engine turns back into the number.
 * flags and err as json_loadb's (err: jansson's first error). New reference,
 * or NULL. */
json_t *irt_json_loads(const char *s, size_t len, size_t flags, json_error_t *err);
/* The text of a marker made by irt_json_loads: an integer's decimal digits
 * (with its sign), "N" (NaN), "I" or "-I" (infinities); NULL when v is not a
 * marker. Points into v. */
const char *irt_json_number_text(const json_t *v, size_t *n);

/* ---- the chat parse cache (parse_cache.c, ADR 0020) --------------------------------
 * A chat body's "messages" elements kept parsed across requests: a system prompt
 * or earlier turns seen before are not read again. Keyed by their bytes (and the
 * parse flags); holds at most max_bytes (an estimate of each kept value's memory),
 * least recently used out first. Shared by any number of threads. Elements shorter
 * than IRT_PARSE_CACHE_MIN_BYTES are always read. */
typedef struct irt_parse_cache irt_parse_cache;

#define IRT_PARSE_CACHE_MIN_BYTES 64

typedef struct irt_parse_cache_stats {
    uint64_t hits, misses; /* element lookups (elements of IRT_PARSE_CACHE_MIN_BYTES or more) */
    uint64_t evictions;
    uint64_t whole; /* bodies read whole, as irt_json_loads reads them (no "messages"
                     * array, a doubt of the scanner, a piece jansson refused) */
    size_t entries, bytes, max_bytes;
} irt_parse_cache_stats;

/* NULL when max_bytes is 0 or out of memory. Free once no thread uses it. */
irt_parse_cache *irt_parse_cache_new(size_t max_bytes);
void irt_parse_cache_free(irt_parse_cache *c);
void irt_parse_cache_get_stats(const irt_parse_cache *c, irt_parse_cache_stats *out);

/* A body read through the cache. doc is what irt_json_loads gives (NULL alike);
 * some of its values may be shared with other threads' bodies: read them, never
 * change them (take a json_deep_copy to change one). The rest is private. */
typedef struct irt_parsed {
    json_t *doc;
    void **pins; /* cache entries this doc uses */
    size_t npins, cap;
} irt_parsed;

/* Reads s as irt_json_loads(s, len, flags, err) would, into *p, taking the
 * top-level "messages" elements it holds from c and keeping those it did not
 * hold. c NULL, or JSON_DISABLE_EOF_CHECK in flags: irt_json_loads. err is set only when doc is
 * NULL. Release p with irt_parsed_release, after every reference taken into doc has been dropped.
 */
void irt_chat_loads(irt_parse_cache *c, const char *s, size_t len, size_t flags, json_error_t *err,
                    irt_parsed *p);
void irt_parsed_release(irt_parsed *p);

/* The directory holding a spec's tokenizer.json (irt_load's rules). */
int irt_spec_dir(const char *spec, char *dir, size_t n, char *err, size_t errlen);

/* `inferrail-gateway tokenize --tokenizer SPEC [--jsonl] < INPUT`.
 * argv[0] is the subcommand name. Returns the process exit status. */
int irt_cli_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
