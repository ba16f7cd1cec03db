// Traces through the real binary (observability.otlp_endpoint): an OTLP/HTTP
// receiver started here takes the gateway's JSON posts on the bare address's
// /v1/traces; a client's traceparent is continued (client -> server span ->
// route span -> upstream span), the route span carries the policy's decision,
// and the engine (a small HTTP server here, recording headers) receives a
// traceparent whose parent is the gateway's upstream span. A collector that
// cannot be reached never fails a request, and its spans are counted on
// /metrics.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { startGateway, metrics, metricSum, freePort, sleep, logged } from './lib.mjs';
import { OK_BODY } from './fake_engine.mjs';

const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

// Records every POST body's spans, and the paths and content types it got.
async function startReceiver() {
  const rec = { spans: [], posts: [] };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      rec.posts.push({ method: req.method, path: req.url, type: req.headers['content-type'] });
      try {
        const doc = JSON.parse(body);
        for (const rs of doc.resourceSpans) {
          const svc = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
          for (const ss of rs.scopeSpans) for (const s of ss.spans) rec.spans.push({ ...s, service: svc });
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{}');
      } catch {
        res.writeHead(400);
        res.end();
      }
    });
  });
  rec.port = await listen(server);
  rec.stop = () => new Promise((r) => { server.closeAllConnections(); server.close(r); });
  return rec;
}

// An engine that answers every completion with OK_BODY and keeps the headers.
// With status 503 it refuses every completion (the gateway retries elsewhere).
async function startEngine(status = 200) {
  const eng = { headers: [] };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST') eng.headers.push(req.headers);
      // /health answers 200: a 404 failed every probe, and the third (2 s after the start)
      // took the replica out, which a test slower than that on a busy VM met as a 503.
      const code = req.method === 'POST' ? status : req.url === '/health' ? 200 : 404;
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(code === 200 ? OK_BODY : '{}');
    });
  });
  eng.port = await listen(server);
  eng.url = `http://127.0.0.1:${eng.port}`;
  eng.stop = () => new Promise((r) => { server.closeAllConnections(); server.close(r); });
  return eng;
}

