// The simulator's KV events end to end: inferrail-sim --kv-events-config publishes in
// vLLM's wire format (checked by a subscriber written as vLLM's example reads them,
// tests/tools/kv-events-sub.py), and a gateway in front of two event-publishing
// simulators under eviction pressure predicts every request's cached tokens exactly
// (x-inferrail-cached-tokens against usage.prompt_tokens_details.cached_tokens),
// through a dropped batch (replayed) and a /reset_prefix_cache (AllBlocksCleared).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, startSim, startGateway, metrics, metricValue, sleep, logged } from './lib.mjs';

const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const MODEL = 'inferrail/sim-8b';
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

// A simulator publishing events on two random loopback ports in 10000-19999; a port
// that is taken makes it exit 1, and another pair is tried.
async function eventSim(encoding, hash, extra = []) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pub = 10000 + Math.floor(Math.random() * 9998), replay = pub + 1;
    const cfg = { enable_kv_cache_events: true, publisher: 'zmq', endpoint: `tcp://127.0.0.1:${pub}`, replay_endpoint: `tcp://127.0.0.1:${replay}`, buffer_steps: 1000 };
    try {
      const sim = await startSim(['--zero-latency', '--enable-prompt-tokens-details', '--enable-faults', '--kv-events-config', JSON.stringify(cfg),
        '--kv-events-encoding', encoding, '--kv-events-hash', hash, ...extra]);
      cleanup.push(() => sim.stop());
      return { ...sim, pub, replay };
    } catch (e) {
      if (!/cannot bind/.test(String(e.message))) throw e;
    }
  }
  throw new Error('no free port pair for the KV events');
}

function subscribe(sim, seconds = 0.3) {
  return new Promise((resolve, reject) => {
    const c = spawn(PY, [path.join(ROOT, 'tests/tools/kv-events-sub.py'), String(sim.pub), String(sim.replay), '--seconds', String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.on('exit', (code) => code === 0 ? resolve(out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))) : reject(new Error(`subscriber exited ${code}`)));
  });
}

// subscribe() until what it got passes `done`, for up to 20 s; the last batches either way.
async function subscribeUntil(sim, done) {
  let got = [];
  for (const deadline = Date.now() + 20000; Date.now() < deadline;) {
    got = await subscribe(sim);
    if (done(got)) break;
  }
  return got;
}

// A gateway following one simulator's events, as replica 'ev'.
function eventGateway(sim) {
  return startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'ev', url: sim.url, kv_events: { endpoint: `tcp://127.0.0.1:${sim.pub}`, replay_endpoint: `tcp://127.0.0.1:${sim.replay}` } }],
    health: { interval: '10s' },
  });
}

async function complete(url, prompt, maxTokens = 3) {
  const r = await fetch(url + '/v1/completions', { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: maxTokens }) });
  assert.equal(r.status, 200);
  const j = await r.json();
  return { j, r };
}

for (const [encoding, hash] of [['map', 'bytes'], ['array', 'int']]) {
  test(`the simulator publishes vLLM's format: ${encoding} encoding, ${hash} hashes`, async () => {
    const sim = await eventSim(encoding, hash);
    const prompt = 'one two three four five six seven eight nine ten '.repeat(8);
    await complete(sim.url, prompt);
    // The publisher flushes every 2 ms, later on a loaded machine: subscribe again
    // (each replays from 0) until the stored blocks are there.
    const batches = await subscribeUntil(sim, (bs) => bs.some((b) => b.events.some((e) => e.type === 'BlockStored')));
    assert.ok(batches.length >= 1);
    assert.equal(batches[0].seq, 0);
    for (const b of batches) { assert.equal(b.encoding, encoding); assert.equal(b.rank, 0); assert.ok(Math.abs(b.ts - Date.now() / 1000) < 60); }
    const stored = batches.flatMap((b) => b.events).filter((e) => e.type === 'BlockStored');
    assert.ok(stored.length >= 1);
    const first = stored[0];
    assert.equal(first.parent_block_hash, null);
    assert.equal(first.block_size, 16);
    assert.equal(first.medium, 'GPU');
    assert.equal(first.token_ids.length, first.block_hashes.length * 16);
    for (const h of first.block_hashes) {
      if (hash === 'bytes') assert.match(h, /^[0-9a-f]{64}$/);
      else assert.ok(Number.isInteger(h) || typeof h === 'number');
    }
    // /reset_prefix_cache with nothing running: AllBlocksCleared.
    const r = await fetch(sim.url + '/reset_prefix_cache', { method: 'POST' });
    assert.equal(r.status, 200);
    const after2 = await subscribeUntil(sim, (bs) => bs.some((b) => b.events.some((e) => e.type === 'AllBlocksCleared')));
    assert.equal(after2.at(-1).events.at(-1).type, 'AllBlocksCleared');
  });
}

