// The exact KV index fed by engine KV events, end to end: a publisher written to
// vLLM's wire format (tests/tools/kv-events-pub.py, python3-zmq and python3-msgpack)
// in both encodings and both hash kinds, a simulator as the replica's HTTP side, and
// the gateway's /admin/explain. Stored blocks become predictions of exactly the
// stored prefix, removals and clears take them back, a dropped batch is replayed,
// a gap no replay covers falls back, a restart clears, and garbage is skipped.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { ROOT, BUILD, startSim, startGateway, metrics, metricValue, sleep, logged } from './lib.mjs';

const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const MODEL = 'inferrail/sim-8b';
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

// A publisher: resolves to {pub, replay, cmd(obj) -> "ok SEQ", stop()}.
async function startPublisher(args) {
  const child = spawn(PY, [path.join(ROOT, 'tests/tools/kv-events-pub.py'), ...args], { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = readline.createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (l) => waiting.shift()?.(l));
  const next = () => new Promise((r) => waiting.push(r));
  const exited = new Promise((_, reject) => child.on('exit', (code) => reject(new Error(`publisher exited ${code}`))));
  exited.catch(() => {}); // after a normal start, its exit is no error
  const ports = JSON.parse(await Promise.race([next(), exited]));
  const p = {
    ...ports,
    async cmd(obj) { const r = next(); child.stdin.write(JSON.stringify(obj) + '\n'); return r; },
    async stop() { child.stdin.end(); child.kill(); },
  };
  cleanup.push(() => p.stop());
  return p;
}

function tokens(prompt) {
  const out = execFileSync(path.join(BUILD, 'inferrail-gateway'), ['tokenize', '--tokenizer', 'builtin:sim'],
    { input: JSON.stringify({ model: MODEL, prompt }) });
  return JSON.parse(out).token_ids;
}

async function explain(gw, prompt) {
  const r = await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 1 }) });
  assert.equal(r.status, 200);
  return await r.json();
}
const row = (ex, id) => ex.candidates.find((c) => c.replica === id);

// Polls until the replica's prediction for prompt is want (the subscriber applies
// events on its own thread).
async function until(gw, id, prompt, pred, what) {
  let last;
  for (let i = 0; i < 400; i++) {
    last = row(await explain(gw, prompt), id);
    if (pred(last)) return last;
    await sleep(25);
  }
  assert.fail(`${what}: ${JSON.stringify(last)}`);
}

const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix', 'engine'];
let seed = 5;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const sentence = (n) => Array.from({ length: n }, () => words[rnd(words.length)]).join(' ');

// prepare(pub) runs before the gateway starts (what it publishes comes by replay).
async function fleet(encoding, hash, extra = [], prepare = async () => {}) {
  const pub = await startPublisher(['--encoding', encoding, '--hash', hash, ...extra]);
  await prepare(pub);
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    replicas: [
      { id: 'ev', url: sim.url, kv_events: { endpoint: `tcp://127.0.0.1:${pub.pub}`, replay_endpoint: `tcp://127.0.0.1:${pub.replay}` } },
      { id: 'approx', url: sim.url },
    ],
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  return { pub, sim, gw };
}

const usable = (ids) => Math.floor((ids.length - 1) / 16) * 16;

