// DNS groups whose members take their KV event ports from SRV records
// (kv_events.port_srv and replay_port_srv), as a Kubernetes headless Service
// publishes one SRV name per named port, each record's target a pod's host name.
// A real dnsmasq on loopback answers them (--srv-host lines, changed by restarting
// it on the same port), and simulators on 127.0.0.N publish on ports of their own,
// so a member can only be followed at the right port by matching the records'
// targets to its address. A failed event lookup keeps the ports last found; a
// member whose record goes joins again without events, and with them when the
// record comes back; members whose ports did not change keep their streams; a
// batch each engine drops is replayed from the replay port its record gave. With
// srv: true and data_parallel_size 2, rank r reads the record's port plus r; a
// SIGHUP that keeps the names keeps the streams, one that drops replay_port_srv
// makes the targets join again.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, metrics, metricValue, waitFor, sleep, rewriteConfig, logged } from './lib.mjs';
import { startDns, members, eventSims, explain, complete, SIM_MODEL as MODEL } from './dns_lib.mjs';

const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix'];
const prompt = (i) => `SRV prompt ${i}: ` + Array.from({ length: 60 }, (_, k) => words[(k * 7 + i * 3) % 10]).join(' ');

// Until the target that served p is predicted to hold it from its events.
async function predictedOn(gw, p, on) {
  await waitFor(`${on} to show its events`, async () => {
    const rows = await explain(gw, p + ' more');
    return rows[on] && rows[on].index_source === 'events' && rows[on].predicted_cached_tokens >= 64;
  });
}

const count = (text, s) => text.split(s).length - 1;
const following = (id, ep) => `replica ${id}: following its KV events at ${ep}`;

test('each member is followed at the ports its own SRV records give; a failed lookup keeps them', { timeout: 120000 }, async () => {
  const hosts = ['127.0.0.2', '127.0.0.3'];
  const { port, ports, sims } = await eventSims(hosts, { args: ['--enable-faults'], perHost: true, cleanup });
  const names = { '127.0.0.2': 'pod-2.pool.test', '127.0.0.3': 'pod-3.pool.test' };
  const hostsFile = { 'pool.test': hosts, ...Object.fromEntries(hosts.map((h) => [names[h], [h]])) };
  // The records: every replay port, and the publishers' of the hosts in `pubs`.
  const records = (pubs) => [
    ...pubs.map((h) => ['_kv-events._tcp.pool.test', names[h], ports[h].pub]),
    ...hosts.map((h) => ['_kv-replay._tcp.pool.test', names[h], ports[h].replay]),
  ];
  let dns = await startDns(hostsFile, records(hosts));
  const dnsPort = dns.port;
  cleanup.push(() => dns.stop());
  const restartDns = async (pubs) => {
    await dns.stop();
    dns = await startDns(hostsFile, records(pubs), { port: dnsPort });
  };
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    discovery: {
      nameservers: [`127.0.0.1:${dnsPort}`],
      dns: [{ name: 'se', url: `http://pool.test:${port}`, refresh: '100ms',
        kv_events: { port_srv: '_kv-events._tcp.pool.test', replay_port_srv: '_kv-replay._tcp.pool.test' } }],
    },
    routing: { default_policy: 'round_robin' },
    server: { workers: 1 },
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const id = (h) => `se-${h}-${port}`;
  assert.deepEqual(await members(gw), hosts.map(id));
  for (const h of hosts)
    await waitFor(`${h}'s stream at its own port`, async () => gw.log.text.includes(following(id(h), `tcp://${h}:${ports[h].pub}`)));
  // Each is predicted from its own stream (the ports are the engines' own: another
  // member's would give nothing).
  const served = {};
  for (let i = 0; i < 4; i++) served[i] = await complete(gw, prompt(i));
  assert.deepEqual(new Set(Object.values(served)), new Set(hosts.map(id)));
  for (let i = 0; i < 4; i++) await predictedOn(gw, prompt(i), served[i]);

  // The publishers' name stops resolving: the members keep the ports last found.
  await restartDns([]);
  await waitFor('the failed lookup in the log', async () => gw.log.text.includes('looking up kv_events.port_srv _kv-events._tcp.pool.test failed'));
  await sleep(300);
  for (const h of hosts) assert.equal(count(gw.log.text, following(id(h), '')), 1, `${h} was subscribed again`);
  assert.ok(!gw.log.text.includes('its KV event ports changed'), gw.log.text.slice(-2000));
  assert.deepEqual(await members(gw), hosts.map(id));

  // Only .2's record comes back: .3 joins again without events; .2 keeps its stream.
  await restartDns(['127.0.0.2']);
  await waitFor('.3 without events', async () => gw.log.text.includes(`replica ${id('127.0.0.3')} left (its KV event ports changed)`));
  await waitFor('.3 back, tracked approximately', async () => {
    const rows = await explain(gw, prompt(0));
    return (await members(gw)).length === 2 && rows[id('127.0.0.3')] && rows[id('127.0.0.3')].index_source === 'approximate';
  });
  await logged(gw, 'kv_events.port_srv _kv-events._tcp.pool.test resolves again');
  assert.equal(count(gw.log.text, following(id('127.0.0.2'), '')), 1, '.2 was subscribed again');

  // .3's record comes back: it is followed at its port again.
  await restartDns(hosts);
  await waitFor('.3 followed again', async () => count(gw.log.text, following(id('127.0.0.3'), `tcp://127.0.0.3:${ports['127.0.0.3'].pub}`)) === 2);
  const later = {};
  for (let i = 10; i < 14; i++) later[i] = await complete(gw, prompt(i));
  for (let i = 10; i < 14; i++) await predictedOn(gw, prompt(i), later[i]);
  assert.equal(count(gw.log.text, following(id('127.0.0.2'), '')), 1);

  // Each member's replay socket is its own record's too: a batch each engine drops
  // is replayed, with no fallback.
  for (const s of sims) {
    const f = await fetch(s.url + '/admin/fault', { method: 'POST', body: JSON.stringify({ fault: 'drop-events=1' }) });
    assert.equal(f.status, 200);
  }
  // A dropped batch shows as a gap only when that engine's next batch arrives: each
  // member serves at least two requests after the fault, whichever way they are routed.
  const sinceFault = new Map();
  for (let i = 20; i < 60 && hosts.some((h) => (sinceFault.get(id(h)) ?? 0) < 2); i++) {
    const on = await complete(gw, prompt(i));
    sinceFault.set(on, (sinceFault.get(on) ?? 0) + 1);
  }
  assert.ok(hosts.every((h) => (sinceFault.get(id(h)) ?? 0) >= 2), JSON.stringify([...sinceFault]));
  await waitFor('both gaps replayed', async () => {
    const page = await metrics(gw.admin);
    return hosts.every((h) => metricValue(page, 'inferrail_kv_events_replayed_batches_total', `replica="${id(h)}"`) >= 1);
  });
  const page = await metrics(gw.admin);
  for (const h of hosts) assert.equal(metricValue(page, 'inferrail_kv_events_fallbacks_total', `replica="${id(h)}"`), 0, h);
});

