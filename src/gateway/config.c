/* config.c: the gateway's configuration schema and cross-checks. */
#include "gateway/gateway.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define F(struct_, key_, type_, field_, def_, doc_)                                                \
    { .key = key_, .type = type_, .offset = offsetof(struct_, field_), .def = def_, .doc = doc_ }
#define FI(struct_, key_, field_, def_, lo, hi, doc_)                                              \
    {                                                                                              \
        .key = key_, .type = IR_CFG_INT, .offset = offsetof(struct_, field_), .def = def_,         \
        .min = lo, .max = hi, .doc = doc_                                                          \
    }

static const ir_cfg_field server_fields[] = {
    F(gw_server_cfg, "listen", IR_CFG_HOSTPORT, listen, "0.0.0.0:8080",
      "client address (OpenAI-compatible API)"),
    F(gw_server_cfg, "admin_listen", IR_CFG_HOSTPORT, admin_listen, "127.0.0.1:9090",
      "admin address (/metrics, /health)"),
    FI(gw_server_cfg, "workers", workers, "0", 0, 256, "event-loop threads; 0 means one per core"),
    F(gw_server_cfg, "request_timeout", IR_CFG_DURATION, request_timeout_ns, "60s",
      "deadline to read the body (408 past it) and to get a response head, retries included (a "
      "request that does not stream: the longer of this and upstream.non_streaming_timeout); > 0"),
    F(gw_server_cfg, "header_read_timeout", IR_CFG_DURATION, header_read_timeout_ns, "10s",
      "time to read a request's headers; also how long an idle connection is kept; > 0"),
    F(gw_server_cfg, "shutdown_timeout", IR_CFG_DURATION, shutdown_timeout_ns, "30s",
      "on SIGTERM, how long running requests may finish; 0 cuts them at once"),
    F(gw_server_cfg, "shutdown_delay", IR_CFG_DURATION, shutdown_delay_ns, "0s",
      "on SIGTERM, how long the client port still accepts and serves new requests, /ready "
      "answering 503, before the drain starts: time for a load balancer to stop sending"),
    F(gw_server_cfg, "max_header_bytes", IR_CFG_SIZE, max_header_bytes, "64KiB",
      "request line plus headers (431 past it); > 0"),
    FI(gw_server_cfg, "max_headers", max_headers, "100", 1, 10000, "header count (431 past it)"),
    F(gw_server_cfg, "max_body_bytes", IR_CFG_SIZE, max_body_bytes, "32MiB",
      "request body (413 past it); > 0"),
    FI(gw_server_cfg, "max_connections", max_connections, "0", 0, 10000000,
       "client connections per worker; 0 means no limit"),
    F(gw_server_cfg, "max_write_queue", IR_CFG_SIZE, max_write_queue, "1MiB",
      "bytes queued to one slow client before the upstream is paused; > 0"),
    F(gw_server_cfg, "busy_poll", IR_CFG_BOOL, busy_poll, "false",
      "workers poll without sleeping: lower latency on dedicated cores or VMs, one core each"),
};
static const ir_cfg_schema server_schema = {"server", server_fields, IR_ARRAY_LEN(server_fields),
                                            sizeof(gw_server_cfg)};

static const ir_cfg_field upstream_fields[] = {
    F(gw_upstream_cfg, "http2", IR_CFG_BOOL, http2, "false",
      "talk to engines over h2c (prior knowledge) instead of HTTP/1.1"),
    F(gw_upstream_cfg, "connect_timeout", IR_CFG_DURATION, connect_timeout_ns, "2s",
      "connecting to an engine; > 0"),
    F(gw_upstream_cfg, "response_timeout", IR_CFG_DURATION, response_timeout_ns, "60s",
      "from sending a streamed request to the first response byte; > 0"),
    F(gw_upstream_cfg, "non_streaming_timeout", IR_CFG_DURATION, non_streaming_timeout_ns, "30m",
      "for a request that does not stream (no \"stream\": true), how long each attempt waits "
      "for its response head, which an engine sends once the whole answer is generated (in "
      "place of response_timeout); all its attempts get the longer of this and "
      "server.request_timeout; > 0"),
    F(gw_upstream_cfg, "idle_timeout", IR_CFG_DURATION, idle_timeout_ns, "300s",
      "between two response bytes of a running response; > 0"),
    FI(gw_upstream_cfg, "max_idle_per_replica", max_idle_per_replica, "256", 0, 100000,
       "idle keep-alive connections kept per replica and worker; > 0"),
    F(gw_upstream_cfg, "keepalive_timeout", IR_CFG_DURATION, keepalive_timeout_ns, "30s",
      "how long an idle upstream connection is kept; > 0"),
    F(gw_upstream_cfg, "x_forwarded_for", IR_CFG_BOOL, x_forwarded_for, "false",
      "append the client's address to X-Forwarded-For on requests to engines"),
};
static const ir_cfg_schema upstream_schema = {
    "upstream", upstream_fields, IR_ARRAY_LEN(upstream_fields), sizeof(gw_upstream_cfg)};

static const char *const policy_names[] = {
    "round_robin", "random",     "least_request",      "p2c", "prefix_hash",
    "kv_aware",    "cost_model", "sglang_cache_aware", NULL};

#define FF(struct_, key_, field_, def_, lo, hi, doc_)                                              \
    {                                                                                              \
        .key = key_, .type = IR_CFG_FLOAT, .offset = offsetof(struct_, field_), .def = def_,       \
        .fmin = lo, .fmax = hi, .doc = doc_                                                        \
    }

