// 600 hostile requests (seeded): the gateway never crashes or hangs, and every
// answer it gives is an HTTP response in the OpenAI error shape (or the
// engine's own answer); then it still serves a normal request.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { startSim, startGateway, rawRequest } from './lib.mjs';

let sim, gw;
before(async () => {
  sim = await startSim(['--zero-latency']);
  gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', aliases: ['sim'] }],
    replicas: [{ id: 's0', url: sim.url }],
    server: { request_timeout: '1s', header_read_timeout: '1s', max_body_bytes: '64KiB', max_header_bytes: '8KiB' },
  });
});
after(async () => { await gw.stop(); await sim.stop(); });

let seed = 12345;
const rnd = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
const pick = (a) => a[rnd(a.length)];

function hostile() {
  const bodies = ['{"model":"sim","prompt":"x","max_tokens":1}', '{"model":', '[]', '{"model":1}', '{"model":"sim","model":null}',
    '\u0000\u0001', '{"model":"\\ud800"}', '{"prompt":"' + 'é'.repeat(100) + '"}', 'x'.repeat(70000), '{"model":"nope"}', ''];
  const paths = ['/v1/completions', '/v1/chat/completions', '/v1/models', '/health', '/../../etc/passwd', '/v1/completions?x=%00', '*', '/' + 'a'.repeat(9000)];
  const methods = ['POST', 'GET', 'PUT', 'HEAD', 'DELETE', 'P\u00d6ST', 'OPTIONS', ''];
  const body = pick(bodies);
  const extra = pick(['', 'X-Bad: \u0001\r\n', 'Transfer-Encoding: chunked\r\n', 'Content-Length: -5\r\n', 'Content-Length: 99999999999\r\n',
    'Expect: 100-continue\r\n', 'X-Long: ' + 'y'.repeat(9000) + '\r\n', 'Connection: upgrade\r\nUpgrade: websocket\r\n', 'Host: a\r\nHost: b\r\n']);
  let req = `${pick(methods)} ${pick(paths)} HTTP/1.${pick(['1', '1', '0', '9'])}\r\nHost: x\r\n${extra}`;
  if (extra.startsWith('Transfer-Encoding')) req += `\r\n${pick(['5\r\nhello\r\n0\r\n\r\n', 'zz\r\n', '1\r\n' + body.slice(0, 1) + '\r\n'])}`;
  else if (!extra.startsWith('Content-Length')) req += `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  else req += `\r\n${body}`;
  const cut = rnd(4) === 0 ? rnd(req.length) : req.length; // sometimes truncated mid-request
  return req.slice(0, cut);
}

test('hostile requests get error-shaped answers or a close, and the gateway lives', async () => {
  let answered = 0;
  for (let batch = 0; batch < 30; batch++) {
    const res = await Promise.all(Array.from({ length: 20 }, () => rawRequest(gw.port, hostile(), { timeoutMs: 4000 })));
    for (const r of res) {
      assert.ok(!r.timeout, 'the gateway hung: ' + r.raw.slice(0, 200));
      if (!r.status) continue; // closed without an answer (a truncated request, a bad one)
      answered++;
      const m = /\r\n\r\n([\s\S]*)$/.exec(r.raw);
      const body = m ? m[1] : '';
      if (r.status >= 400 && body.trim().startsWith('{')) {
        const e = JSON.parse(body.replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, ''));
        assert.deepEqual(Object.keys(e), ['error'], body);
        assert.equal(typeof e.error.message, 'string');
        assert.equal(e.error.code, r.status);
      }
      assert.ok(r.status >= 100 && r.status < 600);
    }
  }
  assert.ok(answered > 200, `only ${answered} answers`);
  assert.equal(gw.child.exitCode, null);
  const ok = await fetch(gw.url + '/v1/completions', { method: 'POST', body: '{"model":"sim","prompt":"x","max_tokens":1}' });
  assert.equal(ok.status, 200);
});

// The admin port (found by a hostile-operator review): it took none of server.*'s limits
// (a 30 s header timeout whatever header_read_timeout said) and any number of
// connections, so idle half-sent admin requests could take every file descriptor and
// reset the client port's connections. It now takes server.*'s timeouts and sizes and
// at most 64 connections.
test('the admin port takes server limits and caps its connections', async () => {
  const net = await import('node:net');
  const sim = await startSim(['--zero-latency']);
  const gw = await startGateway({
    server: { header_read_timeout: '1s', max_connections: 50 },
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 'a', url: sim.url }],
  }, { nofile: 160 });
  const port = Number(new URL(gw.admin).port);
  const socks = [];
  try {
    // A half-sent request is cut at the header timeout: about 1 s, not 30.
    const t0 = Date.now();
    const cut = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => s.write('GET /ready HTTP/1.1\r\n'));
      let got = '';
      s.on('data', (d) => { got += d; });
      s.on('close', () => resolve(got));
      s.on('error', () => {});
    });
    assert.ok(Date.now() - t0 < 5000, `cut after ${Date.now() - t0} ms`);
    assert.match(cut, /^HTTP\/1\.1 408/);
    // 150 idle admin connections within a 160-file limit: the ones past 64 are closed,
    // and the client port and the admin port still answer.
    for (let i = 0; i < 150; i++) {
      const s = net.connect(port, '127.0.0.1', () => s.write('GET /ready HTTP/1.1\r\n'));
      s.on('error', () => {});
      socks.push(s);
    }
    await new Promise((r) => setTimeout(r, 300));
    const r = await fetch(`${gw.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'hi', max_tokens: 2 }) });
    const body = await r.text();
    assert.equal(r.status, 200, body);
  } finally {
    for (const s of socks) s.destroy();
    assert.equal(await gw.stop(), 0, gw.log.text);
    await sim.stop();
  }
});
