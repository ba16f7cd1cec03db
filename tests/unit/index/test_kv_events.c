/* The KV event decoder against batches written as vLLM writes them
 * (tests/tools/gen-kv-events.py made tests/fixtures/kv_events/): both encodings,
 * integer and byte hashes, missing trailing defaults, newer fields, bad payloads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "index/ev_fields.h"
#include "index/index_internal.h"
#include "index/ir_index.h"

static unsigned char *slurp(const char *name, size_t *len) {
    const char *dir = getenv("IR_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/kv_events/%s", dir ? dir : "tests/fixtures", name);
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    static unsigned char buf[1 << 16];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    unsigned char *copy = malloc(*len ? *len : 1); /* exact size: ASan sees overreads */
    memcpy(copy, buf, *len);
    return copy;
}

static int decode(const char *name, irx_ev_batch *b, char *err, size_t errlen) {
    size_t len;
    unsigned char *p = slurp(name, &len);
    int rc = irx_ev_decode(p, len, b, err, errlen);
    free(p); /* the batch owns copies */
    return rc;
}

static void tokens_are(const irx_ev *ev, uint32_t first_block_base) {
    assert_int_equal(ev->ntokens, ev->nblocks * 16);
    for (uint32_t i = 0; i < ev->ntokens; i++)
        assert_int_equal(ev->tokens[i], first_block_base + (i / 16) * 1000 + i % 16);
}

static bool same(ir_hash128 a, ir_hash128 b) {
    return a.lo == b.lo && a.hi == b.hi;
}

static void array_encoding(void **state) {
    (void)state;
    irx_ev_batch b;
    char err[128];
    assert_int_equal(decode("array_int.msgpack", &b, err, sizeof err), 0);
    assert_true(b.ts == 1700000000.5);
    assert_int_equal(b.dp_rank, -1);
    assert_int_equal(b.nev, 4);
    const irx_ev *s = &b.ev[0], *c = &b.ev[1];
    assert_int_equal(s->type, IRX_EV_STORED);
    assert_int_equal(s->nblocks, 2);
    assert_false(s->has_parent);
    assert_int_equal(s->block_size, 16);
    assert_int_equal(s->medium, IRX_MEDIUM_GPU);
    assert_null(s->lora_name);
    assert_null(s->cache_salt);
    tokens_are(s, 1000);
    assert_true(c->has_parent);
    assert_true(same(c->parent, s->blocks[1])); /* the same integer, the same key */
    assert_false(same(s->blocks[0], s->blocks[1]));
    tokens_are(c, 3000);
    assert_int_equal(b.ev[2].type, IRX_EV_REMOVED);
    assert_true(same(b.ev[2].blocks[0], c->blocks[0]));
    assert_int_equal(b.ev[3].type, IRX_EV_CLEARED);
    irx_ev_batch_free(&b);
}

static void array_signed_and_newer(void **state) {
    (void)state;
    irx_ev_batch b;
    char err[128];
    assert_int_equal(decode("array_signed_newer.msgpack", &b, err, sizeof err), 0);
    assert_int_equal(b.dp_rank, 3);
    assert_int_equal(b.nev, 3);
    assert_int_equal(b.ev[0].medium, IRX_MEDIUM_GPU); /* missing: the default */
    assert_int_equal(b.ev[1].medium, IRX_MEDIUM_CPU);
    assert_true(same(b.ev[1].parent, b.ev[0].blocks[1]));
    assert_int_equal(b.ev[2].type, IRX_EV_REMOVED);
    assert_int_equal(b.ev[2].medium, IRX_MEDIUM_GPU);
    assert_true(same(b.ev[2].blocks[0], b.ev[0].blocks[0]));
    irx_ev_batch_free(&b);
}

