/* ir_core.h: the core module's public header.
 *
 * Buffers with caps, arenas, logging, a monotonic clock, duration and size
 * parsing, the SSE codec, JSON helpers and the YAML config loader.
 * Everything here depends only on libc, jansson, libyaml and libxxhash.
 *
 * Ownership: every struct declared here is owned by its caller. Functions
 * that fill a struct never keep a pointer to it after they return.
 */
#ifndef IR_CORE_H
#define IR_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IR_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define IR_MIN(a, b)    ((a) < (b) ? (a) : (b))
#define IR_MAX(a, b)    ((a) > (b) ? (a) : (b))
/* A hot helper that must be inlined whatever the compiler's heuristics say (each
 * use says why: a call there costs more than the work). */
#define IR_INLINE static inline __attribute__((always_inline))

/* ---- version ------------------------------------------------------------
 * One version string for every program, set in CMakeLists.txt, and the git
 * commit it was built from ("unknown" outside a checkout, "-dirty" with
 * uncommitted changes). Static strings. */
const char *ir_version(void);
const char *ir_commit(void);

/* ---- logging ------------------------------------------------------------
 * One line per event on stderr: `ts level component: message`. The level is
 * set once at start-up; reading it is the only cost of a filtered call. */
typedef enum { IR_LOG_DEBUG, IR_LOG_INFO, IR_LOG_WARN, IR_LOG_ERROR, IR_LOG_OFF } ir_log_level;

