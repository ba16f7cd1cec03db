// 3,000 hostile requests (bad framing, huge headers, invalid JSON, slowloris,
// half-closed sockets, h2c rapid reset, SETTINGS and PING floods, pipelined
// requests): zero gateway failures; each gets a 4xx, a GOAWAY or a closed
// connection; a good client keeps being served. It prints the other client's
// latency and the gateway's loop turns (CPU) before and during the attack. The
// scenario is in scenarios.mjs; docs/stress.md has the results.
import { test } from 'node:test';
import { hostile } from './scenarios.mjs';

test('3,000 hostile requests: a 4xx, a GOAWAY or a close each, no gateway failure', { timeout: 600000 }, async () => {
  console.log(JSON.stringify(await hostile({ count: 3000 })));
});