async function complete(gw, headers = {}) {
  const r = await fetch(`${gw.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model: 'fake', prompt: 'hello there', max_tokens: 2 }),
  });
  const text = await r.text();
  assert.equal(r.status, 200, text);
}

const attr = (span, key) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v && (v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue);
};

async function spansOf(rec, traceId, n) {
  for (let i = 0; i < 1000; i++) {
    const got = rec.spans.filter((s) => s.traceId === traceId);
    if (got.length >= n) return got;
    await sleep(20);
  }
  assert.fail(`the receiver got ${rec.spans.filter((s) => s.traceId === traceId).length} of ${n} spans`);
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

test('a client traceparent is continued through server, route and upstream spans to the engine', async () => {
  const rec = await startReceiver();
  cleanup.push(() => rec.stop());
  const eng = await startEngine();
  cleanup.push(() => eng.stop());
  const gw = await startGateway({
    models: [{ name: 'fake', policy: 'least_request' }],
    replicas: [{ id: 'e1', url: eng.url }],
    observability: { otlp_endpoint: `http://127.0.0.1:${rec.port}`, trace_sample_ratio: 1 },
  });
  cleanup.push(() => gw.stop());
  await complete(gw, { traceparent: `00-${TRACE}-${CLIENT_SPAN}-01`, 'x-request-id': 'traced-1' });
  const spans = await spansOf(rec, TRACE, 3);
  assert.equal(spans.length, 3);
  const server = spans.find((s) => s.name === 'request');
  const route = spans.find((s) => s.name === 'route');
  const up = spans.find((s) => s.name === 'upstream');
  assert.ok(server && route && up, JSON.stringify(spans));
  // the parent links
  assert.equal(server.parentSpanId, CLIENT_SPAN);
  assert.equal(route.parentSpanId, server.spanId);
  assert.equal(up.parentSpanId, route.spanId);
  assert.equal(server.kind, 2);
  assert.equal(up.kind, 3);
  for (const s of spans) {
    assert.match(s.spanId, /^[0-9a-f]{16}$/);
    assert.equal(s.service, 'inferrail-gateway');
    assert.ok(BigInt(s.startTimeUnixNano) <= BigInt(s.endTimeUnixNano));
    assert.ok(Math.abs(Number(BigInt(s.startTimeUnixNano) / 1000000n) - Date.now()) < 600000, 'times are since the epoch');
  }
  assert.ok(BigInt(server.startTimeUnixNano) <= BigInt(route.startTimeUnixNano));
  assert.ok(BigInt(up.endTimeUnixNano) <= BigInt(server.endTimeUnixNano));
  // what the server span says
  assert.equal(attr(server, 'http.request.method'), 'POST');
  assert.equal(attr(server, 'url.path'), '/v1/completions');
  assert.equal(attr(server, 'http.response.status_code'), '200');
  assert.equal(attr(server, 'inferrail.request_id'), 'traced-1');
  assert.equal(attr(server, 'gen_ai.request.model'), 'fake');
  // the decision
  assert.equal(attr(route, 'inferrail.policy'), 'least_request');
  assert.equal(attr(route, 'inferrail.candidates'), '1');
  assert.equal(attr(route, 'inferrail.replica'), 'e1');
  assert.equal(attr(route, 'inferrail.replica.in_flight'), '0');
  assert.equal(attr(route, 'inferrail.attempt'), '1');
  assert.ok(typeof attr(route, 'inferrail.decision_us') === 'number');
  assert.ok(Number(attr(route, 'inferrail.prompt_tokens')) > 0, 'prompt tokens are estimated');
  assert.equal(attr(route, 'inferrail.predicted_cached_tokens'), '0');
  assert.equal(attr(up, 'inferrail.replica'), 'e1');
  // the engine's parent is the upstream span
  const tp = eng.headers.at(-1).traceparent;
  assert.equal(tp, `00-${TRACE}-${up.spanId}-01`);
  // the standard path of a bare address, in JSON
  assert.ok(rec.posts.every((p) => p.method === 'POST' && p.path === '/v1/traces' && p.type === 'application/json'));

  // without a traceparent: a new trace whose server span is a root
  await complete(gw, { 'x-request-id': 'traced-2' });
  let fresh;
  for (let i = 0; i < 1000 && !fresh; i++) {
    fresh = rec.spans.find((s) => s.name === 'request' && attr(s, 'inferrail.request_id') === 'traced-2');
    if (!fresh) await sleep(20);
  }
  assert.ok(fresh, 'no server span for the second request');
  assert.notEqual(fresh.traceId, TRACE);
  assert.equal(fresh.parentSpanId, undefined);
  const tp2 = eng.headers.at(-1).traceparent;
  assert.match(tp2, new RegExp(`^00-${fresh.traceId}-[0-9a-f]{16}-01$`));
  const page = await metrics(gw.admin);
  assert.ok(metricSum(page, 'inferrail_trace_spans_total', 'result="exported"') >= 3, page);
});

