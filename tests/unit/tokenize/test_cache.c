/* The tokenization cache: irt_encode_cached gives exactly irt_encode's ids,
 * cold and warm, within and over its budget, for the six real tokenizers and
 * for a Metaspace pre-tokenizer whose first piece differs from the others; it
 * reuses what it holds; threads share it (run under TSan too).
 * The tokenizer's word cache (hf_bpe.c): the same ids as merging every word,
 * cold and warm, for the six tokenizers; threads share it (TSan too). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <jansson.h>

#include "tokenize/hf_internal.h"
#include "tokenize/ir_tokenize.h"
#include "tok_texts.h"

typedef struct family {
    const char *model;
    const char *specials[3]; /* added tokens the family's chat template writes */
} family;

static const family FAMILIES[] = {
    {"qwen3", {"<|im_start|>", "<|im_end|>", "<|endoftext|>"}},
    {"llama3_1", {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"}},
    {"gemma3", {"<start_of_turn>", "<end_of_turn>", "<bos>"}},
    {"deepseek_v3",
     {"<\xef\xbd\x9c"
      "User\xef\xbd\x9c>",
      "<\xef\xbd\x9c"
      "Assistant\xef\xbd\x9c>",
      "<\xef\xbd\x9c"
      "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"}},
    {"llama2", {"<s>", "</s>", "<unk>"}},
    {"gptoss", {"<|start|>", "<|message|>", "<|end|>"}},
};

/* A conversation-like text: pieces drawn from a small pool (so they repeat, as
 * system prompts and earlier turns do), joined by the family's added tokens,
 * sometimes starting or ending on one, sometimes with whitespace around them. */
static void mk_text(const family *f, char **pool, size_t npool, unsigned *seed, char *buf,
                    size_t cap) {
    size_t len = 0;
    int parts = 1 + rand_r(seed) % 6;
    if (rand_r(seed) % 3 == 0) len += (size_t)snprintf(buf + len, cap - len, "%s", f->specials[0]);
    for (int i = 0; i < parts && len < cap - 1; i++) {
        const char *p = pool[(size_t)rand_r(seed) % npool];
        const char *sp = f->specials[rand_r(seed) % 3];
        const char *ws = (const char *[]){"", "\n", " ", "\n\n"}[rand_r(seed) % 4];
        len += (size_t)snprintf(buf + len, cap - len, "%s%s%s%s", p, ws, sp, ws);
    }
    if (rand_r(seed) % 2 && len < cap - 1)
        len += (size_t)snprintf(buf + len, cap - len, "%s", pool[(size_t)rand_r(seed) % npool]);
    buf[len < cap ? len : cap - 1] = '\0';
}

static void assert_same(const irt_ids *a, const irt_ids *b, const char *model, const char *text) {
    if (a->len == b->len && (!a->len || !memcmp(a->ids, b->ids, a->len * sizeof(uint32_t)))) return;
    size_t k = 0;
    while (k < a->len && k < b->len && a->ids[k] == b->ids[k]) k++;
    fail_msg("%s: cached ids differ at %zu (len %zu against %zu) for text: %.200s", model, k,
             b->len, a->len, text);
}

/* 400 texts, each encoded without and with the cache, with and without special
 * tokens, twice (the second time mostly hits): always the same ids. */
__attribute__((unused)) static void property(const family *f, irt_tokenizer *t, size_t budget,
                                             irt_cache_stats *st) {
    char *pool[40];
    size_t npool = load_texts(pool, 40);
    assert_true(npool >= 20);
    irt_cache *c = irt_cache_new(t, budget);
    assert_non_null(c);
    unsigned seed = 7;
    char *buf = malloc(1 << 16);
    irt_ids want = {0}, got = {0};
    for (int round = 0; round < 2; round++) {
        unsigned s = seed;
        for (int i = 0; i < 200; i++) {
            mk_text(f, pool, npool, &s, buf, 1 << 16);
            bool special = i % 2;
            assert_int_equal(irt_encode(t, buf, strlen(buf), special, &want), IRT_OK);
            assert_int_equal(irt_encode_cached(t, c, buf, strlen(buf), special, &got), IRT_OK);
            assert_same(&want, &got, f->model, buf);
        }
    }
    irt_cache_get_stats(c, st);
    fprintf(stderr, "%s, budget %zu: %llu hits, %llu misses, %llu evictions, %zu tokens held\n",
            f->model, budget, (unsigned long long)st->hits, (unsigned long long)st->misses,
            (unsigned long long)st->evictions, st->tokens);
    assert_true(st->tokens <= budget);
    irt_ids_free(&want);
    irt_ids_free(&got);
    free(buf);
    for (size_t i = 0; i < npool; i++) free(pool[i]);
    irt_cache_free(c);
}

/* Each family, loaded once: a budget that holds every piece (most lookups hit,
 * nothing evicted), then one of about a tenth of them (constant eviction). */
__attribute__((unused)) static void test_same_ids_as_uncached(void **s) {
    (void)s;
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
        const family *f = &FAMILIES[i];
        irt_tokenizer *t = load(f->model);
        for (size_t k = 0; k < 3; k++)
            if (irt_token_to_id(t, f->specials[k], strlen(f->specials[k])) < 0)
                fail_msg("%s has no added token %s", f->model, f->specials[k]);
        irt_cache_stats st;
        property(f, t, 1 << 20, &st);
        assert_true(st.hits > st.misses);
        assert_int_equal(st.evictions, 0);
        assert_true(st.entries > 0 && st.entries == st.misses); /* each miss kept once */
        property(f, t, 20000, &st);
        assert_true(st.evictions > 0);
        assert_true(st.hits > 0);
        assert_true(st.tokens <= 20000);
        irt_free(t);
    }
}

/* Metaspace with prepend_scheme "first" gives a text's first piece a leading
 * "\u2581" that a piece after an added token does not get: one text, two
 * entries, each hit with its own ids. */
__attribute__((unused)) static void test_first_piece_keyed_apart(void **s) {
    (void)s;
    const char *json =
        "{\"version\":\"1.0\",\"added_tokens\":[{\"id\":6,\"content\":\"<x>\",\"single_word\":"
        "false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}],"
        "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"Metaspace\",\"replacement\":"
        "\"\\u2581\",\"prepend_scheme\":\"first\",\"split\":true},\"post_processor\":null,"
        "\"decoder\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"\\u2581\":2,"
        "\"ab\":3,\"\\u2581ab\":4,\"<unk>\":5},\"merges\":[],\"ignore_merges\":true,"
        "\"unk_token\":\"<unk>\"}}";
    char err[256];
    irt_tokenizer *t = irt_load_json(json, strlen(json), err, sizeof err);
    if (!t) fail_msg("load: %s", err);
    const char *p = "ab ab ab ab ab ab ab ab ab ab ab ab"; /* 35 bytes, cached */
    char q[64];
    snprintf(q, sizeof q, "<x>%s", p);
    assert_true(strlen(p) >= IRT_CACHE_MIN_BYTES);
    irt_cache *c = irt_cache_new(t, 1000);
    irt_ids a = {0}, b = {0}, x = {0};
    assert_int_equal(irt_encode(t, p, strlen(p), false, &a), 0);
    assert_int_equal(irt_encode(t, q, strlen(q), false, &b), 0);
    assert_int_equal(a.ids[0], 4); /* "\u2581ab" */
    assert_int_equal(b.ids[0], 6);
    assert_int_equal(b.ids[1], 3); /* "ab": not first */
    for (int round = 0; round < 2; round++) {
        assert_int_equal(irt_encode_cached(t, c, p, strlen(p), false, &x), 0);
        assert_same(&a, &x, "metaspace", p);
        assert_int_equal(irt_encode_cached(t, c, q, strlen(q), false, &x), 0);
        assert_same(&b, &x, "metaspace", q);
    }
    irt_cache_stats st;
    irt_cache_get_stats(c, &st);
    assert_int_equal(st.entries, 2);
    assert_int_equal(st.hits, 2);
    assert_int_equal(st.misses, 2);
    irt_ids_free(&a);
    irt_ids_free(&b);
    irt_ids_free(&x);
    irt_cache_free(c);
    irt_free(t);
}

__attribute__((unused)) static void test_bad_arguments(void **s) {
    (void)s;
    irt_tokenizer *a = load("qwen3"), *b = load("llama3_1");
    assert_null(irt_cache_new(a, 0));
    assert_null(irt_cache_new(NULL, 10));
    irt_cache *c = irt_cache_new(a, 1000);
    irt_ids x = {0};
    assert_int_equal(irt_encode_cached(b, c, "hi", 2, false, &x), IRT_EINVAL);
    assert_int_equal(irt_encode_cached(a, NULL, "hi", 2, false, &x), IRT_OK); /* no cache */
    /* A piece larger than the whole budget is encoded, never kept. */
    char big[4096];
    for (size_t i = 0; i < sizeof big - 1; i++) big[i] = (char)('a' + i % 26);
    big[sizeof big - 1] = '\0';
    irt_cache *tiny = irt_cache_new(a, 10);
    assert_int_equal(irt_encode_cached(a, tiny, big, strlen(big), false, &x), IRT_OK);
    irt_cache_stats st;
    irt_cache_get_stats(tiny, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.tokens, 0);
    irt_ids_free(&x);
    irt_cache_free(tiny);
    irt_cache_free(c);
    irt_cache_free(NULL);
    irt_free(a);
    irt_free(b);
}

/* Text that packs few tokens into many bytes (3,000 spaces are 24 Qwen3 tokens)
 * is bounded by the byte budget, not the token one: held bytes stay within
 * IRT_CACHE_BYTES_PER_TOKEN per budgeted id, and the ids stay exact. */
__attribute__((unused)) static void test_bytes_bound_sparse_text(void **s) {
    (void)s;
    irt_tokenizer *t = load("qwen3");
    irt_cache *c = irt_cache_new(t, 1000);
    irt_ids want = {0}, got = {0};
    char *buf = malloc(4096);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 20; i++) {
            int n = snprintf(buf, 4096, "piece %d:", i);
            memset(buf + n, ' ', 3000);
            snprintf(buf + n + 3000, 4096 - (size_t)n - 3000, "end %d", i);
            assert_int_equal(irt_encode(t, buf, strlen(buf), false, &want), IRT_OK);
            assert_int_equal(irt_encode_cached(t, c, buf, strlen(buf), false, &got), IRT_OK);
            assert_same(&want, &got, "qwen3", buf);
            assert_true(want.len < 60);
        }
    }
    irt_cache_stats st;
    irt_cache_get_stats(c, &st);
    assert_int_equal(st.max_bytes, 1000 * IRT_CACHE_BYTES_PER_TOKEN);
    assert_true(st.bytes <= st.max_bytes);
    assert_true(st.tokens < 1000 / 2); /* the ids alone would have fit */
    assert_true(st.evictions > 0);
    assert_true(st.entries >= 2 && st.entries < 20);
    free(buf);
    irt_ids_free(&want);
    irt_ids_free(&got);
    irt_cache_free(c);
    irt_free(t);
}

