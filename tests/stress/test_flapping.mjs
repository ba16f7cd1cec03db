// A replica flapping between healthy and 503 every 100 ms under load: zero client errors.
// The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { flapping } from './scenarios.mjs';

test('a replica flapping between healthy and 503 every 100 ms under load: zero client errors', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await flapping({ seconds: 15 })));
});
