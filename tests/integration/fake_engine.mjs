// A fake inference engine that misbehaves on purpose, for fault tests of the
// gateway's upstream side. It speaks HTTP/1.1 on raw sockets and, for
// connections that open with the HTTP/2 preface, raw h2c frames (written by
// hand, so that it can send what a real HTTP/2 library refuses to send).
//
//   const eng = await startFakeEngine('status-101');
//   ... point a gateway replica at eng.url ...
//   eng.scenario = 'ok';          // later requests behave
//   await eng.stop();
//
// GET /metrics answers with the scenario eng.metrics (opts.metrics), e.g. 'hang',
// 'garbage-page' or 'endless-page' for the load scraper's tests; 404 without one.
//
// GET /health answers eng.healthStatus (200 unless a test changes it) and GET
// /v1/models 200, or the scenarios eng.health and eng.models when set (counted in
// eng.healthRequests). Every other request is
// answered by the current scenario (SCENARIOS lists them). eng.requests counts
// the requests it answered that way, eng.connections the connections it saw.
import net from 'node:net';

export const OK_BODY = '{"id":"cmpl-fake","object":"text_completion","model":"fake","choices":[{"index":0,"text":"ok","finish_reason":"stop"}]}';
const EVIL = 'HTTP/1.1 200 OK\r\nX-Evil: 1\r\nContent-Length: 13\r\n\r\nEVIL-RESPONSE';

function chunk(s) {
  return `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`;
}

