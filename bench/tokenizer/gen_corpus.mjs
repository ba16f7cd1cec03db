#!/usr/bin/env node
// Writes the benchmark corpora (deterministic): english.txt, code.txt, cjk.txt,
// each about SIZE bytes of ~4 KiB documents separated by a form feed (\f).
//   node bench/tokenizer/gen_corpus.mjs OUTDIR [SIZE_MIB]
import fs from "node:fs";
import path from "node:path";

const out = process.argv[2] || "/tmp/irt-bench";
const size = Number(process.argv[3] || 4) * 1048576;
fs.mkdirSync(out, { recursive: true });
let seed = 12345;
const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
const pick = (a) => a[Math.floor(rnd() * a.length)];
const words = `the of and to in a is that for it as was with be by on not he I this are or his from at
which but have an they you were her she there one all we their has been would more when will if no out
so said what up its about into than them can only other new some could time these two may then do first
any my now such like our over man me even most made after also did many before must through back years
where much your way well down should because each just those people how too little state good very make
world still own see men work long get here between both life being under never day same another know
while last might us great old year off come since against go came right used take three Government
Internationally extraordinary responsibilities characteristics 2024 1,250 3.5% U.S. e-mail don't it's`
  .split(/\s+/);
const codeLines = [
  "def forward(self, x: torch.Tensor) -> torch.Tensor:", "    return self.proj(F.gelu(self.fc(x)))",
  "for (size_t i = 0; i < n; i++) {", "\tif (buf[i] == '\\n') lines++;", "}", "",
  "const res = await fetch(`${base}/v1/completions`, { method: 'POST', body });",
  "    let mut map: HashMap<String, Vec<u32>> = HashMap::new();", "#include <stdlib.h>",
  "SELECT u.id, COUNT(*) AS n FROM users u JOIN orders o ON o.uid = u.id GROUP BY u.id;",
  "        if err != nil {", "            return fmt.Errorf(\"read %s: %w\", path, err)", "        }",
  "  <li class=\"item\"><a href=\"/docs/{{ page.slug }}\">{{ page.title }}</a></li>",
];
function doc(kind) {
  let s = "";
  while (s.length < 4096) {
    if (kind === "english") {
      let sent = Array.from({ length: 6 + Math.floor(rnd() * 14) }, () => pick(words)).join(" ");
      s += sent[0].toUpperCase() + sent.slice(1) + pick([". ", ". ", "? ", "! ", ".\n\n"]);
    } else if (kind === "code") {
      s += pick(codeLines) + "\n";
    } else {
      for (let i = 0; i < 30; i++) s += String.fromCodePoint(0x4e00 + Math.floor(rnd() * 0x51a5));
      s += pick(["，", "。", "、", "：", "「", "」", "。\n"]);
    }
  }
  return s;
}
for (const kind of ["english", "code", "cjk"]) {
  const docs = [];
  let bytes = 0;
  while (bytes < size) {
    const d = doc(kind);
    docs.push(d);
    bytes += Buffer.byteLength(d) + 1;
  }
  fs.writeFileSync(path.join(out, `${kind}.txt`), docs.join("\f"));
}
console.log(`corpora in ${out}`);
