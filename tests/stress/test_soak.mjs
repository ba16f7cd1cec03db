// 35,000 requests: resident memory grows at most 10 MB.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { soak } from './scenarios.mjs';

test('35,000 requests: resident memory grows at most 10 MB', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await soak({ requests: 35000, maxGrowthKiB: 10240 })));
});
