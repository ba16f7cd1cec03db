/* gw_main.c: the gateway's command line, start-up and shutdown. */
#include "gateway/gateway.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "Usage: inferrail-gateway --config FILE [--check]\n"
               "       inferrail-gateway tokenize --tokenizer SPEC [--jsonl] < INPUT\n"
               "\n"
               "An OpenAI-compatible router in front of vLLM or SGLang engines.\n"
               "\n"
               "Options:\n"
               "  --config FILE   the YAML configuration (see deploy/inferrail.example.yaml)\n"
               "  --check         validate the configuration, report every problem, and exit\n"
               "  --print-defaults  print every option with its default, as YAML, and exit\n"
               "  --help          this text\n"
               "\n"
               "Exit status: 0 on success, 2 for a bad command line or configuration, 1 when the\n"
               "gateway cannot start (for example, a port in use).\n");
}

typedef struct sigctx {
    gw_app *app;
    gw_control *ctl;
    uv_signal_t sigint, sigterm;
} sigctx;

static void on_signal(uv_signal_t *s, int signum) {
    sigctx *sc = s->data;
    gw_app *app = sc->app;
    if (atomic_exchange(&app->stopping, 1)) return;
    IR_INFO("gateway", "signal %d: draining for up to %llu ms", signum,
            (unsigned long long)(app->cfg.server.shutdown_timeout / 1000000));
    for (size_t i = 0; i < app->nworkers; i++)
        if (app->workers[i]) gw_worker_stop(app->workers[i], app->cfg.server.shutdown_timeout);
    gw_control_stop(sc->ctl);
    uv_close((uv_handle_t *)&sc->sigint, NULL);
    uv_close((uv_handle_t *)&sc->sigterm, NULL);
}

static void print_errors(const char *path, ir_cfg_errors *errs) {
    fprintf(stderr, "inferrail-gateway: %s: %zu problem%s:\n", path, errs->n,
            errs->n == 1 ? "" : "s");
    for (size_t i = 0; i < errs->n; i++) fprintf(stderr, "  %s\n", errs->msgs[i]);
}

int gw_main(int argc, char **argv) {
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'},
        {"check", no_argument, 0, 'k'},
        {"print-defaults", no_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *path = NULL;
    bool check = false;
    int o;
    while ((o = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (o) {
        case 'c':
            path = optarg;
            break;
        case 'k':
            check = true;
            break;
        case 'p': {
            ir_buf b;
            ir_buf_init(&b, 0);
            ir_cfg_write_defaults(&b, &gw_config_schema);
            fwrite(b.data, 1, b.len, stdout);
            ir_buf_free(&b);
            return 0;
        }
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc || !path) {
        if (optind < argc)
            fprintf(stderr, "inferrail-gateway: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    gw_app *app = calloc(1, sizeof *app);
    if (!app) return 1;
    ir_cfg_errors errs = {0};
    app->cfg_owner = gw_config_load(path, &app->cfg, &errs);
    if (!app->cfg_owner) {
        print_errors(path, &errs);
        ir_cfg_errors_free(&errs);
        free(app);
        return 2;
    }
    ir_cfg_errors_free(&errs);
    gw_config *cfg = &app->cfg;
    ir_log_level lvl = IR_LOG_INFO;
    ir_log_parse_level(cfg->logging.level, &lvl);
    ir_log_set_level(lvl);
    ir_log_set_json(strcmp(cfg->logging.format, "json") == 0);
    char err[512];
    if (gw_fleet_init(&app->fleet, cfg, err, sizeof err)) {
        fprintf(stderr, "inferrail-gateway: %s: %s\n", path, err);
        ir_cfg_free(app->cfg_owner);
        free(app);
        return 2;
    }
    if (check) {
        printf("%s: OK: %zu model%s, %zu replica%s\n", path, app->fleet.nmodels,
               app->fleet.nmodels == 1 ? "" : "s", app->fleet.nreplicas,
               app->fleet.nreplicas == 1 ? "" : "s");
        gw_fleet_free(&app->fleet);
        ir_cfg_free(app->cfg_owner);
        free(app);
        return 0;
    }
    ir_hostport_parse(cfg->server.listen, app->listen_host, sizeof app->listen_host,
                      &app->listen_port);
    ir_hostport_parse(cfg->server.admin_listen, app->admin_host, sizeof app->admin_host,
                      &app->admin_port);
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    app->cards = gw_cards_new(&app->fleet);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    app->nworkers =
        cfg->server.workers > 0 ? (size_t)cfg->server.workers : (size_t)(ncpu > 0 ? ncpu : 1);
    app->workers = calloc(app->nworkers, sizeof *app->workers);
    int rc = 0;
    for (size_t i = 0; i < app->nworkers && rc == 0; i++) {
        app->workers[i] = gw_worker_new(app, (uint32_t)i);
        rc = app->workers[i] ? gw_worker_start(app->workers[i]) : -1;
        /* Port 0: the first worker picks one, the others share it. */
        if (rc == 0 && i == 0) app->listen_port = (uint16_t)gw_worker_port(app->workers[0]);
    }
    uv_loop_t *loop = uv_default_loop();
    gw_control *ctl = rc == 0 ? gw_control_new(app, loop) : NULL;
    if (rc == 0 && (!ctl || (rc = gw_control_start(ctl)) != 0))
        fprintf(stderr, "inferrail-gateway: cannot listen on %s (admin): %s\n",
                cfg->server.admin_listen, irn_strerror(rc));
    else if (rc)
        fprintf(stderr, "inferrail-gateway: cannot listen on %s: %s\n", cfg->server.listen,
                irn_strerror(rc));
    sigctx sc = {.app = app, .ctl = ctl};
    if (rc == 0) {
        uv_signal_init(loop, &sc.sigint);
        uv_signal_init(loop, &sc.sigterm);
        sc.sigint.data = sc.sigterm.data = &sc;
        uv_signal_start(&sc.sigint, on_signal, SIGINT);
        uv_signal_start(&sc.sigterm, on_signal, SIGTERM);
        IR_INFO("gateway",
                "listening on %s:%u with %zu workers, admin on %s:%u; %zu models, %zu replicas",
                app->listen_host, app->listen_port, app->nworkers, app->admin_host, app->admin_port,
                app->fleet.nmodels, app->fleet.nreplicas);
        uv_run(loop, UV_RUN_DEFAULT);
    } else {
        for (size_t i = 0; i < app->nworkers; i++)
            if (app->workers[i]) gw_worker_stop(app->workers[i], 0);
        if (ctl) gw_control_stop(ctl);
        uv_run(loop, UV_RUN_DEFAULT);
    }
    for (size_t i = 0; i < app->nworkers; i++) {
        if (!app->workers[i]) continue;
        gw_worker_join(app->workers[i]);
        gw_worker_free(app->workers[i]);
    }
    uv_loop_close(loop);
    gw_control_free(ctl);
    free(app->workers);
    gw_cards_free(app->cards);
    gw_fleet_free(&app->fleet);
    ir_cfg_free(app->cfg_owner);
    free(app);
    return rc ? 1 : 0;
}