static const ir_cfg_field cost_model_fields[] = {
    FF(gw_cost_model_cfg, "load_factor", load_factor, "2", 1, 100,
       "bounded loads: no replica above this times the mean in flight (its queue estimate "
       "spreads load before that)"),
    FI(gw_cost_model_cfg, "load_floor", load_floor, "8", 1, 1000000,
       "in flight under which the bounded load holds no replica back"),
    FF(gw_cost_model_cfg, "work_weight", work_weight, "1", 0, 1000,
       "weight of the prefill a choice adds for the requests queued behind it (0: greedy "
       "on this request's TTFT)"),
    FF(gw_cost_model_cfg, "tie_tolerance", tie_tolerance, "0.05", 0, 1,
       "scores closer than this share of the prompt's cold prefill count as equal, and go to the "
       "fewest in flight (0: only equal scores)"),
    FF(gw_cost_model_cfg, "prefill_token_us", prefill_token_us, "100", 0, 1e6,
       "prefill time per uncached token (a), as the simulator's --prefill-token-us"),
    FF(gw_cost_model_cfg, "prefill_pair_ns", prefill_pair_ns, "3.3", 0, 1e6,
       "prefill time per uncached token and attended token (b)"),
    FF(gw_cost_model_cfg, "cpu_transfer_token_us", cpu_token_us, "5", 0, 1e6,
       "loading one token's KV cache from an event-fed replica's CPU tier instead of computing "
       "it (vLLM's KV offloading)"),
    FF(gw_cost_model_cfg, "prefill_fixed_ms", prefill_fixed_ms, "5", 0, 1e6,
       "fixed time per prefill (d)"),
    FF(gw_cost_model_cfg, "decode_token_ms", decode_token_ms, "20", 0, 1e6,
       "time per output token"),
    FF(gw_cost_model_cfg, "kv_pressure", kv_pressure, "0.95", 0, 1,
       "engine KV usage above which a replica is avoided while others are below it"),
    FI(gw_cost_model_cfg, "hot_replicas", hot_replicas, "0", 0, 256,
       "most replicas a hot prefix is spread over; 0 means as many as its load needs"),
    F(gw_cost_model_cfg, "session_affinity", IR_CFG_BOOL, session_affinity, "false",
      "prefer the replica a session used last"),
};
static const ir_cfg_schema cost_model_schema = {
    "cost_model", cost_model_fields, IR_ARRAY_LEN(cost_model_fields), sizeof(gw_cost_model_cfg)};

static const ir_cfg_field sglang_fields[] = {
    FF(gw_sglang_cfg, "cache_threshold", cache_threshold, "0.3", 0, 1,
       "prefix match rate above which the best-matching worker wins"),
    FI(gw_sglang_cfg, "balance_abs_threshold", balance_abs_threshold, "64", 0, 1000000,
       "load gap that, with the relative one, switches to the least loaded worker"),
    FF(gw_sglang_cfg, "balance_rel_threshold", balance_rel_threshold, "1.5", 1, 1e6,
       "load ratio that, with the absolute gap, switches to the least loaded worker"),
};
static const ir_cfg_schema sglang_schema = {"sglang_cache_aware", sglang_fields,
                                            IR_ARRAY_LEN(sglang_fields), sizeof(gw_sglang_cfg)};

static const ir_cfg_field routing_fields[] = {
    {.key = "default_policy",
     .type = IR_CFG_ENUM,
     .offset = offsetof(gw_routing_cfg, default_policy),
     .def = "round_robin",
     .choices = policy_names,
     .doc = "policy of models that name none"},
    FI(gw_routing_cfg, "seed", seed, "0", 0, INT64_MAX,
       "seed of randomized policies; 0 picks one at start"),
    FF(gw_routing_cfg, "load_factor", load_factor, "1.25", 1, 100,
       "bounded loads (prefix_hash, cost_model): no replica above this times the mean in flight"),
    FI(gw_routing_cfg, "prefix_blocks", prefix_blocks, "4", 1, 1000000,
       "prefix_hash: leading blocks of a prompt that name its prefix"),
    FF(gw_routing_cfg, "hit_weight", hit_weight, "1", 0, 1000,
       "kv_aware: weight of the hit fraction"),
    FF(gw_routing_cfg, "load_weight", load_weight, "1", 0, 1000,
       "kv_aware: weight of the normalised load"),
    FF(gw_routing_cfg, "hit_tolerance", hit_tolerance, "0.05", 0, 1,
       "kv_aware: scores closer to the best than this share of the prompt (times hit_weight) "
       "count as equal, and go to the fewest in flight (0: only equal scores)"),
    {.key = "cost_model",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_routing_cfg, cost_model),
     .sub = &cost_model_schema},
    {.key = "sglang_cache_aware",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_routing_cfg, sglang_cache_aware),
     .sub = &sglang_schema},
};
static const ir_cfg_schema routing_schema = {"routing", routing_fields,
                                             IR_ARRAY_LEN(routing_fields), sizeof(gw_routing_cfg)};

static const ir_cfg_field retry_fields[] = {
    FI(gw_retry_cfg, "max_attempts", max_attempts, "3", 1, 100,
       "attempts per request, the first included"),
    F(gw_retry_cfg, "backoff", IR_CFG_DURATION, backoff_ns, "25ms",
      "wait before the second attempt; doubles each time; 0 retries at once"),
    F(gw_retry_cfg, "max_backoff", IR_CFG_DURATION, max_backoff_ns, "1s", "cap of the backoff"),
};
static const ir_cfg_schema retry_schema = {"retry", retry_fields, IR_ARRAY_LEN(retry_fields),
                                           sizeof(gw_retry_cfg)};

