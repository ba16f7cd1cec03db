// inferrail-sim against vLLM's wire format, validation, metrics, cancellation and faults.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startSim, rawRequest, sseData, metrics, metricValue, shape, sleep, waitFor, FIXTURES } from './lib.mjs';

const fx = (name) => fs.readFileSync(path.join(FIXTURES, 'vllm', name), 'utf8');
const KEEP = new Set(['object', 'finish_reason', 'stop_reason', 'role', 'owned_by', 'organization', 'type', 'code']);
let sim;

before(async () => {
  sim = await startSim(['--enable-prompt-tokens-details', '--enable-faults', '--decode-token-ms', '2',
    '--prefill-token-us', '1', '--prefill-fixed-ms', '1', '--max-model-len', '4096',
    '--served-model-name', 'sim-model', 'alias-b', '--max-body-bytes', '1MiB']);
});
after(async () => { await sim.stop(); });

const post = (p, body, headers = {}) =>
  fetch(sim.url + p, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

const chatBody = (extra = {}) => ({ model: 'sim-model', messages: [{ role: 'user', content: 'Tell me about prefix caches in serving systems.' }], max_tokens: 3, ...extra });

test('chat completion matches the vLLM fixture shape', async () => {
  const r = await post('/v1/chat/completions', chatBody(), { 'x-request-id': 'req-42' });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /application\/json/);
  const got = await r.json();
  assert.equal(got.id, 'chatcmpl-req-42');
  assert.equal(typeof got.created, 'number');
  assert.equal(got.model, 'sim-model');
  assert.equal(got.usage.completion_tokens, 3);
  assert.equal(got.usage.total_tokens, got.usage.prompt_tokens + 3);
  const want = JSON.parse(fx('chat_completion.json'));
  assert.deepEqual(shape(got, KEEP), shape(want, KEEP));
  // A repeat hits the prefix cache and reports it like the cached fixture.
  const again = await (await post('/v1/chat/completions', chatBody())).json();
  assert.ok(again.usage.prompt_tokens_details.cached_tokens > 0);
  assert.equal(again.usage.prompt_tokens_details.cached_tokens % 16, 0);
  assert.deepEqual(shape(again, KEEP), shape(JSON.parse(fx('chat_completion_cached.json')), KEEP));
  assert.ok(/^chatcmpl-[0-9a-f]{32}$/.test(again.id));
});

test('completion matches the vLLM fixture shape', async () => {
  const r = await post('/v1/completions', { model: 'alias-b', prompt: 'Hello', max_tokens: 3 });
  assert.equal(r.status, 200);
  const got = await r.json();
  assert.ok(got.id.startsWith('cmpl-'));
  assert.equal(got.model, 'sim-model'); // vLLM names the first served model
  assert.deepEqual(shape(got, KEEP), shape(JSON.parse(fx('completion.json')), KEEP));
});

test('chat stream: role chunk, deltas, finish chunk, usage chunk, [DONE]', async () => {
  const r = await post('/v1/chat/completions', chatBody({ stream: true, stream_options: { include_usage: true } }));
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'text/event-stream; charset=utf-8');
  const text = await r.text();
  const data = sseData(text);
  const want = sseData(fx('chat_stream.txt'));
  assert.equal(data.length, want.length);
  assert.equal(data.at(-1), '[DONE]');
  const chunks = data.slice(0, -1).map((d) => JSON.parse(d));
  const wantChunks = want.slice(0, -1).map((d) => JSON.parse(d));
  for (let i = 0; i < chunks.length; i++) {
    // Usage may carry prompt_tokens_details here (cached > 0), which the fixture lacks.
    if (chunks[i].usage) delete chunks[i].usage.prompt_tokens_details;
    assert.deepEqual(shape(chunks[i], KEEP), shape(wantChunks[i], KEEP), `chunk ${i}`);
  }
  assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
  const content = chunks.slice(1, -1).map((c) => c.choices[0].delta.content).join('');
  assert.ok(content.length > 0);
  assert.equal(chunks.at(-1).usage.completion_tokens, 3);
  assert.ok(text.endsWith('data: [DONE]\n\n'));
});

test('completion stream matches the fixture, usage null until the usage chunk', async () => {
  const r = await post('/v1/completions', { prompt: 'Hello', max_tokens: 3, stream: true, stream_options: { include_usage: true } });
  const data = sseData(await r.text());
  const want = sseData(fx('completion_stream.txt'));
  assert.equal(data.length, want.length);
  for (let i = 0; i < data.length - 1; i++) {
    assert.deepEqual(shape(JSON.parse(data[i]), KEEP), shape(JSON.parse(want[i]), KEEP), `chunk ${i}`);
  }
});

