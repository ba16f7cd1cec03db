// Scraping /metrics 100 times a second while many streams run: every page must be
// consistent (counters never go back; each histogram's cumulative buckets never
// decrease and end at _count). Shared by tests/integration/test_metrics_page.mjs
// (400 streams) and tests/stress/test_metrics_scrape.mjs (2,000). The scraper runs
// on a worker thread (scrape_worker.mjs).
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { startFleet, metricsWhen, metricSum } from './lib.mjs';
import { consistent } from './prom_check.mjs';

// The status, or the status and the start of the body when it is not a 200.
async function post(url, body) {
  try {
    const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const text = await r.text();
    return r.status === 200 ? 200 : `${r.status} ${text.slice(0, 200)}`;
  } catch (e) {
    return `error ${e.cause?.code || e.cause || e.message}`;
  }
}

export async function scrapeDuringStreams(STREAMS, ROUNDS) {
  // Idle keep-alive connections stay open between rounds, so the client never reuses one
  // the gateway is closing (a POST on it would fail; that race is no metrics bug).
  const fleet = await startFleet({ simArgs: ['--decode-token-ms', '2', '--max-num-seqs', '1024'], replica: { max_concurrency: 4000, max_pending: 4000 },
    gateway: { server: { header_read_timeout: '300s' } } });
  let worker;
  try {
    worker = new Worker(new URL('./scrape_worker.mjs', import.meta.url), { workerData: { url: fleet.gw.admin } });
    let report = null;
    const done = new Promise((res) => worker.on('message', (m) => { report = m; res(); }));
    const failed = () => report && report.error;
    for (let round = 0; round < ROUNDS; round++) {
      const all = [];
      for (let i = 0; i < STREAMS; i++) all.push(post(fleet.gw.url, JSON.stringify({ model: 'sim', stream: true, max_tokens: 20, messages: [{ role: 'user', content: `r${round} s${i}` }] })));
      const statuses = await Promise.all(all);
      const health = fleet.gw.log.text.split('\n').filter((l) => /unhealthy|ejected|healthy again/.test(l)).slice(-10).join('\n');
      assert.ok(statuses.every((s) => s === 200), `statuses: ${[...new Set(statuses)].join(' | ')}\n${health}`);
      if (failed()) break;
    }
    worker.postMessage('stop');
    await done;
    await worker.terminate();
    const gw = fleet.gw.child;
    assert.equal(report.error, undefined, `${report.error} (gateway exit ${gw.exitCode} signal ${gw.signalCode})\n${fleet.gw.log.text.slice(-2000)}`);
    const scrapes = report.scrapes;
    const page = await metricsWhen(fleet.gw.admin, (p) => metricSum(p, 'inferrail_requests_total', 'status="2xx"') === STREAMS * ROUNDS);
    consistent(page, new Map());
    assert.equal(metricSum(page, 'inferrail_requests_total', 'status="2xx"'), STREAMS * ROUNDS);
    assert.equal(metricSum(page, 'inferrail_ttft_seconds_count'), STREAMS * ROUNDS);
    assert.ok(scrapes >= 10, `only ${scrapes} scrapes`);
    console.log(`${scrapes} consistent scrapes during ${STREAMS * ROUNDS} streams`);
  } finally {
    await worker?.terminate(); // a failure above left it scraping, and node waiting
    await fleet.stop();
  }
}
