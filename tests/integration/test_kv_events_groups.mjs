// A hybrid model's KV events through the subscriber: a sliding-window group and a
// full-attention group publish the same blocks (vLLM's group_idx and
// kv_cache_spec_kind), and the window group lets go of all but its last block. The
// gateway follows the full-attention group only, so the whole prompt stays
// predicted, in both encodings, and the window's events are counted as another
// group's (tests/tools/kv-events-pub.py's hybrid-store).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { ROOT, BUILD, startSim, startGateway, metrics, metricValue, sleep } from './lib.mjs';

const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const MODEL = 'inferrail/sim-8b';
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

async function startPublisher(args) {
  const child = spawn(PY, [path.join(ROOT, 'tests/tools/kv-events-pub.py'), ...args], { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = readline.createInterface({ input: child.stdout });
  const waiting = [];
  lines.on('line', (l) => waiting.shift()?.(l));
  const next = () => new Promise((r) => waiting.push(r));
  const exited = new Promise((_, reject) => child.on('exit', (code) => reject(new Error(`publisher exited ${code}`))));
  exited.catch(() => {});
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

async function explainRow(gw, prompt) {
  const r = await fetch(gw.admin + '/admin/explain?path=/v1/completions', { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 1 }) });
  assert.equal(r.status, 200);
  return (await r.json()).candidates.find((c) => c.replica === 'ev');
}

async function until(gw, prompt, pred, what) {
  let last;
  for (let i = 0; i < 400; i++) {
    last = await explainRow(gw, prompt);
    if (pred(last)) return last;
    await sleep(25);
  }
  assert.fail(`${what}: ${JSON.stringify(last)}`);
}

for (const encoding of ['map', 'array']) {
  test(`the full-attention group is followed, the window's removals are not: ${encoding}`, async () => {
    const pub = await startPublisher(['--encoding', encoding, '--hash', encoding === 'map' ? 'bytes' : 'int']);
    const sim = await startSim(['--zero-latency']);
    cleanup.push(() => sim.stop());
    const gw = await startGateway({
      models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
      replicas: [{ id: 'ev', url: sim.url, kv_events: { endpoint: `tcp://127.0.0.1:${pub.pub}`, replay_endpoint: `tcp://127.0.0.1:${pub.replay}` } }],
      health: { interval: '10s' },
    });
    cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
    const prompt = 'Hybrid: ' + 'sliding window and full attention layers share one prompt '.repeat(8);
    const ids = tokens(prompt);
    const blocks = Math.floor(ids.length / 16);
    assert.ok(blocks >= 4);
    await until(gw, prompt, (c) => c.index_source === 'events', 'connected');
    assert.match(await pub.cmd({ op: 'hybrid-store', tokens: ids, window: 1 }), /^ok \d+/);
    const usable = Math.floor((ids.length - 1) / 16) * 16; // the last token is always computed
    const r = await until(gw, prompt, (c) => c.predicted_cached_tokens === usable, 'the whole prompt, by full attention');
    assert.equal(r.index_event_blocks, blocks);
    const page = await metrics(gw.admin);
    // The window group's store and removal: two events of another group.
    assert.equal(metricValue(page, 'inferrail_kv_events_other_group_total', 'replica="ev"'), 2);
    assert.equal(metricValue(page, 'inferrail_kv_events_blocks_removed_total', 'replica="ev"'), 0);
    assert.equal(metricValue(page, 'inferrail_kv_events_decode_errors_total', 'replica="ev"'), 0);
  });
}