test('a gateway fed by two simulators\' events predicts exactly, through a gap and a reset', async () => {
  // 40-block caches against prompts of 6-12 blocks over 8 shared heads: evictions.
  const sims = [await eventSim('map', 'bytes', ['--num-gpu-blocks-override', '40', '--max-model-len', '600']),
    await eventSim('array', 'int', ['--num-gpu-blocks-override', '40', '--max-model-len', '600'])];
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    replicas: sims.map((s, i) => ({ id: `sim-${i}`, url: s.url, kv_events: { endpoint: `tcp://127.0.0.1:${s.pub}`, replay_endpoint: `tcp://127.0.0.1:${s.replay}` } })),
    routing: { default_policy: 'random', seed: 3 },
    server: { workers: 1 },
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  let seed = 11;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix'];
  const heads = Array.from({ length: 8 }, (_, i) => `Head ${i}: ` + Array.from({ length: 40 + 10 * i }, () => words[rnd(10)]).join(' '));
  let exact = 0, total = 0, hits = 0;
  const misses = [];
  async function one() {
    const prompt = heads[rnd(heads.length)] + ' ' + Array.from({ length: 5 + rnd(30) }, () => words[rnd(10)]).join(' ');
    const { j, r } = await complete(gw.url, prompt);
    const predicted = Number(r.headers.get('x-inferrail-cached-tokens'));
    const reported = j.usage.prompt_tokens_details?.cached_tokens ?? 0;
    total++;
    if (reported > 0) hits++;
    if (predicted === reported) exact++; else misses.push({ predicted, reported, replica: r.headers.get('x-inferrail-replica') });
    return { prompt, rep: r.headers.get('x-inferrail-replica'), tokens: j.usage.prompt_tokens };
  }
  // The subscriber applies events on its own thread: each answer's events must land
  // before the next prediction (what a sequential client would race). A fixed wait is
  // too short on a loaded machine (the publisher flushes on a 2 ms timer, the gateway
  // applies on its own thread, both behind everything else), so settle waits on the
  // condition: the same prompt again is predicted on the replica that ran it as the
  // engine would cache it (its full blocks, one block short of a whole-block prompt;
  // 16-token blocks). Then until the applied batch counts stop moving, for any batch
  // after it. While sim-0 has a dropped batch the gateway has not yet seen (it sees the
  // gap at the next batch), that prediction cannot come, and only the quiet is awaited.
  const page0 = async () => metrics(gw.admin);
  const batches = async () => {
    const page = await page0();
    return sims.map((_, k) => metricValue(page, 'inferrail_kv_events_batches_total', `replica="sim-${k}"`)).join();
  };
  const explain = async (prompt) => (await fetch(gw.admin + '/admin/explain?path=/v1/completions',
    { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 1 }) })).json();
  const until = async (what, cond) => {
    for (const deadline = Date.now() + 20000; !(await cond());) {
      assert.ok(Date.now() < deadline, `not in 20 s: ${what}`);
      await sleep(10);
    }
  };
  let dropPending = false;
  const settle = async (served) => {
    if (served && !(dropPending && served.rep === 'sim-0')) {
      const want = Math.floor((served.tokens - 1) / 16) * 16;
      await until(`${served.rep}'s events applied`, async () =>
        (await explain(served.prompt)).candidates.find((c) => c.replica === served.rep)?.predicted_cached_tokens === want);
    }
    let last = await batches();
    for (let i = 0; i < 100; i++) {
      await sleep(15);
      const now = await batches();
      if (now === last) break;
      last = now;
    }
    if (dropPending && metricValue(await page0(), 'inferrail_kv_events_gaps_total', 'replica="sim-0"') >= 1) dropPending = false;
  };
  for (let i = 0; i < 60; i++) await settle(await one());
  // A dropped batch on sim-0: the gateway sees the gap and replays it.
  const f = await fetch(sims[0].url + '/admin/fault', { method: 'POST', body: JSON.stringify({ fault: 'drop-events=1' }) });
  assert.equal(f.status, 200);
  dropPending = true;
  for (let i = 0; i < 60; i++) await settle(await one());
  // Both caches reset: AllBlocksCleared, and nothing is predicted from stale blocks.
  for (const s of sims) assert.equal((await fetch(s.url + '/reset_prefix_cache', { method: 'POST' })).status, 200);
  await until('both resets applied', async () => {
    const page = await page0();
    return sims.every((_, k) => metricValue(page, 'inferrail_kv_events_clears_total', `replica="sim-${k}"`) === 1);
  });
  await settle();
  for (let i = 0; i < 60; i++) await settle(await one());
  const page = await metrics(gw.admin);
  const sum = (name) => sims.reduce((a, _, k) => a + metricValue(page, name, `replica="sim-${k}"`), 0);
  assert.ok(sum('inferrail_kv_events_gaps_total') >= 1, 'the dropped batch was seen as a gap');
  assert.ok(sum('inferrail_kv_events_replayed_batches_total') >= 1);
  assert.equal(sum('inferrail_kv_events_fallbacks_total'), 0);
  assert.equal(sum('inferrail_kv_events_clears_total'), 2);
  assert.equal(sum('inferrail_kv_events_decode_errors_total'), 0);
  assert.equal(exact, total, `${exact}/${total} exact; misses ${JSON.stringify(misses.slice(0, 10))}`);
  assert.ok(hits >= 40, `only ${hits} of ${total} requests hit the cache`);
  // The parity self-test: every answered prompt's blocks showed up in the events.
  for (let k = 0; k < sims.length; k++) {
    assert.ok(metricValue(page, 'inferrail_kv_events_parity_checks_total', `replica="sim-${k}"`) >= 20);
    assert.ok(metricValue(page, 'inferrail_index_parity_ratio', `replica="sim-${k}"`) >= 0.95, page);
  }
});