static void map_encoding(void **state) {
    (void)state;
    irx_ev_batch b;
    char err[128];
    assert_int_equal(decode("map_bytes.msgpack", &b, err, sizeof err), 0);
    assert_true(b.ts == 1700000002.0);
    assert_int_equal(b.dp_rank, 1);
    assert_int_equal(b.nev, 4);
    assert_int_equal(b.ev[0].nblocks, 2);
    assert_string_equal(b.ev[0].cache_salt, "salt-1");
    tokens_are(&b.ev[0], 1000);
    assert_true(same(b.ev[1].parent, b.ev[0].blocks[1]));
    assert_null(b.ev[1].cache_salt);
    tokens_are(&b.ev[1], 3000);
    assert_int_equal(b.ev[2].type, IRX_EV_REMOVED);
    assert_true(same(b.ev[2].blocks[0], b.ev[1].blocks[0]));
    assert_int_equal(b.ev[3].type, IRX_EV_CLEARED);
    irx_ev_batch_free(&b);

    assert_int_equal(decode("map_lora.msgpack", &b, err, sizeof err), 0);
    assert_int_equal(b.nev, 1);
    assert_int_equal(b.ev[0].type, IRX_EV_STORED); /* the tag last, keys in any order */
    assert_string_equal(b.ev[0].lora_name, "my-adapter");
    assert_null(b.ev[0].cache_salt); /* the adapter's name is not a salt */
    assert_int_equal(b.ev[0].medium, IRX_MEDIUM_GPU);
    irx_ev_batch_free(&b);
}

/* vLLM's OffloadingConnector: CPU copies without parent or token ids (block_size the
 * offloaded block's, or 0), and the CPU tier's evictions. */
static void offload_events(void **state) {
    (void)state;
    irx_ev_batch b;
    char err[128];
    assert_int_equal(decode("map_offload.msgpack", &b, err, sizeof err), 0);
    assert_int_equal(b.nev, 3);
    assert_int_equal(b.ev[0].type, IRX_EV_STORED);
    assert_int_equal(b.ev[0].medium, IRX_MEDIUM_CPU);
    assert_int_equal(b.ev[0].nblocks, 2);
    assert_int_equal(b.ev[0].ntokens, 0);
    assert_false(b.ev[0].has_parent);
    assert_int_equal(b.ev[0].block_size, 16);
    assert_int_equal(b.ev[1].block_size, 0);
    assert_int_equal(b.ev[1].ntokens, 0);
    assert_int_equal(b.ev[2].type, IRX_EV_REMOVED);
    assert_int_equal(b.ev[2].medium, IRX_MEDIUM_CPU);
    assert_true(same(b.ev[2].blocks[0], b.ev[0].blocks[0]));
    irx_ev_batch_free(&b);
}

/* Integer 7 and bytes 0x07 are different keys; -1 and 2^64-1 are the same bits. */
static void keys_are_opaque(void **state) {
    (void)state;
    const unsigned char a[] = {0x92, 0xcb, 0,   0,    0,    0,    0,    0,    0,    0,   0x91,
                               0x93, 0xac, 'B', 'l',  'o',  'c',  'k',  'R',  'e',  'm', 'o',
                               'v',  'e',  'd', 0x93, 0x07, 0xc4, 0x01, 0x07, 0xff, 0xc0};
    irx_ev_batch b;
    char err[128];
    assert_int_equal(irx_ev_decode(a, sizeof a, &b, err, sizeof err), 0);
    assert_int_equal(b.ev[0].nblocks, 3);
    assert_false(same(b.ev[0].blocks[0], b.ev[0].blocks[1]));
    irx_ev_batch_free(&b);
    const unsigned char u[] = {0x92, 0x00, 0x91, 0x93, 0xac, 'B',  'l',  'o',  'c',  'k',
                               'R',  'e',  'm',  'o',  'v',  'e',  'd',  0x92, 0xff, 0xcf,
                               0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc0};
    assert_int_equal(irx_ev_decode(u, sizeof u, &b, err, sizeof err), 0);
    assert_true(same(b.ev[0].blocks[0], b.ev[0].blocks[1]));
    irx_ev_batch_free(&b);
}

