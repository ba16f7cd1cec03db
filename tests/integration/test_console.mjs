// The admin console: GET / on the admin port serves one self-contained page (no
// outside URL), and Debian's chromium, headless, renders it from a running gateway
// with simulators behind it: one row per replica with live numbers, no script error.
import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFleet, sleep } from './lib.mjs';

function chromium(url, budgetMs) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ir-chromium-'));
  return new Promise((resolve, reject) => {
    const args = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', `--user-data-dir=${dir}`,
      '--enable-logging=stderr', '--v=0', `--virtual-time-budget=${budgetMs}`, '--dump-dom', url];
    const c = spawn('chromium', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    c.stdout.on('data', (d) => { out += d; });
    c.stderr.on('data', (d) => { err = (err + d).slice(-200000); });
    const t = setTimeout(() => c.kill('SIGKILL'), 90000);
    c.on('error', (e) => { clearTimeout(t); reject(new Error(`chromium: ${e.message} (scripts/install-deps installs it)`)); });
    c.on('exit', (code) => {
      clearTimeout(t);
      fs.rmSync(dir, { recursive: true, force: true });
      resolve({ code, dom: out, log: err });
    });
  });
}

// The text of each cell of the row of replica id: {class suffix: text}.
function cells(dom, id) {
  const m = new RegExp(`<tr id="replica-${id}"[^>]*>(.*?)</tr>`).exec(dom);
  if (!m) return null;
  const out = {};
  for (const c of m[1].matchAll(/<td class="c-(\w+)[^"]*"[^>]*>([^<]*)<\/td>/g)) out[c[1]] = c[2];
  return out;
}

test('GET / is one self-contained page', async () => {
  const fleet = await startFleet({ n: 1 });
  try {
    const r = await fetch(fleet.gw.admin + '/');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/html/);
    assert.match(r.headers.get('content-security-policy'), /default-src 'none'/);
    const html = await r.text();
    assert.match(html, /<canvas/);
    assert.doesNotMatch(html, /(src|href)\s*=\s*["']?(https?:)?\/\//i, 'the page loads nothing from elsewhere');
    assert.doesNotMatch(html, /@import|url\(/i);
  } finally {
    await fleet.stop();
  }
});

test('headless chromium renders every replica with live numbers and no script error', async () => {
  const fleet = await startFleet({ gateway: { models: [{ name: 'inferrail/sim-8b', aliases: ['sim'], tokenizer: 'builtin:sim' }] } });
  let stop = false;
  try {
    const one = async (i) => {
      const r = await fetch(`${fleet.gw.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'sim', stream: true, max_tokens: 3, messages: [{ role: 'user', content: `console ${i}` }] }) });
      await r.text();
    };
    for (let i = 0; i < 9; i++) await one(i);
    // Traffic goes on while the page polls, so its rates have something to show.
    const traffic = (async () => { for (let i = 9; !stop; i++) { await one(i); await sleep(20); } })();
    const { code, dom, log } = await chromium(fleet.gw.admin + '/', 5000);
    stop = true;
    await traffic;
    assert.equal(code, 0, log.slice(-3000));
    assert.doesNotMatch(log, /Uncaught|CONSOLE\(\d+\).*error/i, 'a script error was logged');
    assert.match(dom, /<pre id="errors"><\/pre>/, 'the page caught a script error');
    const polls = Number(/data-polls="(\d+)"/.exec(dom)?.[1] || 0);
    assert.ok(polls >= 2, `the page polled ${polls} times:\n${dom.slice(0, 2000)}`);
    assert.match(dom, /data-model="inferrail\/sim-8b"/);
    let total = 0, rates = 0;
    for (const id of ['sim-1', 'sim-2', 'sim-3']) {
      const c = cells(dom, id);
      assert.ok(c, `no row for ${id}:\n${dom}`);
      assert.equal(c.state, 'up', JSON.stringify(c));
      assert.match(c.in_flight, /^\d+$/);
      assert.match(c.total, /^\d+$/);
      total += Number(c.total);
      if (/^\d+(\.\d+)?$/.test(c.rps) && Number(c.rps) > 0) rates++;
      assert.match(c.p99, /^(\d+(\.\d+)? (ms|s)|–)$/);
      assert.match(c.age, /^\d+ ms$/, `the engine's report age: ${JSON.stringify(c)}`);
    }
    assert.ok(total >= 9, `the rows count ${total} requests`);
    assert.ok(rates >= 1, 'no replica shows a request rate');
  } finally {
    stop = true;
    await fleet.stop();
  }
});
