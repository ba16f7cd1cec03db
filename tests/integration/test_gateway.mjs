// inferrail-gateway in front of real simulator processes (and, for byte-level
// checks, a scripted upstream): routing, retries, breakers, cancellation,
// timeouts, routes, Expect: 100-continue, alias splicing, request ids.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFleet, startGateway, startSim, rawRequest, sseData, metrics, metricValue, sleep, waitFor, freePort, BUILD, metricSum, logged } from './lib.mjs';

let fleet;
before(async () => {
  fleet = await startFleet({ simArgs: ['--decode-token-ms', '2', '--prefill-token-us', '1', '--prefill-fixed-ms', '1'] });
});
after(async () => { await fleet.stop(); });

const post = (url, p, body, headers = {}) =>
  fetch(url + p, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
const chat = (extra = {}) => ({ model: 'sim', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 3, ...extra });

async function clearFaults() {
  for (const s of fleet.sims) await fetch(s.url + '/admin/fault', { method: 'DELETE' });
}

test('proxies chat and completions, names the replica, passes the engine response through', async () => {
  const r = await post(fleet.gw.url, '/v1/chat/completions', chat());
  assert.equal(r.status, 200);
  assert.match(r.headers.get('x-inferrail-replica'), /^sim-[123]$/);
  const rid = r.headers.get('x-request-id');
  assert.match(rid, /^[0-9a-f]{32}$/);
  const body = await r.json();
  assert.equal(body.id, `chatcmpl-${rid}`); // the engine saw the same id
  assert.equal(body.model, 'inferrail/sim-8b');
  const c = await post(fleet.gw.url, '/v1/completions', { model: 'inferrail/sim-8b', prompt: 'x', max_tokens: 2 });
  assert.equal(c.status, 200);
  assert.equal((await c.json()).usage.completion_tokens, 2);
});

test('streams pass through chunk for chunk', async () => {
  const r = await post(fleet.gw.url, '/v1/chat/completions', chat({ stream: true, stream_options: { include_usage: true }, max_tokens: 5 }));
  assert.equal(r.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const data = sseData(await r.text());
  assert.equal(data.length, 1 + 5 + 1 + 1);
  assert.equal(data.at(-1), '[DONE]');
});

test('a well-formed client request id is kept and forwarded; a bad one is replaced', async () => {
  const r = await post(fleet.gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 }, { 'x-request-id': 'my-req.42' });
  assert.equal(r.headers.get('x-request-id'), 'my-req.42');
  // ids as tenants and base64 write them are kept too (vLLM takes the header as it is)
  for (const id of ['tenant/abc-123', 'YWJj+ZA==', 'job@host:7~1']) {
    const k = await post(fleet.gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 }, { 'x-request-id': id });
    assert.equal(k.headers.get('x-request-id'), id);
    await k.arrayBuffer();
  }
  assert.equal((await r.json()).id, 'cmpl-my-req.42');
  const bad = await post(fleet.gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 }, { 'x-request-id': 'has spaces and "quotes"' });
  assert.match(bad.headers.get('x-request-id'), /^[0-9a-f]{32}$/);
  await bad.arrayBuffer();
});

test('round robin spreads evenly; every policy spreads over the fleet', async () => {
  const counts = {};
  for (let i = 0; i < 30; i++) {
    const r = await post(fleet.gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 });
    await r.arrayBuffer();
    const id = r.headers.get('x-inferrail-replica');
    counts[id] = (counts[id] || 0) + 1;
  }
  assert.deepEqual(Object.values(counts).sort(), [10, 10, 10]);
  for (const policy of ['random', 'least_request', 'p2c']) {
    const gw = await startGateway({
      models: [{ name: 'inferrail/sim-8b', policy }],
      replicas: fleet.sims.map((s, i) => ({ id: `s${i}`, url: s.url })),
      routing: { seed: 7 },
    });
    try {
      const seen = {};
      const jobs = [];
      for (let i = 0; i < 60; i++) {
        jobs.push(post(gw.url, '/v1/completions', { prompt: 'x', max_tokens: 3 }).then(async (r) => {
          await r.arrayBuffer();
          seen[r.headers.get('x-inferrail-replica')] = (seen[r.headers.get('x-inferrail-replica')] || 0) + 1;
        }));
      }
      await Promise.all(jobs);
      assert.deepEqual(Object.keys(seen).sort(), ['s0', 's1', 's2'], `${policy}: ${JSON.stringify(seen)}`);
      for (const v of Object.values(seen)) assert.ok(v >= 5, `${policy}: ${JSON.stringify(seen)}`);
    } finally {
      await gw.stop();
    }
  }
});

