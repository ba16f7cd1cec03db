// A body over server.max_body_bytes: the 413 names the limit, and over h2c
// both curl and Node's http2 client get the whole answer while they are still
// uploading (RFC 9113 8.1: the rest of the body is read and dropped instead of
// a RST_STREAM that these clients treat as a failure).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startSim, startGateway } from './lib.mjs';

let sim, gw;
const big = path.join(os.tmpdir(), `ir-413-${process.pid}.txt`);
before(async () => {
  sim = await startSim(['--zero-latency']);
  gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 's0', url: sim.url }],
    server: { max_body_bytes: '1KiB' },
  });
  fs.writeFileSync(big, 'a'.repeat(1 << 20));
});
after(async () => { await gw.stop(); await sim.stop(); fs.rmSync(big, { force: true }); });

const limitMsg = /the limit is 1024 bytes/;

for (const [name, extra] of [['content-length', []], ['no content-length', ['-H', 'content-length:']]]) {
  test(`curl over h2c, ${name}: 413 with the limit, exit 0`, () => {
    const r = spawnSync('curl', ['-s', '--http2-prior-knowledge', '-w', '\n%{http_code}', ...extra,
      '--data-binary', `@${big}`, `${gw.url}/v1/completions`], { encoding: 'utf8', timeout: 20000 });
    assert.equal(r.status, 0, `curl exit ${r.status}: ${r.stderr}`);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.at(-1), '413');
    assert.match(lines[0], limitMsg);
  });
}

test('curl over HTTP/1.1: the 413 names the limit', () => {
  const r = spawnSync('curl', ['-s', '-w', '\n%{http_code}', '--data-binary', `@${big}`, `${gw.url}/v1/completions`],
    { encoding: 'utf8', timeout: 20000 });
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.at(-1), '413');
  assert.match(lines[0], limitMsg);
});

function upload(session, withLength) {
  return new Promise((resolve, reject) => {
    const body = Buffer.alloc(1 << 20, 97);
    const headers = { ':method': 'POST', ':path': '/v1/completions', 'content-type': 'application/json' };
    if (withLength) headers['content-length'] = String(body.length);
    const req = session.request(headers);
    let status;
    const parts = [];
    req.on('response', (h) => { status = h[':status']; });
    req.on('data', (d) => parts.push(d));
    req.on('close', () => resolve({ status, body: Buffer.concat(parts).toString(), rst: req.rstCode }));
    req.on('error', (e) => { if (status === undefined) reject(e); });
    // Written in pieces, as a client that is still sending when the answer comes.
    let off = 0;
    const pump = () => {
      while (off < body.length) {
        const piece = body.subarray(off, off + 16384);
        off += piece.length;
        if (!req.write(piece)) return req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

for (const withLength of [true, false]) {
  test(`node http2 client, ${withLength ? 'content-length' : 'no content-length'}: sees the 413`, async () => {
    const session = http2.connect(gw.url);
    try {
      const r = await upload(session, withLength);
      assert.equal(r.status, 413);
      assert.match(r.body, limitMsg);
      // The connection is still good for the next request.
      const again = await upload(session, true);
      assert.equal(again.status, 413);
    } finally {
      session.close();
    }
  });
}
