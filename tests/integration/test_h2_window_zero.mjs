// h2c clients that open no window (SETTINGS_INITIAL_WINDOW_SIZE 0) and keep
// many streams: what the server buffers for them is bounded per connection by
// max_write_queue, in the simulator as in the gateway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http2 from 'node:http2';
import path from 'node:path';
import { startSim, startGateway, metrics, metricValue, sleep, waitFor, BUILD } from './lib.mjs';

// Under ASan freed memory is quarantined, so the peak says nothing there.
const sanitized = fs.readFileSync(path.join(BUILD, 'inferrail-sim')).includes('__asan_init');

const STREAMS = 32;
const BODY = JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'x', max_tokens: 20000, stream: true, ignore_eos: true });

// The peak resident size (VmHWM): buffers freed since still count.
function peakKiB(pid) {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]);
}

// Opens STREAMS streams on one connection that never reads; resolves when
// each one ended (reset or closed) or after ms.
function stalledStreams(url, ms) {
  const session = http2.connect(url, { settings: { initialWindowSize: 0 } });
  session.on('error', () => {});
  const ends = [];
  for (let i = 0; i < STREAMS; i++) {
    const req = session.request({ ':method': 'POST', ':path': '/v1/completions', 'content-type': 'application/json' });
    req.on('error', () => {});
    ends.push(new Promise((resolve) => req.on('close', () => resolve(req.rstCode))));
    req.end(BODY);
  }
  let timer;
  const cap = new Promise((resolve) => { timer = setTimeout(() => resolve(null), ms); });
  const all = Promise.race([Promise.all(ends).finally(() => clearTimeout(timer)), cap]);
  return { session, all };
}

const simArgs = ['--max-model-len', '200000', '--num-gpu-blocks-override', '20000', '--decode-token-ms', '0.001',
  '--decode-batch-us', '0', '--prefill-token-us', '0', '--prefill-pair-ns', '0', '--prefill-fixed-ms', '0'];

test('simulator: streams that cannot be written are bounded by --max-write-queue per connection', async () => {
  // 20 tokens a millisecond: each write is small, as a real engine's are.
  const sim = await startSim([...simArgs.slice(0, 4), '--decode-token-ms', '0.05', ...simArgs.slice(6), '--max-write-queue', '256KiB']);
  try {
    const before = peakKiB(sim.child.pid);
    // At once on an idle machine; under ASan on a busy VM 30 s were not enough (the
    // KV cache holds half the streams at a time: the rest run as the first are reset).
    const { session, all } = stalledStreams(sim.url, 120000);
    const codes = await all;
    const grown = peakKiB(sim.child.pid) - before;
    // 32 streams of ~5 MB each: once the connection holds 2 x 256 KiB, writes are
    // refused and the simulator drops the requests (the streams are reset, not ended).
    assert.ok(codes !== null, 'every stream was ended by the simulator');
    assert.ok(codes.every((c) => c !== 0), `reset codes ${codes}`);
    // The 32 requests themselves take about 4.5 MB; held per stream, their
    // unwritten bytes took 8 MB more.
    if (!sanitized) assert.ok(grown < 8 * 1024, `the simulator's peak grew by ${grown} KiB`);
    session.destroy();
  } finally {
    await sim.stop();
  }
});

test('gateway: h2c clients with no window are held to server.max_write_queue per connection', async () => {
  const sim = await startSim(simArgs);
  const gw = await startGateway({
    server: { workers: 1, max_write_queue: '256KiB' },
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 's0', url: sim.url }],
  });
  try {
    const { session } = stalledStreams(gw.url, 0);
    // Every write reports the connection's queue: the gateway paused the engine
    // streams once it passed half of max_write_queue, and streams whose writes
    // found it full were closed as too slow. Per stream, all 32 would wait.
    // Waited for, not slept for: all 32 routed, then fewer than 32 held.
    let page;
    const s0 = (name) => metricValue(page, name, 'replica="s0"');
    await waitFor('the 32 streams routed, and some closed as too slow', async () => {
      page = await metrics(gw.admin);
      return s0('inferrail_replica_requests_total') === STREAMS && s0('inferrail_replica_in_flight') < STREAMS;
    }).catch(() => {}); // the assertion below shows the counts
    const held = s0('inferrail_replica_in_flight');
    assert.ok(held > 0 && held < STREAMS, `${held} streams held\n${page}`);
    session.destroy();
    // The client's leaving frees every stream.
    let left;
    for (const end = Date.now() + 20000; Date.now() < end;) {
      left = metricValue(await metrics(gw.admin), 'inferrail_replica_in_flight', 'replica="s0"');
      if (left === 0) break;
      await sleep(20);
    }
    assert.equal(left, 0);
  } finally {
    await gw.stop();
    await sim.stop();
  }
});
