/* bench_index.c: the KV index's speed and memory benchmarks (bench/index/run.sh).
 *
 *   hash     ns per 16-token block of the chained XXH3-128 hash
 *   lookup   a 512-block lookup over 64 replicas, p50 and p99, in three cases:
 *            cold (no replica holds it), typical (a few replicas hold it whole,
 *            some part of it) and worst (64 replicas, 64 different depths);
 *            the map holds 64 x 16,384 blocks meanwhile
 *   memory   bytes per block held: the index's own count and glibc's
 *   long     a 100,000-token prompt: hashing and lookup together, p50 and p99
 *   soak     40,000 distinct prompts through 8 replicas: never above capacity
 *
 * One JSON object per line on stdout. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/ir_index.h"

#define NREP 64
#define CAP  16384
#define LEN  512

/* A request that completes at once: recorded (pinned), then released. */
static void record_done(irx_index *ix, uint32_t r, const ir_hash128 *h, size_t n) {
    irx_rec rec = irx_record(ix, r, h, n);
    irx_release(ix, rec, h, n, 0);
}

static size_t heap_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void make_prompt(ir_hash128 *out, size_t n, uint64_t tag, const ir_hash128 *share,
                        size_t nshare) {
    for (size_t i = 0; i < nshare && i < n; i++) out[i] = share[i];
    ir_block_chain c = ir_block_chain_at(ir_block_hash_root("bench-model", NULL, NULL), out,
                                         nshare < n ? nshare : n);
    for (size_t i = nshare; i < n; i++) {
        uint32_t ids[16];
        for (int k = 0; k < 16; k++) ids[k] = (uint32_t)(tag * 131 + i * 16 + (uint64_t)k);
        out[i] = ir_block_hash_next(&c, ids, 16);
    }
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void bench_hash(void) {
    enum { NTOK = 1 << 20 };
    uint32_t *ids = malloc(NTOK * sizeof *ids);
    ir_hash128 *out = malloc(NTOK / 16 * sizeof *out);
    for (size_t i = 0; i < NTOK; i++) ids[i] = (uint32_t)(i * 2654435761u);
    double best = 1e9;
    ir_hash128 root = ir_block_hash_root("bench-model", "adapter", "salt");
    for (int rep = 0; rep < 20; rep++) {
        uint64_t t0 = ir_now_ns();
        size_t nb = ir_block_hash_chain(root, ids, NTOK, 16, out, NTOK / 16);
        double ns = (double)(ir_now_ns() - t0) / (double)nb;
        if (ns < best) best = ns;
    }
    printf("{\"bench\":\"hash\",\"block_size\":16,\"blocks\":%d,\"ns_per_block_min_of_20\":%.2f,"
           "\"check\":\"%016llx\"}\n",
           NTOK / 16, best, (unsigned long long)out[NTOK / 16 - 1].lo);
    free(ids);
    free(out);
}

/* Times `iters` lookups of the prompts in `ps` (round robin); prints p50/p99. */
static void time_lookups(irx_index *ix, const char *name, ir_hash128 (*ps)[LEN], int np,
                         int iters) {
    uint64_t *t = malloc((size_t)iters * sizeof *t);
    uint32_t out[NREP];
    uint64_t sink = 0;
    for (int i = 0; i < iters; i++) {
        uint64_t t0 = ir_now_ns();
        irx_lookup(ix, ps[i % np], LEN, out);
        t[i] = ir_now_ns() - t0;
        sink += out[i % NREP];
    }
    qsort(t, (size_t)iters, sizeof *t, cmp_u64);
    printf("{\"bench\":\"lookup\",\"case\":\"%s\",\"blocks\":%d,\"replicas\":%d,\"p50_ns\":%llu,"
           "\"p99_ns\":%llu,\"sink\":%llu}\n",
           name, LEN, NREP, (unsigned long long)t[iters / 2],
           (unsigned long long)t[iters * 99 / 100], (unsigned long long)sink);
    free(t);
}

static void bench_lookup_and_memory(void) {
    ir_rng rng;
    ir_rng_seed(&rng, 1);
    size_t heap0 = heap_bytes();
    irx_index *ix = irx_new(NREP);
    for (uint32_t r = 0; r < NREP; r++) irx_set_capacity(ix, r, CAP);
    /* Fill every replica with its own prompts: nothing shared. */
    ir_hash128 *p = malloc(LEN * sizeof *p);
    uint64_t tag = 1;
    uint64_t t0 = ir_now_ns();
    for (uint32_t r = 0; r < NREP; r++)
        for (int k = 0; k < CAP / LEN; k++) {
            make_prompt(p, LEN, tag++, NULL, 0);
            record_done(ix, r, p, LEN);
        }
    double rec_ns = (double)(ir_now_ns() - t0) / (double)(NREP * CAP);
    irx_stats st;
    irx_stats_get(ix, &st);
    size_t heap1 = heap_bytes();
    printf("{\"bench\":\"memory\",\"case\":\"unshared\",\"held\":%llu,\"entries\":%llu,"
           "\"bytes_per_block_index\":%.1f,\"bytes_per_block_heap\":%.1f,\"record_ns_per_block\":%."
           "1f}\n",
           (unsigned long long)st.held, (unsigned long long)st.entries,
           (double)st.bytes / (double)st.held, (double)(heap1 - heap0) / (double)st.held, rec_ns);

    /* Lookup prompts: 64 prompts of 512 blocks, recorded over the full map. */
    enum { NP = 64 };
    ir_hash128(*cold)[LEN] = malloc(sizeof(ir_hash128[NP][LEN]));
    ir_hash128(*typ)[LEN] = malloc(sizeof(ir_hash128[NP][LEN]));
    ir_hash128(*worst)[LEN] = malloc(sizeof(ir_hash128[NP][LEN]));
    for (int i = 0; i < NP; i++) {
        make_prompt(cold[i], LEN, tag++, NULL, 0);
        make_prompt(typ[i], LEN, tag++, NULL, 0);
        make_prompt(worst[i], LEN, tag++, NULL, 0);
        /* typical: 2 replicas hold it whole, 6 hold a shared system prompt of
         * 64 to 448 blocks of it */
        for (int k = 0; k < 2; k++)
            record_done(ix, (uint32_t)ir_rng_below(&rng, NREP), typ[i], LEN);
        for (int k = 0; k < 6; k++)
            record_done(ix, (uint32_t)ir_rng_below(&rng, NREP), typ[i],
                        64 + ir_rng_below(&rng, 385));
        /* worst: every replica holds a different depth */
        for (uint32_t r = 0; r < NREP; r++) record_done(ix, r, worst[i], 1 + r * 8);
    }
    time_lookups(ix, "cold", cold, NP, 200000);
    time_lookups(ix, "typical", typ, NP, 200000);
    time_lookups(ix, "worst_64_depths", worst, NP, 100000);
    char err[200];
    if (irx_check(ix, err, sizeof err)) printf("{\"bench\":\"lookup\",\"error\":\"%s\"}\n", err);
    irx_free(ix);
    free(cold);
    free(typ);
    free(worst);

    /* Shared prefixes: 64 replicas, each prompt a 256-block system prompt (one of
     * 32) and 256 blocks of its own; each system prompt sits on several replicas. */
    heap0 = heap_bytes();
    ix = irx_new(NREP);
    for (uint32_t r = 0; r < NREP; r++) irx_set_capacity(ix, r, CAP);
    ir_hash128(*sys)[256] = malloc(sizeof(ir_hash128[32][256]));
    for (int s = 0; s < 32; s++) make_prompt(sys[s], 256, tag++, NULL, 0);
    for (uint32_t r = 0; r < NREP; r++)
        for (int k = 0; k < 2 * CAP / LEN; k++) {
            make_prompt(p, LEN, tag++, sys[ir_rng_below(&rng, 32)], 256);
            record_done(ix, r, p, LEN);
        }
    irx_stats_get(ix, &st);
    heap1 = heap_bytes();
    printf(
        "{\"bench\":\"memory\",\"case\":\"shared_system_prompts\",\"held\":%llu,\"entries\":%llu,"
        "\"bytes_per_block_index\":%.1f,\"bytes_per_block_heap\":%.1f}\n",
        (unsigned long long)st.held, (unsigned long long)st.entries,
        (double)st.bytes / (double)st.held, (double)(heap1 - heap0) / (double)st.held);
    irx_free(ix);
    free(sys);
    free(p);
}

/* A 100,000-token prompt (6,250 blocks): hashing plus the lookup, as a decision
 * pays them, with the prompt held to three depths on three of 64 replicas. */
static void bench_long_prompt(void) {
    enum { NTOK = 100000, NB = NTOK / 16, ITERS = 2000 };
    irx_index *ix = irx_new(NREP);
    for (uint32_t r = 0; r < NREP; r++) irx_set_capacity(ix, r, 8192);
    uint32_t *ids = malloc(NTOK * sizeof *ids);
    ir_hash128 *h = malloc(NB * sizeof *h);
    for (size_t i = 0; i < NTOK; i++) ids[i] = (uint32_t)(i * 2654435761u) % 150000;
    ir_hash128 root = ir_block_hash_root("bench-model", NULL, NULL);
    ir_block_hash_chain(root, ids, NTOK, 16, h, NB);
    record_done(ix, 3, h, NB);
    record_done(ix, 17, h, 4000);
    record_done(ix, 40, h, 512);
    uint64_t *t = malloc(ITERS * sizeof *t);
    uint32_t out[NREP];
    uint64_t sink = 0;
    for (int i = 0; i < ITERS; i++) {
        uint64_t t0 = ir_now_ns();
        size_t nb = ir_block_hash_chain(root, ids, NTOK, 16, h, NB);
        irx_lookup(ix, h, irx_usable_blocks(nb, NTOK, 16), out);
        t[i] = ir_now_ns() - t0;
        sink += out[3] + out[17] + out[40];
    }
    qsort(t, ITERS, sizeof *t, cmp_u64);
    printf("{\"bench\":\"long_prompt\",\"tokens\":%d,\"blocks\":%d,\"replicas\":%d,"
           "\"hash_and_lookup_p50_ns\":%llu,\"p99_ns\":%llu,\"depths\":[%u,%u,%u]}\n",
           NTOK, NB, NREP, (unsigned long long)t[ITERS / 2],
           (unsigned long long)t[ITERS * 99 / 100], out[3], out[17], out[40]);
    (void)sink;
    free(t);
    free(ids);
    free(h);
    irx_free(ix);
}

static void bench_soak(void) {
    enum { R = 8, RCAP = 4096, PROMPTS = 40000 };
    ir_rng rng;
    ir_rng_seed(&rng, 3);
    irx_index *ix = irx_new(R);
    uint32_t caps[R];
    for (uint32_t r = 0; r < R; r++) irx_set_capacity(ix, r, caps[r] = RCAP / 2 + r * 256);
    uint64_t total_cap = 0, max_held = 0, over = 0;
    for (uint32_t r = 0; r < R; r++) total_cap += caps[r];
    ir_hash128 *p = malloc(1024 * sizeof *p);
    size_t heap0 = heap_bytes(), heap_max = 0;
    for (uint64_t i = 0; i < PROMPTS; i++) {
        size_t n = 1 + ir_rng_below(&rng, 1024);
        make_prompt(p, n, 1000000 + i, NULL, 0);
        uint32_t r = (uint32_t)ir_rng_below(&rng, R);
        irx_rec rec = irx_record(ix, r, p, n);
        if (ir_rng_below(&rng, 20) == 0)
            irx_undo(ix, rec, p, n);
        else
            irx_release(ix, rec, p, n, 1 + ir_rng_below(&rng, 4));
        if (irx_replica_blocks(ix, r) > caps[r]) over++;
        if (i % 1000 == 0) {
            irx_stats st;
            irx_stats_get(ix, &st);
            if (st.held > max_held) max_held = st.held;
            size_t h = heap_bytes();
            if (h > heap_max) heap_max = h;
        }
    }
    char err[200] = "";
    int bad = irx_check(ix, err, sizeof err);
    irx_stats st;
    irx_stats_get(ix, &st);
    printf("{\"bench\":\"soak\",\"prompts\":%d,\"replicas\":%d,\"capacity_blocks\":%llu,"
           "\"max_held\":%llu,\"final_held\":%llu,\"entries\":%llu,\"over_capacity_events\":%llu,"
           "\"heap_growth_max_mib\":%.1f,\"invariant\":\"%s\"}\n",
           PROMPTS, R, (unsigned long long)total_cap, (unsigned long long)max_held,
           (unsigned long long)st.held, (unsigned long long)st.entries, (unsigned long long)over,
           (double)(heap_max - heap0) / 1048576.0, bad ? err : "ok");
    irx_free(ix);
    free(p);
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : "all";
    bool help = !strcmp(only, "--help") || !strcmp(only, "-h");
    if (help || (strcmp(only, "all") && strcmp(only, "hash") && strcmp(only, "lookup") &&
                 strcmp(only, "long") && strcmp(only, "soak"))) {
        fputs("usage: inferrail-indexbench [all|hash|lookup|long|soak]\n"
              "The KV index's speed and memory; one JSON object per line (bench/index/run.sh).\n",
              help ? stdout : stderr);
        return help ? 0 : 2;
    }
    if (!strcmp(only, "all") || !strcmp(only, "hash")) bench_hash();
    if (!strcmp(only, "all") || !strcmp(only, "lookup")) bench_lookup_and_memory();
    if (!strcmp(only, "all") || !strcmp(only, "long")) bench_long_prompt();
    if (!strcmp(only, "all") || !strcmp(only, "soak")) bench_soak();
    return 0;
}