test('the parity self-test catches an engine that hashes other blocks', async () => {
  // The engine runs 8-token blocks while the gateway expects 16: its events cannot
  // be placed, and nothing the gateway predicts ever shows up stored.
  // Its mismatches are sampled into the decision log too (every request: rate 1).
  const sim = await eventSim('map', 'bytes', ['--block-size', '8']);
  const dlog = path.join(os.tmpdir(), `ir-parity-${process.pid}.jsonl`);
  fs.rmSync(dlog, { force: true });
  cleanup.push(() => fs.rmSync(dlog, { force: true }));
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'odd', url: sim.url, kv_events: { endpoint: `tcp://127.0.0.1:${sim.pub}`, replay_endpoint: `tcp://127.0.0.1:${sim.replay}` } }],
    health: { interval: '10s' },
    observability: { decision_log: { path: dlog, sample_rate: 1 } },
  });
  let stopped = false;
  cleanup.push(async () => { if (!stopped) assert.equal(await gw.stop(), 0, gw.log.text); });
  for (let i = 0; i < 5; i++) await complete(gw.url, `Request ${i}: ` + 'kv cache router '.repeat(30));
  let page;
  for (const end = Date.now() + 20000; Date.now() < end;) { // each check waits up to 500 ms for its events
    page = await metrics(gw.admin);
    if (metricValue(page, 'inferrail_kv_events_parity_checks_total', 'replica="odd"') === 5) break;
    await sleep(25);
  }
  assert.equal(metricValue(page, 'inferrail_kv_events_parity_checks_total', 'replica="odd"'), 5);
  assert.equal(metricValue(page, 'inferrail_index_parity_ratio', 'replica="odd"'), 0);
  assert.ok(metricValue(page, 'inferrail_kv_events_refused_total', 'replica="odd"') > 0);
  await logged(gw, /parity: replica odd: the engine's KV events show 0 of the/);
  stopped = true;
  assert.equal(await gw.stop(), 0, gw.log.text); // the decision log is flushed on exit
  const lines = fs.readFileSync(dlog, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
  const decisions = lines.filter((l) => l.candidates);
  const mismatches = lines.filter((l) => l.event === 'parity_mismatch');
  assert.equal(decisions.length, 5);
  assert.equal(mismatches.length, 5, JSON.stringify(lines));
  for (const m of mismatches) {
    assert.equal(m.replica, 'odd');
    assert.ok(m.predicted_blocks > 0 && m.shown_blocks === 0, JSON.stringify(m));
    assert.ok(decisions.some((d) => d.request_id === m.request_id), m.request_id);
  }
});

