/* main.c: inferrail-bench, the benchmark harness. */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

static void usage(FILE *f) {
    fprintf(f,
            "Usage: inferrail-bench COMMAND [options]\n"
            "\n"
            "Commands:\n"
            "  run           one open-loop run of a workload against a base URL (or several)\n"
            "  compare       policies side by side on fresh gateways and simulators\n"
            "  capacity      the highest rate at which the SLO holds\n"
            "  report        a Markdown report with gnuplot charts from result folders\n"
            "  workload      print a workload's requests (determinism checks)\n"
            "  calibrate     fit cost_model's prefill shape and decode time on an engine\n"
            "  streams       N concurrent SSE streams against one server; total time, errors\n"
            "  soak          many requests at fixed concurrency; resident memory growth of a pid\n"
            "  rps           closed-loop requests per second at fixed concurrency\n"
            "  tokenize-sim  builtin:sim tokenizer throughput next to memcpy\n"
            "\n"
            "Run 'inferrail-bench COMMAND --help' for a command's options;\n"
            "'inferrail-bench --version' prints the version and commit.\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0) {
        printf("inferrail-bench %s (commit %s)\n", ir_version(), ir_commit());
        return 0;
    }
    if (strcmp(cmd, "run") == 0) return bench_run_main(argc - 1, argv + 1);
    if (strcmp(cmd, "compare") == 0) return bench_compare_main(argc - 1, argv + 1);
    if (strcmp(cmd, "capacity") == 0) return bench_capacity_main(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0) return bench_report_main(argc - 1, argv + 1);
    if (strcmp(cmd, "workload") == 0) return bench_workload_main(argc - 1, argv + 1);
    if (strcmp(cmd, "calibrate") == 0) return bench_calibrate_main(argc - 1, argv + 1);
    if (strcmp(cmd, "tokenize-sim") == 0) return bench_tokenize_sim(argc - 1, argv + 1);
    if (strcmp(cmd, "streams") == 0) return bench_streams(argc - 1, argv + 1);
    if (strcmp(cmd, "soak") == 0) return bench_soak(argc - 1, argv + 1);
    if (strcmp(cmd, "rps") == 0) return bench_rps(argc - 1, argv + 1);
    fprintf(stderr, "inferrail-bench: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
