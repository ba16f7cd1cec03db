// Engine load reports through the real binaries: the gateway scrapes a vLLM and
// an SGLang simulator, and three fake engines whose /metrics hangs, is garbage
// or never ends. The healthy reports stay young whatever the others do, each
// bad page is counted by its outcome and logged once, the replica gauges move
// under load, the KV index learns each engine's capacity, and an engine
// restart (its prefix counters going backwards) resets its view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSim, startGateway, metrics, metricValue, sleep } from './lib.mjs';
import { startFakeEngine } from './fake_engine.mjs';

async function state(gw) {
  const r = await fetch(gw.admin + '/admin/state');
  return r.json();
}

function replica(st, id) {
  return st.replicas.find((r) => r.id === id);
}

async function until(what, fn, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function count(text, needle) {
  return text.split(needle).length - 1;
}

// Streams a completion with n output tokens; resolves when it ends.
async function stream(gw, n, prompt) {
  const r = await fetch(gw.url + '/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'inferrail/sim-8b', prompt, max_tokens: n, stream: true }),
  });
  assert.equal(r.status, 200);
  await r.text();
}

test('hung, garbage and endless pages never delay the healthy reports', async () => {
  const sims = [
    await startSim(['--num-gpu-blocks-override', '3000', '--max-model-len', '4096']),
    await startSim(['--engine', 'sglang', '--num-gpu-blocks-override', '2500', '--max-model-len', '4096']),
  ];
  const bad = {
    hang: await startFakeEngine('ok', { metrics: 'hang' }),
    garbage: await startFakeEngine('ok', { metrics: 'garbage-page' }),
    endless: await startFakeEngine('ok', { metrics: 'endless-page' }),
  };
  // The hung page holds its scrape for the whole 3 s timeout: were the scrapes
  // serial, the healthy reports would age past it.
  const started = Date.now();
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [
      { id: 'vllm', url: sims[0].url },
      { id: 'sglang', url: sims[1].url },
      ...Object.entries(bad).map(([id, e]) => ({ id, url: e.url, models: ['inferrail/sim-8b'] })),
    ],
    load: { scrape_interval: '100ms', scrape_timeout: '3s', max_age: '250ms' },
    health: { interval: '200ms', timeout: '1s' },
  });
  try {
    await until('reports from both simulators', async () => {
      const st = await state(gw);
      return replica(st, 'vllm').engine.fresh && replica(st, 'sglang').engine.fresh;
    });
    let oldest = 0, samples = 0;
    const t0 = Date.now();
    while (Date.now() - t0 < 4000) {
      const st = await state(gw);
      for (const id of ['vllm', 'sglang']) {
        const e = replica(st, id).engine;
        assert.notEqual(e.age_ms, null);
        oldest = Math.max(oldest, e.age_ms);
        samples++;
      }
      await sleep(37);
    }
    assert.ok(samples > 20, `sampled ${samples} times`);
    assert.ok(oldest < 1500, `a healthy report was ${oldest} ms old: a bad page held it up`);
    const st = await state(gw);
    const sc = (id) => replica(st, id).engine.scrapes;
    assert.ok(sc('vllm').ok >= 20 && sc('sglang').ok >= 20, JSON.stringify([sc('vllm'), sc('sglang')]));
    for (const id of ['vllm', 'sglang']) {
      const s = sc(id);
      assert.equal(s.error + s.timeout + s.status + s.too_large + s.unreadable, 0, `${id}: ${JSON.stringify(s)}`);
    }
    assert.ok(sc('hang').timeout >= 1, JSON.stringify(sc('hang')));
    assert.ok(sc('garbage').unreadable >= 5, JSON.stringify(sc('garbage')));
    assert.ok(sc('endless').too_large >= 1, JSON.stringify(sc('endless')));
    // One scrape at a time per target: the hung page was asked about once per timeout
    // since the gateway started (a loaded machine takes longer to get here: count them).
    const timeouts = Math.max(4, Math.floor((Date.now() - started) / 3000) + 1);
    assert.ok(bad.hang.metricsRequests <= timeouts, `hang scraped ${bad.hang.metricsRequests} times in ${timeouts} timeouts`);
    for (const id of Object.keys(bad)) {
      assert.equal(replica(st, id).engine.fresh, false);
      assert.equal(count(gw.log.text, `replica ${id}: its metrics page does not answer`), 1, gw.log.text);
    }
    // The same numbers on /metrics.
    const page = await metrics(gw.admin);
    assert.equal(metricValue(page, 'inferrail_load_scrapes_total', 'replica="garbage",result="unreadable"') >= 5, true);
    assert.equal(metricValue(page, 'inferrail_replica_engine_fresh', 'replica="vllm"'), 1);
    assert.equal(metricValue(page, 'inferrail_replica_engine_fresh', 'replica="hang"'), 0);
    assert.ok(page.includes('inferrail_replica_report_age_seconds{replica="garbage"} +Inf\n'), 'no report yet: +Inf');
    // Capacity: vLLM's num_gpu_blocks, SGLang's token pool over the block size.
    assert.equal(metricValue(page, 'inferrail_index_replica_capacity_blocks', 'replica="vllm"'), 3000);
    assert.equal(metricValue(page, 'inferrail_index_replica_capacity_blocks', 'replica="sglang"'), 2500);
    assert.equal(metricValue(page, 'inferrail_replica_engine_capacity_blocks', 'replica="vllm"'), 3000);
  } finally {
    await gw.stop();
    for (const e of Object.values(bad)) await e.stop();
    for (const s of sims) await s.stop();
  }
});