test('two gateways hold one view; one that joins late catches up by replay', async () => {
  const sims = [];
  for (let i = 0; i < 3; i++) sims.push(await eventSim(i % 2 ? 'array' : 'map', i % 2 ? 'int' : 'bytes', ['--num-gpu-blocks-override', '64', '--max-model-len', '900']));
  const config = {
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    replicas: sims.map((s, i) => ({ id: `sim-${i}`, url: s.url, kv_events: { endpoint: `tcp://127.0.0.1:${s.pub}`, replay_endpoint: `tcp://127.0.0.1:${s.replay}` } })),
    routing: { default_policy: 'random', seed: 5 },
    health: { interval: '10s' },
  };
  const a = await startGateway(config);
  cleanup.push(async () => { assert.equal(await a.stop(), 0, a.log.text); });
  let seed = 21;
  const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix'];
  const heads = Array.from({ length: 6 }, (_, i) => `Shared ${i}: ` + Array.from({ length: 50 + 15 * i }, () => words[rnd(10)]).join(' '));
  const prompt = () => heads[rnd(heads.length)] + ' ' + Array.from({ length: 3 + rnd(20) }, () => words[rnd(10)]).join(' ');
  for (let i = 0; i < 30; i++) await complete(a.url, prompt());
  const b = await startGateway(config); // joins late: it asks each engine for everything buffered
  cleanup.push(async () => { assert.equal(await b.stop(), 0, b.log.text); });
  for (let i = 0; i < 30; i++) await complete(i % 2 ? a.url : b.url, prompt());
  const counts = async (gw) => {
    const page = await metrics(gw.admin);
    return sims.map((_, k) => metricValue(page, 'inferrail_kv_events_batches_total', `replica="sim-${k}"`) + metricValue(page, 'inferrail_kv_events_decode_errors_total', `replica="sim-${k}"`));
  };
  // Both have applied the same batches: the late one replayed what it missed.
  let ca, cb;
  for (const end = Date.now() + 20000; Date.now() < end;) {
    ca = await counts(a); cb = await counts(b);
    if (ca.join() === cb.join()) break;
    await sleep(25);
  }
  assert.deepEqual(cb, ca);
  const pb = await metrics(b.admin);
  assert.ok(sims.reduce((x, _, k) => x + metricValue(pb, 'inferrail_kv_events_replayed_batches_total', `replica="sim-${k}"`), 0) >= 1);
  let nonzero = 0;
  for (const h of heads) {
    const p = h + ' alpha beta';
    const body = JSON.stringify({ model: MODEL, prompt: p, max_tokens: 1 });
    const [ea, eb] = await Promise.all([a, b].map(async (gw) => (await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body })).json()));
    for (const row of ea.candidates) {
      const other = eb.candidates.find((c) => c.replica === row.replica);
      assert.equal(other.predicted_cached_tokens, row.predicted_cached_tokens, `${row.replica} for ${h.slice(0, 10)}`);
      assert.equal(row.index_source, 'events');
      assert.equal(other.index_source, 'events');
      if (row.predicted_cached_tokens > 0) nonzero++;
    }
  }
  assert.ok(nonzero >= 3, `only ${nonzero} nonzero predictions`);
});