function okResponse(body = OK_BODY) {
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

// Writes s one byte every ms milliseconds while the socket lives.
function dribble(sock, s, ms, timers) {
  let i = 0;
  const t = setInterval(() => {
    if (sock.destroyed || i >= s.length) { clearInterval(t); return; }
    sock.write(s[i++]);
  }, ms);
  timers.add(t);
}

// HTTP/1.1 scenarios: (socket, engine) => void. Each answers one request.
const H1 = {
  ok: (sock) => sock.write(okResponse()),
  // Content-Length 5, then a second, unsolicited response on the idle connection.
  'short-cl-evil': (sock, eng) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello');
    eng.timers.add(setTimeout(() => { if (!sock.destroyed) sock.write(EVIL); }, eng.opts.evilDelayMs ?? 150));
  },
  // The same, with the extra response in the same write.
  'short-cl-evil-same-read': (sock) => sock.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello' + EVIL),
  'status-101': (sock) => sock.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'),
  'status-102': (sock) => sock.write('HTTP/1.1 102 Processing\r\n\r\n' + okResponse()),
  'status-103': (sock) => sock.write('HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n' + okResponse()),
  'status-999': (sock) => sock.write('HTTP/1.1 999 Beyond\r\nContent-Length: 2\r\n\r\nok'),
  // A header with an empty name (llhttp accepts ': v'), and headers named as the gateway's own.
  'empty-header-name': (sock) => sock.write(`HTTP/1.1 200 OK\r\n: novalue\r\nContent-Type: application/json\r\nContent-Length: ${OK_BODY.length}\r\n\r\n${OK_BODY}`),
  'forged-own-headers': (sock) => sock.write(`HTTP/1.1 200 OK\r\nX-Inferrail-Replica: evil\r\nx-inferrail-cached-tokens: 999999\r\nContent-Type: application/json\r\nContent-Length: ${OK_BODY.length}\r\n\r\n${OK_BODY}`),
  'status-000': (sock) => sock.write('HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\nok'),
  'huge-chunk': (sock) => sock.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\nxx\r\n'),
  // The head a byte at a time (opts.dribbleMs, default 100 ms).
  'dribble-head': (sock, eng) => dribble(sock, okResponse(), eng.opts.dribbleMs ?? 100, eng.timers),
  // 100 Continue lines forever (one every opts.dribbleMs).
  'endless-100': (sock, eng) => {
    const t = setInterval(() => { if (sock.destroyed) clearInterval(t); else sock.write('HTTP/1.1 100 Continue\r\n\r\n'); }, eng.opts.dribbleMs ?? 100);
    eng.timers.add(t);
  },
  'close-early': (sock) => sock.destroy(),
  // A 503 with vLLM's error body: the gateway retries it on another replica.
  'status-503': (sock) => {
    const b = '{"error":{"message":"busy","type":"ServiceUnavailable","param":null,"code":503}}';
    sock.write(`HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: ${b.length}\r\n\r\n${b}`);
  },
  // Reads the request and never answers (a hung engine).
  hang: () => {},
  // An event stream: its head and one whole event, then nothing (a stall between events).
  'stall-sse': (sock) => sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n' +
    chunk('data: {"id":"cmpl-fake","object":"text_completion","model":"fake","choices":[{"index":0,"text":"a","finish_reason":null}]}\n\n')),
  // The same, stalled in the middle of its second event.
  'stall-mid-event': (sock) => sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n' +
    chunk('data: {"id":"cmpl-fake","object":"text_completion","model":"fake","choices":[{"index":0,"text":"a","finish_reason":null}]}\n\ndata: {"id":')),
  // A 200 page of bytes that are no metrics at all.
  'garbage-page': (sock) => {
    const junk = '\x00\x01{{{ <html>not a metrics page</html> }}}\n'.repeat(50);
    sock.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(junk)}\r\n\r\n${junk}`);
  },
  // A 50 MB page (Content-Length), written as fast as the reader takes it.
  'huge-page': (sock) => {
    const total = 50 * 1024 * 1024;
    sock.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${total}\r\n\r\n`);
    const block = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    const pour = () => {
      while (!sock.destroyed && sent < total) {
        sent += block.length;
        if (!sock.write(block)) return;
      }
    };
    sock.on('drain', pour);
    pour();
  },
  // A chunked page that never ends, written as fast as the reader takes it.
  'endless-page': (sock) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n');
    const line = 'vllm:num_requests_running{engine="0"} 0.0\n'.repeat(1500);
    const chunk = `${Buffer.byteLength(line).toString(16)}\r\n${line}\r\n`;
    const pour = () => { while (!sock.destroyed && sock.write(chunk)) { /* until the socket is full */ } };
    sock.on('drain', pour);
    pour();
  },
  // A head and the start of an event stream, then the connection closes: the response
  // breaks after it started (opts.cutMs, default 100).
  'cut-mid-body': (sock, eng) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 100\r\n\r\ndata: {}\n\n');
    eng.timers.add(setTimeout(() => sock.destroy(), eng.opts.cutMs ?? 100));
  },
  // A streaming head, then the connection dies before any body byte (an engine that
  // crashed in the prefill): reset, or closed (opts.cutMs, default 100).
  'head-then-reset': (sock, eng) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n');
    eng.timers.add(setTimeout(() => sock.resetAndDestroy(), eng.opts.cutMs ?? 100));
  },
  'head-then-close': (sock, eng) => {
    sock.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n');
    eng.timers.add(setTimeout(() => sock.destroy(), eng.opts.cutMs ?? 100));
  },
  // A head, then nothing at all (a stall before the first body byte).
  'head-then-stall': (sock) => sock.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n'),
  // Statuses that never have a body, whatever their framing headers say (RFC 9112 6.3).
  'status-204-cl': (sock) => sock.write('HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n'),
  'status-304-cl': (sock) => sock.write('HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n'),
  'status-204-chunked': (sock) => sock.write('HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n'),
  // A transfer coding other than chunked, which the gateway cannot decode.
  'te-gzip-chunked': (sock) => sock.write(Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n' +
    '5\r\n\x1f\x8b\x08\x00\x00\r\n0\r\n\r\n', 'latin1')),
  'te-gzip-close': (sock) => sock.end(Buffer.from('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b\x08\x00\x00', 'latin1')),
  // A metrics page that alternates between two engines' (as a Service in front of two
  // vLLMs would serve it): their prefix counters and their KV capacity differ.
  'two-engines-page': (sock, eng) => {
    eng.flip = !eng.flip;
    const [q, blocks] = eng.flip ? [100000, 1000] : [10, 2000];
    const l = 'engine="0",model_name="fake"';
    const page = `vllm:num_requests_running{${l}} 0.0\nvllm:num_requests_waiting{${l}} 0.0\n` +
      `vllm:kv_cache_usage_perc{${l}} 0.1\nvllm:prefix_cache_queries_total{${l}} ${q}.0\n` +
      `vllm:prefix_cache_hits_total{${l}} ${q / 2}.0\n` +
      `vllm:cache_config_info{block_size="16",num_gpu_blocks="${blocks}",${l}} 1.0\n`;
    sock.write(`HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: ${page.length}\r\n\r\n${page}`);
  },
  // A model page of the test's own (eng.cardsPage), for GET /v1/models (eng.models).
  'cards-page': (sock, eng) => { eng.cardsServed = (eng.cardsServed ?? 0) + 1; sock.write(okResponse(eng.cardsPage)); },
  // A usage whose cached_tokens no prompt can have (near INT64_MAX).
  'absurd-cached': (sock) => sock.write(okResponse(OK_BODY.slice(0, -1) +
    ',"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":9223372036854775000}}}')),
  // A usage whose completion_tokens no request can have (near 10^18).
  'absurd-completion': (sock) => sock.write(okResponse(OK_BODY.slice(0, -1) +
    ',"usage":{"prompt_tokens":40,"completion_tokens":999999999999999999}}')),
};

