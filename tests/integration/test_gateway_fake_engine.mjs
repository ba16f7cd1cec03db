// The gateway in front of an engine that misbehaves on purpose (fake_engine.mjs):
// every fault gets a clean JSON error (or a clean answer), and the replica
// serves the next request afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, metrics, metricValue, sleep } from './lib.mjs';
import { startFakeEngine, OK_BODY } from './fake_engine.mjs';

const BODY = JSON.stringify({ model: 'fake', prompt: 'x', max_tokens: 1 });

async function withGateway(scenario, { http2 = false, engineOpts = {}, gateway = {} } = {}, fn) {
  const eng = await startFakeEngine(scenario, engineOpts);
  const gw = await startGateway({
    models: [{ name: 'fake' }],
    replicas: [{ id: 'f0', url: eng.url }],
    server: { workers: 1, request_timeout: '3s' },
    upstream: { http2, response_timeout: '1s', non_streaming_timeout: '1s' },
    retry: { max_attempts: 2, backoff: '10ms' },
    ...gateway,
  });
  try {
    await fn(gw, eng);
  } finally {
    await gw.stop();
    await eng.stop();
  }
}

async function post(gw, { timeoutMs = 6000 } = {}) {
  const t0 = Date.now();
  const r = await fetch(`${gw.url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY, signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await r.text();
  return { status: r.status, headers: r.headers, text, ms: Date.now() - t0 };
}

function assertJsonError(r, status) {
  assert.equal(r.status, status, r.text);
  const e = JSON.parse(r.text);
  assert.equal(e.error.code, status, r.text);
}

// The replica's gauges go back to 0 and the next request, once the engine
// behaves, succeeds.
async function assertNotWedged(gw, eng, okScenario = 'ok') {
  let page;
  for (const end = Date.now() + 20000; Date.now() < end;) {
    page = await metrics(gw.admin);
    if (metricValue(page, 'inferrail_replica_in_flight', 'replica="f0"') === 0) break;
    await sleep(20);
  }
  assert.equal(metricValue(page, 'inferrail_replica_in_flight', 'replica="f0"'), 0, page);
  eng.scenario = okScenario;
  const r = await post(gw);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, OK_BODY);
}

test('h1: an unsolicited response on an idle pooled connection never reaches the next request', async () => {
  await withGateway('short-cl-evil', {}, async (gw, eng) => {
    const first = await post(gw);
    assert.equal(first.status, 200);
    assert.equal(first.text, 'hello');
    await sleep(350); // the engine sends its second response 150 ms after the first
    eng.scenario = 'ok';
    const second = await post(gw);
    assert.equal(second.headers.get('x-evil'), null);
    assert.equal(second.status, 200, second.text);
    assert.equal(second.text, OK_BODY);
  });
});

test('h1: extra bytes in the same read as a response are not taken for the next one', async () => {
  await withGateway('short-cl-evil-same-read', {}, async (gw, eng) => {
    const first = await post(gw);
    assert.equal(first.text, 'hello');
    await assertNotWedged(gw, eng);
  });
});

for (const scenario of ['status-101', 'status-102', 'status-000', 'status-999', 'huge-chunk']) {
  test(`h1: ${scenario} from the engine is a 502, and the replica stays usable`, async () => {
    await withGateway(scenario, {}, async (gw, eng) => {
      const r = await post(gw);
      assertJsonError(r, 502);
      await assertNotWedged(gw, eng);
    });
  });
}

// An engine's header that the client side cannot write (an empty name) was found by a
// hostile-engine review to cut the client off with no answer, counted as a 2xx; an
// engine could also forge the gateway's own x-inferrail-* headers.
test('h1: an engine header with an empty name is dropped; the answer goes through', async () => {
  await withGateway('empty-header-name', {}, async (gw) => {
    const r = await post(gw);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, OK_BODY);
  });
});

test('h1: an engine cannot set the gateway\'s own x-inferrail-* headers', async () => {
  await withGateway('forged-own-headers', {}, async (gw) => {
    const r = await post(gw);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('x-inferrail-replica'), 'f0');
    assert.equal(r.headers.get('x-inferrail-cached-tokens'), null); /* no tokenizer: no prediction */
  });
});

test('h1: 103 Early Hints is skipped', async () => {
  await withGateway('status-103', {}, async (gw) => {
    const r = await post(gw);
    assert.equal(r.status, 200);
    assert.equal(r.text, OK_BODY);
  });
});

for (const scenario of ['dribble-head', 'endless-100']) {
  test(`h1: ${scenario}: the wait for the head is bounded by response_timeout`, async () => {
    await withGateway(scenario, { engineOpts: { dribbleMs: 100 } }, async (gw, eng) => {
      const r = await post(gw);
      assertJsonError(r, 504);
      assert.ok(r.ms < 3000, `took ${r.ms} ms`);
      await assertNotWedged(gw, eng);
    });
  });
}

for (const scenario of ['h2-data-before-headers', 'h2-push-promise', 'h2-headers-unopened']) {
  test(`h2c: ${scenario} closes the connection; the replica is not wedged`, async () => {
    await withGateway(scenario, { http2: true }, async (gw, eng) => {
      // The broken connection fails its stream retryably; the retry meets the
      // same engine, and then the gateway gives up: a 502, at once.
      const r = await post(gw);
      assertJsonError(r, 502);
      assert.ok(r.ms < 3000, `took ${r.ms} ms`);
      assert.equal(eng.requests, 2, 'tried twice (retry.max_attempts)');
      const conns = eng.connections;
      await assertNotWedged(gw, eng, 'h2-ok');
      assert.ok(eng.connections > conns, 'a new connection for the next request');
    });
  });
}

test('h2c: content-length 3 with 36 bytes of DATA is a 502', async () => {
  await withGateway('h2-content-length-mismatch', { http2: true }, async (gw, eng) => {
    const r = await post(gw);
    assertJsonError(r, 502);
    await assertNotWedged(gw, eng, 'h2-ok');
  });
});

test('h2c: a status above 599 is a 502', async () => {
  await withGateway('h2-status-999', { http2: true }, async (gw, eng) => {
    assertJsonError(await post(gw), 502);
    await assertNotWedged(gw, eng, 'h2-ok');
  });
});

test('h2c: endless 1xx HEADERS are bounded by response_timeout', async () => {
  await withGateway('h2-dribble-1xx', { http2: true }, async (gw, eng) => {
    const r = await post(gw);
    assertJsonError(r, 504);
    assert.ok(r.ms < 3000, `took ${r.ms} ms`);
    await assertNotWedged(gw, eng, 'h2-ok');
  });
});

test('h1: an absurd cached_tokens in the usage counts no more than the prompt', async () => {
  const gateway = { models: [{ name: 'fake', tokenizer: 'builtin:sim' }] };
  await withGateway('absurd-cached', { gateway }, async (gw) => {
    for (let i = 0; i < 3; i++) assert.equal((await post(gw)).status, 200);
    const page = await metrics(gw.admin);
    const reported = metricValue(page, 'inferrail_reported_cached_tokens_total', 'replica="f0"');
    // three one-word prompts: a handful of tokens each, never 2^63 (nor a wrapped counter)
    assert.ok(reported >= 0 && reported < 1000, `reported ${reported}`);
  });
});

// The approximate index frees a finished request's output blocks into its view of
// the engine's cache: completion_tokens of 10^18 made that one loop of 6 * 10^16
// steps under the replica's lock, and the worker (then every thread that looks the
// replica up) never came back.
test('h1: an absurd completion_tokens in the usage leaves the gateway serving', async () => {
  const gateway = { models: [{ name: 'fake', tokenizer: 'builtin:sim' }] };
  const long = JSON.stringify({ model: 'fake', max_tokens: 1, prompt: Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ') });
  await withGateway('absurd-completion', { gateway }, async (gw, eng) => {
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${gw.url}/v1/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: long, signal: AbortSignal.timeout(10000),
      });
      assert.equal(r.status, 200);
      await r.text();
    }
    await assertNotWedged(gw, eng);
  });
});

// GET /v1/models is served from the engines' pages; only the cards of configured names
// are kept (a page of a million empty entries held 300-650 MB), and a page past 1 MiB
// is not read at all: the configured defaults stand.
test('model pages: the configured card is found among decoys; a page over 1 MiB is not read', async () => {
  const card = (len) => ({ id: 'fake', object: 'model', owned_by: 'vllm', root: 'fake', max_model_len: len });
  const page = (n, len) => JSON.stringify({ object: 'list', data: [...Array(n).fill({}), { id: 'other', max_model_len: 1 }, card(len)] });
  for (const [n, len, want] of [[100000, 1234, 1234], [400000, 999, undefined]]) {
    const eng = await startFakeEngine('ok');
    eng.models = 'cards-page';
    eng.cardsPage = page(n, len);
    assert.equal(eng.cardsPage.length > 1 << 20, want === undefined);
    const gw = await startGateway({ models: [{ name: 'fake' }], replicas: [{ id: 'f0', url: eng.url }] });
    try {
      let got;
      for (const end = Date.now() + 10000; Date.now() < end;) {
        got = (await (await fetch(`${gw.url}/v1/models`)).json()).data[0];
        if (got.max_model_len === want) break;
        // a page that is not read: give the gateway time to have read it, were it read
        if (want === undefined && eng.cardsServed && (await sleep(1000), true)) {
          got = (await (await fetch(`${gw.url}/v1/models`)).json()).data[0];
          break;
        }
        await sleep(100);
      }
      assert.ok(eng.cardsServed >= 1, 'the gateway never fetched the page');
      assert.equal(got.id, 'fake');
      if (want === undefined) assert.notEqual(got.max_model_len, len, JSON.stringify(got));
      else assert.equal(got.max_model_len, want, JSON.stringify(got));
    } finally {
      await gw.stop();
      await eng.stop();
    }
  }
});
