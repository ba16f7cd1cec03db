/* The spool: lines land whole and in order; a descriptor that stops taking bytes (a
 * pipe nobody reads) never makes a producer wait: lines past the caps are dropped and
 * counted, and on_drops hears the count once the pipe drains; close gives up on a
 * write blocked past its wait; on_fail hears the first failed write, once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/ir_core.h"

/* Reads everything the pipe holds now (its write end may still be open). */
static size_t drain(int fd, char *out, size_t cap) {
    size_t at = 0;
    for (;;) {
        char tmp[4096];
        ssize_t k = read(fd, tmp, sizeof tmp);
        if (k <= 0) return at;
        size_t take = IR_MIN((size_t)k, cap - at);
        memcpy(out + at, tmp, take);
        at += take;
    }
}

/* A pipe whose buffer is already full: the spool's writer blocks on its first write. */
static void full_pipe(int p[2]) {
    assert_int_equal(pipe(p), 0);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    char junk[4096];
    memset(junk, 'j', sizeof junk);
    while (write(p[1], junk, sizeof junk) > 0) {}
    while (write(p[1], junk, 1) > 0) {}
    fcntl(p[1], F_SETFL, 0); /* the spool's writes block */
}

static void lines_land_whole_and_in_order(void **st) {
    (void)st;
    int p[2];
    assert_int_equal(pipe(p), 0);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    ir_spool_cfg c = {.fd = p[1], .newline = true};
    ir_spool *s = ir_spool_open(&c);
    assert_non_null(s);
    char line[32];
    for (int i = 0; i < 500; i++) {
        int n = snprintf(line, sizeof line, "line %d", i);
        assert_int_equal(ir_spool_write(s, line, (size_t)n), 0);
    }
    assert_true(ir_spool_close(s, NULL));
    static char got[65536];
    size_t n = drain(p[0], got, sizeof got - 1);
    got[n] = '\0';
    char *at = got;
    for (int i = 0; i < 500; i++) {
        int k = snprintf(line, sizeof line, "line %d\n", i);
        assert_memory_equal(at, line, (size_t)k);
        at += k;
    }
    assert_ptr_equal(at, got + n);
    close(p[0]);
    close(p[1]);
}

typedef struct heard {
    _Atomic uint64_t drops;
    _Atomic int drop_calls, fail_calls, fail_err;
} heard;

static bool on_drops(ir_spool *s, void *arg, uint64_t n) {
    heard *h = arg;
    if (ir_spool_write(s, "NOTE", 4)) return false; /* hear them again later */
    atomic_fetch_add(&h->drops, n);
    atomic_fetch_add(&h->drop_calls, 1);
    return true;
}

static void on_fail(ir_spool *s, void *arg, int err) {
    (void)s;
    heard *h = arg;
    atomic_fetch_add(&h->fail_calls, 1);
    atomic_store(&h->fail_err, err);
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static void a_stuck_pipe_drops_and_counts_then_says_so(void **st) {
    (void)st;
    int p[2];
    full_pipe(p);
    heard h = {0};
    ir_spool_cfg c = {.fd = p[1],
                      .newline = true,
                      .max_lines = 8,
                      .max_bytes = 100,
                      .max_line = 40,
                      .on_drops = on_drops,
                      .arg = &h};
    ir_spool *s = ir_spool_open(&c);
    assert_non_null(s);
    /* The writer takes the first line and blocks on the full pipe; later lines queue
     * up to the caps (8 lines or 100 bytes), and the rest are dropped, never waited on. */
    assert_int_equal(ir_spool_write(s, "first", 5), 0);
    sleep_ms(50);
    int queued = 0, refused = 0;
    for (int i = 0; i < 100; i++) {
        if (ir_spool_write(s, "0123456789", 10) == 0)
            queued++;
        else
            refused++;
    }
    assert_int_equal(queued, 8);
    assert_int_equal(refused, 92);
    /* too long: dropped whatever the queue holds */
    char big[41];
    memset(big, 'b', sizeof big);
    assert_int_equal(ir_spool_write(s, big, sizeof big), -1);
    uint64_t written, dropped;
    ir_spool_stats(s, &written, &dropped);
    assert_int_equal(written, 0);
    assert_int_equal(dropped, 93);
    assert_int_equal(atomic_load(&h.drop_calls), 0);
    /* The reader catches up: everything queued lands, then on_drops hears the count.
     * (Its own line may find the queue full, and is then told of in turn.) */
    static char got[1 << 17];
    size_t n = 0;
    for (int i = 0; i < 400; i++) {
        n += drain(p[0], got + n, sizeof got - 1 - n);
        got[n] = '\0';
        ir_spool_stats(s, &written, &dropped);
        if (strstr(got, "NOTE") && atomic_load(&h.drops) == dropped) break;
        sleep_ms(5);
    }
    assert_non_null(strstr(got, "first\n0123456789\n"));
    assert_non_null(strstr(got, "NOTE\n"));
    assert_true(dropped >= 93);
    assert_int_equal(atomic_load(&h.drops), dropped);
    assert_true(atomic_load(&h.drop_calls) >= 1);
    assert_true(ir_spool_close(s, NULL));
    close(p[0]);
    close(p[1]);
}

static void close_gives_up_on_a_blocked_write(void **st) {
    (void)st;
    int p[2];
    full_pipe(p);
    ir_spool_cfg c = {.fd = p[1], .newline = true, .close_wait_s = 1};
    ir_spool *s = ir_spool_open(&c);
    assert_non_null(s);
    for (int i = 0; i < 10; i++) assert_int_equal(ir_spool_write(s, "stuck", 5), 0);
    uint64_t t0 = ir_now_ns(), dropped = 0;
    /* cancelled in its write; nothing leaks (ASan); every line counted dropped, those
     * held in the blocked write and those still queued */
    assert_false(ir_spool_close(s, &dropped));
    assert_int_equal(dropped, 10);
    uint64_t ms = (ir_now_ns() - t0) / 1000000;
    assert_true(ms >= 900 && ms < 5000);
    close(p[0]);
    close(p[1]);
}

static void a_failing_descriptor_is_said_once(void **st) {
    (void)st;
    int fd = open("/dev/full", O_WRONLY);
    assert_true(fd >= 0);
    heard h = {0};
    ir_spool_cfg c = {.fd = fd, .on_fail = on_fail, .on_drops = on_drops, .arg = &h};
    ir_spool *s = ir_spool_open(&c);
    assert_non_null(s);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ir_spool_write(s, "x\n", 2), 0);
        sleep_ms(5);
    }
    assert_true(ir_spool_close(s, NULL)); /* every write returned: nothing was left blocked */
    assert_int_equal(atomic_load(&h.fail_calls), 1);
    assert_int_equal(atomic_load(&h.fail_err), ENOSPC);
    assert_int_equal(atomic_load(&h.drop_calls), 0); /* no write went through */
    close(fd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lines_land_whole_and_in_order),
        cmocka_unit_test(a_stuck_pipe_drops_and_counts_then_says_so),
        cmocka_unit_test(close_gives_up_on_a_blocked_write),
        cmocka_unit_test(a_failing_descriptor_is_said_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
