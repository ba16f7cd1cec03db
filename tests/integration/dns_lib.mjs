// A real DNS server for discovery tests: Debian's dnsmasq on a high loopback
// port, answering from a hosts directory that the test rewrites (dnsmasq reads
// changed files there by itself), plus simulators on 127.0.0.N sharing a port,
// and the helpers of the tests that follow discovered members' KV events.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { promises as dns } from 'node:dns';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUILD, sleep, waitFor, own, stopChild } from './lib.mjs';

const DNSMASQ = ['/usr/sbin/dnsmasq', '/usr/bin/dnsmasq'].find((p) => fs.existsSync(p)) || 'dnsmasq';

export const randomPort = () => 10000 + Math.floor(Math.random() * 10000);

// The ids of a gateway's replicas now (discovered members included), sorted.
export async function members(gw) {
  const s = await (await fetch(`${gw.admin}/admin/state`)).json();
  return s.replicas.map((r) => r.id).sort();
}

function exited(child) {
  return child.exitCode !== null || child.signalCode !== null;
}

function stopper(child) {
  return async () => { await stopChild(child, 'SIGTERM', 5000); };
}

// Starts dnsmasq; hosts: {name: [ip, ...]}; srv: [[name, target, port], ...]; ttl:
// the TTL of its answers from hosts and srv (--local-ttl), in seconds; port: the
// one to use (tried for a few seconds, for a restart on the same port), else a
// free one; args: more dnsmasq options (--host-record=NAME,IP,TTL, say); listen:
// the address it answers on (::1 for a nameserver reached over IPv6).
// Resolves to {port, server (host:port, as discovery.nameservers takes it),
// setHosts(hosts), stop()}.
export async function startDns(hosts, srv = [], { ttl = 0, port: fixed = 0, args: more = [], listen = '127.0.0.1' } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ir-dns-'));
  const hdir = path.join(dir, 'hosts');
  fs.mkdirSync(hdir);
  let n = 0;
  const setHosts = (h) => {
    // ready.test: the name startDns asks for to know the server answers.
    const text = Object.entries({ ...h, 'ready.test': ['127.0.0.1'] })
      .flatMap(([name, ips]) => ips.map((ip) => `${ip} ${name}\n`)).join('');
    const tmp = path.join(dir, `tmp-${n++}`);
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, path.join(hdir, 'hosts')); // dnsmasq sees the move and rereads
  };
  setHosts(hosts);
  for (let tries = 0; tries < 20; tries++) {
    const port = fixed || randomPort();
    const args = ['-k', '--conf-file=/dev/null', '--no-resolv', '--no-hosts', `--port=${port}`,
      `--listen-address=${listen}`, '--bind-interfaces', `--hostsdir=${hdir}`, `--local-ttl=${ttl}`,
      '--pid-file=', '--user=', '--log-facility=-', ...srv.map(([s, t, p]) => `--srv-host=${s},${t},${p}`), ...more];
    const child = spawn(DNSMASQ, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    own(child);
    let log = '';
    child.stderr.on('data', (d) => { log += d; });
    const resolver = new dns.Resolver({ timeout: 200, tries: 1 });
    const server = listen.includes(':') ? `[${listen}]:${port}` : `${listen}:${port}`;
    resolver.setServers([server]);
    let up = false;
    for (const end = Date.now() + 10000; !up && !exited(child) && Date.now() < end;) {
      up = await resolver.resolve4('ready.test').then(() => true, () => false);
      if (!up) await sleep(50);
    }
    if (!up) {
      child.kill('SIGKILL');
      if (/in use/i.test(log)) {
        if (fixed) await sleep(250);
        continue;
      }
      throw new Error(`dnsmasq did not start:\n${log}`);
    }
    const stop = stopper(child);
    return { port, server, setHosts, log: () => log, async stop() { await stop(); fs.rmSync(dir, { recursive: true, force: true }); } };
  }
  throw new Error('no free port for dnsmasq');
}

