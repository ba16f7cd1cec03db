/* builtin:sim tokenizer properties. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "tokenize/ir_tokenize.h"

static const char *atoms[] = {"Hello",    " world",  "\n",       "\t", "  ",     ",",
                              ".",        "{\"k\":", "1234567",  "é",  "日本語", "🙂",
                              "👍🏽", "\r\n",    "<|user|>", "a",  "\0"};

static void random_text(ir_rng *r, ir_buf *out) {
    ir_buf_reset(out);
    int n = (int)ir_rng_below(r, 30);
    for (int i = 0; i < n; i++) {
        size_t k = ir_rng_below(r, IR_ARRAY_LEN(atoms));
        if (k == IR_ARRAY_LEN(atoms) - 1)
            ir_buf_append(out, "\0", 1);
        else
            ir_buf_append_str(out, atoms[k]);
    }
    if (ir_rng_below(r, 4) == 0) { /* arbitrary bytes too */
        int m = (int)ir_rng_below(r, 10);
        for (int i = 0; i < m; i++) {
            char c = (char)ir_rng_below(r, 256);
            ir_buf_append(out, &c, 1);
        }
    }
}

static void known_split(void **state) {
    irt_ids ids;
    irt_ids_init(&ids);
    assert_int_equal(irt_sim_encode("Hello world.\n", 13, &ids), 0);
    /* "Hel" "lo" " wo" "rld" "." "\n" */
    assert_int_equal(ids.len, 6);
    char p[3];
    assert_int_equal(irt_sim_piece(ids.ids[2], p), 3);
    assert_memory_equal(p, " wo", 3);
    assert_int_equal(irt_sim_count("Hello world.\n", 13), 6);
    irt_ids_free(&ids);
}

static void roundtrip_and_prefix_stability(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 7);
    ir_buf text, dec;
    ir_buf_init(&text, 0);
    ir_buf_init(&dec, 0);
    for (int iter = 0; iter < 5000; iter++) {
        random_text(&r, &text);
        irt_ids all, again;
        irt_ids_init(&all);
        irt_ids_init(&again);
        assert_int_equal(irt_sim_encode(text.data ? text.data : "", text.len, &all), 0);
        assert_int_equal(irt_sim_encode(text.data ? text.data : "", text.len, &again), 0);
        assert_int_equal(all.len, again.len); /* deterministic */
        if (all.len) assert_memory_equal(all.ids, again.ids, all.len * sizeof(uint32_t));
        assert_int_equal(irt_sim_count(text.data ? text.data : "", text.len), all.len);
        ir_buf_reset(&dec);
        assert_int_equal(irt_sim_decode(all.ids, all.len, &dec), 0);
        assert_int_equal(dec.len, text.len);
        if (text.len) assert_memory_equal(dec.data, text.data, text.len);
        /* Every prefix of the text tokenizes to a prefix of the ids, except
         * possibly its last token. */
        size_t k = text.len ? ir_rng_below(&r, text.len + 1) : 0;
        irt_ids pre;
        irt_ids_init(&pre);
        irt_sim_encode(text.data ? text.data : "", k, &pre);
        if (pre.len > 1) assert_memory_equal(pre.ids, all.ids, (pre.len - 1) * sizeof(uint32_t));
        irt_ids_free(&pre);
        irt_ids_free(&all);
        irt_ids_free(&again);
    }
    ir_buf_free(&text);
    ir_buf_free(&dec);
}

/* Generated text retokenizes to the same ids when the template puts it back
 * between newlines, which is what multi-turn reuse relies on. */
static void generated_text_retokenizes(void **state) {
    ir_rng r;
    ir_rng_seed(&r, 11);
    ir_buf text, ctx;
    ir_buf_init(&text, 0);
    ir_buf_init(&ctx, 0);
    for (int iter = 0; iter < 2000; iter++) {
        random_text(&r, &text);
        irt_ids gen;
        irt_ids_init(&gen);
        irt_sim_encode(text.data ? text.data : "", text.len, &gen);
        size_t keep = gen.len ? ir_rng_below(&r, gen.len + 1) : 0; /* a max_tokens cut */
        ir_buf_reset(&ctx);
        ir_buf_append_str(&ctx, "<|assistant|>\n");
        size_t head = ctx.len;
        irt_sim_decode(gen.ids, keep, &ctx);
        ir_buf_append_str(&ctx, "\n<|user|>\n");
        irt_ids whole, prefix;
        irt_ids_init(&whole);
        irt_ids_init(&prefix);
        irt_sim_encode(ctx.data, ctx.len, &whole);
        irt_sim_encode(ctx.data, head, &prefix);
        assert_true(whole.len >= prefix.len + keep);
        if (keep) assert_memory_equal(whole.ids + prefix.len, gen.ids, keep * sizeof(uint32_t));
        irt_ids_free(&whole);
        irt_ids_free(&prefix);
        irt_ids_free(&gen);
    }
    ir_buf_free(&text);
    ir_buf_free(&ctx);
}

static void ids_append_and_bad_ids(void **state) {
    irt_ids ids;
    irt_ids_init(&ids);
    assert_int_equal(irt_sim_encode("abcdef", 6, &ids), 0);
    assert_int_equal(irt_sim_encode("x", 1, &ids), 0);
    assert_int_equal(ids.len, 3); /* encode appends */
    irt_ids_free(&ids);
    char p[3];
    assert_int_equal(irt_sim_piece(0x1000000, p), -1);
    assert_int_equal(irt_sim_piece(0x000100, p), -1); /* a NUL inside a piece */
    ir_buf out;
    ir_buf_init(&out, 0);
    uint32_t bad[] = {'a', 0x7FFFFFFF};
    assert_int_equal(irt_sim_decode(bad, 2, &out), -1);
    ir_buf_free(&out);
}

static void chat_template(void **state) {
    json_error_t e;
    json_t *msgs =
        json_loads("[{\"role\":\"system\",\"content\":\"S\"},"
                   "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Hi\"}]}]",
                   0, &e);
    ir_buf out;
    ir_buf_init(&out, 0);
    const char *err = NULL;
    assert_int_equal(irt_sim_render_chat(msgs, true, &out, &err), 0);
    assert_string_equal(out.data, "<|system|>\nS\n<|user|>\nHi\n<|assistant|>\n");
    json_decref(msgs);
    msgs = json_loads("[{\"content\":\"x\"}]", 0, &e);
    assert_int_equal(irt_sim_render_chat(msgs, true, &out, &err), -1);
    assert_non_null(err);
    json_decref(msgs);
    ir_buf_free(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_split),
        cmocka_unit_test(roundtrip_and_prefix_stability),
        cmocka_unit_test(generated_text_retokenizes),
        cmocka_unit_test(ids_append_and_bad_ids),
        cmocka_unit_test(chat_template),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