void ir_log_set_level(ir_log_level lvl);
ir_log_level ir_log_get_level(void);
/* Parses "debug", "info", "warn", "error", "off". Returns -1 when unknown. */
int ir_log_parse_level(const char *s, ir_log_level *out);
/* Emits JSON lines instead of text when on. */
void ir_log_set_json(bool on);
void ir_log_write(ir_log_level lvl, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One structured field of a log event: a string (str non-NULL) or a number. */
typedef struct ir_log_field {
    const char *key;
    const char *str;
    double num;
} ir_log_field;
/* An event with fields. In the json format each field is a member of the event's
 * object; in text, `key=value` pairs follow the message. */
void ir_log_fields(ir_log_level lvl, const char *component, const char *msg, const ir_log_field *f,
                   size_t n);
bool ir_log_is_json(void);

#define IR_LOG(lvl, comp, ...)                                                                     \
    do {                                                                                           \
        if ((lvl) >= ir_log_get_level()) ir_log_write((lvl), (comp), __VA_ARGS__);                 \
    } while (0)
#define IR_DEBUG(comp, ...) IR_LOG(IR_LOG_DEBUG, comp, __VA_ARGS__)
#define IR_INFO(comp, ...)  IR_LOG(IR_LOG_INFO, comp, __VA_ARGS__)
#define IR_WARN(comp, ...)  IR_LOG(IR_LOG_WARN, comp, __VA_ARGS__)
#define IR_ERROR(comp, ...) IR_LOG(IR_LOG_ERROR, comp, __VA_ARGS__)

/* Routes the log through a spool on stderr (below), so that a thread that logs never
 * waits on stderr: when nothing drains it (a pipe whose reader stalls), lines beyond
 * the spool's caps are dropped and counted, and once stderr takes writes again a WARN
 * line says how many were lost. 0, or -1 (out of memory: the log stays direct).
 * ir_log_stop_async writes what is queued (waiting at most 2 s), then logs directly
 * again; it returns once no thread is still handing a line to the spool. Start and
 * stop from one thread; logging goes on from any. */
int ir_log_start_async(void);
void ir_log_stop_async(void);
/* Log lines dropped because stderr did not take them (0 while the log is direct). */
uint64_t ir_log_dropped(void);

/* ---- spool ----------------------------------------------------------------
 * A bounded queue of lines, written to a file descriptor by a thread of its own, so
 * that producers never block on a slow or stuck descriptor: a line that does not fit
 * (more than max_lines or max_bytes queued, or longer than max_line) is dropped and
 * counted. The writer joins what is queued into one write, so lines never interleave.
 * Threads: ir_spool_write and ir_spool_stats from any thread; open and close from one.
 * Ownership: ir_spool_write copies the line; the spool never closes fd. */
typedef struct ir_spool ir_spool;
typedef struct ir_spool_cfg {
    int fd;
    bool newline;          /* append '\n' to every line (else lines carry their own) */
    size_t max_lines;      /* 0: 8192 */
    size_t max_bytes;      /* queued bytes; 0: 8 MiB */
    size_t max_line;       /* 0: 256 KiB */
    unsigned close_wait_s; /* 0: 2 */
    /* Called on the writer thread: on_fail once, at the first failed write (errno's
     * value); on_drops after a write that went through, with the lines dropped since
     * the drops it last took: it returns true when it took them (its own line queued),
     * false to hear them again, with any since, after the next write. Either may call
     * ir_spool_write. */
    void (*on_fail)(ir_spool *s, void *arg, int err);
    bool (*on_drops)(ir_spool *s, void *arg, uint64_t n);
    void *arg;
} ir_spool_cfg;
/* NULL when out of memory or when the thread cannot start. */
ir_spool *ir_spool_open(const ir_spool_cfg *cfg);
/* Queues a copy of data[0..len): 0, or -1 when dropped (and counted). */
int ir_spool_write(ir_spool *s, const char *data, size_t len);
/* Writes what is queued and frees the spool. A write still blocked after close_wait_s
 * is cancelled and the rest dropped: false then, true when everything was written.
 * *dropped (may be NULL) gets every line the spool dropped, those of the close too. */
bool ir_spool_close(ir_spool *s, uint64_t *dropped);
void ir_spool_stats(const ir_spool *s, uint64_t *written, uint64_t *dropped);

/* ---- clock --------------------------------------------------------------- */
uint64_t ir_now_ns(void); /* CLOCK_MONOTONIC */
/* CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID): a system call, not
 * vDSO; about 0.3 us. */
uint64_t ir_thread_cpu_ns(void);
double ir_wall_time(void); /* seconds since the epoch, CLOCK_REALTIME */

/* ---- chained block hashes ------------------------------------------------
 * Full blocks of block_size tokens are hashed with XXH3-128 in a chain, so a
 * block's hash names its whole prefix. A trailing partial block is never
 * hashed. The chain's root is salted by the model, the LoRA adapter and the
 * request's cache_salt, each length-prefixed; NULL (absent) differs from "" and
 * from every string. The gateway's index and the simulator both hash with
 * these, so the index needs no tokenizer (ADR 0001).
 *
 * The rule (ADR 0017): with H[-2] = root and H[-1] = 0,
 *     H[i] = XXH3_128(m[i]) ^ H[i-1],  m[i] = block i's token bytes (as they lie
 *            in memory, zero-padded to 16 bytes) with H[i-2] XORed into its
 *            first 16 bytes (lo, then hi, little-endian).
 * A block's hash needs the two before it, not its parent's alone, so that two
 * XXH3 calls of one chain run at once (cost of a 16-token block:
 * bench/results/index/). */
typedef struct ir_hash128 {
    uint64_t lo, hi;
} ir_hash128;

/* A chain between two blocks: the hashes of the two blocks before the next one
 * (H[i-2] and H[i-1] above). */
typedef struct ir_block_chain {
    ir_hash128 two, one;
} ir_block_chain;

ir_hash128 ir_block_hash_root(const char *model, const char *adapter, const char *cache_salt);
/* The same with a cache_salt of salt_len bytes that may hold NULs (a JSON string
 * "a\u0000b" is three bytes); ir_block_hash_root is this with strlen(cache_salt). */
ir_hash128 ir_block_hash_root_n(const char *model, const char *adapter, const char *cache_salt,
                                size_t salt_len);
/* The chain of a prompt whose first k full blocks hashed to h[0..k): k = 0 is
 * the chain's start under root (root is read only then). */
ir_block_chain ir_block_chain_at(ir_hash128 root, const ir_hash128 *h, size_t k);
/* The chain before a block whose parent hashed to *parent and grandparent to
 * *grand (NULL: none). A block without a parent starts under root. */
ir_block_chain ir_block_chain_under(ir_hash128 root, const ir_hash128 *grand,
                                    const ir_hash128 *parent);
/* Hashes the next full block of chain c and moves c past it. */
ir_hash128 ir_block_hash_next(ir_block_chain *c, const uint32_t *ids, size_t block_size);
/* Hashes the full blocks of ids[0..n); returns how many were written (<= max_out,
 * 0 when block_size is 0). */
size_t ir_block_hash_chain(ir_hash128 root, const uint32_t *ids, size_t n, size_t block_size,
                           ir_hash128 *out, size_t max_out);
static inline bool ir_hash128_eq(ir_hash128 a, ir_hash128 b) {
    return a.lo == b.lo && a.hi == b.hi;
}

/* ---- buffers with caps ----------------------------------------------------
 * A growable byte buffer that refuses to grow past `max`. data is always
 * NUL-terminated (the NUL is not counted in len) once anything was written. */
typedef struct ir_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max; /* hard limit on len; 0 means SIZE_MAX */
} ir_buf;

