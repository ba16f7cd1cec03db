#!/usr/bin/env node
// Reference side of the tokenizer benchmark: Hugging Face tokenizers (Rust,
// via @anush008/tokenizers) encoding the same corpora one document per call.
//   node bench/tokenizer/ref_bench.mjs CORPUS_DIR NAME=tokenizer.json...
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.resolve(here, "../../tests/package.json"));
const { Tokenizer } = require("@anush008/tokenizers");

const [dir, ...specs] = process.argv.slice(2);
const kinds = ["english", "code", "cjk"];
const corpora = Object.fromEntries(kinds.map((k) => {
  const text = fs.readFileSync(path.join(dir, `${k}.txt`), "utf8");
  return [k, { docs: text.split("\f"), bytes: Buffer.byteLength(text) }];
}));
for (const spec of specs) {
  const [name, file] = spec.split("=");
  const t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(file);
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  for (const k of kinds) {
    const { docs, bytes } = corpora[k];
    let best = Infinity, tokens = 0;
    for (let rep = 0; rep < 3; rep++) {
      const s = process.hrtime.bigint();
      tokens = 0;
      for (const d of docs) tokens += (await tok.encode(d, null, { addSpecialTokens: false })).getLength();
      const el = Number(process.hrtime.bigint() - s) / 1e9;
      if (rep > 0 && el < best) best = el; // the first pass warms up
    }
    console.log(JSON.stringify({ impl: "hf-tokenizers", model: name, corpus: k, threads: 1,
      mib_s: +(bytes / 1048576 / best).toFixed(2), tokens, load_ms: +loadMs.toFixed(1) }));
  }
}