// cache_salt: the simulator keeps salted blocks apart and says so in its events (the
// first block's extra_keys carry the salt, as vLLM's do), and a gateway fed by them
// predicts salted requests as exactly as the others, in both encodings.
for (const [encoding, hash] of [['map', 'bytes'], ['array', 'int']]) {
  test(`salted requests are followed exactly from the events: ${encoding}, ${hash}`, async () => {
    const sim = await eventSim(encoding, hash);
    const gw = await eventGateway(sim);
    try {
      const prompt = 'a salted prompt shared by one tenant only '.repeat(12);
      const body = (salt) => JSON.stringify({ model: MODEL, prompt, max_tokens: 1, ...(salt ? { cache_salt: salt } : {}) });
      const send = async (salt) => {
        const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body: body(salt) });
        const j = await r.json();
        return { predicted: Number(r.headers.get('x-inferrail-cached-tokens')), reported: j.usage.prompt_tokens_details?.cached_tokens ?? 0 };
      };
      const explained = async (salt) => {
        const r = await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body: body(salt) });
        return (await r.json()).candidates[0].predicted_cached_tokens;
      };
      assert.deepEqual(await send('tenant-a'), { predicted: 0, reported: 0 });
      // the events of the first answer land on the subscriber's thread: wait for them
      for (const end = Date.now() + 20000; Date.now() < end && !(await explained('tenant-a')); ) await sleep(20);
      const again = await send('tenant-a');
      assert.ok(again.reported > 0, JSON.stringify(again));
      assert.equal(again.predicted, again.reported);
      assert.equal(await explained('tenant-b'), 0);
      assert.deepEqual(await send('tenant-b'), { predicted: 0, reported: 0 });
      assert.equal(await explained(null), 0, 'the unsalted prompt shares nothing with the salted ones');
      const page = await metrics(gw.admin);
      assert.equal(metricValue(page, 'inferrail_kv_events_decode_errors_total', 'replica="ev"'), 0);
    } finally {
      assert.equal(await gw.stop(), 0, gw.log.text);
    }
  });
}

// An engine's refusal (a 400: max_tokens past the context) ran none of the prompt: it is
// no evidence for or against the prediction. Refusals once counted as parity misses
// (a client could drive the parity ratio to 0 and set off the tokenizer-mismatch warning)
// and as over-predictions, correcting the index down.
test('refused requests count neither in the parity self-test nor in the prediction counts', async () => {
  const sim = await eventSim('map', 'int');
  const gw = await eventGateway(sim);
  try {
    const prompt = 'a prompt the engine will refuse to extend that far '.repeat(10);
    const counts = async () => {
      const page = await metrics(gw.admin);
      return ['exact', 'over', 'under'].map((k) => metricValue(page, 'inferrail_predictions_total', `replica="ev",result="${k}"`) ?? 0)
        .concat(metricValue(page, 'inferrail_kv_events_parity_checks_total', 'replica="ev"') ?? 0);
    };
    await complete(gw.url, prompt, 1);
    await complete(gw.url, prompt, 1); // a hit, predicted from the first one's events (or not)
    await sleep(500); // the parity checks settle once the events have come
    const before = await counts();
    // (the first answers may race the subscriber's first connection: a warning then is theirs)
    const warned = gw.log.text.split('parity: replica ev').length;
    for (let i = 0; i < 8; i++) {
      const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 1000000 }) });
      assert.equal(r.status, 400);
      await r.text();
    }
    await sleep(500);
    assert.deepEqual(await counts(), before);
    assert.equal(gw.log.text.split('parity: replica ev').length, warned, 'a refusal set off the parity warning');
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
  }
});
