// A KV event batch whose sequence number is the largest an engine can send
// (2^63 - 1) is taken like any other: the subscriber used to compute the next
// expected number as seq + 1, a signed overflow (UBSan stops the gateway; a
// release build wrapped to a negative number). The publisher is a few lines of
// pyzmq on a loopback port: (topic, 8-byte sequence, an empty batch [ts, []]).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { startSim, startGateway, freePort, metrics, metricValue, sleep } from './lib.mjs';

const PY = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

// Publishes (topic "", seq, payload) every 50 ms for at most 30 s (it stops with
// the test: its stdin closes).
const PUBLISHER = `
import sys, time, threading, msgpack, zmq
ctx = zmq.Context()
s = ctx.socket(zmq.PUB)
s.bind("tcp://127.0.0.1:%s" % sys.argv[1])
seq = int(sys.argv[2]).to_bytes(8, "big", signed=True)
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
end = time.time() + 30
while time.time() < end and not done.is_set():
    s.send_multipart([b"", seq, msgpack.packb([time.time(), []])])
    time.sleep(0.05)
`;

test('a batch numbered 2^63 - 1 neither stops nor wedges the subscriber', async () => {
  const port = await freePort();
  const pub = spawn(PY, ['-c', PUBLISHER, String(port), '9223372036854775807'], { stdio: ['pipe', 'ignore', 'inherit'] });
  const sim = await startSim(['--zero-latency']);
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'ev', url: sim.url, kv_events: { endpoint: `tcp://127.0.0.1:${port}` } }],
    health: { interval: '10s' },
  });
  try {
    let seen = 0;
    for (const end = Date.now() + 20000; Date.now() < end && seen < 2;) {
      const page = await metrics(gw.admin).catch(() => '');
      seen = metricValue(page, 'inferrail_kv_events_batches_total', 'replica="ev"') ?? 0;
      await sleep(50);
    }
    assert.ok(seen >= 2, `batches seen: ${seen}\n${gw.log.text}`);
    // still serving, and it stops cleanly
    const r = await fetch(`${gw.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'hello', max_tokens: 1 }) });
    assert.equal(r.status, 200, await r.text());
  } finally {
    pub.stdin.end();
    const rc = await gw.stop();
    await sim.stop();
    assert.equal(rc, 0, gw.log.text);
  }
});
