// Configured replicas whose kv_events endpoints name their host by a DNS name,
// answered by a real dnsmasq on loopback (discovery.nameservers; no DNS groups).
// The subscriber looks the names up itself with c-ares and connects to the address
// found. A name with only an AAAA record (::1) is followed over IPv6
// (tcp://[::1]:port, ZMQ_IPV6), from an engine bound to ::1 alone; libzmq left to
// itself resolves IPv4 only and would never connect. A name with both an A and an
// AAAA record is followed at its IPv4 address (the engine binds 127.0.0.1 only),
// as libzmq did. When the name moves to another address the stream reopens there;
// when the nameserver stops answering, the stream stays at the address last found.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, metrics, metricValue, waitFor } from './lib.mjs';
import { startDns, eventSims, zmqUrl } from './dns_lib.mjs';

const MODEL = 'inferrail/sim-8b';
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

async function explain(gw, prompt) {
  const r = await fetch(`${gw.admin}/admin/explain?path=/v1/completions`, { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 1 }) });
  assert.equal(r.status, 200);
  const rows = {};
  for (const c of (await r.json()).candidates) rows[c.replica] = c;
  return rows;
}

async function complete(gw, prompt) {
  const r = await fetch(`${gw.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: MODEL, prompt, max_tokens: 2 }) });
  assert.equal(r.status, 200, await r.clone().text());
  await r.json();
}

const words = ['alpha', 'beta', 'gamma', 'delta', 'kv', 'cache', 'router', 'token', 'block', 'prefix'];
const prompt = (i) => `named host prompt ${i}: ` + Array.from({ length: 60 }, (_, k) => words[(k * 3 + i * 7) % 10]).join(' ');

// Until replica id is predicted to hold p from its events.
async function predicted(gw, id, p) {
  let row;
  await waitFor(`${id} to show its events`, async () => {
    row = (await explain(gw, p + ' more'))[id];
    return row && row.index_source === 'events' && row.predicted_cached_tokens >= 64;
  });
  return row;
}

function gatewayConfig(dns, id, url, name, pub, replay) {
  return {
    models: [{ name: MODEL, tokenizer: 'builtin:sim' }],
    replicas: [{ id, url, kv_events: { endpoint: `tcp://${name}:${pub}`, replay_endpoint: `tcp://${name}:${replay}` } }],
    discovery: { nameservers: [dns.server] },
    server: { workers: 1 },
    health: { interval: '10s' },
  };
}

test('an endpoint host with only an AAAA record is followed at tcp://[::1]', { timeout: 120000 }, async () => {
  const { port, pub, replay } = await eventSims(['::1'], { cleanup });
  const dns = await startDns({ 'v6only.test': ['::1'] });
  cleanup.push(() => dns.stop());
  const gw = await startGateway(gatewayConfig(dns, 'ev6', `http://[::1]:${port}`, 'v6only.test', pub, replay));
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });

  await waitFor('the stream at [::1]', async () =>
    gw.log.text.includes(`replica ev6: following its KV events at ${zmqUrl('::1', pub)} (v6only.test resolves to ::1)`));
  await complete(gw, prompt(1));
  await predicted(gw, 'ev6', prompt(1));
  const page = await metrics(gw.admin);
  assert.ok(metricValue(page, 'inferrail_kv_events_batches_total', 'replica="ev6"') >= 1, page);
  assert.equal(metricValue(page, 'inferrail_kv_events_decode_errors_total', 'replica="ev6"'), 0);
  assert.equal(metricValue(page, 'inferrail_kv_events_fallbacks_total', 'replica="ev6"'), 0);
});

test('A and AAAA: followed at the IPv4 address; a move reopens the stream; a failed lookup keeps it', { timeout: 120000 }, async () => {
  const { pub, replay, sims } = await eventSims(['127.0.0.1', '127.0.0.2'], { cleanup });
  const dns = await startDns({ 'both.test': ['::1', '127.0.0.1'] });
  cleanup.push(() => dns.stop());
  const gw = await startGateway(gatewayConfig(dns, 'ev', sims[0].url, 'both.test', pub, replay));
  cleanup.push(async () => { assert.equal(await gw.stop(), 0, gw.log.text); });

  await waitFor('the stream at 127.0.0.1', async () =>
    gw.log.text.includes(`replica ev: following its KV events at tcp://127.0.0.1:${pub} (both.test resolves to 127.0.0.1)`));
  await complete(gw, prompt(2));
  await predicted(gw, 'ev', prompt(2));
  assert.ok(!gw.log.text.includes(`at tcp://[::1]:${pub}`), 'followed over IPv6 although the name has an A record');

  // The name moves to 127.0.0.2 (another engine, which never saw the prompt): the
  // stream reopens there, and the view is that engine's.
  dns.setHosts({ 'both.test': ['127.0.0.2'] });
  await waitFor('the stream at 127.0.0.2', async () =>
    gw.log.text.includes(`replica ev: following its KV events at tcp://127.0.0.2:${pub} (both.test resolves to 127.0.0.2)`));
  await waitFor('the view of the engine at 127.0.0.2', async () => {
    const row = (await explain(gw, prompt(2) + ' more')).ev;
    return row.index_source === 'events' && row.predicted_cached_tokens === 0;
  });

  // The nameserver stops: the stream stays at 127.0.0.2, logged once.
  const before = gw.log.text.length;
  await dns.stop();
  await waitFor('the failed lookup', async () =>
    gw.log.text.slice(before).includes('replica ev: looking up both.test failed'), 30000);
  const since = gw.log.text.slice(before);
  assert.ok(since.includes('its KV events are followed at the address last found'), since);
  assert.ok(!since.includes('its KV event stream closed'), since);
  const row = (await explain(gw, 'anything')).ev;
  assert.equal(row.index_source, 'events', JSON.stringify(row));
});
