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
    sim_engine *eng;
    sim_api *api;
    irn_server *srv;
    uv_timer_t refuse_timer;
    uv_signal_t sigint, sigterm;
    bool stopping;
} app;

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
        "  --served-model-name NAME [NAME..] model names clients may request; repeatable\n"
        "                                    (default inferrail/sim-8b)\n"
        "  --block-size N                    tokens per KV block (default 16)\n"
        "  --num-gpu-blocks-override N       KV cache capacity in blocks (default 4096)\n"
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
        "  --enable-faults                   allow fault injection (POST/DELETE /admin/fault and\n"
        "                                    the x-inferrail-fault request header); off by "
        "default\n"
        "  --log-level LEVEL                 debug, info, warn, error (default info)\n"
        "  --version                         print inferrail's version and commit, and exit\n"
        "  --help                            this text\n"
        "\n"
        "Faults (with --enable-faults): close | hang | delay=MS | status=CODE | refuse=MS | none\n"
        "  curl -X POST localhost:8000/admin/fault -d '{\"fault\":\"status=503\",\"count\":2}'\n"
        "  curl -H 'x-inferrail-fault: hang' localhost:8000/v1/completions ...\n");
}

static int start_server(app *a);

static void on_server_closed(void *ud) {
    (void)ud;
}

