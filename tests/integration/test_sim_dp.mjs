// Data parallelism end to end. inferrail-sim --data-parallel-size 2 runs two engine
// ranks behind one port: X-data-parallel-rank pins a request to a rank, requests
// without it are spread by vLLM's internal balancer, every rank has its own
// engine="r" metrics and its own KV event stream (the endpoints' ports plus r). A
// gateway with data_parallel_size: 2 routes to two targets, e/dp0 and e/dp1, pins
// each request by the header, and follows each rank's events into that target's
// own index entries: every prediction is exact, and /admin/explain shows a prefix
// cached on one rank only, on that rank's target.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, startSim, startGateway, metrics, metricValue, sleep } from './lib.mjs';

const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const MODEL = 'inferrail/sim-8b';
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

// A two-rank simulator publishing on ports pub, pub+1 (ranks 0, 1) and replaying on
// replay, replay+1, all picked at random in 10000-19999; a taken port makes it exit,
// and another set is tried.
async function dpSim(extra = []) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pub = 10000 + Math.floor(Math.random() * 9990), replay = pub + 2;
    const cfg = { enable_kv_cache_events: true, publisher: 'zmq', endpoint: `tcp://127.0.0.1:${pub}`, replay_endpoint: `tcp://127.0.0.1:${replay}`, buffer_steps: 1000 };
    try {
      const sim = await startSim(['--zero-latency', '--enable-prompt-tokens-details', '--data-parallel-size', '2',
        '--kv-events-config', JSON.stringify(cfg), ...extra]);
      cleanup.push(() => sim.stop());
      return { ...sim, pub, replay };
    } catch (e) {
      if (!/cannot bind/.test(String(e.message))) throw e;
    }
  }
  throw new Error('no free ports for the KV events');
}

function subscribe(pub, replay, seconds = 0.3) {
  return new Promise((resolve, reject) => {
    const c = spawn(PY, [path.join(ROOT, 'tests/tools/kv-events-sub.py'), String(pub), String(replay), '--seconds', String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.on('exit', (code) => code === 0 ? resolve(out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))) : reject(new Error(`subscriber exited ${code}`)));
  });
}

async function complete(url, prompt, headers = {}) {
  const r = await fetch(url + '/v1/completions', { method: 'POST', headers, body: JSON.stringify({ model: MODEL, prompt, max_tokens: 2 }) });
  const j = await r.json();
  return { j, r };
}

const served = async (sim, rank) => metricValue(await metrics(sim.url), 'vllm:request_success_total', `engine="${rank}",finished_reason="length"`);

test('the simulator: a rank per header, a balancer without one, a stream per rank', async () => {
  const sim = await dpSim();
  const page = await metrics(sim.url);
  const check = spawnSync('promtool', ['check', 'metrics'], { input: page, encoding: 'utf8' });
  assert.equal(check.error, undefined, 'promtool is missing: scripts/install-deps installs prometheus');
  // One family per name with both ranks in it: no parse error (status 1); lint
  // (status 3) only for vLLM's colons, which its own names have.
  const problems = (check.stdout + check.stderr).split('\n').filter((l) => l && !/should not contain ':'/.test(l));
  assert.ok([0, 3].includes(check.status) && problems.length === 0, problems.join('\n'));
  for (const r of ['0', '1']) {
    assert.equal(metricValue(page, 'vllm:num_requests_running', `engine="${r}"`), 0);
    assert.match(page, new RegExp(`vllm:cache_config_info\\{[^}]*engine="${r}"`));
  }
  // Pinned: three requests to rank 1, none to rank 0.
  for (let i = 0; i < 3; i++) assert.equal((await complete(sim.url, `pinned ${i} ` + 'kv '.repeat(40), { 'X-data-parallel-rank': '1' })).r.status, 200);
  assert.equal(await served(sim, 0), 0);
  assert.equal(await served(sim, 1), 3);
  // Unpinned: the balancer spreads them (each choice counts as waiting until the
  // next refresh of the counts, every 100 ms, as in vLLM). Sent together, so that
  // they arrive within one refresh: sent one by one on a loaded machine, each can
  // come after a refresh that found both ranks idle, and all go to rank 0.
  const free = await Promise.all(Array.from({ length: 6 }, (_, i) => complete(sim.url, `free ${i} ` + 'kv '.repeat(40))));
  for (const f of free) assert.equal(f.r.status, 200);
  const s0 = await served(sim, 0), s1 = await served(sim, 1) - 3;
  assert.equal(s0 + s1, 6);
  assert.ok(s0 >= 2 && s1 >= 2, `spread ${s0}/${s1}`);
  // A rank it does not have: vLLM's 400.
  const bad = await complete(sim.url, 'x', { 'X-data-parallel-rank': '2' });
  assert.equal(bad.r.status, 400);
  assert.match(bad.j.error.message, /data_parallel_rank 2 is out of range \[0, 2\)/);
  // Each rank publishes on its own ports, with its rank in the batch.
  for (const rank of [0, 1]) {
    const batches = await subscribe(sim.pub + rank, sim.replay + rank);
    assert.ok(batches.length >= 1, `rank ${rank} published nothing`);
    for (const b of batches) assert.equal(b.rank, rank);
    assert.equal(batches[0].seq, 0);
  }
});