test('alias and missing model are rewritten; nothing else changes', async () => {
  // The simulator answers 404 to names it does not serve: success proves the rewrite.
  const a = await post(fleet.gw.url, '/v1/completions', '{"prompt": "x", "model": "sim", "max_tokens": 1}');
  assert.equal(a.status, 200);
  const b = await post(fleet.gw.url, '/v1/completions', '{"prompt": "x", "max_tokens": 1}');
  assert.equal(b.status, 200);
  const c = await post(fleet.gw.url, '/v1/completions', '{"model": "nope", "prompt": "x"}');
  assert.equal(c.status, 404);
  const e = await c.json();
  assert.equal(e.error.message, 'The model `nope` does not exist.');
  assert.equal(e.error.code, 404);
  const bad = await post(fleet.gw.url, '/v1/completions', '{"model": "sim", "prompt": ');
  assert.equal(bad.status, 400);
  assert.equal((await bad.json()).error.code, 400);
});

test('404 and 405 in the vLLM error shape; /health and /v1/models answer locally', async () => {
  const nf = await fetch(fleet.gw.url + '/v1/embeddings', { method: 'POST', body: '{}' });
  assert.equal(nf.status, 404);
  assert.match(nf.headers.get('x-request-id'), /^[0-9a-f]{32}$/);
  assert.equal((await fetch(fleet.gw.url + '/health', { headers: { 'x-request-id': 'h-1' } })).headers.get('x-request-id'), 'h-1');
  assert.deepEqual(Object.keys((await nf.json()).error), ['message', 'type', 'param', 'code']);
  const na = await fetch(fleet.gw.url + '/v1/chat/completions');
  assert.equal(na.status, 405);
  assert.equal(na.headers.get('allow'), 'POST');
  await na.arrayBuffer();
  const na2 = await fetch(fleet.gw.url + '/v1/models', { method: 'DELETE' });
  assert.equal(na2.status, 405);
  assert.equal(na2.headers.get('allow'), 'GET, HEAD');
  await na2.arrayBuffer();
  assert.equal((await fetch(fleet.gw.url + '/health')).status, 200);
  // Cards are fetched in the background: wait for the engine's metadata.
  let models;
  for (const end = Date.now() + 20000; Date.now() < end;) {
    models = await (await fetch(fleet.gw.url + '/v1/models')).json();
    if (models.data[0].owned_by === 'vllm') break;
    await sleep(100);
  }
  assert.deepEqual(models.data.map((m) => m.id), ['inferrail/sim-8b', 'sim']);
  assert.equal(models.data[0].max_model_len, 32768);
  assert.equal(models.data[1].root, 'inferrail/sim-8b');
  assert.ok(models.data[0].permission[0].id.startsWith('modelperm-'));
  const head = await fetch(fleet.gw.url + '/v1/models', { method: 'HEAD' });
  assert.equal(head.status, 200);
});

test('retries: 503s and closed connections move to another replica; attempts stop at the limit', async () => {
  await clearFaults();
  // Two replicas answer 503 for a while: every request still succeeds on the third.
  for (const s of fleet.sims.slice(0, 2)) await post(s.url, '/admin/fault', { fault: 'status=503' });
  for (let i = 0; i < 6; i++) {
    const r = await post(fleet.gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('x-inferrail-replica'), 'sim-3');
    await r.arrayBuffer();
  }
  await clearFaults();
  for (const s of fleet.sims.slice(0, 2)) await post(s.url, '/admin/fault', { fault: 'close' });
  const r = await post(fleet.gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 });
  assert.equal(r.status, 200);
  await r.arrayBuffer();
  await clearFaults();
  // Everyone fails: the client gets the last answer after max_attempts (3).
  for (const s of fleet.sims) await post(s.url, '/admin/fault', { fault: 'status=502' });
  const page0 = await metrics(fleet.gw.admin);
  const fail = await post(fleet.gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 });
  assert.equal(fail.status, 502);
  assert.equal((await fail.json()).error.code, 502);
  const page1 = await metrics(fleet.gw.admin);
  assert.equal(metricSum(page1, 'inferrail_upstream_retries_total') - metricSum(page0, 'inferrail_upstream_retries_total'), 2);
  await clearFaults();
  await sleep(50);
});