static const ir_cfg_field health_fields[] = {
    F(gw_health_cfg, "interval", IR_CFG_DURATION, interval_ns, "1s",
      "GET path of every replica; at least 10ms"),
    F(gw_health_cfg, "timeout", IR_CFG_DURATION, timeout_ns, "500ms", "one probe; > 0"),
    F(gw_health_cfg, "path", IR_CFG_STRING, path, "/health",
      "the path probed, after the replica's URL path; a 200 passes (SGLang's /health runs a "
      "generation and answers after about 1 s: give it timeout: 3s, or probe /model_info)"),
    FI(gw_health_cfg, "unhealthy_threshold", unhealthy_threshold, "3", 1, 1000,
       "failed probes, or consecutive failed requests, that take a replica out"),
    FI(gw_health_cfg, "healthy_threshold", healthy_threshold, "1", 1, 1000,
       "passed probes that bring it back"),
    F(gw_health_cfg, "ejection_backoff", IR_CFG_DURATION, ejection_backoff_ns, "5s",
      "how long failed requests keep a replica out; doubles on every repeat within "
      "max_ejection_backoff of the last"),
    F(gw_health_cfg, "max_ejection_backoff", IR_CFG_DURATION, max_ejection_backoff_ns, "60s",
      "cap of the ejection backoff"),
    FI(gw_health_cfg, "max_ejection_percent", max_ejection_percent, "50", 0, 100,
       "most of the healthy replicas failed requests may eject at once; 0 turns passive ejection "
       "off"),
};
static const ir_cfg_schema health_schema = {"health", health_fields, IR_ARRAY_LEN(health_fields),
                                            sizeof(gw_health_cfg)};

static const char *const levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const formats[] = {"text", "json", NULL};

static const ir_cfg_field logging_fields[] = {
    {.key = "level",
     .type = IR_CFG_ENUM,
     .offset = offsetof(gw_logging_cfg, level),
     .def = "info",
     .choices = levels,
     .doc = "least severe level logged"},
    {.key = "format",
     .type = IR_CFG_ENUM,
     .offset = offsetof(gw_logging_cfg, format),
     .def = "text",
     .choices = formats,
     .doc = "one line per event, as text or JSON"},
    F(gw_logging_cfg, "log_prompts", IR_CFG_BOOL, log_prompts, "false",
      "log request bodies at debug level (off: bodies are never logged)"),
    F(gw_logging_cfg, "access_log", IR_CFG_BOOL, access_log, "false",
      "one info line per proxied request (ms, and engine_ms: the engine's share)"),
};
static const ir_cfg_schema logging_schema = {"logging", logging_fields,
                                             IR_ARRAY_LEN(logging_fields), sizeof(gw_logging_cfg)};

static const ir_cfg_field index_fields[] = {
    FI(gw_index_cfg, "block_size", block_size, "16", 1, 4096,
       "tokens per KV block, as the engines use (vLLM's --block-size)"),
    FI(gw_index_cfg, "default_capacity_blocks", default_capacity_blocks, "16384", 1,
       GW_MAX_CAPACITY_BLOCKS,
       "a replica's KV cache in blocks when neither kv_capacity_blocks nor the engine says"),
    FF(gw_index_cfg, "approximate_trust", approximate_trust, "1", 0, 1,
       "share of an approximate prediction the policies count (events-fed ones count whole)"),
    FF(gw_index_cfg, "fallback_trust", fallback_trust, "0.5", 0, 1,
       "share counted for a replica tracked approximately after a gap in its KV events"),
    FF(gw_index_cfg, "stale_trust", stale_trust, "0.5", 0, 1,
       "share counted for an events-fed replica while its event socket is disconnected"),
    F(gw_index_cfg, "eviction_lookahead", IR_CFG_BOOL, eviction_lookahead, "true",
      "events-fed replicas: leave out of predictions the blocks that the requests just routed "
      "will make the engine evict, before its events say so"),
};
static const ir_cfg_schema index_schema = {"index", index_fields, IR_ARRAY_LEN(index_fields),
                                           sizeof(gw_index_cfg)};

static const ir_cfg_field load_fields[] = {
    F(gw_load_cfg, "scrape_interval", IR_CFG_DURATION, scrape_interval_ns, "100ms",
      "every replica's /metrics page is read this often, all in parallel; at least 10ms"),
    F(gw_load_cfg, "scrape_timeout", IR_CFG_DURATION, scrape_timeout_ns, "100ms",
      "one scrape, connect and whole page; > 0 (pages are capped at 4 MiB)"),
    F(gw_load_cfg, "max_age", IR_CFG_DURATION, max_age_ns, "250ms",
      "an engine report older than this is missing: policies use the gateway's own counts; "
      "at least scrape_interval"),
};
static const ir_cfg_schema load_schema = {"load", load_fields, IR_ARRAY_LEN(load_fields),
                                          sizeof(gw_load_cfg)};
