/* main.c: inferrail-gateway. */
#include <stdio.h>
#include <string.h>

#include "gateway/gateway.h"
#include "tokenize/ir_tokenize.h"

#if defined(__SANITIZE_THREAD__)
/* libzmq is not built with ThreadSanitizer: its I/O threads hand messages over
 * through its own lock-free pipes, which TSan cannot see, so it reports races
 * inside the library (never in our code, which touches a socket from one thread
 * only). Reports whose stack runs through libzmq are suppressed. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void) {
    return "called_from_lib:libzmq.so.5\nrace:libzmq.so.5\n";
}
#endif

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "tokenize") == 0) return irt_cli_main(argc - 1, argv + 1);
    return gw_main(argc, argv);
}