test('a dead replica (connection refused) is skipped by retries', async () => {
  const dead = await freePort();
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 'dead', url: `http://127.0.0.1:${dead}` }, { id: 'live', url: fleet.sims[0].url }],
    health: { interval: '10s' },
  });
  try {
    for (let i = 0; i < 4; i++) {
      const r = await post(gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-inferrail-replica'), 'live');
      await r.arrayBuffer();
    }
  } finally {
    await gw.stop();
  }
});

test('breakers: a full fleet gets an immediate 503 with Retry-After', async () => {
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: fleet.sims.map((s, i) => ({ id: `s${i}`, url: s.url, max_concurrency: 1, max_pending: 1 })),
  });
  try {
    const hung = [];
    const ctrls = [];
    for (let i = 0; i < 3; i++) {
      const c = new AbortController();
      ctrls.push(c);
      hung.push(fetch(gw.url + '/v1/completions', { method: 'POST', headers: { 'x-inferrail-fault': 'hang' }, body: '{"prompt":"x"}', signal: c.signal }).catch(() => null));
    }
    await waitFor('one hung request on each replica', async () => {
      const p = await metrics(gw.admin);
      return [0, 1, 2].every((k) => metricValue(p, 'inferrail_replica_in_flight', `replica="s${k}"`) === 1);
    });
    const t0 = Date.now();
    const r = await post(gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 });
    assert.equal(r.status, 503);
    assert.equal(r.headers.get('retry-after'), '1');
    assert.ok(Date.now() - t0 < 500);
    assert.equal((await r.json()).error.code, 503);
    const page = await metrics(gw.admin);
    for (let i = 0; i < 3; i++) assert.equal(metricValue(page, 'inferrail_replica_in_flight', `replica="s${i}"`), 1);
    for (const c of ctrls) c.abort();
    await Promise.all(hung);
    // The slots come back once the clients left.
    for (const end = Date.now() + 20000; Date.now() < end;) {
      const p = await metrics(gw.admin);
      if ([0, 1, 2].every((k) => metricValue(p, 'inferrail_replica_in_flight', `replica="s${k}"`) === 0)) break;
      await sleep(20);
    }
    const ok = await post(gw.url, '/v1/completions', { prompt: 'x', max_tokens: 1 });
    assert.equal(ok.status, 200);
  } finally {
    await gw.stop();
  }
});

test('a client that disconnects, streaming or waiting, is aborted in the engine', async () => {
  const sim = fleet.sims;
  const before = await Promise.all(sim.map((s) => metrics(s.url)));
  const aborts = (pages) => pages.reduce((a, p) => a + metricValue(p, 'vllm:request_success_total', 'finished_reason="abort"'), 0);
  const a0 = aborts(before);
  const d0 = metricValue(await metrics(fleet.gw.admin), 'inferrail_client_disconnects_total');
  const r = await post(fleet.gw.url, '/v1/chat/completions', chat({ stream: true, max_tokens: 5000 }));
  const reader = r.body.getReader();
  await reader.read();
  const t0 = Date.now();
  await reader.cancel();
  let pages;
  for (;;) {
    pages = await Promise.all(sim.map((s) => metrics(s.url)));
    if (aborts(pages) > a0 || Date.now() - t0 > 2000) break;
    await sleep(5);
  }
  assert.equal(aborts(pages), a0 + 1, `aborts before ${a0}, after ${aborts(pages)}, after ${Date.now() - t0} ms`);
  // How fast is a benchmark's business (bench/gateway); here only that it is prompt.
  assert.ok(Date.now() - t0 < 1500, `took ${Date.now() - t0} ms`);
  // The gateway counts it, though it often learns of the close from a refused write.
  let gpage;
  for (const end = Date.now() + 20000; Date.now() < end;) {
    gpage = await metrics(fleet.gw.admin);
    if (metricSum(gpage, 'inferrail_client_disconnects_total') > d0) break;
    await sleep(10);
  }
  assert.equal(metricSum(gpage, 'inferrail_client_disconnects_total'), d0 + 1, gpage);
  // and one still waiting for its response head, on a gateway of its own
  const sim1 = await startSim(['--enable-faults']);
  const gw = await startGateway({ models: [{ name: 'inferrail/sim-8b' }], replicas: [{ id: 's0', url: sim1.url }] });
  try {
    const body = '{"prompt":"x"}';
    const sock = net.connect(gw.port, '127.0.0.1');
    await new Promise((r) => sock.on('connect', r));
    sock.on('error', () => {});
    sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nx-inferrail-fault: delay=5000\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    // Leave once the request is in flight (on a loaded machine that takes a moment).
    for (const end = Date.now() + 20000; Date.now() < end;) {
      if (metricValue(await metrics(gw.admin), 'inferrail_replica_in_flight', 'replica="s0"') === 1) break;
      await sleep(10);
    }
    sock.destroy();
    // The disconnect is counted at once; the replica is freed when the cancelled upstream
    // request ends, an iteration of the loop later (the scrape runs on another thread).
    let page;
    for (const end = Date.now() + 20000; Date.now() < end;) {
      page = await metrics(gw.admin);
      if (metricSum(page, 'inferrail_client_disconnects_total') >= 1 &&
          metricValue(page, 'inferrail_replica_in_flight', 'replica="s0"') === 0) break;
      await sleep(10);
    }
    assert.equal(metricSum(page, 'inferrail_client_disconnects_total'), 1, page);
    assert.equal(metricValue(page, 'inferrail_replica_in_flight', 'replica="s0"'), 0, page);
  } finally {
    await gw.stop();
    await sim1.stop();
  }
});

