/* The decision log: every queued line lands on disk, whole and in order;
 * sampling follows the id and the rate; a disk that stops taking bytes (a
 * FIFO nobody reads) makes records drop and be counted while producers never
 * wait; bad paths are errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "obs/ir_obs.h"

static void tmp_path(char *out, size_t n, const char *name) {
    snprintf(out, n, "/tmp/ir-dlog-%d-%s", (int)getpid(), name);
    unlink(out);
}

static void lines_land_in_order(void **st) {
    char path[128], err[256];
    tmp_path(path, sizeof path, "order.jsonl");
    iro_dlog_cfg c = {.path = path, .sample_rate = 1};
    iro_dlog *d = iro_dlog_open(&c, err, sizeof err);
    assert_non_null(d);
    char line[64];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(line, sizeof line, "{\"n\":%d}", i);
        assert_int_equal(iro_dlog_write(d, line, (size_t)n), 0);
    }
    iro_dlog_close(d); /* drains first */
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char got[64];
    int i = 0;
    while (fgets(got, sizeof got, f)) {
        snprintf(line, sizeof line, "{\"n\":%d}\n", i++);
        assert_string_equal(got, line);
    }
    fclose(f);
    assert_int_equal(i, 1000);
    /* Reopened: appended to, not truncated; a line over max_line is dropped. */
    c.max_line = 8;
    d = iro_dlog_open(&c, err, sizeof err);
    assert_int_equal(iro_dlog_write(d, "{}", 2), 0);
    assert_int_equal(iro_dlog_write(d, "{\"long\":1}", 10), -1);
    iro_dlog_close(d);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    /* 10 lines of 8 bytes, 90 of 9, 900 of 10, then "{}\n". */
    assert_int_equal(sb.st_size, 10 * 8 + 90 * 9 + 900 * 10 + 3);
    unlink(path);
}

static void sampling_by_id(void **st) {
    char path[128], err[256];
    tmp_path(path, sizeof path, "sample.jsonl");
    iro_dlog_cfg c = {.path = path, .sample_rate = 0.25};
    iro_dlog *d = iro_dlog_open(&c, err, sizeof err);
    assert_non_null(d);
    int yes = 0;
    char id[32];
    for (int i = 0; i < 20000; i++) {
        int n = snprintf(id, sizeof id, "req-%d", i);
        bool s = iro_dlog_sampled(d, id, (size_t)n);
        assert_true(s == iro_dlog_sampled(d, id, (size_t)n)); /* the same id, the same answer */
        yes += s;
    }
    assert_in_range(yes, 4500, 5500); /* 25% of 20,000 */
    iro_dlog_close(d);
    c.sample_rate = 0;
    d = iro_dlog_open(&c, err, sizeof err);
    assert_false(iro_dlog_sampled(d, "x", 1));
    iro_dlog_close(d);
    c.sample_rate = 1;
    d = iro_dlog_open(&c, err, sizeof err);
    assert_true(iro_dlog_sampled(d, "x", 1));
    iro_dlog_close(d);
    assert_false(iro_dlog_sampled(NULL, "x", 1));
    assert_int_equal(iro_dlog_write(NULL, "x", 1), -1);
    iro_dlog_close(NULL);
    unlink(path);
}

static void *drain(void *arg) {
    char b[65536];
    while (read(*(int *)arg, b, sizeof b) > 0) {}
    return NULL;
}

static void full_disk_drops_never_waits(void **st) {
    char path[128], err[256];
    tmp_path(path, sizeof path, "fifo");
    assert_int_equal(mkfifo(path, 0600), 0);
    /* A reader end held open but never read: the writer blocks once the pipe is full. */
    int rd = open(path, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    iro_dlog_cfg c = {.path = path, .sample_rate = 1, .queue = 64};
    iro_dlog *d = iro_dlog_open(&c, err, sizeof err);
    assert_non_null(d);
    static char big[4096];
    memset(big, 'x', sizeof big);
    int dropped = 0;
    for (int i = 0; i < 2000; i++) dropped += iro_dlog_write(d, big, sizeof big) != 0;
    assert_true(dropped > 0); /* 8 MB into a 64 KiB pipe and a 64-line queue */
    iro_dlog_stats s;
    iro_dlog_stats_get(d, &s);
    assert_int_equal(s.dropped, (uint64_t)dropped);
    /* Let the disk catch up so that close can drain: a reader until EOF (the
     * log's close is the last writer's). */
    fcntl(rd, F_SETFL, 0);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, drain, &rd), 0);
    iro_dlog_close(d);
    pthread_join(t, NULL);
    close(rd);
    unlink(path);
}

static void bad_path(void **st) {
    char err[256] = "";
    iro_dlog_cfg c = {.path = "/nonexistent-dir/x/decisions.jsonl", .sample_rate = 1};
    assert_null(iro_dlog_open(&c, err, sizeof err));
    assert_non_null(strstr(err, "cannot open '/nonexistent-dir/x/decisions.jsonl'"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lines_land_in_order),
        cmocka_unit_test(sampling_by_id),
        cmocka_unit_test(full_disk_drops_never_waits),
        cmocka_unit_test(bad_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
