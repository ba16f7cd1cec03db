// h2c: clients speak HTTP/2 to the gateway (prior knowledge and Upgrade), and
// the gateway speaks h2c to the engines with upstream.http2.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { spawnSync } from 'node:child_process';
import { startSim, startGateway, sseData, metrics, metricValue, sleep, metricSum } from './lib.mjs';

let sims, gw;
before(async () => {
  sims = [await startSim(['--enable-faults', '--zero-latency']), await startSim(['--enable-faults', '--zero-latency'])];
  gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', aliases: ['sim'] }],
    replicas: sims.map((s, i) => ({ id: `h2-${i}`, url: s.url })),
    upstream: { http2: true },
  });
});
after(async () => { await gw.stop(); for (const s of sims) await s.stop(); });

function h2request(session, path, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/json', ...headers });
    let head;
    const parts = [];
    req.on('response', (h) => { head = h; });
    req.on('data', (d) => parts.push(d));
    req.on('end', () => resolve({ head, body: Buffer.concat(parts).toString() }));
    req.on('error', reject);
    req.end(body);
  });
}

test('prior-knowledge h2c: many streams on one connection, through h2c upstreams', async () => {
  const session = http2.connect(gw.url);
  try {
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) =>
      h2request(session, '/v1/completions', JSON.stringify({ model: 'sim', prompt: `p${i}`, max_tokens: 2 }))));
    const seen = new Set();
    for (const r of results) {
      assert.equal(r.head[':status'], 200);
      seen.add(r.head['x-inferrail-replica']);
      assert.equal(JSON.parse(r.body).usage.completion_tokens, 2);
    }
    assert.deepEqual([...seen].sort(), ['h2-0', 'h2-1']);
    const s = await h2request(session, '/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: 'x' }], max_tokens: 3, stream: true }));
    assert.equal(s.head['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(sseData(s.body).at(-1), '[DONE]');
    const nf = await h2request(session, '/v1/nope', '{}');
    assert.equal(nf.head[':status'], 404);
    // a retry over h2c upstreams: one replica answers 503
    await fetch(sims[0].url + '/admin/fault', { method: 'POST', body: '{"fault":"status=503","count":1}' });
    const retried = await Promise.all([0, 1].map(() => h2request(session, '/v1/completions', '{"prompt":"x","max_tokens":1}')));
    for (const r of retried) assert.equal(r.head[':status'], 200);
  } finally {
    session.close();
  }
});

test('Upgrade: h2c from an HTTP/1.1 client (curl --http2)', () => {
  const r = spawnSync('curl', ['-s', '--http2', '-o', '-', '-w', '\\n%{http_version} %{http_code}', `${gw.url}/v1/completions`, '-d', '{"prompt":"x","max_tokens":1}'], { encoding: 'utf8' });
  assert.equal(r.status, 0);
  assert.match(r.stdout, /\n2 200$/);
});

test('h2c: answers the server gives by itself carry x-request-id too', async () => {
  const session = http2.connect(gw.url);
  // Declares a body over server.max_body_bytes (32 MiB) and sends none: refused at the headers.
  const tooBig = (rid) => new Promise((resolve) => {
    const req = session.request({ ':method': 'POST', ':path': '/v1/completions', 'content-length': String(64 << 20), 'x-request-id': rid }, { endStream: false });
    let head;
    const parts = [];
    req.on('response', (h) => { head = h; });
    req.on('data', (d) => parts.push(d));
    req.on('error', () => {});
    req.on('close', () => resolve({ head, body: Buffer.concat(parts).toString() }));
  });
  try {
    let r = await tooBig('h2-req.413');
    assert.equal(r.head[':status'], 413);
    assert.equal(r.head['x-request-id'], 'h2-req.413');
    assert.equal(JSON.parse(r.body).error.code, 413);
    r = await tooBig('not ok');
    assert.equal(r.head[':status'], 413);
    assert.match(r.head['x-request-id'], /^[0-9a-f]{32}$/);
  } finally {
    session.close();
  }
});

test('h2c clients that leave mid-stream are each counted once, not as engine errors', async () => {
  const sim = await startSim(['--zero-latency']);
  // No probes while the engine streams flat out: on a busy VM three slow ones took s0
  // out, and a stream got a short 503 instead of its 16 KiB.
  const g = await startGateway({ models: [{ name: 'inferrail/sim-8b' }], replicas: [{ id: 's0', url: sim.url }], health: { interval: '60s' } });
  try {
    const streams = 8;
    for (let i = 0; i < streams; i++) {
      const session = http2.connect(g.url);
      session.on('error', () => {});
      const req = session.request({ ':method': 'POST', ':path': '/v1/completions', 'content-type': 'application/json' });
      req.on('error', () => {});
      req.end(JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'x', max_tokens: 30000, stream: true }));
      // Until 16 KiB have come, or the stream ended or stalled without them (a failure
      // to show, not a wait without end).
      let status, got = 0;
      req.on('response', (h) => { status = h[':status']; });
      let timer;
      await new Promise((resolve) => {
        req.on('data', (d) => { got += d.length; if (got > 16384) resolve(); });
        req.on('close', resolve);
        timer = setTimeout(resolve, 60000); // a stalled stream fails here, with the log
      });
      clearTimeout(timer);
      assert.ok(got > 16384, `stream ${i}: status ${status}, ${got} bytes, then it ended or stalled\n${g.log.text.slice(-2000)}`);
      session.socket.resetAndDestroy(); // the TCP connection goes while the engine keeps sending
    }
    let page;
    for (const end = Date.now() + 20000; Date.now() < end;) {
      page = await metrics(g.admin);
      if (metricValue(page, 'inferrail_replica_in_flight', 'replica="s0"') === 0) break;
      await sleep(10);
    }
    assert.equal(metricValue(page, 'inferrail_replica_in_flight', 'replica="s0"'), 0, page);
    assert.equal(metricSum(page, 'inferrail_client_disconnects_total'), streams, page);
    assert.equal(metricValue(page, 'inferrail_upstream_errors_total'), 0, page);
  } finally {
    await g.stop();
    await sim.stop();
  }
});
