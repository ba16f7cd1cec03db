// Event ports that change on every DNS answer (a hostile or broken server; tests/tools/dns_churn.py
// gives a new random port in each SRV record). A member whose ports change leaves and
// joins again, which costs a replica slot for 10 s; before, every round did it, the
// slots ran out within a second and most requests got 503 with every engine healthy.
// Now new ports are taken only when two rounds in a row give them: these never are.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startGateway, sleep, waitFor, freePort, stopChild } from './lib.mjs';
import { startSimsAt, members } from './dns_lib.mjs';

const tools = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'tools');

test('event ports that change on every answer do not make members leave and join', { timeout: 60000 }, async () => {
  const hosts = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
  const { port, sims } = await startSimsAt(hosts, ['--zero-latency']);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ir-churn-'));
  const rules = path.join(dir, 'rules.json');
  const names = Object.fromEntries(hosts.map((h) => [`h${h.split('.')[3]}.test`, { a: [h] }]));
  fs.writeFileSync(rules, JSON.stringify({
    'pool.test': { a: hosts }, ...names,
    'ev.test': { srv: Object.keys(names).map((n) => [0, n]) }, // a new port each answer
  }));
  const dnsPort = await freePort();
  const dns = spawn('python3', [path.join(tools, 'dns_churn.py'), String(dnsPort), rules, '50'], { stdio: 'ignore' });
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    discovery: {
      nameservers: [`127.0.0.1:${dnsPort}`],
      dns: [{ name: 'pool', url: `http://pool.test:${port}`, refresh: '100ms', kv_events: { port_srv: 'ev.test' } }],
    },
    health: { interval: '200ms' },
  });
  try {
    await waitFor('three members', async () => (await members(gw)).length === 3);
    const ok = [];
    for (const end = Date.now() + 3000; Date.now() < end;) {
      const r = await fetch(`${gw.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'x', max_tokens: 1 }) });
      ok.push(r.status);
      await r.arrayBuffer();
      await sleep(20);
    }
    const log = gw.log.text;
    // the members follow their events at the ports of the first answer
    assert.equal((log.match(/following its KV events at tcp:\/\/127\.0\.0\.\d:\d+/g) || []).length, 3, log.slice(-2000));
    assert.equal((log.match(/its KV event ports changed/g) || []).length, 0, log.slice(-2000));
    assert.doesNotMatch(log, /no room/);
    assert.equal((await members(gw)).length, 3);
    assert.deepEqual([...new Set(ok)], [200], `statuses: ${[...new Set(ok)]}`);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text.slice(-2000));
    await stopChild(dns, 'SIGTERM', 2000);
    for (const s of sims) await s.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