for (const [encoding, hash] of [['map', 'bytes'], ['array', 'int']]) {
  test(`stored, removed, cleared: ${encoding} encoding, ${hash} hashes`, async () => {
    const { pub, gw } = await fleet(encoding, hash);
    const prompt = 'System: ' + sentence(80);
    const ids = tokens(prompt);
    assert.ok(ids.length > 64);
    // Events once the SUB socket has connected (events-stale until then).
    let r = await until(gw, 'ev', prompt, (c) => c.index_source === 'events', 'connected');
    assert.equal(r.predicted_cached_tokens, 0);
    assert.equal(r.prediction_trust, 1);
    assert.equal(row(await explain(gw, prompt), 'approx').index_source, 'approximate');
    // The engine holds the prompt's first 3 blocks: exactly 48 tokens predicted.
    await pub.cmd({ op: 'store', tokens: ids.slice(0, 48) });
    r = await until(gw, 'ev', prompt, (c) => c.predicted_cached_tokens === 48, 'three blocks stored');
    assert.equal(r.index_event_blocks, 3);
    // Then all of it: every usable block (the last token is always computed).
    await pub.cmd({ op: 'store', tokens: ids });
    await until(gw, 'ev', prompt, (c) => c.predicted_cached_tokens === usable(ids), 'all stored');
    // A different prompt sharing the head hits only the head.
    const other = prompt.split(' ').slice(0, 20).join(' ') + ' ' + sentence(40);
    const oids = tokens(other);
    let common = 0;
    while (common < oids.length && oids[common] === ids[common]) common++;
    const ex = row(await explain(gw, other), 'ev');
    assert.equal(ex.predicted_cached_tokens, Math.min(Math.floor(common / 16), Math.floor((oids.length - 1) / 16)) * 16);
    // Block 2 evicted: the engine's hit stops at 2 blocks, whatever follows.
    await pub.cmd({ op: 'remove', tokens: ids, from: 2 });
    await until(gw, 'ev', prompt, (c) => c.predicted_cached_tokens === 32, 'removed from block 2');
    await pub.cmd({ op: 'clear' });
    await until(gw, 'ev', prompt, (c) => c.predicted_cached_tokens === 0, 'cleared');
    // Garbage is counted and skipped; what follows still applies.
    await pub.cmd({ op: 'garbage' });
    await pub.cmd({ op: 'store', tokens: ids.slice(0, 32) });
    await until(gw, 'ev', prompt, (c) => c.predicted_cached_tokens === 32, 'after garbage');
    const page = await metrics(gw.admin);
    assert.equal(metricValue(page, 'inferrail_kv_events_decode_errors_total', 'replica="ev"'), 1);
    assert.equal(metricValue(page, 'inferrail_kv_events_clears_total', 'replica="ev"'), 1);
    assert.equal(metricValue(page, 'inferrail_kv_events_gaps_total', 'replica="ev"'), 0);
    // The subscriber's families are the registry's: the page, with them, passes promtool.
    const lint = spawnSync('promtool', ['check', 'metrics'], { input: page, encoding: 'utf8' });
    assert.equal(lint.error, undefined, 'promtool is missing: scripts/install-deps installs prometheus');
    assert.equal(lint.status, 0, `promtool check metrics failed:\n${lint.stdout}${lint.stderr}`);
    assert.equal(lint.stdout + lint.stderr, '', 'promtool has lint remarks');
  });
}

test('a dropped batch is replayed; a restart clears', async () => {
  const { pub, gw } = await fleet('map', 'bytes');
  const a = 'Alpha ' + sentence(70), b = 'Beta ' + sentence(70);
  const ia = tokens(a), ib = tokens(b);
  await pub.cmd({ op: 'store', tokens: ia.slice(0, 16) });
  await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === 16, 'first batch');
  await pub.cmd({ op: 'drop' });
  await pub.cmd({ op: 'store', tokens: ia }); // lost on the live socket
  await pub.cmd({ op: 'store', tokens: ib }); // its sequence shows the gap
  await until(gw, 'ev', b, (c) => c.predicted_cached_tokens === usable(ib), 'the batch after the gap');
  await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === usable(ia), 'the dropped batch, replayed');
  let page = await metrics(gw.admin);
  assert.equal(metricValue(page, 'inferrail_kv_events_gaps_total', 'replica="ev"'), 1);
  assert.ok(metricValue(page, 'inferrail_kv_events_replayed_batches_total', 'replica="ev"') >= 1);
  assert.equal(metricValue(page, 'inferrail_kv_events_fallbacks_total', 'replica="ev"'), 0);
  assert.equal(row(await explain(gw, a), 'ev').index_source, 'events');
  // The engine restarts: sequence 0 again, its cache empty, then it stores b's head.
  await pub.cmd({ op: 'restart' });
  await pub.cmd({ op: 'store', tokens: ib.slice(0, 16) });
  await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === 0, 'restart cleared a');
  await until(gw, 'ev', b, (c) => c.predicted_cached_tokens === 16, 'b after the restart');
  page = await metrics(gw.admin);
  assert.equal(metricValue(page, 'inferrail_kv_events_restarts_total', 'replica="ev"'), 1);
});