static void bad_payloads(void **state) {
    (void)state;
    const char *bad[] = {"bad_truncated.msgpack",      "bad_unknown_type.msgpack",
                         "bad_hash_type.msgpack",      "bad_huge_count.msgpack",
                         "bad_no_events.msgpack",      "bad_trailing.msgpack",
                         "bad_zero_block_size.msgpack"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        irx_ev_batch b;
        char err[128] = "";
        assert_int_equal(decode(bad[i], &b, err, sizeof err), -1);
        assert_true(err[0] != '\0');
        assert_int_equal(b.nev, 0);
        assert_null(b.mem);
    }
    irx_ev_batch b;
    char err[64];
    assert_int_equal(irx_ev_decode("", 0, &b, err, sizeof err), -1);
    /* A BlockStored without token_ids cannot be placed: refused. */
    const unsigned char s[] = {0x92, 0x00, 0x91, 0x93, 0xab, 'B', 'l',  'o',  'c', 'k',
                               'S',  't',  'o',  'r',  'e',  'd', 0x91, 0x01, 0xc0};
    assert_int_equal(irx_ev_decode(s, sizeof s, &b, err, sizeof err), -1);
}

static void pack_s(msgpack_packer *pk, const char *s) {
    msgpack_pack_str(pk, strlen(s));
    msgpack_pack_str_body(pk, s, strlen(s));
}

/* {"ts": 0, "events": [{"block_hashes": [1], "token_ids": "x", "type": TYPE}]}: the type
 * last, after a field that only BlockStored reads, and reads it wrong. */
static int type_last(const char *type, irx_ev_batch *b, char *err, size_t errlen) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 2);
    pack_s(&pk, "ts");
    msgpack_pack_uint8(&pk, 0);
    pack_s(&pk, "events");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 3);
    pack_s(&pk, "block_hashes");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint8(&pk, 1);
    pack_s(&pk, "token_ids");
    pack_s(&pk, "x");
    pack_s(&pk, "type");
    pack_s(&pk, type);
    int rc = irx_ev_decode(sb.data, sb.size, b, err, errlen);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

/* The decoder reads as it goes (ADR 0019): an event's type may come after its fields,
 * the batch's own errors come before its events', and bytes msgpack-c's template
 * would misread are refused. */
static void streaming_order(void **state) {
    (void)state;
    irx_ev_batch b;
    char err[128] = "";
    assert_int_equal(type_last("BlockRemoved", &b, err, sizeof err), 0);
    assert_int_equal(b.nev, 1);
    assert_int_equal(b.ev[0].type, IRX_EV_REMOVED);
    assert_int_equal(b.ev[0].nblocks, 1);
    assert_int_equal(b.ev[0].ntokens, 0);
    assert_null(b.ev[0].tokens);
    irx_ev_batch_free(&b);
    assert_int_equal(type_last("BlockStored", &b, err, sizeof err), -1);
    assert_string_equal(err, "token_ids: not an array");
    /* {"events": [7], "ts": "x"}: no ts, reported before the bad event after it */
    const unsigned char t[] = {0x82, 0xa6, 'e',  'v', 'e', 'n',  't', 's',
                               0x91, 0x07, 0xa2, 't', 's', 0xa1, 'x'};
    assert_int_equal(irx_ev_decode(t, sizeof t, &b, err, sizeof err), -1);
    assert_string_equal(err, "batch: no ts");
    /* [0, [], nil, ext]: an ext where nothing is read is skipped, but one whose length
     * (2^32 - 1) wraps to 0 in the template is refused */
    const unsigned char ok[] = {0x94, 0x00, 0x90, 0xc0, 0xd4, 0x01, 0x00};
    assert_int_equal(irx_ev_decode(ok, sizeof ok, &b, err, sizeof err), 0);
    irx_ev_batch_free(&b);
    const unsigned char wrap[] = {0x94, 0x00, 0x90, 0xc0, 0xc9, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(irx_ev_decode(wrap, sizeof wrap, &b, err, sizeof err), -1);
    assert_string_equal(err, "not one well-formed msgpack value");
    /* an array that claims more elements than the bytes left: refused as it is read */
    const unsigned char big[] = {0x92, 0x00, 0xdd, 0x10, 0x00, 0x00, 0x00, 0xc0};
    assert_int_equal(irx_ev_decode(big, sizeof big, &b, err, sizeof err), -1);
    assert_string_equal(err, "not one well-formed msgpack value");
}

/* [0, [["BlockStored", [1], nil, TOKENS, 16]]] with TOKENS packed by `pack`: n ids in
 * one form; without block_size (refused), the payload ends with the token array. */
static msgpack_sbuffer stored_with(void (*pack)(msgpack_packer *, uint32_t), uint32_t n,
                                   bool bsize) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 2);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_array(&pk, 1);
    msgpack_pack_array(&pk, bsize ? 5 : 4);
    pack_s(&pk, "BlockStored");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_nil(&pk);
    msgpack_pack_array(&pk, n);
    for (uint32_t i = 0; i < n; i++) pack(&pk, i);
    if (bsize) msgpack_pack_uint8(&pk, 16);
    return sb;
}

