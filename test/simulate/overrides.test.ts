/** What-if overrides of a queue class's quota. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BadRequestError } from '../../src/domain/errors.js';
import { overrideQueueClasses, queueClasses } from '../../src/simulate/overrides.js';
import { expandScenario } from '../../src/simulate/scenario.js';
import { oneCohort, queueSet } from './helpers.js';

const CFG = oneCohort(queueSet('cpu', 20), queueSet('gpu', 4), queueSet('cpu', 8));

describe('overrideQueueClasses', () => {
  it('replaces the field of every queue set of the named class, and leaves the others', () => {
    const cfg = overrideQueueClasses(CFG, 'nominalQuota', { cpu: 30 });
    assert.deepEqual(
      expandScenario(cfg).queues.map((q) => [q.className, q.nominal]),
      [
        ['cpu', 30],
        ['gpu', 4],
        ['cpu', 30],
      ],
    );
    assert.equal(CFG.cohorts[0]?.queuesSets[0]?.nominalQuota, 20, 'the original is not changed');
    const limited = overrideQueueClasses(CFG, 'borrowingLimit', { gpu: 0 });
    assert.deepEqual(
      expandScenario(limited).queues.map((q) => q.borrowingLimit),
      [null, 0, null],
    );
  });

  it('refuses a class the scenario does not have, listing those it has', () => {
    assert.deepEqual(queueClasses(CFG), ['cpu', 'gpu']);
    assert.throws(
      () => overrideQueueClasses(CFG, 'nominalQuota', { tpu: 1 }),
      (e) =>
        e instanceof BadRequestError &&
        e.message === 'no queue class named "tpu" in the scenario (classes: cpu, gpu)',
    );
  });
});
