/* gw_main.c: the gateway's command line, start-up and shutdown. */
#include "gateway/gateway.h"

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void usage(FILE *f) {
    fprintf(f, "Usage: inferrail-gateway --config FILE [--check]\n"
               "       inferrail-gateway --print-defaults | --version | --help\n"
               "       inferrail-gateway tokenize --tokenizer SPEC [--jsonl] < INPUT\n"
               "\n"
               "An OpenAI-compatible router in front of vLLM or SGLang engines.\n"
               "\n"
               "Options:\n"
               "  --config FILE   the YAML configuration (see deploy/inferrail.example.yaml)\n"
               "  --check         validate the configuration, report every problem, and exit\n"
               "  --print-defaults  print every option with its default, as YAML, and exit\n"
               "  --version       print the version and the git commit, and exit\n"
               "  --help          this text\n"
               "\n"
               "The admin port (server.admin_listen, 127.0.0.1:9090 by default) serves / (a live\n"
               "console), /metrics (Prometheus), /admin/state (JSON), /health, /ready and\n"
               "POST /admin/explain (why a request would go where it goes; forwards nothing).\n"
               "\n"
               "Signals: the first SIGTERM or SIGINT drains (no new requests, /ready answers\n"
               "503, running ones get server.shutdown_timeout); a second one cuts what is left\n"
               "and exits at once. SIGHUP rereads the configuration: replicas, models (added,\n"
               "removed, aliases, policies, tokenizers), discovery, routing, retry, health (but\n"
               "interval), upstream timeouts and logging (but format) change at once; other\n"
               "keys keep their running values until a restart; a file with problems (a\n"
               "tokenizer that cannot load included) is refused and the running configuration\n"
               "kept.\n"
               "\n"
               "Exit status: 0 on success, 2 for a bad command line or configuration, 1 when the\n"
               "gateway cannot start (for example, a port in use).\n");
}

/* Signals: the first SIGINT or SIGTERM drains (gw_app.stopping, /ready
 * answers 503); a second one cuts what is left at once. The handles stay open
 * until the workers have ended, so that a second signal is never met by the
 * default action (death by signal, no log line). A reaper thread joins the
 * workers and wakes the main loop through `done`. */
typedef struct sigctx {
    gw_app *app;
    gw_control *ctl;
    uv_signal_t sigint, sigterm, sighup;
    uv_async_t done;
    uv_timer_t force, delay; /* delay: server.shutdown_delay, then the drain */
    uv_thread_t reaper;
    bool reaper_started, force_started;
    int nsignals;
} sigctx;

static uint64_t in_flight(const gw_app *app) {
    uint64_t n = 0;
    for (size_t i = 0; i < app->fleet.nreplicas; i++)
        n += atomic_load(&app->fleet.replicas[i].in_flight);
    return n;
}

static void reaper_main(void *arg) {
    sigctx *sc = arg;
    for (size_t i = 0; i < sc->app->nworkers; i++)
        if (sc->app->workers[i]) gw_worker_join(sc->app->workers[i]);
    uv_async_send(&sc->done);
}

static void on_workers_done(uv_async_t *a) {
    sigctx *sc = a->data;
    uv_close((uv_handle_t *)&sc->sigint, NULL);
    uv_close((uv_handle_t *)&sc->sigterm, NULL);
    uv_close((uv_handle_t *)&sc->sighup, NULL);
    uv_close((uv_handle_t *)&sc->done, NULL);
    uv_close((uv_handle_t *)&sc->delay, NULL);
    gw_control_stop(sc->ctl); /* the admin port answered /ready (503) until now */
    if (sc->force_started) uv_timer_stop(&sc->force);
    uv_close((uv_handle_t *)&sc->force, NULL);
}

/* The backstop of a second signal: the workers should end at once; if one
 * does not within a moment, the process leaves without waiting for it. */