test('a gateway pins each target to its rank and follows each rank\'s events', async () => {
  // 40-block caches per rank under prompts of 4-10 blocks: evictions on each rank.
  const sim = await dpSim(['--num-gpu-blocks-override', '40', '--max-model-len', '600']);
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'e', url: sim.url, data_parallel_size: 2, kv_events: { endpoint: `tcp://127.0.0.1:${sim.pub}`, replay_endpoint: `tcp://127.0.0.1:${sim.replay}` } }],
    routing: { default_policy: 'random', seed: 7 },
    server: { workers: 1 },
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const batches = async () => {
    const page = await metrics(gw.admin);
    return ['e/dp0', 'e/dp1'].map((id) => metricValue(page, 'inferrail_kv_events_batches_total', `replica="${id}"`)).join();
  };
  const explain = async (prompt) => (await fetch(gw.admin + '/admin/explain?path=/v1/completions',
    { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 1 }) })).json();
  // Until the gateway has applied the events of the request just served: the same
  // prompt again is predicted on the rank that ran it as the engine would cache it (its
  // full blocks, one block short of a whole-block prompt; the simulator's blocks are 16
  // tokens). Then until the applied batch counts stop moving, for any batch after it.
  // A fixed wait is too short on a loaded machine: the publisher flushes on a 2 ms
  // timer and the gateway applies on its own thread, both behind everything else.
  const settle = async (prompt, rep, tokens) => {
    const want = Math.floor((tokens - 1) / 16) * 16, deadline = Date.now() + 20000;
    let got;
    for (;;) {
      got = (await explain(prompt)).candidates.find((c) => c.replica === rep)?.predicted_cached_tokens;
      if (got === want) break;
      assert.ok(Date.now() < deadline, `${rep}'s events not applied in 20 s: ${prompt.slice(0, 20)}... predicted ${got}, not ${want}`);
      await sleep(10);
    }
    let last = await batches();
    for (let i = 0; i < 100; i++) {
      await sleep(15);
      const now = await batches();
      if (now === last) return;
      last = now;
    }
  };
  let seed = 5;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix'];
  const heads = Array.from({ length: 6 }, (_, i) => `Head ${i}: ` + Array.from({ length: 40 + 10 * i }, () => words[rnd(10)]).join(' '));
  const sent = { 'e/dp0': 0, 'e/dp1': 0 };
  let exact = 0, total = 0, hits = 0;
  const misses = [];
  for (let i = 0; i < 80; i++) {
    const prompt = heads[rnd(heads.length)] + ' ' + Array.from({ length: 3 + rnd(20) }, () => words[rnd(10)]).join(' ');
    const { j, r } = await complete(gw.url, prompt);
    assert.equal(r.status, 200);
    const rep = r.headers.get('x-inferrail-replica');
    sent[rep]++;
    const predicted = Number(r.headers.get('x-inferrail-cached-tokens'));
    const reported = j.usage.prompt_tokens_details?.cached_tokens ?? 0;
    total++;
    if (reported > 0) hits++;
    if (predicted === reported) exact++; else misses.push({ predicted, reported, rep });
    await settle(prompt, rep, j.usage.prompt_tokens);
  }
  // Pinned: each target's requests landed on its rank and nowhere else.
  assert.ok(sent['e/dp0'] >= 10 && sent['e/dp1'] >= 10, JSON.stringify(sent));
  assert.equal(await served(sim, 0), sent['e/dp0']);
  assert.equal(await served(sim, 1), sent['e/dp1']);
  // Each rank's events fed its own target: every prediction exact, per rank.
  assert.equal(exact, total, `${exact}/${total} exact; misses ${JSON.stringify(misses.slice(0, 10))}`);
  assert.ok(hits >= 20, `only ${hits} of ${total} requests hit a cache`);
  const page = await metrics(gw.admin);
  for (const id of ['e/dp0', 'e/dp1']) {
    assert.ok(metricValue(page, 'inferrail_kv_events_batches_total', `replica="${id}"`) >= 5);
    assert.equal(metricValue(page, 'inferrail_kv_events_decode_errors_total', `replica="${id}"`), 0);
    assert.equal(metricValue(page, 'inferrail_kv_events_fallbacks_total', `replica="${id}"`), 0);
    assert.ok(metricValue(page, 'inferrail_index_parity_ratio', `replica="${id}"`) >= 0.95, page);
  }
  // A prefix sent to one rank only is predicted on that rank's target only.
  const fresh = 'A prefix no other request had: ' + 'omega sigma tau '.repeat(20);
  const first = await complete(gw.url, fresh);
  const on = first.r.headers.get('x-inferrail-replica'), off = on === 'e/dp0' ? 'e/dp1' : 'e/dp0';
  await settle(fresh, on, first.j.usage.prompt_tokens);
  const body = JSON.stringify({ model: MODEL, prompt: fresh + ' more', max_tokens: 1 });
  const ex = await (await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body })).json();
  const row = (id) => ex.candidates.find((c) => c.replica === id);
  assert.ok(row(on) && row(off), JSON.stringify(ex));
  assert.equal(row(on).index_source, 'events');
  assert.equal(row(off).index_source, 'events');
  assert.ok(row(on).predicted_cached_tokens >= 64, JSON.stringify(row(on)));
  assert.equal(row(off).predicted_cached_tokens, 0);
  // And the engine agrees: the same prompt pinned to the other rank is not cached there.
  const other = await complete(sim.url, fresh, { 'X-data-parallel-rank': off.slice(-1) });
  assert.equal(other.j.usage.prompt_tokens_details?.cached_tokens ?? 0, 0);
  const again = await complete(sim.url, fresh, { 'X-data-parallel-rank': on.slice(-1) });
  assert.ok(again.j.usage.prompt_tokens_details.cached_tokens >= 64);
  // Each target reads its own rank's load from the engine's page.
  const state = await (await fetch(gw.admin + '/admin/state')).json();
  const ids = state.replicas.map((r) => r.id);
  assert.deepEqual(ids, ['e/dp0', 'e/dp1']);
});