// ---- h2c, raw frames ----------------------------------------------------------------
const PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';
const T = { DATA: 0, HEADERS: 1, RST: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8 };
const F = { END_STREAM: 1, ACK: 1, END_HEADERS: 4 };

function frame(type, flags, stream, payload = Buffer.alloc(0)) {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(stream & 0x7fffffff, 5);
  return Buffer.concat([h, payload]);
}

// An HPACK block: :status from the static table, then literal fields
// (without indexing, literal names, no Huffman); values under 127 bytes.
function hpack(status, fields = []) {
  const parts = [];
  const idx = { 200: 8, 204: 9, 206: 10, 304: 11, 400: 12, 404: 13, 500: 14 }[status];
  if (idx) parts.push(Buffer.from([0x80 | idx]));
  else parts.push(Buffer.from([0x08, 3]), Buffer.from(String(status)));
  for (const [n, v] of fields) parts.push(Buffer.from([0x00, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v));
  return Buffer.concat(parts);
}

function h2headers(id, status, fields, endStream) {
  return frame(T.HEADERS, F.END_HEADERS | (endStream ? F.END_STREAM : 0), id, hpack(status, fields));
}

// h2c scenarios: (socket, stream id, engine) => void, for each request stream.
const H2 = {
  'h2-ok': (sock, id) => sock.write(Buffer.concat([
    h2headers(id, 200, [['content-type', 'application/json'], ['content-length', String(OK_BODY.length)]], false),
    frame(T.DATA, F.END_STREAM, id, Buffer.from(OK_BODY)),
  ])),
  'h2-data-before-headers': (sock, id) => sock.write(frame(T.DATA, 0, id, Buffer.from('data before any headers'))),
  'h2-push-promise': (sock, id) => {
    const p = Buffer.concat([Buffer.from([0, 0, 0, 2]), Buffer.from([0x82, 0x84, 0x86])]); // promised 2: GET / http
    sock.write(frame(T.PUSH_PROMISE, F.END_HEADERS, id, p));
  },
  'h2-headers-unopened': (sock, id) => sock.write(h2headers(id + 100, 200, [['content-length', '2']], false)),
  'h2-content-length-mismatch': (sock, id) => sock.write(Buffer.concat([
    h2headers(id, 200, [['content-type', 'application/json'], ['content-length', '3']], false),
    frame(T.DATA, F.END_STREAM, id, Buffer.from('x'.repeat(36))),
  ])),
  'h2-status-999': (sock, id) => sock.write(Buffer.concat([
    h2headers(id, 999, [['content-length', '2']], false),
    frame(T.DATA, F.END_STREAM, id, Buffer.from('ok')),
  ])),
  'h2-dribble-1xx': (sock, id, eng) => {
    const t = setInterval(() => { if (sock.destroyed) clearInterval(t); else sock.write(h2headers(id, 100, [], false)); }, eng.opts.dribbleMs ?? 100);
    eng.timers.add(t);
  },
};

export const SCENARIOS = [...Object.keys(H1), ...Object.keys(H2)];

function h1Answer(sock, eng, method, path) {
  if (method === 'GET' && (path === '/health' || path === '/v1/models')) {
    if (path === '/health') eng.healthRequests++;
    const page = path === '/health' ? eng.health : eng.models; // a scenario, e.g. 'endless-page'
    if (H1[page]) { H1[page](sock, eng); return; }
    if (path === '/health' && eng.healthStatus !== 200) sock.write(`HTTP/1.1 ${eng.healthStatus} Down\r\nContent-Length: 0\r\n\r\n`);
    else sock.write(okResponse(path === '/health' ? '' : '{"object":"list","data":[]}'));
    return;
  }
  // The gateway's load scraper reads GET /metrics ten times a second: it gets
  // eng.metrics's scenario (counted in eng.metricsRequests), or a 404 when none
  // is set, and never counts among eng.requests.
  if (method === 'GET' && path === '/metrics') {
    eng.metricsRequests++;
    if (H1[eng.metrics]) H1[eng.metrics](sock, eng);
    else sock.write('HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n');
    return;
  }
  eng.requests++;
  const sc = H1[eng.scenario] ? eng.scenario : 'ok';
  H1[sc](sock, eng);
}

// HTTP/1.1: requests with Content-Length bodies, answered in order.
// Calls answer(method, path) for each whole request on sock (`first`: bytes already read).
export function onH1Requests(sock, first, answer) {
  let buf = first;
  const onData = (d) => {
    buf = Buffer.concat([buf, d]);
    for (;;) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buf.subarray(0, end).toString('latin1');
      const m = /content-length:\s*(\d+)/i.exec(head);
      const len = m ? Number(m[1]) : 0;
      if (buf.length < end + 4 + len) return;
      buf = buf.subarray(end + 4 + len);
      const [method, path] = head.split(' ');
      answer(method, path);
    }
  };
  sock.on('data', onData);
  onData(Buffer.alloc(0));
}