test('srv: true with data_parallel_size 2: rank r reads the record\'s port plus r', { timeout: 120000 }, async () => {
  const { port, ports } = await eventSims(['127.0.0.4'], { args: ['--enable-faults', '--data-parallel-size', '2'], perHost: true, cleanup });
  const { pub, replay } = ports['127.0.0.4'];
  const dns = await startDns({ 'pod-4.dp.test': ['127.0.0.4'] }, [
    ['_http._tcp.dp.test', 'pod-4.dp.test', port],
    ['_kv-events._tcp.dp.test', 'pod-4.dp.test', pub],
    ['_kv-replay._tcp.dp.test', 'pod-4.dp.test', replay],
  ]);
  cleanup.push(() => dns.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    discovery: {
      nameservers: [`127.0.0.1:${dns.port}`],
      dns: [{ name: 'sd', url: 'http://_http._tcp.dp.test:1', srv: true, refresh: '100ms', data_parallel_size: 2,
        kv_events: { port_srv: '_kv-events._tcp.dp.test', replay_port_srv: '_kv-replay._tcp.dp.test' } }],
    },
    routing: { default_policy: 'round_robin' },
    server: { workers: 1 },
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const targets = [0, 1].map((r) => `sd-127.0.0.4-${port}/dp${r}`);
  assert.deepEqual(await members(gw), targets);
  for (const r of [0, 1])
    await waitFor(`rank ${r}'s stream`, async () => gw.log.text.includes(following(targets[r], `tcp://127.0.0.4:${pub + r}`)));
  const served = {};
  for (let i = 0; i < 4; i++) served[i] = await complete(gw, prompt(i));
  assert.deepEqual(new Set(Object.values(served)), new Set(targets));
  for (let i = 0; i < 4; i++) await predictedOn(gw, prompt(i), served[i]);

  // A reload that keeps the names keeps the streams; one that drops replay_port_srv
  // changes the group: its targets join again, followed without replay.
  const reload = async () => {
    const before = count(gw.log.text, 'discovery renewed');
    gw.child.kill('SIGHUP');
    await waitFor('the reload', () => count(gw.log.text, 'discovery renewed') > before);
  };
  rewriteConfig(gw, (c) => { c.discovery.dns[0].refresh = '150ms'; });
  await reload();
  await sleep(300);
  for (const r of [0, 1]) assert.equal(count(gw.log.text, following(targets[r], '')), 1, `rank ${r} was subscribed again`);
  rewriteConfig(gw, (c) => { delete c.discovery.dns[0].kv_events.replay_port_srv; });
  await reload();
  for (const r of [0, 1])
    await waitFor(`rank ${r}'s new stream`, async () => count(gw.log.text, following(targets[r], `tcp://127.0.0.4:${pub + r}`)) === 2);
  assert.deepEqual(await members(gw), targets);
});