// A view that lacks blocks the engine stored before it began (not orphans: blocks no
// event named) is partial, and says how many it may lack at most.
function assertUnseenPartial(r) {
  assert.equal(r.index_source, 'events-partial', JSON.stringify(r));
  assert.equal(r.index_orphan_blocks, 0);
  assert.ok(r.index_unseen_blocks > 0, JSON.stringify(r));
}

// AllBlocksCleared: nothing is held that the view lacks, so it is whole again.
async function wholeAfterClear(gw, pub, prompt) {
  await pub.cmd({ op: 'clear' });
  const e = await until(gw, 'ev', prompt, (x) => x.index_source === 'events', 'whole after a clear');
  assert.equal(e.index_unseen_blocks, 0);
}

test('a gap the replay cannot cover falls back, then follows the events again', async () => {
  const { pub, gw } = await fleet('array', 'int', ['--buffer-steps', '1']);
  const a = 'Gamma ' + sentence(70), b = 'Delta ' + sentence(70);
  const ia = tokens(a), ib = tokens(b);
  await pub.cmd({ op: 'store', tokens: ia });
  await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === usable(ia), 'a stored');
  for (let i = 0; i < 3; i++) { await pub.cmd({ op: 'drop' }); await pub.cmd({ op: 'store', tokens: tokens(sentence(30)) }); }
  await pub.cmd({ op: 'store', tokens: ib });
  // The view was cleared (a's blocks may be gone on the engine for all the gateway knows).
  await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === 0, 'a cleared by the fallback');
  const page = await metrics(gw.admin);
  assert.equal(metricValue(page, 'inferrail_kv_events_fallbacks_total', 'replica="ev"'), 1);
  await logged(gw, /no longer buffers the missing KV event batches/);
  // The next batch is followed again.
  const cp = 'Epsilon ' + sentence(50), c = tokens(cp);
  await pub.cmd({ op: 'store', tokens: c });
  const r = await until(gw, 'ev', cp, (x) => x.predicted_cached_tokens === usable(c), 'followed again');
  // The engine still holds a's blocks (and b's), which no event applied since named.
  assertUnseenPartial(r);
  assert.equal(row(await explain(gw, a), 'ev').predicted_cached_tokens, 0);
  await wholeAfterClear(gw, pub, cp);
});

// A gateway that joins after the engine's replay buffer has moved past batch 0 cannot know
// what the engine stored before: its view is partial (not orphans: blocks no event names)
// until the engine clears its cache.
test('a late join whose replay no longer reaches batch 0 is partial until a clear', async () => {
  const { pub, gw } = await fleet('map', 'int', ['--buffer-steps', '1'], async (p) => {
    for (let i = 0; i < 3; i++) await p.cmd({ op: 'store', tokens: tokens('Before ' + sentence(30 + i)) });
  });
  const a = 'Theta ' + sentence(70), ia = tokens(a);
  await pub.cmd({ op: 'store', tokens: ia });
  assertUnseenPartial(await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === usable(ia), 'a stored'));
  // The state set on /metrics says the same.
  const src = (page, s) => metricValue(page, 'inferrail_index_source', `replica="ev",source="${s}"`);
  let page = await metrics(gw.admin);
  assert.deepEqual(['events', 'events-partial', 'approximate-after-gap', 'events-stale'].map((s) => src(page, s)), [0, 1, 0, 0]);
  assert.equal(src(page, 'approximate'), undefined);
  // The lag, whole microseconds in seconds, prints as such (it printed 0.0023599999999999997).
  const lag = page.split('\n').find((l) => l.startsWith('inferrail_kv_events_lag_seconds{replica="ev"}'));
  assert.match(lag, / \d+(\.\d{1,6})?(e[-+]?\d+)?$/, lag);
  assert.equal(metricValue(page, 'inferrail_index_source', 'replica="approx"'), undefined);
  await wholeAfterClear(gw, pub, a);
  page = await metrics(gw.admin);
  assert.equal(src(page, 'events'), 1);
  assert.equal(src(page, 'events-partial'), 0);
});