void ir_buf_init(ir_buf *b, size_t max);
/* A buffer over the caller's memory (size >= 1) that never grows: appends that
 * would pass size - 1 bytes fail. Never ir_buf_free it. Starts as "". */
void ir_buf_fixed(ir_buf *b, char *mem, size_t size);
void ir_buf_free(ir_buf *b);
void ir_buf_reset(ir_buf *b); /* len = 0, keeps memory */
/* Empties b for reuse under a new cap: keeps its memory when that is at most
 * `keep` bytes and fits the cap, frees it otherwise. */
void ir_buf_rearm(ir_buf *b, size_t max, size_t keep);
/* Makes room for `extra` more bytes. -1 when it would exceed max or on OOM. */
int ir_buf_reserve(ir_buf *b, size_t extra);
int ir_buf_append_slow(ir_buf *b, const void *p, size_t n); /* grows; use ir_buf_append */
/* Appends n bytes (and keeps a NUL after them). Inline for the common case of
 * room already there: cap never exceeds max + 1, so it cannot pass max. */
static inline int ir_buf_append(ir_buf *b, const void *p, size_t n) {
    if (b->cap - b->len <= n) return ir_buf_append_slow(b, p, n);
    if (n) __builtin_memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}
int ir_buf_append_str(ir_buf *b, const char *s);
/* A string literal, its length counted by the compiler. */
#define ir_buf_append_lit(b, lit) ir_buf_append((b), (lit), sizeof(lit) - 1)
int ir_buf_append_uint(ir_buf *b, uint64_t v); /* decimal, no printf */
int ir_buf_appendf(ir_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ir_buf_vappendf(ir_buf *b, const char *fmt, va_list ap);
/* Drops the first n bytes. */
void ir_buf_consume(ir_buf *b, size_t n);
/* Hands the memory to the caller (free() it); the buffer becomes empty. */
char *ir_buf_steal(ir_buf *b, size_t *len);

/* ---- arena ------------------------------------------------------------------
 * A bump allocator: one per request. Allocations are 16-byte aligned and
 * live until ir_arena_reset or ir_arena_free. `max` caps the total bytes. */
typedef struct ir_arena ir_arena;

ir_arena *ir_arena_new(size_t chunk_size, size_t max);
void ir_arena_free(ir_arena *a);
void ir_arena_reset(ir_arena *a);
void ir_arena_set_max(ir_arena *a, size_t max); /* for a reused arena */
void *ir_arena_alloc(ir_arena *a, size_t n);    /* NULL past max */
void *ir_arena_calloc(ir_arena *a, size_t n);   /* zeroed */
char *ir_arena_strndup(ir_arena *a, const char *s, size_t n);
char *ir_arena_strdup(ir_arena *a, const char *s);
size_t ir_arena_used(const ir_arena *a);
/* Bytes of chunks the arena holds (what it costs in memory, headers included). */
size_t ir_arena_held(const ir_arena *a);
/* From now on each new chunk is twice the last one, up to max_chunk bytes (a
 * single bigger allocation still gets a chunk of its own size). Chunks of
 * 1 MiB and more come from ir_big_calloc (huge pages). 0 turns growth off. */
void ir_arena_set_growth(ir_arena *a, size_t max_chunk);

/* ---- big blocks --------------------------------------------------------------
 * Zeroed blocks for big tables. From 1 MiB up they are their own 2 MiB-aligned
 * mappings with transparent huge pages requested: a tokenizer load touches
 * tens of megabytes, and 4 KiB page faults (costly on VMs) would otherwise
 * dominate it. ir_big_free(NULL) is a no-op. */
void *ir_big_calloc(size_t n);
void *ir_big_grow(void *p, size_t oldn, size_t newn); /* copies; frees p on success */
void ir_big_free(void *p);

/* ---- hash map ----------------------------------------------------------------
 * Byte-string keys to uint64_t values: open addressing, linear probing, and
 * backward-shift deletion (no tombstones, so probes stay short after deletes).
 * Keys of up to IR_MAP_INLINE_KEY bytes live in the slot; longer ones (up to
 * IR_MAP_MAX_KEY) are copied into the map's own key pool, which is compacted
 * when deleted keys fill half of it. The table doubles at 3/4 full.
 *
 * The table comes from ir_big_calloc (huge pages once it is big). A slot is
 * 32 bytes (two to a cache line): a 48-bit hash and the key's
 * length in one word, the key (or its pool offset), the value.
 *
 * Caps: `max_entries` bounds the entries (a put of a new key past it fails),
 * so memory stays under about max_entries * (2 * 32 + key bytes).
 * Ownership: the map owns copies of its keys; the caller's key memory is never
 * kept. Not thread-safe: one owner, or the caller's lock. A put or a delete
 * invalidates iteration and key pointers handed out before it. */
#define IR_MAP_INLINE_KEY 16
#define IR_MAP_MAX_KEY    65534 /* its length + 1 fits the tag's 16 bits */

typedef struct ir_map_slot {
    uint64_t tag; /* (key length + 1) << 48 | the hash's low 48 bits; 0: empty */
    union {
        uint8_t key[IR_MAP_INLINE_KEY]; /* a short key, zero-padded */
        uint64_t words[2];
        uint64_t off; /* a long key's offset in the pool */
    } k;
    uint64_t val;
} ir_map_slot;

typedef struct ir_map {
    ir_map_slot *slots;
    size_t mask;        /* slots - 1 (a power of two) */
    size_t n;           /* entries */
    size_t max_entries; /* the cap */
    char *pool;         /* long keys */
    size_t plen, pcap, pdead;
} ir_map;

/* expect: a sizing hint (0 is fine); max_entries >= 1. -1 on OOM or bad cap. */
int ir_map_init(ir_map *m, size_t expect, size_t max_entries);
void ir_map_free(ir_map *m);
void ir_map_clear(ir_map *m); /* drops every entry, keeps the table */
/* Inserts or overwrites. 0 on success; -1 when the map is at its cap, the key
 * is longer than IR_MAP_MAX_KEY, or memory runs out (the map is unchanged). */
int ir_map_put(ir_map *m, const void *key, size_t len, uint64_t val);
/* Inserts only when absent: 0 when added, 1 when the key was there (its value
 * is left alone), -1 as ir_map_put. One probe where get-then-put takes two. */
int ir_map_add(ir_map *m, const void *key, size_t len, uint64_t val);
/* True when present (its value in *val, which may be NULL). */
bool ir_map_get(const ir_map *m, const void *key, size_t len, uint64_t *val);
bool ir_map_del(ir_map *m, const void *key, size_t len); /* true when it was there */
static inline size_t ir_map_count(const ir_map *m) {
    return m->n;
}
size_t ir_map_bytes(const ir_map *m); /* memory held, for reports */
/* Iterates in table order: for (size_t it = 0; ir_map_next(m, &it, &k, &n, &v);).
 * Any output pointer may be NULL. */
bool ir_map_next(const ir_map *m, size_t *it, const void **key, size_t *len, uint64_t *val);

/* ---- free lists ------------------------------------------------------------
 * Recycles the fixed-size structs that every request allocates (h2o's
 * recycler): one list per kind of struct and per event loop, used by that
 * loop's thread only. The link lives in a block's first pointer-sized bytes.
 * Under AddressSanitizer nothing is kept, so a use after release is still
 * reported; the callers' paths stay the same. */
typedef struct ir_freelist {
    void *head;
    size_t n, max;
} ir_freelist;

void ir_freelist_init(ir_freelist *f, size_t max); /* keeps at most max blocks */
/* A recycled block, or NULL when none is kept (then allocate one). */
void *ir_freelist_pop(ir_freelist *f);
/* Keeps p; false when the list is full (then free p). */
bool ir_freelist_push(ir_freelist *f, void *p);

/* ---- units -------------------------------------------------------------------
 * Durations: "250ms", "2s", "1.5s", "100us", "5m", "1h", "0". Sizes: "4MiB",
 * "512KiB", "1GiB", "1000", "10KB", "2MB". Both return -1 on bad input. */
int ir_parse_duration_ns(const char *s, uint64_t *out_ns);
int ir_parse_size(const char *s, uint64_t *out_bytes);
/* Formats ns as the shortest exact unit ("250ms", "2s"). */
void ir_format_duration(uint64_t ns, char *out, size_t outlen);

/* ---- SSE codec ---------------------------------------------------------------
 * An incremental decoder for text/event-stream, per the WHATWG rules: lines end
 * in \n, \r\n or \r; `data:` lines join with \n; comments start with ':'; an
 * empty line dispatches. Its output does not depend on how input is chunked. */
typedef struct ir_sse_event {
    const char *event; /* "" when no event field */
    const char *data;
    size_t data_len;
    const char *id; /* NULL when no id field */
} ir_sse_event;

/* Returns non-zero to stop decoding (ir_sse_feed then returns that value). */
typedef int (*ir_sse_cb)(void *ud, const ir_sse_event *ev);

typedef struct ir_sse_decoder {
    ir_buf line;  /* the current partial line */
    ir_buf data;  /* data of the event being built */
    ir_buf event; /* event name */
    ir_buf id;
    bool has_data;
    bool has_id;
    bool last_was_cr; /* a \r ended the last chunk: skip a following \n */
    bool bom_checked;
    size_t max_event; /* cap on one event's bytes */
    ir_sse_cb cb;
    void *ud;
} ir_sse_decoder;

void ir_sse_init(ir_sse_decoder *d, size_t max_event, ir_sse_cb cb, void *ud);
void ir_sse_free(ir_sse_decoder *d);
/* Returns 0, the callback's non-zero return, or -1 when an event exceeds max_event. */
int ir_sse_feed(ir_sse_decoder *d, const char *p, size_t n);
/* Appends `data: <payload>\n\n` (multi-line payloads become several data lines). */
int ir_sse_encode_data(ir_buf *out, const char *payload, size_t n);

/* ---- files ------------------------------------------------------------------- */
/* Opens path for reading ("rb") when it is a regular file; NULL with the reason in
 * why otherwise (a directory, a FIFO, a device: a FIFO would wait for a writer). */
FILE *ir_fopen_regular(const char *path, char *why, size_t whylen);

/* ---- JSON helpers (jansson) --------------------------------------------------- */
/* Appends compact JSON, in insertion order, with ", " and ": " separators as
 * Python's json.dumps writes them when `python_style` is set. */
int ir_json_append(ir_buf *out, const json_t *v, bool python_style);
/* ir_json_append, compact, with reals to 10 significant digits: numbers meant for
 * people (86.2612866 rather than 86.261286600000005), not for exact round trips. */
int ir_json_append_readable(ir_buf *out, const json_t *v);
/* The string value of obj[key]; NULL when the key is missing or not a string. */
const char *ir_json_str(const json_t *obj, const char *key);
/* A request's boolean field as vLLM's pydantic models take it (lax mode): true and
 * false, the numbers 0 and 1, and the strings 0, off, f, false, n, no, 1, on, t,
 * true, y and yes in any case. 0 with *out set; -1 for anything else, null included
 * (the engine's 400). */
int ir_json_lax_bool(const json_t *v, bool *out);
/* v's truth as Python (and so a Jinja template) sees it: null, false, 0, 0.0, "", []
 * and {} are false. */
bool ir_json_truthy(const json_t *v);
/* Appends s as a JSON string literal, quotes included. */
int ir_json_append_string(ir_buf *out, const char *s, size_t n);
/* The two-character escape JSON writes for c (\" \\ \n \r \t \b \f, as Python's
 * json.dumps does), or NULL: other control bytes take \u00XX, the rest is copied. */
static inline const char *ir_json_short_escape(unsigned char c) {
    switch (c) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    case '\t':
        return "\\t";
    case '\b':
        return "\\b";
    case '\f':
        return "\\f";
    default:
        return NULL;
    }
}

