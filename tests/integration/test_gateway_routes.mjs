// vLLM's other POST routes through the gateway (a drop-in review's finding: only
// /v1/chat/completions and /v1/completions were proxied, everything else got 404, so
// an embedding, reranking or Responses API client could not use the gateway). Each
// route whose JSON body names the model now goes to a replica of that model, routed
// by load (no prompt prediction), with the body passed through (an alias rewritten).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { startGateway, freePort, metrics, metricSum, BUILD } from './lib.mjs';

// An engine that answers every POST with what it was sent; with a key, /v1/ paths
// want it as vLLM's --api-key does.
async function echoEngine(key, { health = 200 } = {}) {
  const port = await freePort();
  const server = http.createServer((req, res) => {
    if (key && req.url.startsWith('/v1/') && req.headers.authorization !== `Bearer ${key}`) {
      res.statusCode = 401;
      res.end('{"error":"Unauthorized"}');
      return;
    }
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/health') { res.statusCode = health; res.end(); return; }
      if (req.method === 'GET' && req.url === '/model_info') { res.end('{}'); return; }
      if (req.method === 'GET' && req.url === '/v1/models') {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model', max_model_len: 1234 }] }));
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ path: req.url, method: req.method, body }));
    });
  });
  await new Promise((r) => server.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}`, stop: () => new Promise((r) => server.close(r)) };
}

const ROUTES = ['/v1/responses', '/tokenize', '/detokenize', '/v1/embeddings', '/pooling', '/classify',
  '/score', '/v1/score', '/rerank', '/v1/rerank', '/v2/rerank', '/invocations'];

test("vLLM's other model-naming POST routes reach a replica of the model", async () => {
  const engine = await echoEngine();
  const gw = await startGateway({
    models: [{ name: 'm', aliases: ['short'] }],
    replicas: [{ id: 'e', url: engine.url }],
    health: { interval: '60s' },
  });
  try {
    for (const route of ROUTES) {
      const r = await fetch(gw.url + route + '?x=1', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'short', input: 'hello' }),
      });
      const text = await r.text();
      assert.equal(r.status, 200, `${route}: ${text}`);
      assert.equal(r.headers.get('x-inferrail-replica'), 'e', route);
      const got = JSON.parse(text);
      assert.equal(got.path, route + '?x=1');
      assert.deepEqual(JSON.parse(got.body), { model: 'm', input: 'hello' }, route); // the alias rewritten
    }
    // an empty model name is the only model, as vLLM serves its own for one
    const empty = await fetch(gw.url + '/v1/embeddings', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"","input":"x"}',
    });
    assert.equal(empty.status, 200);
    assert.equal(JSON.parse((await empty.json()).body).model, 'm');
    // they never meet the tokenizer, so they are not counted among its outcomes
    assert.equal(metricSum(await metrics(gw.admin), 'inferrail_tokenized_requests_total'), 0);
    // an unknown model, a wrong method and a route vLLM does not have, as before
    const unknown = await fetch(gw.url + '/v1/embeddings', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"nope","input":"x"}',
    });
    assert.equal(unknown.status, 404);
    assert.equal((await unknown.json()).error.type, 'NotFoundError');
    const get = await fetch(gw.url + '/v1/embeddings');
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    await get.arrayBuffer();
    const none = await fetch(gw.url + '/v1/nothing', { method: 'POST', body: '{}' });
    assert.equal(none.status, 404);
    await none.arrayBuffer();
  } finally {
    await gw.stop();
    await engine.stop();
  }
});

test("the model cards are fetched with the replica's headers (an engine started with --api-key)", async () => {
  const engine = await echoEngine('K');
  const gw = await startGateway({
    models: [{ name: 'm' }],
    replicas: [{ id: 'e', url: engine.url, headers: { Authorization: 'Bearer K' } }],
  });
  try {
    let card;
    for (let i = 0; i < 100 && !(card && card.max_model_len === 1234); i++) {
      const r = await fetch(gw.url + '/v1/models');
      card = (await r.json()).data.find((c) => c.id === 'm');
      if (card.max_model_len !== 1234) await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal(card.max_model_len, 1234, JSON.stringify(card));
  } finally {
    await gw.stop();
    await engine.stop();
  }
});

// A browser's CORS preflight: vLLM's server answers it by default (every origin, method
// and header allowed); the gateway answered 405, so a browser client never sent its POST.
test('a CORS preflight is answered as vLLM answers it by default', async () => {
  const engine = await echoEngine();
  const gw = await startGateway({ models: [{ name: 'm' }], replicas: [{ id: 'e', url: engine.url }] });
  try {
    const pre = await fetch(gw.url + '/v1/chat/completions', {
      method: 'OPTIONS',
      headers: { origin: 'http://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    assert.equal(pre.status, 200);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
    assert.match(pre.headers.get('access-control-allow-methods'), /POST/);
    assert.equal(pre.headers.get('access-control-allow-headers'), 'authorization, content-type');
    assert.equal(pre.headers.get('access-control-max-age'), '600');
    assert.ok(pre.headers.get('x-request-id'));
    assert.equal(await pre.text(), 'OK');
    // /v1/models too; an OPTIONS that is no preflight is still a 405, an unknown path a 404
    const models = await fetch(gw.url + '/v1/models', { method: 'OPTIONS', headers: { origin: 'http://a', 'access-control-request-method': 'GET' } });
    assert.equal(models.status, 200);
    await models.arrayBuffer();
    const plain = await fetch(gw.url + '/v1/chat/completions', { method: 'OPTIONS' });
    assert.equal(plain.status, 405);
    await plain.arrayBuffer();
    const unknown = await fetch(gw.url + '/v1/nothing', { method: 'OPTIONS', headers: { origin: 'http://a', 'access-control-request-method': 'POST' } });
    assert.equal(unknown.status, 404);
    await unknown.arrayBuffer();
  } finally {
    await gw.stop();
    await engine.stop();
  }
});

// health.path: SGLang's /health runs a one-token generation and answers after about a
// second (past the 500 ms probe timeout), so a fleet of SGLang engines may probe another
// path; here an engine whose /health fails serves through its /model_info.
test('health.path names the path each replica is probed on', async () => {
  const { spawnSync } = await import('node:child_process');
  const engine = await echoEngine(undefined, { health: 503 });
  const cfg = (health) => ({
    models: [{ name: 'm' }], replicas: [{ id: 'e', url: engine.url }],
    health: { interval: '50ms', unhealthy_threshold: 1, ...health },
  });
  const send = async (gw) => {
    const r = await fetch(gw.url + '/v1/embeddings', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","input":"x"}',
    });
    await r.arrayBuffer();
    return r.status;
  };
  const probed = await startGateway(cfg({ path: '/model_info' }));
  const dflt = await startGateway(cfg({}));
  try {
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await send(probed), 200);
    assert.equal(await send(dflt), 503); /* /health answers 503: unhealthy */
  } finally {
    await probed.stop();
    await dflt.stop();
    await engine.stop();
  }
  const fs = await import('node:fs');
  const file = `/tmp/ir-health-path-${process.pid}.yaml`;
  fs.writeFileSync(file, JSON.stringify({ ...cfg({ path: 'model_info' }), replicas: [{ id: 'e', url: 'http://127.0.0.1:1' }] }));
  const chk = spawnSync(path.join(BUILD, 'inferrail-gateway'), ['--check', '--config', file], { encoding: 'utf8' });
  fs.unlinkSync(file);
  assert.equal(chk.status, 2, chk.stderr);
  assert.match(chk.stderr, /health\.path: a path that starts with \//);
});

// The simulator serves /tokenize and /detokenize as vLLM does, so make run's fleet
// answers them through the gateway: the count is the prompt's, and the ids go back.
test('/tokenize and /detokenize through the gateway, on the simulator', async () => {
  const { startSim } = await import('./lib.mjs');
  const sim = await startSim(['--zero-latency']);
  const gw = await startGateway({ models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }], replicas: [{ id: 's', url: sim.url }] });
  try {
    const post = async (p, body) => {
      const r = await fetch(gw.url + p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: r.status, headers: r.headers, body: await r.json() };
    };
    const prompt = 'route me to my cache, please';
    const tok = await post('/tokenize', { model: 'inferrail/sim-8b', prompt });
    assert.equal(tok.status, 200, JSON.stringify(tok.body));
    const done = await post('/v1/completions', { model: 'inferrail/sim-8b', prompt, max_tokens: 1 });
    assert.equal(tok.body.count, tok.body.tokens.length);
    assert.equal(tok.body.count, done.body.usage.prompt_tokens);
    assert.equal(tok.body.max_model_len, 32768);
    const back = await post('/detokenize', { model: 'inferrail/sim-8b', tokens: tok.body.tokens });
    assert.equal(back.status, 200);
    assert.equal(back.body.prompt, prompt);
    const bad = await post('/detokenize', { model: 'inferrail/sim-8b', tokens: 'x' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'tokens');
  } finally {
    await gw.stop();
    await sim.stop();
  }
});
