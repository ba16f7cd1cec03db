// SIGTERM during 500 running streams: every one completes.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { sigtermStreams } from './scenarios.mjs';

test('SIGTERM during 500 running streams: every one completes', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await sigtermStreams({ streams: 500 })));
});