test('a retried request has a route and an upstream span per attempt, the failed one an error', async () => {
  const rec = await startReceiver();
  cleanup.push(() => rec.stop());
  const busy = await startEngine(503);
  cleanup.push(() => busy.stop());
  const eng = await startEngine();
  cleanup.push(() => eng.stop());
  const gw = await startGateway({
    models: [{ name: 'fake', policy: 'round_robin' }],
    replicas: [{ id: 'busy', url: busy.url }, { id: 'ok', url: eng.url }],
    retry: { max_attempts: 3, backoff: '1ms' },
    health: { unhealthy_threshold: 1000, ejection_backoff: '1ms', max_ejection_percent: 0 },
    observability: { otlp_endpoint: `http://127.0.0.1:${rec.port}`, trace_sample_ratio: 1 },
  });
  cleanup.push(() => gw.stop());
  // round robin: one of two requests lands on busy first
  for (let i = 0; i < 4; i++) await complete(gw, { 'x-request-id': `retry-${i}` });
  let server;
  for (let i = 0; i < 1000 && !server; i++) {
    server = rec.spans.find((s) => s.name === 'request' && attr(s, 'inferrail.attempts') === '2');
    if (!server) await sleep(20);
  }
  assert.ok(server, 'no request took two attempts');
  const spans = await spansOf(rec, server.traceId, 5);
  const routes = spans.filter((s) => s.name === 'route').sort((a, b) => Number(attr(a, 'inferrail.attempt')) - Number(attr(b, 'inferrail.attempt')));
  const ups = spans.filter((s) => s.name === 'upstream');
  assert.equal(routes.length, 2);
  assert.equal(ups.length, 2);
  assert.deepEqual(routes.map((r) => attr(r, 'inferrail.attempt')), ['1', '2']);
  assert.deepEqual(routes.map((r) => attr(r, 'inferrail.replica')), ['busy', 'ok']);
  for (const r of routes) assert.equal(r.parentSpanId, server.spanId);
  const first = ups.find((u) => u.parentSpanId === routes[0].spanId);
  const second = ups.find((u) => u.parentSpanId === routes[1].spanId);
  assert.ok(first && second, 'each attempt has its upstream span under its route span');
  assert.equal(first.status.code, 2);
  assert.equal(second.status.code, 1);
  assert.equal(attr(first, 'inferrail.replica'), 'busy');
  assert.equal(attr(first, 'http.response.status_code'), '503');
  assert.equal(attr(second, 'http.response.status_code'), '200');
  // each engine saw its own attempt's span as the parent
  const bt = busy.headers.find((h) => h.traceparent?.includes(server.traceId))?.traceparent;
  assert.equal(bt, `00-${server.traceId}-${first.spanId}-01`);
  assert.ok(eng.headers.some((h) => h.traceparent === `00-${server.traceId}-${second.spanId}-01`));
});

// A replica that never answers (nothing listens): the gateway's own 502 is not the
// engine's status; no upstream span says the engine answered (found by a deploy walkthrough).
test('attempts the engine never answered carry no engine status', async () => {
  const rec = await startReceiver();
  cleanup.push(() => rec.stop());
  const busy = await startEngine(503);
  cleanup.push(() => busy.stop());
  const dead = await freePort();
  const gw = await startGateway({
    models: [{ name: 'fake', policy: 'round_robin' }],
    replicas: [{ id: 'busy', url: busy.url }, { id: 'dead', url: `http://127.0.0.1:${dead}` }],
    retry: { max_attempts: 2, backoff: '1ms' },
    health: { unhealthy_threshold: 1000, ejection_backoff: '1ms', max_ejection_percent: 0 },
    observability: { otlp_endpoint: `http://127.0.0.1:${rec.port}`, trace_sample_ratio: 1 },
  });
  cleanup.push(() => gw.stop());
  const r = await fetch(`${gw.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'fake', prompt: 'x', max_tokens: 1 }) });
  await r.text();
  assert.ok(r.status >= 500, String(r.status));
  const server = await (async () => {
    for (let i = 0; i < 1000; i++) {
      const s = rec.spans.find((x) => x.name === 'request');
      if (s) return s;
      await sleep(20);
    }
    assert.fail('no request span');
  })();
  const ups = (await spansOf(rec, server.traceId, 5)).filter((s) => s.name === 'upstream');
  assert.equal(ups.length, 2);
  for (const u of ups) {
    assert.equal(u.status.code, 2, JSON.stringify(u));
    const code = attr(u, 'http.response.status_code');
    if (attr(u, 'inferrail.replica') === 'dead') assert.equal(code, undefined, JSON.stringify(u));
    else assert.equal(code, '503');
  }
});

test('a trace_sample_ratio of 0 exports nothing, and the client traceparent reaches the engine as it was', async () => {
  const rec = await startReceiver();
  cleanup.push(() => rec.stop());
  const eng = await startEngine();
  cleanup.push(() => eng.stop());
  const gw = await startGateway({
    models: [{ name: 'fake' }],
    replicas: [{ id: 'e1', url: eng.url }],
    observability: { otlp_endpoint: `http://127.0.0.1:${rec.port}/custom/path`, trace_sample_ratio: 0 },
  });
  cleanup.push(() => gw.stop());
  const tp = `00-${TRACE}-${CLIENT_SPAN}-01`;
  for (let i = 0; i < 5; i++) await complete(gw, { traceparent: tp });
  await sleep(300);
  assert.equal(rec.spans.length, 0);
  assert.equal(eng.headers.at(-1).traceparent, tp);
});

