// The KV index's predictions against what the simulators really cached: three
// simulators, prompts that share prefixes, chats and completions, streamed and not.
// Every prediction (x-inferrail-cached-tokens) must equal the engine's
// usage.prompt_tokens_details.cached_tokens, with caches that hold the working set and
// under eviction pressure: the index pins a request's blocks while it runs and, at its
// end, frees them as the engine does, behind the blocks it spent on the trailing
// partial block and on decode (counted from usage.completion_tokens).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startSim, startGateway, sseData } from './lib.mjs';

let sims = [], gw;

async function startFleetWith(blocks, policy = 'random') {
  sims = [];
  for (let i = 0; i < 3; i++)
    sims.push(await startSim(['--zero-latency', '--enable-prompt-tokens-details', '--num-gpu-blocks-override', String(blocks), '--max-model-len', '1400']));
  gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
    replicas: sims.map((s, i) => ({ id: `sim-${i}`, url: s.url, kv_capacity_blocks: blocks })),
    routing: { default_policy: policy, seed: 7 },
    // One worker: with two, a client can read the last byte of a content-length answer
    // and send its next request to the other worker before the first one has released
    // the finished request's blocks (seen once under TSan).
    server: { workers: 1 },
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

test('under eviction pressure, 300 sequential predictions are exact and every one is counted', async () => {
  await startFleetWith(96); // a few prompts' worth per simulator
  try {
    let exact = 0, hits = 0;
    for (let i = 0; i < 300; i++) {
      const got = await one(i);
      const cached = got.usage.prompt_tokens_details ? got.usage.prompt_tokens_details.cached_tokens : 0;
      assert.equal(got.predicted, cached, `request ${i} on ${got.replica}: predicted ${got.predicted}, engine cached ${cached}`);
      exact++;
      if (cached > 0) hits++;
    }
    console.log(`eviction pressure: ${exact}/300 predictions exact, ${hits} hits`);
    assert.ok(hits > 60 && hits < 280, `${hits} hits: the cache is not under pressure`);
    const { counted, countedExact } = await closedLoop();
    // A null prompt_tokens_details counts as 0 cached only once the engine has shown it
    // reports cached tokens, so each replica's first cold requests go uncounted.
    assert.ok(counted >= 300 - 40 && counted <= 300, `the closed loop counted ${counted} of 300`);
    assert.equal(countedExact, counted);
  } finally {
    await stopFleet();
  }
});

async function closedLoop() {
  const page = await (await fetch(gw.admin + '/metrics')).text();
  let counted = 0, countedExact = 0;
  for (const m of page.matchAll(/^inferrail_predictions_total\{[^}]*result="(\w+)"\} (\d+)/gm)) {
    counted += Number(m[2]);
    if (m[1] === 'exact') countedExact += Number(m[2]);
  }
  return { counted, countedExact };
}

// An engine that drops its cache (the simulator's POST /reset_prefix_cache; a restart
// that the load scrape has not seen) leaves the shadow holding blocks the engine lost.
// The gateway learns it only from the closed loop: the engine reports fewer cached
// tokens than predicted, and irx_correct evicts the difference from the shadow's oldest
// end. Until every stale prefix has been either hit once (and corrected) or aged out,
// predictions on that replica can be too high; the other replicas are unaffected. A
// stale prefix not asked for in a while can surface late (here once at the 32nd
// request on that replica): it costs one misprediction, not a run of them.
test('after an engine drops its cache, predictions recover within a few requests', async () => {
  await startFleetWith(96);
  try {
    for (let i = 0; i < 60; i++) await one(i);
    const r = await fetch(sims[1].url + '/reset_prefix_cache', { method: 'POST' });
    assert.equal(r.status, 200);
    const misses = [], elsewhere = [];
    let onReset = 0;
    for (let i = 60; i < 240; i++) {
      const got = await one(i);
      const cached = got.usage.prompt_tokens_details ? got.usage.prompt_tokens_details.cached_tokens : 0;
      if (got.replica === 'sim-1') onReset++;
      if (got.predicted !== cached) {
        const what = `request ${i} on ${got.replica}: predicted ${got.predicted}, cached ${cached}`;
        if (got.replica === 'sim-1') misses.push(onReset);
        else elsewhere.push(what);
      }
    }
    console.log(`after a cache reset: ${misses.length} mispredictions, at requests ${misses.join(',')} of ${onReset} on the reset replica; elsewhere: ${elsewhere.join('; ') || 'none'}`);
    assert.ok(onReset > 30, `only ${onReset} requests went to the reset replica`);
    // Each stale prefix costs at most one misprediction: the first request that hits it
    // is corrected, and its blocks are then the engine's. The prompts share 12 prefixes
    // (6 system prompts, each as a chat and as a completion).
    assert.ok(misses.length >= 1, 'the reset went unseen: the test does not exercise it');
    // irx_correct evicts as many of the oldest blocks as were over-predicted: a proxy
    // that, after a reset, can also evict a valid block (an under-prediction later).
    assert.ok(misses.length <= 2 * systems.length, `${misses.length} mispredictions after the reset`);
    // The other replicas kept their caches. Under heavy load (make test runs tests in
    // parallel, or ASan), a response can reach the client before the gateway has released
    // its blocks, so the next request may be predicted before that release: rare.
    assert.ok(elsewhere.length <= 2, `replicas that kept their cache mispredicted: ${elsewhere.join('; ')}`);
  } finally {
    await stopFleet();
  }
});

