// How long after a client disconnects does the engine abort the request?
// Reproduce with: make build && node bench/gateway/cancel.mjs [OUT.json]
// 50 streams through the gateway to one simulator; each client reads the first
// event, then drops the connection; the time until the simulator counts the
// abort (polled every millisecond) is recorded. Loopback only.
import fs from 'node:fs';
import net from 'node:net';
import { startSim, startGateway, metrics, metricValue } from '../../tests/integration/lib.mjs';

const N = 50;
const sim = await startSim(['--decode-token-ms', '5']);
const gw = await startGateway({ models: [{ name: 'inferrail/sim-8b' }], replicas: [{ id: 's0', url: sim.url }] });
const aborts = async () => metricValue(await metrics(sim.url), 'vllm:request_success_total', 'finished_reason="abort"');
const lat = [];
try {
  for (let i = 0; i < N; i++) {
    const before = await aborts();
    const body = JSON.stringify({ prompt: `q${i}`, max_tokens: 5000, stream: true });
    const sock = net.connect(gw.port, '127.0.0.1');
    await new Promise((r) => sock.on('connect', r));
    sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await new Promise((r) => sock.once('data', r));
    const t0 = process.hrtime.bigint();
    sock.destroy();
    for (;;) {
      if ((await aborts()) > before) break;
      if (Number(process.hrtime.bigint() - t0) > 5e9) throw new Error('abort never seen');
    }
    lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
} finally {
  await gw.stop();
  await sim.stop();
}
lat.sort((a, b) => a - b);
const q = (p) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
const out = { bench: 'cancel', disconnects: N, ms: { p50: q(50), p90: q(90), p99: q(99), max: lat.at(-1) }, note: 'includes one /metrics scrape of the simulator per poll' };
console.log(JSON.stringify(out));
if (process.argv[2]) fs.writeFileSync(process.argv[2], JSON.stringify(out) + '\n');