function serveH1(sock, eng, first) {
  onH1Requests(sock, first, (method, path) => h1Answer(sock, eng, method, path));
}

function serveH2(sock, eng, first) {
  let buf = first.subarray(PREFACE.length);
  sock.write(frame(T.SETTINGS, 0, 0, Buffer.from([0, 3, 0, 0, 0, 100]))); // MAX_CONCURRENT_STREAMS 100
  const onData = (d) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3);
      if (buf.length < 9 + len) return;
      const type = buf[3], flags = buf[4], id = buf.readUInt32BE(5) & 0x7fffffff;
      buf = buf.subarray(9 + len);
      if (type === T.SETTINGS && !(flags & F.ACK)) sock.write(frame(T.SETTINGS, F.ACK, 0));
      else if (type === T.PING && !(flags & F.ACK)) sock.write(frame(T.PING, F.ACK, 0, Buffer.alloc(8)));
      else if (type === T.HEADERS) {
        eng.requests++;
        const sc = H2[eng.scenario] ? eng.scenario : 'h2-ok';
        H2[sc](sock, id, eng);
      }
    }
  };
  sock.on('data', onData);
  onData(Buffer.alloc(0));
}

// Starts the engine on a free loopback port. opts: evilDelayMs, dribbleMs, metrics.
export function startFakeEngine(scenario = 'ok', opts = {}) {
  const eng = {
    scenario, opts, metrics: opts.metrics, requests: 0, metricsRequests: 0, connections: 0,
    healthStatus: 200, healthRequests: 0, timers: new Set(), sockets: new Set(),
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
      if (h2 && first.length < PREFACE.length) return; // not sure yet
      sock.off('data', sniff);
      (h2 ? serveH2 : serveH1)(sock, eng, first);
    };
    sock.on('data', sniff);
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      eng.port = server.address().port;
      eng.url = `http://127.0.0.1:${eng.port}`;
      eng.stop = () => new Promise((r) => {
        for (const t of eng.timers) { clearTimeout(t); clearInterval(t); }
        for (const s of eng.sockets) s.destroy();
        server.close(() => r());
      });
      resolve(eng);
    });
  });
}
