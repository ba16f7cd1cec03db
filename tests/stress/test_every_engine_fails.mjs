// Requests that make every engine fail: at most half ejected, the pool never empties.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { everyEngineFails } from './scenarios.mjs';

test('requests that make every engine fail: at most half ejected, the pool never empties', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await everyEngineFails({ seconds: 10 })));
});