static void on_force(uv_timer_t *t) {
    (void)t;
    IR_ERROR("gateway", "workers still running %d ms after the second signal: exiting now",
             GW_FORCE_EXIT_MS);
    ir_log_stop_async(); /* what is queued, this line too (at most 2 s on a stuck stderr) */
    fflush(stdout);
    fflush(stderr);
    _exit(1);
}

static void start_drain(struct sigctx *sc, const char *why);
static void on_delay_over(uv_timer_t *t);

static void on_signal(uv_signal_t *s, int signum) {
    sigctx *sc = s->data;
    gw_app *app = sc->app;
    const char *name = signum == SIGTERM ? "SIGTERM" : "SIGINT";
    if (++sc->nsignals > 1) {
        if (sc->nsignals > 2) return;
        if (uv_is_active((uv_handle_t *)&sc->delay)) { /* in shutdown_delay: drain, cut */
            uv_timer_stop(&sc->delay);
            start_drain(sc, name);
        }
        IR_WARN("gateway",
                "second %s: exiting at once, cutting %llu requests in flight to replicas", name,
                (unsigned long long)in_flight(app));
        for (size_t i = 0; i < app->nworkers; i++)
            if (app->workers[i]) gw_worker_stop(app->workers[i], 0);
        sc->force_started = uv_timer_start(&sc->force, on_force, GW_FORCE_EXIT_MS, 0) == 0;
        return;
    }
    atomic_store(&app->stopping, 1); /* /ready answers 503 from now on */
    uint64_t delay = app->cfg.server.shutdown_delay_ns / 1000000;
    if (delay) {
        IR_INFO("gateway", "%s: /ready answers 503; serving for %llu ms more, then draining", name,
                (unsigned long long)delay);
        if (uv_timer_start(&sc->delay, on_delay_over, delay, 0) == 0) return;
    }
    start_drain(sc, name);
}

/* server.shutdown_delay is over: the drain starts. */
static void on_delay_over(uv_timer_t *t) {
    start_drain(t->data, "shutdown_delay over");
}

static void start_drain(sigctx *sc, const char *why) {
    gw_app *app = sc->app;
    atomic_store(&app->draining, 1);
    IR_INFO("gateway",
            "%s: draining for up to %llu ms: %llu requests in flight to replicas, and every "
            "open client connection",
            why, (unsigned long long)(app->cfg.server.shutdown_timeout_ns / 1000000),
            (unsigned long long)in_flight(app));
    for (size_t i = 0; i < app->nworkers; i++)
        if (app->workers[i]) gw_worker_stop(app->workers[i], app->cfg.server.shutdown_timeout_ns);
    gw_control_drain(sc->ctl);
    gw_discovery_stop(app->disc);
    if (uv_thread_create(&sc->reaper, reaper_main, sc) == 0)
        sc->reaper_started = true;
    else
        on_workers_done(&sc->done); /* the main thread joins them after uv_run */
}

/* SIGHUP: reread the config file (reload.c); ignored while draining. */
static void on_hup(uv_signal_t *s, int signum) {
    (void)signum;
    sigctx *sc = s->data;
    if (atomic_load(&sc->app->stopping)) return;
    IR_INFO("gateway", "SIGHUP: reloading %s", sc->app->cfg_path);
    gw_reload(sc->app, sc->app->cfg_path);
}

static void print_errors(const char *path, ir_cfg_errors *errs) {
    fprintf(stderr, "inferrail-gateway: %s: %zu problem%s:\n", path, errs->n,
            errs->n == 1 ? "" : "s");
    for (size_t i = 0; i < errs->n; i++) fprintf(stderr, "  %s\n", errs->msgs[i]);
}

/* Discovery starts before the workers: its groups are resolved before the first
 * request (a group whose first lookup fails starts empty, and is retried every
 * refresh). */