static void on_refuse_over(uv_timer_t *t) {
    app *a = t->data;
    if (!a->srv && !a->stopping) {
        if (start_server(a) == 0)
            IR_INFO("sim", "listening again on %s:%u", a->cfg.host, a->cfg.port);
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
    sc.max_write_queue = 64u << 20;
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
    sim_engine_free(a->eng);
    a->eng = NULL;
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
    OPT_LOG,
    OPT_HELP,
    OPT_VERSION,
};

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"host", required_argument, 0, OPT_HOST},
        {"port", required_argument, 0, OPT_PORT},
        {"served-model-name", required_argument, 0, OPT_NAME},
        {"block-size", required_argument, 0, OPT_BLOCK},
        {"num-gpu-blocks-override", required_argument, 0, OPT_BLOCKS},
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
        {"log-level", required_argument, 0, OPT_LOG},
        {"help", no_argument, 0, OPT_HELP},
        {"version", no_argument, 0, OPT_VERSION},
        {0, 0, 0, 0},
    };
    app a;
    memset(&a, 0, sizeof a);
    sim_cfg_defaults(&a.cfg);
    int c;
    double d;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_HOST:
            if (strlen(optarg) >= sizeof a.cfg.host) {
                fprintf(stderr, "inferrail-sim: --host: too long\n");
                return 2;
            }
            strcpy(a.cfg.host, optarg);
            break;
        case OPT_PORT:
            if (parse_num("--port", optarg, 0, 65535, &d)) return 2;
            a.cfg.port = (uint16_t)d;
            break;
        case OPT_NAME:
            /* vLLM takes several names after one flag; accept that and repeats. */
            optind--;
            while (optind < argc && argv[optind][0] != '-') {
                if (a.cfg.nmodel_names == SIM_MAX_MODEL_NAMES) {
                    fprintf(stderr, "inferrail-sim: at most %d served model names\n",
                            SIM_MAX_MODEL_NAMES);
                    return 2;
                }
                a.cfg.model_names[a.cfg.nmodel_names++] = argv[optind++];
            }
            break;
        case OPT_BLOCK:
            if (parse_num("--block-size", optarg, 1, 4096, &d)) return 2;
            a.cfg.block_size = (uint32_t)d;
            break;
        case OPT_BLOCKS:
            if (parse_num("--num-gpu-blocks-override", optarg, 1, 1e8, &d)) return 2;
            a.cfg.num_gpu_blocks = (uint32_t)d;
            break;
        case OPT_SEQS:
            if (parse_num("--max-num-seqs", optarg, 1, 1e6, &d)) return 2;
            a.cfg.max_num_seqs = (uint32_t)d;
            break;
        case OPT_LEN:
            if (parse_num("--max-model-len", optarg, 2, 1e8, &d)) return 2;
            a.cfg.max_model_len = (uint32_t)d;
            break;
        case OPT_DETAILS:
            a.cfg.prompt_tokens_details = true;
            break;
        case OPT_PTU:
            if (parse_num("--prefill-token-us", optarg, 0, 1e6, &a.cfg.prefill_token_us)) return 2;
            break;
        case OPT_PPN:
            if (parse_num("--prefill-pair-ns", optarg, 0, 1e6, &a.cfg.prefill_pair_ns)) return 2;
            break;
        case OPT_PFM:
            if (parse_num("--prefill-fixed-ms", optarg, 0, 1e6, &a.cfg.prefill_fixed_ms)) return 2;
            break;
        case OPT_DTM:
            if (parse_num("--decode-token-ms", optarg, 0, 1e6, &a.cfg.decode_token_ms)) return 2;
            break;
        case OPT_DBU:
            if (parse_num("--decode-batch-us", optarg, 0, 1e9, &a.cfg.decode_batch_us)) return 2;
            break;
        case OPT_ZERO:
            a.cfg.zero_latency = true;
            break;
        case OPT_ENGINE:
            if (strcmp(optarg, "vllm") == 0)
                a.cfg.engine = SIM_ENGINE_VLLM;
            else if (strcmp(optarg, "sglang") == 0)
                a.cfg.engine = SIM_ENGINE_SGLANG;
            else {
                fprintf(stderr, "inferrail-sim: --engine: expected vllm or sglang\n");
                return 2;
            }
            break;
        case OPT_FAULTS:
            a.cfg.enable_faults = true;
            break;
        case OPT_BODY: {
            uint64_t v;
            if (ir_parse_size(optarg, &v) || v == 0) {
                fprintf(stderr, "inferrail-sim: --max-body-bytes: expected a size like 32MiB\n");
                return 2;
            }
            a.cfg.max_body_bytes = (size_t)v;
            break;
        }
        case OPT_LOG: {
            ir_log_level lvl;
            if (ir_log_parse_level(optarg, &lvl)) {
                fprintf(stderr, "inferrail-sim: --log-level: unknown level '%s'\n", optarg);
                return 2;
            }
            ir_log_set_level(lvl);
            break;
        }
        case OPT_HELP:
        case 'h':
            usage(stdout);
            return 0;
        case OPT_VERSION:
            printf("inferrail-sim %s (commit %s)\n", ir_version(), ir_commit());
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "inferrail-sim: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (a.cfg.nmodel_names == 0) a.cfg.model_names[a.cfg.nmodel_names++] = "inferrail/sim-8b";
    /* As vLLM refuses at start-up: one sequence of max_model_len tokens must fit. */
    if ((uint64_t)a.cfg.max_model_len > (uint64_t)a.cfg.num_gpu_blocks * a.cfg.block_size) {
        fprintf(stderr,
                "inferrail-sim: --max-model-len %u is larger than the KV cache holds (%u blocks of "
                "%u tokens = %llu tokens); raise --num-gpu-blocks-override or lower "
                "--max-model-len\n",
                a.cfg.max_model_len, a.cfg.num_gpu_blocks, a.cfg.block_size,
                (unsigned long long)a.cfg.num_gpu_blocks * a.cfg.block_size);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Thousands of concurrent streams need as many descriptors. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    a.loop = uv_default_loop();
    a.eng = sim_engine_new(a.loop, &a.cfg);
    sim_api_hooks hooks = {.on_refuse = refuse_hook, .ud = &a};
    a.api = sim_api_new(a.loop, a.eng, &hooks);
    if (!a.eng || !a.api) {
        fprintf(stderr, "inferrail-sim: out of memory\n");
        return 1;
    }
    uv_timer_init(a.loop, &a.refuse_timer);
    a.refuse_timer.data = &a;
    if (start_server(&a)) {
        /* Free what was started: the loop then has nothing left. */
        sim_api_free(a.api);
        sim_engine_free(a.eng);
        uv_close((uv_handle_t *)&a.refuse_timer, on_closed_handle);
        uv_run(a.loop, UV_RUN_DEFAULT);
        uv_loop_close(a.loop);
        return 1;
    }
    a.cfg.port = (uint16_t)irn_server_port(a.srv);
    uv_signal_init(a.loop, &a.sigint);
    uv_signal_init(a.loop, &a.sigterm);
    a.sigint.data = a.sigterm.data = &a;
    uv_signal_start(&a.sigint, on_signal, SIGINT);
    uv_signal_start(&a.sigterm, on_signal, SIGTERM);
    IR_INFO("sim", "inferrail-sim serving %s on http://%s:%u (engine %s%s)", a.cfg.model_names[0],
            a.cfg.host, a.cfg.port, a.cfg.engine == SIM_ENGINE_SGLANG ? "sglang" : "vllm",
            a.cfg.zero_latency ? ", zero latency" : "");
    uv_run(a.loop, UV_RUN_DEFAULT);
    uv_loop_close(a.loop);
    return 0;
}
