/* KV cache groups (hybrid models): the decoder reads group_idx and
 * kv_cache_spec_kind in both encodings, and irx_ev_group_follow keeps one group per
 * replica, full attention's, so a sliding window or Mamba group dropping a block
 * never takes it out of the view (tests/fixtures/kv_events/map_hybrid.msgpack and
 * array_hybrid.msgpack, from tests/tools/gen-kv-events.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "index/ir_index.h"

static int decode(const char *name, irx_ev_batch *b, char *err, size_t errlen) {
    const char *dir = getenv("IR_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/kv_events/%s", dir ? dir : "tests/fixtures", name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    static unsigned char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unsigned char *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
    memcpy(copy, buf, len);
    int rc = irx_ev_decode(copy, len, b, err, errlen);
    free(copy);
    return rc;
}

static void decodes_groups(void **state) {
    (void)state;
    irx_ev_batch b;
    char err[128] = "";
    assert_int_equal(decode("map_hybrid.msgpack", &b, err, sizeof err), 0);
    assert_int_equal(b.nev, 3);
    assert_int_equal(b.ev[0].group_idx, 0);
    assert_int_equal(b.ev[0].kind, IRX_KIND_OTHER);
    assert_int_equal(b.ev[1].group_idx, 1);
    assert_int_equal(b.ev[1].kind, IRX_KIND_FULL);
    assert_int_equal(b.ev[2].type, IRX_EV_REMOVED);
    assert_int_equal(b.ev[2].group_idx, 0);
    irx_ev_batch_free(&b);
    assert_int_equal(decode("array_hybrid.msgpack", &b, err, sizeof err), 0);
    assert_int_equal(b.nev, 4);
    assert_int_equal(b.ev[0].kind, IRX_KIND_OTHER); /* mamba */
    assert_int_equal(b.ev[1].group_idx, 1);
    assert_int_equal(b.ev[1].kind, IRX_KIND_FULL);
    assert_int_equal(b.ev[2].group_idx, 0);
    assert_int_equal(b.ev[3].group_idx, 1);
    irx_ev_batch_free(&b);
    /* Older fixtures: no group, or group 0 announced as full attention. */
    assert_int_equal(decode("array_int.msgpack", &b, err, sizeof err), 0);
    for (size_t i = 0; i < b.nev; i++) assert_int_equal(b.ev[i].group_idx, -1);
    irx_ev_batch_free(&b);
    assert_int_equal(decode("map_bytes.msgpack", &b, err, sizeof err), 0);
    assert_int_equal(b.ev[1].group_idx, 0);
    assert_int_equal(b.ev[1].kind, IRX_KIND_FULL);
    assert_int_equal(b.ev[2].group_idx, 0);
    irx_ev_batch_free(&b);
    /* A group that is not an index, a kind that is not a string. */
    assert_int_equal(decode("bad_group.msgpack", &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "group_idx"));
    assert_int_equal(decode("bad_kind.msgpack", &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "kv_cache_spec_kind"));
}

static irx_ev ev(irx_ev_type t, int32_t group, irx_group_kind kind) {
    return (irx_ev){.type = t, .group_idx = group, .kind = kind};
}

static void follows_full_attention(void **state) {
    (void)state;
    int32_t g = IRX_GROUP_UNKNOWN;
    /* No group at all: everything applies, nothing is learned. */
    irx_ev plain = ev(IRX_EV_STORED, -1, IRX_KIND_NONE);
    assert_true(irx_ev_group_follow(&g, &plain));
    assert_int_equal(g, IRX_GROUP_UNKNOWN);
    /* Group 0 is a sliding window: skipped; group 1 announces full attention. */
    irx_ev sw = ev(IRX_EV_STORED, 0, IRX_KIND_OTHER);
    assert_false(irx_ev_group_follow(&g, &sw));
    irx_ev full = ev(IRX_EV_STORED, 1, IRX_KIND_FULL);
    assert_true(irx_ev_group_follow(&g, &full));
    assert_int_equal(g, 1);
    irx_ev rm0 = ev(IRX_EV_REMOVED, 0, IRX_KIND_NONE), rm1 = ev(IRX_EV_REMOVED, 1, IRX_KIND_NONE);
    assert_false(irx_ev_group_follow(&g, &rm0));
    assert_true(irx_ev_group_follow(&g, &rm1));
    /* A second full-attention group holds the same blocks: the first one stays. */
    irx_ev full2 = ev(IRX_EV_STORED, 2, IRX_KIND_FULL);
    assert_false(irx_ev_group_follow(&g, &full2));
    assert_int_equal(g, 1);
    irx_ev clear = ev(IRX_EV_CLEARED, -1, IRX_KIND_NONE);
    assert_true(irx_ev_group_follow(&g, &clear));
    /* Groups but never a kind: group 0. */
    int32_t h = IRX_GROUP_UNKNOWN;
    irx_ev s0 = ev(IRX_EV_STORED, 0, IRX_KIND_NONE), s1 = ev(IRX_EV_STORED, 1, IRX_KIND_NONE);
    assert_true(irx_ev_group_follow(&h, &s0));
    assert_false(irx_ev_group_follow(&h, &s1));
    assert_false(irx_ev_group_follow(&h, &rm1));
}

/* Applied to a replica: the window's removal of the first block leaves the view
 * whole when groups are followed, and would have cut it otherwise. */
static uint32_t prefix_after(const char *fixture, bool follow) {
    irx_ev_batch b;
    char err[128];
    assert_int_equal(decode(fixture, &b, err, sizeof err), 0);
    irx_index *ix = irx_new(2);
    assert_int_equal(irx_ev_track(ix, 0, "m", 16), 0);
    int32_t g = IRX_GROUP_UNKNOWN;
    irx_ev_counts c = {0};
    for (size_t i = 0; i < b.nev; i++)
        if (!follow || irx_ev_group_follow(&g, &b.ev[i])) irx_ev_apply(ix, 0, &b.ev[i], &c);
    /* The prefix a lookup of the two blocks' tokens sees, by the gateway's hashes. */
    uint32_t t[32], out[2];
    for (uint32_t i = 0; i < 16; i++) t[i] = 1000 + i, t[16 + i] = 2000 + i;
    ir_hash128 h[2];
    ir_block_hash_chain(ir_block_hash_root("m", NULL, NULL), t, 32, 16, h, 2);
    irx_lookup(ix, h, 2, out);
    irx_free(ix);
    irx_ev_batch_free(&b);
    return out[0];
}

static void view_follows_one_group(void **state) {
    (void)state;
    assert_int_equal(prefix_after("map_hybrid.msgpack", true), 2);
    assert_int_equal(prefix_after("map_hybrid.msgpack", false), 0);
    /* Full attention removed its second block: the first is left; Mamba's removal of
     * the first is ignored. */
    assert_int_equal(prefix_after("array_hybrid.msgpack", true), 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decodes_groups),
        cmocka_unit_test(follows_full_attention),
        cmocka_unit_test(view_follows_one_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
