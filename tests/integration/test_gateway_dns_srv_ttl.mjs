// SRV TTLs: a group whose refresh is an hour follows an SRV record with a 1 s TTL.
// The target's A record lives an hour (dnsmasq's --host-record TTL), so only the
// SRV answer's own TTL, which c-ares 1.18 does not give and the gateway reads from
// the raw reply (ADR 0015), can bring the next lookup sooner. dnsmasq is
// restarted on the same port with the record pointing at another port; the
// gateway must move to it (a lookup in the gap fails and keeps the member).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, waitFor } from './lib.mjs';
import { startDns, startSimAt, randomPort, members } from './dns_lib.mjs';

async function simOn(host) {
  for (let i = 0; i < 20; i++) {
    const s = await startSimAt(host, randomPort());
    if (s) return s;
  }
  throw new Error('no free port');
}

test('an SRV record\'s short TTL brings the next lookup before refresh', { timeout: 90000 }, async () => {
  const a = await simOn('127.0.0.6');
  const b = await simOn('127.0.0.6');
  const opts = (port) => ({ ttl: 1, port, args: ['--host-record=t6.test,127.0.0.6,3600'] });
  let dns = await startDns({}, [['_http._tcp.srv.test', 't6.test', a.port]], opts(0));
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    discovery: {
      nameservers: [`127.0.0.1:${dns.port}`],
      dns: [{ name: 'srv', url: 'http://_http._tcp.srv.test:1', srv: true, refresh: '1h' }],
    },
  });
  try {
    assert.deepEqual(await members(gw), [`srv-127.0.0.6-${a.port}`]);
    const port = dns.port;
    await dns.stop();
    dns = await startDns({}, [['_http._tcp.srv.test', 't6.test', b.port]], opts(port));
    await waitFor('the member on the new port', async () => (await members(gw)).join() === `srv-127.0.0.6-${b.port}`);
    const r = await fetch(`${gw.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'x', max_tokens: 1 }) });
    assert.equal(r.status, 200, await r.text());
    assert.equal(r.headers.get('x-inferrail-replica'), `srv-127.0.0.6-${b.port}`);
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    await a.stop();
    await b.stop();
    await dns.stop();
  }
});
