// A request still arriving when the gateway is told to stop is read to its end
// and answered during the drain. irn_server_close used to close the loop-turn
// handle that restarts each turn's CPU budget: from then on every turn counted
// as spent, a read over 4 KiB was held back for a later turn that never took
// it up (and the idle handle of that queue kept the loop spinning), so a body
// half sent at SIGTERM stalled until request_timeout (408), and the drain
// waited for it.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http2 from 'node:http2';
import { startSim, startGateway, sleep } from './lib.mjs';

let sim;
before(async () => { sim = await startSim(['--zero-latency']); });
after(async () => { await sim.stop(); });

const MODEL = 'inferrail/sim-8b';

async function gateway() {
  // request_timeout well past the test's wait: a stalled body shows as a 408 after
  // it, or as no answer at all, never as a pass
  return startGateway({
    models: [{ name: MODEL }],
    replicas: [{ id: 's0', url: sim.url }],
    server: { request_timeout: '60s', workers: 1, max_body_bytes: '8MiB' },
  });
}

// A short completion padded with 2 MiB of white space (JSON allows it anywhere
// between tokens): large enough to arrive in many reads, short for the engine.
function big() {
  return `{"model":"${MODEL}","max_tokens":1,"prompt":"hello"${' '.repeat(2 << 20)}}`;
}

// Resolves to the gateway's exit code, or 'still running' after ms.
function exitWithin(gw, ms) {
  gw.child.ref(); // held until it exits (lib.mjs lets children go)
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve('still running'), ms);
    gw.child.on('exit', (code, sig) => { clearTimeout(t); resolve(code ?? sig); });
  });
}

// With half a body sent: SIGTERM, then sendRest() the other half. Resolves (once
// the rest is sent) to {exited}: exitWithin's promise of the gateway's exit code.
async function termMidway(gw, sendRest) {
  await sleep(200);
  const exited = exitWithin(gw, 20000);
  gw.child.kill('SIGTERM');
  await sleep(100);
  sendRest();
  return { exited };
}

test('HTTP/1.1: a body half sent at SIGTERM is read and answered', async () => {
  const gw = await gateway();
  const body = big();
  const sock = net.connect(gw.port, '127.0.0.1');
  let got = '';
  sock.on('data', (d) => { got += d; });
  sock.on('error', () => {});
  await new Promise((r) => sock.on('connect', r));
  sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`);
  sock.write(body.slice(0, body.length >> 1));
  const { exited } = await termMidway(gw, () => sock.write(body.slice(body.length >> 1)));
  const closed = new Promise((r) => sock.on('close', r));
  const rc = await exited;
  await Promise.race([closed, sleep(2000)]);
  sock.destroy();
  if (rc === 'still running') gw.child.kill('SIGKILL');
  assert.match(got, /^HTTP\/1\.1 200 /, `the answer: ${got.slice(0, 300)}`);
  assert.equal(rc, 0, gw.log.text);
});

test('h2c: a stream whose body is half sent at SIGTERM is read and answered', async () => {
  const gw = await gateway();
  const session = http2.connect(gw.url);
  session.on('error', () => {});
  const body = big();
  const req = session.request({ ':method': 'POST', ':path': '/v1/completions', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  req.on('error', () => {});
  let status = 0, text = '';
  req.on('response', (h) => { status = h[':status']; });
  req.setEncoding('utf8');
  req.on('data', (d) => { text += d; });
  const ended = new Promise((r) => { req.on('end', r); req.on('close', r); });
  req.write(body.slice(0, body.length >> 1));
  const { exited } = await termMidway(gw, () => req.end(body.slice(body.length >> 1)));
  await ended; // the stream ends either way: answered, or reset when the gateway exits
  session.destroy();
  const rc = await exited;
  if (rc === 'still running') gw.child.kill('SIGKILL');
  assert.equal(status, 200, `the answer: ${status} ${text.slice(0, 300)}`);
  assert.equal(rc, 0, gw.log.text);
});
