// Where another client's latency goes while hostile clients attack the gateway
// (docs/stress.md, the hostile row's "no other client slowed by more than 10%").
// One simulator (--zero-latency) and one gateway (2 workers, access log on); for
// each round and each pinning mode, a quiet phase then an attack phase, each
// measuring the other client (ir-overhead, RATE req/s open loop, N requests, 8
// kept-alive connections, a process of its own):
//   client   ir-overhead's latency (send to last byte), p50/p99, us
//   gateway  the access log's `ms` of those requests (parsed head to finish),
//            `engine_ms` (send to the engine's response head: the simulator's time,
//            loopback, and the gateway waking to read it) and the rest, the
//            gateway's own (ms - engine_ms), p50/p99, us; the attackers never get a
//            200, so every 200 in a phase is the client's
//   sched    run-queue wait (/proc/<pid>/task/*/schedstat: run_delay per time
//            slice, mean us) of the gateway's threads, the simulator and the client
//   with PERF=R: `perf sched` over 1 s of the first R rounds' phases: the wake-up
//            to run delay of each wake-up of those processes (p50/p99/max, us),
//            and which processes ran on the CPU while a wake-up of the gateway,
//            the simulator or the client waited over 200 us (CPU us by process,
//            by waiter)
// Pinning (taskset, all threads): none; split: gateway + simulator on CPU 0,
// attackers (this process) + client on CPU 1; iso: gateway + simulator + client
// on CPU 0, attackers on CPU 1; att1: attackers on CPU 1, the rest on any CPU.
// cpu: each process's CPU time over the phase's wall time (1 = one core busy).
// Ratios are during/quiet of the same mode and round.
// KINDS=1 first measures, per hostile kind alone (48 clients, 8 at a time), the
// gateway's and the attackers' CPU time per hostile connection.
// Reproduce with: make build && ROUNDS=3 PERF=1 PINS=none,att1,split,iso KINDS=1 node bench/load/hostile_latency.mjs [OUT.jsonl]
// Wall-clock figures: meaningful only on a machine with nothing else running.
import { execFile, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startSim, startGateway, sleep, BUILD } from '../../tests/integration/lib.mjs';
import { hostileCase, hostileConn, HOSTILE_KINDS } from '../../tests/stress/scenarios.mjs';

const ROUNDS = Number(process.env.ROUNDS || 3);
const PINS = (process.env.PINS || 'none,split,iso').split(',');
const RATE = Number(process.env.RATE || 200), N = Number(process.env.N || 400);
const PARALLEL = Number(process.env.PARALLEL || 64);
const PERF_ROUNDS = Number(process.env.PERF || 0);
const out = process.argv[2];
const ALL = '0-' + (Number(execFileSync('nproc').toString()) - 1);

const pct = (a, p) => { if (!a.length) return null; const s = [...a].sort((x, y) => x - y); return s[Math.min(s.length - 1, Math.floor(p * s.length))]; };
const dist = (a) => ({ n: a.length, p50: pct(a, 0.5), p99: pct(a, 0.99), max: pct(a, 1) });
const pin = (pid, cpus) => execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });

function tasks(pid) {
  try { return fs.readdirSync(`/proc/${pid}/task`).map((t) => `/proc/${pid}/task/${t}/schedstat`); } catch { return []; }
}
// Summed [run_ns, wait_ns, slices] of a process's threads.
function schedstat(pid) {
  const s = [0, 0, 0];
  for (const f of tasks(pid)) {
    try { fs.readFileSync(f, 'utf8').trim().split(/\s+/).forEach((v, i) => { s[i] += Number(v); }); } catch { /* thread gone */ }
  }
  return s;
}
const waitPerSlice = (a, b) => (b[2] > a[2] ? +((b[1] - a[1]) / (b[2] - a[2]) / 1000).toFixed(1) : null);