// A replay socket that misbehaves (found by a hostile-publisher review): one that answers
// only batches older than asked made the gateway ask again thousands of times a second,
// and one batch numbered far past the live stream made every later live batch look old,
// freezing the view at full trust. Both must end in one fallback, then the live events.
for (const mode of ['old', 'ahead']) {
  test(`a replay that answers ${mode === 'old' ? 'only old batches' : 'a batch numbered past the live stream'} falls back once, then follows the events`, async () => {
    const { pub, gw } = await fleet('map', 'int');
    const a = 'Iota ' + sentence(70), ia = tokens(a);
    await pub.cmd({ op: 'store', tokens: ia });
    await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === usable(ia), 'a stored');
    await pub.cmd({ op: 'replay-mode', mode });
    await pub.cmd({ op: 'drop' });
    await pub.cmd({ op: 'store', tokens: tokens(sentence(30)) }); // lost on the live socket
    await pub.cmd({ op: 'store', tokens: tokens(sentence(31)) }); // shows the gap
    await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === 0, 'a cleared by the fallback');
    await sleep(300);
    let page = await metrics(gw.admin);
    const fallbacks = metricValue(page, 'inferrail_kv_events_fallbacks_total', 'replica="ev"');
    assert.ok(fallbacks >= 1 && fallbacks <= 2, `fallbacks ${fallbacks}`); // a retry from 0 may fall back again
    const replayed = metricValue(page, 'inferrail_kv_events_replayed_batches_total', 'replica="ev"');
    assert.ok(replayed <= 20, `replayed ${replayed}: the gateway kept asking`);
    const cp = 'Kappa ' + sentence(50), c = tokens(cp);
    await pub.cmd({ op: 'store', tokens: c });
    const r = await until(gw, 'ev', cp, (x) => x.predicted_cached_tokens === usable(c), 'followed again');
    assert.ok(['events', 'events-partial'].includes(r.index_source), r.index_source);
    page = await metrics(gw.admin);
    assert.ok(metricValue(page, 'inferrail_kv_events_replayed_batches_total', 'replica="ev"') <= 20);
  });
}

test('a publisher that goes away leaves a stale view, trusted at index.stale_trust', async () => {
  const { pub, gw } = await fleet('map', 'int');
  const prompt = 'Zeta ' + sentence(80), ids = tokens(prompt);
  await until(gw, 'ev', prompt, (c) => c.index_source === 'events', 'connected');
  await pub.cmd({ op: 'store', tokens: ids });
  await until(gw, 'ev', prompt, (c) => c.predicted_cached_tokens === usable(ids), 'stored');
  await pub.stop();
  const r = await until(gw, 'ev', prompt, (c) => c.index_source === 'events-stale', 'stale after the publisher left');
  assert.equal(r.prediction_trust, 0.5);
  assert.equal(r.predicted_cached_tokens, Math.floor(usable(ids) * 0.5)); // what the policy counts
  assert.equal(row(await explain(gw, prompt), 'approx').prediction_trust, 1);
});

test('an engine that comes back on the same endpoint is rebuilt from scratch', async () => {
  const { pub, gw } = await fleet('map', 'bytes');
  const a = 'Eta ' + sentence(70), b = 'Theta ' + sentence(70);
  const ia = tokens(a), ib = tokens(b);
  await until(gw, 'ev', a, (c) => c.index_source === 'events', 'connected');
  await pub.cmd({ op: 'store', tokens: ia }); // seq 0
  await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === usable(ia), 'a stored');
  await pub.stop();
  await until(gw, 'ev', a, (c) => c.index_source === 'events-stale', 'disconnected');
  // A new engine process on the same ports whose sequence happens to continue where the
  // old one stopped: only the reconnection says its cache is not the old one's.
  let again;
  for (let i = 0; i < 50 && !again; i++) {
    try { again = await startPublisher(['--pub-port', String(pub.pub), '--replay-port', String(pub.replay), '--first-seq', '1']); }
    catch { await sleep(100); } // the old process may still hold the port for a moment
  }
  assert.ok(again, 'the publisher could not bind its old ports again');
  await until(gw, 'ev', a, (c) => c.index_source === 'events' && c.predicted_cached_tokens === 0, 'a cleared on reconnect');
  await again.cmd({ op: 'store', tokens: ib });
  await until(gw, 'ev', b, (c) => c.predicted_cached_tokens === usable(ib), 'b from the new engine');
  assert.equal(row(await explain(gw, a), 'ev').predicted_cached_tokens, 0);
  const page = await metrics(gw.admin);
  assert.equal(metricValue(page, 'inferrail_kv_events_reconnects_total', 'replica="ev"'), 1);
});

