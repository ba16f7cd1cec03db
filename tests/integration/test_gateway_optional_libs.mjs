// libzmq is opened only when some replica has kv_events (src/gateway/zmq_dl.h):
// a gateway without them never maps it, nor its dependencies, and one with them
// maps it and subscribes. libcurl likewise, only with observability.otlp_endpoint
// (src/gateway/curl_dl.h). Read from the gateway's own /proc/PID/maps.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { startSim, startGateway, freePort, sleep, BUILD } from './lib.mjs';

const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

test('the gateway binary links neither libzmq nor libcurl (ldd)', () => {
  const r = spawnSync('ldd', [path.join(BUILD, 'inferrail-gateway')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.ok(/libuv\.so/.test(r.stdout), r.stdout); // ldd did list the libraries
  assert.ok(!/libzmq\.so/.test(r.stdout), r.stdout);
  assert.ok(!/libcurl\.so/.test(r.stdout), r.stdout);
});

const maps = (child) => fs.readFileSync(`/proc/${child.pid}/maps`, 'utf8');

test('without kv_events the gateway does not map libzmq or libstdc++', async () => {
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const gw = await startGateway({ models: [{ name: 'inferrail/sim-8b' }], replicas: [{ id: 'a', url: sim.url }] });
  cleanup.push(() => gw.stop());
  const r = await fetch(`${gw.url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'hello', max_tokens: 2 }),
  });
  assert.equal(r.status, 200);
  await r.text();
  const m = maps(gw.child);
  assert.ok(!/libzmq\.so/.test(m), 'libzmq is mapped without kv_events');
  // libzmq brings libstdc++; a sanitizer build maps it for its own runtime anyway.
  if (!/lib(a|t)san\.so/.test(m)) assert.ok(!/libstdc\+\+\.so/.test(m), 'libstdc++ (libzmq\'s) is mapped without kv_events');
  assert.ok(!/libcurl\.so/.test(m), 'libcurl is mapped without observability.otlp_endpoint');
});

test('with kv_events the gateway opens libzmq and serves as before', async () => {
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const pub = await freePort(); // nothing listens there: a SUB socket connects in the background
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 'ev', url: sim.url, kv_events: { endpoint: `tcp://127.0.0.1:${pub}` } }],
  });
  cleanup.push(() => gw.stop());
  let m = '';
  for (let i = 0; i < 50 && !/libzmq\.so/.test(m); i++) { m = maps(gw.child); await sleep(20); }
  assert.ok(/libzmq\.so/.test(m), 'libzmq is not mapped with kv_events');
  const r = await fetch(`${gw.url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'hello', max_tokens: 2 }),
  });
  assert.equal(r.status, 200);
  await r.text();
});

test('with otlp_endpoint the gateway opens libcurl and serves as before', async () => {
  const sim = await startSim(['--zero-latency']);
  cleanup.push(() => sim.stop());
  const collector = await freePort(); // nothing listens there: spans fail to post, counted
  const gw = await startGateway({
    models: [{ name: 'inferrail/sim-8b' }],
    replicas: [{ id: 'a', url: sim.url }],
    observability: { otlp_endpoint: `http://127.0.0.1:${collector}` },
  });
  cleanup.push(() => gw.stop());
  assert.ok(/libcurl\.so/.test(maps(gw.child)), 'libcurl is not mapped with otlp_endpoint');
  assert.ok(!/libzmq\.so/.test(maps(gw.child)), 'libzmq is mapped without kv_events');
  const r = await fetch(`${gw.url}/v1/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'inferrail/sim-8b', prompt: 'hello', max_tokens: 2 }),
  });
  assert.equal(r.status, 200);
  await r.text();
});
