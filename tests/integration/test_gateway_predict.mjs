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

// Requests in flight together. Sequentially the shadow is the engine's cache (the tests
// above); with requests overlapping on one replica, the gateway records them in the
// order it decides them, and the engine may run them in another order, take decode
// blocks while the shadow counts them at completion, and free them in another order:
// a prediction can then differ from what the engine cached, and the LRU orders can
// differ for a while after (each such difference is healed by the closed loop or by
// the next record of the prefix). That is the cost of concurrency, not a bug; how much
// of it there is depends on how many requests overlap.
//
// An open loop at a fixed wall-clock rate makes the overlap a function of machine
// speed: 400 req/s overlaps little where a request takes 1 ms (measured: 0.4 others
// in flight on average, 99.2 to 100% exact), and turns into a burst of hundreds in
// flight where one takes 50 ms (ASan on a loaded 2-core machine: 65 to 93% exact).
// So the load here is paced by completions too: at most 400 req/s and at most
// PREDICT_LOAD_WINDOW (2) requests in flight. On a fast machine the window rarely
// binds and this is the open loop at 400 req/s; on a slow one the rate falls
// instead of the overlap growing, and the bound means the same on every machine
// (measured under two CPU hogs, release and ASan: 99.2 to 100% exact over 600).
// tests/stress/test_predict_concurrent.mjs runs 3,000 requests with the 99% bound;
// bench/index/predict-openloop.sh runs the unbounded open loop at 400 req/s, whose
// result depends on the machine (a benchmark, not a test).
//
// Checks that do not depend on the machine's speed: every prompt is counted right; the
// closed loop counts no more mispredictions than the client saw; and, once the load
// stops, the shadow is the engine's cache again: 150 sequential requests after it
// mispredict at most once per prefix and not at all in their last 50 (a leaked pin or
// reservation, or a release that went astray, would keep mispredicting).
test('400 req/s, at most 2 in flight, under eviction pressure: nearly every prediction exact, then exact again', async () => {
  await startFleetWith(96);
  try {
    const n = Number(process.env.PREDICT_LOAD_N || 600), rate = 400;
    const window = Number(process.env.PREDICT_LOAD_WINDOW ?? 2); // 0: unbounded (the pure open loop)
    const min = Number(process.env.PREDICT_LOAD_MIN || 0.97);
    const { got, late, meanOthers, secs } = await paced(n, rate, window);
    let exact = 0, hits = 0;
    for (const [i, g] of got.entries()) {
      assert.equal(g.prompt, g.usage.prompt_tokens, `request ${i}: prompt tokens`);
      const cached = g.usage.prompt_tokens_details ? g.usage.prompt_tokens_details.cached_tokens : 0;
      if (g.predicted === cached) exact++;
      if (cached > 0) hits++;
    }
    console.log(`open loop: ${exact}/${n} predictions exact (${(100 * exact / n).toFixed(2)}%), ${hits} hits, ` +
      `${secs.toFixed(1)} s, window ${window || 'none'} (${late} sent late), ${meanOthers.toFixed(2)} others in flight on average`);
    assert.ok(hits > n / 5 && hits < n - n / 20, `${hits} hits: the cache is not under pressure`);
    const { counted, countedExact } = await closedLoop();
    // As in the sequential test, some go uncounted (about 1 in 12 here).
    assert.ok(counted >= 0.85 * n && counted <= n, `the closed loop counted ${counted} of ${n}`);
    assert.ok(counted - countedExact <= n - exact, `the closed loop counted ${counted - countedExact} mispredictions, the client saw ${n - exact}`);
    assert.ok(exact >= min * n, `${exact}/${n} exact, under ${min * 100}%`);
    const heal = [];
    for (let i = 0; i < 150; i++) {
      const g = await one(n + i);
      const cached = g.usage.prompt_tokens_details ? g.usage.prompt_tokens_details.cached_tokens : 0;
      if (g.predicted !== cached) heal.push({ i, on: g.replica, predicted: g.predicted, cached });
    }
    const what = JSON.stringify(heal);
    assert.ok(heal.length <= 2 * systems.length, `after the load, ${heal.length} of 150 sequential predictions missed: ${what}`);
    assert.ok(heal.every((m) => m.i < 100), `after the load, the last 50 sequential predictions still missed: ${what}`);
  } finally {
    await stopFleet();
  }
});

// Sends request i at t0 + i / rate, but never more than `window` at once (0: no limit).
// Reports how many went out late because the window was full, and how many others
// each request overlapped on average, as the client saw them.
async function paced(n, rate, window) {
  const t0 = Date.now(), got = new Array(n), spans = new Array(n);
  let next = 0, late = 0;
  const send = async (i) => {
    const at = performance.now();
    got[i] = await one(i);
    spans[i] = [at, performance.now()];
  };
  const due = async (i) => {
    const wait = t0 + (i * 1000) / rate - Date.now();
    if (wait > 0) await new Promise((res) => setTimeout(res, wait));
    else if (window && wait < -1) late++;
  };
  if (window) {
    await Promise.all(Array.from({ length: window }, async () => {
      while (next < n) {
        const i = next++;
        await due(i);
        await send(i);
      }
    }));
  } else {
    const runs = [];
    for (let i = 0; i < n; i++) {
      await due(i);
      runs.push(send(i));
    }
    await Promise.all(runs);
  }
  let others = 0;
  const byStart = spans.map((s, i) => [...s, i]).sort((a, b) => a[0] - b[0]);
  for (let k = 0; k < n; k++)
    for (let j = k + 1; j < n && byStart[j][0] < byStart[k][1]; j++) others += 2;
  return { got, late, meanOthers: others / n, secs: (Date.now() - t0) / 1000 };
}

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
    // as URL encoders write it (Python's requests, URLSearchParams)
    assert.equal(await explainAt(`?${new URLSearchParams({ path: '/v1/completions' })}`, chatBody), '/v1/completions');
    assert.equal(await explainAt('?path=%2fv1%2Fchat%2Fcompletions', '{"prompt":"x"}'), '/v1/chat/completions');
    for (const bad of ['%2', '%zz', '%2Fv1%2Fcompletions%', '/v1/completions%00']) {
      const r = await fetch(gw.admin + '/admin/explain?path=' + bad, { method: 'POST', body: chatBody });
      assert.equal(r.status, 400, bad);
    }
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
    const raw = await (await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: sys + ' again' }) })).text();
    assert.doesNotMatch(raw, /\d\.\d{11,}/, `numbers for people, not 17 digits: ${raw}`);
    const e = JSON.parse(raw);
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