#define GW_FIRST_LOOKUP_NS (10ull * 1000000000ull)
static int start_discovery(gw_app *app) {
    if (app->cfg.discovery.dns.n == 0) return 0;
    char err[512];
    app->disc = gw_discovery_new(app, &app->cfg.discovery, uv_default_loop(), err, sizeof err);
    if (!app->disc) {
        fprintf(stderr, "inferrail-gateway: %s\n", err);
        return UV_EINVAL;
    }
    gw_discovery_start(app->disc);
    uint64_t until = ir_now_ns() + GW_FIRST_LOOKUP_NS;
    while (!gw_discovery_settled(app->disc) && ir_now_ns() < until)
        uv_run(uv_default_loop(), UV_RUN_ONCE);
    return 0;
}

/* Binds the client port in every worker and the admin port, or explains in
 * one line why not. The client port is probed first without SO_REUSEPORT, so
 * that a second process cannot join the workers' reuseport group. */
static int start_all(gw_app *app) {
    const gw_config *cfg = &app->cfg;
    int rc = irn_listen_probe(app->listen_host, app->listen_port);
    if (rc) {
        fprintf(stderr, "inferrail-gateway: cannot listen on %s: %s\n", cfg->server.listen,
                irn_strerror(rc));
        return rc;
    }
    rc = start_discovery(app);
    if (rc) return rc;
    app->cards = gw_cards_new(&app->fleet);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    app->nworkers =
        cfg->server.workers > 0 ? (size_t)cfg->server.workers : (size_t)(ncpu > 0 ? ncpu : 1);
    app->workers = calloc(app->nworkers, sizeof *app->workers);
    app->started = calloc(app->nworkers, sizeof *app->started);
    if (!app->cards || !app->workers || !app->started) {
        fprintf(stderr, "inferrail-gateway: out of memory\n");
        return UV_ENOMEM;
    }
    if (gw_trace_open(app)) return UV_EINVAL; /* before the workers, who read app->tracer */
    if (gw_decisions_open(app)) {             /* logged with its reason */
        fprintf(stderr, "inferrail-gateway: cannot open observability.decision_log.path\n");
        return UV_EINVAL;
    }
    for (size_t i = 0; i < app->nworkers && rc == 0; i++) {
        app->workers[i] = gw_worker_new(app, (uint32_t)i);
        rc = app->workers[i] ? gw_worker_start(app->workers[i]) : UV_ENOMEM;
        app->started[i] = rc == 0;
        /* Port 0: the first worker picks one, the others share it. */
        if (rc == 0 && i == 0) app->listen_port = (uint16_t)gw_worker_port(app->workers[0]);
    }
    if (rc) {
        fprintf(stderr, "inferrail-gateway: cannot listen on %s: %s\n", cfg->server.listen,
                irn_strerror(rc));
        return rc;
    }
    app->ctl = gw_control_new(app, uv_default_loop());
    rc = app->ctl ? gw_control_start(app->ctl) : UV_ENOMEM;
    if (rc)
        fprintf(stderr, "inferrail-gateway: cannot listen on %s (admin): %s\n",
                cfg->server.admin_listen, irn_strerror(rc));
    return rc;
}

/* After a failed start: ends the workers that did start, and the control loop. */
static void stop_failed_start(gw_app *app, int rc) {
    if (rc == 0) return;
    for (size_t i = 0; i < app->nworkers; i++)
        if (app->workers && app->started && app->started[i]) gw_worker_stop(app->workers[i], 0);
    if (app->ctl) gw_control_stop(app->ctl);
    gw_discovery_stop(app->disc);
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);
}