static const ir_cfg_field tokenizer_fields[] = {
    FI(gw_tokenizer_cfg, "workers", workers, "4", 1, 256,
       "threads that render and tokenize prompt bodies over inline_bytes (smaller ones stay on "
       "the event loop)"),
    F(gw_tokenizer_cfg, "max_wait", IR_CFG_DURATION, max_wait_ns, "50ms",
      "a body that waits longer for a thread routes without a prediction (reason slow)"),
    FI(gw_tokenizer_cfg, "max_queue", max_queue, "1024", 1, 1 << 20,
       "bodies queued or being tokenized; past it a request routes without a prediction "
       "(reason busy)"),
    F(gw_tokenizer_cfg, "inline_bytes", IR_CFG_SIZE, inline_bytes, "1KiB",
      "a tokenizer.json model's bodies up to this size are rendered and tokenized on the event "
      "loop, larger ones on the tokenizer threads: the hop to a thread and back costs two "
      "wake-ups, a cold 8,000-token chat about 1 ms of the loop"),
    F(gw_tokenizer_cfg, "inline_warm_bytes", IR_CFG_SIZE, inline_warm_bytes, "64KiB",
      "bodies over inline_bytes and up to this size also stay on the event loop while this "
      "worker's recent bodies took under inline_warm each to prepare (repeated system prompts "
      "and earlier turns from the caches): cheaper than the two wake-ups of the hop"),
    F(gw_tokenizer_cfg, "inline_warm", IR_CFG_DURATION, inline_warm_ns, "50us",
      "the recent preparation time (a moving average per worker) under which bodies up to "
      "inline_warm_bytes stay on the event loop; 0: never"),
    F(gw_tokenizer_cfg, "max_body_bytes", IR_CFG_SIZE, max_body_bytes, "1MiB",
      "a tokenizer.json model's request body larger than this routes without a prediction "
      "(reason too_large): rendering and tokenizing a body costs 30 to 55 ms per MiB here, so "
      "it bounds the time spent on one prompt; 1 MiB is over 200,000 tokens of text"),
    FI(gw_tokenizer_cfg, "cache_tokens", cache_tokens, "1000000", 0, (int64_t)1 << 32,
       "token ids kept per tokenizer.json model for repeated prompt pieces (text between special "
       "tokens: system prompts, earlier turns), least recently used out first; ids, text and "
       "bookkeeping together take at most 16 bytes per token of this budget; 0 turns it off"),
    F(gw_tokenizer_cfg, "parse_cache_bytes", IR_CFG_SIZE, parse_cache_bytes, "32MiB",
      "chat messages kept parsed per tokenizer.json model, keyed by their bytes, so that a "
      "system prompt or earlier turns seen before are not parsed again (an estimate of their "
      "memory, least recently used out first); 0 turns it off"),
};
static const ir_cfg_schema tokenizer_schema = {
    "tokenizer", tokenizer_fields, IR_ARRAY_LEN(tokenizer_fields), sizeof(gw_tokenizer_cfg)};

static const char *const content_formats[] = {"auto", "string", "openai", NULL};

static const ir_cfg_field decision_log_fields[] = {
    F(gw_decision_log_cfg, "path", IR_CFG_STRING, path, NULL,
      "file the decision log appends JSON lines to; required when sample_rate is above 0"),
    FF(gw_decision_log_cfg, "sample_rate", sample_rate, "0", 0, 1,
       "share of requests (by request id, all their attempts) whose routing decisions (and "
       "KV-event parity mismatches) are logged; 0: off"),
};
static const ir_cfg_schema decision_log_schema = {"decision_log", decision_log_fields,
                                                  IR_ARRAY_LEN(decision_log_fields),
                                                  sizeof(gw_decision_log_cfg)};

static const ir_cfg_field observability_fields[] = {
    F(gw_observability_cfg, "otlp_endpoint", IR_CFG_STRING, otlp_endpoint, NULL,
      "OTLP/HTTP collector that spans are posted to (JSON), as http://host:port (the path "
      "/v1/traces is added) or a full URL; unset: no traces"),
    FF(gw_observability_cfg, "trace_sample_ratio", trace_sample_ratio, "1", 0, 1,
       "share of traces (by trace id) exported when otlp_endpoint is set"),
    {.key = "decision_log",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_observability_cfg, decision_log),
     .sub = &decision_log_schema},
};
static const ir_cfg_schema observability_schema = {"observability", observability_fields,
                                                   IR_ARRAY_LEN(observability_fields),
                                                   sizeof(gw_observability_cfg)};

static const ir_cfg_field model_fields[] = {
    {.key = "name",
     .type = IR_CFG_STRING,
     .offset = offsetof(gw_model_cfg, name),
     .required = true,
     .doc = "the name engines serve"},
    F(gw_model_cfg, "aliases", IR_CFG_STRLIST, aliases, NULL,
      "other names clients may use; rewritten to name"),
    {.key = "policy",
     .type = IR_CFG_ENUM,
     .offset = offsetof(gw_model_cfg, policy),
     .choices = policy_names,
     .doc = "routing policy; default routing.default_policy"},
    F(gw_model_cfg, "tokenizer", IR_CFG_STRING, tokenizer, NULL,
      "builtin:sim, a tokenizer.json, a model directory or org/name in the local Hugging Face "
      "cache: prompts are tokenized for KV cache predictions; none: nothing is predicted"),
    F(gw_model_cfg, "tokenizer_optional", IR_CFG_BOOL, tokenizer_optional, "false",
      "a tokenizer that cannot load is a warning (the model routes without predictions), not "
      "an error"),
    F(gw_model_cfg, "chat_template", IR_CFG_STRING, chat_template, NULL,
      "a Jinja2 chat template file used instead of the tokenizer's (vLLM's --chat-template)"),
    {.key = "chat_template_content_format",
     .type = IR_CFG_ENUM,
     .offset = offsetof(gw_model_cfg, chat_template_content_format),
     .def = "auto",
     .choices = content_formats,
     .doc = "how message content reaches the template: auto (detected from it), string or "
            "openai (vLLM's --chat-template-content-format)"},
    {.key = "chat_template_kwargs",
     .type = IR_CFG_MAP,
     .offset = offsetof(gw_model_cfg, chat_template_kwargs),
     .doc = "default template variables, under each request's chat_template_kwargs (vLLM's "
            "--default-chat-template-kwargs)"},
};
static const ir_cfg_schema model_schema = {"model", model_fields, IR_ARRAY_LEN(model_fields),
                                           sizeof(gw_model_cfg)};

