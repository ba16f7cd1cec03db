// The CPU tier end to end: inferrail-sim --num-cpu-blocks copies what its GPU cache
// evicts into a CPU LRU and publishes it as vLLM's OffloadingConnector does
// (BlockStored and BlockRemoved with medium "CPU", no token ids); a gateway fed by
// its KV events shows, in POST /admin/explain, a prompt evicted from the GPU as a CPU
// hit on that replica; cost_model prefers that CPU hit to a miss elsewhere; and the
// engine then reports the loaded tokens as cached, as the gateway predicted.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { BUILD, ROOT, startSim, startGateway, metrics, metricValue, sleep } from './lib.mjs';

const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const MODEL = 'inferrail/sim-8b';
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

// A simulator publishing events on two random loopback ports (another pair is
// tried when one is taken).
async function eventSim(extra) {
  for (let attempt = 0; attempt < 20; attempt++) {
    const pub = 10000 + Math.floor(Math.random() * 9998), replay = pub + 1;
    const cfg = { enable_kv_cache_events: true, publisher: 'zmq', endpoint: `tcp://127.0.0.1:${pub}`, replay_endpoint: `tcp://127.0.0.1:${replay}` };
    try {
      const sim = await startSim(['--zero-latency', '--enable-prompt-tokens-details', '--kv-events-config', JSON.stringify(cfg), ...extra]);
      cleanup.push(() => sim.stop());
      return { ...sim, pub, replay };
    } catch (e) {
      if (!/cannot bind/.test(String(e.message))) throw e;
    }
  }
  throw new Error('no free port pair for the KV events');
}

function tokens(prompt) {
  const out = execFileSync(path.join(BUILD, 'inferrail-gateway'), ['tokenize', '--tokenizer', 'builtin:sim'],
    { input: JSON.stringify({ model: MODEL, prompt }) });
  return JSON.parse(out).token_ids;
}

function subscribe(sim, seconds = 0.3) {
  return new Promise((resolve, reject) => {
    const c = spawn(PY, [path.join(ROOT, 'tests/tools/kv-events-sub.py'), String(sim.pub), String(sim.replay), '--seconds', String(seconds)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    c.stdout.on('data', (d) => { out += d; });
    c.on('exit', (code) => code === 0 ? resolve(out.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l))) : reject(new Error(`subscriber exited ${code}`)));
  });
}

async function complete(url, prompt) {
  const r = await fetch(url + '/v1/completions', { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 1 }) });
  assert.equal(r.status, 200);
  return { j: await r.json(), r };
}

async function explain(gw, prompt) {
  const r = await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 1 }) });
  assert.equal(r.status, 200);
  return await r.json();
}
const row = (ex, id) => ex.candidates.find((c) => c.replica === id);

const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix', 'engine'];
let seed = 7;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
// A prompt of 8 full blocks and a partial one (so that its last block is never whole).
function prompt(head) {
  let p = head + ' ' + Array.from({ length: 110 }, () => words[rnd(words.length)]).join(' ');
  for (;;) {
    const n = tokens(p).length;
    if (n > 8 * 16 && n < 9 * 16) return p;
    p = n <= 8 * 16 ? p + ' ' + words[rnd(words.length)] : p.slice(0, p.lastIndexOf(' '));
  }
}

const simArgs = ['--num-gpu-blocks-override', '16', '--max-model-len', '250'];

