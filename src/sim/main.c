/* main.c: inferrail-sim, a CPU mock of a vLLM (or SGLang) OpenAI server. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sim/api.h"

typedef struct app {
    uv_loop_t *loop;
    sim_cfg cfg;
    sim_engine *eng[SIM_DP_MAX]; /* one per data-parallel rank */
    sim_api *api;
    irn_server *srv;
    uv_timer_t refuse_timer;
    uv_signal_t sigint, sigterm;
    bool stopping;
    sim_kvpub *pub[SIM_DP_MAX]; /* KV events per rank, or NULL */
    const char *kv_json;        /* --kv-events-config */
    bool kv_map, kv_bytes;      /* --kv-events-encoding map, --kv-events-hash bytes */
} app;

static app *the_app; /* for the flags that belong to the app rather than the engine */

static void usage(FILE *f) {
    fprintf(
        f,
        "Usage: inferrail-sim [options]\n"
        "\n"
        "A CPU simulator of a vLLM OpenAI-compatible server: same routes, wire format and\n"
        "Prometheus metrics, a calibrated latency model and a real prefix cache.\n"
        "\n"
        "Options (names follow vLLM's):\n"
        "  --host HOST                       address to listen on (default 127.0.0.1)\n"
        "  --port PORT                       port (default 8000; 0 picks a free port, which\n"
        "                                    the start-up line shows)\n"
        "  --version                         print inferrail's version and commit, and exit\n"
        "  --served-model-name NAME [NAME..] model names clients may request; repeatable\n"
        "                                    (default inferrail/sim-8b)\n"
        "  --block-size N                    tokens per KV block (default 16)\n"
        "  --num-gpu-blocks-override N       KV cache capacity in blocks (default 4096)\n"
        "  --num-cpu-blocks N                a CPU tier of N blocks behind the GPU cache, as\n"
        "                                    vLLM's OffloadingConnector "
        "(kv_connector_extra_config\n"
        "                                    num_cpu_blocks): blocks the GPU evicts are copied\n"
        "                                    there (an LRU); a prefix found there is loaded back\n"
        "                                    instead of computed, reported as cached tokens and\n"
        "                                    in vllm:external_prefix_cache_*; KV events carry\n"
        "                                    medium \"CPU\"; per data-parallel rank (default 0:\n"
        "                                    no CPU tier)\n"
        "  --cpu-transfer-token-us US        time to load one token from the CPU tier, us\n"
        "                                    (default 5; the gateway's\n"
        "                                    routing.cost_model.cpu_transfer_token_us)\n"
        "  --max-num-seqs N                  running sequence cap (default 256)\n"
        "  --max-model-len N                 context length in tokens (default 32768)\n"
        "  --enable-prompt-tokens-details    report usage.prompt_tokens_details.cached_tokens\n"
        "  --prefill-token-us A              prefill cost per uncached token, us (default 100)\n"
        "  --prefill-pair-ns B               prefill cost per token pair, ns (default 3.3)\n"
        "  --prefill-fixed-ms D              fixed cost per prefill, ms (default 5)\n"
        "                                    prefill(u, c) = A*u + B*u*(c + u/2) + D\n"
        "  --decode-token-ms T               time per output token at batch 1 (default 20)\n"
        "  --decode-batch-us S               added per extra running sequence (default 100)\n"
        "  --zero-latency                    answer as fast as possible (overhead benchmarks)\n"
        "  --engine vllm|sglang              which engine's metric names to serve (default vllm)\n"
        "  --max-body-bytes SIZE             request body limit, e.g. 32MiB (default 32MiB)\n"
        "  --max-write-queue SIZE            response bytes a slow client may leave queued on\n"
        "                                    its connection (h2c: per stream, twice that per\n"
        "                                    connection) before its request is dropped\n"
        "                                    (default 16MiB)\n"
        "  --enable-faults                   allow fault injection (POST/DELETE /admin/fault and\n"
        "                                    the x-inferrail-fault request header); off by "
        "default\n"
        "  --kv-events-config JSON           publish KV events as vLLM does, e.g.\n"
        "                                    '{\"enable_kv_cache_events\": true, \"publisher\":\n"
        "                                    \"zmq\", \"endpoint\": \"tcp://*:5557\",\n"
        "                                    \"replay_endpoint\": \"tcp://*:5558\"}' (also\n"
        "                                    \"topic\", \"buffer_steps\": batches kept for "
        "replay)\n"
        "  --kv-events-encoding array|map    vLLM's older (array) or newer (map) encoding\n"
        "                                    (default map)\n"
        "  --kv-events-hash int|bytes        engine block hashes as 64-bit integers or 32 bytes\n"
        "                                    (default bytes)\n"
        "  --data-parallel-size N            engine ranks behind the port, as vLLM's (default 1,\n"
        "                                    at most 64): each has its own queues, prefix cache,\n"
        "                                    metrics (engine=\"r\") and KV event stream (the\n"
        "                                    endpoints' ports plus r); a request's\n"
        "                                    X-data-parallel-rank header picks its rank, else\n"
        "                                    the least waiting*4 + running does (vLLM's\n"
        "                                    internal balancer); /reset_prefix_cache resets all\n"
        "  --log-level LEVEL                 debug, info, warn, error (default info)\n"
        "  --help                            this text\n"
        "\n"
        "Faults (with --enable-faults): close | hang | delay=MS | status=CODE | refuse=MS |\n"
        "  drop-events=N (the next N KV event batches skip the PUB socket, replay keeps them) |\n"
        "  none\n"
        "  curl -X POST localhost:8000/admin/fault -d '{\"fault\":\"status=503\",\"count\":2}'\n"
        "  curl -H 'x-inferrail-fault: hang' localhost:8000/v1/completions ...\n");
}