static void run_until_drained(gw_app *app) {
    uv_loop_t *loop = uv_default_loop();
    sigctx sc = {.app = app, .ctl = app->ctl};
    uv_signal_init(loop, &sc.sigint);
    uv_signal_init(loop, &sc.sigterm);
    uv_signal_init(loop, &sc.sighup);
    uv_async_init(loop, &sc.done, on_workers_done);
    uv_timer_init(loop, &sc.force);
    uv_timer_init(loop, &sc.delay);
    sc.sigint.data = sc.sigterm.data = sc.sighup.data = sc.done.data = sc.force.data = &sc;
    sc.delay.data = &sc;
    uv_signal_start(&sc.sigint, on_signal, SIGINT);
    uv_signal_start(&sc.sigterm, on_signal, SIGTERM);
    uv_signal_start(&sc.sighup, on_hup, SIGHUP);
    IR_INFO("gateway",
            "inferrail-gateway %s (%s) listening on %s:%u with %zu workers, admin on %s:%u; %zu "
            "models, %zu replicas",
            ir_version(), ir_commit(), app->listen_host, app->listen_port, app->nworkers,
            app->admin_host, app->admin_port, gw_fleet_models(&app->fleet)->n,
            app->fleet.nreplicas);
    uv_run(loop, UV_RUN_DEFAULT);
    if (sc.reaper_started) uv_thread_join(&sc.reaper);
    const gw_stats *st = &app->stats;
    IR_INFO("gateway",
            "drained, exiting: %llu requests received, %llu 2xx, %llu 4xx, %llu 5xx, %llu client "
            "disconnects, %llu cut at shutdown_timeout",
            (unsigned long long)atomic_load(&st->requests),
            (unsigned long long)atomic_load(&st->responses_2xx),
            (unsigned long long)atomic_load(&st->responses_4xx),
            (unsigned long long)atomic_load(&st->responses_5xx),
            (unsigned long long)atomic_load(&st->client_disconnects),
            (unsigned long long)atomic_load(&st->cut_at_shutdown));
}

/* What the command line asks for. */
typedef struct gw_args {
    const char *path;
    bool check;
} gw_args;

/* Parses the options. Returns -1 to go on, or the exit status of an option
 * that answers by itself (--help, --version, --print-defaults) or of a bad
 * command line. */
