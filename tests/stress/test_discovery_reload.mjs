// SIGHUP reloads every 500 ms under load, alternating two configs whose discovery
// blocks differ: no request lost, every request served under one config or the
// other, departed members' series removed, the members that stay serving on.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { discoveryReloadUnderLoad } from './scenarios.mjs';

test('SIGHUP reloads of discovery every 500 ms under load: no request lost, departed series removed', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await discoveryReloadUnderLoad({ seconds: 20 })));
});