/* Encodes per thread in the threaded tests. Under TSan every memory access is
 * checked and a tenth of them still races hits, misses, inserts and evictions
 * (TSan reports a race from the accesses' history, not only when they overlap). */
#ifdef __SANITIZE_THREAD__
#define PER_THREAD(n) ((n) / 10)
#else
#define PER_THREAD(n) (n)
#endif

typedef struct job {
    const irt_tokenizer *t;
    irt_cache *c;
    char **texts;
    irt_ids *want;
    size_t n;
    unsigned seed;
    int bad;
} job;

static void *worker(void *arg) {
    job *j = arg;
    irt_ids got = {0};
    for (int k = 0; k < PER_THREAD(300); k++) {
        size_t i = (size_t)rand_r(&j->seed) % j->n;
        if (irt_encode_cached(j->t, j->c, j->texts[i], strlen(j->texts[i]), false, &got) ||
            got.len != j->want[i].len ||
            memcmp(got.ids, j->want[i].ids, got.len * sizeof(uint32_t)))
            j->bad++;
    }
    irt_ids_free(&got);
    return NULL;
}

/* A thread keeps its encoding scratch between calls unless a call grew it past
 * the bound (1 MiB); then it is freed, and the thread's exit must not free it a
 * second time (it did when an earlier, small call had kept it: a double free at
 * exit, the gateway's tokenizer threads included). */
