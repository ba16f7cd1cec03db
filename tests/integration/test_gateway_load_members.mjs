// The engine scraper follows the fleet's membership: a replica that a SIGHUP
// reload adds is scraped (its report gets young, its scrape counts grow, and its
// engine's running count moves under a stream), and one that a reload removes
// loses every series it had.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSim, startGateway, metrics, metricValue, sleep, rewriteConfig } from './lib.mjs';

async function until(what, fn, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function engine(gw, id) {
  const s = await (await fetch(`${gw.admin}/admin/state`)).json();
  return s.replicas.find((r) => r.id === id)?.engine;
}

async function reload(gw) {
  const before = gw.log.text.split('reload: ').length;
  gw.child.kill('SIGHUP');
  await until('the reload in the log', () => gw.log.text.split('reload: ').length > before);
}

test('a replica added by a reload is scraped; a removed one loses its series', { timeout: 90000 }, async () => {
  const sims = [
    await startSim(['--decode-token-ms', '20']),
    await startSim(['--decode-token-ms', '20']),
  ];
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 's0', url: sims[0].url }],
    routing: { default_policy: 'round_robin' },
  });
  try {
    await until('s0 reports', async () => (await engine(gw, 's0'))?.age_ms !== null);
    rewriteConfig(gw, (c) => c.replicas.push({ id: 's1', url: sims[1].url }));
    await reload(gw);
    // s1 joined after the scraper started: it gets reports of its own. (Fresh is
    // waited for too: a scrape that a loaded machine slows past the 100 ms timeout
    // leaves the report older than max_age for a moment.)
    const e = await until('s1 reports', async () => {
      const x = await engine(gw, 's1');
      return x && x.age_ms !== null && x.scrapes.ok >= 3 && x.fresh && x;
    });
    assert.ok(e.fresh, JSON.stringify(e));
    const page = await until('s1 on /metrics', async () => {
      const p = await metrics(gw.admin);
      const ok = metricValue(p, 'inferrail_load_scrapes_total', 'replica="s1",result="ok"');
      return ok >= 3 && p;
    });
    const age = metricValue(page, 'inferrail_replica_report_age_seconds', 'replica="s1"');
    assert.ok(Number.isFinite(age) && age < 10, String(age));

    // s0 leaves; a stream on s1 (now the only replica) shows in s1's engine report.
    rewriteConfig(gw, (c) => { c.replicas = c.replicas.filter((r) => r.id === 's1'); });
    await reload(gw);
    await until('s0 gone from /admin/state', async () => (await engine(gw, 's0')) === undefined);
    const body = JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'x', max_tokens: 150, stream: true });
    const streaming = fetch(`${gw.url}/v1/completions`, { method: 'POST', body }).then((r) => r.text());
    await until('s1 running 1', async () => (await engine(gw, 's1')).running >= 1);
    const p = await until('no s0 series', async () => {
      const x = await metrics(gw.admin);
      return !x.includes('replica="s0"') && x;
    });
    assert.ok(p.includes('inferrail_replica_engine_running{replica="s1"}'), p);
    await streaming;
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    for (const s of sims) await s.stop();
  }
});
