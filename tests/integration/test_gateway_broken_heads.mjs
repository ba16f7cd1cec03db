// Engines whose answer goes wrong around its head (fake_engine.mjs), beside a healthy
// one. The gateway holds an engine's head back until the first body byte, so an
// engine that dies or stalls after its head has sent the client nothing: the request
// goes to the other replica, and the failure counts against the one that broke it.
// Statuses that never carry a body (204, 304) are answered at once, whatever their
// framing headers say; a transfer coding the gateway cannot decode is a 502, never
// bytes passed on as if they were plain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, metrics, metricValue, sleep } from './lib.mjs';
import { startFakeEngine, OK_BODY } from './fake_engine.mjs';

const BODY = JSON.stringify({ model: 'fake', prompt: 'x', max_tokens: 1 });

async function fleet(badScenario, fn, { gateway = {} } = {}) {
  const bad = await startFakeEngine(badScenario);
  const good = await startFakeEngine('ok');
  const gw = await startGateway({
    models: [{ name: 'fake', policy: 'round_robin' }],
    replicas: [{ id: 'bad', url: bad.url }, { id: 'good', url: good.url }],
    server: { workers: 1, request_timeout: '10s' },
    upstream: { response_timeout: '2s', non_streaming_timeout: '2s', idle_timeout: '1s' },
    retry: { max_attempts: 3, backoff: '10ms' },
    health: { interval: '10s' },
    ...gateway,
  });
  try {
    await fn(gw, bad, good);
  } finally {
    await gw.stop();
    await bad.stop();
    await good.stop();
  }
}

async function post(gw) {
  const r = await fetch(`${gw.url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY, signal: AbortSignal.timeout(15000),
  });
  return { status: r.status, text: await r.text(), replica: r.headers.get('x-inferrail-replica') };
}

for (const scenario of ['head-then-reset', 'head-then-close', 'head-then-stall']) {
  test(`${scenario}: nothing reached the client, so the request is retried and the replica blamed`, async () => {
    await fleet(scenario, async (gw, bad) => {
      for (let i = 0; i < 4; i++) {
        const r = await post(gw);
        assert.equal(r.status, 200, r.text);
        assert.equal(r.text, OK_BODY);
        assert.equal(r.replica, 'good');
      }
      assert.ok(bad.requests >= 2, `the bad replica was tried ${bad.requests} times`);
      const page = await metrics(gw.admin);
      assert.equal(metricValue(page, 'inferrail_replica_failures_total', 'replica="bad"'), bad.requests, page);
      assert.ok(metricValue(page, 'inferrail_upstream_retries_total') >= bad.requests, page);
    });
  });
}

for (const [scenario, status] of [['status-204-cl', 204], ['status-304-cl', 304], ['status-204-chunked', 204]]) {
  test(`${scenario}: a status without a body is answered at once`, async () => {
    await fleet(scenario, async (gw, bad) => {
      const t0 = Date.now();
      const rs = [await post(gw), await post(gw)];
      const fromBad = rs.filter((r) => r.replica === 'bad');
      assert.equal(fromBad.length, 1, JSON.stringify(rs));
      assert.equal(fromBad[0].status, status);
      assert.equal(fromBad[0].text, '');
      assert.ok(Date.now() - t0 < 900, `took ${Date.now() - t0} ms (the idle timeout is 1 s)`);
      assert.equal(bad.requests, 1);
      // its connection stays usable: the engine's next answers on it come through
      bad.scenario = 'ok';
      for (let i = 0; i < 2; i++) assert.equal((await post(gw)).text, OK_BODY);
      assert.equal(bad.requests, 2);
    });
  });
}

for (const scenario of ['te-gzip-chunked', 'te-gzip-close']) {
  test(`${scenario}: a transfer coding the gateway cannot decode is never passed on`, async () => {
    await fleet(scenario, async (gw, bad) => {
      for (let i = 0; i < 4; i++) {
        const r = await post(gw);
        assert.notEqual(r.text.charCodeAt(0), 0x1f, 'gzip bytes reached the client');
        if (r.status === 200) assert.equal(r.text, OK_BODY);
        else assert.equal(r.status, 502, r.text);
      }
      const page = await metrics(gw.admin);
      assert.ok(metricValue(page, 'inferrail_replica_failures_total', 'replica="bad"') >= 1, page);
    });
  });
}

// Passive ejection's backoff doubles for a replica that keeps failing, and starts from
// the base again for one that served for longer than max_ejection_backoff since its last
// ejection ended (an engine restarted now and then was ejected for 5, 10, 20, 40, 60 s).
test('the ejection backoff starts again from the base after a quiet spell', async () => {
  await fleet('close-early', async (gw, bad) => {
    const ejections = () => [...gw.log.text.matchAll(/replica bad ejected for (\d+) ms/g)].map((m) => Number(m[1]));
    const ejectedAgain = async (n) => {
      for (const end = Date.now() + 10000; Date.now() < end && ejections().length < n; ) await post(gw);
      assert.equal(ejections().length, n, gw.log.text.slice(-800));
    };
    await ejectedAgain(1);
    await sleep(300); // the 200 ms ejection ends; it fails again at once: doubled
    await ejectedAgain(2);
    bad.scenario = 'ok';
    await sleep(3000); // past the 400 ms ejection and the 2 s cap after it, serving
    for (let i = 0; i < 6; i++) assert.equal((await post(gw)).status, 200);
    bad.scenario = 'close-early';
    await ejectedAgain(3);
    assert.deepEqual(ejections(), [200, 400, 200]);
  }, { gateway: { health: { interval: '10s', unhealthy_threshold: 2, ejection_backoff: '200ms', max_ejection_backoff: '2s' } } });
});
