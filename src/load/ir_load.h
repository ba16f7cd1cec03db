/* ir_load.h: the load module's public header (prefix irl_).
 *
 * Load signals of the engines: the reader of the Prometheus text exposition
 * format (version 0.0.4) that their /metrics pages use, the reader of a vLLM
 * or SGLang page into one engine report, and the scraper that fetches every
 * replica's page on a schedule.
 *
 * Ownership: the readers never copy or keep the page; every pointer they
 * hand out points into the caller's page and lives as long as it does. The
 * page need not be NUL-terminated. The readers never allocate.
 */
#ifndef IR_LOAD_H
#define IR_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/ir_core.h"
#include "net/ir_net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A line longer than this is malformed (and skipped): a cap on the work one
 * line can cost. Real pages keep lines under a few hundred bytes. */
#define IRL_PROM_MAX_LINE 65536

/* One sample line: name{labels} value [timestamp]. */
typedef struct irl_sample {
    const char *name; /* [a-zA-Z_:][a-zA-Z0-9_:]*, not NUL-terminated */
    size_t name_len;
    const char *labels; /* between the braces, raw (escapes kept); "" when none */
    size_t labels_len;
    double value;       /* also +Inf, -Inf, NaN */
    bool has_timestamp; /* then timestamp_ms holds it */
    int64_t timestamp_ms;
} irl_sample;

/* Returns non-zero to stop the walk (irl_prom_parse then returns that value). */
typedef int (*irl_sample_cb)(void *ud, const irl_sample *s);

/* Walks page[0..len): calls cb once per well-formed sample line, in order.
 * Comments (# HELP, # TYPE, any #), blank lines and a trailing \r are
 * skipped. A malformed line is skipped too and counted in *malformed (which
 * may be NULL). Returns 0, or the callback's non-zero value. */
int irl_prom_parse(const char *page, size_t len, irl_sample_cb cb, void *ud, size_t *malformed);

/* The sum of every sample named exactly `family` (all its label sets), or -1
 * when the page has none. */
double irl_prom_sum(const char *page, size_t len, const char *family);

/* Copies the unescaped value of label `key` of s into out (NUL-terminated,
 * cut to outlen - 1 bytes). False when s has no such label. */
bool irl_prom_label(const irl_sample *s, const char *key, char *out, size_t outlen);

/* ---- engine reports -----------------------------------------------------------
 * One engine's load, read from its metrics page. The engine is told by the
 * metric prefix (vllm: or sglang:). Every sample of a family is summed, so the
 * data-parallel ranks (vLLM's `engine` label, SGLang's `dp_rank`) add up and
 * extra labels change nothing; a sample with a `priority` label is one of
 * SGLang's per-priority breakdowns of a total the page also has, and is skipped.
 *
 * Required: running, waiting and KV usage (vLLM: vllm:num_requests_running,
 * vllm:num_requests_waiting, vllm:kv_cache_usage_perc or the older
 * vllm:gpu_cache_usage_perc; SGLang: sglang:num_running_reqs,
 * sglang:num_queue_reqs, sglang:token_usage). A page that lacks one, or gives
 * one a value that is not a finite number >= 0, is unreadable: an error, never
 * an idle engine. Everything else is optional and flagged when present. */
typedef enum irl_engine { IRL_ENGINE_NONE = 0, IRL_ENGINE_VLLM, IRL_ENGINE_SGLANG } irl_engine;

/* "vllm", "sglang" or "none". */
const char *irl_engine_name(irl_engine e);

typedef struct irl_report {
    irl_engine engine;
    uint32_t ranks;          /* samples of the running family: data-parallel ranks */
    double running, waiting; /* requests, summed over the ranks */
    double kv_usage;         /* 0..1, the mean over the ranks (a value above 1 reads as 1) */
    /* Prefix cache counters, in tokens, summed. vLLM: prefix_cache_queries_total
     * and prefix_cache_hits_total; SGLang: prompt_tokens_total and
     * cached_tokens_total (the tokens looked up and the tokens found). */
    bool has_prefix;
    double prefix_queries, prefix_hits;
    bool has_preemptions; /* vllm:num_preemptions_total */
    double preemptions;
    /* KV capacity. vLLM: vllm:cache_config_info's num_gpu_blocks summed over
     * the engines and its block_size; SGLang: sglang:max_total_num_tokens
     * summed. 0: not on the page (or "None" while an engine starts). */
    uint64_t capacity_blocks;
    uint32_t block_size;
    uint64_t capacity_tokens; /* SGLang; for vLLM, blocks * block_size when both known */
    size_t malformed;         /* lines the text reader skipped */
} irl_report;

/* Reads page[0..len) into *out. Returns 0, or -1 when the page is unreadable;
 * then why (may be NULL) gets the reason, NUL-terminated and cut to whylen. */
int irl_report_parse(const char *page, size_t len, irl_report *out, char *why, size_t whylen);
/* The same for one data-parallel rank of the engine (rank >= 0; -1 is the whole
 * engine, as irl_report_parse): only samples whose rank label (vLLM's `engine`,
 * SGLang's `dp_rank`) is that rank count, and samples without the label, which
 * are the whole engine's. A page that labels no sample so gives every rank the
 * whole engine's numbers. One that lacks this rank's required families returns
 * IRL_REPORT_NO_RANK when it labels samples with other ranks (the engine has no
 * such rank, and answers requests pinned to it with a 400), else -1. */
#define IRL_REPORT_NO_RANK (-2)
int irl_report_parse_rank(const char *page, size_t len, int64_t rank, irl_report *out, char *why,
                          size_t whylen);

