/**
 * The accuracy measurement of start-time estimates on a scenario small enough to work out: until a
 * job of the class has finished, runtimes are assumed (an hour) and estimates are far off; after,
 * the history knows the runtime and the estimates are exact.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ASSUMED_RUNTIME_MS } from '../../src/domain/runtime-history.js';
import { measureEstimates } from '../../src/simulate/estimate-accuracy.js';
import { expandScenario } from '../../src/simulate/scenario.js';
import { every, oneCohort, queueSet } from './helpers.js';

test('estimates are exact once a similar job has finished, and assumed before', () => {
  // Quota 1; six 100 ms jobs, one every 30 ms: the first ends at 130 ms.
  const plan = expandScenario(
    oneCohort(queueSet('cq', 1, every(30, 6, { className: 'job', runtimeMs: 100, request: 1 }))),
  );
  const r = measureEstimates(plan, { arrivalWindowMs: 0 });
  assert.equal(r.classes.length, 1);
  const c = r.classes[0]!;
  assert.deepEqual([c.className, c.estimated, c.unestimated], ['job', 6, 0]);
  // Jobs 1 (admitted at once), 5 and 6 (after the first ended): exact; 2–4: an hour off.
  assert.equal(c.medianAbsErrorMs, 0);
  assert.ok(c.p90AbsErrorMs > ASSUMED_RUNTIME_MS / 2, `p90 ${c.p90AbsErrorMs}`);
  assert.equal(r.forecasts, 6);
});