static const ir_cfg_field kv_events_fields[] = {
    F(gw_kv_events_cfg, "endpoint", IR_CFG_STRING, endpoint, NULL,
      "the engine's KV event PUB socket, tcp://host:port (vLLM's --kv-events-config endpoint, "
      "with the host the gateway reaches; a host name is looked up with discovery.nameservers, "
      "IPv4 first, else IPv6; a link-local IPv6 host names its zone, tcp://[fe80::1%eth0]:5557); "
      "none: the replica is tracked approximately"),
    F(gw_kv_events_cfg, "replay_endpoint", IR_CFG_STRING, replay_endpoint, NULL,
      "its replay ROUTER socket, tcp://host:port; none: a gap clears the replica's view"),
    F(gw_kv_events_cfg, "topic", IR_CFG_STRING, topic, "\"\"", "the topic the engine publishes on"),
};
static const ir_cfg_schema kv_events_schema = {
    "kv_events", kv_events_fields, IR_ARRAY_LEN(kv_events_fields), sizeof(gw_kv_events_cfg)};

static const ir_cfg_field replica_fields[] = {
    {.key = "id",
     .type = IR_CFG_STRING,
     .offset = offsetof(gw_replica_cfg, id),
     .required = true,
     .doc = "unique name of 1-64 A-Z a-z 0-9 . _ - :, shown in x-inferrail-replica"},
    {.key = "url",
     .type = IR_CFG_URL,
     .offset = offsetof(gw_replica_cfg, url),
     .required = true,
     .doc = "the engine's base URL, http://host:port without /v1; a path is kept as a prefix; "
            "a link-local IPv6 host names its zone, http://[fe80::1%eth0]:8000"},
    F(gw_replica_cfg, "models", IR_CFG_STRLIST, models, NULL,
      "models it serves; default every configured model"),
    FI(gw_replica_cfg, "max_concurrency", max_concurrency, "256", 1, 1000000,
       "requests in flight to it"),
    FI(gw_replica_cfg, "max_pending", max_pending, "64", 1, 1000000,
       "streamed requests waiting for their first token (those that do not stream take "
       "max_concurrency only)"),
    FI(gw_replica_cfg, "kv_capacity_blocks", kv_capacity_blocks, "0", 0, GW_MAX_CAPACITY_BLOCKS,
       "its KV cache in blocks, for the KV index; 0 means learn it from the engine"),
    {.key = "headers",
     .type = IR_CFG_MAP,
     .offset = offsetof(gw_replica_cfg, headers),
     .doc = "headers added to every request to it, e.g. {Authorization: Bearer KEY}; they "
            "replace the client's of the same name"},
    {.key = "kv_events",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_replica_cfg, kv_events),
     .sub = &kv_events_schema,
     .doc = "track its KV cache exactly from its engine's events (vLLM --kv-events-config)"},
    FI(gw_replica_cfg, "data_parallel_size", data_parallel_size, "1", 1, GW_DP_MAX,
       "the engine's data-parallel ranks (vLLM --data-parallel-size): each rank is a routing "
       "target <id>/dp<r> pinned by the X-data-parallel-rank header, with its own KV cache, "
       "event stream (kv_events ports plus r), load and caps"),
};
static const ir_cfg_schema replica_schema = {"replica", replica_fields,
                                             IR_ARRAY_LEN(replica_fields), sizeof(gw_replica_cfg)};

static const ir_cfg_field dns_kv_events_fields[] = {
    FI(gw_dns_kv_events_cfg, "port", port, "0", 0, 65535,
       "the port of each member's KV event PUB socket (the engine binds tcp://*:PORT); "
       "required to follow events (or port_srv), 0: members are tracked approximately"),
    FI(gw_dns_kv_events_cfg, "replay_port", replay_port, "0", 0, 65535,
       "the port of each member's replay ROUTER socket; 0: a gap clears the member's view"),
    F(gw_dns_kv_events_cfg, "topic", IR_CFG_STRING, topic, "\"\"",
      "the topic the engines publish on"),
    F(gw_dns_kv_events_cfg, "port_srv", IR_CFG_STRING, port_srv, NULL,
      "instead of port: an SRV name (Kubernetes: _kv-events._tcp.SERVICE.NS.svc.cluster.local) "
      "whose records give each member its PUB port, matched by the record target's address"),
    F(gw_dns_kv_events_cfg, "replay_port_srv", IR_CFG_STRING, replay_port_srv, NULL,
      "instead of replay_port: an SRV name whose records give each member its replay port"),
};
static const ir_cfg_schema dns_kv_events_schema = {"kv_events", dns_kv_events_fields,
                                                   IR_ARRAY_LEN(dns_kv_events_fields),
                                                   sizeof(gw_dns_kv_events_cfg)};

