// The KV index's predictions against what the simulators really cached: three
// simulators, prompts that share prefixes, chats and completions, streamed and not.
// With caches that hold the working set, every prediction (x-inferrail-cached-tokens)
// must equal the engine's usage.prompt_tokens_details.cached_tokens. Under eviction
// pressure the approximate index cannot be exact (an engine's cache also holds each
// request's partial and generated blocks, which the gateway does not see); there the
// test reports the share of exact predictions and checks that the closed loop counts
// every comparison.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startSim, startGateway, sseData } from './lib.mjs';

let sims = [], gw;

async function startFleetWith(blocks) {
  sims = [];
  for (let i = 0; i < 3; i++)
    sims.push(await startSim(['--zero-latency', '--enable-prompt-tokens-details', '--num-gpu-blocks-override', String(blocks), '--max-model-len', '1400']));
  gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
    replicas: sims.map((s, i) => ({ id: `sim-${i}`, url: s.url, kv_capacity_blocks: blocks })),
    routing: { default_policy: 'random', seed: 7 },
    health: { interval: '10s' },
  });
}

async function stopFleet() {
  assert.equal(await gw.stop(), 0, gw.log.text);
  for (const s of sims) await s.stop();
}

let seed = 99;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix', 'engine'];
const sentence = (n) => Array.from({ length: n }, () => words[rnd(words.length)]).join(' ');
const systems = Array.from({ length: 6 }, (_, i) => `System ${i}: ` + sentence(60 + 25 * i));

async function one(i) {
  const chat = i % 2 === 0, stream = i % 3 === 0;
  const sys = systems[rnd(systems.length)];
  const q = sentence(5 + rnd(40));
  const body = chat
    ? { messages: [{ role: 'system', content: sys }, { role: 'user', content: q }], max_tokens: 2 }
    : { prompt: sys + '\n' + q, max_tokens: 2 };
  if (stream) Object.assign(body, { stream: true, stream_options: { include_usage: true } });
  const r = await fetch(gw.url + (chat ? '/v1/chat/completions' : '/v1/completions'), { method: 'POST', body: JSON.stringify(body) });
  assert.equal(r.status, 200);
  const text = await r.text();
  const usage = stream ? JSON.parse(sseData(text).filter((d) => d !== '[DONE]').at(-1)).usage : JSON.parse(text).usage;
  return {
    predicted: Number(r.headers.get('x-inferrail-cached-tokens')),
    prompt: Number(r.headers.get('x-inferrail-prompt-tokens')),
    usage,
    replica: r.headers.get('x-inferrail-replica'),
  };
}

test('300 predictions equal what the engines cached, chats and completions, streamed or not', async () => {
  await startFleetWith(4096);
  try {
    let hits = 0;
    for (let i = 0; i < 300; i++) {
      const got = await one(i);
      assert.equal(got.prompt, got.usage.prompt_tokens, `request ${i}: prompt tokens`);
      const cached = got.usage.prompt_tokens_details ? got.usage.prompt_tokens_details.cached_tokens : 0;
      assert.equal(got.predicted, cached, `request ${i} on ${got.replica}: predicted ${got.predicted}, engine cached ${cached}`);
      if (cached > 0) hits++;
    }
    assert.ok(hits > 150, `only ${hits} hits: the test does not exercise the cache`);
  } finally {
    await stopFleet();
  }
});

test('under eviction pressure, every comparison is counted and the share of exact ones reported', async () => {
  await startFleetWith(96); // a few prompts' worth per simulator
  try {
    let exact = 0, compared = 0;
    for (let i = 0; i < 300; i++) {
      const got = await one(i);
      const cached = got.usage.prompt_tokens_details ? got.usage.prompt_tokens_details.cached_tokens : 0;
      compared++;
      if (got.predicted === cached) exact++;
    }
    console.log(`eviction pressure: ${exact}/${compared} predictions exact`);
    const page = await (await fetch(gw.admin + '/metrics')).text();
    let counted = 0, countedExact = 0;
    for (const m of page.matchAll(/^inferrail_predictions_total\{[^}]*result="(\w+)"\} (\d+)/gm)) {
      counted += Number(m[2]);
      if (m[1] === 'exact') countedExact += Number(m[2]);
    }
    // A null prompt_tokens_details counts as 0 cached only once the engine has shown it
    // reports cached tokens, so each replica's first cold requests go uncounted.
    assert.ok(counted >= compared - 40 && counted <= compared, `the closed loop counted ${counted} of ${compared}`);
    assert.ok(countedExact <= exact && countedExact >= exact - 40, `${countedExact} counted exact, ${exact} seen`);
  } finally {
    await stopFleet();
  }
});

