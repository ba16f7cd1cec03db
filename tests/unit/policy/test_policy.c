/* Routing policies: spread, seeds, invariants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/ir_policy.h"

static void make(irp_candidate *c, size_t n, ir_rng *r) {
    for (size_t i = 0; i < n; i++) {
        c[i] = (irp_candidate){.replica = (uint32_t)(i * 3 + 1),
                               .in_flight = (uint32_t)ir_rng_below(r, 5),
                               .pending = (uint32_t)ir_rng_below(r, 3)};
    }
}

static void registry(void **state) {
    assert_non_null(irp_find("round_robin"));
    assert_non_null(irp_find("random"));
    assert_non_null(irp_find("least_request"));
    assert_non_null(irp_find("p2c"));
    assert_non_null(irp_find("prefix_hash"));
    assert_non_null(irp_find("kv_aware"));
    assert_non_null(irp_find("cost_model"));
    assert_non_null(irp_find("sglang_cache_aware"));
    assert_null(irp_find("no_such_policy"));
    assert_null(irp_policy_new("no_such_policy", NULL));
    size_t n = 0;
    for (const irp_vtable *const *v = irp_all(); *v; v++) {
        assert_non_null(strstr(irp_names(), (*v)->name));
        n++;
    }
    assert_int_equal(n, 8);
}

/* A dry run (POST /admin/explain) leaves every policy's state as it was: two
 * instances making the same choices agree, although one of them also answers
 * dry runs in between (with a generator of their own). round_robin took a turn
 * on every explain before. */
static void dry_runs_change_nothing(void **state) {
    for (const irp_vtable *const *vt = irp_all(); *vt; vt++) {
        irp_policy *a = irp_policy_new((*vt)->name, NULL), *b = irp_policy_new((*vt)->name, NULL);
        irp_candidate c[3];
        ir_rng ra, rb, rd, rc;
        ir_rng_seed(&ra, 5), ir_rng_seed(&rb, 5), ir_rng_seed(&rd, 9), ir_rng_seed(&rc, 3);
        make(c, 3, &rc);
        for (int i = 0; i < 200; i++) {
            irp_request qa = {.rng = &ra, .prompt_tokens = 100},
                        qb = {.rng = &rb, .prompt_tokens = 100};
            irp_request qd = {.rng = &rd, .prompt_tokens = 100, .dry_run = true};
            assert_true(irp_choose(b, &qd, c, 3) < 3);
            size_t ka = irp_choose(a, &qa, c, 3), kb = irp_choose(b, &qb, c, 3);
            assert_int_equal(ka, kb);
            irp_policy_assigned(a, c[ka].replica, &qa), irp_policy_assigned(b, c[kb].replica, &qb);
            irp_policy_released(a, c[ka].replica, &qa), irp_policy_released(b, c[kb].replica, &qb);
        }
        irp_policy_free(a), irp_policy_free(b);
    }
    (void)state;
}

static void round_robin_rotates(void **state) {
    irp_policy *p = irp_policy_new("round_robin", NULL);
    irp_candidate c[3];
    ir_rng r;
    ir_rng_seed(&r, 1);
    make(c, 3, &r);
    irp_request q = {.rng = &r};
    int counts[3] = {0};
    size_t prev = irp_choose(p, &q, c, 3);
    for (int i = 0; i < 300; i++) {
        size_t k = irp_choose(p, &q, c, 3);
        assert_int_equal(k, (prev + 1) % 3);
        prev = k;
        counts[k]++;
    }
    assert_int_equal(counts[0], 100);
    assert_int_equal(counts[1], 100);
    irp_policy_free(p);
}

/* Uniform choices under a fixed seed, and the same seed replays the same choices. */
static void random_uniform_and_seeded(void **state) {
    irp_policy *p = irp_policy_new("random", NULL);
    irp_candidate c[4];
    ir_rng r, r2;
    ir_rng_seed(&r, 42);
    make(c, 4, &r);
    ir_rng_seed(&r, 42);
    ir_rng_seed(&r2, 42);
    irp_request q = {.rng = &r}, q2 = {.rng = &r2};
    int counts[4] = {0};
    for (int i = 0; i < 40000; i++) {
        size_t k = irp_choose(p, &q, c, 4);
        assert_int_equal(k, irp_choose(p, &q2, c, 4));
        counts[k]++;
    }
    for (int i = 0; i < 4; i++) assert_in_range(counts[i], 9500, 10500);
    irp_policy_free(p);
}

