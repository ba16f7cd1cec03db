// SIGHUP reload of discovery, against real dnsmasq servers on loopback: a group
// added resolves at once, a group kept keeps its members (a stream on one runs on)
// and takes its new models in place, a group removed loses its members, and new
// discovery.nameservers are asked from then on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startGateway, sleep, sseData, rewriteConfig, waitFor, metricsWhen, logged } from './lib.mjs';
import { randomPort, startDns, startSimsAt, members } from './dns_lib.mjs';

const post = (gw, model, extra = {}) => fetch(`${gw.url}/v1/completions`, {
  method: 'POST', body: JSON.stringify({ model, prompt: 'hello', max_tokens: 2, ...extra }),
});

async function routedTo(gw, model, n = 8) {
  const seen = new Set();
  for (let i = 0; i < n; i++) {
    const r = await post(gw, model);
    assert.equal(r.status, 200, await r.text());
    seen.add(r.headers.get('x-inferrail-replica'));
  }
  return [...seen].sort();
}

async function reload(gw, marker) {
  const before = gw.log.text.split(marker).length;
  gw.child.kill('SIGHUP');
  await waitFor(`"${marker}" in the log`, () => gw.log.text.split(marker).length > before);
}

test('SIGHUP changes DNS groups and nameservers without dropping a stream', { timeout: 120000 }, async () => {
  const hosts = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
  const { port, sims } = await startSimsAt(hosts, ['--served-model-name', 'inferrail/sim-8b', 'm2',
    '--decode-token-ms', '20', '--prefill-fixed-ms', '0']);
  const ns1 = await startDns({ 'a.test': ['127.0.0.2'], 'b.test': ['127.0.0.3', '127.0.0.4'], 'm5.test': ['127.0.0.5'] },
    [['_http._tcp.srv.test', 'm5.test', port]]);
  const ns2 = await startDns({ 'a.test': ['127.0.0.4'], 'm5.test': ['127.0.0.5'] }, [['_http._tcp.srv.test', 'm5.test', port]]);
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    discovery: {
      nameservers: [`127.0.0.1:${ns1.port}`],
      dns: [{ name: 'a', url: `http://a.test:${port}`, refresh: '100ms' }],
    },
    health: { interval: '100ms', timeout: '1s' },
  });
  const id = (g, ip, p = port) => `${g}-${ip}-${p}`;
  try {
    assert.deepEqual(await members(gw), [id('a', '127.0.0.2')]);
    // A stream on a's member that runs across the reloads (60 tokens at 20 ms).
    // Once its head is back, the stream runs (a fixed wait can end before it starts).
    const head = await post(gw, 'inferrail/sim-8b', { max_tokens: 60, stream: true });
    const stream = head.text().then((text) => ({ status: head.status, replica: head.headers.get('x-inferrail-replica'), text }));

    // Group b joins; group a now serves only the new model m2 (its member stays).
    rewriteConfig(gw, (c) => {
      c.models.push({ name: 'm2' });
      c.discovery.dns[0].models = ['m2'];
      c.discovery.dns.push({ name: 'b', url: `http://b.test:${port}`, refresh: '100ms', models: ['inferrail/sim-8b'] });
    });
    await reload(gw, 'reload: ');
    await logged(gw, /models added 1, removed 0, with new aliases 0, new policies \d+, new tokenizers 0; keys that need a restart: \d+; discovery renewed/);
    const all = [id('a', '127.0.0.2'), id('b', '127.0.0.3'), id('b', '127.0.0.4')];
    await waitFor('group b', async () => (await members(gw)).join() === all.join());
    assert.doesNotMatch(gw.log.text, /replica a-127\.0\.0\.2-\d+ left/);
    assert.deepEqual(await routedTo(gw, 'm2'), [id('a', '127.0.0.2')]);
    // The kept member got series for the model its group took in the same reload.
    const m2 = new RegExp(`^inferrail_requests_total\\{model="m2",replica="${id('a', '127.0.0.2')}",status="2xx"\\} (\\d+)$`, 'm');
    const count8 = (p) => Number(m2.exec(p)?.[1]);
    assert.equal(count8(await metricsWhen(gw.admin, (p) => count8(p) === 8)), 8);
    assert.deepEqual(await routedTo(gw, 'inferrail/sim-8b'), [id('b', '127.0.0.3'), id('b', '127.0.0.4')]);

    // Group b leaves, an SRV group joins, and a is now looked up on ns2 (.4, not .2).
    rewriteConfig(gw, (c) => {
      c.discovery.nameservers = [`127.0.0.1:${ns2.port}`];
      c.discovery.dns = [
        { name: 'a', url: `http://a.test:${port}`, refresh: '100ms' },
        { name: 'srv', url: 'http://_http._tcp.srv.test:1', srv: true, refresh: '100ms' },
      ];
    });
    await reload(gw, 'reload: ');
    const now = [id('a', '127.0.0.4'), id('srv', '127.0.0.5')];
    await waitFor('ns2\'s answers', async () => (await members(gw)).join() === now.join());
    await logged(gw, /group b: replica b-127\.0\.0\.3-\d+ left \(the group changed\)/);
    assert.deepEqual(await routedTo(gw, 'm2'), now);
    const page = await (await fetch(`${gw.admin}/metrics`)).text();
    assert.doesNotMatch(page, /replica="b-/);

    const s = await stream;
    assert.equal(s.status, 200);
    assert.equal(s.replica, id('a', '127.0.0.2'));
    assert.equal(sseData(s.text).at(-1), '[DONE]', s.text.slice(-300));
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    for (const s of sims) await s.stop();
    await ns1.stop();
    await ns2.stop();
  }
});

