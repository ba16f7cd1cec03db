/* bench_tokenizer: single-thread encode throughput, load time, memory and
 * thread scaling of the tokenizer.json implementation.
 *
 *   bench_tokenizer CORPUS_DIR NAME=TOKENIZER_JSON [NAME=...] [--threads N]
 *
 * CORPUS_DIR holds english.txt, code.txt, cjk.txt (gen_corpus.mjs); each is
 * a list of documents separated by \f, encoded one document per call.
 * Prints one JSON line per (model, corpus), then thread-scaling lines.
 * load_ms is the best of three loads (load_first_ms the first, cold one);
 * every timing is the best of three runs after a warm-up. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenize/ir_tokenize.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct corpus {
    char *data;
    size_t len;
    size_t *off, *dlen;
    size_t ndocs;
} corpus;

static int load_corpus(const char *dir, const char *name, corpus *c) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s.txt", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    c->data = malloc((size_t)n + 1);
    c->len = fread(c->data, 1, (size_t)n, f);
    fclose(f);
    c->off = malloc((c->len / 16 + 2) * sizeof(size_t));
    c->dlen = malloc((c->len / 16 + 2) * sizeof(size_t));
    c->ndocs = 0;
    size_t start = 0;
    for (size_t i = 0; i <= c->len; i++) {
        if (i == c->len || c->data[i] == '\f') {
            c->off[c->ndocs] = start;
            c->dlen[c->ndocs++] = i - start;
            start = i + 1;
        }
    }
    return 0;
}

typedef struct job {
    const irt_tokenizer *t;
    const corpus *c;
    size_t tokens;
    int reps;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    irt_ids ids = {0};
    j->tokens = 0;
    for (int r = 0; r < j->reps; r++)
        for (size_t d = 0; d < j->c->ndocs; d++) {
            if (irt_encode(j->t, j->c->data + j->c->off[d], j->c->dlen[d], false, &ids)) abort();
            j->tokens += ids.len;
        }
    irt_ids_free(&ids);
    return NULL;
}

int main(int argc, char **argv) {
    bool help = argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
    if (argc < 3 || help) {
        fprintf(help ? stdout : stderr,
                "usage: inferrail-tokbench CORPUS_DIR NAME=tokenizer.json... [--threads N]\n"
                "tokenizer.json encoding speed on a corpus (bench/tokenizer).\n");
        return help ? 0 : 2;
    }
    int max_threads = 4;
    const char *kinds[] = {"english", "code", "cjk"};
    corpus cs[3];
    for (int k = 0; k < 3; k++)
        if (load_corpus(argv[1], kinds[k], &cs[k])) {
            fprintf(stderr, "cannot read %s/%s.txt\n", argv[1], kinds[k]);
            return 1;
        }
    for (int a = 2; a + 1 < argc; a++)
        if (!strcmp(argv[a], "--threads")) max_threads = atoi(argv[a + 1]);
    if (max_threads > 64) max_threads = 64;
    for (int a = 2; a < argc; a++) {
        if (!strcmp(argv[a], "--threads")) {
            a++;
            continue;
        }
        char name[128];
        const char *eq = strchr(argv[a], '=');
        if (!eq) continue;
        snprintf(name, sizeof(name), "%.*s", (int)(eq - argv[a]), argv[a]);
        char err[512];
        irt_tokenizer *t = NULL;
        double load_ms = 1e18, load_first_ms = 0;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now_s();
            irt_tokenizer *x = irt_load(eq + 1, err, sizeof(err));
            double ms = (now_s() - t0) * 1e3;
            if (!x) {
                fprintf(stderr, "%s: %s\n", name, err);
                return 1;
            }
            if (rep == 0) load_first_ms = ms;
            if (ms < load_ms) load_ms = ms;
            irt_free(t);
            t = x;
        }
        for (int k = 0; k < 3; k++) {
            job j = {t, &cs[k], 0, 1};
            run_job(&j); /* warm-up */
            double best = 1e9;
            for (int rep = 0; rep < 3; rep++) {
                double s = now_s();
                run_job(&j);
                double el = now_s() - s;
                if (el < best) best = el;
            }
            printf("{\"impl\":\"inferrail\",\"model\":\"%s\",\"corpus\":\"%s\",\"threads\":1,"
                   "\"mib_s\":%.2f,\"tokens\":%zu,\"load_ms\":%.1f,\"load_first_ms\":%.1f,"
                   "\"memory_mib\":%.1f}\n",
                   name, kinds[k], cs[k].len / 1048576.0 / best, j.tokens, load_ms, load_first_ms,
                   irt_memory_bytes(t) / 1048576.0);
            fflush(stdout);
        }
        /* Threads sharing one tokenizer, English corpus: each thread
         * encodes the whole corpus; aggregate MiB/s, best of three. */
        double one = 0;
        for (int n = 1; n <= max_threads; n *= 2) {
            pthread_t th[64];
            job js[64];
            double best = 1e9;
            for (int rep = 0; rep < 3; rep++) {
                double s = now_s();
                for (int i = 0; i < n; i++) {
                    js[i] = (job){t, &cs[0], 0, 1};
                    pthread_create(&th[i], NULL, run_job, &js[i]);
                }
                for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
                double el = now_s() - s;
                if (el < best) best = el;
            }
            double mib_s = n * cs[0].len / 1048576.0 / best;
            if (n == 1) one = mib_s;
            printf("{\"impl\":\"inferrail\",\"model\":\"%s\",\"corpus\":\"english\",\"threads\":%d,"
                   "\"mib_s\":%.2f,\"scaling\":%.2f}\n",
                   name, n, mib_s, mib_s / one);
            fflush(stdout);
        }
        irt_free(t);
    }
    for (int k = 0; k < 3; k++) {
        free(cs[k].data);
        free(cs[k].off);
        free(cs[k].dlen);
    }
    return 0;
}
