// The gateway's /metrics: promtool (Debian's prometheus package) accepts the
// gateway's page and the simulator's (vLLM and SGLang names); every metric of the
// README's table is served; the outcome counter adds up; and scraping 100 times a
// second during many concurrent streams keeps counters monotonic and histograms
// consistent (cumulative buckets never decrease, never exceed _count) on every page.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { startFleet, startSim, metrics, metricSum, sleep } from './lib.mjs';

function promtool(page) {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: page, encoding: 'utf8' });
  assert.equal(r.error, undefined, 'promtool is missing: scripts/install-deps installs prometheus');
  return r;
}

// Every sample of a page: [{name, labels (string), value}].
function samples(page) {
  const out = [];
  for (const line of page.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    assert.ok(m, `a line that does not parse: ${line}`);
    out.push({ name: m[1], labels: m[2] || '', value: Number(m[3]) });
  }
  return out;
}

const chat = (stream, content = 'hello there, metrics') => JSON.stringify({
  model: 'sim', stream, max_tokens: 4, messages: [{ role: 'user', content }],
  ...(stream ? { stream_options: { include_usage: true } } : {}),
});

async function post(url, body) {
  const r = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  await r.text();
  return r.status;
}

// The metrics the README's table lists (those this gateway serves today).
const TABLE = [
  'inferrail_requests_total', 'inferrail_ttft_seconds_bucket', 'inferrail_request_duration_seconds_count',
  'inferrail_routing_decisions_total', 'inferrail_routing_decision_seconds_bucket',
  'inferrail_upstream_retries_total', 'inferrail_client_disconnects_total', 'inferrail_request_errors_total',
  'inferrail_tokenized_requests_total', 'inferrail_prompt_tokens_total', 'inferrail_predicted_cached_tokens_total',
  'inferrail_index_entries', 'inferrail_index_bytes', 'inferrail_index_resets_total', 'inferrail_ejections_total',
  'inferrail_replica_in_flight', 'inferrail_replica_pending', 'inferrail_replica_prompt_tokens',
  'inferrail_replica_pending_prompt_tokens', 'inferrail_replica_healthy', 'inferrail_replica_ejected',
  'inferrail_index_replica_blocks', 'inferrail_index_replica_capacity_blocks', 'inferrail_build_info',
];

test('promtool accepts the gateway page, which serves the whole table and counts each request once', async () => {
  const fleet = await startFleet({ gateway: { models: [{ name: 'inferrail/sim-8b', aliases: ['sim'], tokenizer: 'builtin:sim' }] } });
  try {
    let sent = 0;
    for (let i = 0; i < 6; i++, sent++) assert.equal(await post(fleet.gw.url, chat(i % 2 === 0)), 200);
    assert.equal(await post(fleet.gw.url, JSON.stringify({ model: 'nope', messages: [] })), 404);
    const page = await metrics(fleet.gw.admin);
    const r = promtool(page);
    assert.equal(r.status, 0, `promtool check metrics failed:\n${r.stdout}${r.stderr}\n${page}`);
    assert.equal(r.stdout + r.stderr, '', 'promtool has lint remarks');
    const names = new Set(samples(page).map((s) => s.name));
    for (const n of TABLE) assert.ok(names.has(n), `${n} missing from the page`);
    // Each proxied request is in exactly one outcome, and each streamed one has a TTFT.
    assert.equal(metricSum(page, 'inferrail_requests_total', 'status="2xx"'), sent);
    assert.equal(metricSum(page, 'inferrail_requests_total'), sent);
    assert.equal(metricSum(page, 'inferrail_ttft_seconds_count'), sent / 2);
    assert.equal(metricSum(page, 'inferrail_request_duration_seconds_count'), sent);
    assert.equal(metricSum(page, 'inferrail_routing_decisions_total'), sent);
    assert.equal(metricSum(page, 'inferrail_request_errors_total', 'reason="model_not_found"'), 1);
  } finally {
    await fleet.stop();
  }
});

