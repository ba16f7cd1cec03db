// Regressions found by the adversarial review (issue #10), gateway side: each test
// reproduces one attack and checks the gateway's answer and that it lives on. Run
// under ASan too, where a read past a buffer or a leaked request fails the run.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startSim, startGateway, rawRequest, freePort, sleep, waitFor } from './lib.mjs';

let sim, gw;
before(async () => {
  sim = await startSim(['--zero-latency']);
  gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', aliases: ['sim'] }],
    replicas: [{ id: 's0', url: sim.url }],
  });
});
after(async () => {
  assert.equal(await gw.stop(), 0, gw.log.text);
  await sim.stop();
});

const utf8 = new TextDecoder('utf-8', { fatal: true });

function bodyOf(raw) {
  const m = /\r\n\r\n([\s\S]*)$/.exec(raw);
  return m ? m[1] : '';
}

test('a non-string model at the very end of a body that fills its buffer gets a 400', async () => {
  // 63 bytes: `model`'s value is the last thing before the closing brace, so a
  // four-byte compare with "null" reads past the body's end.
  for (const v of ['0', '1', 'n', 'nu', 'nul', 'true', '[]', '{}']) {
    const body = `{"a":"${'x'.repeat(45)}","model":${v}}`;
    const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body });
    assert.equal(r.status, 400, body);
    const e = await r.json();
    const valid = !/^n/.test(v); // n, nu and nul are not JSON at all
    assert.match(e.error.message, valid ? /`model` must be a string/ : /not a valid JSON object/);
  }
  // null still means "the only model".
  const ok = await fetch(gw.url + '/v1/completions', { method: 'POST', body: '{"prompt":"x","max_tokens":1,"model":null}' });
  assert.equal(ok.status, 200);
  await ok.arrayBuffer();
  assert.equal(gw.child.exitCode, null);
});

test('a body nested as deep as vLLM parses it is proxied; deeper gets a 400', async () => {
  // Python's json (vLLM's) takes about 1,000 levels; 256 was refused here as not JSON.
  const nested = (d) => `{"model":"sim","prompt":"x","max_tokens":1,"metadata":${'['.repeat(d)}${']'.repeat(d)}}`;
  for (const d of [256, 900]) {
    const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body: nested(d) });
    assert.equal(r.status, 200, `depth ${d}: ${await r.clone().text()}`);
    await r.arrayBuffer();
  }
  const deep = await fetch(gw.url + '/v1/completions', { method: 'POST', body: nested(5000) });
  assert.equal(deep.status, 400);
  assert.match((await deep.json()).error.message, /not a valid JSON object/);
  assert.equal(gw.child.exitCode, null);
});

test('an unknown model with a lone surrogate gets a 404 whose body is valid UTF-8 and JSON', async () => {
  for (const name of ['\\ud800', '\\udfff tail', 'a\\ud83d', '\\ud83d\\ude00']) {
    const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body: `{"model":"${name}"}` });
    assert.equal(r.status, 404);
    const buf = new Uint8Array(await r.arrayBuffer());
    const text = utf8.decode(buf); // throws on invalid UTF-8
    const e = JSON.parse(text);
    assert.match(e.error.message, /does not exist/);
  }
});

test('a huge unknown model name is echoed truncated, visibly, not as an empty name', async () => {
  const name = 'q'.repeat(1 << 20);
  const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body: `{"model":"${name}"}` });
  assert.equal(r.status, 404);
  const e = await r.json();
  assert.match(e.error.message, /`q{32,}…` \(1048576 bytes\) does not exist/);
  assert.ok(e.error.message.length < 1024, 'the message stays short');
});

test('a NUL in an unknown model name shows in the 404, not cutting the name short into another', async () => {
  const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body: '{"model":"inferrail/sim-8b\\u0000x","prompt":"a","max_tokens":1}' });
  assert.equal(r.status, 404);
  const e = await r.json();
  assert.equal(e.error.message, 'The model `inferrail/sim-8b\ufffdx` does not exist.');
});

test('a body that opens with a UTF-8 byte order mark is routed, as the engine (json.loads on bytes) reads it', async () => {
  const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"model":"sim","prompt":"hello","max_tokens":1}')]);
  const r = await fetch(gw.url + '/v1/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await r.text();
  assert.equal(r.status, 200, text);
  assert.equal(JSON.parse(text).model, 'inferrail/sim-8b'); // the alias was rewritten past the mark
});

