/* log.c: leveled, one-line-per-event logging to stderr, directly or through a
 * spool (ir_log_start_async). */
#include "core/ir_core.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Set at start-up, and again by a SIGHUP reload (log.level) while other threads
 * log: atomic, relaxed (a message logged under the old level is fine). */
static _Atomic int g_level = IR_LOG_INFO;
static bool g_json = false;

void ir_log_set_level(ir_log_level lvl) {
    atomic_store_explicit(&g_level, (int)lvl, memory_order_relaxed);
}
ir_log_level ir_log_get_level(void) {
    return (ir_log_level)atomic_load_explicit(&g_level, memory_order_relaxed);
}
void ir_log_set_json(bool on) {
    g_json = on;
}
bool ir_log_is_json(void) {
    return g_json;
}

int ir_log_parse_level(const char *s, ir_log_level *out) {
    static const char *names[] = {"debug", "info", "warn", "error", "off"};
    for (size_t i = 0; i < IR_ARRAY_LEN(names); i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = (ir_log_level)i;
            return 0;
        }
    }
    return -1;
}

static const char *const level_names[] = {"DEBUG", "INFO", "WARN", "ERROR", "OFF"};

static void timestamp(char *when, size_t n) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(when, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

static void append_number(ir_buf *b, double v) {
    if (v == (double)(int64_t)v)
        ir_buf_appendf(b, "%lld", (long long)v);
    else
        ir_buf_appendf(b, "%.3f", v);
}

/* The spool while the log is asynchronous, and how many threads are handing it a line
 * (ir_log_stop_async waits for them before it frees it). Sequentially consistent: a
 * thread that counted itself before the spool was taken away is seen counted. */
static _Atomic(ir_spool *) g_spool;
static _Atomic unsigned g_handing;
static _Atomic uint64_t g_dropped_before; /* by spools already stopped */

/* Event f[0..n) as one line in b (cap 16 KiB), in the format in force. */
static void format_line(ir_buf *b, ir_log_level lvl, const char *component, const char *msg,
                        const ir_log_field *f, size_t n) {
    char when[96];
    timestamp(when, sizeof when);
    ir_buf_init(b, 16384);
    if (g_json) {
        ir_buf_appendf(b, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":", when, level_names[lvl]);
        ir_json_append_string(b, component, strlen(component));
        ir_buf_append_str(b, ",\"msg\":");
        ir_json_append_string(b, msg, strlen(msg));
        for (size_t i = 0; i < n; i++) {
            ir_buf_append_str(b, ",");
            ir_json_append_string(b, f[i].key, strlen(f[i].key));
            ir_buf_append_str(b, ":");
            if (f[i].str)
                ir_json_append_string(b, f[i].str, strlen(f[i].str));
            else
                append_number(b, f[i].num);
        }
        ir_buf_append_str(b, "}\n");
        return;
    }
    ir_buf_appendf(b, "%s %-5s %s: %s", when, level_names[lvl], component, msg);
    for (size_t i = 0; i < n; i++) {
        ir_buf_appendf(b, " %s=", f[i].key);
        if (f[i].str)
            ir_buf_append_str(b, f[i].str);
        else
            append_number(b, f[i].num);
    }
    /* Keep one event on one line whatever the message holds. */
    for (size_t i = 0; i < b->len; i++)
        if (b->data[i] == '\n' || b->data[i] == '\r') b->data[i] = ' ';
    ir_buf_append_str(b, "\n");
}

/* One line, one write: to the spool when there is one, else straight to stderr. */
static void out(const char *data, size_t len) {
    atomic_fetch_add(&g_handing, 1);
    ir_spool *sp = atomic_load(&g_spool);
    if (sp) ir_spool_write(sp, data, len);
    atomic_fetch_sub(&g_handing, 1);
    if (!sp) fwrite(data, 1, len, stderr);
}

static void emit(ir_log_level lvl, const char *component, const char *msg, const ir_log_field *f,
                 size_t n) {
    ir_buf b;
    format_line(&b, lvl, component, msg, f, n);
    if (b.data) out(b.data, b.len);
    ir_buf_free(&b);
}

/* On the spool's thread, once stderr took a write again: how much it lost. */
static bool on_drops(ir_spool *sp, void *arg, uint64_t n) {
    (void)arg;
    if (IR_LOG_WARN < ir_log_get_level()) return true; /* nobody to tell */
    char msg[160];
    snprintf(msg, sizeof msg, "%llu log line(s) dropped: stderr did not take them in time",
             (unsigned long long)n);
    ir_buf b;
    format_line(&b, IR_LOG_WARN, "log", msg, NULL, 0);
    bool told = b.data && ir_spool_write(sp, b.data, b.len) == 0;
    ir_buf_free(&b);
    return told; /* else the queue is full again: said after the next write */
}

int ir_log_start_async(void) {
    if (atomic_load(&g_spool)) return 0;
    ir_spool_cfg c = {.fd = 2, .max_lines = 4096, .max_bytes = 4u << 20, .on_drops = on_drops};
    ir_spool *sp = ir_spool_open(&c);
    if (!sp) return -1;
    atomic_store(&g_spool, sp);
    return 0;
}

void ir_log_stop_async(void) {
    ir_spool *sp = atomic_exchange(&g_spool, NULL);
    if (!sp) return;
    while (atomic_load(&g_handing)) sched_yield();
    uint64_t dropped = 0;
    ir_spool_close(sp, &dropped); /* those it gives up on at the end count too */
    atomic_fetch_add(&g_dropped_before, dropped);
}

uint64_t ir_log_dropped(void) {
    uint64_t written, dropped;
    atomic_fetch_add(&g_handing, 1);
    ir_spool_stats(atomic_load(&g_spool), &written, &dropped);
    atomic_fetch_sub(&g_handing, 1);
    return atomic_load(&g_dropped_before) + dropped;
}

void ir_log_write(ir_log_level lvl, const char *component, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    emit(lvl, component, msg, NULL, 0);
}

void ir_log_fields(ir_log_level lvl, const char *component, const char *msg, const ir_log_field *f,
                   size_t n) {
    if (lvl < ir_log_get_level()) return;
    emit(lvl, component, msg, f, n);
}
