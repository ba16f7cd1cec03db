// SIGHUP reload: replicas, aliases, policies and limits change without dropping a
// connection; a bad file is refused with every problem and its path, and the
// gateway keeps running on the old one; keys that need a restart are named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startSim, startGateway, sleep, sseData, rewriteConfig, logged } from './lib.mjs';

async function until(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function replicas(gw) {
  const s = await (await fetch(`${gw.admin}/admin/state`)).json();
  return s.replicas.map((r) => r.id).sort();
}

const post = (gw, model, extra = {}) => fetch(`${gw.url}/v1/completions`, {
  method: 'POST', body: JSON.stringify({ model, prompt: 'reload', max_tokens: 2, ...extra }),
});

async function reload(gw, marker) {
  const before = gw.log.text.split(marker).length;
  gw.child.kill('SIGHUP');
  await until(`"${marker}" in the log`, () => gw.log.text.split(marker).length > before);
}

test('SIGHUP applies replicas, aliases and limits; refuses a bad file; names restart keys', { timeout: 90000 }, async () => {
  const sims = [];
  for (let i = 0; i < 3; i++) sims.push(await startSim(['--decode-token-ms', '20', '--prefill-fixed-ms', '0']));
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 's0', url: sims[0].url }],
    routing: { default_policy: 'round_robin' },
  });
  try {
    // A stream that runs across the reloads (60 tokens at 20 ms).
    // Once its head is back, the stream runs (a fixed wait can end before it starts).
    const head = await post(gw, 'inferrail/sim-8b', { max_tokens: 60, stream: true });
    const stream = head.text().then((text) => ({ status: head.status, text }));
    assert.equal((await post(gw, 'fast')).status, 404);

    rewriteConfig(gw, (c) => {
      c.replicas.push({ id: 's1', url: sims[1].url }, { id: 's2', url: sims[2].url });
      c.models[0].aliases = ['fast'];
      c.routing.default_policy = 'least_request';
      c.retry = { max_attempts: 5 };
      c.server.workers = 3; // needs a restart
      c.load = { ...(c.load || {}), max_age: '300ms' }; // so does this one
    });
    await reload(gw, 'reload: ');
    await until('the new replicas', async () => (await replicas(gw)).join() === 's0,s1,s2');
    await logged(gw, /server\.workers changed: it needs a restart/);
    await logged(gw, /load\.max_age changed: it needs a restart/);
    await logged(gw, /replicas added 2, removed 0, replaced 0, updated 0, not added 0; models added 0, removed 0, with new aliases 1, new policies 1, new tokenizers 0; keys that need a restart: 2;/);
    const seen = new Set();
    for (let i = 0; i < 9; i++) {
      const r = await post(gw, 'fast');
      assert.equal(r.status, 200, await r.text());
      seen.add(r.headers.get('x-inferrail-replica'));
    }
    assert.ok(seen.has('s1') || seen.has('s2'), [...seen].join());

    // A bad file: every problem with its path; the running configuration stays.
    const good = fs.readFileSync(gw.file, 'utf8');
    rewriteConfig(gw, (c) => {
      c.replicas[1].url = 'ftp://nowhere';
      c.retry = { max_attempts: 0, bogus: 1 };
    });
    await reload(gw, 'the file is refused');
    await logged(gw, /replicas\[1\]\.url: not an http URL/);
    await logged(gw, /retry\.bogus: unknown key/);
    await logged(gw, /retry\.max_attempts/);
    assert.equal((await replicas(gw)).join(), 's0,s1,s2');
    assert.equal((await post(gw, 'fast')).status, 200);

    // s0 (still streaming) and s2 leave, s1 changes its caps in place.
    fs.writeFileSync(gw.file, good);
    rewriteConfig(gw, (c) => {
      c.replicas = [{ id: 's1', url: sims[1].url, max_concurrency: 7 }];
      c.server.workers = 2;
    });
    await reload(gw, 'reload: ');
    await until('s1 alone', async () => (await replicas(gw)).join() === 's1');
    await logged(gw, /replicas added 0, removed 2, replaced 0, updated 1/);
    // A model lists its live replicas only, not the slots the others left.
    const state = await (await fetch(`${gw.admin}/admin/state`)).json();
    assert.deepEqual(state.models[0].replicas, ['s1']);
    for (let i = 0; i < 3; i++) {
      const r = await post(gw, 'fast');
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('x-inferrail-replica'), 's1');
    }
    const s = await stream;
    assert.equal(s.status, 200);
    assert.equal(sseData(s.text).at(-1), '[DONE]', s.text.slice(-300));
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    for (const s of sims) await s.stop();
  }
});

// Every routing key a policy reads takes effect on reload: four of cost_model's were
// left out of the comparison, so a reload that changed only them kept the old policy.
test('a reload that changes any one cost_model key builds a new policy', async () => {
  const sim = await startSim(['--zero-latency']);
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 's0', url: sim.url }],
    routing: { default_policy: 'cost_model' },
  });
  try {
    const changes = [['work_weight', 0.25], ['tie_tolerance', 0.2], ['load_floor', 2], ['cpu_transfer_token_us', 9], ['load_factor', 3]];
    for (const [key, value] of changes) {
      const before = gw.log.text.split('new policies 1,').length;
      const summaries = gw.log.text.split('new policies').length;
      rewriteConfig(gw, (c) => { c.routing.cost_model = { ...(c.routing.cost_model || {}), [key]: value }; });
      await reload(gw, 'new policies');
      assert.ok(gw.log.text.split('new policies').length > summaries);
      assert.equal(gw.log.text.split('new policies 1,').length, before + 1, `${key}: ${gw.log.text.slice(-600)}`);
    }
  } finally {
    await gw.stop();
    await sim.stop();
  }
});

// A replica removed and added again by reloads (found by a hostile-operator review) took
// a new slot each time; once the slots ran out (max(2n, n + 8)) it was dropped for good
// while the reload said "applied". It now goes back to the slot it left.
test('a replica removed and added again by reloads keeps its slot, however often', { timeout: 60000 }, async () => {
  const sims = [await startSim(['--zero-latency']), await startSim(['--zero-latency'])];
  const both = [{ id: 's1', url: sims[0].url }, { id: 's2', url: sims[1].url }];
  const gw = await startGateway({ models: [{ name: 'inferrail/sim-8b' }], replicas: both });
  try {
    for (let i = 0; i < 14; i++) {
      rewriteConfig(gw, (c) => { c.replicas = [both[1]]; });
      await reload(gw, 'replicas added 0, removed 1');
      rewriteConfig(gw, (c) => { c.replicas = both; });
      await reload(gw, 'replicas added 1, removed 0');
      await until(`both after cycle ${i}`, async () => (await replicas(gw)).join() === 's1,s2');
    }
    assert.doesNotMatch(gw.log.text, /no free slot/);
    assert.doesNotMatch(gw.log.text, /not added [1-9]/);
    // It serves again, in its old slot.
    for (let i = 0; i < 4; i++) assert.equal((await post(gw, 'inferrail/sim-8b')).status, 200);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    for (const s of sims) await s.stop();
  }
});