// Sends a request over a raw socket and keeps the socket, so that the test
// decides when the client leaves.
async function openRequest(port, body, headers = '') {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise((r) => sock.on('connect', r));
  sock.on('error', () => {});
  sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\n${headers}Content-Length: ${body.length}\r\n\r\n${body}`);
  return sock;
}

async function waitMetric(url, name, label, ok) {
  let page;
  for (const end = Date.now() + 20000; Date.now() < end;) {
    page = await metrics(url);
    if (ok(metricSum(page, name, label))) return page;
    await sleep(10);
  }
  assert.fail(`${name}{${label}} never got there:\n${page}`);
}

test('a client that leaves in backoff, waiting for a head or mid-stream is counted once and frees its replica', async () => {
  const dead = await freePort();
  const sim = await startSim(['--enable-faults', '--zero-latency']);
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }, { name: 'nowhere' }],
    replicas: [
      { id: 's0', url: sim.url, models: ['inferrail/sim-8b'] },
      { id: 'dead', url: `http://127.0.0.1:${dead}`, models: ['nowhere'] },
    ],
    health: { interval: '60s' },
    retry: { max_attempts: 3, backoff: '5s', max_backoff: '5s' },
    logging: { access_log: true },
  });
  const gone = (n) => (v) => v === n;
  const idle = async () => {
    const page = await metrics(gw.admin);
    for (const rep of ['s0', 'dead']) {
      assert.equal(metricValue(page, 'inferrail_replica_in_flight', `replica="${rep}"`), 0, page);
      assert.equal(metricValue(page, 'inferrail_replica_pending', `replica="${rep}"`), 0, page);
    }
    return page;
  };
  try {
    // In backoff after a 503: no upstream request is open, only the timer.
    let sock = await openRequest(gw.port, '{"model":"inferrail/sim-8b","prompt":"x"}', 'x-inferrail-fault: status=503\r\n');
    await waitMetric(gw.admin, 'inferrail_upstream_retries_total', '', gone(1));
    sock.destroy();
    await waitMetric(gw.admin, 'inferrail_client_disconnects_total', '', gone(1));
    await idle();
    // In backoff after a refused connection.
    sock = await openRequest(gw.port, '{"model":"nowhere","prompt":"x"}');
    await waitMetric(gw.admin, 'inferrail_upstream_retries_total', '', gone(2));
    sock.destroy();
    await waitMetric(gw.admin, 'inferrail_client_disconnects_total', '', gone(2));
    await idle();
    // Waiting for the head of a hung engine (not streamed: in flight, never pending).
    sock = await openRequest(gw.port, '{"model":"inferrail/sim-8b","prompt":"x"}', 'x-inferrail-fault: hang\r\n');
    await waitMetric(gw.admin, 'inferrail_replica_in_flight', 'replica="s0"', gone(1));
    sock.destroy();
    await waitMetric(gw.admin, 'inferrail_client_disconnects_total', '', gone(3));
    await idle();
    // Mid-stream, while the engine keeps sending: an engine chunk read in the
    // same loop iteration as the close meets a refused write and ends the
    // response before on_abort can fire (this used to go uncounted, and
    // counted as an engine error instead).
    const streams = 8;
    for (let i = 0; i < streams; i++) {
      sock = await openRequest(gw.port, JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'x', max_tokens: 30000, stream: true }));
      // Until 16 KiB have come, or the answer ended or stalled without them (a failure
      // to show, not a wait without end).
      let got = 0, head = '';
      let timer;
      await new Promise((resolve) => {
        sock.on('data', (d) => { if (!got) head = d.toString().slice(0, 300); got += d.length; if (got > 16384) resolve(); });
        sock.on('close', resolve);
        timer = setTimeout(resolve, 60000); // a stalled stream fails here, with the log
      });
      clearTimeout(timer);
      assert.ok(got > 16384, `stream ${i}: ${got} bytes, then it ended or stalled: ${head}\n${gw.log.text.slice(-2000)}`);
      sock.resetAndDestroy();
    }
    const page = await waitMetric(gw.admin, 'inferrail_replica_in_flight', 'replica="s0"', gone(0));
    assert.equal(metricSum(page, 'inferrail_client_disconnects_total'), 3 + streams, page);
    // Cancelling the engine for a client that left is not an engine failure.
    assert.equal(metricValue(page, 'inferrail_upstream_errors_total'), 1, page); // the refused connect
    await idle();
    const accessLines = () => gw.log.text.split('\n').filter((l) => l.includes('access: '));
    await waitFor('the access log lines', () => accessLines().length >= 3 + streams).catch(() => {});
    const lines = accessLines();
    assert.equal(lines.length, 3 + streams, gw.log.text);
    for (const l of lines) assert.match(l, /client_gone=1/);
  } finally {
    await gw.stop();
    await sim.stop();
  }
});