static void *small_then_large(void *arg) {
    const irt_tokenizer *t = arg;
    irt_ids x;
    memset(&x, 0, sizeof x);
    int rc = irt_encode(t, "hello world", 11, false, &x);
    size_t cap = 400000, len = 0;
    char *big = malloc(cap);
    for (unsigned i = 0; len + 16 < cap; i++) len += (size_t)sprintf(big + len, "w%u, ", i);
    rc |= irt_encode(t, big, len, false, &x);
    free(big);
    irt_ids_free(&x);
    return (void *)(intptr_t)rc;
}

static void test_scratch_freed_once_at_thread_exit(void **s) {
    (void)s;
    irt_tokenizer *t = load("qwen3");
    for (int k = 0; k < 2; k++) {
        pthread_t th;
        void *rc;
        assert_int_equal(pthread_create(&th, NULL, small_then_large, t), 0);
        assert_int_equal(pthread_join(th, &rc), 0);
        assert_int_equal((intptr_t)rc, 0);
    }
    irt_free(t);
}

/* Eight threads on one cache that holds only part of the texts: hits, misses,
 * inserts and evictions race, and every id is still exact. */
static void test_threads_share_one_cache(void **s) {
    (void)s;
    const family *f = &FAMILIES[0];
    irt_tokenizer *t = load(f->model);
    char *pool[40];
    size_t npool = load_texts(pool, 40);
    enum { N = 64 };
    char *texts[N];
    irt_ids want[N];
    unsigned seed = 11;
    for (size_t i = 0; i < N; i++) {
        texts[i] = malloc(1 << 16);
        mk_text(f, pool, npool, &seed, texts[i], 1 << 16);
        memset(&want[i], 0, sizeof want[i]);
        assert_int_equal(irt_encode(t, texts[i], strlen(texts[i]), false, &want[i]), 0);
    }
    irt_cache *c = irt_cache_new(t, 2000);
    pthread_t th[8];
    job jobs[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (job){.t = t, .c = c, .texts = texts, .want = want, .n = N, .seed = 100u + i};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &jobs[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].bad, 0);
    }
    irt_cache_stats st;
    irt_cache_get_stats(c, &st);
    assert_true(st.hits > 0 && st.evictions > 0 && st.tokens <= 2000);
    irt_cache_free(c);
    for (size_t i = 0; i < N; i++) {
        free(texts[i]);
        irt_ids_free(&want[i]);
    }
    for (size_t i = 0; i < npool; i++) free(pool[i]);
    irt_free(t);
}