static int start_server(app *a);

static void on_server_closed(void *ud) {
    (void)ud;
}

/* An IPv6 address in a URL or host:port is written in brackets. */
#define V6_OPEN(h)  (strchr((h), ':') ? "[" : "")
#define V6_CLOSE(h) (strchr((h), ':') ? "]" : "")

static void on_refuse_over(uv_timer_t *t) {
    app *a = t->data;
    if (!a->srv && !a->stopping) {
        if (start_server(a) == 0)
            IR_INFO("sim", "listening again on %s%s%s:%u", V6_OPEN(a->cfg.host), a->cfg.host,
                    V6_CLOSE(a->cfg.host), a->cfg.port);
    }
}

static void refuse_hook(void *ud, uint64_t for_ms, bool on) {
    app *a = ud;
    if (on) {
        if (a->srv) {
            IR_INFO("sim", "fault: refusing connections for %llu ms", (unsigned long long)for_ms);
            irn_server_close(a->srv, on_server_closed, NULL);
            a->srv = NULL;
        }
        uv_timer_start(&a->refuse_timer, on_refuse_over, for_ms, 0);
    } else {
        uv_timer_stop(&a->refuse_timer);
        on_refuse_over(&a->refuse_timer);
    }
}

static void on_request(void *ud, irn_request *req, irn_resp *resp) {
    app *a = ud;
    sim_api_handle(a->api, req, resp);
}

static int start_server(app *a) {
    irn_server_cfg sc;
    irn_server_cfg_init(&sc);
    sc.host = a->cfg.host;
    sc.port = a->cfg.port;
    sc.reuseport = false; /* one process per port: a second one fails "address already in use" */
    sc.h2c = true;        /* lets the gateway's upstream.http2 be tested against it */
    sc.backlog = 4096;    /* bursts of thousands of connects; the kernel caps it at somaxconn */
    sc.max_body_bytes = a->cfg.max_body_bytes;
    sc.max_write_queue = a->cfg.max_write_queue;
    sc.on_request = on_request;
    sc.ud = a;
    int rc = irn_server_new(a->loop, &sc, &a->srv);
    if (rc) {
        IR_ERROR("sim", "cannot listen on %s:%u: %s", a->cfg.host, a->cfg.port, irn_strerror(rc));
        a->srv = NULL;
    }
    return rc;
}

static void on_closed_handle(uv_handle_t *h) {
    (void)h;
}

/* Every rank's publisher and engine, rank 0 last (the others' series live in its
 * registry). */
static void free_ranks(app *a) {
    for (uint32_t r = a->cfg.data_parallel_size; r-- > 0;) {
        if (a->eng[r]) sim_engine_set_publisher(a->eng[r], NULL);
        sim_kvpub_free(a->pub[r]);
        a->pub[r] = NULL;
        sim_engine_free(a->eng[r]);
        a->eng[r] = NULL;
    }
}

