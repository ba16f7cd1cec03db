// SIGHUP reloads every 500 ms under load, alternating two configs: no request lost.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { reloadUnderLoad } from './scenarios.mjs';

test('SIGHUP reloads every 500 ms under load, alternating two configs: no request lost', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await reloadUnderLoad({ seconds: 20 })));
});