// The other client, pinned to `cpus`; its schedstat sampled until it exits.
function otherClient(url, cpus) {
  let pid = 0;
  const done = new Promise((resolve, reject) => {
    const args = ['-c', cpus, path.join(BUILD, 'ir-overhead'), '--url', url, '--rate', String(RATE), '--requests', String(N), '--warmup', '20', '--max-connections', '8'];
    const child = spawn('taskset', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    pid = child.pid;
    let text = '', first = null, last = null;
    const poll = setInterval(() => { const s = schedstat(child.pid); if (s[2]) { first ||= s; last = s; } }, 100);
    child.stdout.on('data', (d) => { text += d; });
    child.on('exit', (code) => {
      clearInterval(poll);
      if (code) reject(new Error(`ir-overhead exited ${code}`));
      else resolve({ res: JSON.parse(text), wait_us_per_slice: first && last ? waitPerSlice(first, last) : null, cpu_s: last ? last[0] / 1e9 : null });
    });
  });
  return { done, pid };
}

// Hostile clients, PARALLEL at a time, until stopped; outcomes counted.
function attack(gw) {
  let stop = false, next = 0, bad = 0, n = 0;
  const worker = async () => {
    while (!stop) {
      const c = hostileCase(next++);
      const r = await hostileConn(gw.port, c.bytes, c);
      n++;
      if (!((r.status >= 400 && r.status < 500) || r.goaway || r.closed)) bad++;
    }
  };
  const all = Promise.all(Array.from({ length: PARALLEL }, worker));
  return async () => { stop = true; await all; return { hostile: n, wrong_outcomes: bad }; };
}

// `perf sched` over `ms`; then each wake-up's delay to running for the given pids
// (name -> pid), and who ran on that CPU while the wake-ups that waited over
// 200 us waited: CPU time by process (the given names, else "other"), in us,
// by the process that waited.
async function perfRecord(ms) {
  const file = `/tmp/hostile-latency-${process.pid}.perf`;
  await new Promise((r) => execFile('perf', ['sched', 'record', '-o', file, '--', 'sleep', String(ms / 1000)], { maxBuffer: 1e7 }, r));
  const text = await new Promise((r) => execFile('perf', ['sched', 'timehist', '-i', file], { maxBuffer: 1 << 30 }, (e, so) => r(so || '')));
  fs.rmSync(file, { force: true });
  return text;
}
// Parsed once the phase is over (parsing blocks this process, the attackers').
function perfParse(text, pids) {
  const byPid = new Map(Object.entries(pids).map(([k, v]) => [String(v), k]));
  const runs = [], waits = []; // runs: [cpu, from, to, who]; waits: [cpu, from, to]
  const delays = Object.fromEntries(Object.keys(pids).map((k) => [k, []]));
  const re = /^\s*([\d.]+)\s+\[(\d+)\]\s+.*\[(?:\d+\/)?(\d+)\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)/;
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const [t, cpu, pid, sch, run] = [Number(m[1]) * 1e6, m[2], m[3], Number(m[5]) * 1000, Number(m[6]) * 1000];
    const who = byPid.get(pid) || 'other';
    runs.push([cpu, t - run, t, who]);
    if (who === 'other') continue;
    delays[who].push(Math.round(sch));
    if (sch > 200 && who !== 'attackers') waits.push([cpu, t - run - sch, t - run, who]);
  }
  const blame = {};
  for (const [cpu, a, b, waiter] of waits) {
    const w = (blame[waiter] ||= {});
    for (const [c, x, y, who] of runs) {
      if (c !== cpu || y <= a || x >= b) continue;
      w[who] = (w[who] || 0) + Math.min(b, y) - Math.max(a, x);
    }
  }
  for (const w of Object.values(blame)) for (const k of Object.keys(w)) w[k] = Math.round(w[k]);
  const res = { delay_us: {}, ran_during_waits_over_200us: blame };
  for (const [k, d] of Object.entries(delays)) res.delay_us[k] = dist(d);
  return res;
}

const sim = await startSim(['--zero-latency']);
const gw = await startGateway({
  models: [{ name: 'inferrail/sim-8b' }],
  replicas: [{ id: 's0', url: sim.url }],
  server: { header_read_timeout: '1s', request_timeout: '2s', max_header_bytes: '16KiB' },
  logging: { access_log: true, format: 'json' },
});
let logLines = [];
gw.child.stderr.on('data', (d) => { logLines.push(d.toString()); });
const simPid = sim.child?.pid ?? sim.pid;

function modeCpus(mode) {
  if (mode === 'split') return { gw: '0', att: '1', client: '1' };
  if (mode === 'iso') return { gw: '0', att: '1', client: '0' };
  if (mode === 'att1') return { gw: ALL, att: '1', client: ALL };
  return { gw: ALL, att: ALL, client: ALL };
}

