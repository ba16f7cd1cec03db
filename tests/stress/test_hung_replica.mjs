// A replica that hangs while requests wait: they move elsewhere when probes mark it down.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { hungUnderLoad } from './scenarios.mjs';

test('a replica that hangs while requests wait: they move elsewhere when probes mark it down', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await hungUnderLoad({ seconds: 15 })));
});