static void as_fix(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_fix_uint8(pk, (uint8_t)i);
}
static void as_u8(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_fix_uint8(pk, (uint8_t)(200 + i));
}
static void as_u16(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_fix_uint16(pk, (uint16_t)(40000 + i));
}
static void as_u32(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_fix_uint32(pk, 4000000000u + i);
}
static void as_u64(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_fix_uint64(pk, 7 + i);
}
static void as_i8(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_fix_int8(pk, (int8_t)i);
}
static void as_mixed(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_uint32(pk, i * 9973u); /* msgpack-c's shortest form of each */
}
static void as_neg(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_int32(pk, i == 9 ? -1 : (int32_t)i);
}
static void as_big(msgpack_packer *pk, uint32_t i) {
    msgpack_pack_uint64(pk, i == 3 ? 1ull << 32 : i);
}
static void as_float(msgpack_packer *pk, uint32_t i) {
    if (i == 15)
        msgpack_pack_double(pk, 1.0);
    else
        msgpack_pack_uint8(pk, (uint8_t)i);
}

/* Token ids read outside msgpack-c's template (ADR 0024) decode as the template reads
 * them, in every integer form, with their errors; truncated anywhere, too. */
static void token_forms(void **state) {
    (void)state;
    void (*forms[])(msgpack_packer *, uint32_t) = {as_fix, as_u8,    as_u16, as_u32, as_u64,
                                                   as_i8,  as_mixed, as_neg, as_big, as_float};
    for (size_t f = 0; f < 2 * sizeof forms / sizeof forms[0]; f++) {
        msgpack_sbuffer sb = stored_with(forms[f / 2], 16, f % 2);
        for (size_t len = 0; len <= sb.size; len++) {
            irx_ev_batch a, t;
            char ea[128] = "", et[128] = "";
            int ra = irx_ev_decode(sb.data, len, &a, ea, sizeof ea);
            int rt = irx_ev_decode_template(sb.data, len, &t, et, sizeof et);
            assert_int_equal(ra, rt);
            assert_string_equal(ea, et);
            assert_int_equal(a.nev, t.nev);
            if (ra == 0) {
                assert_int_equal(len, sb.size);
                assert_int_equal(a.ev[0].ntokens, 16);
                assert_memory_equal(a.ev[0].tokens, t.ev[0].tokens, 16 * sizeof(uint32_t));
            }
            irx_ev_batch_free(&a);
            irx_ev_batch_free(&t);
        }
        msgpack_sbuffer_destroy(&sb);
    }
    /* the values themselves, not only agreement */
    msgpack_sbuffer sb = stored_with(as_u32, 16, true);
    irx_ev_batch b;
    char err[128];
    assert_int_equal(irx_ev_decode(sb.data, sb.size, &b, err, sizeof err), 0);
    assert_int_equal(b.ev[0].tokens[0], 4000000000u);
    assert_int_equal(b.ev[0].tokens[15], 4000000015u);
    irx_ev_batch_free(&b);
    msgpack_sbuffer_destroy(&sb);
    sb = stored_with(as_big, 16, true);
    assert_int_equal(irx_ev_decode(sb.data, sb.size, &b, err, sizeof err), -1);
    assert_string_equal(err, "token_ids: not a token id");
    msgpack_sbuffer_destroy(&sb);
}