async function phase(mode, attacked, round) {
  const c = modeCpus(mode);
  pin(gw.child.pid, c.gw);
  if (simPid) pin(simPid, c.gw);
  pin(process.pid, c.att);
  await sleep(200);
  const stopAttack = attacked ? attack(gw) : null;
  if (attacked) await sleep(300);
  logLines = [];
  const g0 = schedstat(gw.child.pid), s0 = simPid ? schedstat(simPid) : null, n0 = schedstat(process.pid), t0 = performance.now();
  const cl = otherClient(gw.url, c.client);
  let perf = null;
  if (round < PERF_ROUNDS) {
    await sleep(300);
    perf = perfRecord(1000);
  }
  const client = await cl.done;
  const g1 = schedstat(gw.child.pid), s1 = simPid ? schedstat(simPid) : null, n1 = schedstat(process.pid);
  const wallNs = (performance.now() - t0) * 1e6, share = (a, b) => +((b[0] - a[0]) / wallNs).toFixed(2);
  const acc = logLines.join('').split('\n').filter((l) => l.includes('"status":200') || /"status":\s*200/.test(l));
  const ms = [], eng = [], own = [];
  for (const l of acc) {
    try {
      const j = JSON.parse(l.slice(l.indexOf('{')));
      ms.push(Math.round(j.ms * 1000));
      if (j.engine_ms >= 0) { eng.push(Math.round(j.engine_ms * 1000)); own.push(Math.round((j.ms - j.engine_ms) * 1000)); }
    } catch { /* not json */ }
  }
  const outcome = stopAttack ? await stopAttack() : null;
  const rec = {
    bench: 'hostile_latency', mode, round, attacked, ...(outcome || {}),
    client: { p50: client.res.latency.p50, p99: client.res.latency.p99, errors: client.res.errors },
    gateway_us: dist(ms), engine_us: dist(eng), gateway_own_us: dist(own),
    sched_wait_us_per_slice: { gateway: waitPerSlice(g0, g1), sim: s0 ? waitPerSlice(s0, s1) : null, client: client.wait_us_per_slice },
    cpu: { gateway: share(g0, g1), sim: s0 ? share(s0, s1) : null, attackers: share(n0, n1), client: client.cpu_s ? +(client.cpu_s * 1e9 / wallNs).toFixed(2) : null },
  };
  if (perf) rec.perf_sched = perfParse(await perf, { gateway: gw.child.pid, sim: simPid, client: cl.pid, attackers: process.pid });
  console.log(JSON.stringify(rec));
  if (out) fs.appendFileSync(out, JSON.stringify(rec) + '\n');
  return rec;
}

// Per kind alone: the gateway's and this process's CPU per hostile connection (us).
async function kindCosts() {
  pin(gw.child.pid, ALL);
  pin(sim.child.pid, ALL);
  pin(process.pid, ALL);
  const costs = {};
  for (let kind = 0; kind < HOSTILE_KINDS; kind++) {
    const g0 = schedstat(gw.child.pid), n0 = schedstat(process.pid);
    let next = 0, name = '';
    const worker = async () => {
      while (next < 48) {
        const c = hostileCase(kind + HOSTILE_KINDS * next++);
        name = c.kind;
        await hostileConn(gw.port, c.bytes, c);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    const g1 = schedstat(gw.child.pid), n1 = schedstat(process.pid);
    costs[name] = { gateway_us: Math.round((g1[0] - g0[0]) / 48 / 1000), attackers_us: Math.round((n1[0] - n0[0]) / 48 / 1000) };
  }
  const rec = { bench: 'hostile_latency_kind_cpu', per_connection: costs };
  console.log(JSON.stringify(rec));
  if (out) fs.appendFileSync(out, JSON.stringify(rec) + '\n');
}

try {
  if (process.env.KINDS === '1') await kindCosts();
  const ratios = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of PINS) {
      const q = await phase(mode, false, round);
      const a = await phase(mode, true, round);
      (ratios[mode] ||= []).push({ p99_ratio: +(a.client.p99 / q.client.p99).toFixed(2), p50_ratio: +(a.client.p50 / q.client.p50).toFixed(2),
        gw_p99_ratio: +(a.gateway_us.p99 / q.gateway_us.p99).toFixed(2), own_p99_ratio: +(a.gateway_own_us.p99 / q.gateway_own_us.p99).toFixed(2) });
    }
  }
  const summary = { bench: 'hostile_latency_summary', rounds: ROUNDS, rate: RATE, requests: N, ratios };
  console.log(JSON.stringify(summary));
  if (out) fs.appendFileSync(out, JSON.stringify(summary) + '\n');
} finally {
  pin(process.pid, ALL);
  await gw.stop();
  await sim.stop();
}