// Starts inferrail-sim on host:port; resolves to {url, stop()} or null when the
// port is taken.
export async function startSimAt(host, port, args = []) {
  const child = spawn(path.join(BUILD, 'inferrail-sim'), ['--host', host, '--port', String(port), ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  own(child);
  let log = '';
  child.stderr.on('data', (d) => { log += d; if (log.length > 1e5) log = log.slice(-5e4); });
  const url = host.includes(":") ? `http://[${host}]:${port}` : `http://${host}:${port}`;
  const end = Date.now() + 10000;
  while (Date.now() < end) {
    if (exited(child)) return null;
    try {
      const r = await fetch(`${url}/health`);
      await r.arrayBuffer();
      if (r.status === 200) return { url, host, port, child, log: () => log, stop: stopper(child) };
    } catch { /* not up yet */ }
    await sleep(25);
  }
  throw new Error(`inferrail-sim on ${url} did not start:\n${log}`);
}

// Simulators on each host, all on one port (tried until one is free on all).
export async function startSimsAt(hosts, args = []) {
  for (let tries = 0; tries < 20; tries++) {
    const port = randomPort();
    const sims = [];
    for (const h of hosts) {
      const s = await startSimAt(h, port, args);
      if (!s) break;
      sims.push(s);
    }
    if (sims.length === hosts.length) return { port, sims };
    for (const s of sims) await s.stop();
  }
  throw new Error('no port free on every host');
}

// ---- KV events from discovered members ------------------------------------------

export const SIM_MODEL = 'inferrail/sim-8b';

export const zmqUrl = (h, port) => (h.includes(':') ? `tcp://[${h}]:${port}` : `tcp://${h}:${port}`);

// Simulators publishing KV events, one on each host (IPv4 or IPv6), all on one
// HTTP port, each bound to its own address. By default they share one pair of
// event ports, pub and replay = pub + 4 (rank r on pub + r and replay + r), as a
// Deployment's pods share one --kv-events-config: resolves to {port, pub, replay,
// sims}. With perHost, host k publishes on port + 100 + 10k and replays on
// port + 105 + 10k: resolves to {port, ports: {host: {pub, replay}}, sims}.
// args: more simulator options. The simulators' stops are pushed onto cleanup
// (the list the test's after() runs).
export async function eventSims(hosts, { args = [], perHost = false, cleanup }) {
  for (let tries = 0; tries < 20; tries++) {
    const port = randomPort(), ports = {};
    if (perHost) {
      hosts.forEach((h, k) => { ports[h] = { pub: port + 100 + 10 * k, replay: port + 105 + 10 * k }; });
    } else {
      const pub = randomPort();
      if (Math.abs(port - pub) < 8) continue;
      for (const h of hosts) ports[h] = { pub, replay: pub + 4 };
    }
    const sims = [];
    for (const h of hosts) {
      const kv = { enable_kv_cache_events: true, publisher: 'zmq', endpoint: zmqUrl(h, ports[h].pub), replay_endpoint: zmqUrl(h, ports[h].replay), buffer_steps: 1000 };
      const s = await startSimAt(h, port, ['--zero-latency', '--enable-prompt-tokens-details',
        '--kv-events-config', JSON.stringify(kv), ...args]);
      if (!s) break;
      sims.push(s);
    }
    if (sims.length === hosts.length) {
      cleanup.push(async () => { for (const s of sims) await s.stop(); });
      if (perHost) return { port, ports, sims };
      return { port, pub: ports[hosts[0]].pub, replay: ports[hosts[0]].replay, sims };
    }
    for (const s of sims) await s.stop();
  }
  throw new Error('no ports free on every host');
}

// /admin/explain's candidates for a completion of prompt, by replica id.
export async function explain(gw, prompt) {
  const r = await fetch(`${gw.admin}/admin/explain?path=/v1/completions`, { method: 'POST', body: JSON.stringify({ model: SIM_MODEL, prompt, max_tokens: 1 }) });
  assert.equal(r.status, 200);
  const rows = {};
  for (const c of (await r.json()).candidates) rows[c.replica] = c;
  return rows;
}

// A completion through the gateway; resolves to the replica that served it.
export async function complete(gw, prompt) {
  const r = await fetch(`${gw.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ model: SIM_MODEL, prompt, max_tokens: 2 }) });
  assert.equal(r.status, 200, await r.clone().text());
  await r.json();
  return r.headers.get('x-inferrail-replica');
}

// Until the target that served p (on) is predicted to hold it from its events;
// then each of ids follows its events, and none but on holds p.
export async function predictedOn(gw, p, on, ids) {
  let rows;
  // Every member followed by then: one that just joined opens its stream, and connects
  // it, a moment after it shows in /admin/state (events-stale, or approximate, before).
  await waitFor(`${on} to show its events, and ${ids.join(', ')} to follow theirs`, async () => {
    rows = await explain(gw, p + ' more');
    return rows[on] && rows[on].predicted_cached_tokens >= 64 && ids.every((id) => rows[id]?.index_source === 'events');
  });
  for (const id of ids) {
    assert.ok(rows[id], `${id} missing from ${JSON.stringify(Object.keys(rows))}`);
    assert.equal(rows[id].index_source, 'events', `${id}: ${JSON.stringify(rows[id])}`);
    if (id !== on) assert.equal(rows[id].predicted_cached_tokens, 0, `${id} for a prompt only ${on} saw`);
  }
}