/* ---- the usual shapes read straight from the bytes (ADR 0026) ---------------------- */

static bool str_same(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

static void events_equal(const irx_ev *a, const irx_ev *b) {
    assert_int_equal(a->type, b->type);
    assert_int_equal(a->nblocks, b->nblocks);
    assert_int_equal(a->has_parent, b->has_parent);
    assert_true(same(a->parent, b->parent));
    assert_int_equal(a->ntokens, b->ntokens);
    assert_int_equal(a->block_size, b->block_size);
    assert_int_equal(a->medium, b->medium);
    assert_int_equal(a->group_idx, b->group_idx);
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(!a->blocks, !b->blocks);
    assert_int_equal(!a->tokens, !b->tokens);
    if (a->nblocks) assert_memory_equal(a->blocks, b->blocks, a->nblocks * sizeof *a->blocks);
    if (a->ntokens) assert_memory_equal(a->tokens, b->tokens, a->ntokens * sizeof *a->tokens);
    assert_true(str_same(a->lora_name, b->lora_name));
    assert_true(str_same(a->cache_salt, b->cache_salt));
}

/* irx_ev_decode (the shapes first) and the template alone give the same answer on p;
 * returns whether the shape reader read it. */
static bool agrees(const unsigned char *p, size_t len) {
    irx_ev_batch a, t;
    char ea[128] = "", et[128] = "";
    int ra = irx_ev_decode(p, len, &a, ea, sizeof ea);
    int rt = irx_ev_decode_template(p, len, &t, et, sizeof et);
    assert_int_equal(ra, rt);
    assert_string_equal(ea, et);
    assert_int_equal(a.nev, t.nev);
    assert_int_equal(a.dp_rank, t.dp_rank);
    assert_memory_equal(&a.ts, &t.ts, sizeof a.ts);
    for (size_t i = 0; i < a.nev; i++) events_equal(&a.ev[i], &t.ev[i]);
    irx_ev_batch_free(&a);
    irx_ev_batch_free(&t);
    ir_arena *arena = ir_arena_new(4096, 16 * len + (1u << 20));
    irx_ev_batch s = {.dp_rank = -1};
    bool read = irx_ev_decode_shapes(p, len, arena, &s);
    ir_arena_free(arena);
    if (read) assert_int_equal(rt, 0); /* never a payload the template refuses */
    return read;
}

/* Every prefix of p and every one-byte change of it (a few values a byte): the
 * same answer both ways. */
static void changes_agree(unsigned char *p, size_t len) {
    static const int delta[] = {0x01, 0x80, 0x10, 0x20};
    static const unsigned char to[] = {0x00, 0x7f, 0x90, 0xa0, 0xc0, 0xcc, 0xcf, 0xd3, 0xdc, 0xff};
    for (size_t n = 0; n < len; n++) {
        unsigned char *cut = malloc(n ? n : 1); /* exact size: ASan sees overreads */
        memcpy(cut, p, n);
        agrees(cut, n);
        free(cut);
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char was = p[i];
        for (size_t k = 0; k < sizeof delta / sizeof delta[0]; k++)
            p[i] = (unsigned char)(was ^ delta[k]), agrees(p, len);
        for (size_t k = 0; k < sizeof to; k++) p[i] = to[k], agrees(p, len);
        p[i] = was;
    }
}

/* Every fixture, every prefix of it and every one-byte change of it (a few values a
 * byte): the same answer both ways; the shapes vLLM writes are read by the shape
 * reader, not handed to the template. */
static void shapes_agree_with_the_template(void **state) {
    (void)state;
    static const struct {
        const char *name;
        bool shaped; /* one of the usual shapes */
    } fx[] = {
        {"array_int.msgpack", true},         {"array_signed_newer.msgpack", false},
        {"array_hybrid.msgpack", true},      {"map_bytes.msgpack", false},
        {"map_hybrid.msgpack", true},        {"map_offload.msgpack", true},
        {"map_lora.msgpack", false},         {"bad_group.msgpack", false},
        {"bad_hash_type.msgpack", false},    {"bad_huge_count.msgpack", false},
        {"bad_kind.msgpack", false},         {"bad_no_events.msgpack", false},
        {"bad_trailing.msgpack", false},     {"bad_truncated.msgpack", false},
        {"bad_unknown_type.msgpack", false}, {"bad_zero_block_size.msgpack", false},
    };
    /* newer vLLM's map with every field, extra_keys nil for each block: read */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map(&pk, 2);
    pack_s(&pk, "ts");
    msgpack_pack_double(&pk, 1.5);
    pack_s(&pk, "events");
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 11);
    const char *keys[] = {
        "type",   "block_hashes", "parent_block_hash", "token_ids", "block_size",        "lora_id",
        "medium", "lora_name",    "extra_keys",        "group_idx", "kv_cache_spec_kind"};
    for (int k = 0; k < 11; k++) {
        pack_s(&pk, keys[k]);
        if (k == 0) pack_s(&pk, "BlockStored");
        if (k == 1)
            msgpack_pack_array(&pk, 2), msgpack_pack_uint64(&pk, 1ull << 63),
                msgpack_pack_int64(&pk, -2);
        if (k == 2 || k == 5 || k == 7) msgpack_pack_nil(&pk);
        if (k == 3) {
            msgpack_pack_array(&pk, 32);
            for (uint32_t i = 0; i < 32; i++) msgpack_pack_uint32(&pk, i * 4099u);
        }
        if (k == 4) msgpack_pack_uint8(&pk, 16);
        if (k == 6) pack_s(&pk, "GPU");
        if (k == 8) msgpack_pack_array(&pk, 2), msgpack_pack_nil(&pk), msgpack_pack_nil(&pk);
        if (k == 9) msgpack_pack_uint8(&pk, 0);
        if (k == 10) pack_s(&pk, "full_attention");
    }
    assert_true(agrees((const unsigned char *)sb.data, sb.size));
    msgpack_sbuffer_destroy(&sb);
    for (size_t f = 0; f < sizeof fx / sizeof fx[0]; f++) {
        size_t len;
        unsigned char *p = slurp(fx[f].name, &len);
        if (agrees(p, len) != fx[f].shaped) fail_msg("%s: shapes", fx[f].name);
        changes_agree(p, len);
        free(p);
    }
}

