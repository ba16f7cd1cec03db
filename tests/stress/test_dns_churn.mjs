// DNS group changes every 200 ms under load: no request lost, departed series removed.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { dnsChurn } from './scenarios.mjs';

test('DNS group changes every 200 ms under load: no request lost, departed series removed', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await dnsChurn({ seconds: 20 })));
});