static const ir_cfg_field dns_group_fields[] = {
    {.key = "name",
     .type = IR_CFG_STRING,
     .offset = offsetof(gw_dns_group_cfg, name),
     .required = true,
     .doc = "1 to 18 of A-Z a-z 0-9 . _ - : (fewer with data_parallel_size); its members are "
            "named <name>-<ip>-<port>"},
    {.key = "url",
     .type = IR_CFG_URL,
     .offset = offsetof(gw_dns_group_cfg, url),
     .required = true,
     .doc = "http://NAME:PORT[/base]: NAME's A and AAAA records are the members, on PORT; "
            "with srv, NAME is an SRV name whose records give targets and ports"},
    F(gw_dns_group_cfg, "models", IR_CFG_STRLIST, models, NULL,
      "models its members serve; default every configured model"),
    F(gw_dns_group_cfg, "refresh", IR_CFG_DURATION, refresh_ns, "5s",
      "how often NAME is looked up again; an answer (SRV included) whose TTL runs out first "
      "brings the next lookup sooner, but a TTL never below 1s; at least 10ms"),
    F(gw_dns_group_cfg, "srv", IR_CFG_BOOL, srv, "false",
      "look up SRV records (as Kubernetes headless Services publish) for targets and ports"),
    FI(gw_dns_group_cfg, "max_concurrency", max_concurrency, "256", 1, 1000000,
       "requests in flight to each member"),
    FI(gw_dns_group_cfg, "max_pending", max_pending, "64", 1, 1000000,
       "streamed requests waiting for their first token, per member"),
    FI(gw_dns_group_cfg, "kv_capacity_blocks", kv_capacity_blocks, "0", 0, GW_MAX_CAPACITY_BLOCKS,
       "each member's KV cache in blocks; 0 means learn it from the engine"),
    {.key = "kv_events",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_dns_group_cfg, kv_events),
     .sub = &dns_kv_events_schema,
     .doc = "track each member's KV cache exactly from its engine's events, on the member's "
            "own address (vLLM --kv-events-config)"},
    FI(gw_dns_group_cfg, "data_parallel_size", data_parallel_size, "1", 1, GW_DP_MAX,
       "each member's data-parallel ranks (vLLM --data-parallel-size): a member is N routing "
       "targets <member>/dp<r>, rank r pinned by X-data-parallel-rank and publishing on the "
       "kv_events ports plus r"),
};
static const ir_cfg_schema dns_group_schema = {
    "dns group", dns_group_fields, IR_ARRAY_LEN(dns_group_fields), sizeof(gw_dns_group_cfg)};

static const ir_cfg_field discovery_fields[] = {
    {.key = "dns",
     .type = IR_CFG_LIST,
     .offset = offsetof(gw_discovery_cfg, dns),
     .sub = &dns_group_schema,
     .doc = "DNS groups: every address a name resolves to is a replica"},
    F(gw_discovery_cfg, "nameservers", IR_CFG_STRLIST, nameservers, NULL,
      "DNS servers as host:port, instead of /etc/resolv.conf's (DNS groups, and the host names "
      "of kv_events endpoints)"),
};
static const ir_cfg_schema discovery_schema = {
    "discovery", discovery_fields, IR_ARRAY_LEN(discovery_fields), sizeof(gw_discovery_cfg)};

static const ir_cfg_field top_fields[] = {
    {.key = "models",
     .type = IR_CFG_LIST,
     .offset = offsetof(gw_config, models),
     .sub = &model_schema,
     .required = true,
     .doc = "served models; a SIGHUP reload adds, removes, reorders and retokenizes them live"},
    {.key = "replicas",
     .type = IR_CFG_LIST,
     .offset = offsetof(gw_config, replicas),
     .sub = &replica_schema,
     .doc = "the engines; required unless discovery.dns names some"},
    {.key = "discovery",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, discovery),
     .sub = &discovery_schema},
    {.key = "server",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, server),
     .sub = &server_schema},
    {.key = "upstream",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, upstream),
     .sub = &upstream_schema},
    {.key = "routing",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, routing),
     .sub = &routing_schema},
    {.key = "retry",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, retry),
     .sub = &retry_schema},
    {.key = "health",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, health),
     .sub = &health_schema},
    {.key = "logging",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, logging),
     .sub = &logging_schema},
    {.key = "index",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, index),
     .sub = &index_schema},
    {.key = "load",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, load),
     .sub = &load_schema},
    {.key = "observability",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, observability),
     .sub = &observability_schema},
    {.key = "tokenizer",
     .type = IR_CFG_OBJECT,
     .offset = offsetof(gw_config, tokenizer),
     .sub = &tokenizer_schema},
};

const ir_cfg_schema gw_config_schema = {"config", top_fields, IR_ARRAY_LEN(top_fields),
                                        sizeof(gw_config)};

/* Replica ids travel in headers, metric labels, logs and JSON: keep them plain. */
bool gw_replica_id_ok(const char *id) {
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > GW_REPLICA_ID_MAX) return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-' || *p == ':'))
            return false;
    return true;
}

static bool wildcard_host(const char *h) {
    return !*h || strcmp(h, "0.0.0.0") == 0 || strcmp(h, "::") == 0 || strcmp(h, "[::]") == 0;
}

static void check_ports(const gw_config *c, ir_cfg_errors *errs) {
    if (!c->server.listen || !c->server.admin_listen) return;
    char h1[256], h2[256];
    uint16_t p1, p2;
    if (ir_hostport_parse(c->server.listen, h1, sizeof h1, &p1) ||
        ir_hostport_parse(c->server.admin_listen, h2, sizeof h2, &p2))
        return;
    if (p1 && p1 == p2 && (strcmp(h1, h2) == 0 || wildcard_host(h1) || wildcard_host(h2)))
        ir_cfg_errors_add(errs,
                          "server.admin_listen: '%s' overlaps server.listen '%s': give the admin "
                          "port its own port",
                          c->server.admin_listen, c->server.listen);
}

