// The lag between an event batch's ts (the simulator's clock) and the gateway
// applying it, end to end over ZMQ on loopback: inferrail-sim --kv-events-config
// with zero latency, a gateway following it, N sequential requests; after each one
// (and a short wait) the gateway's inferrail_kv_events_lag_seconds gauge is read.
// Prints one JSON line with the median and the worst. Ports: random in 10000-19999.
//   make build && node bench/events/lag.mjs [N]
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const build = process.env.IR_BUILD || path.join(root, 'build');
const n = Number(process.argv[2] || 200);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const port = () => 10000 + Math.floor(Math.random() * 9990);
const kids = [];
process.on('exit', () => kids.forEach((k) => k.kill('SIGKILL')));

async function up(url) {
  for (let i = 0; i < 400; i++) {
    try { if ((await fetch(url)).status === 200) return; } catch { /* not yet */ }
    await sleep(25);
  }
  throw new Error(`${url} never came up`);
}

const [simPort, pub, gwPort, adminPort] = [port(), port(), port(), port()];
const cfg = { enable_kv_cache_events: true, publisher: 'zmq', endpoint: `tcp://127.0.0.1:${pub}`, replay_endpoint: `tcp://127.0.0.1:${pub + 1}` };
kids.push(spawn(path.join(build, 'inferrail-sim'), ['--port', String(simPort), '--zero-latency', '--kv-events-config', JSON.stringify(cfg)], { stdio: 'ignore' }));
const file = path.join(os.tmpdir(), `ir-lag-${process.pid}.yaml`);
fs.writeFileSync(file, JSON.stringify({
  models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
  replicas: [{ id: 's', url: `http://127.0.0.1:${simPort}`, kv_events: { endpoint: cfg.endpoint, replay_endpoint: cfg.replay_endpoint } }],
  server: { listen: `127.0.0.1:${gwPort}`, admin_listen: `127.0.0.1:${adminPort}`, workers: 1 },
}));
kids.push(spawn(path.join(build, 'inferrail-gateway'), ['--config', file], { stdio: 'ignore' }));
await up(`http://127.0.0.1:${simPort}/health`);
await up(`http://127.0.0.1:${gwPort}/health`);
const lags = [];
for (let i = 0; i < n; i++) {
  const r = await fetch(`http://127.0.0.1:${gwPort}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: `Prompt ${i} ` + 'token '.repeat(40 + (i % 50)), max_tokens: 1 }) });
  await r.arrayBuffer();
  await sleep(20);
  const page = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const m = /^inferrail_kv_events_lag_seconds\{replica="s"\} (\S+)/m.exec(page);
  if (m) lags.push(Number(m[1]));
}
fs.unlinkSync(file);
lags.sort((a, b) => a - b);
console.log(JSON.stringify({ case: 'lag_end_to_end', samples: lags.length, median_ms: +(lags[Math.floor(lags.length / 2)] * 1e3).toFixed(3), p90_ms: +(lags[Math.floor(lags.length * 0.9)] * 1e3).toFixed(3), max_ms: +(lags.at(-1) * 1e3).toFixed(3), load: fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ') }));
process.exit(0);