/* ---- the word cache ---------------------------------------------------------------- */

/* A tokenizer whose word cache is off: every word merged, the reference. */
static irt_tokenizer *load_no_wcache(const char *model) {
    irt_tokenizer *t = load(model);
    hf_wcache_free(t->bpe.wcache);
    t->bpe.wcache = NULL;
    return t;
}

/* Each family's texts and conversation-like texts, through a fresh word cache
 * twice (the second pass finds its words held), against merging every word. */
__attribute__((unused)) static void test_word_cache_same_ids(void **s) {
    (void)s;
    char *pool[400];
    size_t npool = load_texts(pool, 400);
    assert_true(npool >= 100);
    char *buf = malloc(1 << 16);
    for (size_t fi = 0; fi < sizeof FAMILIES / sizeof *FAMILIES; fi++) {
        const family *f = &FAMILIES[fi];
        irt_tokenizer *ref = load_no_wcache(f->model), *t = load(f->model);
        assert_non_null(t->bpe.wcache);
        irt_ids want = {0}, got = {0};
        unsigned seed = 7;
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = 0; i < npool + 200; i++) {
                const char *text = pool[i % npool];
                if (i >= npool) {
                    unsigned sd = seed + (unsigned)i;
                    mk_text(f, pool, npool, &sd, buf, 1 << 16);
                    text = buf;
                }
                size_t n = strlen(text);
                for (int add = 0; add < 2; add++) {
                    assert_int_equal(irt_encode(ref, text, n, add, &want), 0);
                    assert_int_equal(irt_encode(t, text, n, add, &got), 0);
                    assert_same(&want, &got, f->model, text);
                }
            }
        }
        irt_ids_free(&want);
        irt_ids_free(&got);
        irt_free(ref);
        irt_free(t);
    }
    free(buf);
    for (size_t i = 0; i < npool; i++) free(pool[i]);
}

