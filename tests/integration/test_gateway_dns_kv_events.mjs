// DNS groups with kv_events and data_parallel_size, against a real dnsmasq on
// loopback and simulators on 127.0.0.N that publish KV events on one pair of
// ports, each on its own address (as a Deployment's pods share one
// --kv-events-config). Each discovered member is followed from its own event stream
// (index_source "events" in /admin/explain); a member that leaves stops its
// stream and leaves the index, one that stays keeps its event state; with
// data_parallel_size 2 both ranks of every member are routing targets, pinned by
// X-data-parallel-rank and fed by their rank's stream; SIGHUP turns these keys on
// and off; a configured replica that a reload gives kv_events is followed too.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, metrics, metricValue, sleep, waitFor, rewriteConfig, logged } from './lib.mjs';
import { startDns, members, eventSims, explain, complete, predictedOn, SIM_MODEL as MODEL } from './dns_lib.mjs';

const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix'];
const prompt = (i) => `Prompt ${i}: ` + Array.from({ length: 60 }, (_, k) => words[(k * 7 + i * 3) % 10]).join(' ');

const count = (text, s) => text.split(s).length - 1;

test('discovered members are tracked from their own events, and keep them while they stay', { timeout: 120000 }, async () => {
  const hosts = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
  const { port, pub, replay } = await eventSims(hosts, { cleanup });
  const dns = await startDns({ 'pool.test': ['127.0.0.2', '127.0.0.3'] });
  cleanup.push(() => dns.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    discovery: {
      nameservers: [`127.0.0.1:${dns.port}`],
      dns: [{ name: 'ev', url: `http://pool.test:${port}`, refresh: '100ms', kv_events: { port: pub, replay_port: replay } }],
    },
    routing: { default_policy: 'round_robin' },
    server: { workers: 1 },
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const id = (ip) => `ev-${ip}-${port}`;
  assert.deepEqual(await members(gw), [id('127.0.0.2'), id('127.0.0.3')]);
  // Each prompt is predicted on the member that computed it, from that member's events.
  const served = {};
  for (let i = 0; i < 4; i++) served[i] = await complete(gw, prompt(i));
  assert.deepEqual(new Set(Object.values(served)), new Set([id('127.0.0.2'), id('127.0.0.3')]), gw.log.text.slice(-3000));
  for (let i = 0; i < 4; i++) await predictedOn(gw, prompt(i), served[i], [id('127.0.0.2'), id('127.0.0.3')]);
  for (const ip of ['127.0.0.2', '127.0.0.3'])
    await waitFor(`${ip}'s stream in the log`, async () => gw.log.text.includes(`replica ${id(ip)}: following its KV events at tcp://${ip}:${pub}`));
  let page = await metrics(gw.admin);
  const batches3 = metricValue(page, 'inferrail_kv_events_batches_total', `replica="${id('127.0.0.3')}"`);
  assert.ok(batches3 >= 1, page);

  // .2 leaves and .4 joins: .2's stream closes and its series go; .3 keeps its view.
  dns.setHosts({ 'pool.test': ['127.0.0.3', '127.0.0.4'] });
  await waitFor('.2 to leave and .4 to join', async () => (await members(gw)).join() === [id('127.0.0.3'), id('127.0.0.4')].join());
  await waitFor('.2\'s stream to close', async () => gw.log.text.includes(`replica ${id('127.0.0.2')}: its KV event stream closed`));
  page = await metrics(gw.admin);
  assert.ok(!page.includes(id('127.0.0.2')), 'a departed member keeps metric series');
  assert.ok(metricValue(page, 'inferrail_kv_events_batches_total', `replica="${id('127.0.0.3')}"`) >= batches3,
    'a member that stayed lost its event counters');
  assert.equal(count(gw.log.text, `replica ${id('127.0.0.3')}: following its KV events`), 1, 'a member that stayed was subscribed again');
  for (let i = 0; i < 4; i++)
    if (served[i] === id('127.0.0.3')) await predictedOn(gw, prompt(i), served[i], [id('127.0.0.3'), id('127.0.0.4')]);
  // The newcomer is followed from its own events too. (The requests go first, one
  // after another: an explanation runs the policy, and so moves round_robin on.)
  const later = {};
  for (let i = 10; i < 14; i++) later[i] = await complete(gw, prompt(i));
  assert.ok(Object.values(later).includes(id('127.0.0.4')), JSON.stringify(later));
  for (let i = 10; i < 14; i++) await predictedOn(gw, prompt(i), later[i], [id('127.0.0.3'), id('127.0.0.4')]);
  page = await metrics(gw.admin);
  assert.ok(metricValue(page, 'inferrail_kv_events_batches_total', `replica="${id('127.0.0.4')}"`) >= 1, page);
  assert.equal(metricValue(page, 'inferrail_kv_events_decode_errors_total', `replica="${id('127.0.0.4')}"`), 0);
});

async function reload(gw) {
  const before = count(gw.log.text, 'discovery renewed');
  gw.child.kill('SIGHUP');
  await waitFor('the reload', () => count(gw.log.text, 'discovery renewed') > before);
}

test('data_parallel_size 2: both ranks of every member are targets; SIGHUP turns the keys on and off', { timeout: 120000 }, async () => {
  const hosts = ['127.0.0.2', '127.0.0.3'];
  const { port, pub, replay, sims } = await eventSims(hosts, { args: ['--data-parallel-size', '2'], cleanup });
  const dns = await startDns({ 'dp.test': hosts });
  cleanup.push(() => dns.stop());
  // At first the group has neither key: one approximate target per member, and no
  // subscriber at all.
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    discovery: { nameservers: [`127.0.0.1:${dns.port}`], dns: [{ name: 'dp', url: `http://dp.test:${port}`, refresh: '100ms' }] },
    routing: { default_policy: 'round_robin' },
    server: { workers: 1 },
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const plain = hosts.map((ip) => `dp-${ip}-${port}`);
  assert.deepEqual(await members(gw), plain);
  let rows = await explain(gw, prompt(0));
  for (const id of plain) assert.equal(rows[id].index_source, 'approximate');

  // The reload gives the group two ranks and KV events: four targets, each fed by
  // its rank's stream on its member's address.
  rewriteConfig(gw, (c) => { Object.assign(c.discovery.dns[0], { data_parallel_size: 2, kv_events: { port: pub, replay_port: replay, topic: '' } }); });
  await reload(gw);
  const targets = hosts.flatMap((ip) => [0, 1].map((r) => `dp-${ip}-${port}/dp${r}`)).sort();
  await waitFor('the ranks to join', async () => (await members(gw)).join() === targets.join());
  for (const ip of hosts)
    for (const r of [0, 1])
      await waitFor(`the stream of ${ip} rank ${r}`, async () => gw.log.text.includes(`replica dp-${ip}-${port}/dp${r}: following its KV events at tcp://${ip}:${pub + r}`));
  const sent = Object.fromEntries(targets.map((t) => [t, 0]));
  const served = {};
  for (let i = 0; i < 8; i++) {
    served[i] = await complete(gw, prompt(i));
    sent[served[i]]++;
  }
  for (const t of targets) assert.ok(sent[t] >= 1, `no request on ${t}: ${JSON.stringify(sent)}\n${gw.log.text.slice(-3000)}`);
  // Pinned: each target's requests ran on its member's rank, by the engines' own counts.
  for (const [k, ip] of hosts.entries()) {
    const page = await metrics(sims[k].url);
    for (const r of [0, 1])
      assert.equal(metricValue(page, 'vllm:request_success_total', `engine="${r}",finished_reason="length"`), sent[`dp-${ip}-${port}/dp${r}`], `${ip} rank ${r}`);
  }
  // Each prompt is predicted on its rank's target only, from that rank's events.
  for (let i = 0; i < 8; i++) await predictedOn(gw, prompt(i), served[i], targets);

  // A reload that keeps the group (only its refresh changes): the targets keep their
  // streams and their views.
  const opened = count(gw.log.text, 'following its KV events');
  rewriteConfig(gw, (c) => { c.discovery.dns[0].refresh = '150ms'; });
  await reload(gw);
  await sleep(300);
  assert.equal(count(gw.log.text, 'following its KV events'), opened, 'a kept group\'s streams were opened again');
  assert.deepEqual(await members(gw), targets);
  for (let i = 0; i < 8; i++) await predictedOn(gw, prompt(i), served[i], targets);

  // A reload without kv_events: the same targets, tracked approximately; every stream closes.
  rewriteConfig(gw, (c) => { delete c.discovery.dns[0].kv_events; });
  const closedBefore = count(gw.log.text, 'its KV event stream closed');
  await reload(gw);
  await waitFor('the streams to close', async () => count(gw.log.text, 'its KV event stream closed') >= closedBefore + 4);
  await waitFor('approximate targets', async () => {
    rows = await explain(gw, prompt(0));
    return targets.every((t) => rows[t] && rows[t].index_source === 'approximate');
  });
  assert.deepEqual(await members(gw), targets);
});

test('a configured replica that a reload gives kv_events is followed; new endpoints replace it', { timeout: 120000 }, async () => {
  const { port, pub, replay } = await eventSims(['127.0.0.1'], { cleanup });
  const url = `http://127.0.0.1:${port}`;
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    replicas: [{ id: 'a', url }],
    server: { workers: 1 },
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  assert.equal((await explain(gw, prompt(0))).a.index_source, 'approximate');
  const applied = async () => {
    const before = count(gw.log.text, ': applied: ');
    gw.child.kill('SIGHUP');
    await waitFor('the reload', () => count(gw.log.text, ': applied: ') > before);
  };
  // Added by a reload: the subscriber starts for it (none ran), and its events count.
  rewriteConfig(gw, (c) => { c.replicas[0].kv_events = { endpoint: `tcp://127.0.0.1:${pub}`, replay_endpoint: `tcp://127.0.0.1:${replay}` }; });
  await applied();
  await logged(gw, /replicas added 0, removed 0, replaced 1/); /* the line the reload waited for */
  await waitFor('its stream', async () => gw.log.text.includes(`replica a: following its KV events at tcp://127.0.0.1:${pub}`));
  await complete(gw, prompt(1));
  await predictedOn(gw, prompt(1), 'a', ['a']);
  // Other endpoints (nothing listens there): the replica is replaced, its stream too.
  rewriteConfig(gw, (c) => { c.replicas[0].kv_events = { endpoint: `tcp://127.0.0.1:${pub + 1}`, replay_endpoint: `tcp://127.0.0.1:${replay + 1}` }; });
  await applied();
  await waitFor('the old stream to close', async () => gw.log.text.includes('replica a: its KV event stream closed'));
  await waitFor('the new stream', async () => gw.log.text.includes(`replica a: following its KV events at tcp://127.0.0.1:${pub + 1}`));
  const row = (await explain(gw, prompt(1) + ' more')).a;
  assert.equal(row.predicted_cached_tokens, 0, JSON.stringify(row)); /* a new, empty view */
  assert.equal(row.index_source, 'events-stale', JSON.stringify(row)); /* never connected */
});
