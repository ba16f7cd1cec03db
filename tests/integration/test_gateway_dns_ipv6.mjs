// DNS groups over IPv6, against a real dnsmasq on loopback: a name with an AAAA
// record for ::1 and an A record for 127.0.0.1 gives two members, one per address,
// named <group>-<ip>-<port> (<group>-::1-<port> for the IPv6 one) and reached at
// http://[::1]:<port>. Both serve requests, are probed and scraped, have their own
// metric series (the colons of an IPv6 address in the replica label) and, with
// kv_events on the group, are followed from their own event streams: the IPv6
// member's at tcp://[::1]:<port> (a socket that needs ZMQ_IPV6, on the gateway's
// side and on the simulator's). With data_parallel_size 2, rank 1's stream is read
// at [::1]:<port + 1>, the names coming from a nameserver reached at [::1]:<port>.
// When the AAAA record goes, the IPv6 member leaves with its series and its stream.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, metrics, metricValue, waitFor } from './lib.mjs';
import { startDns, members, eventSims, complete, predictedOn, zmqUrl as zmq, SIM_MODEL as MODEL } from './dns_lib.mjs';

const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

const url = (h, port) => (h.includes(':') ? `http://[${h}]:${port}` : `http://${h}:${port}`);

const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix'];
const prompt = (i) => `IPv6 prompt ${i}: ` + Array.from({ length: 60 }, (_, k) => words[(k * 3 + i * 7) % 10]).join(' ');

async function state(gw) {
  return (await fetch(`${gw.admin}/admin/state`)).json();
}

test('an AAAA member is named <group>-::1-<port>, reached at http://[::1], followed at tcp://[::1]', { timeout: 120000 }, async () => {
  const hosts = ['::1', '127.0.0.1'];
  const { port, pub, replay, sims } = await eventSims(hosts, { cleanup });
  const dns = await startDns({ 'mix.test': hosts });
  cleanup.push(() => dns.stop());
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    discovery: {
      nameservers: [`127.0.0.1:${dns.port}`],
      dns: [{ name: 'v6', url: `http://mix.test:${port}`, refresh: '100ms', kv_events: { port: pub, replay_port: replay } }],
    },
    routing: { default_policy: 'round_robin' },
    server: { workers: 1 },
    health: { interval: '200ms' },
    load: { scrape_interval: '100ms' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const id = (h) => `v6-${h}-${port}`;
  const ids = hosts.map(id);
  assert.deepEqual(await members(gw), [...ids].sort());
  const st = await state(gw);
  const byId = Object.fromEntries(st.replicas.map((r) => [r.id, r]));
  for (const h of hosts) assert.equal(byId[id(h)].url, url(h, port));

  // Requests reach both engines, the one on ::1 included (by its own count).
  const served = {};
  for (let i = 0; i < 4; i++) served[i] = await complete(gw, prompt(i));
  assert.deepEqual(new Set(Object.values(served)), new Set(ids), gw.log.text.slice(-3000));
  const sent = Object.values(served).filter((s) => s === id('::1')).length;
  assert.equal(metricValue(await metrics(sims[0].url), 'vllm:request_success_total', 'finished_reason="length"'), sent);

  // Each member's stream is at its own address, the IPv6 one in brackets.
  for (const h of hosts)
    await waitFor(`${h}'s stream`, async () => gw.log.text.includes(`replica ${id(h)}: following its KV events at ${zmq(h, pub)}`));
  for (let i = 0; i < 4; i++) await predictedOn(gw, prompt(i), served[i], ids);

  // Its series carry the IPv6 id as their replica label; probes and scrapes reach it.
  const label = `replica="${id('::1')}"`;
  let page;
  await waitFor('the IPv6 member to be probed and scraped', async () => {
    page = await metrics(gw.admin);
    return metricValue(page, 'inferrail_load_scrapes_total', `${label},result="ok"`) >= 1 &&
      metricValue(page, 'inferrail_replica_healthy', label) === 1;
  });
  assert.ok(metricValue(page, 'inferrail_kv_events_batches_total', label) >= 1, page);
  assert.equal(metricValue(page, 'inferrail_kv_events_decode_errors_total', label), 0);
  assert.equal(metricValue(page, 'inferrail_replica_requests_total', label), sent);

  // The AAAA record goes: the IPv6 member leaves, with its series and its stream.
  dns.setHosts({ 'mix.test': ['127.0.0.1'] });
  await waitFor('::1 to leave', async () => (await members(gw)).join() === id('127.0.0.1'));
  await waitFor('its stream to close', async () => gw.log.text.includes(`replica ${id('::1')}: its KV event stream closed`));
  page = await metrics(gw.admin);
  assert.ok(!page.includes(id('::1')), 'a departed IPv6 member keeps metric series');
  assert.equal(await complete(gw, prompt(20)), id('127.0.0.1'));
});

test('data_parallel_size 2 over IPv6, from a nameserver at [::1]: rank r of [::1] is read at [::1]:port + r', { timeout: 120000 }, async () => {
  const { port, pub, sims } = await eventSims(['::1'], { args: ['--data-parallel-size', '2'], cleanup });
  // The nameserver is reached over IPv6 too.
  const dns = await startDns({ 'v6only.test': ['::1'] }, [], { listen: '::1' });
  cleanup.push(() => dns.stop());
  assert.equal(dns.server, `[::1]:${dns.port}`);
  const gw = await startGateway({
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    discovery: {
      nameservers: [dns.server],
      dns: [{ name: 'dp6', url: `http://v6only.test:${port}`, refresh: '100ms', data_parallel_size: 2, kv_events: { port: pub } }],
    },
    routing: { default_policy: 'round_robin' },
    server: { workers: 1 },
    health: { interval: '10s' },
  });
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });
  const targets = [0, 1].map((r) => `dp6-::1-${port}/dp${r}`);
  assert.deepEqual(await members(gw), targets);
  for (const r of [0, 1])
    await waitFor(`rank ${r}'s stream`, async () => gw.log.text.includes(`replica ${targets[r]}: following its KV events at tcp://[::1]:${pub + r}`));
  const served = {}, sent = [0, 0];
  for (let i = 0; i < 4; i++) {
    served[i] = await complete(gw, prompt(i));
    sent[targets.indexOf(served[i])]++;
  }
  const page = await metrics(sims[0].url);
  for (const r of [0, 1])
    assert.equal(metricValue(page, 'vllm:request_success_total', `engine="${r}",finished_reason="length"`), sent[r], `rank ${r}`);
  for (let i = 0; i < 4; i++) await predictedOn(gw, prompt(i), served[i], targets);
});