test('timeouts: a stalled body gets 408; a hung engine gets 504 after upstream.response_timeout, or non_streaming_timeout', async () => {
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 's0', url: fleet.sims[0].url }],
    server: { request_timeout: '500ms', header_read_timeout: '300ms' },
    upstream: { response_timeout: '300ms', non_streaming_timeout: '900ms' },
    retry: { max_attempts: 1 },
  });
  try {
    const stalled = await rawRequest(gw.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"prompt":', { timeoutMs: 3000 });
    assert.equal(stalled.status, 408);
    assert.match(stalled.raw, /"code":408/);
    const idle = await rawRequest(gw.port, '', { timeoutMs: 3000 });
    assert.ok(idle.closed && !idle.timeout);
    let t0 = Date.now();
    const hung = await post(gw.url, '/v1/completions', { prompt: 'x', stream: true }, { 'x-inferrail-fault': 'hang' });
    assert.equal(hung.status, 504);
    assert.ok(Date.now() - t0 < 2000, `${Date.now() - t0} ms`);
    await hung.arrayBuffer();
    // Not streamed: its head would come with the whole answer, so it waits longer.
    t0 = Date.now();
    const unary = await post(gw.url, '/v1/completions', { prompt: 'x' }, { 'x-inferrail-fault': 'hang' });
    assert.equal(unary.status, 504);
    const ms = Date.now() - t0;
    assert.ok(ms >= 850 && ms < 3000, `${ms} ms`);
    await unary.arrayBuffer();
  } finally {
    await gw.stop();
  }
});

test('Expect: 100-continue: a rejected request is answered at once, an accepted one gets 100', async () => {
  const rej = await rawRequest(fleet.gw.port, 'POST /v1/nothing HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n', { timeoutMs: 2000 });
  assert.equal(rej.status, 404);
  assert.ok(!rej.raw.includes('100 Continue'));
  const body = '{"prompt":"x","max_tokens":1}';
  const ok = await new Promise((resolve) => {
    const req = http.request({ port: fleet.gw.port, method: 'POST', path: '/v1/completions', headers: { expect: '100-continue', 'content-length': body.length, connection: 'close' } });
    let saw100 = false;
    req.on('continue', () => { saw100 = true; req.end(body); });
    req.on('response', (res) => { res.resume(); res.on('end', () => resolve({ saw100, status: res.statusCode })); });
  });
  assert.deepEqual(ok, { saw100: true, status: 200 });
});

// A raw HTTP/1.1 answer's status line, lower-cased headers and body.
function parseRaw(raw) {
  const end = raw.indexOf('\r\n\r\n');
  const lines = raw.slice(0, end).split('\r\n');
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(lines[0].split(' ')[1]), headers, body: raw.slice(end + 4) };
}