// A member away from DNS while a reload adds a model comes back to its old slot:
// it serves the new model too (its group serves every model), with its series.
test('a member that comes back after a reload added a model serves that model', { timeout: 120000 }, async () => {
  const hosts = ['127.0.0.2', '127.0.0.3'];
  const { port, sims } = await startSimsAt(hosts, ['--served-model-name', 'inferrail/sim-8b', 'm2', '--zero-latency']);
  const ns = await startDns({ 'a.test': hosts });
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    discovery: { nameservers: [`127.0.0.1:${ns.port}`], dns: [{ name: 'a', url: `http://a.test:${port}`, refresh: '100ms' }] },
    routing: { default_policy: 'round_robin' },
    health: { interval: '100ms', timeout: '1s' },
  });
  const id = (ip) => `a-${ip}-${port}`;
  try {
    await waitFor('both members', async () => (await members(gw)).join() === hosts.map(id).join());
    ns.setHosts({ 'a.test': [hosts[0]] });
    await waitFor(`${hosts[1]} to leave`, async () => (await members(gw)).join() === id(hosts[0]));
    rewriteConfig(gw, (c) => c.models.push({ name: 'm2' }));
    await reload(gw, 'reload: ');
    await logged(gw, /models added 1,/);
    ns.setHosts({ 'a.test': hosts });
    await waitFor(`${hosts[1]} to come back`, async () => (await members(gw)).join() === hosts.map(id).join());
    assert.deepEqual(await routedTo(gw, 'm2'), hosts.map(id));
    const m2 = new RegExp(`^inferrail_requests_total\\{model="m2",replica="${id(hosts[1])}",status="2xx"\\} (\\d+)$`, 'm');
    const page = await metricsWhen(gw.admin, (p) => Number(m2.exec(p)?.[1]) === 4);
    assert.equal(Number(m2.exec(page)?.[1]), 4, page.split('\n').filter((l) => l.includes('m2')).join('\n'));
  } finally {
    assert.equal(await gw.stop(), 0, gw.log.text);
    for (const s of sims) await s.stop();
    await ns.stop();
  }
});

// A UDP port that takes DNS queries and never answers: a nameserver listed before
// a real one makes every lookup wait for c-ares's timeout first.
async function silentDns() {
  const dgram = await import('node:dgram');
  for (;;) {
    const sock = dgram.createSocket('udp4');
    const port = randomPort();
    const ok = await new Promise((resolve) => {
      sock.once('error', () => resolve(false));
      sock.bind(port, '127.0.0.1', () => resolve(true));
    });
    if (ok) return { port, stop: () => new Promise((r) => sock.close(r)) };
  }
}