/* One-block BlockRemoved events, as vLLM evicts (read whole by the shape reader's
 * fast path), in both encodings, with hashes of every form, among other events:
 * read, and the same as the template's, whole, cut and changed byte by byte. */
static void one_block_removals(void **state) {
    (void)state;
    for (int form = 0; form < 10; form++) {
        bool map = form % 2;
        msgpack_sbuffer sb;
        msgpack_sbuffer_init(&sb);
        msgpack_packer pk;
        msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
        msgpack_pack_array(&pk, 2);
        msgpack_pack_double(&pk, 2.5);
        msgpack_pack_array(&pk, 3);
        for (int e = 0; e < 3; e++) {
            if (map) {
                msgpack_pack_map(&pk, 3);
                pack_s(&pk, "type");
            } else {
                msgpack_pack_array(&pk, 3);
            }
            pack_s(&pk, "BlockRemoved");
            if (map) pack_s(&pk, "block_hashes");
            msgpack_pack_array(&pk, e == 1 ? 2 : 1); /* the middle one: two blocks */
            for (int b = 0; b < (e == 1 ? 2 : 1); b++) {
                uint64_t v = 0x9e3779b97f4a7c15ull * (uint64_t)(e * 2 + b + 1);
                if (form / 2 == 0) msgpack_pack_fix_uint64(&pk, v);
                if (form / 2 == 1) msgpack_pack_uint64(&pk, v & 0xffff); /* shortest form */
                if (form / 2 == 2) msgpack_pack_int64(&pk, -(int64_t)(v >> 8));
                if (form / 2 == 3)
                    msgpack_pack_bin(&pk, 32), msgpack_pack_bin_body(&pk, &v, 8),
                        msgpack_pack_bin_body(&pk, &v, 8), msgpack_pack_bin_body(&pk, &v, 8),
                        msgpack_pack_bin_body(&pk, &v, 8);
                char hex[33];
                snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)v,
                         (unsigned long long)~v);
                if (form / 2 == 4) pack_s(&pk, hex); /* a hash as a string */
            }
            if (map) pack_s(&pk, "medium");
            pack_s(&pk, e == 2 ? "CPU" : "GPU");
        }
        const unsigned char *p = (const unsigned char *)sb.data;
        if (!agrees(p, sb.size)) fail_msg("form %d: not read by the shape reader", form);
        irx_ev_batch b;
        char err[128];
        assert_int_equal(irx_ev_decode(p, sb.size, &b, err, sizeof err), 0);
        assert_int_equal(b.nev, 3);
        assert_int_equal(b.ev[0].type, IRX_EV_REMOVED);
        assert_int_equal(b.ev[0].nblocks, 1);
        assert_int_equal(b.ev[1].nblocks, 2);
        assert_int_equal(b.ev[2].medium, IRX_MEDIUM_CPU);
        assert_false(same(b.ev[0].blocks[0], b.ev[1].blocks[0]));
        irx_ev_batch_free(&b);
        unsigned char *copy = malloc(sb.size);
        memcpy(copy, p, sb.size);
        changes_agree(copy, sb.size);
        free(copy);
        msgpack_sbuffer_destroy(&sb);
    }
}

