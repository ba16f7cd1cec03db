/* A model's tokenizer swapped by a reload (fleet.c): a reference taken before the
 * swap keeps the old one alive until given back, the sweep frees it only then,
 * and threads taking references while the control thread swaps and sweeps never
 * see a freed one (ASan) nor race (TSan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "gateway/gateway.h"

static gw_tokset *sim_toks(void) {
    static gw_model_cfg c = {.name = "m", .tokenizer = IRT_SIM_SPEC};
    gw_tokset *t = NULL;
    char err[256];
    assert_int_equal(gw_tokset_load(&c, 0, NULL, &t, err, sizeof err), 0);
    assert_non_null(t);
    assert_int_equal(t->kind, GW_TOK_SIM);
    return t;
}

static void held_until_given_back(void **state) {
    (void)state;
    gw_fleet f;
    gw_model m;
    memset(&f, 0, sizeof f); /* {0} is an int for the _Atomic first members: clang warns */
    memset(&m, 0, sizeof m);
    gw_model_set_toks(&f, &m, sim_toks());
    assert_int_equal(atomic_load(&m.tok), GW_TOK_SIM);
    gw_tokset *held = gw_model_toks_take(&m);
    gw_model_set_toks(&f, &m, NULL); /* the model loses its tokenizer */
    assert_null(gw_model_toks_take(&m));
    assert_int_equal(atomic_load(&m.tok), GW_TOK_NONE);
    gw_fleet_sweep(&f);
    assert_ptr_equal(f.toks_retired, held); /* still held: not freed */
    assert_int_equal(held->kind, GW_TOK_SIM);
    gw_tokset_put(held);
    gw_fleet_sweep(&f);
    assert_null(f.toks_retired);
}

#define READERS 4
#define SWAPS   300

typedef struct race {
    gw_model *m;
    _Atomic int stop;
    _Atomic uint64_t seen;
} race;

static void *reader(void *arg) {
    race *r = arg;
    while (!atomic_load(&r->stop)) {
        gw_tokset *t = gw_model_toks_take(r->m);
        if (t) {
            if (t->kind != GW_TOK_SIM) abort();
            atomic_fetch_add(&r->seen, 1);
        }
        gw_tokset_put(t);
    }
    return NULL;
}

static void swaps_race_readers(void **state) {
    (void)state;
    gw_fleet f;
    gw_model m;
    memset(&f, 0, sizeof f); /* {0} is an int for the _Atomic first members: clang warns */
    memset(&m, 0, sizeof m);
    race r = {.m = &m};
    gw_model_set_toks(&f, &m, sim_toks());
    pthread_t th[READERS];
    for (int i = 0; i < READERS; i++) assert_int_equal(pthread_create(&th[i], NULL, reader, &r), 0);
    while (atomic_load(&r.seen) < 100) sched_yield(); /* the readers are running */
    for (int i = 0; i < SWAPS; i++) {
        gw_model_set_toks(&f, &m, i % 7 == 6 ? NULL : sim_toks());
        gw_fleet_sweep(&f);
    }
    atomic_store(&r.stop, 1);
    for (int i = 0; i < READERS; i++) pthread_join(th[i], NULL);
    gw_model_set_toks(&f, &m, NULL);
    gw_fleet_sweep(&f);
    assert_null(f.toks_retired); /* every replaced tokenizer freed once given back */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(held_until_given_back),
        cmocka_unit_test(swaps_race_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
