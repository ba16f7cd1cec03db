/* main.c: inferrail-gateway. */
#include <stdio.h>
#include <string.h>

#include "gateway/gateway.h"
#include "tokenize/ir_tokenize.h"

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "tokenize") == 0) return irt_cli_main(argc - 1, argv + 1);
    return gw_main(argc, argv);
}
