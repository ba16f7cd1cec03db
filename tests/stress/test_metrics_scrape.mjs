// /metrics scraped 100 times a second during 2,000 concurrent streams: every stream
// completes, and counters and histograms are consistent on every scrape (issue 13).
// make stress runs it; tests/integration/test_metrics_page.mjs runs the same with 400.
import test from 'node:test';
import { scrapeDuringStreams } from '../integration/scrape_check.mjs';

test('scraping 100 times a second during 2,000 concurrent streams: every page consistent', async () => {
  await scrapeDuringStreams(Number(process.env.IR_SCRAPE_STREAMS || 2000), 2);
});