for (const described of [false, true]) test(`the CPU tier (${described ? 'copies with tokens' : 'vLLM\'s tokenless copies'}): offloaded blocks are predicted as CPU hits and priced by cost_model`, async () => {
  const pub = await startPublisher(['--encoding', 'array', '--hash', 'int']);
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim', policy: 'cost_model' }],
    replicas: [
      { id: 'ev', url: sim.url, kv_events: { endpoint: `tcp://127.0.0.1:${pub.pub}`, replay_endpoint: `tcp://127.0.0.1:${pub.replay}` } },
      { id: 'approx', url: sim.url },
    ],
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const prompt = 'Iota ' + sentence(120), ids = tokens(prompt);
  await until(gw, 'ev', prompt, (c) => c.index_source === 'events', 'connected');
  await pub.cmd({ op: 'store', tokens: ids });
  await pub.cmd({ op: 'offload', tokens: ids, from: 2, described });
  await pub.cmd({ op: 'evict-gpu', tokens: ids, from: 2 });
  const r = await until(gw, 'ev', prompt, (c) => c.predicted_cached_tokens === 32, 'two GPU blocks left');
  assert.equal(r.predicted_cpu_tokens, usable(ids) - 32);
  assert.equal(r.index_cpu_blocks, Math.floor(ids.length / 16) - 2);
  const ex = await explain(gw, prompt);
  const other = row(ex, 'approx');
  assert.equal(other.predicted_cpu_tokens, 0);
  // A CPU hit costs transfer time, far less than recomputing: cost_model picks it.
  assert.ok(r.estimated_ttft_ms < other.estimated_ttft_ms, JSON.stringify(ex.candidates));
  assert.equal(ex.winner, 'ev');
});

// A replay socket that serves another data-parallel rank's buffer (every batch says
// data_parallel_rank 0) to the target of rank 1: its batches are skipped and counted,
// never taken into rank 1's view; rank 1's own live batches are followed.
test('batches of another data-parallel rank are skipped, not taken as this rank\'s', async () => {
  const pub = await startPublisher(['--encoding', 'map', '--hash', 'int', '--rank', '1', '--replay-rank', '0']);
  const sim = await startSim(['--zero-latency', '--data-parallel-size', '2']);
  cleanup.push(() => sim.stop());
  const a = 'Omicron ' + sentence(70), ia = tokens(a);
  await pub.cmd({ op: 'store', tokens: ia }); // before the gateway: it comes by replay
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    // rank 1's endpoints are the configured ports plus 1: point rank 0 at a dead pair
    replicas: [{ id: 'e', url: sim.url, data_parallel_size: 2,
      kv_events: { endpoint: `tcp://127.0.0.1:${pub.pub - 1}`, replay_endpoint: `tcp://127.0.0.1:${pub.replay - 1}` } }],
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const rank1 = (id) => id === 'e/dp1';
  let page;
  for (const end = Date.now() + 20000; Date.now() < end; await sleep(50)) {
    page = await metrics(gw.admin);
    if (metricValue(page, 'inferrail_kv_events_other_rank_batches_total', 'replica="e/dp1"') >= 1) break;
  }
  assert.equal(metricValue(page, 'inferrail_kv_events_other_rank_batches_total', 'replica="e/dp1"'), 1, page);
  const ex = await explain(gw, a);
  assert.equal(ex.candidates.find((c) => rank1(c.replica)).predicted_cached_tokens, 0, 'rank 0\'s replayed batch was taken');
  const b = 'Pi ' + sentence(60), ib = tokens(b);
  await pub.cmd({ op: 'store', tokens: ib });
  await until(gw, 'e/dp1', b, (c) => c.predicted_cached_tokens === usable(ib), 'rank 1\'s live batch followed');
});