// Requests in flight together: the engine's blocks for decode are taken while a
// request runs, the shadow counts them at completion, so the two can differ for a
// while. Open loop at a fixed rate; the share of exact predictions is reported and
// bounded. tests/stress/test_predict_concurrent.mjs runs the full 3,000 requests.
// The bound is 99% at full size (the stress run). Here, 600 requests may also run under
// ASan or TSan on a loaded 2-core machine, where requests overlap more (measured: 98.7%
// under ASan, 99.2 to 100% in a release build), so the bound is 97% unless
// PREDICT_LOAD_MIN says otherwise.
test('open loop at 400 req/s under eviction pressure: nearly every prediction exact', async () => {
  await startFleetWith(96);
  try {
    const n = Number(process.env.PREDICT_LOAD_N || 600), rate = 400;
    const t0 = Date.now(), runs = [];
    for (let i = 0; i < n; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((res) => setTimeout(res, wait));
      runs.push(one(i));
    }
    const got = await Promise.all(runs);
    const secs = (Date.now() - t0) / 1000;
    let exact = 0, hits = 0;
    for (const g of got) {
      const cached = g.usage.prompt_tokens_details ? g.usage.prompt_tokens_details.cached_tokens : 0;
      if (g.predicted === cached) exact++;
      if (cached > 0) hits++;
    }
    console.log(`open loop: ${exact}/${n} predictions exact (${(100 * exact / n).toFixed(2)}%), ${hits} hits, ${secs.toFixed(1)} s`);
    // Sanitizer builds run the gateway several times slower, so more responses reach
    // the client before their blocks are released: a looser bound there (TSan saw 95%).
    const sanitized = /(asan|tsan)/.test(process.env.IR_BUILD || '');
    const min = Number(process.env.PREDICT_LOAD_MIN || (sanitized ? 0.9 : 0.97));
    assert.ok(exact >= min * n, `${exact}/${n} exact, under ${min * 100}%`);
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

test('cost_model routes a shared prefix to the replica that holds it, and explain shows its estimates', async () => {
  await startFleetWith(4096, 'cost_model');
  try {
    const sys = 'Cost me: ' + sentence(200);
    const ask = (q) => fetch(gw.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: sys + q, max_tokens: 1 }) });
    const first = await ask(' first');
    await first.arrayBuffer();
    const home = first.headers.get('x-inferrail-replica');
    for (let i = 0; i < 5; i++) {
      const r = await ask(` question ${i}`);
      await r.arrayBuffer();
      assert.equal(r.headers.get('x-inferrail-replica'), home, 'the warm replica wins while the fleet is idle');
      assert.ok(Number(r.headers.get('x-inferrail-cached-tokens')) > 100);
    }
    const e = await (await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: sys + ' again' }) })).json();
    assert.equal(e.policy, 'cost_model');
    assert.equal(e.winner, home);
    const warm = e.candidates.find((c) => c.replica === home);
    for (const c of e.candidates) {
      assert.equal(typeof c.estimated_ttft_ms, 'number');
      // the score weighs the prefill 1 + work_weight (1) times; idle, nothing queues,
      // so it is twice the estimate
      assert.ok(Math.abs(c.score * 1000 - 2 * c.estimated_ttft_ms) < 1e-6 * c.estimated_ttft_ms,
        JSON.stringify(c));
      if (c !== warm) assert.ok(c.estimated_ttft_ms > warm.estimated_ttft_ms, JSON.stringify(e.candidates));
    }
  } finally {
    await stopFleet();
  }
});