/* ---- targeted JSON scanning --------------------------------------------------------
 * Finds one top-level key of a JSON object without building a tree. The whole
 * document is checked against JSON's grammar (RFC 8259) on the way: strings with
 * their escapes, numbers, literals and nested values, which are skipped. As
 * Python's json.loads does, the last of duplicate keys wins. */
typedef struct ir_json_span {
    size_t start, end; /* the value's bytes in the document, quotes included */
    bool is_string;
    size_t obj_open; /* offset of the top-level '{' */
    bool obj_empty;  /* the object has no members */
} ir_json_span;

#define IR_JSON_FOUND   0
#define IR_JSON_ABSENT  1  /* a valid object without the key */
#define IR_JSON_INVALID -1 /* not JSON, or not an object at the top level */

/* Whether a request body opens with a UTF-8 byte order mark: FastAPI hands the bytes
 * to json.loads, which skips one, so the engine reads such a body. */
#define IR_UTF8_BOM_LEN 3
static inline bool ir_has_utf8_bom(const char *p, size_t n) {
    return n >= IR_UTF8_BOM_LEN && (unsigned char)p[0] == 0xEF && (unsigned char)p[1] == 0xBB &&
           (unsigned char)p[2] == 0xBF;
}
/* Moves *p and *n past a byte order mark, if the body opens with one. */
static inline void ir_skip_utf8_bom(const char **p, size_t *n) {
    if (*p && ir_has_utf8_bom(*p, *n)) *p += IR_UTF8_BOM_LEN, *n -= IR_UTF8_BOM_LEN;
}
/* The key's value in a JSON object (a body that may open with a byte order mark). */
int ir_json_scan_key(const char *doc, size_t len, const char *key, ir_json_span *out,
                     size_t max_depth);
