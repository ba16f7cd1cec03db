// Shared helpers for the integration tests: start real binaries on free
// loopback ports, talk raw HTTP, parse SSE, and always clean up.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = process.env.IR_ROOT || path.resolve(here, '../..');
export const BUILD = process.env.IR_BUILD || path.join(ROOT, 'build');
export const FIXTURES = process.env.IR_FIXTURES || path.join(ROOT, 'tests/fixtures');

// The children that startSim, startGateway and dns_lib.mjs spawned and that still
// run. They do not hold the event loop (own()): a test that fails before it stops
// them (an assertion in a finally block ahead of the stops, a timeout) must not keep
// this process alive for ctest's whole timeout, with the test's report never
// printed. The process's exit kills what is left.
const children = new Set();
export function own(child) {
  children.add(child);
  child.on('exit', () => children.delete(child));
  child.unref();
  child.stderr?.unref();
}

// Stops an owned child: signal, then SIGKILL after killMs; resolves to its exit code
// or signal. Held while it stops: else a child slower than the kill timer (a
// simulator finishing a delayed request) exits after the loop has nothing left, and
// node ends the test with 'Promise resolution is still pending'.
export async function stopChild(child, signal, killMs) {
  // Already gone (an exit code, or a signal such as ASan's abort): 'exit' will not fire again.
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode ?? child.signalCode;
  const done = new Promise((r) => child.on('exit', (code, sig) => r(code ?? sig)));
  child.ref();
  child.kill(signal);
  const t = setTimeout(() => child.kill('SIGKILL'), killMs);
  const rc = await done;
  clearTimeout(t);
  return rc;
}
function killAll() {
  for (const c of children) {
    try { c.kill('SIGKILL'); } catch { /* already gone */ }
  }
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { killAll(); process.exit(1); });

// Ports come from 20000-31999: below the kernel's ephemeral range, where a port
// learned by binding port 0 can be taken by any outgoing connection before our
// child binds it, and apart from the shell tests' band (ports.sh: 10000-19999).
// A candidate must bind now, and one test process never gets a port twice.
const portsGiven = new Set();
function tryBind(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}
export async function freePort() {
  for (let i = 0; i < 500; i++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    if (portsGiven.has(port)) continue;
    portsGiven.add(port);
    if (await tryBind(port)) return port;
  }
  throw new Error('freePort: no free port in 20000-31999');
}