static void on_signal(uv_signal_t *s, int signum) {
    app *a = s->data;
    if (a->stopping) return;
    a->stopping = true;
    IR_INFO("sim", "signal %d: shutting down", signum);
    if (a->srv) {
        irn_server_close(a->srv, on_server_closed, NULL);
        irn_server_close_all(a->srv);
        a->srv = NULL;
    }
    sim_api_free(a->api);
    a->api = NULL;
    free_ranks(a);
    uv_timer_stop(&a->refuse_timer);
    uv_close((uv_handle_t *)&a->refuse_timer, on_closed_handle);
    uv_close((uv_handle_t *)&a->sigint, on_closed_handle);
    uv_close((uv_handle_t *)&a->sigterm, on_closed_handle);
}

static int parse_num(const char *flag, const char *v, double lo, double hi, double *out) {
    char *end;
    double d = strtod(v, &end);
    if (!*v || *end || d < lo || d > hi) {
        fprintf(stderr, "inferrail-sim: %s: expected a number in [%g, %g], got '%s'\n", flag, lo,
                hi, v);
        return -1;
    }
    *out = d;
    return 0;
}

enum {
    OPT_HOST = 1000,
    OPT_PORT,
    OPT_NAME,
    OPT_BLOCK,
    OPT_BLOCKS,
    OPT_CPUBLOCKS,
    OPT_CPUUS,
    OPT_SEQS,
    OPT_LEN,
    OPT_DETAILS,
    OPT_PTU,
    OPT_PPN,
    OPT_PFM,
    OPT_DTM,
    OPT_DBU,
    OPT_ZERO,
    OPT_ENGINE,
    OPT_FAULTS,
    OPT_BODY,
    OPT_WQUEUE,
    OPT_LOG,
    OPT_KVCFG,
    OPT_KVENC,
    OPT_KVHASH,
    OPT_DP,
    OPT_HELP,
    OPT_VERSION,
};

static const struct option opts[] = {
    {"host", required_argument, 0, OPT_HOST},
    {"port", required_argument, 0, OPT_PORT},
    {"served-model-name", required_argument, 0, OPT_NAME},
    {"block-size", required_argument, 0, OPT_BLOCK},
    {"num-gpu-blocks-override", required_argument, 0, OPT_BLOCKS},
    {"num-cpu-blocks", required_argument, 0, OPT_CPUBLOCKS},
    {"cpu-transfer-token-us", required_argument, 0, OPT_CPUUS},
    {"max-num-seqs", required_argument, 0, OPT_SEQS},
    {"max-model-len", required_argument, 0, OPT_LEN},
    {"enable-prompt-tokens-details", no_argument, 0, OPT_DETAILS},
    {"prefill-token-us", required_argument, 0, OPT_PTU},
    {"prefill-pair-ns", required_argument, 0, OPT_PPN},
    {"prefill-fixed-ms", required_argument, 0, OPT_PFM},
    {"decode-token-ms", required_argument, 0, OPT_DTM},
    {"decode-batch-us", required_argument, 0, OPT_DBU},
    {"zero-latency", no_argument, 0, OPT_ZERO},
    {"engine", required_argument, 0, OPT_ENGINE},
    {"enable-faults", no_argument, 0, OPT_FAULTS},
    {"max-body-bytes", required_argument, 0, OPT_BODY},
    {"max-write-queue", required_argument, 0, OPT_WQUEUE},
    {"log-level", required_argument, 0, OPT_LOG},
    {"kv-events-config", required_argument, 0, OPT_KVCFG},
    {"kv-events-encoding", required_argument, 0, OPT_KVENC},
    {"kv-events-hash", required_argument, 0, OPT_KVHASH},
    {"data-parallel-size", required_argument, 0, OPT_DP},
    {"help", no_argument, 0, OPT_HELP},
    {"version", no_argument, 0, OPT_VERSION},
    {0, 0, 0, 0},
};

/* What the command line asks for. */
typedef enum { FLAGS_RUN, FLAGS_HELP, FLAGS_BAD } flags_result;

/* vLLM takes several names after one --served-model-name; accept that and repeats. */
static flags_result take_model_names(sim_cfg *cfg, int argc, char **argv) {
    optind--;
    while (optind < argc && argv[optind][0] != '-') {
        if (cfg->nmodel_names == SIM_MAX_MODEL_NAMES) {
            fprintf(stderr, "inferrail-sim: at most %d served model names\n", SIM_MAX_MODEL_NAMES);
            return FLAGS_BAD;
        }
        cfg->model_names[cfg->nmodel_names++] = argv[optind++];
    }
    return FLAGS_RUN;
}

