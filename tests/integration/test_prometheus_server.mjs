// A real Prometheus server (Debian's) scrapes the gateway's admin port on loopback,
// and its HTTP API gives back what the gateway counted: the scrape is healthy, the
// outcome counter and the TTFT histogram arrive with their labels.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFleet, freePort, sleep } from './lib.mjs';

async function query(base, q) {
  const r = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(q)}`);
  const j = await r.json();
  assert.equal(j.status, 'success', JSON.stringify(j));
  return j.data.result;
}

async function until(what, fn, ms = 90000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      last = await fn();
      if (last.ok) return last;
    } catch (e) {
      last = { err: String(e) };
    }
    await sleep(250);
  }
  assert.fail(`${what}: never; last ${JSON.stringify(last)}`);
}

test('Prometheus scrapes the gateway and answers queries about it', async () => {
  const fleet = await startFleet({ gateway: { models: [{ name: 'inferrail/sim-8b', aliases: ['sim'], tokenizer: 'builtin:sim' }] } });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ir-prom-'));
  const port = await freePort();
  const admin = new URL(fleet.gw.admin).host;
  fs.writeFileSync(path.join(dir, 'prometheus.yml'),
    `global: {scrape_interval: 1s, evaluation_interval: 1s}\n` +
    `scrape_configs:\n  - job_name: inferrail\n    static_configs: [{targets: ['${admin}']}]\n`);
  const prom = spawn('prometheus', [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  prom.stderr.on('data', (d) => { log = (log + d).slice(-20000); });
  const base = `http://127.0.0.1:${port}`;
  try {
    const n = 5;
    for (let i = 0; i < n; i++) {
      const r = await fetch(`${fleet.gw.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'sim', stream: true, max_tokens: 3, messages: [{ role: 'user', content: `q${i}` }] }) });
      assert.equal(r.status, 200);
      await r.text();
    }
    await until('the target is up', async () => {
      const res = await query(base, 'up{job="inferrail"}');
      return { ok: res.length === 1 && res[0].value[1] === '1', res };
    });
    const done = await until('the requests are counted', async () => {
      const res = await query(base, 'sum(inferrail_requests_total{status="2xx",model="inferrail/sim-8b"})');
      return { ok: res.length === 1 && Number(res[0].value[1]) === n, res };
    });
    assert.equal(Number(done.res[0].value[1]), n);
    const ttft = await query(base, 'sum by (replica) (inferrail_ttft_seconds_count)');
    assert.equal(ttft.reduce((a, s) => a + Number(s.value[1]), 0), n);
    assert.ok(ttft.every((s) => /^sim-\d$/.test(s.metric.replica)), JSON.stringify(ttft));
    const q = await query(base, 'histogram_quantile(0.5, sum by (le) (inferrail_ttft_seconds_bucket))');
    assert.equal(q.length, 1);
    assert.ok(Number.isFinite(Number(q[0].value[1])), JSON.stringify(q));
    const meta = await (await fetch(`${base}/api/v1/metadata?metric=inferrail_ttft_seconds`)).json();
    assert.equal(meta.data.inferrail_ttft_seconds?.[0]?.type, 'histogram', JSON.stringify(meta));
  } catch (e) {
    e.message += `\nprometheus log:\n${log}`;
    throw e;
  } finally {
    prom.kill('SIGTERM');
    await new Promise((r) => { if (prom.exitCode !== null) r(); else prom.on('exit', r); setTimeout(() => { prom.kill('SIGKILL'); r(); }, 10000); });
    fs.rmSync(dir, { recursive: true, force: true });
    await fleet.stop();
  }
});