typedef struct wjob {
    irt_tokenizer *t;
    char **texts;
    irt_ids *want;
    size_t n;
    unsigned seed;
    int bad;
} wjob;

static void *wworker(void *arg) {
    wjob *j = arg;
    irt_ids got = {0};
    for (int k = 0; k < PER_THREAD(100); k++) {
        size_t i = (size_t)rand_r(&j->seed) % j->n;
        if (irt_encode(j->t, j->texts[i], strlen(j->texts[i]), false, &got) ||
            got.len != j->want[i].len ||
            memcmp(got.ids, j->want[i].ids, got.len * sizeof(uint32_t)))
            j->bad++;
    }
    irt_ids_free(&got);
    return NULL;
}

/* Eight threads on one tokenizer, its word cache cold at first: lookups and
 * fills of the same slots race, and every id is still exact. */
static void test_word_cache_threads(void **s) {
    (void)s;
    irt_tokenizer *t = load("qwen3");
    char *pool[60];
    size_t npool = load_texts(pool, 60);
    irt_ids want[60];
    /* the reference: the same tokenizer with its word cache off for a moment */
    struct hf_wcache *w = t->bpe.wcache;
    t->bpe.wcache = NULL;
    for (size_t i = 0; i < npool; i++) {
        memset(&want[i], 0, sizeof want[i]);
        assert_int_equal(irt_encode(t, pool[i], strlen(pool[i]), false, &want[i]), 0);
    }
    t->bpe.wcache = w;
    pthread_t th[8];
    wjob jobs[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (wjob){.t = t, .texts = pool, .want = want, .n = npool, .seed = 300u + i};
        assert_int_equal(pthread_create(&th[i], NULL, wworker, &jobs[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(jobs[i].bad, 0);
    }
    for (size_t i = 0; i < npool; i++) {
        free(pool[i]);
        irt_ids_free(&want[i]);
    }
    irt_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
/* Under TSan (make tsan-threaded) only the threads matter: the single-threaded
 * cases (the six tokenizers' property runs would take minutes, and each other
 * one loads Qwen3's tokenizer.json again) run in the release and ASan builds. */
#ifndef __SANITIZE_THREAD__
        cmocka_unit_test(test_same_ids_as_uncached),
        cmocka_unit_test(test_word_cache_same_ids),
        cmocka_unit_test(test_first_piece_keyed_apart),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_bytes_bound_sparse_text),
#endif
        cmocka_unit_test(test_threads_share_one_cache),
        cmocka_unit_test(test_scratch_freed_once_at_thread_exit),
        cmocka_unit_test(test_word_cache_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