// The rank pin is the gateway's routing decision: a client's own X-data-parallel-rank is
// dropped on the way to the engine, for a data-parallel target (which sets its own) and
// for a replica that is not one (whose engine balances over its ranks as without the
// gateway; a pin of the client's there once reached the engine, and an out-of-range one
// got its 400).
test('a client\'s X-data-parallel-rank never reaches the engine', async () => {
  const sim = await dpSim();
  for (const replica of [{ id: 'plain', url: sim.url }, { id: 'dp', url: sim.url, data_parallel_size: 2 }]) {
    const gw = await startGateway({ models: [{ name: MODEL }], replicas: [replica], health: { interval: '10s' } });
    try {
      for (const v of ['5', '-1', '1', 'abc']) {
        const r = await fetch(gw.url + '/v1/completions', { method: 'POST', headers: { 'x-data-parallel-rank': v },
          body: JSON.stringify({ model: MODEL, prompt: 'pin me', max_tokens: 1 }) });
        const text = await r.text();
        assert.equal(r.status, 200, `${replica.id}, ${v}: ${text}`);
      }
    } finally {
      assert.equal(await gw.stop(), 0, gw.log.text);
    }
  }
});

// A replica whose data_parallel_size is larger than its engine's: the ranks the
// engine lacks are not offered (their metrics page reports ranks 0 and 1 only), so
// no request is pinned to a rank that would answer 400; explain says why, the
// scrapes count it, and the log says it once per target.
test('data_parallel_size above the engine\'s: the missing ranks are not offered', { timeout: 60000 }, async () => {
  const sim = await dpSim();
  const gw = await startGateway({ models: [{ name: MODEL }], health: { interval: '10s' },
    load: { scrape_interval: '100ms' },
    replicas: [{ id: 'e', url: sim.url, data_parallel_size: 4 }] });
  try {
    const explain = async () => (await fetch(gw.admin + '/admin/explain?path=/v1/completions',
      { method: 'POST', body: JSON.stringify({ model: MODEL, prompt: 'which rank' }) })).json();
    let ex;
    for (let i = 0; i < 100; i++) {
      ex = await explain();
      if (ex.candidates.filter((c) => c.reason === 'no such rank').length === 2) break;
      await sleep(50);
    }
    const state = Object.fromEntries(ex.candidates.map((c) => [c.replica, c.eligible ? 'offered' : c.reason]));
    assert.deepEqual(state, { 'e/dp0': 'offered', 'e/dp1': 'offered', 'e/dp2': 'no such rank', 'e/dp3': 'no such rank' });
    for (let i = 0; i < 24; i++) {
      const { r, j } = await complete(gw.url, `prompt ${i}`);
      assert.equal(r.status, 200, JSON.stringify(j));
    }
    const page = await metrics(gw.admin);
    assert.ok(metricValue(page, 'inferrail_load_scrapes_total', 'replica="e/dp3",result="no_rank"') >= 1);
    assert.equal(metricValue(page, 'inferrail_load_scrapes_total', 'replica="e/dp1",result="no_rank"'), 0);
    assert.equal(metricValue(page, 'inferrail_replica_requests_total', 'replica="e/dp2"') || 0, 0);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
  }
  const warned = gw.log.text.split('\n').filter((l) => /reports other data-parallel ranks but not/.test(l));
  assert.equal(warned.length, 2, gw.log.text);
  assert.ok(!/metrics page does not answer/.test(gw.log.text), gw.log.text);
});

// The other way round: a two-rank engine behind a replica without data_parallel_size
// works (the engine balances), and the gateway says once what the setting would give.
test('a data-parallel engine configured as one target: one warning naming the setting', { timeout: 60000 }, async () => {
  const sim = await dpSim();
  const gw = await startGateway({ models: [{ name: MODEL }], health: { interval: '10s' },
    load: { scrape_interval: '50ms' }, replicas: [{ id: 'plain', url: sim.url }] });
  let told = [];
  try {
    for (let i = 0; i < 100 && told.length === 0; i++) {
      await sleep(50);
      told = gw.log.text.split('\n').filter((l) => /reports 2 data-parallel ranks/.test(l));
    }
    await sleep(300); /* several more scrapes */
    const { r } = await complete(gw.url, 'either rank');
    assert.equal(r.status, 200);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
  }
  told = gw.log.text.split('\n').filter((l) => /reports 2 data-parallel ranks/.test(l));
  assert.equal(told.length, 1, gw.log.text);
  assert.match(told[0], /data_parallel_size: 2/);
});