/* The values of n keys (at most IR_JSON_MAX_KEYS) in one pass: res[k] is IR_JSON_FOUND
 * (out[k] filled) or IR_JSON_ABSENT. Returns 0, or IR_JSON_INVALID (res not set). */
#define IR_JSON_MAX_KEYS 8
int ir_json_scan_keys(const char *doc, size_t len, const char *const *keys, size_t n,
                      ir_json_span *out, int *res, size_t max_depth);
/* Decodes a JSON string token (quotes included) into out, as UTF-8. */
int ir_json_unescape(const char *tok, size_t len, ir_buf *out);

/* ---- misc ------------------------------------------------------------------------- */
/* A hex digit's value (0-9, a-f, A-F); -1 for any other character. */
static inline int ir_hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
/* splitmix64: a tiny seeded generator for deterministic choices. Not thread-shared. */
typedef struct ir_rng {
    uint64_t s;
} ir_rng;
void ir_rng_seed(ir_rng *r, uint64_t seed);
uint64_t ir_rng_next(ir_rng *r);
double ir_rng_double(ir_rng *r); /* [0, 1) */
uint64_t ir_rng_below(ir_rng *r, uint64_t n);

/* Parses "http://host:port[/path]" into parts. Returns -1 when not an http URL. */
typedef struct ir_url {
    char host[256];
    uint16_t port;
    char path[512];
} ir_url;
int ir_url_parse(const char *s, ir_url *out);

