// A scriptable h2c engine for the gateway's upstream HTTP/2 path (upstream: {http2:
// true}), speaking raw frames so that a test can misbehave exactly: each request's
// HEADERS runs a scenario that writes the frames of its answer, with the engine
// tracking the gateway's flow-control windows. GET /health, /v1/models and /metrics
// over HTTP/1.1 (health checks and scrapes speak it) get 200, a list and 404.
import net from 'node:net';
import { onH1Requests } from './fake_engine.mjs';
import { freePort, metrics, metricSum, startGateway } from './lib.mjs';

export const OK_BODY = '{"id":"cmpl-fake","object":"text_completion","model":"fake","choices":[{"index":0,"text":"ok","finish_reason":"stop"}]}';
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const port = freePort;

// ---- raw h2 frames ---------------------------------------------------------------
const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
export const T = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 };
export const F = { END_STREAM: 1, ACK: 1, END_HEADERS: 4, PADDED: 8 };
export const E = { NO_ERROR: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2, FLOW_CONTROL_ERROR: 3, STREAM_CLOSED: 5, REFUSED_STREAM: 7, CANCEL: 8 };

export function frame(type, flags, stream, payload = Buffer.alloc(0)) {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}
function hpackInt(prefixBits, first, v) {
  const max = (1 << prefixBits) - 1;
  if (v < max) return Buffer.from([first | v]);
  const out = [first | max];
  v -= max;
  while (v >= 128) { out.push((v % 128) + 128); v = Math.floor(v / 128); }
  out.push(v);
  return Buffer.from(out);
}
function lit(n, v) {
  const nb = Buffer.from(n), vb = Buffer.from(v);
  return Buffer.concat([Buffer.from([0x00]), hpackInt(7, 0, nb.length), nb, hpackInt(7, 0, vb.length), vb]);
}
// :status (any string, or null for none) then literal fields.
export function hpack(status, fields = []) {
  const parts = [];
  const idx = { 200: 8, 204: 9, 206: 10, 304: 11, 400: 12, 404: 13, 500: 14 }[status];
  if (status === null) { /* none */ } else if (idx) parts.push(Buffer.from([0x80 | idx]));
  else parts.push(Buffer.concat([Buffer.from([0x08]), hpackInt(7, 0, String(status).length), Buffer.from(String(status))]));
  for (const [n, v] of fields) parts.push(lit(n, v));
  return Buffer.concat(parts);
}
export function h2headers(id, status, fields, endStream) {
  return frame(T.HEADERS, F.END_HEADERS | (endStream ? F.END_STREAM : 0), id, hpack(status, fields));
}
export function rst(id, code) { const b = Buffer.alloc(4); b.writeUInt32BE(code); return frame(T.RST, 0, id, b); }
export function goaway(last, code) { const b = Buffer.alloc(8); b.writeUInt32BE(last); b.writeUInt32BE(code, 4); return frame(T.GOAWAY, 0, 0, b); }
export function settings(pairs) {
  const b = Buffer.alloc(6 * pairs.length);
  pairs.forEach(([k, v], i) => { b.writeUInt16BE(k, 6 * i); b.writeUInt32BE(v, 6 * i + 2); });
  return frame(T.SETTINGS, 0, 0, b);
}
export function windowUpdate(id, n) { const b = Buffer.alloc(4); b.writeUInt32BE(n); return frame(T.WINDOW_UPDATE, 0, id, b); }

