// A simulator killed with SIGKILL under 1,000 req/s (open loop), then restarted: zero errors after the kill, back in rotation.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { sigkill } from './scenarios.mjs';

test('a simulator killed with SIGKILL under load, then restarted: zero errors after the kill, back in rotation', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await sigkill({ seconds: 15 })));
});
