// The gateway's /metrics: promtool (Debian's prometheus package) accepts the
// gateway's page and the simulator's (vLLM and SGLang names); every metric of the
// README's table is served; the outcome counter adds up; and scraping 100 times a
// second during many concurrent streams keeps counters monotonic and histograms
// consistent (cumulative buckets never decrease, never exceed _count) on every page.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startFleet, startSim, metrics, metricsWhen, metricSum, sleep, freePort } from './lib.mjs';
import { scrapeDuringStreams } from './scrape_check.mjs';
import { samples } from './prom_check.mjs';

function promtool(page) {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: page, encoding: 'utf8' });
  assert.equal(r.error, undefined, 'promtool is missing: scripts/install-deps installs prometheus');
  return r;
}

const chat = (stream, content = 'hello there, metrics') => JSON.stringify({
  model: 'sim', stream, max_tokens: 4, messages: [{ role: 'user', content }],
  ...(stream ? { stream_options: { include_usage: true } } : {}),
});

async function post(url, body) {
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await r.text();
  return r.status;
}

// The metrics the README's table lists (those this gateway serves today).
const TABLE = [
  'inferrail_requests_total', 'inferrail_ttft_seconds_bucket', 'inferrail_request_duration_seconds_count',
  'inferrail_routing_decisions_total', 'inferrail_routing_decision_seconds_bucket',
  'inferrail_upstream_retries_total', 'inferrail_client_disconnects_total', 'inferrail_request_errors_total',
  'inferrail_tokenized_requests_total', 'inferrail_prompt_tokens_total', 'inferrail_predicted_cached_tokens_total',
  'inferrail_index_entries', 'inferrail_index_bytes', 'inferrail_index_resets_total', 'inferrail_ejections_total',
  'inferrail_replica_in_flight', 'inferrail_replica_pending', 'inferrail_replica_prompt_tokens',
  'inferrail_replica_pending_prompt_tokens', 'inferrail_replica_healthy', 'inferrail_replica_ejected',
  'inferrail_index_replica_blocks', 'inferrail_index_replica_capacity_blocks', 'inferrail_build_info',
  'inferrail_tokenize_seconds_bucket', 'inferrail_model_predictions_enabled',
];

test('promtool accepts the gateway page, which serves the whole table and counts each request once', async () => {
  const fleet = await startFleet({ gateway: { models: [{ name: 'inferrail/sim-8b', aliases: ['sim'], tokenizer: 'builtin:sim' }] } });
  try {
    let sent = 0;
    for (let i = 0; i < 6; i++, sent++) assert.equal(await post(fleet.gw.url, chat(i % 2 === 0)), 200);
    assert.equal(await post(fleet.gw.url, JSON.stringify({ model: 'nope', messages: [] })), 404);
    // Both are recorded as the gateway lets go of a request, one after the other: a
    // page may fall between them, so wait for both.
    const page = await metricsWhen(fleet.gw.admin, (p) => metricSum(p, 'inferrail_requests_total') === sent &&
      metricSum(p, 'inferrail_request_duration_seconds_count') === sent);
    const r = promtool(page);
    assert.equal(r.status, 0, `promtool check metrics failed:\n${r.stdout}${r.stderr}\n${page}`);
    assert.equal(r.stdout + r.stderr, '', 'promtool has lint remarks');
    const names = new Set(samples(page).map((s) => s.name));
    for (const n of TABLE) assert.ok(names.has(n), `${n} missing from the page`);
    // Each proxied request is in exactly one outcome, and each streamed one has a TTFT.
    assert.equal(metricSum(page, 'inferrail_requests_total', 'status="2xx"'), sent);
    assert.equal(metricSum(page, 'inferrail_requests_total'), sent);
    assert.equal(metricSum(page, 'inferrail_ttft_seconds_count'), sent / 2);
    assert.equal(metricSum(page, 'inferrail_request_duration_seconds_count'), sent);
    assert.equal(metricSum(page, 'inferrail_routing_decisions_total'), sent);
    assert.equal(metricSum(page, 'inferrail_request_errors_total', 'reason="model_not_found"'), 1);
    // Every proxied request was tokenized (builtin:sim), once, and timed.
    assert.equal(metricSum(page, 'inferrail_tokenized_requests_total', 'result="tokenized"'), sent);
    assert.equal(metricSum(page, 'inferrail_tokenized_requests_total'), sent);
    assert.equal(metricSum(page, 'inferrail_tokenize_seconds_count'), sent);
    assert.equal(metricSum(page, 'inferrail_model_predictions_enabled'), 1);
  } finally {
    await fleet.stop();
  }
});

