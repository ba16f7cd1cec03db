// 3,000 hostile requests (bad framing, huge headers, invalid JSON, slowloris,
// half-closed sockets, h2c rapid reset, SETTINGS and PING floods): zero gateway
// failures; each gets a 4xx, a GOAWAY or a closed connection; a good client keeps
// being served. The scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { hostile } from './scenarios.mjs';

test('3,000 hostile requests: a 4xx, a GOAWAY or a close each, no gateway failure', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await hostile({ count: 3000 })));
});
