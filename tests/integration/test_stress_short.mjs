// Short forms of the stress scenarios (tests/stress, `make stress`) that fit in a
// few seconds each, so that `make test` runs them too.
import { test } from 'node:test';
import { dnsChurn, hungUnderLoad, flapping, sigkill, everyEngineFails, sigtermStreams, reloadUnderLoad, discoveryReloadUnderLoad, disconnects, hostile } from '../stress/scenarios.mjs';

const T = { timeout: 120000 };
test('short: DNS group changes every 200 ms under load', T, async () => { await dnsChurn({ seconds: 2 }); });
test('short: a hung replica under load', T, async () => { await hungUnderLoad({ seconds: 3 }); });
test('short: a replica flapping to 503 every 100 ms', T, async () => { await flapping({ seconds: 2 }); });
test('short: SIGKILL and restart of a simulator under load', T, async () => { await sigkill({ seconds: 3, rate: 200 }); });
test('short: every engine fails', T, async () => { await everyEngineFails({ seconds: 2 }); });
test('short: SIGTERM during 100 streams', T, async () => { await sigtermStreams({ streams: 100 }); });
test('short: SIGHUP every 500 ms under load', T, async () => { await reloadUnderLoad({ seconds: 3 }); });
test('short: SIGHUP every 500 ms changing discovery under load', T, async () => { await discoveryReloadUnderLoad({ seconds: 3 }); });
test('short: 200 streams, 70% disconnecting', T, async () => { await disconnects({ streams: 200 }); });
test('short: 200 hostile clients', T, async () => { await hostile({ count: 200, parallel: 32 }); });