// A replay answered before any live batch, numbered far past where the live stream
// turns out to be, once made every live batch look applied (the view frozen, trusted
// whole). The first live batch now shows it: a fallback, and the stream is followed.
test('a replay numbered far ahead of the live stream does not freeze it', async () => {
  const { pub, gw } = await fleet('array', 'bytes', [], async (p) => {
    await p.cmd({ op: 'store', tokens: tokens('Rho ' + sentence(40)) });
    await p.cmd({ op: 'replay-mode', mode: 'ahead' });
  });
  for (const end = Date.now() + 20000; Date.now() < end; await sleep(50))
    if (metricValue(await metrics(gw.admin), 'inferrail_kv_events_replayed_batches_total', 'replica="ev"') >= 1) break;
  const c = 'Sigma ' + sentence(60), ic = tokens(c);
  await pub.cmd({ op: 'store', tokens: ic });
  await until(gw, 'ev', c, (x) => x.predicted_cached_tokens === usable(ic), 'the live stream followed');
  const page = await metrics(gw.admin);
  assert.equal(metricValue(page, 'inferrail_kv_events_fallbacks_total', 'replica="ev"'), 1);
  await logged(gw, /a KV event replay sent batches numbered past the live stream/);
});

// A replay that leaves out a batch it owes (its socket dropped it under load) is asked
// again from the hole, not given up for a fallback that clears the view.
test('a replay with a hole is asked again from it', async () => {
  const { pub, gw } = await fleet('map', 'int');
  const a = 'Tau ' + sentence(70), ia = tokens(a);
  await pub.cmd({ op: 'store', tokens: ia });
  await until(gw, 'ev', a, (c) => c.predicted_cached_tokens === usable(ia), 'a stored');
  await pub.cmd({ op: 'replay-mode', mode: 'hole-once' });
  const lost = ['Upsilon ' + sentence(50), 'Chi ' + sentence(50)].map((t) => [t, tokens(t)]);
  for (const [, il] of lost) {
    await pub.cmd({ op: 'drop' });
    await pub.cmd({ op: 'store', tokens: il }); // lost live: the replay owes both
  }
  const d = 'Phi ' + sentence(50), id = tokens(d);
  await pub.cmd({ op: 'store', tokens: id }); // shows the gap; the first replay skips Chi
  await until(gw, 'ev', d, (c) => c.predicted_cached_tokens === usable(id), 'the batch after the hole');
  for (const [t, il] of lost) await until(gw, 'ev', t, (c) => c.predicted_cached_tokens === usable(il), 'a lost batch, replayed');
  const r = row(await explain(gw, a), 'ev');
  assert.equal(r.predicted_cached_tokens, usable(ia), 'the view was kept');
  const page = await metrics(gw.admin);
  assert.equal(metricValue(page, 'inferrail_kv_events_fallbacks_total', 'replica="ev"'), 0);
  assert.ok(metricValue(page, 'inferrail_kv_events_replayed_batches_total', 'replica="ev"') >= 4);
});

// An engine whose blocks are another size than the index's (SGLang's pages are 1 token
// unless --page-size says otherwise): every stored block is refused, counted, and said
// once in the log, naming both sizes, instead of a view that stays empty without a word.
test('stored blocks of another block size are refused, counted and said once', async () => {
  const { pub, gw } = await fleet('map', 'int', ['--block-size', '1']);
  const prompt = 'System: ' + sentence(40);
  const ids = tokens(prompt);
  await until(gw, 'ev', prompt, (c) => c.index_source === 'events', 'connected');
  await pub.cmd({ op: 'store', tokens: ids.slice(0, 20) });
  await pub.cmd({ op: 'store', tokens: ids.slice(0, 30) });
  let page;
  for (let i = 0; i < 200; i++) {
    page = await metrics(gw.admin);
    if (metricValue(page, 'inferrail_kv_events_refused_total', 'replica="ev"') >= 2) break;
    await sleep(25);
  }
  assert.ok(metricValue(page, 'inferrail_kv_events_refused_total', 'replica="ev"') >= 2, page);
  assert.equal(row(await explain(gw, prompt), 'ev').predicted_cached_tokens, 0);
  await logged(gw, /replica ev: its engine stores blocks of 1 tokens, the index 16/);
  const said = gw.log.text.match(/replica ev: its engine stores blocks of 1 tokens, the index 16/g) || [];
  assert.equal(said.length, 1, gw.log.text);
});
