/* A model's policy swapped by a reload (fleet.c): a request's hold taken before the
 * swap keeps the old one alive until given back, the sweep frees it only then (a
 * reload kept every replaced policy until exit, about 280 KB a cost_model), and
 * threads taking holds while the control thread swaps and sweeps never see a freed
 * one (ASan) nor race (TSan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "gateway/gateway.h"

static irp_policy *cost_model(void) {
    irp_policy *p = irp_policy_new("cost_model", NULL);
    assert_non_null(p);
    return p;
}

static void held_until_given_back(void **state) {
    (void)state;
    gw_fleet f;
    gw_model m;
    memset(&f, 0, sizeof f); /* {0} is an int for the _Atomic first members: clang warns */
    memset(&m, 0, sizeof m);
    gw_model_set_policy(&f, &m, cost_model());
    irp_policy *held = gw_model_policy_take(&m); /* a request chose with it */
    assert_non_null(held);
    assert_int_equal(irp_policy_holders(held), 2); /* the model and the request */
    gw_model_set_policy(&f, &m, cost_model());     /* a reload replaces it */
    assert_ptr_not_equal(gw_model_policy_take(&m), held);
    gw_policy_put(m.policy); /* the take just above */
    gw_fleet_sweep(&f);
    assert_int_equal(f.npol_retired, 1); /* still held: not freed */
    assert_string_equal(irp_policy_name(held), "cost_model");
    gw_policy_put(held); /* the request ends */
    gw_fleet_sweep(&f);
    assert_int_equal(f.npol_retired, 0);
    irp_policy_free(m.policy);
    free(f.pol_retired);
}

#define READERS 4
#define SWAPS   200

typedef struct race {
    gw_model *m;
    _Atomic int stop;
    _Atomic uint64_t seen;
} race;

static void *reader(void *arg) {
    race *r = arg;
    while (!atomic_load(&r->stop)) {
        irp_policy *p = gw_model_policy_take(r->m);
        if (!p || strcmp(irp_policy_name(p), "cost_model") != 0) abort();
        atomic_fetch_add(&r->seen, 1);
        gw_policy_put(p);
    }
    return NULL;
}

static void swaps_race_readers(void **state) {
    (void)state;
    gw_fleet f;
    gw_model m;
    memset(&f, 0, sizeof f);
    memset(&m, 0, sizeof m);
    race r = {.m = &m};
    gw_model_set_policy(&f, &m, cost_model());
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++) assert_int_equal(pthread_create(&th[i], NULL, reader, &r), 0);
    while (atomic_load(&r.seen) < 100) sched_yield(); /* the readers are running */
    for (int i = 0; i < SWAPS; i++) {
        gw_model_set_policy(&f, &m, cost_model());
        gw_fleet_sweep(&f);
    }
    atomic_store(&r.stop, 1);
    for (int i = 0; i < READERS; i++) pthread_join(th[i], NULL);
    gw_fleet_sweep(&f);
    assert_int_equal(f.npol_retired, 0); /* every replaced policy freed once given back */
    irp_policy_free(m.policy);
    free(f.pol_retired);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(held_until_given_back),
        cmocka_unit_test(swaps_race_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
