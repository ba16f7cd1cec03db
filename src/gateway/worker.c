/* worker.c: a worker thread: its loop, its listener on the client port, its
 * upstream pool, and its stop. The request path itself starts at pipeline.c. */
#include "gateway/request.h"

#include <stdlib.h>

#include "obs/ir_obs.h"

static void on_grace(uv_timer_t *t) {
    gw_worker *w = t->data;
    w->cutting = true; /* what ends now is the gateway's doing, not its clients' */
    if (w->srv) irn_server_close_all(w->srv);
}

/* Runs just before the loop polls: the thread's CPU time since the last poll is one
 * turn of the loop, every callback of it together. A turn of more than 100 us is a
 * client (or a task) that kept every other connection of this worker waiting. */
static void on_turn(uv_prepare_t *p) {
    gw_worker *w = p->data;
    uint64_t now = ir_thread_cpu_ns();
    if (w->turn_start) iro_observe(w->turn_cpu, (double)(now - w->turn_start) / 1e9);
    w->turn_start = now;
}

static void on_server_closed(void *ud) {
    gw_worker *w = ud;
    w->srv = NULL;
    uv_prepare_stop(&w->turn);
    uv_close((uv_handle_t *)&w->turn, NULL);
    uv_timer_stop(&w->grace);
    uv_close((uv_handle_t *)&w->grace, NULL);
    irn_pool_close(w->pool, NULL, NULL);
    w->pool = NULL;
    uv_close((uv_handle_t *)&w->wake, NULL);
}

static void on_wake(uv_async_t *a) {
    gw_worker *w = a->data;
    if (atomic_exchange(&w->recheck, 0) && !w->stopping) gw_stream_move_hung(w);
    if (!atomic_load(&w->stop_requested)) return;
    if (w->stopping) { /* a second SIGTERM (grace 0): cut every request now */
        if (atomic_load(&w->stop_grace_ns) == 0) on_grace(&w->grace);
        return;
    }
    w->stopping = true;
    uint64_t grace = atomic_load(&w->stop_grace_ns);
    uv_timer_start(&w->grace, on_grace, (grace + 999999) / 1000000, 0);
    irn_server_close(w->srv, on_server_closed, w);
}

static void worker_main(void *arg) {
    gw_worker *w = arg;
    if (w->app->cfg.server.busy_poll) {
        /* Never block in epoll: a sleeping thread costs a wakeup per event, which a VM makes
         * expensive. Returns once the loop has nothing left, as UV_RUN_DEFAULT would. */
        while (uv_run(&w->loop, UV_RUN_NOWAIT)) continue;
        return;
    }
    uv_run(&w->loop, UV_RUN_DEFAULT);
}

gw_worker *gw_worker_new(gw_app *app, uint32_t id) {
    gw_worker *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->app = app;
    w->id = id;
    uint64_t seed = app->cfg.routing.seed ? (uint64_t)app->cfg.routing.seed : ir_now_ns();
    ir_rng_seed(&w->rng, seed * 0x9E3779B97F4A7C15ull + id);
    ir_freelist_init(&w->greqs, 256);
    w->cache = irn_cache_new();
    if (!w->cache || uv_loop_init(&w->loop)) {
        irn_cache_free(w->cache);
        free(w);
        return NULL;
    }
    return w;
}

int gw_worker_start(gw_worker *w) {
    gw_app *app = w->app;
    const gw_config *c = &app->cfg;
    irn_server_cfg sc;
    irn_server_cfg_init(&sc);
    sc.host = app->listen_host;
    sc.port = app->listen_port;
    sc.reuseport = true;
    sc.backlog = 4096;
    sc.max_header_bytes = c->server.max_header_bytes;
    sc.max_headers = (size_t)c->server.max_headers;
    sc.max_body_bytes = c->server.max_body_bytes;
    sc.header_timeout_ns = c->server.header_read_timeout_ns;
    sc.body_timeout_ns = c->server.request_timeout_ns;
    sc.max_write_queue = c->server.max_write_queue;
    /* An h2c stream that cannot be written (its client opened no window) is reset
     * after upstream.idle_timeout, as a stalled engine stream would be. */
    sc.h2_stall_timeout_ns = c->upstream.idle_timeout_ns;
    sc.write_high_water = c->server.max_write_queue / 2;
    sc.write_low_water = c->server.max_write_queue / 8;
    sc.max_connections = (size_t)c->server.max_connections;
    sc.h2c = true; /* clients may speak h2c: prior knowledge or Upgrade */
    sc.on_headers = gw_on_headers;
    sc.on_request = gw_on_request;
    sc.on_error = gw_on_error;
    sc.ud = w;
    sc.cache = w->cache;
    sc.counters = &app->stats.clients;
    int rc = irn_server_new(&w->loop, &sc, &w->srv);
    if (rc) return rc;
    w->port = irn_server_port(w->srv);
    irn_pool_cfg pc;
    irn_pool_cfg_init(&pc);
    pc.max_idle_per_host = (size_t)c->upstream.max_idle_per_replica;
    pc.idle_timeout_ns = c->upstream.keepalive_timeout_ns;
    pc.http2 = c->upstream.http2;
    pc.cache = w->cache;
    w->pool = irn_pool_new(&w->loop, &pc);
    uv_async_init(&w->loop, &w->wake, on_wake);
    w->wake.data = w;
    uv_timer_init(&w->loop, &w->grace);
    w->grace.data = w;
    w->turn_cpu = gw_metrics_loop_turn(app, w->id);
    uv_prepare_init(&w->loop, &w->turn);
    w->turn.data = w;
    uv_prepare_start(&w->turn, on_turn);
    uv_unref((uv_handle_t *)&w->turn); /* it never keeps the loop running */
    rc = uv_thread_create(&w->thread, worker_main, w);
    if (rc == 0) w->started = true;
    return rc;
}

int gw_worker_port(const gw_worker *w) {
    return w->port;
}

void gw_worker_stop(gw_worker *w, uint64_t grace_ns) {
    atomic_store(&w->stop_grace_ns, grace_ns);
    atomic_store(&w->stop_requested, 1);
    uv_async_send(&w->wake);
}

/* Runs on the main thread, which is also the only one that sets stop_requested: a
 * worker that has not been asked to stop still has its wake handle open. */
void gw_worker_recheck(gw_worker *w) {
    if (!w->started || atomic_load(&w->stop_requested)) return;
    atomic_store(&w->recheck, 1);
    uv_async_send(&w->wake);
}

void gw_app_replica_down(gw_app *app) {
    if (atomic_load(&app->draining)) return;
    for (size_t i = 0; i < app->nworkers; i++)
        if (app->workers[i]) gw_worker_recheck(app->workers[i]);
}

void gw_worker_join(gw_worker *w) {
    if (w->started) uv_thread_join(&w->thread);
    w->started = false;
}

void gw_worker_free(gw_worker *w) {
    if (!w) return;
    uv_loop_close(&w->loop);
    irn_cache_free(w->cache); /* the loop has ended: nothing refers to it */
    gw_req *r;
    while ((r = ir_freelist_pop(&w->greqs))) free(r);
    free(w);
}