test('answers given at the headers stage carry x-request-id, and Allow on a 405, as the normal path does', async () => {
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }], replicas: [{ id: 's0', url: fleet.sims[0].url }],
    server: { max_body_bytes: '1KiB' },
  });
  const expect = (line, extra = '', length = 10) =>
    rawRequest(gw.port, `${line} HTTP/1.1\r\nHost: x\r\n${extra}Expect: 100-continue\r\nContent-Length: ${length}\r\n\r\n`, { timeoutMs: 3000 });
  const page0 = await metrics(gw.admin); // start-up polled /health
  const delta = (page, name, label = '') => metricValue(page, name, label) - metricValue(page0, name, label);
  try {
    // 404: the client's well-formed id comes back; the body is the normal path's.
    let raw = await expect('POST /v1/nothing', 'x-request-id: my-req.404\r\n');
    assert.ok(!raw.raw.includes('100 Continue'), raw.raw);
    let a = parseRaw(raw.raw);
    assert.equal(a.status, 404);
    assert.equal(a.headers['x-request-id'], 'my-req.404');
    const n404 = await fetch(gw.url + '/v1/nothing', { method: 'POST', body: '0123456789' });
    assert.equal(a.body, await n404.text());
    // 405: a generated id (none given, or a malformed one), and Allow.
    raw = await expect('PUT /v1/completions');
    a = parseRaw(raw.raw);
    assert.equal(a.status, 405);
    assert.match(a.headers['x-request-id'], /^[0-9a-f]{32}$/);
    assert.equal(a.headers.allow, 'POST');
    const n405 = await fetch(gw.url + '/v1/completions', { method: 'PUT', body: '0123456789' });
    assert.equal(n405.headers.get('allow'), 'POST');
    assert.equal(a.body, await n405.text());
    raw = await expect('DELETE /v1/models', 'x-request-id: not ok\r\n');
    a = parseRaw(raw.raw);
    assert.equal(a.status, 405);
    assert.match(a.headers['x-request-id'], /^[0-9a-f]{32}$/);
    assert.equal(a.headers.allow, 'GET, HEAD');
    // 413: a declared body over server.max_body_bytes, before 100 Continue.
    raw = await expect('POST /v1/completions', 'x-request-id: my-req.413\r\n', 4096);
    assert.ok(!raw.raw.includes('100 Continue'), raw.raw);
    a = parseRaw(raw.raw);
    assert.equal(a.status, 413);
    assert.equal(a.headers['x-request-id'], 'my-req.413');
    assert.equal(JSON.parse(a.body).error.type, 'Payload Too Large');
    raw = await expect('POST /v1/completions', '', 4096);
    assert.match(parseRaw(raw.raw).headers['x-request-id'], /^[0-9a-f]{32}$/);
    // Even a request the server could not read gets an id of its own.
    raw = await rawRequest(gw.port, 'NOT HTTP\r\n\r\n', { timeoutMs: 3000 });
    a = parseRaw(raw.raw);
    assert.equal(a.status, 400);
    assert.match(a.headers['x-request-id'], /^[0-9a-f]{32}$/);
    // Every one of those was received and answered, early or not; a local 200 too.
    assert.equal((await fetch(gw.url + '/health')).status, 200);
    const page = await metrics(gw.admin);
    assert.equal(delta(page, 'inferrail_requests_received_total'), 9);
    assert.equal(delta(page, 'inferrail_responses_total', 'class="4xx"'), 8);
    assert.equal(delta(page, 'inferrail_responses_total', 'class="2xx"'), 1);
    assert.equal(delta(page, 'inferrail_responses_total', 'class="5xx"'), 0);
  } finally {
    await gw.stop();
  }
});

