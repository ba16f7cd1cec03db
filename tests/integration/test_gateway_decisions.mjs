// The decision log through the real binary: one JSON line per routing decision
// of the sampled requests, with the policy, the attempt, the prompt's tokens,
// the winner and every candidate's load; the attempts of one request are kept
// together (sampled by request id); prompts never appear; the counts show on
// /metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startSim, startGateway, metrics, metricValue, sleep } from './lib.mjs';
import { startFakeEngine } from './fake_engine.mjs';

const SECRET = 'SECRET-PROMPT-TEXT-4242';

async function fleet(sampleRate) {
  const sims = [await startSim(), await startSim()];
  // Refuses every completion with a 503: each request that lands there first
  // is retried on a simulator, a second decision of the same request.
  const busy = await startFakeEngine('status-503');
  const file = path.join(os.tmpdir(), `ir-decisions-${process.pid}-${sampleRate}.jsonl`);
  fs.rmSync(file, { force: true });
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim', policy: 'round_robin' }],
    replicas: [{ id: 'a', url: sims[0].url }, { id: 'b', url: sims[1].url }, { id: 'busy', url: busy.url }],
    retry: { max_attempts: 3, backoff: '1ms' },
    health: { unhealthy_threshold: 1000, ejection_backoff: '1ms', max_ejection_percent: 0 },
    observability: { decision_log: { path: file, sample_rate: sampleRate } },
  });
  return {
    gw, file,
    async stop() { await gw.stop(); await busy.stop(); for (const s of sims) await s.stop(); fs.rmSync(file, { force: true }); },
  };
}

async function send(gw, id) {
  const r = await fetch(gw.url + '/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-request-id': id },
    body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: `${SECRET} ${id}`, max_tokens: 2 }),
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
}

function readLines(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
}

// Waits until the writer has caught up: the file holds at least `min` lines,
// as many as /metrics says were written, and no more arrive for 100 ms.
async function settle(gw, file, min) {
  let last = -1;
  for (let i = 0; i < 200; i++) {
    const page = await metrics(gw.admin);
    const written = metricValue(page, 'inferrail_decision_log_records_total', 'result="written"');
    const lines = readLines(file);
    if (written === lines.length && written >= min && written === last) return { page, lines };
    last = written === lines.length ? written : -1;
    await sleep(100);
  }
  throw new Error(`the decision log never settled at ${min} lines or more`);
}

test('every decision of every request at sample_rate 1, never the prompt', async () => {
  const f = await fleet(1);
  try {
    for (let i = 0; i < 30; i++) await send(f.gw, `req-${i}`);
    const { page, lines } = await settle(f.gw, f.file, 30);
    assert.equal(metricValue(page, 'inferrail_decision_log_records_total', 'result="dropped"'), 0);
    assert.ok(!fs.readFileSync(f.file, 'utf8').includes(SECRET), 'a prompt was logged');
    const byId = new Map();
    for (const l of lines) {
      assert.equal(l.model, 'inferrail/sim-8b');
      assert.equal(l.policy, 'round_robin');
      assert.equal(l.predicted, true);
      assert.ok(l.prompt_tokens > 0);
      assert.ok(l.candidates.some((c) => c.replica === l.winner));
      for (const c of l.candidates) {
        for (const k of ['in_flight', 'pending', 'prompt_tokens_in_flight', 'pending_prompt_tokens', 'predicted_cached_tokens', 'kv_capacity_blocks'])
          assert.equal(typeof c[k], 'number', `${k} in ${JSON.stringify(c)}`);
        assert.ok(c.engine === null || typeof c.engine.waiting === 'number');
      }
      if (!byId.has(l.request_id)) byId.set(l.request_id, []);
      byId.get(l.request_id).push(l);
    }
    assert.equal(byId.size, 30);
    let retried = 0;
    for (const [id, ls] of byId) {
      assert.deepEqual(ls.map((l) => l.attempt), ls.map((_, i) => i + 1), id);
      assert.notEqual(ls.at(-1).winner, 'busy', 'the last attempt answered');
      if (ls.length > 1) {
        retried++;
        assert.equal(ls[0].winner, 'busy');
        assert.ok(ls[1].left_out.some((x) => x.replica === 'busy' && x.state === 'tried'), JSON.stringify(ls[1]));
      }
    }
    assert.ok(retried >= 5, `round robin sends a third to the busy replica: ${retried} retried`);
  } finally {
    await f.stop();
  }
});

test('sampled by request id: some requests, each with all its attempts', async () => {
  const f = await fleet(0.5);
  try {
    for (let i = 0; i < 60; i++) await send(f.gw, `sample-${i}`);
    const { lines } = await settle(f.gw, f.file, 1);
    const ids = new Set(lines.map((l) => l.request_id));
    assert.ok(ids.size >= 12 && ids.size <= 48, `${ids.size} of 60 sampled at 0.5`);
    for (const id of ids) {
      const ls = lines.filter((l) => l.request_id === id);
      assert.deepEqual(ls.map((l) => l.attempt), ls.map((_, i) => i + 1), id);
      assert.notEqual(ls.at(-1).winner, 'busy', `${id}: its answering attempt was kept`);
    }
  } finally {
    await f.stop();
  }
});
