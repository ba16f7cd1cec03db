// The scraper of scrape_check.mjs, on a thread of its own so that the streams the
// main thread drives never slow it: GET /metrics every 10 ms, each page checked
// against the one before, until told to stop; then it reports how many it checked.
import { parentPort, workerData } from 'node:worker_threads';
import { consistent } from './prom_check.mjs';

let stop = false, scrapes = 0, prev = new Map();
parentPort.on('message', () => { stop = true; });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
try {
  while (!stop) {
    const t = Date.now();
    const r = await fetch(`${workerData.url}/metrics`);
    prev = consistent(await r.text(), prev);
    scrapes++;
    await sleep(Math.max(0, 10 - (Date.now() - t)));
  }
  parentPort.postMessage({ scrapes });
} catch (e) {
  parentPort.postMessage({ scrapes, error: `scrape ${scrapes} failed: ${e.cause?.code || e.cause || e.message}` });
}