test('request bytes reach the engine unchanged and response bytes reach the client unchanged', async () => {
  // A scripted upstream: records what it receives, answers in random chunks.
  let received = null;
  const payload = Buffer.from(Array.from({ length: 5000 }, (_, i) => `data: {"n":${i},"t":"\u00e9\u65e5"}\n\n`).join(''));
  const srv = http.createServer((req, res) => {
    if (req.url === '/health' || req.url === '/v1/models') { res.end(req.url === '/health' ? '' : '{"object":"list","data":[]}'); return; }
    if (req.url === '/metrics') { res.statusCode = 404; res.end(); return; } // the load scraper's
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', async () => {
      received = { body: Buffer.concat(parts), headers: req.headers, url: req.url };
      res.writeHead(200, { 'content-type': 'text/event-stream', connection: 'keep-alive', 'x-engine': 'yes' });
      let at = 0;
      let seed = 1;
      while (at < payload.length) {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        const n = 1 + (seed % 700);
        res.write(payload.subarray(at, at + n));
        at += n;
        if (seed % 5 === 0) await sleep(1);
      }
      res.end();
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const gw = await startGateway({ models: [{ name: 'm' }], replicas: [{ id: 'script', url: `http://127.0.0.1:${srv.address().port}` }] });
  try {
    const body = `{"model" : "m", "prompt": "caf\u00e9 \\u00e9 ${'x'.repeat(70000)}", "weird": [1, 2.50, {"model": "inner"}]}`;
    const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-custom': 'kept', connection: 'keep-alive' } });
    const got = Buffer.from(await r.arrayBuffer());
    assert.equal(r.headers.get('x-engine'), 'yes');
    assert.equal(got.length, payload.length);
    assert.ok(got.equals(payload));
    assert.ok(received.body.equals(Buffer.from(body)));
    assert.equal(received.headers['x-custom'], 'kept');
    assert.ok(received.headers['x-request-id']);
    // Hop-by-hop headers stop at the gateway.
    const raw = await rawRequest(gw.port, `POST /v1/completions HTTP/1.1\r\nHost: x\r\nTE: trailers\r\nProxy-Connection: x\r\nKeep-Alive: timeout=5\r\nConnection: close\r\nContent-Length: 14\r\n\r\n{"model": "m"}`);
    assert.equal(raw.status, 200);
    for (const h of ['te', 'proxy-connection', 'keep-alive']) assert.equal(received.headers[h], undefined, h);
    assert.ok(!/\r\ntransfer-encoding: chunked\r\n[\s\S]*\r\ntransfer-encoding/i.test(raw.raw));
    // The target reaches the engine whole, a long query string included.
    const target = `/v1/completions?api-version=${'q'.repeat(3000)}&b=%20`;
    const long = await fetch(gw.url + target, { method: 'POST', body: '{"model":"m"}' });
    assert.equal(long.status, 200);
    await long.arrayBuffer();
    assert.equal(received.url, target);
  } finally {
    await gw.stop();
    srv.close();
  }
});

test('--check reports every problem with its path; --help works', () => {
  const file = path.join(os.tmpdir(), `ir-bad-${process.pid}.yaml`);
  fs.writeFileSync(file, 'models:\n  - name: m\n    policy: no_such_policy\nreplicas:\n  - id: a\n    url: "nope"\n  - {id: b, url: "http://h:1", max_pending: zero}\nserver: {listn: 1}\n');
  const r = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--check', '--config', file], { encoding: 'utf8' });
  fs.unlinkSync(file);
  assert.equal(r.status, 2);
  for (const p of ['models[0].policy', 'replicas[0].url', 'replicas[1].max_pending', 'server.listn']) assert.ok(r.stderr.includes(p), r.stderr);
  const ok = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--check', '--config', path.join(process.env.IR_ROOT || '.', 'deploy/local.yaml')], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  const help = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--help'], { encoding: 'utf8' });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--config/);
});

test('deploy/inferrail.example.yaml lists every option with its default (--print-defaults)', () => {
  const root = process.env.IR_ROOT || '.';
  const file = fs.readFileSync(path.join(root, 'deploy/inferrail.example.yaml'), 'utf8');
  const out = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--print-defaults'], { encoding: 'utf8' });
  assert.equal(out.status, 0);
  assert.ok(file.endsWith(out.stdout), 'regenerate the example: see its header');
  // and its defaults load as a config once the required lists are filled in
  const tmp = path.join(os.tmpdir(), `ir-ex-${process.pid}.yaml`);
  // replicas is optional (discovery.dns may name the engines instead), so its key is there
  fs.writeFileSync(tmp, out.stdout.replace(/^replicas:.*$/m, 'replicas: [{id: a, url: "http://127.0.0.1:1"}]') + '\nmodels: [{name: m}]\n');
  const chk = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--check', '--config', tmp], { encoding: 'utf8' });
  fs.unlinkSync(tmp);
  assert.equal(chk.status, 0, chk.stderr);
});

test('the access log writes one line per request, and never the body', async () => {
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }], replicas: [{ id: 's0', url: fleet.sims[0].url }],
    logging: { access_log: true },
  });
  try {
    const r = await post(gw.url, '/v1/completions', { prompt: 'a secret prompt', max_tokens: 1 }, { 'x-request-id': 'logme' });
    await r.arrayBuffer();
    await waitFor('the access log line', () => /access: id=logme/.test(gw.log.text)).catch(() => {});
    await logged(gw, /access: id=logme model=inferrail\/sim-8b replica=s0 status=200 attempts=1/);
    // The engine's share (send to response head) is part of the request's time.
    const t = /access: id=logme .* ms=([\d.]+) engine_ms=([\d.]+) /.exec(gw.log.text);
    assert.ok(t, gw.log.text);
    assert.ok(Number(t[2]) > 0 && Number(t[2]) <= Number(t[1]), t[0]);
    assert.ok(!gw.log.text.includes('a secret prompt'));
  } finally {
    await gw.stop();
  }
});