/* A report must be able to stay fresh until the next one lands. */
static void check_load(const gw_load_cfg *l, ir_cfg_errors *errs) {
    if (l->scrape_interval_ns < 10 * 1000000ull)
        ir_cfg_errors_add(errs, "load.scrape_interval: at least 10ms");
    else if (l->max_age_ns && l->max_age_ns < l->scrape_interval_ns)
        ir_cfg_errors_add(errs,
                          "load.max_age: %llu ms is shorter than load.scrape_interval (%llu ms): "
                          "every report would go stale before the next one",
                          (unsigned long long)(l->max_age_ns / 1000000),
                          (unsigned long long)(l->scrape_interval_ns / 1000000));
}

/* Zeros that would mean a silent default or a busy loop are refused. */
static void check_nonzero(const gw_config *c, ir_cfg_errors *errs) {
    const struct {
        const char *path;
        uint64_t v;
    } must[] = {
        {"server.request_timeout", c->server.request_timeout_ns},
        {"server.header_read_timeout", c->server.header_read_timeout_ns},
        {"server.max_header_bytes", c->server.max_header_bytes},
        {"server.max_body_bytes", c->server.max_body_bytes},
        {"server.max_write_queue", c->server.max_write_queue},
        {"upstream.connect_timeout", c->upstream.connect_timeout_ns},
        {"upstream.response_timeout", c->upstream.response_timeout_ns},
        {"upstream.non_streaming_timeout", c->upstream.non_streaming_timeout_ns},
        {"upstream.idle_timeout", c->upstream.idle_timeout_ns},
        {"upstream.keepalive_timeout", c->upstream.keepalive_timeout_ns},
        {"upstream.max_idle_per_replica", (uint64_t)c->upstream.max_idle_per_replica},
        {"health.interval", c->health.interval_ns},
        {"health.timeout", c->health.timeout_ns},
        {"load.scrape_timeout", c->load.scrape_timeout_ns},
        {"load.max_age", c->load.max_age_ns},
    };
    for (size_t i = 0; i < IR_ARRAY_LEN(must); i++)
        if (must[i].v == 0)
            ir_cfg_errors_add(errs, "%s: must be greater than 0 (0 has no meaning here)",
                              must[i].path);
    if (c->health.interval_ns && c->health.interval_ns < 10 * 1000000ull)
        ir_cfg_errors_add(errs, "health.interval: at least 10ms");
    const char *hp = c->health.path;
    if (hp && (hp[0] != '/' || strlen(hp) > 256 || strpbrk(hp, " \t\r\n#")))
        ir_cfg_errors_add(errs, "health.path: a path that starts with /, at most 256 bytes, "
                                "without spaces or #");
    if (c->retry.backoff_ns > c->retry.max_backoff_ns)
        ir_cfg_errors_add(errs, "retry.backoff: above retry.max_backoff (its cap: the first "
                                "wait would already be cut)");
    if (c->health.ejection_backoff_ns > c->health.max_ejection_backoff_ns)
        ir_cfg_errors_add(errs, "health.ejection_backoff: above health.max_ejection_backoff (its "
                                "cap)");
    check_load(&c->load, errs);
    const gw_decision_log_cfg *dl = &c->observability.decision_log;
    if (dl->sample_rate > 0 && (!dl->path || !*dl->path))
        ir_cfg_errors_add(errs, "observability.decision_log.path: required when sample_rate is "
                                "above 0 (the file the decisions go to)");
    struct stat st;
    if (dl->path && *dl->path && stat(dl->path, &st) == 0 && S_ISDIR(st.st_mode))
        ir_cfg_errors_add(errs, "observability.decision_log.path: %s is a directory (give a file)",
                          dl->path);
    gw_check_otlp_endpoint(c->observability.otlp_endpoint, errs);
}

/* The replica URL is a base: the client's path (/v1/...) is appended to it. */
static void check_url(const gw_replica_cfg *r, size_t i, ir_cfg_errors *errs) {
    ir_url u;
    if (!r->url) return;
    if (ir_url_parse(r->url, &u)) {
        ir_cfg_errors_add(errs, "replicas[%zu].url: not an http URL", i);
        return;
    }
    char why[256];
    if (gw_ip6_zone_problem(u.host, why, sizeof why))
        ir_cfg_errors_add(errs, "replicas[%zu].url: %s", i, why);
    size_t pl = strlen(u.path);
    if (strpbrk(u.path, "?#"))
        ir_cfg_errors_add(errs, "replicas[%zu].url: '%s' has a query or fragment", i, r->url);
    else if (pl >= 3 && strcmp(u.path + pl - 3, "/v1") == 0)
        ir_cfg_errors_add(errs,
                          "replicas[%zu].url: '%s' ends in /v1, but the client's path "
                          "(/v1/chat/completions) is appended to it: give the base URL "
                          "without /v1",
                          i, r->url);
}