/* Parses "host:port" or ":port" or "[v6]:port". Returns -1 on bad input. */
int ir_hostport_parse(const char *s, char *host, size_t hostlen, uint16_t *port);

/* ---- YAML config loader --------------------------------------------------------
 * Schema-driven: a program describes its config as a table of fields. The loader
 * rejects unknown keys, applies defaults, and reports every problem at once,
 * each with its path, e.g. `replicas[2].url: not an http URL`. */
typedef enum {
    IR_CFG_STRING,   /* char * (owned by the config's arena) */
    IR_CFG_INT,      /* int64_t, range [min, max] */
    IR_CFG_FLOAT,    /* double, range [fmin, fmax] */
    IR_CFG_BOOL,     /* bool */
    IR_CFG_DURATION, /* uint64_t nanoseconds, written "250ms", "2s" */
    IR_CFG_SIZE,     /* uint64_t bytes, written "4MiB" */
    IR_CFG_URL,      /* char *, must be an http:// URL */
    IR_CFG_HOSTPORT, /* char *, must be host:port */
    IR_CFG_ENUM,     /* char *, one of `choices` */
    IR_CFG_STRLIST,  /* ir_cfg_strlist */
    IR_CFG_OBJECT,   /* a nested struct at `offset`, described by `sub` */
    IR_CFG_LIST,     /* ir_cfg_list of structs described by `sub` */
    IR_CFG_MAP,      /* ir_cfg_map: string keys to scalar values kept as JSON */
} ir_cfg_type;