test('SIGTERM lets a running stream finish, then exits 0', async () => {
  const gw = await startGateway({ models: [{ name: 'inferrail/sim-8b' }], replicas: [{ id: 's0', url: fleet.sims[0].url }] });
  const r = await post(gw.url, '/v1/chat/completions', chat({ model: 'inferrail/sim-8b', stream: true, max_tokens: 100 }));
  assert.equal(r.status, 200);
  const text = r.text();
  await sleep(20);
  const rc = gw.stop('SIGTERM');
  const data = sseData(await text);
  assert.equal(data.at(-1), '[DONE]');
  assert.equal(await rc, 0);
});

test('busy_poll: a polling worker proxies, times out a stalled body, and exits 0 on SIGTERM', async () => {
  // request_timeout bounds every request: 300 ms gave a proxied one a 504 under TSan on
  // a busy VM. A gateway left running by a failure kept node (and ctest) waiting.
  const gw = await startGateway({
    server: { busy_poll: true, workers: 1, request_timeout: '2s' },
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 's0', url: fleet.sims[0].url }],
  });
  try {
    for (let i = 0; i < 20; i++) {
      const r = await post(gw.url, '/v1/completions', { model: 'inferrail/sim-8b', prompt: `p${i}`, max_tokens: 2 });
      assert.equal(r.status, 200);
      assert.equal((await r.json()).usage.completion_tokens, 2);
    }
    // Timers still fire while the loop never sleeps: a body that stalls gets its 408.
    const stalled = await rawRequest(gw.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{"mo', { timeoutMs: 10000 });
    assert.equal(stalled.status, 408);
    assert.equal(await gw.stop('SIGTERM'), 0);
  } finally {
    await gw.stop();
  }
});

for (const http2 of [false, true]) test(`backpressure: a client that stops reading gets its whole stream, with a small server.max_write_queue (upstream.http2: ${http2})`, async () => {
  // An engine that streams about 10 MB at once; the client stops reading for a second.
  const sim = await startSim(['--max-model-len', '200000', '--num-gpu-blocks-override', '20000', '--decode-token-ms', '0.001',
    '--decode-batch-us', '0', '--prefill-token-us', '0', '--prefill-pair-ns', '0', '--prefill-fixed-ms', '0']);
  const gw = await startGateway({
    server: { workers: 1, max_write_queue: '16KiB' },
    upstream: { http2 },
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 's0', url: sim.url }],
  });
  try {
    const tokens = 50000;
    const body = JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'hi', max_tokens: tokens, stream: true, ignore_eos: true });
    const raw = await new Promise((resolve, reject) => {
      const chunks = [];
      const s = net.connect(gw.port, '127.0.0.1', () => {
        s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
      });
      let paused = false;
      s.on('data', (d) => {
        chunks.push(d);
        if (!paused) { // after the first bytes: stop reading while the engine runs ahead
          paused = true;
          s.pause();
          setTimeout(() => s.resume(), 1000);
        }
      });
      s.on('end', () => resolve(Buffer.concat(chunks).toString('latin1'))); // one char per byte: chunk sizes count bytes
      s.on('error', reject);
      s.setTimeout(30000, () => { s.destroy(); reject(new Error('timed out')); });
    });
    assert.match(raw, /^HTTP\/1\.1 200 /);
    assert.match(raw, /\r\ntransfer-encoding: chunked\r\n/i);
    // De-chunk: chunk boundaries need not fall between events.
    let at = raw.indexOf('\r\n\r\n') + 4, text = '';
    for (;;) {
      const eol = raw.indexOf('\r\n', at);
      const size = parseInt(raw.slice(at, eol), 16);
      assert.ok(Number.isInteger(size), `bad chunk size at ${at}`);
      if (size === 0) break;
      text += raw.slice(eol + 2, eol + 2 + size);
      at = eol + 2 + size + 2;
    }
    const events = sseData(text);
    assert.ok(events.length >= tokens, `${events.length} events for ${tokens} tokens; gateway log: ${gw.log.text.slice(-1500)}`);
    assert.equal(events.at(-1), '[DONE]');
    const page = await metrics(gw.admin);
    assert.equal(metricValue(page, 'inferrail_upstream_errors_total'), 0, page);
    assert.equal(metricSum(page, 'inferrail_client_disconnects_total'), 0, page);
  } finally {
    await gw.stop();
    await sim.stop();
  }
});
