// 1,000 streams, about 70% disconnecting at random points: every disconnect aborted in the engine.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { disconnects } from './scenarios.mjs';

test('1,000 streams, about 70% disconnecting at random points: every disconnect aborted in the engine', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await disconnects({ streams: 1000 })));
});