test('promtool accepts the simulator pages, vLLM and SGLang', async () => {
  for (const engine of ['vllm', 'sglang']) {
    const sim = await startSim(['--engine', engine, '--zero-latency']);
    try {
      await fetch(`${sim.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chat(true).replace('"sim"', '"inferrail/sim-8b"') }).then((r) => r.text());
      const page = await metrics(sim.url);
      const r = promtool(page);
      // prometheus_client's own pages draw lint remarks on vLLM's names (counters
      // without _total in sglang, say); only problems, not remarks, fail here.
      assert.equal(r.status === 0 || !/error/i.test(r.stderr), true, `${engine}: ${r.stdout}${r.stderr}`);
      assert.ok(samples(page).length > 10);
    } finally {
      await sim.stop();
    }
  }
});

// Checks one page against the previous one: counters never go back; each histogram
// series' buckets are cumulative, end with +Inf equal to _count.
function consistent(page, prev) {
  const ss = samples(page);
  const types = new Map();
  for (const line of page.split('\n')) {
    const m = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (m) types.set(m[1], m[2]);
  }
  const now = new Map();
  const hist = new Map();
  for (const s of ss) {
    const key = s.name + s.labels;
    now.set(key, s.value);
    if (types.get(s.name) === 'counter' && prev.has(key)) assert.ok(s.value >= prev.get(key), `${key} went back: ${prev.get(key)} -> ${s.value}`);
    const hm = /^(.*)_(bucket|count)$/.exec(s.name);
    if (hm && types.get(hm[1]) === 'histogram') {
      const series = s.labels.replace(/,?le="[^"]*"/, '');
      const h = hist.get(hm[1] + series) || { buckets: [] };
      if (hm[2] === 'bucket') h.buckets.push(s.value);
      else h.count = s.value;
      hist.set(hm[1] + series, h);
      if (types.get(s.name) === undefined && prev.has(key)) assert.ok(s.value >= prev.get(key), `${key} went back`);
    }
  }
  for (const [k, h] of hist) {
    for (let i = 1; i < h.buckets.length; i++) assert.ok(h.buckets[i - 1] <= h.buckets[i], `${k}: buckets not cumulative ${h.buckets}`);
    assert.equal(h.buckets.at(-1), h.count, `${k}: +Inf bucket ${h.buckets.at(-1)} != _count ${h.count}`);
  }
  return now;
}

test('scraping 100 times a second during concurrent streams: every page consistent', async () => {
  const fleet = await startFleet({ simArgs: ['--decode-token-ms', '2'] });
  try {
    const STREAMS = 400, ROUNDS = 3;
    let stop = false, scrapes = 0, prev = new Map();
    const scraper = (async () => {
      while (!stop) {
        const t = Date.now();
        let page;
        try {
          page = await metrics(fleet.gw.admin);
        } catch (e) {
          throw new Error(`scrape ${scrapes} failed: ${e.cause?.code || e.cause || e}`);
        }
        prev = consistent(page, prev);
        scrapes++;
        await sleep(Math.max(0, 10 - (Date.now() - t)));
      }
    })();
    for (let round = 0; round < ROUNDS; round++) {
      const all = [];
      for (let i = 0; i < STREAMS; i++) all.push(post(fleet.gw.url, JSON.stringify({ model: 'sim', stream: true, max_tokens: 20, messages: [{ role: 'user', content: `r${round} s${i}` }] })));
      const statuses = await Promise.all(all);
      assert.ok(statuses.every((s) => s === 200), `statuses: ${[...new Set(statuses)]}`);
    }
    stop = true;
    await scraper;
    const page = await metrics(fleet.gw.admin);
    consistent(page, prev);
    assert.equal(metricSum(page, 'inferrail_requests_total', 'status="2xx"'), STREAMS * ROUNDS);
    assert.equal(metricSum(page, 'inferrail_ttft_seconds_count'), STREAMS * ROUNDS);
    assert.ok(scrapes >= 10, `only ${scrapes} scrapes`);
    console.log(`${scrapes} consistent scrapes during ${STREAMS * ROUNDS} streams`);
  } finally {
    await fleet.stop();
  }
});
