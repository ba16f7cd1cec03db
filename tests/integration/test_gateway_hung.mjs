// Hung replicas: requests waiting for a head on a replica that its health checks
// mark down move to another one at once; an event stream that stalls past
// upstream.idle_timeout ends with an error event that the OpenAI SDK raises.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startGateway, startSim, metrics, metricValue, rawRequest, sleep } from './lib.mjs';
import { startFakeEngine } from './fake_engine.mjs';

async function until(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('requests waiting on a replica that probes mark down move elsewhere at once', { timeout: 60000 }, async () => {
  const eng = await startFakeEngine('hang');
  const sim = await startSim(['--zero-latency']);
  // One attempt only and a head timeout far past the test's: a request can only
  // succeed by being moved, not by a retry or a timeout.
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 'hung', url: eng.url }, { id: 'live', url: sim.url }],
    routing: { default_policy: 'round_robin' },
    retry: { max_attempts: 1 },
    upstream: { response_timeout: '120s' },
    server: { request_timeout: '120s' },
    health: { interval: '100ms', timeout: '1s', unhealthy_threshold: 2, max_ejection_percent: 0 },
  });
  try {
    const N = 12;
    const body = JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'x', max_tokens: 2 });
    const pending = Array.from({ length: N }, () => fetch(`${gw.url}/v1/completions`, { method: 'POST', body })
      .then(async (r) => ({ status: r.status, replica: r.headers.get('x-inferrail-replica'), text: await r.text() })));
    await until('requests to reach the hung engine', () => eng.requests >= 3);
    const stuck = eng.requests;
    eng.healthStatus = 503;
    const results = await Promise.all(pending);
    for (const r of results) {
      assert.equal(r.status, 200, r.text);
      assert.equal(r.replica, 'live');
    }
    const page = await metrics(gw.admin);
    assert.ok(metricValue(page, 'inferrail_upstream_moved_total') >= stuck, page);
    assert.equal(metricValue(page, 'inferrail_replica_in_flight', 'replica="hung"'), 0);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    await sim.stop();
    await eng.stop();
  }
});

async function stallGateway(scenario) {
  const eng = await startFakeEngine(scenario);
  const gw = await startGateway({
    models: [{ name: 'fake' }],
    replicas: [{ id: 'f0', url: eng.url }],
    server: { workers: 1 },
    upstream: { idle_timeout: '300ms' },
  });
  return { eng, gw };
}

test('a stream that stalls between events ends with an error event the SDK raises', { timeout: 30000 }, async () => {
  const { eng, gw } = await stallGateway('stall-sse');
  try {
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 20000 });
    const stream = await client.completions.create({ model: 'fake', prompt: 'x', max_tokens: 5, stream: true });
    const texts = [];
    await assert.rejects(async () => {
      for await (const c of stream) texts.push(c.choices[0].text);
    }, (e) => {
      assert.ok(e instanceof OpenAI.APIError, String(e));
      assert.match(e.message, /idle_timeout/);
      assert.equal(e.type, 'upstream_stalled');
      return true;
    });
    assert.deepEqual(texts, ['a']);
    const page = await metrics(gw.admin);
    assert.equal(metricValue(page, 'inferrail_upstream_stalls_total'), 1);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    await eng.stop();
  }
});

test('a stream that stalls inside an event is cut without a clean end, and counted', { timeout: 30000 }, async () => {
  const { eng, gw } = await stallGateway('stall-mid-event');
  try {
    const body = JSON.stringify({ model: 'fake', prompt: 'x', stream: true });
    const r = await rawRequest(gw.port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body}`, { timeoutMs: 10000 });
    assert.equal(r.status, 200, r.raw);
    assert.ok(r.closed, r.raw);
    assert.ok(!r.raw.includes('upstream_stalled'), r.raw); // an event cut in two cannot carry it
    assert.ok(!r.raw.endsWith('0\r\n\r\n'), r.raw);
    const page = await metrics(gw.admin);
    assert.equal(metricValue(page, 'inferrail_upstream_stalls_total'), 1);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    await eng.stop();
  }
});

// An engine whose /health (or /v1/models) body never ends held the probe for good: the
// gateway's GET timeouts bound the connect, the head and each gap between bytes, not the
// whole. Found by a hostile-engine review: the replica stayed healthy after its health
// turned to 503, since no new probe could start.
test('a /health or /v1/models answer that never ends is cut, and probes go on', { timeout: 60000 }, async () => {
  const eng = await startFakeEngine('ok');
  eng.health = 'endless-page';
  eng.models = 'endless-page';
  const gw = await startGateway({
    models: [{ name: 'fake' }],
    replicas: [{ id: 'f0', url: eng.url }],
    health: { interval: '100ms', timeout: '300ms', unhealthy_threshold: 2, healthy_threshold: 1, max_ejection_percent: 0 },
  });
  try {
    // Every endless probe is cut at its timeout and counts as failed: the replica goes down.
    await until('the replica marked down', async () =>
      metricValue(await metrics(gw.admin), 'inferrail_replica_healthy', 'replica="f0"') === 0);
    const before = eng.healthRequests;
    await until('new probes', () => eng.healthRequests >= before + 3);
    // Once /health answers again, the next probe brings it back.
    eng.health = undefined;
    await until('the replica up again', async () =>
      metricValue(await metrics(gw.admin), 'inferrail_replica_healthy', 'replica="f0"') === 1);
  } finally {
    await gw.stop();
    await eng.stop();
  }
});