typedef struct ir_cfg_strlist {
    char **items;
    size_t n;
} ir_cfg_strlist;

typedef struct ir_cfg_list {
    void *items; /* n structs of sub->size bytes */
    size_t n;
} ir_cfg_list;

typedef struct ir_cfg_map {
    json_t *obj; /* owned by the config; freed by ir_cfg_free */
} ir_cfg_map;

struct ir_cfg_schema;

typedef struct ir_cfg_field {
    const char *key;
    ir_cfg_type type;
    size_t offset;
    bool required;
    const char *def; /* default as YAML text, NULL for none */
    const struct ir_cfg_schema *sub;
    const char *const *choices; /* IR_CFG_ENUM: NULL-terminated */
    int64_t min, max;           /* IR_CFG_INT, when min < max */
    double fmin, fmax;          /* IR_CFG_FLOAT, when fmin < fmax */
    const char *doc;            /* one line for --help and the example file */
} ir_cfg_field;

typedef struct ir_cfg_schema {
    const char *name;
    const ir_cfg_field *fields;
    size_t nfields;
    size_t size; /* sizeof the struct it fills */
} ir_cfg_schema;

typedef struct ir_cfg_errors {
    char **msgs; /* "path: message" */
    size_t n;
} ir_cfg_errors;

typedef struct ir_cfg ir_cfg; /* owns the memory behind a loaded struct */

/* Loads YAML text into `out` (a struct described by `schema`). Returns the owner
 * of the loaded memory, or NULL when errs->n > 0. errs must be freed by the caller. */
ir_cfg *ir_cfg_load_text(const char *yaml, size_t len, const ir_cfg_schema *schema, void *out,
                         ir_cfg_errors *errs);
ir_cfg *ir_cfg_load_file(const char *path, const ir_cfg_schema *schema, void *out,
                         ir_cfg_errors *errs);
/* As ir_cfg_load_file, but when the YAML itself parsed, returns the owner even
 * with errors: `out` then holds every field that could be read (the ones in
 * error are zero or NULL), so that a caller can run its cross-checks and
 * report every problem in one pass. errs must not be NULL. */
ir_cfg *ir_cfg_load_file_partial(const char *path, const ir_cfg_schema *schema, void *out,
                                 ir_cfg_errors *errs);
void ir_cfg_free(ir_cfg *c);
/* The arena a loaded config's strings and lists live in: a program that derives
 * more of them from the file (the gateway's data-parallel targets) puts them here,
 * and they live as long as the rest (until ir_cfg_free). */
ir_arena *ir_cfg_arena(ir_cfg *c);
/* Adds "path: message", unless a problem with the same key path is there already
 * (one problem a key: the first found). After 100 problems, one more says that
 * reporting stopped, and the rest are dropped. */
void ir_cfg_errors_add(ir_cfg_errors *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ir_cfg_errors_free(ir_cfg_errors *e);
/* Writes every field with its default as commented YAML, for the example file. */
int ir_cfg_write_defaults(ir_buf *out, const ir_cfg_schema *schema);

#ifdef __cplusplus
}
#endif
#endif