test('an unreachable collector never fails a request; its spans are counted', async () => {
  const eng = await startEngine();
  cleanup.push(() => eng.stop());
  const dead = await freePort(); // nothing listens there
  const gw = await startGateway({
    models: [{ name: 'fake' }],
    replicas: [{ id: 'e1', url: eng.url }],
    observability: { otlp_endpoint: `http://127.0.0.1:${dead}`, trace_sample_ratio: 1 },
  });
  cleanup.push(() => gw.stop());
  const N = 20;
  await Promise.all(Array.from({ length: N }, () => complete(gw)));
  // 3 spans a request, each either failed to post or dropped
  let lost = 0;
  for (let i = 0; i < 1000 && lost < 3 * N; i++) {
    const page = await metrics(gw.admin);
    lost = (metricSum(page, 'inferrail_trace_spans_total', 'result="failed"') ?? 0) +
      (metricSum(page, 'inferrail_trace_spans_total', 'result="dropped"') ?? 0);
    if (lost < 3 * N) await sleep(50);
  }
  assert.equal(lost, 3 * N);
  await logged(gw, /cannot export spans/);
  assert.equal((gw.log.text.match(/cannot export spans/g) || []).length, 1, 'warned once');
});

// A collector that takes connections and never answers: each post waits out its 5 s, and
// the exporter used to post every queued batch at exit (16 of them: 80 s past SIGTERM,
// past Kubernetes' 30 s grace). Now it gives up on a failing collector, and 1 s after
// the stop at most.
test('a collector that hangs does not hold the gateway at exit', { timeout: 60000 }, async () => {
  const eng = await startEngine();
  cleanup.push(() => eng.stop());
  const held = [];
  const hung = net.createServer((s) => { held.push(s); s.on('error', () => {}); });
  const hport = await listen(hung);
  cleanup.push(() => new Promise((r) => { for (const s of held) s.destroy(); hung.close(r); }));
  const gw = await startGateway({
    models: [{ name: 'fake' }],
    replicas: [{ id: 'e1', url: eng.url }],
    server: { shutdown_timeout: '1s' },
    observability: { otlp_endpoint: `http://127.0.0.1:${hport}`, trace_sample_ratio: 1 },
  });
  // 1,000 requests: 3,000 spans, 12 batches queued behind the post that hangs
  for (let i = 0; i < 50; i++) await Promise.all(Array.from({ length: 20 }, () => complete(gw)));
  const t0 = Date.now();
  assert.equal(await gw.stop(), 0, gw.log.text.slice(-2000));
  const took = Date.now() - t0;
  assert.ok(took < 9000, `the gateway exited ${took} ms after SIGTERM`);
  assert.ok(held.length >= 1, 'the exporter reached the collector');
});

test('a bad otlp_endpoint is a config error naming the key', async () => {
  const { spawnSync } = await import('node:child_process');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const { BUILD } = await import('./lib.mjs');
  const file = path.join(os.tmpdir(), `ir-otlp-bad-${process.pid}.yaml`);
  fs.writeFileSync(file, JSON.stringify({
    models: [{ name: 'fake' }], replicas: [{ id: 'a', url: 'http://127.0.0.1:1' }],
    observability: { otlp_endpoint: 'collector:4318' },
  }));
  const r = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--check', '--config', file], { encoding: 'utf8' });
  fs.unlinkSync(file);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /observability\.otlp_endpoint/);
});