/* A whole number flag in [lo, hi], stored as a uint32_t. */
static flags_result take_u32(const char *flag, double lo, double hi, uint32_t *out) {
    double d;
    if (parse_num(flag, optarg, lo, hi, &d)) return FLAGS_BAD;
    *out = (uint32_t)d;
    return FLAGS_RUN;
}

static flags_result take_real(const char *flag, double hi, double *out) {
    return parse_num(flag, optarg, 0, hi, out) ? FLAGS_BAD : FLAGS_RUN;
}

static flags_result take_engine(sim_cfg *cfg) {
    if (strcmp(optarg, "vllm") == 0)
        cfg->engine = SIM_ENGINE_VLLM;
    else if (strcmp(optarg, "sglang") == 0)
        cfg->engine = SIM_ENGINE_SGLANG;
    else {
        fprintf(stderr, "inferrail-sim: --engine: expected vllm or sglang\n");
        return FLAGS_BAD;
    }
    return FLAGS_RUN;
}

static flags_result take_body_cap(sim_cfg *cfg) {
    uint64_t v;
    if (ir_parse_size(optarg, &v) || v == 0) {
        fprintf(stderr, "inferrail-sim: --max-body-bytes: expected a size like 32MiB\n");
        return FLAGS_BAD;
    }
    cfg->max_body_bytes = (size_t)v;
    return FLAGS_RUN;
}

static flags_result take_write_queue(sim_cfg *cfg) {
    uint64_t v;
    if (ir_parse_size(optarg, &v) || v == 0) {
        fprintf(stderr, "inferrail-sim: --max-write-queue: expected a size like 16MiB\n");
        return FLAGS_BAD;
    }
    cfg->max_write_queue = (size_t)v;
    return FLAGS_RUN;
}

static flags_result take_log_level(void) {
    ir_log_level lvl;
    if (ir_log_parse_level(optarg, &lvl)) {
        fprintf(stderr, "inferrail-sim: --log-level: unknown level '%s'\n", optarg);
        return FLAGS_BAD;
    }
    ir_log_set_level(lvl);
    return FLAGS_RUN;
}

static flags_result take_host(sim_cfg *cfg) {
    if (strlen(optarg) >= sizeof cfg->host) {
        fprintf(stderr, "inferrail-sim: --host: too long\n");
        return FLAGS_BAD;
    }
    strcpy(cfg->host, optarg);
    return FLAGS_RUN;
}

static flags_result take_choice(const char *flag, const char *a, const char *b, bool *is_b) {
    if (strcmp(optarg, a) != 0 && strcmp(optarg, b) != 0) {
        fprintf(stderr, "inferrail-sim: %s: expected %s or %s\n", flag, a, b);
        return FLAGS_BAD;
    }
    *is_b = strcmp(optarg, b) == 0;
    return FLAGS_RUN;
}