static int parse_args(int argc, char **argv, gw_args *a) {
    static const struct option opts[] = {
        {"config", required_argument, 0, 'c'},   {"check", no_argument, 0, 'k'},
        {"print-defaults", no_argument, 0, 'p'}, {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, 'V'},        {0, 0, 0, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (o) {
        case 'c':
            a->path = optarg;
            break;
        case 'k':
            a->check = true;
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
        case 'V':
            printf("inferrail-gateway %s (commit %s)\n", ir_version(), ir_commit());
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc || !a->path) {
        if (optind < argc)
            fprintf(stderr, "inferrail-gateway: unexpected argument '%s'\n", argv[optind]);
        else
            fprintf(stderr, "inferrail-gateway: %s needs --config FILE (the YAML configuration)\n",
                    a->check ? "--check" : "starting");
        usage(stderr);
        return 2;
    }
    return -1;
}

/* Loads the configuration, sets up logging and builds the fleet. NULL (and
 * every problem on stderr) when the configuration is bad. */
/* check: --check, which builds the fleet only to validate it: its runtime news (a KV
 * event subscriber started, say) is not logged, its warnings and errors are. */
static gw_app *load_app(const char *path, bool check) {
    gw_app *app = calloc(1, sizeof *app);
    if (!app) return NULL;
    ir_cfg_errors errs = {0};
    app->cfg_owner = gw_config_load(path, &app->cfg, &errs);
    if (!app->cfg_owner) print_errors(path, &errs);
    ir_cfg_errors_free(&errs);
    if (!app->cfg_owner) {
        free(app);
        return NULL;
    }
    app->cfg_path = path;
    ir_log_level lvl = IR_LOG_INFO;
    ir_log_parse_level(app->cfg.logging.level, &lvl);
    ir_log_set_level(check && lvl < IR_LOG_WARN ? IR_LOG_WARN : lvl);
    ir_log_set_json(strcmp(app->cfg.logging.format, "json") == 0);
    char err[512];
    /* libuv sizes its thread pool, which tokenizes large bodies, on first use */
    char nthreads[32];
    snprintf(nthreads, sizeof nthreads, "%lld", (long long)app->cfg.tokenizer.workers);
    setenv("UV_THREADPOOL_SIZE", nthreads, 1);
    if (gw_fleet_init(&app->fleet, &app->cfg, err, sizeof err)) {
        /* as print_errors writes them: tokenizers are read once the rest is right */
        fprintf(stderr, "inferrail-gateway: %s: 1 problem:\n  %s\n", path, err);
        ir_cfg_free(app->cfg_owner);
        free(app);
        return NULL;
    }
    ir_hostport_parse(app->cfg.server.listen, app->listen_host, sizeof app->listen_host,
                      &app->listen_port);
    ir_hostport_parse(app->cfg.server.admin_listen, app->admin_host, sizeof app->admin_host,
                      &app->admin_port);
    return app;
}

/* What --check can tell of the machine beyond the file: whether the decision log could
 * be opened for writing (as this user: a service manager's ExecStartPre runs it as the
 * service's). 0, or 2 with the problem printed as the file's problems are. */
static int check_files(const char *path, const gw_app *app) {
    const gw_decision_log_cfg *dl = &app->cfg.observability.decision_log;
    if (dl->sample_rate <= 0 || !dl->path || !*dl->path) return 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", dl->path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
    bool exists = access(dl->path, F_OK) == 0;
    if (exists ? access(dl->path, W_OK) == 0 : access(dir, W_OK | X_OK) == 0) return 0;
    fprintf(stderr,
            "inferrail-gateway: %s: 1 problem:\n  observability.decision_log.path: cannot write "
            "'%s': %s\n",
            path, exists ? dl->path : dir, strerror(errno));
    return 2;
}

static void print_check(const char *path, const gw_app *app) {
    size_t nm = gw_fleet_models(&app->fleet)->n;
    printf("%s: OK: %zu model%s, %zu replica%s\n", path, nm, nm == 1 ? "" : "s",
           app->fleet.nreplicas, app->fleet.nreplicas == 1 ? "" : "s");
}

/* Process-wide settings before any thread starts. Buffers of 256 KiB and more
 * are mapped on their own (glibc would otherwise raise that threshold as big
 * buffers are freed), so a body that grows by doubling is moved with mremap
 * instead of being copied beside its old buffer: an 8 MiB chunked body peaked
 * at 16.6 MB with the default and at 12.6-13.3 MB with this
 * (bench/results/gateway/memory.md). */
static void process_setup(void) {
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* Joins the workers and frees everything the app holds, then the app. */
static void free_app(gw_app *app) {
    for (size_t i = 0; i < app->nworkers; i++) {
        if (!app->workers[i]) continue;
        gw_worker_join(app->workers[i]);
        gw_worker_free(app->workers[i]);
    }
    uv_loop_close(uv_default_loop());
    gw_kvsub_stop(&app->fleet); /* its last parity checks may still write to the decision log */
    gw_control_free(app->ctl);
    gw_trace_close(app);     /* when the control loop never started; else done already */
    gw_decisions_close(app); /* likewise */
    gw_discovery_free(app->disc);
    free(app->workers);
    free(app->started);
    gw_cards_free(app->cards);
    gw_metrics_free(app);
    gw_fleet_free(&app->fleet);
    gw_reload_free(app);
    ir_cfg_free(app->cfg_owner);
    free(app);
}

int gw_main(int argc, char **argv) {
    gw_args args = {0};
    int rc = parse_args(argc, argv, &args);
    if (rc >= 0) return rc;
    gw_app *app = load_app(args.path, args.check);
    if (!app) return 2;
    if (args.check) {
        rc = check_files(args.path, app);
        if (rc == 0) print_check(args.path, app);
        free_app(app);
        return rc;
    }
    process_setup();
    rc = gw_metrics_init(app) ? UV_ENOMEM : 0;
    if (rc)
        fprintf(stderr, "inferrail-gateway: out of memory\n");
    else
        rc = start_all(app);
    /* From here on no thread waits on stderr (ir_log_start_async); a failure to start
     * the spool leaves the log direct, as before. */
    if (rc == 0 && ir_log_start_async())
        IR_WARN("log", "out of memory for the log's spool: logging straight to stderr");
    if (rc == 0) run_until_drained(app);
    stop_failed_start(app, rc);
    free_app(app);
    ir_log_stop_async();
    return rc ? 1 : 0;
}
