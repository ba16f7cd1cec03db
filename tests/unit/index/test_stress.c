/* The index under concurrency: 12 threads record (and take back some of their
 * records, and correct), 6 look up and 2 forget, reset and re-size replicas,
 * for IRX_STRESS_SECONDS (2 by default; 5 for the run). Afterwards the
 * shared map must equal the union of the shadows, exactly. Run under TSan by
 * `make tsan-threaded`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "index/ir_index.h"

enum { NREP = 40, NPROMPT = 64, LEN = 48, RECORDERS = 12, READERS = 6, FORGETTERS = 2 };

static ir_hash128 prompts[NPROMPT][LEN];
static irx_index *ix;
static atomic_bool stop;
static atomic_ulong ops[3];

static void *recorder(void *arg) {
    ir_rng rng;
    ir_rng_seed(&rng, (uint64_t)(uintptr_t)arg);
    while (!atomic_load(&stop)) {
        uint32_t r = (uint32_t)ir_rng_below(&rng, NREP), p = (uint32_t)ir_rng_below(&rng, NPROMPT);
        size_t n = 1 + ir_rng_below(&rng, LEN);
        irx_rec rec = irx_record(ix, r, prompts[p], n);
        uint64_t what = ir_rng_below(&rng, 10);
        if (what < 3)
            irx_undo(ix, rec, prompts[p], n);
        else
            irx_release(ix, rec, prompts[p], n, ir_rng_below(&rng, 3));
        if (what == 3) irx_correct(ix, r, prompts[p], n, n, ir_rng_below(&rng, n));
        atomic_fetch_add(&ops[0], 1);
    }
    return NULL;
}

static void *reader(void *arg) {
    ir_rng rng;
    ir_rng_seed(&rng, (uint64_t)(uintptr_t)arg);
    uint32_t out[NREP];
    unsigned long bad = 0;
    while (!atomic_load(&stop)) {
        uint32_t p = (uint32_t)ir_rng_below(&rng, NPROMPT);
        size_t n = ir_rng_below(&rng, LEN + 1);
        irx_lookup(ix, prompts[p], n, out);
        for (uint32_t r = 0; r < NREP; r++) bad += out[r] > n;
        atomic_fetch_add(&ops[1], 1);
    }
    return (void *)(uintptr_t)bad;
}

static void *forgetter(void *arg) {
    ir_rng rng;
    ir_rng_seed(&rng, (uint64_t)(uintptr_t)arg);
    while (!atomic_load(&stop)) {
        uint32_t r = (uint32_t)ir_rng_below(&rng, NREP);
        switch (ir_rng_below(&rng, 3)) {
        case 0:
            irx_forget_replica(ix, r);
            irx_set_capacity(ix, r, 64 + (uint32_t)ir_rng_below(&rng, 512));
            break;
        case 1:
            irx_reset_replica(ix, r);
            break;
        default:
            irx_set_capacity(ix, r, 64 + (uint32_t)ir_rng_below(&rng, 512));
            break;
        }
        atomic_fetch_add(&ops[2], 1);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static void map_equals_shadows(void **state) {
    const char *env = getenv("IRX_STRESS_SECONDS");
    double secs = env ? atof(env) : 2.0;
    ir_rng rng;
    ir_rng_seed(&rng, 7);
    for (uint32_t i = 0; i < NPROMPT; i++) {
        /* Prompts share prefixes of random length with an earlier one. */
        size_t share = i ? ir_rng_below(&rng, LEN) : 0;
        uint32_t from = i ? (uint32_t)ir_rng_below(&rng, i) : 0;
        memcpy(prompts[i], prompts[from], share * sizeof(ir_hash128));
        ir_block_chain c =
            ir_block_chain_at(ir_block_hash_root("m", NULL, NULL), prompts[i], share);
        for (size_t b = share; b < LEN; b++) {
            uint32_t ids[2] = {i, (uint32_t)b};
            prompts[i][b] = ir_block_hash_next(&c, ids, 2);
        }
    }
    ix = irx_new(NREP);
    assert_non_null(ix);
    for (uint32_t r = 0; r < NREP; r++) assert_int_equal(irx_set_capacity(ix, r, 256), 0);
    pthread_t th[RECORDERS + READERS + FORGETTERS];
    int t = 0;
    for (int i = 0; i < RECORDERS; i++)
        pthread_create(&th[t++], NULL, recorder, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < READERS; i++)
        pthread_create(&th[t++], NULL, reader, (void *)(uintptr_t)(i + 100));
    for (int i = 0; i < FORGETTERS; i++)
        pthread_create(&th[t++], NULL, forgetter, (void *)(uintptr_t)(i + 200));
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    /* At least one operation of each kind before stopping: on a loaded machine a
     * thread can get no CPU for the whole of secs (the check below needs them). */
    struct timespec tick = {0, 10000000};
    while (!atomic_load(&ops[0]) || !atomic_load(&ops[1]) || !atomic_load(&ops[2]))
        nanosleep(&tick, NULL);
    atomic_store(&stop, true);
    unsigned long bad = 0;
    for (int i = 0; i < t; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        bad += (unsigned long)(uintptr_t)rv;
    }
    assert_int_equal(bad, 0);
    print_message("%.1f s: %lu records, %lu lookups, %lu forgets/resets/resizes\n", secs,
                  atomic_load(&ops[0]), atomic_load(&ops[1]), atomic_load(&ops[2]));
    assert_true(atomic_load(&ops[0]) > 0 && atomic_load(&ops[1]) > 0 && atomic_load(&ops[2]) > 0);
    char err[200];
    if (irx_check(ix, err, sizeof err)) fail_msg("%s", err);
    /* And lookups agree with the shadows once quiet: forget everything held. */
    irx_stats st;
    irx_stats_get(ix, &st);
    assert_true(st.entries <= st.held);
    for (uint32_t r = 0; r < NREP; r++) irx_forget_replica(ix, r);
    irx_stats_get(ix, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.held, 0);
    irx_free(ix);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(map_equals_shadows)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