/* Applies one option that getopt_long returned (its argument in optarg). */
static flags_result apply_flag(sim_cfg *cfg, int opt, int argc, char **argv) {
    uint32_t port;
    switch (opt) {
    case OPT_HOST:
        return take_host(cfg);
    case OPT_PORT:
        if (take_u32("--port", 0, 65535, &port) == FLAGS_BAD) return FLAGS_BAD;
        cfg->port = (uint16_t)port;
        return FLAGS_RUN;
    case OPT_NAME:
        return take_model_names(cfg, argc, argv);
    case OPT_BLOCK:
        return take_u32("--block-size", 1, 4096, &cfg->block_size);
    case OPT_BLOCKS:
        return take_u32("--num-gpu-blocks-override", 1, 1e8, &cfg->num_gpu_blocks);
    case OPT_CPUBLOCKS:
        return take_u32("--num-cpu-blocks", 0, 1e8, &cfg->num_cpu_blocks);
    case OPT_CPUUS:
        return take_real("--cpu-transfer-token-us", 1e6, &cfg->cpu_transfer_token_us);
    case OPT_SEQS:
        return take_u32("--max-num-seqs", 1, 1e6, &cfg->max_num_seqs);
    case OPT_LEN:
        return take_u32("--max-model-len", 2, 1e8, &cfg->max_model_len);
    case OPT_DETAILS:
        cfg->prompt_tokens_details = true;
        return FLAGS_RUN;
    case OPT_PTU:
        return take_real("--prefill-token-us", 1e6, &cfg->prefill_token_us);
    case OPT_PPN:
        return take_real("--prefill-pair-ns", 1e6, &cfg->prefill_pair_ns);
    case OPT_PFM:
        return take_real("--prefill-fixed-ms", 1e6, &cfg->prefill_fixed_ms);
    case OPT_DTM:
        return take_real("--decode-token-ms", 1e6, &cfg->decode_token_ms);
    case OPT_DBU:
        return take_real("--decode-batch-us", 1e9, &cfg->decode_batch_us);
    case OPT_ZERO:
        cfg->zero_latency = true;
        return FLAGS_RUN;
    case OPT_ENGINE:
        return take_engine(cfg);
    case OPT_FAULTS:
        cfg->enable_faults = true;
        return FLAGS_RUN;
    case OPT_BODY:
        return take_body_cap(cfg);
    case OPT_WQUEUE:
        return take_write_queue(cfg);
    case OPT_LOG:
        return take_log_level();
    case OPT_KVCFG:
        the_app->kv_json = optarg;
        return FLAGS_RUN;
    case OPT_KVENC:
        return take_choice("--kv-events-encoding", "array", "map", &the_app->kv_map);
    case OPT_KVHASH:
        return take_choice("--kv-events-hash", "int", "bytes", &the_app->kv_bytes);
    case OPT_DP:
        return take_u32("--data-parallel-size", 1, SIM_DP_MAX, &cfg->data_parallel_size);
    case OPT_HELP:
    case 'h':
        usage(stdout);
        return FLAGS_HELP;
    case OPT_VERSION:
        printf("inferrail-sim %s (commit %s)\n", ir_version(), ir_commit());
        return FLAGS_HELP;
    default:
        usage(stderr);
        return FLAGS_BAD;
    }
}

static flags_result parse_flags(sim_cfg *cfg, int argc, char **argv) {
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        flags_result r = apply_flag(cfg, c, argc, argv);
        if (r != FLAGS_RUN) return r;
    }
    if (optind < argc) {
        fprintf(stderr, "inferrail-sim: unexpected argument '%s'\n", argv[optind]);
        return FLAGS_BAD;
    }
    return FLAGS_RUN;
}

/* Fills the defaults that depend on the flags and refuses, as vLLM does at
 * start-up, a max_model_len that the KV cache cannot hold once. */
static int finish_config(sim_cfg *cfg) {
    if (cfg->nmodel_names == 0) cfg->model_names[cfg->nmodel_names++] = "inferrail/sim-8b";
    if (cfg->data_parallel_size > 1 && cfg->engine == SIM_ENGINE_SGLANG) {
        fprintf(stderr, "inferrail-sim: --data-parallel-size above 1 serves vLLM's metric names "
                        "only (--engine vllm)\n");
        return -1;
    }
    uint64_t kv_tokens = (uint64_t)cfg->num_gpu_blocks * cfg->block_size;
    if ((uint64_t)cfg->max_model_len <= kv_tokens) return 0;
    fprintf(stderr,
            "inferrail-sim: --max-model-len %u is larger than the KV cache holds (%u blocks of "
            "%u tokens = %llu tokens); raise --num-gpu-blocks-override or lower "
            "--max-model-len\n",
            cfg->max_model_len, cfg->num_gpu_blocks, cfg->block_size,
            (unsigned long long)kv_tokens);
    return -1;
}

