// The gateway's upstream h2c path (upstream: {http2: true}) against an engine that
// misbehaves on purpose (h2_engine.mjs, raw frames): what README's "How a request is
// proxied" promises for HTTP/1.1 engines holds over h2c too, and RFC 9113's rules on
// early answers (8.1) and unprocessed streams (8.7) are followed. Each test failed
// before the fixes of session 40.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { startGateway } from './lib.mjs';
import {
  fleet, startEngine, post, port, metricsPage, mv, h2headers, frame, goaway, T, F, OK_BODY, BODY, sleep,
} from './h2_engine.mjs';

// A raw HTTP/1.1 POST whose reader stays paused for pauseMs; resolves to the head and
// the decoded chunked body.
function slowPost(gw, pauseMs, body = BODY) {
  return new Promise((resolve) => {
    const s = net.connect(gw.port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    s.on('connect', () => {
      s.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`);
      s.write(body);
      if (pauseMs) { s.pause(); setTimeout(() => s.resume(), pauseMs); }
    });
    s.on('data', (d) => { buf = Buffer.concat([buf, d]); });
    s.on('error', () => {});
    s.on('close', () => {
      const he = buf.indexOf('\r\n\r\n');
      const head = buf.subarray(0, he).toString();
      let i = he + 4, total = 0, complete = false;
      for (;;) {
        const e = buf.indexOf('\r\n', i);
        if (e < 0) break;
        const n = parseInt(buf.subarray(i, e).toString(), 16);
        if (!(n >= 0)) break;
        if (n === 0) { complete = true; break; }
        if (buf.length < e + 2 + n + 2) { total += buf.length - e - 2; break; }
        total += n;
        i = e + 2 + n + 2;
      }
      resolve({ head, total, complete });
    });
  });
}

// the engine ends its stream (END_STREAM) while the gateway still holds
// bytes of it for a slow client, then sends GOAWAY (NO_ERROR), or closes after it.
// The held bytes are thrown away: the client's response is cut short.
for (const after of ['goaway', 'goaway-then-close']) {
  test(`h2c: a response finished by the engine reaches a slow client whole (${after})`, async () => {
    let sent = -1;
    const scen = (c) => {
      c.write(h2headers(c.id, 200, [['content-type', 'text/plain']], false));
      // as much as the gateway's windows take, until it holds the stream (the client is slow)
      c.pour(64 << 20, { end: false, stallMs: 800 }).then(({ sent: n }) => {
        sent = n;
        c.write(frame(T.DATA, F.END_STREAM, c.id)); // the response is complete
        c.eng.later(300, () => {
          c.write(goaway(c.id, 0)); // graceful: nothing after this stream
          if (after === 'goaway-then-close') c.sock.end();
        });
      });
    };
    await fleet(scen, async (gw) => {
      const r = await slowPost(gw, 4000);
      assert.match(r.head, /^HTTP\/1\.1 200/);
      assert.equal(r.total, sent, `the client got ${r.total} of the ${sent} bytes the engine sent`);
      assert.ok(r.complete, 'the chunked response never ended');
      const page = await metricsPage(gw);
      assert.equal(mv(page, 'inferrail_upstream_errors_total') ?? 0, 0, 'a complete response counted as an upstream error');
    }, {
      good: false,
      gateway: { server: { workers: 1, request_timeout: '30s', max_write_queue: 262144 } },
      upstream: { idle_timeout: '10s', response_timeout: '10s', non_streaming_timeout: '10s' },
    });
  });
}

// the engine answers in full before reading the request body (RFC 9113
// 8.1 allows it) and leaves its flow-control window shut. The gateway waits for the
// upload until upstream.idle_timeout, then resets the stream, counts a stall and cuts
// the client: the chunked response never gets its last chunk.
test('h2c: a complete response sent before the request body was read ends at once', async () => {
  const big = JSON.stringify({ model: 'fake', prompt: 'x'.repeat(1 << 20), max_tokens: 1 });
  await fleet((c) => c.write(Buffer.concat([
    h2headers(c.id, 400, [['content-type', 'application/json']], false), // no content-length: chunked to the client
    frame(T.DATA, F.END_STREAM, c.id, Buffer.from('{"error":{"message":"prompt too long","code":400}}')),
  ])), async (gw) => {
    const t0 = Date.now();
    const r = await slowPost(gw, 0, big);
    assert.match(r.head, /^HTTP\/1\.1 400/);
    assert.ok(r.complete, `the response was cut after ${Date.now() - t0} ms`);
    assert.ok(Date.now() - t0 < 2500, `took ${Date.now() - t0} ms (idle_timeout is 5 s)`);
    const page = await metricsPage(gw);
    assert.equal(mv(page, 'inferrail_upstream_stalls_total') ?? 0, 0, 'counted as a stall');
  }, { good: false, upstream: { idle_timeout: '5s', response_timeout: '30s', non_streaming_timeout: '30s' }, gateway: { server: { workers: 1, request_timeout: '30s' } } });
});

// streams an engine refused before processing them (RST_STREAM
// REFUSED_STREAM, or above a GOAWAY's last stream id) are safe to retry (RFC 9113 8.7),
// but count as the replica's failures: a healthy engine that enforces
// MAX_CONCURRENT_STREAMS, or restarts gracefully, is ejected.
test('h2c: streams refused by an engine at its MAX_CONCURRENT_STREAMS do not eject it', async () => {
  const p = await port();
  let served = 0;
  const srv = http2.createServer({ settings: { maxConcurrentStreams: 1 } }, (req, res) => {
    served++;
    req.resume();
    req.on('end', () => setTimeout(() => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(OK_BODY); }, 200));
  });
  await new Promise((r) => srv.listen(p, '127.0.0.1', r));
  const good = await startEngine('ok');
  const gw = await startGateway({
    models: [{ name: 'fake', policy: 'round_robin' }],
    replicas: [{ id: 'busy', url: `http://127.0.0.1:${p}` }, { id: 'good', url: good.url }],
    server: { workers: 1, request_timeout: '10s' },
    upstream: { http2: true, response_timeout: '2s', non_streaming_timeout: '2s', idle_timeout: '1s' },
    retry: { max_attempts: 3, backoff: '10ms' },
    health: { interval: '10s', unhealthy_threshold: 3 },
  });
  try {
    const rs = await Promise.all(Array.from({ length: 12 }, () => post(gw)));
    for (const r of rs) assert.equal(r.status, 200, r.text);
    await sleep(100);
    const page = await metricsPage(gw);
    assert.equal(mv(page, 'inferrail_replica_failures_total', 'replica="busy"') ?? 0, 0, `served ${served}; ${page.split('\n').filter((l) => /replica_failures/.test(l)).join(' ')}`);
    assert.doesNotMatch(gw.log.text, /replica busy ejected/);
  } finally {
    await gw.stop();
    await good.stop();
    srv.close();
  }
});

test('h2c: streams above a graceful GOAWAY\'s last stream id are retried without blaming the engine', async () => {
  await fleet((c) => {
    if (c.id === 1) return c.eng.later(300, () => c.write(Buffer.concat([
      h2headers(c.id, 200, [['content-type', 'application/json']], false), frame(T.DATA, F.END_STREAM, c.id, Buffer.from(OK_BODY))])));
    if (!c.conn.gone) { c.conn.gone = true; c.write(goaway(1, 0)); } // NO_ERROR: streams > 1 were not processed
  }, async (gw) => {
    const rs = await Promise.all(Array.from({ length: 8 }, () => post(gw)));
    for (const r of rs) assert.equal(r.status, 200, r.text);
    await sleep(100);
    const page = await metricsPage(gw);
    assert.equal(mv(page, 'inferrail_replica_failures_total', 'replica="bad"') ?? 0, 0);
    assert.doesNotMatch(gw.log.text, /replica bad ejected/);
  }, { gateway: { health: { interval: '10s', unhealthy_threshold: 3 } } });
});

// A 204 or 304 ends with its head, as over HTTP/1.1: one whose stream the engine
// does not end waited for upstream.idle_timeout, then went to another replica.
for (const [name, frames] of [
  ['204 without END_STREAM', (id) => h2headers(id, 204, [], false)],
  ['304 without END_STREAM', (id) => h2headers(id, 304, [], false)],
]) {
  test(`h2c: ${name} is answered at once`, async () => {
    await fleet((c) => c.write(frames(c.id)), async (gw) => {
      const t0 = Date.now();
      const rs = [await post(gw), await post(gw)];
      const fromBad = rs.filter((r) => r.replica === 'bad');
      assert.equal(fromBad.length, 1, JSON.stringify(rs));
      assert.equal(fromBad[0].status, Number(name.slice(0, 3)));
      assert.ok(Date.now() - t0 < 900, `took ${Date.now() - t0} ms (the idle timeout is 1 s)`);
      const page = await metricsPage(gw);
      assert.equal(mv(page, 'inferrail_replica_failures_total', 'replica="bad"') ?? 0, 0);
    });
  });
}

// over HTTP/1.1 a request that meets a pooled connection the engine had
// closed (no response byte) is sent again on a fresh connection, unseen by the
// gateway (client.c conn_broken: c->reused). Over h2c it fails the attempt: with
// retry.max_attempts 1 the client gets a 502, and the replica is blamed either way.
test('h2c: a request that meets a connection the engine closed goes out again on a new one', async () => {
  await fleet((c) => {
    if (c.id > 1) c.sock.destroy(); // the engine had let this connection go
    else c.write(Buffer.concat([h2headers(c.id, 200, [['content-type', 'application/json']], false), frame(T.DATA, F.END_STREAM, c.id, Buffer.from(OK_BODY))]));
  }, async (gw) => {
    for (let i = 0; i < 4; i++) {
      const r = await post(gw);
      assert.equal(r.status, 200, `request ${i}: ${r.text}`);
      await sleep(50);
    }
    const page = await metricsPage(gw);
    assert.equal(mv(page, 'inferrail_replica_failures_total', 'replica="bad"') ?? 0, 0);
  }, { good: false, gateway: { retry: { max_attempts: 1 } } });
});