// The engine. scenario(ctx) runs on each request's HEADERS (not for GET /health,
// /metrics, /v1/models over h1, which get 200/404). ctx = {id, sock, conn, eng, write(buf)}.
// eng.rsts collects the RST_STREAMs the gateway sent: {id, code}.
export async function startEngine(scenario, opts = {}) {
  const p = opts.port || (await port());
  const eng = {
    scenario, opts, port: p, url: `http://127.0.0.1:${p}`, requests: 0, connections: 0,
    rsts: [], goaways: [], timers: new Set(), sockets: new Set(), conns: [], bodies: {},
  };
  const server = net.createServer((sock) => {
    eng.connections++;
    eng.sockets.add(sock);
    sock.on('close', () => eng.sockets.delete(sock));
    sock.on('error', () => {});
    let first = Buffer.alloc(0);
    const sniff = (d) => {
      first = Buffer.concat([first, d]);
      const n = Math.min(first.length, PREFACE.length);
      const h2 = first.subarray(0, n).toString('latin1') === PREFACE.slice(0, n);
      if (h2 && first.length < PREFACE.length) return;
      sock.off('data', sniff);
      if (h2) serveH2(sock, eng, first);
      else serveH1(sock, eng, first);
    };
    sock.on('data', sniff);
  });
  await new Promise((res, rej) => { server.on('error', rej); server.listen(p, '127.0.0.1', res); });
  eng.stop = () => new Promise((r) => {
    for (const t of eng.timers) { clearTimeout(t); clearInterval(t); }
    for (const s of eng.sockets) s.destroy();
    server.close(() => r());
  });
  eng.later = (ms, fn) => { const t = setTimeout(fn, ms); eng.timers.add(t); return t; };
  return eng;
}