test('stream without include_usage has no usage chunk', async () => {
  const data = sseData(await (await post('/v1/chat/completions', chatBody({ stream: true }))).text());
  assert.equal(data.length, 1 + 3 + 0 + 1 - 0); // role, 2 deltas + final, [DONE]
  for (const d of data.slice(0, -1)) assert.equal(JSON.parse(d).usage, undefined);
});

test('generated text retokenizes: turn two hits the blocks of turn one', async () => {
  const long = 'You are a careful assistant. '.repeat(20);
  const turn1 = { model: 'sim-model', messages: [{ role: 'system', content: long }, { role: 'user', content: 'Q1?' }], max_tokens: 40 };
  const a = await (await post('/v1/chat/completions', turn1)).json();
  const answer = a.choices[0].message.content;
  const turn2 = { ...turn1, messages: [...turn1.messages, { role: 'assistant', content: answer }, { role: 'user', content: 'Q2?' }], max_tokens: 2 };
  const b = await (await post('/v1/chat/completions', turn2)).json();
  const cached = b.usage.prompt_tokens_details.cached_tokens;
  // Everything up to the end of the answer is shared; only the last partial block may miss.
  assert.ok(cached >= a.usage.total_tokens - 16, `cached ${cached} of ${a.usage.total_tokens}`);
});

test('cache_salt keeps a request\'s blocks apart, as vLLM\'s extra keys do', async () => {
  const body = (extra) => ({ model: 'sim-model', prompt: 'salted prompt words '.repeat(30), max_tokens: 1, ...extra });
  const cached = async (extra) => (await (await post('/v1/completions', body(extra))).json()).usage.prompt_tokens_details?.cached_tokens ?? 0;
  await cached({});
  assert.ok((await cached({})) > 0, 'the unsalted repeat hits');
  assert.equal(await cached({ cache_salt: 'tenant-a' }), 0, 'another salt shares nothing');
  assert.ok((await cached({ cache_salt: 'tenant-a' })) > 0, 'the same salt hits');
  assert.equal(await cached({ cache_salt: 'tenant-b' }), 0);
  assert.ok((await cached({ cache_salt: null })) > 0, 'null is no salt');
  for (const bad of ['', 5, ['a']]) {
    const r = await post('/v1/completions', body({ cache_salt: bad }));
    assert.equal(r.status, 400, JSON.stringify(bad));
    const e = await r.json();
    assert.equal(e.error.message, "Parameter 'cache_salt' must be a non-empty string if provided.");
    assert.equal(e.error.param, 'cache_salt');
  }
});