/* No SIGPIPE; as many descriptors as allowed (thousands of concurrent streams). */
static void prepare_process(void) {
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* --kv-events-config: the publisher, bound before the HTTP port (vLLM binds at start-up). */
static int start_publisher(app *a, uint32_t rank) {
    if (!a->kv_json) return 0;
    sim_kvpub_cfg c;
    char err[512] = "";
    if (sim_kvpub_parse(a->kv_json, &c, err, sizeof err) == 0 && c.enabled &&
        sim_kvpub_cfg_rank(&c, rank, err, sizeof err) == 0)
        a->pub[rank] =
            sim_kvpub_new(a->loop, &c, a->cfg.block_size, a->kv_map, a->kv_bytes, err, sizeof err);
    if (err[0]) {
        fprintf(stderr, "inferrail-sim: %s\n", err);
        return -1;
    }
    if (!a->pub[rank]) return 0; /* enable_kv_cache_events false */
    sim_engine_set_publisher(a->eng[rank], a->pub[rank]);
    IR_INFO("sim", "rank %u publishes KV events on %s%s%s (%s encoding, %s hashes)", rank,
            c.endpoint, c.replay_endpoint[0] ? ", replay on " : "", c.replay_endpoint,
            a->kv_map ? "map" : "array", a->kv_bytes ? "bytes" : "int");
    return 0;
}

/* One engine per data-parallel rank (vLLM's engine cores), each with its own
 * publisher on the endpoints' ports plus its rank. */
static int start_ranks(app *a) {
    for (uint32_t r = 0; r < a->cfg.data_parallel_size; r++) {
        sim_cfg c = a->cfg;
        c.dp_rank = r;
        a->eng[r] = sim_engine_new_rank(a->loop, &c, r ? a->eng[0] : NULL);
        if (!a->eng[r]) {
            fprintf(stderr, "inferrail-sim: out of memory\n");
            return -1;
        }
    }
    for (uint32_t r = 0; r < a->cfg.data_parallel_size; r++)
        if (start_publisher(a, r)) return -1;
    return 0;
}

/* The engine, its HTTP API, the server and the signals, on the default loop. */
static int start(app *a) {
    a->loop = uv_default_loop();
    uv_timer_init(a->loop, &a->refuse_timer);
    a->refuse_timer.data = a;
    sim_api_hooks hooks = {.on_refuse = refuse_hook, .ud = a};
    int rc = start_ranks(a);
    if (!rc && !(a->api = sim_api_new_ranks(a->loop, a->eng, a->cfg.data_parallel_size, &hooks)))
        fprintf(stderr, "inferrail-sim: out of memory\n");
    if (rc || !a->api || start_server(a)) {
        /* Free what was started: the loop then has nothing left. */
        sim_api_free(a->api);
        free_ranks(a);
        uv_close((uv_handle_t *)&a->refuse_timer, on_closed_handle);
        uv_run(a->loop, UV_RUN_DEFAULT);
        uv_loop_close(a->loop);
        return -1;
    }
    a->cfg.port = (uint16_t)irn_server_port(a->srv);
    uv_signal_init(a->loop, &a->sigint);
    uv_signal_init(a->loop, &a->sigterm);
    a->sigint.data = a->sigterm.data = a;
    uv_signal_start(&a->sigint, on_signal, SIGINT);
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);
    IR_INFO("sim",
            "inferrail-sim serving %s on http://%s%s%s:%u (engine %s%s, %u data-parallel rank%s)",
            a->cfg.model_names[0], V6_OPEN(a->cfg.host), a->cfg.host, V6_CLOSE(a->cfg.host),
            a->cfg.port, a->cfg.engine == SIM_ENGINE_SGLANG ? "sglang" : "vllm",
            a->cfg.zero_latency ? ", zero latency" : "", a->cfg.data_parallel_size,
            a->cfg.data_parallel_size == 1 ? "" : "s");
    if (a->cfg.num_cpu_blocks)
        IR_INFO("sim", "CPU tier: %u blocks per rank, %g us per token loaded",
                a->cfg.num_cpu_blocks, a->cfg.cpu_transfer_token_us);
    return 0;
}

#if defined(__SANITIZE_THREAD__)
/* libzmq is not built with ThreadSanitizer: its I/O threads hand messages over
 * through its own lock-free pipes, which TSan cannot see, so it reports races
 * inside the library (never in our code, which touches a socket from one thread
 * only). Reports whose stack runs through libzmq are suppressed. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void) {
    return "called_from_lib:libzmq.so.5\nrace:libzmq.so.5\n";
}
#endif

int main(int argc, char **argv) {
    app a;
    memset(&a, 0, sizeof a);
    a.kv_map = a.kv_bytes = true;
    the_app = &a;
    sim_cfg_defaults(&a.cfg);
    flags_result flags = parse_flags(&a.cfg, argc, argv);
    if (flags != FLAGS_RUN) return flags == FLAGS_HELP ? 0 : 2;
    if (finish_config(&a.cfg)) return 2;
    prepare_process();
    if (start(&a)) return 1;
    uv_run(a.loop, UV_RUN_DEFAULT);
    uv_loop_close(a.loop);
    return 0;
}
