// Checks of Prometheus text pages, without any process of their own (the scraper
// worker of scrape_check.mjs and the page tests use them).
import assert from 'node:assert/strict';

// Every sample of a page: [{name, labels (string), value}].
export function samples(page) {
  const out = [];
  for (const line of page.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$/.exec(line);
    assert.ok(m, `a line that does not parse: ${line}`);
    out.push({ name: m[1], labels: m[2] || '', value: Number(m[3]) });
  }
  return out;
}

// Checks one page against the previous one: counters never go back; each histogram
// series' buckets are cumulative, end with +Inf equal to _count.
export function consistent(page, prev) {
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
