// dashboards/inferrail.json: every query names only metrics that the gateway exports
// (read from a live gateway's page) or vLLM exports (the simulator serves vLLM's
// names), and the checker itself catches a misspelt name.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startFleet, metrics, ROOT } from './lib.mjs';

const PROMQL_WORDS = new Set(['sum', 'avg', 'min', 'max', 'count', 'rate', 'irate', 'increase', 'delta', 'deriv',
  'histogram_quantile', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless',
  'topk', 'bottomk', 'abs', 'clamp_min', 'clamp_max', 'time', 'vector', 'scalar', 'offset', 'bool', 'label_values',
  'sort', 'sort_desc', 'avg_over_time', 'max_over_time', 'min_over_time', 'quantile', 'inf', 'nan']);

// The metric names an expression uses.
export function metricNames(expr) {
  const s = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')                       // strings
    .replace(/\{[^}]*\}/g, '')                                  // label matchers
    .replace(/\[[^\]]*\]/g, '')                                 // ranges
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\w+/g, ' ');                                    // Grafana variables
  const names = new Set();
  for (const m of s.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    if (PROMQL_WORDS.has(m[0].toLowerCase())) continue;
    if (/^\d/.test(m[0])) continue;
    names.add(m[0]);
  }
  // label_values(metric, label): the label is no metric
  for (const m of expr.matchAll(/label_values\(\s*[^,]+,\s*(\w+)\s*\)/g)) names.delete(m[1]);
  return [...names];
}

function exprs(dash) {
  const out = [];
  const walk = (panels) => {
    for (const p of panels || []) {
      for (const t of p.targets || []) out.push({ where: p.title, expr: t.expr });
      walk(p.panels);
    }
  };
  walk(dash.panels);
  for (const v of dash.templating?.list || []) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    if (q) out.push({ where: `variable ${v.name}`, expr: q });
  }
  return out;
}

// Families declared on a page (# TYPE), with a histogram's sample names.
function exported(page) {
  const out = new Set();
  for (const m of page.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    out.add(m[1]);
    if (m[2] === 'histogram') for (const s of ['_bucket', '_count', '_sum']) out.add(m[1] + s);
  }
  return out;
}

function unknown(dash, known) {
  const bad = [];
  for (const { where, expr } of exprs(dash)) {
    const names = metricNames(expr);
    if (names.length === 0) bad.push(`${where}: names no metric: ${expr}`);
    for (const n of names) if (!known.has(n)) bad.push(`${where}: ${n}`);
  }
  return bad;
}

test('every dashboard query names a metric the gateway or vLLM exports', async () => {
  const dash = JSON.parse(fs.readFileSync(path.join(ROOT, 'dashboards/inferrail.json'), 'utf8'));
  assert.ok(exprs(dash).length >= 20, 'the dashboard has its panels');
  const fleet = await startFleet({ n: 1, gateway: { models: [{ name: 'inferrail/sim-8b', aliases: ['sim'], tokenizer: 'builtin:sim' }] } });
  try {
    const r = await fetch(`${fleet.gw.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'sim', stream: true, max_tokens: 2, messages: [{ role: 'user', content: 'dashboard' }] }) });
    await r.text();
    // an error too: inferrail_request_errors_total has series (and is on the page) once one happened
    await (await fetch(`${fleet.gw.url}/v1/chat/completions`, { method: 'POST', body: '{"model":"nope","messages":[]}' })).text();
    const known = new Set([...exported(await metrics(fleet.gw.admin)), ...exported(await metrics(fleet.sims[0].url))]);
    assert.ok(known.has('inferrail_requests_total') && known.has('vllm:num_requests_running'));
    const bad = unknown(dash, known);
    assert.deepEqual(bad, []);
    // The check catches a misspelt metric, a misspelt histogram series and a bare word.
    const planted = { panels: [{ title: 'x', targets: [{ expr: 'sum(rate(inferrail_request_total[1m]))' },
      { expr: 'histogram_quantile(0.9, rate(vllm:time_to_first_token_bucket[1m]))' }, { expr: '1 + 2' }] }] };
    assert.equal(unknown(planted, known).length, 3);
    // The panels the issue asks for.
    const all = exprs(dash).map((e) => e.expr).join('\n');
    for (const m of ['inferrail_ttft_seconds_bucket', 'vllm:time_to_first_token_seconds_bucket', 'inferrail_replica_in_flight',
      'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc', 'inferrail_routing_decisions_total', 'vllm:prefix_cache_hits_total',
      'inferrail_predicted_cached_tokens_total', 'inferrail_routing_decision_seconds_bucket', 'inferrail_upstream_retries_total',
      'inferrail_ejections_total', 'inferrail_request_errors_total']) assert.ok(all.includes(m), `no panel uses ${m}`);
  } finally {
    await fleet.stop();
  }
});
