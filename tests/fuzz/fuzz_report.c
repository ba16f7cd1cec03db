/* fuzz_report: the engine-report reader (src/load/report.c) on arbitrary bytes,
 * given by length with no NUL after them. A readable page names an engine and
 * has sane numbers (counts finite and >= 0, KV usage in [0, 1], at least one
 * rank); an unreadable one always says why; reading twice gives the same. One
 * data-parallel rank's report (ranks 0 and 1) obeys the same (a rank the page
 * lacks while it labels others is IRL_REPORT_NO_RANK, with a reason), and holds a
 * part of the whole engine's running and waiting when both are readable. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "load/ir_load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool count_ok(double v) {
    return isfinite(v) && v >= 0;
}

/* Rank `rank` of the page against the whole engine's report (rc_all, all). */
static void check_rank(const char *page, size_t size, int64_t rank, int rc_all,
                       const irl_report *all) {
    irl_report r;
    char why[128] = "";
    int rc = irl_report_parse_rank(page, size, rank, &r, why, sizeof why);
    if (rc == -1 || rc == IRL_REPORT_NO_RANK) {
        if (!why[0]) abort();
        return;
    }
    if (rc != 0 || r.ranks == 0 || !count_ok(r.running) || !count_ok(r.waiting)) abort();
    if (!(r.kv_usage >= 0 && r.kv_usage <= 1)) abort();
    if (rc_all == 0 && r.engine == all->engine &&
        (r.running > all->running || r.waiting > all->waiting))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *page = malloc(size ? size : 1);
    if (!page) return 0;
    memcpy(page, data, size);
    irl_report r, again;
    char why[128] = "", why2[128] = "";
    int rc = irl_report_parse(page, size, &r, why, sizeof why);
    int rc2 = irl_report_parse(page, size, &again, why2, sizeof why2);
    if (rc != rc2 || strcmp(why, why2) != 0) abort();
    if (rc == 0) {
        if (r.engine != IRL_ENGINE_VLLM && r.engine != IRL_ENGINE_SGLANG) abort();
        if (r.ranks == 0 || !count_ok(r.running) || !count_ok(r.waiting)) abort();
        if (!(r.kv_usage >= 0 && r.kv_usage <= 1)) abort();
        if (r.has_prefix && (!count_ok(r.prefix_queries) || !count_ok(r.prefix_hits))) abort();
        if (r.has_preemptions && !count_ok(r.preemptions)) abort();
        if (memcmp(&r, &again, sizeof r) != 0) abort();
        if (irl_report_restarted(&r, &again)) abort();
        (void)irl_report_capacity_blocks(&r, 16);
    } else if (rc != -1 || !why[0]) {
        abort();
    }
    if (r.malformed > size) abort();
    check_rank(page, size, 0, rc, &r);
    check_rank(page, size, 1, rc, &r);
    free(page);
    return 0;
}
