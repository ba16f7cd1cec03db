/* gw_main.c: the gateway's command line. */
#include <stdio.h>
#include <string.h>

#include "gateway/gateway.h"

static void usage(FILE *f) {
    fprintf(f, "Usage: inferrail-gateway --config FILE [--check]\n"
               "       inferrail-gateway tokenize --tokenizer SPEC [--jsonl] < INPUT\n");
}

int gw_main(int argc, char **argv) {
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    usage(stderr);
    fprintf(stderr, "inferrail-gateway: the proxy is not built yet\n");
    return 2;
}