test('POST /admin/explain shows the decision and each replica\'s prediction, and records nothing', async () => {
  await startFleetWith(4096);
  try {
    const sys = 'Explain me: ' + sentence(120);
    const body = { messages: [{ role: 'system', content: sys }, { role: 'user', content: 'hi' }], max_tokens: 1 };
    const first = await fetch(gw.url + '/v1/chat/completions', { method: 'POST', body: JSON.stringify(body) });
    assert.equal(first.status, 200);
    await first.arrayBuffer();
    const served = first.headers.get('x-inferrail-replica');
    const entries = async () => Number(/^inferrail_index_entries (\d+)/m.exec(await (await fetch(gw.admin + '/metrics')).text())[1]);
    const before = await entries();
    const ask = { ...body, messages: [body.messages[0], { role: 'user', content: 'another question' }] };
    const r = await fetch(gw.admin + '/admin/explain', { method: 'POST', body: JSON.stringify(ask) });
    assert.equal(r.status, 200);
    const e = await r.json();
    assert.equal(e.model, 'inferrail/sim-8b');
    assert.equal(e.policy, 'random');
    assert.equal(e.path, '/v1/chat/completions');
    assert.ok(e.prompt_tokens > 100);
    assert.equal(e.candidates.length, 3);
    assert.ok(e.candidates.some((c) => c.replica === e.winner));
    for (const c of e.candidates) {
      assert.equal(c.eligible, true);
      assert.equal(c.index_source, 'approximate');
      assert.equal(typeof c.in_flight, 'number');
      if (c.replica === served) assert.ok(c.predicted_cached_tokens >= 100, JSON.stringify(c));
      else assert.equal(c.predicted_cached_tokens, 0);
    }
    assert.equal(await entries(), before, 'explain recorded nothing');
    // The real request that follows gets the prediction explain showed, on the replica that has it.
    const real = await fetch(gw.url + '/v1/chat/completions', { method: 'POST', body: JSON.stringify(ask) });
    await real.arrayBuffer();
    const mine = e.candidates.find((c) => c.replica === real.headers.get('x-inferrail-replica'));
    assert.equal(Number(real.headers.get('x-inferrail-cached-tokens')), mine.predicted_cached_tokens);
    // ?path= picks completions; a bad path, a bad body and GET are refused clearly.
    const comp = await (await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body: '{"prompt":"abc"}' })).json();
    assert.equal(comp.path, '/v1/completions');
    assert.equal((await fetch(gw.admin + '/admin/explain?path=/nope', { method: 'POST', body: '{}' })).status, 400);
    // Only a parameter named exactly `path` counts: not `xpath=`, nor `path=` inside another value.
    const explainAt = async (q, b) => (await (await fetch(gw.admin + '/admin/explain' + q, { method: 'POST', body: b })).json()).path;
    const chatBody = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(await explainAt('?xpath=/v1/completions', chatBody), '/v1/chat/completions');
    assert.equal(await explainAt('?q=path=/v1/completions', chatBody), '/v1/chat/completions');
    assert.equal(await explainAt('?q=1&path=/v1/completions', chatBody), '/v1/completions');
    assert.equal((await fetch(gw.admin + '/admin/explain', { method: 'POST', body: '{"model":"nope"}' })).status, 404);
    assert.equal((await fetch(gw.admin + '/admin/explain')).status, 405);
  } finally {
    await stopFleet();
  }
});