test('validation errors name the parameter, in the vLLM error shape', async () => {
  const cases = [
    [chatBody({ model: 'nope' }), 404, 'NotFoundError', 'The model `nope` does not exist.'],
    [chatBody({ stream_options: { include_usage: true } }), 400, 'BadRequestError', null, 'stream_options'],
    [chatBody({ n: 2 }), 400, 'BadRequestError', null, 'n'],
    [chatBody({ logprobs: true }), 400, 'BadRequestError', null, 'logprobs'],
    [{ prompt: 'x', echo: true }, 400, 'BadRequestError', null, 'echo', '/v1/completions'],
    [{ prompt: 'x', best_of: 3 }, 400, 'BadRequestError', null, 'best_of', '/v1/completions'],
    [chatBody({ max_tokens: 4090 }), 400, 'BadRequestError', null, 'max_tokens'],
    [chatBody({ max_tokens: 0 }), 400, 'BadRequestError', null, 'max_tokens'],
    [{ prompt: 'word '.repeat(3000) }, 400, 'BadRequestError', null, 'prompt', '/v1/completions'],
    [chatBody({ messages: 'hi' }), 400, 'BadRequestError', null, 'messages'],
  ];
  for (const [body, status, type, message, param, p = '/v1/chat/completions'] of cases) {
    const r = await post(p, body);
    assert.equal(r.status, status, JSON.stringify(body).slice(0, 80));
    const e = await r.json();
    assert.deepEqual(Object.keys(e), ['error']);
    assert.deepEqual(Object.keys(e.error), ['message', 'type', 'param', 'code']);
    assert.equal(e.error.type, type);
    assert.equal(e.error.code, status);
    if (message) assert.equal(e.error.message, message);
    if (param) assert.equal(e.error.param, param);
  }
  const tooLong = await (await post('/v1/chat/completions', chatBody({ max_tokens: 4090 }))).json();
  assert.match(tooLong.error.message, /^'max_tokens' or 'max_completion_tokens' is too large: 4090\. This model's maximum context length is 4096 tokens and your request has \d+ input tokens \(4090 > 4096 - \d+\)\./);
  const bad = await post('/v1/chat/completions', '{"model": "sim-model", "messages": [');
  assert.equal(bad.status, 400);
  assert.match((await bad.json()).error.message, /JSON/);
});

test('body over the limit gets 413; unknown path 404; wrong method 405 with Allow', async () => {
  const big = await post('/v1/completions', JSON.stringify({ prompt: 'x'.repeat(2 << 20) }));
  assert.equal(big.status, 413);
  assert.equal((await big.json()).error.code, 413);
  const nf = await fetch(sim.url + '/v2/whatever');
  assert.equal(nf.status, 404);
  assert.equal((await nf.json()).error.code, 404);
  const na = await fetch(sim.url + '/v1/chat/completions');
  assert.equal(na.status, 405);
  assert.equal(na.headers.get('allow'), 'POST');
  assert.equal((await na.json()).error.code, 405);
});

test('models, version, health, metrics, reset_prefix_cache', async () => {
  const m = await (await fetch(sim.url + '/v1/models')).json();
  assert.deepEqual(m.data.map((x) => x.id), ['sim-model', 'alias-b']);
  const want = JSON.parse(fx('models.json'));
  assert.deepEqual(shape(m.data[0], KEEP), shape(want.data[0], KEEP));
  assert.equal(m.data[0].max_model_len, 4096);
  assert.ok(m.data[0].permission[0].id.startsWith('modelperm-'));
  assert.deepEqual(Object.keys(await (await fetch(sim.url + '/version')).json()), ['version']);
  const h = await fetch(sim.url + '/health');
  assert.equal(h.status, 200);
  assert.equal(await h.text(), '');
  const page = await metrics(sim.url);
  for (const fam of ['vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc',
    'vllm:prefix_cache_queries_total', 'vllm:prefix_cache_hits_total', 'vllm:prompt_tokens_total',
    'vllm:generation_tokens_total', 'vllm:request_success_total', 'vllm:num_preemptions_total',
    'vllm:cache_config_info', 'vllm:time_to_first_token_seconds', 'vllm:inter_token_latency_seconds',
    'vllm:e2e_request_latency_seconds', 'vllm:request_queue_time_seconds', 'vllm:request_prefill_time_seconds',
    'vllm:request_decode_time_seconds']) {
    assert.ok(page.includes(`# TYPE ${fam} `), fam);
  }
  assert.ok(metricValue(page, 'vllm:prefix_cache_hits_total') > 0);
  assert.ok(metricValue(page, 'vllm:prefix_cache_queries_total') >= metricValue(page, 'vllm:prefix_cache_hits_total'));
  const r = await post('/reset_prefix_cache', '');
  assert.equal(r.status, 200);
  const body = chatBody({ messages: [{ role: 'user', content: 'reset check '.repeat(10) }] });
  await (await post('/v1/chat/completions', body)).json();
  await post('/reset_prefix_cache', '');
  const after = await (await post('/v1/chat/completions', body)).json();
  assert.equal(after.usage.prompt_tokens_details, null);
});

test('a client that disconnects mid-stream is aborted at once', async () => {
  const before = await metrics(sim.url);
  const aborts0 = metricValue(before, 'vllm:request_success_total', 'finished_reason="abort"');
  const ac = new AbortController();
  const r = await post('/v1/chat/completions', chatBody({ stream: true, max_tokens: 3000 }), {});
  const reader = r.body.getReader();
  await reader.read(); // the role chunk
  await reader.cancel();
  ac.abort();
  let page;
  for (const end = Date.now() + 20000; Date.now() < end;) {
    page = await metrics(sim.url);
    if (metricValue(page, 'vllm:request_success_total', 'finished_reason="abort"') > aborts0) break;
    await sleep(10);
  }
  assert.equal(metricValue(page, 'vllm:request_success_total', 'finished_reason="abort"'), aborts0 + 1);
  assert.equal(metricValue(page, 'vllm:num_requests_running'), 0);
  assert.equal(metricValue(page, 'vllm:kv_cache_usage_perc'), 0);
});

test('a queued request that disconnects frees its slot too', async () => {
  const s = await startSim(['--max-num-seqs', '1', '--decode-token-ms', '50', '--enable-faults']);
  try {
    const c1 = new AbortController();
    const first = fetch(s.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: 'a', max_tokens: 100 }), signal: c1.signal }).catch(() => null);
    await waitFor('the first request running', async () => metricValue(await metrics(s.url), 'vllm:num_requests_running') === 1);
    const c2 = new AbortController();
    const second = fetch(s.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: 'b', max_tokens: 100 }), signal: c2.signal }).catch(() => null);
    let page;
    await waitFor('the second request waiting', async () => metricValue(page = await metrics(s.url), 'vllm:num_requests_waiting') >= 1);
    assert.equal(metricValue(page, 'vllm:num_requests_waiting'), 1);
    c2.abort();
    await second;
    for (const end = Date.now() + 20000; Date.now() < end;) {
      page = await metrics(s.url);
      if (metricValue(page, 'vllm:num_requests_waiting') === 0) break;
      await sleep(10);
    }
    assert.equal(metricValue(page, 'vllm:num_requests_waiting'), 0);
    assert.equal(metricValue(page, 'vllm:request_success_total', 'finished_reason="abort"'), 1);
    c1.abort();
    await first;
  } finally {
    await s.stop();
  }
});

