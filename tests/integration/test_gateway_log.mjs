// The gateway's log when stderr is not drained (a log collector that stalls, a pipe
// whose reader hangs). Its threads wrote each line straight to stderr, so once the pipe
// was full every request that logged waited on it: the client port stopped answering.
// Lines now go through a bounded spool: past it they are dropped and counted
// (inferrail_log_lines_dropped_total), and once stderr drains a WARN line says how many.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startSim, startGateway, metrics, metricValue, sleep } from './lib.mjs';

async function send(gw, i) {
  const r = await fetch(gw.url + '/v1/completions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: `request ${i} ${'x'.repeat(3000)}`, max_tokens: 1 }),
    signal: AbortSignal.timeout(10000),
  });
  await r.arrayBuffer();
  return r.status;
}

// Reads what the FIFO holds now (non-blocking), as text.
function drain(fd) {
  const buf = Buffer.alloc(1 << 16);
  let text = '';
  for (;;) {
    let n = 0;
    try {
      n = fs.readSync(fd, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN') return text;
      throw e;
    }
    if (n === 0) return text;
    text += buf.subarray(0, n).toString();
  }
}

test('a stderr nobody reads never stalls the client port; the lines lost are counted and said', async () => {
  const sim = await startSim(['--zero-latency']);
  const fifo = path.join(os.tmpdir(), `ir-log-fifo-${process.pid}`);
  fs.rmSync(fifo, { force: true });
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  const reader = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK); // read only later
  const writer = fs.openSync(fifo, fs.constants.O_WRONLY);
  let gw;
  try {
    gw = await startGateway({
      models: [{ name: 'inferrail/sim-8b', tokenizer: 'builtin:sim' }],
      replicas: [{ id: 'a', url: sim.url }],
      // two lines a request, one of them 2 KiB of prompt: the 64 KiB pipe fills within
      // 40 requests, the spool's 4 MiB within 2,000
      logging: { level: 'debug', log_prompts: true, access_log: true },
    }, { stderr: writer });
    const n = 2600;
    let next = 0;
    const statuses = [];
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < n) statuses.push(await send(gw, next++));
    }));
    assert.equal(statuses.filter((s) => s === 200).length, n, `answered in ${Date.now() - t0} ms`);
    const page = await metrics(gw.admin);
    const dropped = metricValue(page, 'inferrail_log_lines_dropped_total');
    assert.ok(dropped > 0, page);
    // stderr drains: what was queued is written, then the WARN line with the count.
    let text = '';
    for (let i = 0; i < 200 && !/log line\(s\) dropped/.test(text); i++) {
      text += drain(reader);
      await sleep(25);
    }
    assert.match(text, /INFO  access: id=/);
    // Every drop is told, once: the WARN lines' counts add up to the metric's (a WARN
    // line that found the queue full again is itself a drop, told by the next one).
    const told = () => [...text.matchAll(/WARN  log: (\d+) log line\(s\) dropped: stderr did not take them in time/g)]
      .reduce((a, m) => a + Number(m[1]), 0);
    let total = dropped;
    for (let i = 0; i < 200 && told() !== total; i++) {
      await sleep(25);
      text += drain(reader);
      total = metricValue(await metrics(gw.admin), 'inferrail_log_lines_dropped_total');
    }
    assert.ok(told() > 0 && told() === total, `told ${told()} of ${total} (${dropped} at first)`);
    // Shutdown writes what is queued (its own lines included) and ends.
    const stopping = gw.stop();
    let tail = '';
    for (let i = 0; i < 400 && gw.child.exitCode === null; i++) {
      tail += drain(reader);
      await sleep(25);
    }
    assert.equal(await stopping, 0);
    tail += drain(reader);
    assert.match(tail, /drained, exiting/, tail.slice(-2000));
  } finally {
    if (gw && gw.child.exitCode === null) await gw.stop();
    fs.closeSync(writer);
    fs.closeSync(reader);
    fs.rmSync(fifo, { force: true });
    await sim.stop();
  }
});
