// Soak: 20,000 requests that each go through a retry backoff (one replica refuses
// connections) leave the gateway's resident memory flat. Before the fix, every
// request that waited in a backoff leaked (4.2 to 19.3 MB over 20,000).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startSim, startGateway, freePort } from '../integration/lib.mjs';

const TOTAL = Number(process.env.IR_SOAK_REQUESTS || 20000);
const CONCURRENCY = 32;

function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

async function drive(url, n) {
  let next = 0, ok = 0;
  const body = '{"prompt":"x","max_tokens":1}';
  async function lane() {
    while (next < n) {
      next++;
      const r = await fetch(url + '/v1/completions', { method: 'POST', body });
      await r.arrayBuffer();
      if (r.status === 200) ok++;
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  return ok;
}

test(`${TOTAL} retried requests keep resident memory flat`, { timeout: 900000 }, async () => {
  const sim = await startSim(['--zero-latency']);
  const dead = await freePort();
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 'dead', url: `http://127.0.0.1:${dead}` }, { id: 'live', url: sim.url }],
    routing: { default_policy: 'round_robin' },
    retry: { backoff: '1ms', max_backoff: '1ms' },
    health: { interval: '60s', max_ejection_percent: 0 },
    server: { workers: 1 },
  });
  try {
    assert.equal(await drive(gw.url, 2000), 2000); // warm-up: pools and free lists fill
    const before = rssKiB(gw.child.pid);
    assert.equal(await drive(gw.url, TOTAL), TOTAL);
    const after = rssKiB(gw.child.pid);
    const page = await (await fetch(gw.admin + '/metrics')).text();
    const retries = Number(/^inferrail_upstream_retries_total\{[^}]*\} (\d+)/m.exec(page)[1]);
    console.log(`rss before ${before} KiB, after ${after} KiB, retries ${retries}`);
    assert.ok(retries >= TOTAL / 3, `only ${retries} retries`);
    assert.ok(after - before < 2048, `resident memory grew by ${after - before} KiB`);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    await sim.stop();
  }
});