static void least_request_picks_a_minimum(void **state) {
    irp_policy *p = irp_policy_new("least_request", NULL);
    ir_rng r;
    ir_rng_seed(&r, 3);
    irp_request q = {.rng = &r};
    for (int iter = 0; iter < 5000; iter++) {
        irp_candidate c[8];
        size_t n = 1 + ir_rng_below(&r, 8);
        make(c, n, &r);
        size_t k = irp_choose(p, &q, c, n);
        for (size_t i = 0; i < n; i++) assert_true(c[k].in_flight <= c[i].in_flight);
    }
    /* ties are broken evenly */
    irp_candidate t[3] = {{.replica = 0, .in_flight = 1},
                          {.replica = 1, .in_flight = 1},
                          {.replica = 2, .in_flight = 5}};
    int counts[3] = {0};
    for (int i = 0; i < 30000; i++) counts[irp_choose(p, &q, t, 3)]++;
    assert_int_equal(counts[2], 0);
    assert_in_range(counts[0], 14000, 16000);
    irp_policy_free(p);
}

static void p2c_never_picks_a_unique_maximum(void **state) {
    irp_policy *p = irp_policy_new("p2c", NULL);
    ir_rng r;
    ir_rng_seed(&r, 9);
    irp_request q = {.rng = &r};
    for (int iter = 0; iter < 5000; iter++) {
        irp_candidate c[8];
        size_t n = 2 + ir_rng_below(&r, 7);
        make(c, n, &r);
        size_t k = irp_choose(p, &q, c, n);
        uint32_t mx = 0;
        int nmax = 0;
        for (size_t i = 0; i < n; i++) mx = c[i].in_flight > mx ? c[i].in_flight : mx;
        for (size_t i = 0; i < n; i++) nmax += c[i].in_flight == mx;
        if (nmax == 1) assert_true(c[k].in_flight < mx);
    }
    irp_policy_free(p);
}

/* How many of 2000 random calls of vt->choose (called directly, not through
 * irp_choose, which would hide a bad answer) fall outside [0, n). */
static int out_of_range_choices(const irp_vtable *vt) {
    ir_rng r;
    ir_rng_seed(&r, 11);
    irp_request q = {.rng = &r};
    irp_config cfg;
    irp_config_defaults(&cfg);
    void *st = vt->create ? vt->create(&cfg) : NULL;
    int bad = 0;
    for (int iter = 0; iter < 2000; iter++) {
        irp_candidate c[16];
        size_t n = 1 + ir_rng_below(&r, 16);
        make(c, n, &r);
        bad += vt->choose(st, &q, c, n) >= n;
    }
    if (vt->destroy) vt->destroy(st);
    return bad;
}

/* A broken policy: one past the last candidate. */
static size_t choose_n(void *state, const irp_request *req, const irp_candidate *c, size_t n) {
    return n;
}
static const irp_vtable bad_policy = {.name = "bad", .choose = choose_n};

/* Whatever a policy does, it returns one of the offered candidates; the check
 * catches a policy that does not. */
static void choices_stay_in_range(void **state) {
    for (const irp_vtable *const *v = irp_all(); *v; v++)
        assert_int_equal(out_of_range_choices(*v), 0);
    assert_int_equal(out_of_range_choices(&bad_policy), 2000);
}

/* irp_choose does not hide a bad answer: debug builds abort, release builds
 * count it and still return a candidate. */
static void out_of_range_is_not_clamped_silently(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 5);
    irp_request q = {.rng = &r};
    irp_candidate c[3] = {{.replica = 0}, {.replica = 1}, {.replica = 2}};
    irp_policy *p = irp_policy_new_from(&bad_policy, NULL);
    assert_non_null(p);
    assert_int_equal(irp_policy_out_of_range(p), 0);
    assert_int_equal(irp_choose(p, &q, c, 1), 0); /* one candidate: the policy is not asked */