static void check_replicas(const gw_config *c, ir_cfg_errors *errs) {
    const gw_model_cfg *models = c->models.items;
    const gw_replica_cfg *reps = c->replicas.items;
    for (size_t i = 0; i < c->replicas.n; i++) {
        const char *id = reps[i].id;
        if (id && !gw_replica_id_ok(id))
            ir_cfg_errors_add(errs,
                              "replicas[%zu].id: must be 1 to %d of A-Z a-z 0-9 . _ - : "
                              "(it appears in headers, metric labels and logs)",
                              i, GW_REPLICA_ID_MAX);
        for (size_t j = 0; id && gw_replica_id_ok(id) && j < i; j++)
            if (reps[j].id && strcmp(id, reps[j].id) == 0) {
                ir_cfg_errors_add(errs, "replicas[%zu].id: '%s' is used by replicas[%zu]", i, id,
                                  j);
                break;
            }
        check_url(&reps[i], i, errs);
        gw_check_replica_headers(&reps[i], i, errs);
        gw_check_kv_events(&reps[i].kv_events, i, errs);
        for (size_t m = 0; m < reps[i].models.n; m++) {
            const char *want = reps[i].models.items[m];
            bool known = false;
            for (size_t k = 0; k < c->models.n && !known; k++)
                known = models[k].name && want && strcmp(models[k].name, want) == 0;
            if (!known)
                ir_cfg_errors_add(errs,
                                  "replicas[%zu].models[%zu]: '%s' is not a configured model name",
                                  i, m, want ? want : "");
        }
    }
    for (size_t k = 0; k < c->models.n; k++) {
        if (!models[k].name || gw_dns_serves(c, models[k].name)) continue;
        bool served = false;
        for (size_t i = 0; i < c->replicas.n && !served; i++) {
            served = reps[i].models.n == 0;
            for (size_t m = 0; m < reps[i].models.n && !served; m++)
                served =
                    reps[i].models.items[m] && strcmp(reps[i].models.items[m], models[k].name) == 0;
        }
        if (!served && c->replicas.n)
            ir_cfg_errors_add(errs, "models[%zu].name: no replica serves '%s'", k, models[k].name);
    }
}

#define MAX_MODELS     256
#define MAX_NAMES      4096 /* model names and aliases in all */
#define MAX_DNS_GROUPS 256

/* The lists' sizes, checked before anything compares their entries with each other:
 * a file of 100,000 replicas is refused at once, not after minutes of comparing pairs
 * (a reload runs these checks on the control loop). */
static bool within_limits(const gw_config *c, ir_cfg_errors *errs) {
    const gw_model_cfg *models = c->models.items;
    size_t names = 0;
    for (size_t i = 0; i < c->models.n; i++) names += 1 + models[i].aliases.n;
    if (c->models.n > MAX_MODELS) ir_cfg_errors_add(errs, "models: at most %d models", MAX_MODELS);
    if (names > MAX_NAMES)
        ir_cfg_errors_add(errs, "models: at most %d names and aliases in all", MAX_NAMES);
    if (c->replicas.n > GW_MAX_REPLICAS)
        ir_cfg_errors_add(errs, "replicas: at most %d replicas", GW_MAX_REPLICAS);
    if (c->discovery.dns.n > MAX_DNS_GROUPS)
        ir_cfg_errors_add(errs, "discovery.dns: at most %d groups", MAX_DNS_GROUPS);
    return c->models.n <= MAX_MODELS && names <= MAX_NAMES && c->replicas.n <= GW_MAX_REPLICAS &&
           c->discovery.dns.n <= MAX_DNS_GROUPS;
}

void gw_config_check(const gw_config *c, ir_cfg_errors *errs) {
    const gw_model_cfg *models = c->models.items;
    if (c->models.n == 0) ir_cfg_errors_add(errs, "models: at least one model is required");
    if (c->replicas.n == 0 && c->discovery.dns.n == 0)
        ir_cfg_errors_add(errs, "replicas: at least one replica (or a discovery.dns group) is "
                                "required");
    if (!within_limits(c, errs)) return;
    /* Names and aliases share one namespace: list them all, then compare pairs. */
    size_t total = 0;
    for (size_t i = 0; i < c->models.n; i++) total += 1 + models[i].aliases.n;
    const char **names = calloc(total ? total : 1, sizeof *names);
    char(*paths)[80] = calloc(total ? total : 1, sizeof *paths);
    size_t nn = 0;
    for (size_t i = 0; names && paths && i < c->models.n; i++) {
        names[nn] = models[i].name;
        snprintf(paths[nn++], 80, "models[%zu].name", i);
        for (size_t a = 0; a < models[i].aliases.n; a++) {
            names[nn] = models[i].aliases.items[a];
            snprintf(paths[nn++], 80, "models[%zu].aliases[%zu]", i, a);
        }
    }
    for (size_t k = 0; k < nn; k++) {
        if (!names[k] || !*names[k]) {
            if (names[k]) ir_cfg_errors_add(errs, "%s: must not be empty", paths[k]);
            continue;
        }
        for (size_t j = 0; j < k; j++) {
            if (names[j] && strcmp(names[j], names[k]) == 0) {
                ir_cfg_errors_add(errs, "%s: '%s' is already used by %s", paths[k], names[k],
                                  paths[j]);
                break;
            }
        }
    }
    free(names);
    free(paths);
    check_replicas(c, errs);
    gw_check_event_ports(c, errs);
    gw_check_discovery(c, errs);
    check_ports(c, errs);
    check_nonzero(c, errs);
}

/* Field errors and cross-checks are reported together: the cross-checks run
 * on whatever part of the file could be read. */
ir_cfg *gw_config_load(const char *path, gw_config *out, ir_cfg_errors *errs) {
    ir_cfg *owner = ir_cfg_load_file_partial(path, &gw_config_schema, out, errs);
    if (!owner) return NULL;
    gw_config_check(out, errs);
    if (!errs->n) gw_config_expand_dp(out, owner, errs);
    if (errs->n) {
        ir_cfg_free(owner);
        memset(out, 0, sizeof *out);
        return NULL;
    }
    return owner;
}
