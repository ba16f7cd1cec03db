/* replay.c: runs a fuzz target over its corpus without libFuzzer.
 *
 * Linked with one tests/fuzz/fuzz_*.c in place of -fsanitize=fuzzer, it calls
 * LLVMFuzzerTestOneInput once per file of each directory (or file) named on the
 * command line, in name order, so every input a fuzzer once kept (and every
 * crash it once found, saved into the corpus) is replayed by `make test` under
 * the release and the ASan builds, with gcc. A crash aborts the run; an empty
 * corpus is an error, so a target cannot pass by having nothing to replay.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs larger than this are refused, as libFuzzer's -max_len would. */
#define REPLAY_MAX_INPUT (1u << 20)

static int replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *data = malloc(REPLAY_MAX_INPUT);
    size_t n = data ? fread(data, 1, REPLAY_MAX_INPUT, f) : 0;
    int more = fgetc(f) != EOF;
    fclose(f);
    if (!data || more) {
        fprintf(stderr, "replay: %s: %s\n", path, data ? "larger than 1 MiB" : "out of memory");
        free(data);
        return -1;
    }
    /* An exact-size copy, so ASan sees a read past the input's end. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(data);
        return -1;
    }
    memcpy(exact, data, n);
    free(data);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Replays every regular file of dir; returns how many, or -1 on an error. */
static long replay_dir(const char *dir) {
    struct dirent **names;
    int n = scandir(dir, &names, NULL, by_name);
    if (n < 0) {
        perror(dir);
        return -1;
    }
    long count = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (replay_file(path) != 0)
                count = -1;
            else if (count >= 0)
                count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        long n = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : (replay_file(argv[i]) == 0 ? 1 : -1);
        if (n < 0) return 1;
        total += n;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    printf("replay: %ld inputs, no crash\n", total);
    return 0;
}