function serveH1(sock, eng, first) {
  onH1Requests(sock, first, (method, pth) => {
    if (method === 'GET' && pth === '/health') sock.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
    else if (method === 'GET' && pth === '/v1/models') sock.write('HTTP/1.1 200 OK\r\nContent-Length: 27\r\n\r\n{"object":"list","data":[]}');
    else if (method === 'GET' && pth === '/metrics') sock.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    else { eng.h1requests = (eng.h1requests || 0) + 1; sock.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${OK_BODY.length}\r\n\r\n${OK_BODY}`); }
  });
}

function serveH2(sock, eng, first) {
  let buf = first.subarray(PREFACE.length);
  const conn = { sock, peerInitWin: 65535, connWin: 65535, streamWin: new Map(), sent: 0, onWindow: null, closedByPeer: false };
  eng.conns.push(conn);
  const init = eng.opts.settings ?? [[3, 100]];
  sock.write(settings(init));
  const onData = (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) return;
      const type = buf[3], flags = buf[4], id = buf.readUInt32BE(5) & 0x7fffffff;
      const pl = buf.subarray(9, 9 + len);
      buf = buf.subarray(9 + len);
      if (type === T.SETTINGS && !(flags & F.ACK)) {
        for (let i = 0; i + 6 <= pl.length; i += 6) {
          if (pl.readUInt16BE(i) === 4) {
            const v = pl.readUInt32BE(i + 2);
            for (const [k, w] of conn.streamWin) conn.streamWin.set(k, w + v - conn.peerInitWin);
            conn.peerInitWin = v;
          }
        }
        if (!eng.opts.noSettingsAck) sock.write(frame(T.SETTINGS, F.ACK, 0));
      } else if (type === T.PING && !(flags & F.ACK)) sock.write(frame(T.PING, F.ACK, 0, pl));
      else if (type === T.WINDOW_UPDATE) {
        const n = pl.readUInt32BE(0) & 0x7fffffff;
        if (id === 0) conn.connWin += n; else conn.streamWin.set(id, (conn.streamWin.get(id) ?? conn.peerInitWin) + n);
        if (conn.onWindow) conn.onWindow();
      } else if (type === T.RST) eng.rsts.push({ id, code: pl.readUInt32BE(0) });
      else if (type === T.GOAWAY) eng.goaways.push({ last: pl.readUInt32BE(0), code: pl.readUInt32BE(4) });
      else if (type === T.DATA) {
        eng.bodies[id] = (eng.bodies[id] || 0) + len;
      } else if (type === T.HEADERS) {
        eng.requests++;
        if (!conn.streamWin.has(id)) conn.streamWin.set(id, conn.peerInitWin);
        const ctx = {
          id, sock, conn, eng,
          write: (b) => { if (!sock.destroyed) sock.write(b); },
          // DATA within the gateway's windows; resolves to the bytes sent when done
          // or when nothing opens for stallMs.
          pour: (total, { chunk = 16384, end = true, stallMs = 500 } = {}) => pour(ctx, total, chunk, end, stallMs),
        };
        const sc = typeof eng.scenario === 'function' ? eng.scenario : SCEN[eng.scenario] || SCEN.ok;
        sc(ctx);
      }
    }
  };
  sock.on('data', onData);
  onData(Buffer.alloc(0));
}

function pour(ctx, total, chunk, end, stallMs) {
  const { conn, id, sock } = ctx;
  return new Promise((resolve) => {
    let sent = 0;
    let t = null;
    const step = () => {
      if (sock.destroyed) return resolve({ sent, stalled: false, dead: true });
      while (sent < total) {
        const w = Math.min(conn.connWin, conn.streamWin.get(id), chunk, total - sent);
        if (w <= 0) break;
        const last = end && sent + w === total;
        sock.write(frame(T.DATA, last ? F.END_STREAM : 0, id, Buffer.alloc(w, 'x')));
        conn.connWin -= w;
        conn.streamWin.set(id, conn.streamWin.get(id) - w);
        sent += w;
        if (sock.writableLength > 1 << 20) { setImmediate(step); return; }
      }
      if (sent >= total) { conn.onWindow = null; return resolve({ sent, stalled: false }); }
      clearTimeout(t);
      t = setTimeout(() => { conn.onWindow = null; resolve({ sent, stalled: true }); }, stallMs);
      conn.onWindow = () => { clearTimeout(t); step(); };
    };
    step();
  });
}

export const SCEN = {
  ok: (c) => c.write(Buffer.concat([
    h2headers(c.id, 200, [['content-type', 'application/json'], ['content-length', String(OK_BODY.length)]], false),
    frame(T.DATA, F.END_STREAM, c.id, Buffer.from(OK_BODY)),
  ])),
  hang: () => {},
};

// ---- a fleet: the misbehaving engine "bad", a good one, a gateway speaking h2c ----
export async function fleet(badScenario, fn, { gateway = {}, upstream = {}, engineOpts = {}, good = true, replica = {} } = {}) {
  const bad = await startEngine(badScenario, engineOpts);
  const ok = good ? await startEngine('ok') : null;
  const replicas = [{ id: 'bad', url: bad.url, ...replica }];
  if (ok) replicas.push({ id: 'good', url: ok.url });
  const gw = await startGateway({
    models: [{ name: 'fake', policy: 'round_robin' }],
    replicas,
    server: { workers: 1, request_timeout: '10s' },
    upstream: { http2: true, response_timeout: '2s', non_streaming_timeout: '2s', idle_timeout: '1s', ...upstream },
    retry: { max_attempts: 3, backoff: '10ms' },
    health: { interval: '10s' },
    ...gateway,
  });
  let rc;
  try {
    await fn(gw, bad, ok);
  } finally {
    rc = await gw.stop();
    await bad.stop();
    if (ok) await ok.stop();
  }
  const san = /ERROR: (Address|Leak|Undefined)Sanitizer|runtime error:/.exec(gw.log.text);
  if (san || rc !== 0) throw new Error(`gateway rc=${rc}${san ? ' SANITIZER' : ''}:\n${gw.log.text.slice(-6000)}`);
  return gw;
}

export const BODY = JSON.stringify({ model: 'fake', prompt: 'x', max_tokens: 1 });
export async function post(gw, { body = BODY, timeoutMs = 15000 } = {}) {
  const t0 = Date.now();
  try {
    const r = await fetch(`${gw.url}/v1/completions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(timeoutMs),
    });
    return { status: r.status, text: await r.text(), replica: r.headers.get('x-inferrail-replica'), headers: Object.fromEntries(r.headers), ms: Date.now() - t0 };
  } catch (e) {
    return { status: 0, error: String(e.cause?.code || e.name || e), ms: Date.now() - t0 };
  }
}

// The gateway's metrics page, and the sum of a family's samples (lib.mjs's metricSum).
export const metricsPage = (gw) => metrics(gw.admin);
export const mv = metricSum;
