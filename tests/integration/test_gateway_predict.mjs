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