test('faults: status, close, hang, delay, refuse, and the admin switch', async () => {
  const st = await post('/v1/completions', { prompt: 'x', max_tokens: 1 }, { 'x-inferrail-fault': 'status=503' });
  assert.equal(st.status, 503);
  assert.equal((await st.json()).error.code, 503);
  const body = JSON.stringify({ prompt: 'x', max_tokens: 1 });
  const req = (fault) => `POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-inferrail-fault: ${fault}\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const closed = await rawRequest(sim.port, req('close'));
  assert.equal(closed.status, 0);
  assert.equal(closed.raw, '');
  const hung = await rawRequest(sim.port, req('hang'), { timeoutMs: 300 });
  assert.ok(hung.timeout);
  const t0 = Date.now();
  const delayed = await rawRequest(sim.port, req('delay=200').replace('HTTP/1.1', 'HTTP/1.1').replace('Host: x', 'Host: x\r\nConnection: close'));
  assert.equal(delayed.status, 200);
  assert.ok(Date.now() - t0 >= 190);
  // The admin switch: the next two completions get 502, then back to normal; health
  // checks and scrapes in between neither get it nor use it up.
  const set = await post('/admin/fault', { fault: 'status=502', count: 2 });
  assert.equal(set.status, 200);
  for (const path of ['/health', '/metrics', '/v1/models']) assert.equal((await fetch(sim.url + path)).status, 200, path);
  const codes = [];
  for (let i = 0; i < 3; i++) codes.push((await post('/v1/completions', { prompt: 'x', max_tokens: 1 })).status);
  assert.deepEqual(codes, [502, 502, 200]);
  await post('/admin/fault', { fault: 'refuse=300' });
  const refused = await rawRequest(sim.port, req('none'));
  assert.equal(refused.error, 'ECONNREFUSED');
  // It ends after 300 ms of the simulator's clock: asked until it answers.
  const served = await waitFor('the refusal ended', () => post('/v1/completions', { prompt: 'x', max_tokens: 1 }).catch(() => null));
  assert.equal(served.status, 200);
  const bad = await post('/admin/fault', { fault: 'explode' });
  assert.equal(bad.status, 400);
});

test('faults are off by default, and a fault request says which flag turns them on', async () => {
  const s = await startSim([]);
  try {
    const r = await fetch(s.url + '/v1/completions', { method: 'POST', headers: { 'x-inferrail-fault': 'status=503' }, body: JSON.stringify({ prompt: 'x', max_tokens: 1 }) });
    assert.equal(r.status, 403);
    assert.match((await r.json()).error.message, /--enable-faults/);
    const a = await fetch(s.url + '/admin/fault', { method: 'POST', body: '{"fault":"hang"}' });
    assert.equal(a.status, 403);
    assert.match((await a.json()).error.message, /--enable-faults/);
    const ok = await fetch(s.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: 'x', max_tokens: 1 }) });
    assert.equal(ok.status, 200);
  } finally {
    await s.stop();
  }
});

test('--engine sglang serves SGLang metric names', async () => {
  const s = await startSim(['--engine', 'sglang', '--zero-latency']);
  try {
    await (await fetch(s.url + '/v1/completions', { method: 'POST', body: JSON.stringify({ prompt: 'hello', max_tokens: 2 }) })).json();
    const page = await metrics(s.url);
    for (const fam of ['sglang:num_running_reqs', 'sglang:num_queue_reqs', 'sglang:token_usage', 'sglang:cache_hit_rate',
      'sglang:prompt_tokens_total', 'sglang:generation_tokens_total', 'sglang:time_to_first_token_seconds',
      'sglang:inter_token_latency_seconds', 'sglang:e2e_request_latency_seconds']) {
      assert.ok(page.includes(`# TYPE ${fam} `), fam);
    }
    assert.equal(metricValue(page, 'sglang:generation_tokens_total'), 2);
    assert.ok(!page.includes('vllm:'));
  } finally {
    await s.stop();
  }
});

test('SIGTERM exits cleanly', async () => {
  const s = await startSim([]);
  assert.equal(await s.stop('SIGTERM'), 0);
});
