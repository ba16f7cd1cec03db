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
import { startSim, startGateway, metrics, metricValue, sleep, BUILD, logged } from './lib.mjs';
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

// A decision log that cannot take its lines (found by a hostile-operator review): a FIFO
// whose reader never reads made shutdown wait forever in the writer's blocked write, and
// a file that fails every write dropped everything without a word. Shutdown now ends
// within the writer's 2 s grace, and the first failed write is logged.
test('a decision log that blocks or fails: shutdown still ends, and the failure is said', async () => {
  const { spawnSync } = await import('node:child_process');
  const sim = await startSim(['--zero-latency']);
  const fifo = path.join(os.tmpdir(), `ir-decisions-fifo-${process.pid}`);
  fs.rmSync(fifo, { force: true });
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK); // never read
  const cfg = (p) => ({
    models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'a', url: sim.url }],
    observability: { decision_log: { path: p, sample_rate: 1 } },
  });
  try {
    const gw = await startGateway(cfg(fifo));
    // A pipe holds 64 KiB: a few hundred decisions fill it, and the writer blocks.
    for (let i = 0; i < 300; i++) await send(gw, `fifo-${i}`);
    const page = await metrics(gw.admin);
    assert.ok(metricValue(page, 'inferrail_decision_log_records_total', 'result="written"') < 300, page);
    const t0 = Date.now();
    const code = await gw.stop();
    assert.equal(code, 0, gw.log.text);
    assert.ok(Date.now() - t0 < 8000, `shutdown took ${Date.now() - t0} ms`);
    await logged(gw, /did not finish within 2 s/);
    // Every write fails: said once, counted as dropped.
    const full = await startGateway(cfg('/dev/full'));
    for (let i = 0; i < 3; i++) await send(full, `full-${i}`);
    let p2;
    for (let i = 0; i < 50; i++) {
      p2 = await metrics(full.admin);
      if (metricValue(p2, 'inferrail_decision_log_records_total', 'result="dropped"') >= 3) break;
      await sleep(50);
    }
    assert.ok(metricValue(p2, 'inferrail_decision_log_records_total', 'result="dropped"') >= 3, p2);
    assert.equal(await full.stop(), 0, full.log.text);
    assert.equal((full.log.text.match(/cannot write \/dev\/full/g) || []).length, 1, full.log.text);
  } finally {
    fs.closeSync(reader);
    fs.rmSync(fifo, { force: true });
    await sim.stop();
  }
});

test('--check refuses a decision log path that is a directory, naming the key', async () => {
  const { spawnSync } = await import('node:child_process');
  const file = path.join(os.tmpdir(), `ir-dl-dir-${process.pid}.yaml`);
  fs.writeFileSync(file, JSON.stringify({
    models: [{ name: 'm' }], replicas: [{ id: 'a', url: 'http://127.0.0.1:9' }],
    observability: { decision_log: { path: os.tmpdir(), sample_rate: 1 } },
  }));
  const r = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--check', '--config', file], { encoding: 'utf8' });
  fs.rmSync(file, { force: true });
  assert.equal(r.status, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /observability\.decision_log\.path: .* is a directory/);
});