test('headers named by Connection are hop-by-hop: dropped on the way to the engine and back', async () => {
  let received = null;
  const srv = http.createServer((req, res) => {
    if (req.url === '/health' || req.url === '/v1/models') { res.end(req.url === '/health' ? '' : '{"object":"list","data":[]}'); return; }
    if (req.url === '/metrics') { res.statusCode = 404; res.end(); return; } // the load scraper's
    received = req.headers;
    req.resume();
    req.on('end', () => {
      res.setHeader('connection', 'keep-alive, x-engine-private');
      res.setHeader('x-engine-private', 'secret');
      res.setHeader('x-engine-public', 'yes');
      res.end('{}');
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const g = await startGateway({ models: [{ name: 'm' }], replicas: [{ id: 'e', url: `http://127.0.0.1:${srv.address().port}` }] });
  try {
    const body = '{"model":"m"}';
    const raw = await rawRequest(g.port, 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close, X-Secret ,x-other\r\n' +
      `X-Secret: 1\r\nX-Other: 2\r\nX-Kept: 3\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    assert.equal(raw.status, 200, raw.raw);
    assert.equal(received['x-secret'], undefined);
    assert.equal(received['x-other'], undefined);
    assert.equal(received['x-kept'], '3');
    assert.match(raw.raw, /\r\nx-engine-public: yes\r\n/i);
    assert.doesNotMatch(raw.raw, /x-engine-private: secret/i);
  } finally {
    assert.equal(await g.stop(), 0, g.log.text);
    srv.close();
  }
});

test('requests that wait in a retry backoff are freed, whether a retry succeeds or attempts run out', async () => {
  const dead = await freePort();
  const g = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 'dead', url: `http://127.0.0.1:${dead}` }, { id: 'live', url: sim.url }],
    routing: { default_policy: 'round_robin' },
    retry: { backoff: '1ms', max_backoff: '2ms' },
    health: { interval: '10s', max_ejection_percent: 0 },
  });
  try {
    let retried = 0;
    for (let i = 0; i < 12; i++) {
      const r = await fetch(g.url + '/v1/completions', { method: 'POST', body: '{"prompt":"x","max_tokens":1}' });
      assert.equal(r.status, 200);
      await r.arrayBuffer();
    }
    const page = await (await fetch(g.admin + '/metrics')).text();
    retried = Number(/^inferrail_upstream_retries_total\{[^}]*\} (\d+)/m.exec(page)[1]);
    assert.ok(retried >= 5, `only ${retried} retries`);
  } finally {
    // Under ASan, LeakSanitizer fails the exit when a request was never freed.
    assert.equal(await g.stop(), 0, g.log.text);
  }
  const g2 = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 'dead', url: `http://127.0.0.1:${dead}` }],
    retry: { backoff: '1ms', max_backoff: '2ms', max_attempts: 3 },
    health: { interval: '10s', max_ejection_percent: 0 },
  });
  try {
    for (let i = 0; i < 5; i++) {
      const r = await fetch(g2.url + '/v1/completions', { method: 'POST', body: '{"prompt":"x","max_tokens":1}' });
      assert.equal(r.status, 502);
      await r.arrayBuffer();
    }
  } finally {
    assert.equal(await g2.stop(), 0, g2.log.text);
  }
});

test('the gateway is still alive after all of the above', async () => {
  await sleep(10);
  const r = await fetch(gw.url + '/v1/completions', { method: 'POST', body: '{"model":"sim","prompt":"x","max_tokens":1}' });
  assert.equal(r.status, 200);
  await r.arrayBuffer();
});

test('logging.format json: the access log\'s values are fields of the event, not text in its message', async () => {
  const g = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }], replicas: [{ id: 's0', url: sim.url }],
    logging: { access_log: true, format: 'json' },
  });
  try {
    const r = await fetch(g.url + '/v1/completions', { method: 'POST', body: '{"prompt":"hello there","max_tokens":1}', headers: { 'x-request-id': 'json-1' } });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    await waitFor('the access event', () => g.log.text.includes('"access"')).catch(() => {});
    const events = g.log.text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    const a = events.find((e) => e.component === 'access');
    assert.ok(a, g.log.text);
    assert.equal(a.request_id, 'json-1');
    assert.equal(a.model, 'inferrail/sim-8b');
    assert.equal(a.replica, 's0');
    assert.equal(a.status, 200);
    assert.equal(a.attempts, 1);
    assert.equal(typeof a.ms, 'number');
    assert.equal(typeof a.prompt_tokens, 'number');
    assert.ok(!a.msg.includes('json-1'), 'the message does not repeat the fields');
  } finally {
    assert.equal(await g.stop(), 0, g.log.text);
  }
});

test('per-replica upstream headers replace the client\'s, and X-Forwarded-For carries the client', async () => {
  let received = null;
  const srv = http.createServer((req, res) => {
    if (req.url === '/health' || req.url === '/v1/models') { res.end(req.url === '/health' ? '' : '{"object":"list","data":[]}'); return; }
    if (req.url === '/metrics') { res.statusCode = 404; res.end(); return; } // the load scraper's
    received = req.headers;
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const g = await startGateway({
    models: [{ name: 'm' }],
    replicas: [{ id: 'e', url: `http://127.0.0.1:${srv.address().port}`, headers: { authorization: 'Bearer replica-key' } }],
    upstream: { x_forwarded_for: true },
  });
  try {
    const r = await fetch(g.url + '/v1/completions', { method: 'POST', body: '{"model":"m"}', headers: { authorization: 'Bearer client', 'x-forwarded-for': '10.1.2.3' } });
    assert.equal(r.status, 200);
    await r.arrayBuffer();
    assert.equal(received.authorization, 'Bearer replica-key');
    assert.equal(received['x-forwarded-for'], '10.1.2.3, 127.0.0.1');
  } finally {
    assert.equal(await g.stop(), 0, g.log.text);
    srv.close();
  }
});
