/* log.c: leveled, one-line-per-event logging to stderr. */
#include "core/ir_core.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Set once at start-up, read-only afterwards. */
static ir_log_level g_level = IR_LOG_INFO;
static bool g_json = false;

void ir_log_set_level(ir_log_level lvl) {
    g_level = lvl;
}
ir_log_level ir_log_get_level(void) {
    return g_level;
}
void ir_log_set_json(bool on) {
    g_json = on;
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

void ir_log_write(ir_log_level lvl, const char *component, const char *fmt, ...) {
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR", "OFF"};
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Keep one event on one line whatever the message holds. */
    for (char *p = msg; *p; p++) {
        if (*p == '\n' || *p == '\r') *p = ' ';
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[96];
    snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    if (g_json) {
        ir_buf b;
        ir_buf_init(&b, 8192);
        ir_buf_appendf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":", when, names[lvl]);
        ir_json_append_string(&b, component, strlen(component));
        ir_buf_append_str(&b, ",\"msg\":");
        ir_json_append_string(&b, msg, strlen(msg));
        ir_buf_append_str(&b, "}\n");
        fwrite(b.data, 1, b.len, stderr);
        ir_buf_free(&b);
    } else {
        fprintf(stderr, "%s %-5s %s: %s\n", when, names[lvl], component, msg);
    }
}