test('replica gauges move under load, and a restart resets the index view', async () => {
  let sim = await startSim(['--max-num-seqs', '64']);
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'r0', url: sim.url }],
    health: { interval: '100ms', timeout: '500ms', unhealthy_threshold: 100 },
    // The log lines counted below must come from the restart alone: a scrape that takes
    // over the default 100 ms under load (ASan on a busy VM did) is logged the same way.
    load: { scrape_timeout: '5s' },
  });
  try {
    const gauge = async (name) => metricValue(await metrics(gw.admin), name, 'replica="r0"');
    assert.equal(await until('a first report', async () => (await gauge('inferrail_replica_engine_fresh')) === 1), true);
    assert.equal(await gauge('inferrail_replica_engine_running'), 0);
    // /admin/explain shows the fresh engine numbers the policy was handed.
    const row = await until('engine numbers in explain', async () => {
      const r = await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body: '{"prompt":"abc"}' });
      const c = (await r.json()).candidates[0];
      return c.engine_waiting !== null ? c : null;
    });
    assert.equal(row.engine_running, 0);
    assert.equal(row.engine_kv_usage, 0);
    const prompt = 'the same long prefix for every request '.repeat(20);
    const running = [];
    for (let i = 0; i < 6; i++) running.push(stream(gw, 150, prompt + i));
    const busy = await until('running and KV usage in the gauges', async () => {
      const page = await metrics(gw.admin);
      const run = metricValue(page, 'inferrail_replica_engine_running', 'replica="r0"');
      const kv = metricValue(page, 'inferrail_replica_engine_kv_usage', 'replica="r0"');
      return run > 0 && kv > 0 ? { run, kv } : null;
    });
    assert.ok(busy.run <= 6, JSON.stringify(busy));
    await Promise.all(running);
    await until('running back to 0', async () => (await gauge('inferrail_replica_engine_running')) === 0);
    assert.ok((await gauge('inferrail_replica_engine_prefix_cache_queries_total')) > 0);
    assert.ok((await gauge('inferrail_replica_engine_prefix_cache_hits_total')) > 0, 'the shared prefix hit');
    assert.ok((await gauge('inferrail_index_replica_blocks')) > 0, 'the index recorded the prompts');
    assert.equal(await gauge('inferrail_replica_engine_restarts_total'), 0);
    // The engine restarts on the same port: its counters start again from 0.
    const port = sim.port;
    await sim.stop();
    await until('the report goes stale', async () => (await gauge('inferrail_replica_engine_fresh')) === 0);
    sim = await startSim(['--max-num-seqs', '64'], { port });
    await until('a restart seen', async () => (await gauge('inferrail_replica_engine_restarts_total')) === 1);
    const page = await metrics(gw.admin);
    assert.equal(metricValue(page, 'inferrail_index_resets_total'), 1);
    assert.equal(metricValue(page, 'inferrail_index_replica_blocks', 'replica="r0"'), 0);
    assert.equal(metricValue(page, 'inferrail_replica_engine_fresh', 'replica="r0"'), 1);
    assert.equal(count(gw.log.text, 'replica r0: its metrics page does not answer'), 1, gw.log.text);
    assert.equal(count(gw.log.text, 'replica r0: its metrics page answers again'), 1, gw.log.text);
    assert.equal(count(gw.log.text, 'replica r0: its engine restarted'), 1, gw.log.text);
  } finally {
    await gw.stop();
    await sim.stop();
  }
});

// A replica URL that reaches two engines in turn: every other scrape looks like a
// restart, and the capacity flips. Restarts are counted (and the view cleared) each
// time, but logged once, with the likely cause; the capacity is taken once, as two
// reports in a row never agree on a new one.
test('a URL that alternates between two engines is logged once, not at every scrape', async () => {
  const eng = await startFakeEngine('ok', { metrics: 'two-engines-page' });
  const gw = await startGateway({
    models: [{ name: 'fake' }],
    replicas: [{ id: 'lb', url: eng.url }],
    load: { scrape_interval: '50ms' },
    health: { interval: '10s' },
  });
  try {
    await until('restarts counted', async () =>
      metricValue(await metrics(gw.admin), 'inferrail_replica_engine_restarts_total', 'replica="lb"') >= 8);
    assert.ok(eng.metricsRequests >= 16, `${eng.metricsRequests} scrapes`);
    assert.equal(count(gw.log.text, 'replica lb: its engine restarted'), 1, gw.log.text);
    assert.equal(count(gw.log.text, 'replica lb: its prefix cache counters went backwards again'), 1, gw.log.text);
    assert.ok(count(gw.log.text, 'the KV index now sizes it') <= 1, gw.log.text);
  } finally {
    await gw.stop();
    await eng.stop();
  }
});