// Until /health answers 200, the child exits, or 120 s pass: a gateway loading four
// real tokenizer.json files took more than 10 s under ASan on a loaded 2-core VM, and
// one loading Qwen's more than 60 s under TSan. A child that never got ready is killed:
// left running, it kept node (and ctest) waiting until the test's timeout.
async function waitReady(port, child, log, what) {
  const deadline = Date.now() + 120000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what} exited early (${child.exitCode ?? child.signalCode}):\n${log.text}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/health`);
      await r.arrayBuffer();
      if (r.status === 200) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 25));
  }
  child.kill('SIGKILL');
  throw new Error(`${what} did not become ready on ${port}:\n${log.text}`);
}

// Starts build/inferrail-sim with extra flags; resolves to {port, url, child, stop()}.
export async function startSim(args = [], opts = {}) {
  const port = opts.port || (await freePort());
  const bin = path.join(BUILD, 'inferrail-sim');
  const child = spawn(bin, ['--host', '127.0.0.1', '--port', String(port), ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  own(child);
  const log = { text: '' };
  child.stderr.on('data', (d) => { log.text += d; if (log.text.length > 1e6) log.text = log.text.slice(-5e5); });
  let stopping = false;
  child.on('exit', (code, sig) => {
    if (!stopping && (sig || code)) process.stderr.write(`inferrail-sim exited unexpectedly (${code ?? sig}):\n${log.text}\n`);
  });
  await waitReady(port, child, log, 'inferrail-sim');
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    child,
    log,
    async stop(signal = 'SIGTERM') {
      stopping = true;
      return stopChild(child, signal, 5000);
    },
  };
}

// Raw HTTP/1.1 over a socket: returns {status, headers, body} or the error.
export function rawRequest(port, text, { timeoutMs = 5000 } = {}) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const t = setTimeout(() => { sock.destroy(); resolve({ timeout: true, raw: buf.toString() }); }, timeoutMs);
    sock.on('connect', () => sock.write(text));
    sock.on('data', (d) => { buf = Buffer.concat([buf, d]); });
    sock.on('error', (e) => { clearTimeout(t); resolve({ error: e.code || String(e), raw: buf.toString() }); });
    sock.on('close', () => {
      clearTimeout(t);
      const s = buf.toString();
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(s);
      resolve({ status: m ? Number(m[1]) : 0, raw: s, closed: true });
    });
  });
}

// Parses a text/event-stream body into the list of data payloads.
export function sseData(text) {
  return text
    .split(/\n\n/)
    .map((ev) => ev.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).replace(/^ /, '')).join('\n'))
    .filter((d) => d.length > 0);
}

export async function metrics(url) {
  const r = await fetch(`${url}/metrics`);
  return r.text();
}

// The metrics page once ready(page) holds, or the last page read after ms. A
// request is counted when the gateway lets go of it (its sockets and timers closed),
// which can come a loop turn after the client has read the whole response: a page
// read right after the last response may still miss it.
export async function metricsWhen(url, ready, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const page = await metrics(url);
    if (ready(page) || Date.now() > deadline) return page;
    await sleep(10);
  }
}

// The value of one sample line, e.g. metricValue(page, 'vllm:num_requests_running').
export function metricValue(page, name, labelFilter = '') {
  for (const line of page.split('\n')) {
    if (line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    const key = line.slice(0, sp);
    if ((key === name || key.startsWith(name + '{')) && key.includes(labelFilter)) return Number(line.slice(sp + 1));
  }
  return undefined;
}

// The sum of every sample of a family (all its label sets) that includes labelFilter,
// e.g. metricSum(page, 'inferrail_upstream_retries_total'); undefined when there is none.
export function metricSum(page, name, labelFilter = '') {
  let sum;
  for (const line of page.split('\n')) {
    if (line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    const key = line.slice(0, sp);
    if ((key === name || key.startsWith(name + '{')) && key.includes(labelFilter)) sum = (sum ?? 0) + Number(line.slice(sp + 1));
  }
  return sum;
}

// The shape of a JSON value: keys in order, types, and null-ness; the values
// named in `keep` are compared literally.
export function shape(v, keep = new Set()) {
  if (v === null) return null;
  if (Array.isArray(v)) return v.map((x) => shape(x, keep));
  if (typeof v === 'object') {
    const out = [];
    for (const [k, x] of Object.entries(v)) out.push([k, keep.has(k) ? x : shape(x, keep)]);
    return out;
  }
  return typeof v;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls `cond` (sync or async) every 10 ms until it returns a truthy value, which it
// returns; fails naming `what` after `ms`. For a condition a test needs before it
// asserts: a fixed sleep is too short on a loaded machine and too long on an idle one.
export async function waitFor(what, cond, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`waitFor: not within ${ms} ms: ${what}`);
    await sleep(10);
  }
}

// Rewrites the config file of a gateway from startGateway: change(cfg) edits the
// parsed config in place, which is written back (as JSON) for a SIGHUP to reload.
export function rewriteConfig(gw, change) {
  const cfg = JSON.parse(fs.readFileSync(gw.file, 'utf8'));
  change(cfg);
  fs.writeFileSync(gw.file, JSON.stringify(cfg, null, 1));
}

// Starts build/inferrail-gateway with a config object (written as JSON, which
// is YAML too). Resolves to {port, url, admin, child, stop()}. opts.nofile runs it
// under that limit of open files (prlimit); opts.stderr, a file descriptor, takes its
// stderr instead of the pipe that fills log.text.
export async function startGateway(config, opts = {}) {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const port = await freePort();
  const adminPort = await freePort();
  const cfg = structuredClone(config);
  cfg.server = { listen: `127.0.0.1:${port}`, admin_listen: `127.0.0.1:${adminPort}`, workers: 2, ...(cfg.server || {}) };
  const file = path.join(os.tmpdir(), `ir-gw-${process.pid}-${port}.yaml`);
  fs.writeFileSync(file, JSON.stringify(cfg, null, 1));
  const gwArgs = [path.join(BUILD, 'inferrail-gateway'), '--config', file];
  const stdio = ['ignore', 'ignore', opts.stderr ?? 'pipe'];
  const child = opts.nofile
    ? spawn('prlimit', [`--nofile=${opts.nofile}:${opts.nofile}`, ...gwArgs], { stdio })
    : spawn(gwArgs[0], gwArgs.slice(1), { stdio });
  own(child);
  const log = { text: '' };
  child.stderr?.on('data', (d) => { log.text += d; if (log.text.length > 1e6) log.text = log.text.slice(-5e5); });
  let stopping = false;
  child.on('exit', (code, sig) => {
    try { fs.unlinkSync(file); } catch { /* gone */ }
    // A crash (a sanitizer's report ends in SIGABRT) shows in the test's output.
    if (!stopping && (sig || code)) process.stderr.write(`inferrail-gateway exited unexpectedly (${code ?? sig}):\n${log.text}\n`);
  });
  await waitReady(port, child, log, 'inferrail-gateway');
  if (opts.waitHealthy !== false) await sleep(50);
  return {
    port, url: `http://127.0.0.1:${port}`, admin: `http://127.0.0.1:${adminPort}`, child, log, file,
    async stop(signal = 'SIGTERM') {
      stopping = true;
      return stopChild(child, signal, 10000);
    },
  };
}

// Three simulators and a gateway in front of them.
export async function startFleet({ n = 3, simArgs = [], gateway = {}, replica = {} } = {}) {
  const sims = [];
  for (let i = 0; i < n; i++) sims.push(await startSim(['--enable-prompt-tokens-details', '--enable-faults', ...simArgs]));
  const cfg = {
    models: [{ name: 'inferrail/sim-8b', aliases: ['sim'] }],
    replicas: sims.map((s, i) => ({ id: `sim-${i + 1}`, url: s.url, ...replica })),
    // A probe has 2 s: with 200 ms, three slow ones in a row (a simulator busy with
    // hundreds of streams under TSan on a busy VM) took a replica out mid-test.
    health: { interval: '100ms', timeout: '2s' },
    ...gateway,
  };
  const gw = await startGateway(cfg);
  return {
    sims, gw,
    async stop() { await gw.stop(); for (const s of sims) await s.stop(); },
  };
}

// The gateway hands its log lines to a writer thread (src/core/spool.c), so a line
// reaches log.text a moment after what it tells of: waits for it (up to ms), then
// asserts it, with the log's tail as the message.
export async function logged(proc, re, ms = 10000) {
  const test = (t) => (typeof re === 'string' ? t.includes(re) : re.test(t));
  for (const end = Date.now() + ms; !test(proc.log.text) && Date.now() < end;) await sleep(20);
  if (!test(proc.log.text)) throw new Error(`the log lacks ${re}:\n${proc.log.text.slice(-3000)}`);
}