// Errors answered before any model is known (a wrong method, an unknown route, the
// server's own 413 and 431) are request errors too, under model "none" (a walkthrough
// found only the proxy path's counted).
test('request_errors_total counts the errors answered before routing', async () => {
  const fleet = await startFleet({ n: 1, gateway: { server: { max_body_bytes: '2KiB', max_header_bytes: '1KiB' } } });
  try {
    const url = fleet.gw.url;
    assert.equal((await fetch(`${url}/v1/chat/completions`).then(async (r) => { await r.text(); return r; })).status, 405);
    assert.equal((await fetch(`${url}/v1/nowhere`).then(async (r) => { await r.text(); return r; })).status, 404);
    assert.equal(await post(url, JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'x'.repeat(3000) }] })), 413);
    const big = await fetch(`${url}/v1/models`, { headers: { 'x-pad': 'y'.repeat(3000) } });
    await big.text();
    assert.equal(big.status, 431);
    const page = await metricsWhen(fleet.gw.admin, (p) => metricSum(p, 'inferrail_request_errors_total') === 4);
    const n = (reason) => metricSum(page, 'inferrail_request_errors_total', `model="none",reason="${reason}"`);
    assert.equal(n('method_not_allowed'), 1, page);
    assert.equal(n('route_not_found'), 1);
    assert.equal(n('too_large'), 2);
  } finally {
    await fleet.stop();
  }
});

test('promtool accepts the simulator pages, vLLM and SGLang', async () => {
  for (const engine of ['vllm', 'sglang']) {
    const sim = await startSim(['--engine', engine, '--zero-latency']);
    try {
      await fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chat(true).replace('"sim"', '"inferrail/sim-8b"') }).then((r) => r.text());
      const page = await metrics(sim.url);
      const r = promtool(page);
      // prometheus_client's own pages draw lint remarks on vLLM's names (counters
      // without _total in sglang, say); only problems, not remarks, fail here.
      assert.equal(r.status === 0 || !/error/i.test(r.stderr), true, `${engine}: ${r.stdout}${r.stderr}`);
      assert.ok(samples(page).length > 10);
    } finally {
      await sim.stop();
    }
  }
});

test('scraping 100 times a second during 400 concurrent streams: every page consistent', async () => {
  await scrapeDuringStreams(400, 3);
});

test('outcomes: an engine that breaks a started response is aborted, a client that leaves is cancelled', async () => {
  const { startFakeEngine } = await import('./fake_engine.mjs');
  const { startGateway } = await import('./lib.mjs');
  const eng = await startFakeEngine('cut-mid-body');
  const sim = await startSim(['--decode-token-ms', '200']);
  const dead = await freePort();
  const gw = await startGateway({
    models: [{ name: 'fake' }, { name: 'inferrail/sim-8b' }, { name: 'nowhere' }],
    replicas: [{ id: 'f0', url: eng.url, models: ['fake'] }, { id: 's0', url: sim.url, models: ['inferrail/sim-8b'] },
      { id: 'dead', url: `http://127.0.0.1:${dead}`, models: ['nowhere'] }],
    retry: { max_attempts: 1 },
    health: { interval: '50ms', timeout: '100ms' },
  });
  try {
    // The fake engine's head says 200, a first event follows, then it closes: the response breaks.
    const r = await fetch(`${gw.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'fake', prompt: 'x' }) });
    await r.text().catch(() => {});
    // A stream the client leaves after its first bytes.
    const ac = new AbortController();
    const s = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', signal: ac.signal,
      body: JSON.stringify({ model: 'inferrail/sim-8b', stream: true, max_tokens: 50, messages: [{ role: 'user', content: 'leave' }] }) });
    const reader = s.body.getReader();
    await reader.read();
    ac.abort();
    let page;
    for (const end = Date.now() + 20000; Date.now() < end;) {
      page = await metrics(gw.admin);
      if (metricSum(page, 'inferrail_requests_total', 'status="cancelled"') === 1 && metricSum(page, 'inferrail_requests_total', 'status="aborted"') === 1) break;
      await sleep(25);
    }
    assert.equal(metricSum(page, 'inferrail_requests_total', 'replica="f0",status="aborted"'), 1, page);
    assert.equal(metricSum(page, 'inferrail_requests_total', 'replica="s0",status="cancelled"'), 1, page);
    assert.equal(metricSum(page, 'inferrail_client_disconnects_total', 'model="inferrail/sim-8b"'), 1, page);
    // A model whose only replica is down: answered 503 by the gateway, on replica "none".
    await metricsWhen(gw.admin, (p) => metricSum(p, 'inferrail_replica_healthy', 'replica="dead"') === 0, 20000);
    const n = await fetch(`${gw.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'nowhere', prompt: 'x' }) });
    assert.equal(n.status, 503);
    await n.text();
    // The gateway counts a response once its write has completed, which the client
    // may see first (an ASan build under load did): wait for the count.
    const unrouted = (p) => metricSum(p, 'inferrail_requests_total', 'model="nowhere",replica="none",status="5xx"');
    page = await metricsWhen(gw.admin, (p) => unrouted(p) === 1, 20000);
    assert.equal(unrouted(page), 1, page);
    assert.equal(metricSum(page, 'inferrail_request_errors_total', 'model="nowhere",reason="unavailable"'), 1, page);
    assert.equal(metricSum(page, 'inferrail_requests_total'), 3, page);
  } finally {
    await gw.stop();
    await sim.stop();
    await eng.stop();
  }
});
