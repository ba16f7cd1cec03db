// A real DNS server for discovery tests: Debian's dnsmasq on a high loopback
// port, answering from a hosts directory that the test rewrites (dnsmasq reads
// changed files there by itself), plus simulators on 127.0.0.N sharing a port.
import { spawn } from 'node:child_process';
import { promises as dns } from 'node:dns';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUILD, sleep } from './lib.mjs';

const DNSMASQ = ['/usr/sbin/dnsmasq', '/usr/bin/dnsmasq'].find((p) => fs.existsSync(p)) || 'dnsmasq';
const children = new Set();
process.on('exit', () => { for (const c of children) try { c.kill('SIGKILL'); } catch { /* gone */ } });

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
  return async () => {
    if (exited(child)) return;
    const done = new Promise((r) => child.on('exit', r));
    child.kill('SIGTERM');
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    await done;
    clearTimeout(t);
  };
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
    children.add(child);
    let log = '';
    child.stderr.on('data', (d) => { log += d; });
    child.on('exit', () => children.delete(child));
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
  children.add(child);
  let log = '';
  child.stderr.on('data', (d) => { log += d; if (log.length > 1e5) log = log.slice(-5e4); });
  child.on('exit', () => children.delete(child));
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

// The KV event endpoint of a simulator on host h (an IPv6 address in brackets).
export const zmqAt = (h, port) => (h.includes(':') ? `tcp://[${h}]:${port}` : `tcp://${h}:${port}`);

// Simulators publishing KV events, one on each host, all on one HTTP port and one
// pair of event ports (publisher, replay = publisher + 4), each bound to its own
// address; tried until the ports are free on every host. Resolves to
// {port, pub, replay, sims}; the caller stops the sims.
export async function startEventSimsAt(hosts, extra = []) {
  for (let tries = 0; tries < 20; tries++) {
    const port = randomPort(), pub = randomPort(), replay = pub + 4;
    if (Math.abs(port - pub) < 8) continue;
    const sims = [];
    for (const h of hosts) {
      const kv = { enable_kv_cache_events: true, publisher: 'zmq', endpoint: zmqAt(h, pub), replay_endpoint: zmqAt(h, replay), buffer_steps: 1000 };
      const s = await startSimAt(h, port, ['--zero-latency', '--enable-prompt-tokens-details',
        '--kv-events-config', JSON.stringify(kv), ...extra]);
      if (!s) break;
      sims.push(s);
    }
    if (sims.length === hosts.length) return { port, pub, replay, sims };
    for (const s of sims) await s.stop();
  }
  throw new Error('no ports free on every host');
}