/* The inverse of irx_ekey_mix (each xorshift and multiply undone). */
static uint64_t inv64(uint64_t c) {
    uint64_t x = c; /* Newton: each step doubles the correct low bits */
    for (int i = 0; i < 6; i++) x *= 2 - c * x;
    return x;
}
static uint64_t unmix(uint64_t x) {
    x ^= x >> 31 ^ x >> 62;
    x *= inv64(0x94d049bb133111ebull);
    x ^= x >> 27 ^ x >> 54;
    x *= inv64(0xbf58476d1ce4e5b9ull);
    x ^= x >> 30 ^ x >> 60;
    return x;
}

/* Integer engine hashes chosen so that, without the process's secret, every key's
 * top 32 bits (the key table's home slot) would be the same: with it they spread. */
static void chosen_hashes_do_not_crowd(void **state) {
    (void)state;
    assert_true(irx_ekey_secret != 0);
    for (uint64_t i = 1; i < 100; i++)
        assert_true(irx_ekey_mix(unmix(i)) == i); /* the inverse is right */
    enum { N = 4096 };
    static uint32_t top[N];
    for (uint64_t i = 0; i < N; i++) {
        uint64_t bits = unmix(0xabcdef0100000000ull | i) ^ 0x243f6a8885a308d3ull;
        top[i] = (uint32_t)(irx_ekey_int(bits).lo >> 52); /* 4,096 buckets */
    }
    size_t same = 0;
    for (size_t i = 1; i < N; i++) same += top[i] == top[0];
    assert_true(same < 16); /* about 1 expected; N - 1 without the secret */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(array_encoding),
        cmocka_unit_test(array_signed_and_newer),
        cmocka_unit_test(map_encoding),
        cmocka_unit_test(keys_are_opaque),
        cmocka_unit_test(bad_payloads),
        cmocka_unit_test(offload_events),
        cmocka_unit_test(streaming_order),
        cmocka_unit_test(token_forms),
        cmocka_unit_test(shapes_agree_with_the_template),
        cmocka_unit_test(one_block_removals),
        cmocka_unit_test(chosen_hashes_do_not_crowd),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
