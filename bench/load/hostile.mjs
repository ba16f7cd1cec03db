// Hostile metrics pages: HOSTILE (default 20) fake engines whose /metrics
// never ends ('endless-page') or announces 50 MB ('huge-page'), half each,
// next to one healthy simulator, all scraped every 100 ms by one gateway for
// SECONDS (default 5). The healthy replica's report age is polled every 10 ms
// on /admin/state; the goal: never older than 105 ms.
// Reproduce with: make build && node bench/load/hostile.mjs [OUT.jsonl]
import fs from 'node:fs';
import os from 'node:os';
import { startSim, startGateway, sleep } from '../../tests/integration/lib.mjs';
import { startFakeEngine } from '../../tests/integration/fake_engine.mjs';

const HOSTILE = Number(process.env.HOSTILE || 20);
const SECONDS = Number(process.env.SECONDS || 5);
const out = process.argv[2];

const sim = await startSim(['--zero-latency']);
const bad = [];
for (let i = 0; i < HOSTILE; i++) bad.push(await startFakeEngine('ok', { metrics: i % 2 ? 'huge-page' : 'endless-page' }));
const gw = await startGateway({
  models: [{ name: 'inferrail/sim-8b' }],
  replicas: [{ id: 'healthy', url: sim.url }, ...bad.map((e, i) => ({ id: `hostile-${i}`, url: e.url }))],
});
try {
  const state = async () => (await (await fetch(gw.admin + '/admin/state')).json()).replicas;
  for (let i = 0; i < 200 && !(await state())[0].engine.fresh; i++) await sleep(20);
  await sleep(300); // every hostile page asked at least once
  const ages = [];
  let stale = 0;
  const t0 = Date.now();
  while (Date.now() - t0 < SECONDS * 1000) {
    const e = (await state())[0].engine;
    if (e.age_ms === null || !e.fresh) stale++;
    else ages.push(e.age_ms);
    await sleep(10);
  }
  ages.sort((a, b) => a - b);
  const q = (p) => ages[Math.min(ages.length - 1, Math.floor(p * ages.length))];
  const rows = await state();
  const sum = (k) => rows.slice(1).reduce((a, r) => a + r.engine.scrapes[k], 0);
  const rec = {
    bench: 'load_hostile_pages', hostile: HOSTILE, seconds: SECONDS, samples: ages.length, stale,
    healthy_p50_ms: q(0.5), healthy_p99_ms: q(0.99), healthy_oldest_ms: ages.at(-1),
    healthy_scrapes: rows[0].engine.scrapes, hostile_too_large: sum('too_large'), hostile_timeout: sum('timeout'),
    loadavg: os.loadavg()[0], cores: os.cpus().length, goal_ms: 105, met: stale === 0 && ages.at(-1) <= 105,
  };
  console.log(JSON.stringify(rec));
  if (out) fs.appendFileSync(out, JSON.stringify(rec) + '\n');
} finally {
  await gw.stop();
  for (const e of bad) await e.stop();
  await sim.stop();
}
