// Requests that do not stream, as stock `vllm serve` takes them (a drop-in review's
// findings): vLLM sends such an answer's head only once the whole answer is
// generated. The gateway counted them pending (waiting for their prefill) until then,
// so max_pending (64) capped how many a replica could generate at once (the 65th got
// 503), and it cut them at response_timeout / request_timeout (60 s: a long answer
// got 504). Now they take a concurrency slot only, and wait for their head up to
// upstream.non_streaming_timeout (30 min).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startSim, startGateway, metrics, metricValue } from './lib.mjs';

async function complete(gw, { stream = undefined, maxTokens = 40, headers = {} } = {}) {
  const body = { model: 'inferrail/sim-8b', prompt: 'tell me a long story', max_tokens: maxTokens };
  if (stream !== undefined) body.stream = stream;
  const t0 = Date.now();
  const r = await fetch(gw.url + '/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, text, ms: Date.now() - t0 };
}

test('max_pending does not cap requests that do not stream; max_concurrency still does', async () => {
  // 40 tokens at 20 ms each: every answer takes about 0.8 s, its head coming last
  const sim = await startSim(['--decode-token-ms', '20']);
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'a', url: sim.url, max_pending: 2, max_concurrency: 8 }],
  });
  try {
    const six = await Promise.all(Array.from({ length: 6 }, () => complete(gw, { stream: false })));
    assert.deepEqual(six.map((r) => r.status), Array(6).fill(200), six.map((r) => r.text).join('\n'));
    // an absent `stream` is not streamed either (the OpenAI SDK's default)
    const absent = await Promise.all(Array.from({ length: 6 }, () => complete(gw)));
    assert.deepEqual(absent.map((r) => r.status), Array(6).fill(200));
    // ten at once against max_concurrency 8: two find it full
    const ten = await Promise.all(Array.from({ length: 10 }, () => complete(gw, { stream: false })));
    const codes = ten.map((r) => r.status).sort();
    assert.equal(codes.filter((c) => c === 200).length, 8, codes.join(','));
    assert.equal(codes.filter((c) => c === 503).length, 2, codes.join(','));
    // and nothing stays counted once they are answered
    const page = await metrics(gw.admin);
    assert.equal(metricValue(page, 'inferrail_replica_pending', 'replica="a"'), 0, page);
    assert.equal(metricValue(page, 'inferrail_replica_in_flight', 'replica="a"'), 0, page);
  } finally {
    await gw.stop();
    await sim.stop();
  }
});

test('a request that does not stream waits for its head up to non_streaming_timeout', async () => {
  const sim = await startSim(['--decode-token-ms', '25', '--enable-faults']);
  const base = {
    models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'a', url: sim.url }],
  };
  // 100 tokens at 25 ms: 2.5 s, past both 1 s deadlines of streamed requests
  const gw = await startGateway({ ...base, server: { request_timeout: '1s' }, upstream: { response_timeout: '1s' } });
  const short = await startGateway({ ...base, upstream: { non_streaming_timeout: '1s' } });
  // retried 503s until the deadline: the longer of request_timeout and non_streaming_timeout
  const retrying = await startGateway({
    ...base, server: { request_timeout: '500ms' }, upstream: { non_streaming_timeout: '1500ms' },
    retry: { max_attempts: 50, backoff: '100ms', max_backoff: '100ms' },
  });
  try {
    const unary = await complete(gw, { stream: false, maxTokens: 100 });
    assert.equal(unary.status, 200, unary.text);
    assert.ok(unary.ms >= 2000, `${unary.ms} ms`);
    assert.equal(JSON.parse(unary.text).usage.completion_tokens, 100);
    // streamed: the head comes at once, so the same answer is not cut either
    const streamed = await complete(gw, { stream: true, maxTokens: 100 });
    assert.equal(streamed.status, 200);
    assert.match(streamed.text, /data: \[DONE\]/);
    // non_streaming_timeout is the deadline of those that do not stream
    const cut = await complete(short, { stream: false, maxTokens: 100 });
    assert.equal(cut.status, 504, cut.text);
    assert.ok(cut.ms < 2000, `${cut.ms} ms`);
    const busy = await complete(retrying, { stream: false, headers: { 'x-inferrail-fault': 'status=503' } });
    // retried until the longer deadline; then either the backoff meets the deadline (504,
    // naming it) or the last attempt's 503 comes back after it and is passed on
    assert.ok(busy.ms >= 1300, `${busy.ms} ms`);
    assert.ok([503, 504].includes(busy.status), busy.text);
    if (busy.status === 504) assert.match(busy.text, /non_streaming_timeout passed before an engine answered/);
  } finally {
    await gw.stop();
    await short.stop();
    await retrying.stop();
    await sim.stop();
  }
});
