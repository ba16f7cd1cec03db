// CPU time of the gateway's event-loop turns under each kind of hostile client
// alone (tests/stress/scenarios.mjs's hostileCase): COUNT clients of the kind
// (default 48), PARALLEL at a time (default 8), against one gateway, and the
// turns inferrail_loop_turn_cpu_seconds counted meanwhile. A turn is every
// callback between two polls of a worker's loop: what any other client of that
// worker may wait for. CPU time (the thread's clock), so the figures hold on a
// busy machine; wall-clock waits would not.
// Reproduce with: make build && node bench/load/hostile_turns.mjs [OUT.jsonl]
import fs from 'node:fs';
import { startSim, startGateway, metrics } from '../../tests/integration/lib.mjs';
import { hostileCase, hostileConn, loopTurns, turnsBetween, HOSTILE_KINDS } from '../../tests/stress/scenarios.mjs';

const COUNT = Number(process.env.COUNT || 48);
const PARALLEL = Number(process.env.PARALLEL || 8);
const out = process.argv[2];

const sim = await startSim(['--zero-latency']);
const gw = await startGateway({
  models: [{ name: 'inferrail/sim-8b' }],
  replicas: [{ id: 's0', url: sim.url }],
  server: { header_read_timeout: '1s', request_timeout: '2s', max_header_bytes: '16KiB' },
});
try {
  for (let kind = 0; kind < HOSTILE_KINDS; kind++) {
    const before = loopTurns(await metrics(gw.admin));
    let next = 0, name = '';
    const outcomes = {};
    const worker = async () => {
      while (next < COUNT) {
        const c = hostileCase(kind + HOSTILE_KINDS * next++);
        name = c.kind;
        const r = await hostileConn(gw.port, c.bytes, c);
        const k = r.status ? String(r.status) : r.goaway ? 'goaway' : r.closed ? 'closed' : 'timeout';
        outcomes[k] = (outcomes[k] || 0) + 1;
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    const rec = { bench: 'hostile_turns', kind: name, clients: COUNT, parallel: PARALLEL, outcomes, ...turnsBetween(before, loopTurns(await metrics(gw.admin))) };
    console.log(JSON.stringify(rec));
    if (out) fs.appendFileSync(out, JSON.stringify(rec) + '\n');
  }
} finally {
  await gw.stop();
  await sim.stop();
}