#ifdef NDEBUG
    ir_log_set_level(IR_LOG_OFF);
    assert_true(irp_choose(p, &q, c, 3) < 3);
    assert_true(irp_choose(p, &q, c, 2) < 2);
    assert_int_equal(irp_policy_out_of_range(p), 2);
#else
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        (void)!freopen("/dev/null", "w", stderr);
        irp_choose(p, &q, c, 3);
        _exit(0); /* reached only when the assert did not fire */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
#endif
    irp_policy_free(p);
}

static int hook_calls[6];
static uint32_t hook_replica;
static void on_assigned(void *st, uint32_t rep, const irp_request *req) {
    hook_calls[0]++, hook_replica = rep;
}
static void on_released(void *st, uint32_t rep, const irp_request *req) {
    hook_calls[1]++, hook_replica = rep;
}
static void on_up(void *st, uint32_t rep) {
    hook_calls[2]++, hook_replica = rep;
}
static void on_down(void *st, uint32_t rep) {
    hook_calls[3]++, hook_replica = rep;
}
static void on_added(void *st, uint32_t rep) {
    hook_calls[4]++, hook_replica = rep;
}
static void on_removed(void *st, uint32_t rep) {
    hook_calls[5]++, hook_replica = rep;
}

/* Each irp_policy_* hook reaches its own slot of the table; NULL hooks are no-ops. */
static void hooks_reach_the_policy(void **state) {
    static const irp_vtable hooked = {.name = "hooked",
                                      .choose = choose_n,
                                      .assigned = on_assigned,
                                      .released = on_released,
                                      .replica_up = on_up,
                                      .replica_down = on_down,
                                      .replica_added = on_added,
                                      .replica_removed = on_removed};
    irp_policy *p = irp_policy_new_from(&hooked, NULL);
    irp_request q = {.prompt_tokens = 10};
    irp_policy_assigned(p, 7, &q);
    irp_policy_released(p, 8, &q);
    irp_policy_replica_up(p, 9);
    irp_policy_replica_down(p, 10);
    irp_policy_replica_added(p, 11);
    irp_policy_replica_removed(p, 12);
    for (int i = 0; i < 6; i++) assert_int_equal(hook_calls[i], 1);
    assert_int_equal(hook_replica, 12);
    irp_policy_free(p);

    /* Calling every built-in policy's hooks is harmless (NULL ones are no-ops). */
    for (const irp_vtable *const *v = irp_all(); *v; v++) {
        irp_policy *b = irp_policy_new((*v)->name, NULL);
        irp_policy_assigned(b, 0, &q);
        irp_policy_released(b, 0, &q);
        irp_policy_replica_up(b, 0);
        irp_policy_replica_down(b, 0);
        irp_policy_replica_added(b, 1);
        irp_policy_replica_removed(b, 1);
        irp_policy_free(b);
    }
    assert_null(irp_policy_new_from(NULL, NULL));
}

/* irp_names lists exactly the table, in order. */
static void names_come_from_the_table(void **state) {
    ir_buf want;
    ir_buf_init(&want, 0);
    for (const irp_vtable *const *v = irp_all(); *v; v++)
        ir_buf_appendf(&want, "%s%s", v == irp_all() ? "" : ", ", (*v)->name);
    assert_string_equal(irp_names(), want.data);
    ir_buf_free(&want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry),
        cmocka_unit_test(round_robin_rotates),
        cmocka_unit_test(dry_runs_change_nothing),
        cmocka_unit_test(random_uniform_and_seeded),
        cmocka_unit_test(least_request_picks_a_minimum),
        cmocka_unit_test(p2c_never_picks_a_unique_maximum),
        cmocka_unit_test(choices_stay_in_range),
        cmocka_unit_test(out_of_range_is_not_clamped_silently),
        cmocka_unit_test(hooks_reach_the_policy),
        cmocka_unit_test(names_come_from_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