// Group ga over two simulators, looked up at a nameserver that answers, beside one that
// never does (for the reload to switch to); ids(g): the members' ids under group g.
async function groupGa() {
  const hosts = ['127.0.0.3', '127.0.0.4'];
  const { port, sims } = await startSimsAt(hosts, ['--zero-latency']);
  const ns = await startDns({ 'alt.test': hosts });
  const silent = await silentDns();
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    discovery: { nameservers: [`127.0.0.1:${ns.port}`], dns: [{ name: 'ga', url: `http://alt.test:${port}`, refresh: '100ms' }] },
    health: { interval: '100ms', timeout: '5s' },
  });
  return { sims, ns, silent, gw, ids: (g) => hosts.map((h) => `${g}-${h}-${port}`) };
}

async function stopGroupGa({ sims, ns, silent, gw }) {
  assert.equal(await gw.stop(), 0, gw.log.text);
  for (const s of sims) await s.stop();
  await ns.stop();
  await silent.stop();
}

// A reload that renames the only group serving the model, under load: its members
// serve on until the renamed group has its first answer (which a silent first
// nameserver delays by a second), so no request finds the model without replicas.
test('a group renamed under load hands its members over: no request lost', { timeout: 120000 }, async () => {
  const { sims, ns, silent, gw, ids } = await groupGa();
  let stop = false;
  const got = [];
  const lane = async () => {
    while (!stop) {
      const r = await post(gw, 'inferrail/sim-8b');
      got.push({ at: Date.now(), status: r.status, replica: r.headers.get('x-inferrail-replica'), text: await r.text() });
    }
  };
  try {
    await waitFor('group ga', async () => (await members(gw)).join() === ids('ga').join());
    const lanes = Array.from({ length: 8 }, lane);
    await sleep(200);
    rewriteConfig(gw, (c) => {
      c.discovery.nameservers = [`127.0.0.1:${silent.port}`, `127.0.0.1:${ns.port}`];
      c.discovery.dns[0].name = 'gb';
    });
    await reload(gw, 'reload: ');
    const reloaded = Date.now();
    await waitFor('group gb alone', async () => (await members(gw)).join() === ids('gb').join());
    // Until gb has answered (a fixed wait can end before a loaded machine's next response).
    await waitFor('a response from gb', () => got.some((r) => r.replica?.startsWith('gb-'))).catch(() => {});
    stop = true;
    await Promise.all(lanes);
    const bad = got.filter((r) => r.status !== 200);
    assert.equal(bad.length, 0, `${bad.length} of ${got.length} failed, e.g. ${JSON.stringify(bad.slice(0, 2))}`);
    // ga served after the reload, while gb was being looked up; gb joined before ga left.
    assert.ok(got.some((r) => r.at > reloaded && r.replica.startsWith('ga-')), 'no handover');
    assert.ok(got.some((r) => r.replica.startsWith('gb-')), 'gb never served');
    const log = gw.log.text;
    assert.ok(log.indexOf(`replica ${ids('gb')[0]} joined`) < log.indexOf(`replica ${ids('ga')[0]} left`), log.slice(-3000));
  } finally {
    stop = true;
    await stopGroupGa({ sims, ns, silent, gw });
  }
});

// A reload whose new group cannot be looked up (its only nameserver never answers):
// the old group's members keep serving until the new one has had a good answer. They
// left after the first failed round before, and every request got 503 (found by a
// hostile DNS review).
test('a reload during a DNS outage keeps the old members serving', { timeout: 120000 }, async () => {
  const { sims, ns, silent, gw, ids } = await groupGa();
  try {
    await waitFor('group ga', async () => (await members(gw)).join() === ids('ga').join());
    rewriteConfig(gw, (c) => {
      c.discovery.nameservers = [`127.0.0.1:${silent.port}`];
      c.discovery.dns[0].name = 'gb';
    });
    await reload(gw, 'reload: ');
    await waitFor('the new group\'s lookup to fail', () => /group gb: looking up alt\.test failed/.test(gw.log.text));
    await sleep(300); // rounds after the failure
    assert.equal((await members(gw)).join(), ids('ga').join(), gw.log.text.slice(-2000));
    for (let i = 0; i < 10; i++) {
      const r = await post(gw, 'inferrail/sim-8b');
      const text = await r.text();
      assert.equal(r.status, 200, text);
      assert.ok(r.headers.get('x-inferrail-replica').startsWith('ga-'));
    }
  } finally {
    await stopGroupGa({ sims, ns, silent, gw });
  }
});
