// The official OpenAI Node SDK through inferrail-gateway in front of three
// simulators: nothing changes but the base URL.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startFleet } from './lib.mjs';

let fleet, client;
before(async () => {
  // Caps high enough for the 1,000-stream test even in slow sanitizer builds
  // (the breakers have their own test). Idle client connections stay open: the SDK
  // readies its 1,000 requests in one long run of promise callbacks, and on a busy VM
  // that outlasted the default 10 s, so the first request went out on a kept-alive
  // connection the gateway had already closed ("other side closed").
  fleet = await startFleet({
    simArgs: ['--decode-token-ms', '1', '--prefill-token-us', '1', '--prefill-fixed-ms', '0', '--max-num-seqs', '1024'],
    replica: { max_concurrency: 2048, max_pending: 2048 },
    gateway: { server: { header_read_timeout: '300s' } },
  });
  client = new OpenAI({ baseURL: `${fleet.gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});
after(async () => { await fleet.stop(); });

test('chat, through an alias', async () => {
  const r = await client.chat.completions.create({ model: 'sim', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16 });
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 16);
  assert.equal(r.model, 'inferrail/sim-8b');
});

test('completion', async () => {
  const r = await client.completions.create({ model: 'inferrail/sim-8b', prompt: 'Once upon a time', max_tokens: 8 });
  assert.equal(r.usage.completion_tokens, 8);
});

test('streamed chat with usage, and the raw response headers', async () => {
  const { data: stream, response } = await client.chat.completions
    .create({ model: 'sim', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 12, stream: true, stream_options: { include_usage: true } })
    .withResponse();
  assert.match(response.headers.get('x-inferrail-replica'), /^sim-\d$/);
  let usage = null;
  let text = '';
  for await (const chunk of stream) {
    if (chunk.choices.length) text += chunk.choices[0].delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(usage.completion_tokens, 12);
  assert.ok(text.length > 0);
});

test('models list', async () => {
  const list = [];
  for await (const m of client.models.list()) list.push(m.id);
  assert.deepEqual(list, ['inferrail/sim-8b', 'sim']);
});

test('1,000 concurrent streams through the gateway with exact usage and an even spread', async () => {
  const N = 1000;
  const spread = {};
  const results = await Promise.all(Array.from({ length: N }, async (_, i) => {
    const maxTokens = 3 + (i % 7);
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'sim', messages: [{ role: 'user', content: `q ${i}` }], max_tokens: maxTokens, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    const rep = response.headers.get('x-inferrail-replica');
    spread[rep] = (spread[rep] || 0) + 1;
    let usage = null;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    return usage.completion_tokens === maxTokens;
  }));
  assert.ok(results.every(Boolean));
  assert.deepEqual(Object.keys(spread).sort(), ['sim-1', 'sim-2', 'sim-3']);
  // A replica taken out for a while (the log says why) is what makes round robin uneven.
  const health = fleet.gw.log.text.split('\n').filter((l) => /unhealthy|ejected|healthy again/.test(l)).slice(-10).join('\n');
  for (const v of Object.values(spread)) assert.ok(Math.abs(v - N / 3) <= 2, `${JSON.stringify(spread)}\n${health}`);
});
