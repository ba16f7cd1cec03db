// SIGHUP reload of the model list: a model added takes requests at once, one
// removed finishes the stream it runs and then answers 404 like any unknown model,
// the order and aliases follow the file, a changed tokenizer changes the prompt
// token count, a tokenizer that cannot load refuses the whole file (naming the key)
// and the running models stay, and a removed model that comes back works again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ROOT, startSim, startGateway, sseData, rewriteConfig, waitFor, metricsWhen, logged } from './lib.mjs';

const require = createRequire(path.join(ROOT, 'tests', 'package.json'));
const { Tokenizer } = require('@anush008/tokenizers');
const LLAMA2 = path.join(ROOT, 'tests', 'node_modules', '@lenml', 'tokenizer-llama2', 'models');
const PROMPT = 'The quick brown fox jumps over the lazy dog, then reloads its configuration.';

const post = (gw, model, extra = {}) => fetch(`${gw.url}/v1/completions`, {
  method: 'POST', body: JSON.stringify({ model, prompt: PROMPT, max_tokens: 2, ...extra }),
});

async function promptTokens(gw, model) {
  const r = await post(gw, model);
  assert.equal(r.status, 200, await r.text());
  return Number(r.headers.get('x-inferrail-prompt-tokens'));
}

async function notFound(gw, model) {
  const r = await post(gw, model);
  assert.equal(r.status, 404);
  const e = (await r.json()).error;
  assert.equal(e.type, 'NotFoundError');
  assert.equal(e.message, `The model \`${model}\` does not exist.`);
}

async function reload(gw, marker) {
  const before = gw.log.text.split(marker).length;
  gw.child.kill('SIGHUP');
  await waitFor(`"${marker}" in the log`, () => gw.log.text.split(marker).length > before);
}

const listed = async (gw) => (await (await fetch(`${gw.url}/v1/models`)).json()).data.map((m) => m.id);
const stateModels = async (gw) => (await (await fetch(`${gw.admin}/admin/state`)).json()).models.map((m) => m.name);
const metricsPage = async (gw) => (await fetch(`${gw.admin}/metrics`)).text();

test('SIGHUP adds, removes, reorders and retokenizes models without dropping a stream', { timeout: 120000 }, async () => {
  const names = ['--served-model-name', 'm-a', 'm-b', 'm-c'];
  const sims = [];
  for (let i = 0; i < 2; i++) sims.push(await startSim([...names, '--decode-token-ms', '20', '--prefill-fixed-ms', '0']));
  const llama = await Tokenizer.fromFile(path.join(LLAMA2, 'tokenizer.json'));
  const want = (await llama.encode(PROMPT, null, { addSpecialTokens: true })).getIds().length;
  const gw = await startGateway({
    models: [{ name: 'm-a', tokenizer: 'builtin:sim' }, { name: 'm-b' }],
    replicas: [{ id: 's0', url: sims[0].url }, { id: 's1', url: sims[1].url, models: ['m-b'] }],
  });
  try {
    await notFound(gw, 'm-c');
    const simTokens = await promptTokens(gw, 'm-a');
    assert.ok(simTokens > 0);
    assert.notEqual(simTokens, want, 'the two tokenizers must count this prompt differently');
    // A stream on m-b that runs across the reload that removes m-b (60 tokens at 20 ms).
    // Once its head is back, the stream runs (a fixed wait can end before it starts).
    const head = await post(gw, 'm-b', { max_tokens: 60, stream: true });
    const stream = head.text().then((text) => ({ status: head.status, text }));

    rewriteConfig(gw, (c) => {
      c.models = [{ name: 'm-c', aliases: ['c'] }, { name: 'm-a', tokenizer: LLAMA2 }];
      c.replicas[1].models = ['m-c'];
    });
    await reload(gw, 'reload: ');
    await logged(gw, /models added 1, removed 1, with new aliases 0, new policies \d+, new tokenizers 1;/);
    for (const m of ['m-c', 'c', 'm-c', 'c', 'm-c', 'c']) {
      const r = await post(gw, m);
      assert.equal(r.status, 200, await r.text());
    }
    await notFound(gw, 'm-b');
    assert.equal(await promptTokens(gw, 'm-a'), want);
    assert.deepEqual(await listed(gw), ['m-c', 'c', 'm-a']);
    assert.deepEqual(await stateModels(gw), ['m-c', 'm-a']);
    // Every m-c request counted, on whichever replica served it (s1 took m-c in the same
    // reload). A request is counted once the gateway lets go of it, which can come after
    // the client has its response (and on the other worker): wait for the count.
    const mcCount = (p) => [...p.matchAll(/^inferrail_requests_total\{model="m-c",replica="(s[01])",status="2xx"\} (\d+)$/gm)]
      .reduce((n, x) => n + Number(x[2]), 0);
    const page = await metricsWhen(gw.admin, (p) => mcCount(p) === 6);
    assert.doesNotMatch(page, /model="m-b"/);
    assert.equal(mcCount(page), 6, page);
    assert.match(page, /inferrail_upstream_retries_total\{model="m-c"\}/);
    assert.match(page, /inferrail_model_predictions_enabled\{model="m-a"\} 1/);
    // m-a's new tokenizer.json has its cache (tokenizer.cache_tokens), on the page.
    assert.match(page, /^inferrail_tokenize_cache_tokens\{model="m-a"\} [1-9]/m);

    // The removed model's stream ends whole.
    const s = await stream;
    assert.equal(s.status, 200);
    assert.equal(sseData(s.text).at(-1), '[DONE]', s.text.slice(-300));

    // A tokenizer that cannot load refuses the file; the running models stay.
    const good = fs.readFileSync(gw.file, 'utf8');
    rewriteConfig(gw, (c) => {
      c.models[1].tokenizer = '/nonexistent/tokenizer';
      c.models.push({ name: 'm-b' });
    });
    await reload(gw, 'the file is refused');
    await logged(gw, /models\[1\]\.tokenizer: cannot load '\/nonexistent\/tokenizer'/);
    assert.equal(await promptTokens(gw, 'm-a'), want);
    await notFound(gw, 'm-b');

    // m-b comes back (its old slot and series), m-a back to builtin:sim.
    fs.writeFileSync(gw.file, good);
    rewriteConfig(gw, (c) => {
      c.models = [{ name: 'm-a', tokenizer: 'builtin:sim' }, { name: 'm-b' }, { name: 'm-c' }];
      c.replicas[1].models = ['m-b', 'm-c'];
    });
    await reload(gw, 'reload: ');
    await logged(gw, /models added 1, removed 0, with new aliases 1, new policies 1, new tokenizers 1;/);
    assert.equal(await promptTokens(gw, 'm-a'), simTokens);
    for (const m of ['m-b', 'm-c']) assert.equal((await post(gw, m)).status, 200);
    await notFound(gw, 'c');
    assert.deepEqual(await listed(gw), ['m-a', 'm-b', 'm-c']);
    // builtin:sim again: no cache, so its series leave the page.
    assert.doesNotMatch(await metricsPage(gw), /inferrail_tokenize_cache_tokens\{model="m-a"\}/);
    const mb = /inferrail_requests_total\{model="m-b",replica="s[01]",status="2xx"\}/;
    assert.match(await metricsWhen(gw.admin, (p) => mb.test(p)), mb);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    for (const s of sims) await s.stop();
  }
});
