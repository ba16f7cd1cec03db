// The KV index's accuracy at full size: 3,000 requests at 400 req/s, three
// simulators under eviction pressure; at least 99% of predictions exact. It runs the
// concurrent case of tests/integration/test_gateway_predict.mjs (600 requests there, to
// keep `make test` fast) with PREDICT_LOAD_N=3000, with its bound on requests in
// flight (2), so that the overlap, and so the share of exact predictions, does not
// depend on how fast the machine is. The unbounded open loop, whose overlap does, is
// a benchmark: bench/index/predict-openloop.sh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

test('3,000 requests at 400 req/s, at most 2 in flight: at least 99% of predictions exact', () => {
  const file = fileURLToPath(new URL('../integration/test_gateway_predict.mjs', import.meta.url));
  const r = spawnSync(process.execPath, ['--test', '--test-name-pattern=400 req/s', file], {
    // Without NODE_TEST_CONTEXT: the child must report as a run of its own.
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT')), PREDICT_LOAD_N: '3000', PREDICT_LOAD_MIN: '0.99' },
    encoding: 'utf8',
    timeout: 300000,
  });
  const out = (r.stdout || '') + (r.stderr || '');
  const line = /open loop: .*/.exec(out);
  console.log(line ? line[0] : out.slice(-2000));
  assert.equal(r.status, 0, out.slice(-4000));
  assert.ok(line && /\d+\/3000 /.test(line[0]), 'the open loop did not run 3,000 requests');
});
