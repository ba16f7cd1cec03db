// The official OpenAI Node SDK against inferrail-sim: sync-style and streaming
// calls, and 1,000 concurrent streams with exact usage.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startSim } from './lib.mjs';

let sim, client;
before(async () => {
  sim = await startSim(['--enable-prompt-tokens-details', '--decode-token-ms', '1', '--prefill-token-us', '1', '--prefill-fixed-ms', '0', '--max-num-seqs', '1024']);
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
});
after(async () => { await sim.stop(); });

test('chat completion', async () => {
  const r = await client.chat.completions.create({ model: 'inferrail/sim-8b', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16 });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 16);
  assert.ok(r.choices[0].message.content.length > 0);
});

test('completion', async () => {
  const r = await client.completions.create({ model: 'inferrail/sim-8b', prompt: 'Once upon a time', max_tokens: 8 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.usage.completion_tokens, 8);
  assert.ok(r.choices[0].text.length > 0);
});

test('streamed chat with usage', async () => {
  const stream = await client.chat.completions.create({
    model: 'inferrail/sim-8b', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16, stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.choices.length) {
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 16);
  assert.ok(text.length > 0);
});

test('streamed completion', async () => {
  const stream = await client.completions.create({ model: 'inferrail/sim-8b', prompt: 'Once', max_tokens: 5, stream: true, stream_options: { include_usage: true } });
  let n = 0;
  let usage;
  for await (const chunk of stream) {
    if (chunk.choices.length) n++;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(n, 5);
  assert.equal(usage.completion_tokens, 5);
});

test('SDK errors: unknown model is a NotFoundError', async () => {
  await assert.rejects(
    client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e.status === 404 && /does not exist/.test(e.message),
  );
});

test('1,000 concurrent streams complete with exact usage', async () => {
  const N = 1000;
  const jobs = [];
  for (let i = 0; i < N; i++) {
    const maxTokens = 4 + (i % 13);
    jobs.push((async () => {
      const stream = await client.chat.completions.create({
        model: 'inferrail/sim-8b', messages: [{ role: 'user', content: `question number ${i}` }],
        max_tokens: maxTokens, stream: true, stream_options: { include_usage: true },
      });
      let deltas = 0;
      let usage = null;
      for await (const chunk of stream) {
        if (chunk.choices.length && chunk.choices[0].delta.content !== undefined && !chunk.choices[0].delta.role) deltas++;
        if (chunk.usage) usage = chunk.usage;
      }
      return { maxTokens, deltas, usage };
    })());
  }
  const results = await Promise.all(jobs);
  for (const r of results) {
    assert.equal(r.usage.completion_tokens, r.maxTokens);
    assert.equal(r.deltas, r.maxTokens);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.maxTokens);
  }
});