test('the simulator publishes its CPU tier as vLLM\'s OffloadingConnector does', async () => {
  const sim = await eventSim([...simArgs, '--num-cpu-blocks', '4', '--kv-events-encoding', 'array', '--kv-events-hash', 'int']);
  for (const h of ['One', 'Two', 'Three']) await complete(sim.url, prompt(h));
  // The publisher flushes every 2 ms, later on a loaded machine: subscribe again (each
  // replays from 0) until the CPU tier's stores and removals are there, for up to 20 s.
  let events = [];
  const has = (type) => events.some((e) => e.type === type && e.medium === 'CPU');
  for (const deadline = Date.now() + 20000; Date.now() < deadline;) {
    events = (await subscribe(sim)).flatMap((b) => b.events);
    if (has('BlockStored') && has('BlockRemoved')) break;
  }
  const cpuStored = events.filter((e) => e.type === 'BlockStored' && e.medium === 'CPU');
  const cpuRemoved = events.filter((e) => e.type === 'BlockRemoved' && e.medium === 'CPU');
  assert.ok(cpuStored.length >= 1, JSON.stringify(events.map((e) => [e.type, e.medium])));
  for (const e of cpuStored) {
    assert.equal(e.parent_block_hash, null);
    assert.deepEqual(e.token_ids, []);
    assert.equal(e.block_size, 16);
  }
  // 9 evicted full blocks through a 4-block tier: its oldest copies were removed.
  assert.ok(cpuRemoved.length >= 1);
  // Every CPU copy names a block the GPU stored before, and is announced before the
  // GPU removal of that block (so that a subscriber still knows where it goes).
  const seen = new Map();
  events.forEach((e, i) => { for (const h of e.block_hashes || []) if (!seen.has(`${e.type}/${e.medium}/${h}`)) seen.set(`${e.type}/${e.medium}/${h}`, i); });
  for (const e of cpuStored) {
    for (const h of e.block_hashes) {
      assert.ok(seen.get(`BlockStored/GPU/${h}`) < seen.get(`BlockStored/CPU/${h}`));
      assert.ok(seen.get(`BlockStored/CPU/${h}`) < seen.get(`BlockRemoved/GPU/${h}`));
    }
  }
  const page = await (await fetch(sim.url + '/metrics')).text();
  assert.match(page, /^vllm:external_prefix_cache_queries_total\{engine="0",model_name="inferrail\/sim-8b"\} [1-9]/m);
  assert.match(page, /^vllm:external_prefix_cache_hits_total\{/m);
});

test('a prompt evicted to the CPU tier is a CPU hit in /admin/explain, and cost_model takes it', async () => {
  const tier = await eventSim([...simArgs, '--num-cpu-blocks', '64', '--cpu-transfer-token-us', '5']);
  const plain = await eventSim(simArgs);
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim', policy: 'cost_model' }],
    replicas: [tier, plain].map((s, i) => ({ id: i ? 'plain' : 'tier', url: s.url, kv_events: { endpoint: `tcp://127.0.0.1:${s.pub}`, replay_endpoint: `tcp://127.0.0.1:${s.replay}` } })),
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const a = prompt('Alpha head'), ids = tokens(a);
  const full = Math.floor(ids.length / 16) * 16; // 128: the prompt's 8 full blocks
  for (let i = 0; i < 400 && row(await explain(gw, a), 'tier').index_source !== 'events'; i++) await sleep(25);
  // a straight to the tier replica; then two other prompts push it off the GPU.
  await complete(tier.url, a);
  let r;
  for (let i = 0; i < 400; i++) {
    r = row(await explain(gw, a), 'tier');
    if (r.predicted_cached_tokens === full) break;
    await sleep(25);
  }
  assert.equal(r.predicted_cached_tokens, full, JSON.stringify(r));
  assert.equal(r.predicted_cpu_tokens, 0);
  await complete(tier.url, prompt('Beta head'));
  await complete(tier.url, prompt('Gamma head'));
  for (let i = 0; i < 400; i++) {
    r = row(await explain(gw, a), 'tier');
    if (r.predicted_cached_tokens === 0 && r.predicted_cpu_tokens > 0) break;
    await sleep(25);
  }
  // Nothing of a is on the tier replica's GPU, all of it in its CPU tier.
  assert.equal(r.predicted_cached_tokens, 0, JSON.stringify(r));
  assert.equal(r.predicted_cpu_tokens, full, JSON.stringify(r));
  assert.ok(r.index_cpu_blocks >= 8);
  assert.equal(r.index_source, 'events');
  // A CPU hit against a miss: cost_model prefers the CPU hit.
  const ex = await explain(gw, a);
  const miss = row(ex, 'plain');
  assert.equal(miss.predicted_cached_tokens, 0);
  assert.equal(miss.predicted_cpu_tokens, 0);
  assert.ok(row(ex, 'tier').estimated_ttft_ms < miss.estimated_ttft_ms, JSON.stringify(ex.candidates));
  assert.equal(ex.winner, 'tier');
  // Through the gateway: the tier replica answers, and reports the loaded tokens as
  // cached (vLLM counts a connector's hits in num_cached_tokens).
  const { j, r: res } = await complete(gw.url, a);
  assert.equal(res.headers.get('x-inferrail-replica'), 'tier');
  assert.equal(j.usage.prompt_tokens_details.cached_tokens, full);
  // The gateway's prediction, checked against that, counts the CPU tier's part too.
  assert.equal(Number(res.headers.get('x-inferrail-cached-tokens')), full);
  const page = await (await fetch(tier.url + '/metrics')).text();
  assert.match(page, new RegExp(`^vllm:external_prefix_cache_hits_total\\{[^}]*\\} ${full}\\.0$`, 'm'));
  // Loaded back, a is on the GPU again (its copies stay in the CPU tier).
  for (let i = 0; i < 400; i++) {
    r = row(await explain(gw, a), 'tier');
    if (r.predicted_cached_tokens === full) break;
    await sleep(25);
  }
  assert.equal(r.predicted_cached_tokens, full, JSON.stringify(r));
  assert.equal(r.predicted_cpu_tokens, 0);
  const gpage = await metrics(gw.admin);
  assert.equal(metricValue(gpage, 'inferrail_kv_events_decode_errors_total', 'replica="tier"'), 0);
  assert.equal(metricValue(gpage, 'inferrail_kv_events_refused_total', 'replica="tier"'), 0);
  assert.equal(metricValue(gpage, 'inferrail_kv_events_fallbacks_total', 'replica="tier"'), 0);
  assert.equal(metricValue(gpage, 'inferrail_predictions_total', 'replica="tier",result="exact"'), 1, gpage.split('\n').filter((l) => l.startsWith('inferrail_predictions')).join('\n'));
});

test('each data-parallel rank has its own CPU tier', async () => {
  const sim = await startSim(['--zero-latency', '--enable-prompt-tokens-details', '--data-parallel-size', '2', ...simArgs, '--num-cpu-blocks', '32']);
  cleanup.push(() => sim.stop());
  const on = async (rank, p) => {
    const r = await fetch(sim.url + '/v1/completions', { method: 'POST', headers: { 'x-data-parallel-rank': String(rank) }, body: JSON.stringify({ model: MODEL, prompt: p, max_tokens: 1 }) });
    assert.equal(r.status, 200);
    return (await r.json()).usage.prompt_tokens_details?.cached_tokens ?? 0;
  };
  const a = prompt('Delta head'), full = Math.floor(tokens(a).length / 16) * 16;
  await on(1, a);
  await on(1, prompt('Epsilon head'));
  await on(1, prompt('Zeta head')); // a is now in rank 1's CPU tier only
  assert.equal(await on(0, a), 0); // rank 0 never saw it
  assert.equal(await on(1, a), full); // rank 1 loads it back
  const page = await (await fetch(sim.url + '/metrics')).text();
  const hits = (r) => Number(page.match(new RegExp(`^vllm:external_prefix_cache_hits_total\\{engine="${r}"[^}]*\\} (\\S+)$`, 'm'))[1]);
  assert.equal(hits(1), full);
  assert.equal(hits(0), 0);
});