/* Whether cur says the engine restarted since prev: both have prefix counters
 * and one of them went backwards. */
bool irl_report_restarted(const irl_report *prev, const irl_report *cur);

/* The engine's KV capacity in blocks of block_size tokens: vLLM's num_gpu_blocks
 * (rescaled when its block size differs), or SGLang's token pool divided by
 * block_size. 0 when unknown. */
uint64_t irl_report_capacity_blocks(const irl_report *r, uint32_t block_size);

/* ---- the scraper ------------------------------------------------------------------
 * Scrapes every target's metrics page in parallel, every interval, on a thread
 * of its own with its own libuv loop and connection pool, so nothing it does
 * ever waits on, or delays, the gateway's workers. Each scrape is bounded by
 * the timeout (connect, head and the whole body together) and by the page cap;
 * a target whose last scrape is still running when its turn comes is skipped
 * for that round, so a hung or endless engine costs one connection and never
 * delays the other targets. A target that stops answering (an error, a
 * timeout, a bad status, a page too large or unreadable) is logged once, and
 * once again when it answers again.
 *
 * Targets follow membership: irl_scraper_set puts a target into a slot (or takes
 * it out) at any time, from any thread; the scraper's thread applies the change
 * at once (a uv_async), cancelling the old target's scrape in flight, so that no
 * report of the old target follows it. A slot's outcome counts restart at 0.
 *
 * Threads: new, start, stop and free from one thread; irl_scraper_set and
 * irl_scraper_stats from any thread at any time; the report callback runs on the
 * scraper's thread. */
#define IRL_MAX_PAGE (4u << 20) /* 4 MiB */
/* A target whose page passed the cap (a Content-Length past it is not read at
 * all) is scraped again only every this many rounds: an endless page costs the
 * cap in reading each time, and it must not starve the other targets. */
#define IRL_TOO_LARGE_ROUNDS 10

typedef enum irl_result {
    IRL_SCRAPE_OK,
    IRL_SCRAPE_ERROR,      /* connect refused, reset, closed early, malformed HTTP */
    IRL_SCRAPE_TIMEOUT,    /* the whole scrape took longer than the timeout */
    IRL_SCRAPE_STATUS,     /* a status other than 200 */
    IRL_SCRAPE_TOO_LARGE,  /* the page passed the cap */
    IRL_SCRAPE_UNREADABLE, /* irl_report_parse refused the page */
    IRL_SCRAPE_NO_RANK,    /* a ranked target's rank is not on a page that has others */
    IRL_SCRAPE_RESULTS
} irl_result;

/* "ok", "error", "timeout", "status", "too_large", "unreadable", "no_rank". */
const char *irl_result_name(irl_result r);

typedef struct irl_target {
    const char *id;   /* for the logs */
    const char *host; /* numeric or a name */
    uint16_t port;
    const char *path; /* the page, e.g. "/metrics" */
    uint64_t tag;     /* the caller's, handed back with each report of this target */
    bool ranked;      /* report only data-parallel rank `rank` (irl_report_parse_rank) */
    uint32_t rank;
} irl_target; /* all copied by irl_scraper_new and irl_scraper_set */
/* Ranked targets with the same host, port and path share one scrape a round:
 * the lowest slot among them fetches the page, and every one of them gets its
 * own report (its own rank, result and tag) from that page. */

/* After every scrape of the target in slot `i`, on the scraper's thread: r is
 * the report when res is IRL_SCRAPE_OK, else NULL. at_ns (monotonic) is when the
 * page's response head arrived, the moment the report describes. tag is the
 * target's (irl_target.tag): a new target in the same slot has its own. */
typedef void (*irl_report_cb)(void *ud, size_t i, uint64_t tag, irl_result res, const irl_report *r,
                              uint64_t at_ns);

typedef struct irl_scraper_cfg {
    uint64_t interval_ns; /* 0: 100 ms */
    uint64_t timeout_ns;  /* 0: 100 ms */
    size_t max_page;      /* 0: IRL_MAX_PAGE */
    irl_report_cb on_report;
    void *ud;
} irl_scraper_cfg;

typedef struct irl_scraper irl_scraper;

typedef struct irl_scrape_stats {
    uint64_t results[IRL_SCRAPE_RESULTS]; /* scrapes by outcome */
    bool answering;                       /* the last scrape was OK */
} irl_scrape_stats;

/* Slots 0..slots-1, the first n of them filled with targets[0..n) (n <= slots;
 * targets may be NULL when n is 0). An entry of targets whose host is NULL
 * leaves its slot empty. NULL on OOM or a bad argument. */
irl_scraper *irl_scraper_new(const irl_scraper_cfg *cfg, const irl_target *targets, size_t n,
                             size_t slots);
/* Puts t into slot i in place of whatever was there (t NULL: leaves it empty).
 * Applied on the scraper's thread soon after (at once when not started). 0, or
 * -1 on a slot out of range or out of memory. */
int irl_scraper_set(irl_scraper *s, size_t i, const irl_target *t);
/* Slots that hold a target now (as applied on the scraper's thread). */
size_t irl_scraper_targets(const irl_scraper *s);
/* Starts the thread; the first round runs at once. 0 or a UV_E* code. */
int irl_scraper_start(irl_scraper *s);
/* Cancels the scrapes in flight and joins the thread; no callback after it
 * returns. Harmless when not started or already stopped. */
void irl_scraper_stop(irl_scraper *s);
void irl_scraper_free(irl_scraper *s); /* stops first; NULL is fine */
void irl_scraper_stats(const irl_scraper *s, size_t i, irl_scrape_stats *out);

#ifdef __cplusplus
}
#endif
#endif
