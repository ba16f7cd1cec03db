// The gateway's tokenizer threads (tokenizer.workers), small enough for TSan
// (`make tsan-threaded` runs it): a byte-level BPE tokenizer.json of 256 bytes and
// a handful of merges, written by this test, and a one-line chat template. Bodies
// over 1 KiB go to the pool; four threads render and tokenize 192 of them, 48 at a
// time, while two event-loop workers keep serving small bodies inline. Every
// prompt's length (x-inferrail-prompt-tokens) must equal Hugging Face tokenizers'
// count for the same text, and /metrics must count every one as tokenized (none
// busy or slow: the queue and the wait are far above what the test needs).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startSim, startGateway, metrics, metricSum } from './lib.mjs';

const require = createRequire(path.join(ROOT, 'tests', 'package.json'));
const { Tokenizer } = require('@anush008/tokenizers');

const MODEL = 'inferrail/sim-8b';
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

// GPT-2's byte-to-character map: the alphabet of a byte-level BPE.
function byteChars() {
  const bs = [];
  for (let b = 33; b <= 126; b++) bs.push(b);
  for (let b = 161; b <= 172; b++) bs.push(b);
  for (let b = 174; b <= 255; b++) bs.push(b);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) { bs.push(b); cs.push(256 + n++); }
  const map = {};
  bs.forEach((b, i) => { map[b] = String.fromCodePoint(cs[i]); });
  return map;
}

function writeModel(dir) {
  const ch = byteChars();
  const vocab = {};
  for (let b = 0; b < 256; b++) vocab[ch[b]] = b;
  const merges = [['Ġ', 't'], ['h', 'e'], ['Ġt', 'he'], ['i', 'n'], ['Ġ', 'a'], ['e', 'r'], ['o', 'n'], ['Ġ', 's'], ['r', 'e'], ['Ġ', 'c']];
  for (const [a, b] of merges) vocab[a + b] = Object.keys(vocab).length;
  const special = ['<|im_start|>', '<|im_end|>'];
  const added = special.map((content, i) => ({ id: 300 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }));
  const tok = {
    version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null, decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab, merges: merges.map(([a, b]) => `${a} ${b}`) },
  };
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tok));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify({
    eos_token: '<|im_end|>',
    chat_template: "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
  }));
}

// The template above, in JavaScript: the reference text.
const render = (msgs) => msgs.map((m) => `<|im_start|>${m.role}\n${m.content}<|im_end|>\n`).join('') + '<|im_start|>assistant\n';

const WORDS = ['the', 'cache', 'router', 'in', 'a', 'replica', 'sees', 'there', 'once', 'über', '東京', 'token', 'queue', '\n', '  ', 'éclair', '42'];
function chat(i, words) {
  let s = i * 7919 + 1;
  const pick = () => { s = (s * 1103515245 + 12345) % 2147483648; return WORDS[s % WORDS.length]; };
  const text = Array.from({ length: words }, pick).join(' ');
  return [{ role: 'system', content: `System prompt ${i % 3}.` }, { role: 'user', content: `${i}: ${text}` }];
}

async function post(url, messages) {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, max_tokens: 1, messages }),
  });
  await r.arrayBuffer();
  return { status: r.status, tokens: Number(r.headers.get('x-inferrail-prompt-tokens')) };
}

test('four tokenizer threads give every prompt its exact length', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ir-tokpool-'));
  cleanup.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  writeModel(dir);
  const ref = await Tokenizer.fromFile(path.join(dir, 'tokenizer.json'));

  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: dir }],
    replicas: [{ id: 's', url: sim.url }],
    tokenizer: { workers: 4, max_queue: 1024, max_wait: '60s' },
  });
  cleanup.push(() => gw.stop());

  // 192 large bodies (1.5 to 6 KB: the pool) and 64 small ones (inline), mixed.
  const chats = [];
  for (let i = 0; i < 256; i++) chats.push(chat(i, i % 4 === 3 ? 20 : 300 + (i % 5) * 200));
  const want = [];
  for (const m of chats) want.push((await ref.encode(render(m), null, { addSpecialTokens: false })).getIds().length);
  assert.ok(chats.filter((m) => JSON.stringify(m).length > 1024).length === 192, 'bodies over 1 KiB go to the pool');

  for (let at = 0; at < chats.length; at += 48) {
    const batch = chats.slice(at, at + 48);
    const got = await Promise.all(batch.map((m) => post(gw.url, m))).catch((e) => {
      throw new Error(`${e.cause?.message ?? e.message}; gateway log:\n${gw.log.text.slice(-20000)}`);
    });
    got.forEach((g, k) => {
      assert.equal(g.status, 200, `chat ${at + k}`);
      assert.equal(g.tokens, want[at + k], `chat ${at + k}: prompt tokens`);
    });
  }
  const page = await metrics(gw.admin);
  const count = (res) => metricSum(page, 'inferrail_tokenized_requests_total', `result="${res}"`) ?? 0;
  assert.equal(count('tokenized'), chats.length, page.match(/^inferrail_tokenized.*$/gm)?.join('\n'));
  assert.equal(count('busy') + count('slow'), 0);
});
