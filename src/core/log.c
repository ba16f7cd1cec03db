/* log.c: leveled, one-line-per-event logging to stderr. */
#include "core/ir_core.h"

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

/* One event, one line, one write. */
static void emit(ir_log_level lvl, const char *component, const char *msg, const ir_log_field *f,
                 size_t n) {
    char when[96];
    timestamp(when, sizeof when);
    ir_buf b;
    ir_buf_init(&b, 16384);
    if (g_json) {
        ir_buf_appendf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":", when,
                       level_names[lvl]);
        ir_json_append_string(&b, component, strlen(component));
        ir_buf_append_str(&b, ",\"msg\":");
        ir_json_append_string(&b, msg, strlen(msg));
        for (size_t i = 0; i < n; i++) {
            ir_buf_append_str(&b, ",");
            ir_json_append_string(&b, f[i].key, strlen(f[i].key));
            ir_buf_append_str(&b, ":");
            if (f[i].str)
                ir_json_append_string(&b, f[i].str, strlen(f[i].str));
            else
                append_number(&b, f[i].num);
        }
        ir_buf_append_str(&b, "}\n");
    } else {
        ir_buf_appendf(&b, "%s %-5s %s: %s", when, level_names[lvl], component, msg);
        for (size_t i = 0; i < n; i++) {
            ir_buf_appendf(&b, " %s=", f[i].key);
            if (f[i].str)
                ir_buf_append_str(&b, f[i].str);
            else
                append_number(&b, f[i].num);
        }
        /* Keep one event on one line whatever the message holds. */
        for (size_t i = 0; i < b.len; i++)
            if (b.data[i] == '\n' || b.data[i] == '\r') b.data[i] = ' ';
        ir_buf_append_str(&b, "\n");
    }
    if (b.data) fwrite(b.data, 1, b.len, stderr);
    ir_buf_free(&b);
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
