/** Cluster queue specs: defaults, validation rules, patches and integer amounts. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_PREEMPTION, type ClusterQueueSpec } from '../../src/domain/cluster-queue.js';
import {
  buildClusterQueueSpec,
  patchClusterQueueSpec,
  queueAmounts,
  type ClusterQueueInput,
} from '../../src/domain/cluster-queue-spec.js';
import { BadRequestError } from '../../src/domain/errors.js';

function refuses(input: ClusterQueueInput, message: RegExp): void {
  assert.throws(
    () => buildClusterQueueSpec(input),
    (e: unknown) => e instanceof BadRequestError && e.status === 400 && message.test(e.message),
    JSON.stringify(input),
  );
}

void describe('buildClusterQueueSpec: defaults', () => {
  void test('a name alone gives an unlimited, cohort-less BestEffortFIFO queue', () => {
    assert.deepEqual(buildClusterQueueSpec({ name: 'q' }), {
      name: 'q',
      quota: {},
      cohort: null,
      borrowingLimit: {},
      lendingLimit: {},
      queueingStrategy: 'BestEffortFIFO',
      preemption: {
        withinClusterQueue: 'Never',
        reclaimWithinCohort: 'Never',
        borrowWithinCohort: { policy: 'Never', maxPriorityThreshold: null },
      },
      stopPolicy: 'None',
      maxQueuedPerProject: null,
    });
  });

  void test('borrowWithinCohort needs reclaimWithinCohort, and keeps its threshold across patches', () => {
    refuses(
      { name: 'q', cohort: 'c', preemption: { borrowWithinCohort: { policy: 'LowerPriority' } } },
      /borrowWithinCohort: needs preemption\.reclaimWithinCohort other than Never/,
    );
    const spec = buildClusterQueueSpec({
      name: 'q',
      cohort: 'c',
      preemption: {
        reclaimWithinCohort: 'LowerPriority',
        borrowWithinCohort: { policy: 'LowerPriority', maxPriorityThreshold: 100 },
      },
    });
    const patched = patchClusterQueueSpec(spec, { preemption: { withinClusterQueue: 'LowerPriority' } });
    assert.deepEqual(patched.preemption.borrowWithinCohort, {
      policy: 'LowerPriority',
      maxPriorityThreshold: 100,
    });
    const off = patchClusterQueueSpec(spec, { preemption: { borrowWithinCohort: { policy: 'Never' } } });
    assert.deepEqual(off.preemption.borrowWithinCohort, { policy: 'Never', maxPriorityThreshold: 100 });
  });

  void test('maxQueuedPerProject is a whole number of at least 1, or null', () => {
    refuses({ name: 'q', maxQueuedPerProject: 0 }, /maxQueuedPerProject 0 must be a whole number/);
    assert.equal(buildClusterQueueSpec({ name: 'q', maxQueuedPerProject: 5 }).maxQueuedPerProject, 5);
  });

  void test('Backfill is a queueing strategy; its estimates are kept, and kept by a patch', () => {
    const spec = buildClusterQueueSpec({ name: 'q', queueingStrategy: 'Backfill', estimates: 'learned' });
    assert.equal(spec.queueingStrategy, 'Backfill');
    assert.equal(spec.estimates, 'learned');
    assert.equal(patchClusterQueueSpec(spec, { quota: { cpu: '2' } }).estimates, 'learned');
    assert.equal(patchClusterQueueSpec(spec, { estimates: 'requested' }).estimates, 'requested');
    // Queues that never set it have none (read as requested).
    assert.equal('estimates' in buildClusterQueueSpec({ name: 'q' }), false);
  });

  void test('backfill.reservations is a whole number from 1 to 100, kept by a patch', () => {
    refuses(
      { name: 'q', backfill: { reservations: 101 } },
      /backfill\.reservations 101 must be a whole number from 1 to 100/,
    );
    refuses({ name: 'q', backfill: { reservations: 1.5 } }, /backfill\.reservations 1\.5 must be/);
    const spec = buildClusterQueueSpec({
      name: 'q',
      queueingStrategy: 'Backfill',
      backfill: { reservations: 100 },
    });
    assert.deepEqual(patchClusterQueueSpec(spec, { quota: { cpu: '2' } }).backfill, { reservations: 100 });
    assert.equal('backfill' in buildClusterQueueSpec({ name: 'q' }), false);
  });

  void test('the default preemption is not shared between specs', () => {
    const a = buildClusterQueueSpec({ name: 'a' });
    a.preemption.withinClusterQueue = 'LowerPriority';
    assert.equal(buildClusterQueueSpec({ name: 'b' }).preemption.withinClusterQueue, 'Never');
    assert.equal(DEFAULT_PREEMPTION.withinClusterQueue, 'Never');
  });

  void test('given fields are kept; a partial preemption is completed with defaults', () => {
    const spec = buildClusterQueueSpec({
      name: 'q',
      cohort: 'pool',
      queueingStrategy: 'StrictFIFO',
      preemption: { reclaimWithinCohort: 'Any' },
      stopPolicy: 'HoldAndDrain',
    });
    assert.equal(spec.cohort, 'pool');
    assert.equal(spec.queueingStrategy, 'StrictFIFO');
    assert.deepEqual(spec.preemption, {
      withinClusterQueue: 'Never',
      reclaimWithinCohort: 'Any',
      borrowWithinCohort: { policy: 'Never', maxPriorityThreshold: null },
    });
    assert.equal(spec.stopPolicy, 'HoldAndDrain');
  });

  void test('quantities are kept as written, trimmed; numbers become strings', () => {
    const spec = buildClusterQueueSpec({
      name: 'q',
      quota: { cpu: ' 500m ', memory: '16Gi', jobs: 10, 'nvidia.com/gpu': 0.5 },
    });
    assert.deepEqual(spec.quota, { cpu: '500m', memory: '16Gi', jobs: '10', 'nvidia.com/gpu': '0.5' });
  });

  void test('a null or empty cohort means none', () => {
    assert.equal(buildClusterQueueSpec({ name: 'q', cohort: null }).cohort, null);
    assert.equal(buildClusterQueueSpec({ name: 'q', cohort: '' }).cohort, null);
  });
});

void describe('buildClusterQueueSpec: rules', () => {
  void test('the name must be a DNS label', () => {
    for (const name of ['Q', '-q', 'q-', 'q_1', 'a'.repeat(64), ''])
      refuses({ name }, /^cluster queue name .* must be a DNS label/);
  });
  void test('the cohort must be a DNS label', () =>
    refuses({ name: 'q', cohort: 'Pool' }, /^cohort "Pool" must be a DNS label/));
  void test('resource names must be valid, per field', () => {
    refuses({ name: 'q', quota: { 'bad name': '1' } }, /^quota: resource "bad name" must be a resource name/);
    refuses(
      { name: 'q', cohort: 'c', quota: { cpu: '1' }, borrowingLimit: { '/x': '1' } },
      /^borrowingLimit: resource "\/x"/,
    );
    refuses(
      { name: 'q', cohort: 'c', quota: { cpu: '1' }, lendingLimit: { 'a/b/c': '1' } },
      /^lendingLimit: resource "a\/b\/c"/,
    );
  });
  void test('quantities must be valid, naming the field', () => {
    refuses({ name: 'q', quota: { cpu: '8x' } }, /^quota\.cpu: "8x" is not a quantity/);
    refuses({ name: 'q', quota: { memory: -1 } }, /^quota\.memory: -1 is not a quantity/);
    refuses({ name: 'q', quota: { memory: '8Ei' } }, /^quota\.memory: "8Ei" is too large/);
    refuses(
      { name: 'q', cohort: 'c', quota: { cpu: '1' }, borrowingLimit: { cpu: 'lots' } },
      /^borrowingLimit\.cpu: "lots"/,
    );
    refuses(
      { name: 'q', cohort: 'c', quota: { cpu: '1' }, lendingLimit: { cpu: '' } },
      /^lendingLimit\.cpu: ""/,
    );
  });
  void test('limits need a cohort', () => {
    refuses(
      { name: 'q', quota: { cpu: '4' }, borrowingLimit: { cpu: '1' } },
      /^borrowingLimit\.cpu: a borrowingLimit needs a cohort/,
    );
    refuses(
      { name: 'q', quota: { cpu: '4' }, lendingLimit: { cpu: '1' } },
      /^lendingLimit\.cpu: a lendingLimit needs a cohort/,
    );
  });
  void test('limits need a quota on the same resource', () => {
    refuses(
      { name: 'q', cohort: 'c', quota: { cpu: '4' }, borrowingLimit: { memory: '1Gi' } },
      /^borrowingLimit\.memory: the queue has no quota for memory$/,
    );
    refuses(
      { name: 'q', cohort: 'c', lendingLimit: { cpu: '1' } },
      /^lendingLimit\.cpu: the queue has no quota for cpu$/,
    );
  });
  void test('a lending limit may not exceed the nominal quota, compared as amounts', () => {
    refuses(
      { name: 'q', cohort: 'c', quota: { cpu: '1' }, lendingLimit: { cpu: '1001m' } },
      /^lendingLimit\.cpu: 1001m is more than the nominal quota 1$/,
    );
    refuses(
      { name: 'q', cohort: 'c', quota: { memory: '1Gi' }, lendingLimit: { memory: '1025Mi' } },
      /1025Mi is more than the nominal quota 1Gi/,
    );
    const ok = buildClusterQueueSpec({
      name: 'q',
      cohort: 'c',
      quota: { cpu: '1', memory: '1Gi' },
      lendingLimit: { cpu: '1000m', memory: '1024Mi' },
    });
    assert.deepEqual(ok.lendingLimit, { cpu: '1000m', memory: '1024Mi' });
  });
  void test('a borrowing limit may exceed the nominal quota', () => {
    const spec = buildClusterQueueSpec({
      name: 'q',
      cohort: 'c',
      quota: { cpu: '1' },
      borrowingLimit: { cpu: '100' },
    });
    assert.deepEqual(spec.borrowingLimit, { cpu: '100' });
  });
});

void describe('patchClusterQueueSpec', () => {
  const current: ClusterQueueSpec = buildClusterQueueSpec({
    name: 'q',
    quota: { cpu: '8', memory: '32Gi' },
    cohort: 'pool',
    borrowingLimit: { cpu: '2' },
    lendingLimit: { memory: '8Gi' },
    preemption: { withinClusterQueue: 'LowerPriority' },
    stopPolicy: 'Hold',
  });

  void test('an empty patch changes nothing', () =>
    assert.deepEqual(patchClusterQueueSpec(current, {}), current));

  void test('given fields replace the old ones whole; others stay', () => {
    const next = patchClusterQueueSpec(current, {
      quota: { cpu: '16', memory: '64Gi', jobs: 5 },
      stopPolicy: 'None',
    });
    assert.deepEqual(next.quota, { cpu: '16', memory: '64Gi', jobs: '5' });
    assert.equal(next.stopPolicy, 'None');
    assert.equal(next.cohort, 'pool');
    assert.deepEqual(next.borrowingLimit, { cpu: '2' });
    assert.equal(next.name, 'q');
  });

  void test('preemption is merged field by field', () => {
    const next = patchClusterQueueSpec(current, { preemption: { reclaimWithinCohort: 'LowerPriority' } });
    assert.deepEqual(next.preemption, {
      withinClusterQueue: 'LowerPriority',
      reclaimWithinCohort: 'LowerPriority',
      borrowWithinCohort: { policy: 'Never', maxPriorityThreshold: null },
    });
  });

  void test('the result is validated as a whole', () => {
    assert.throws(
      () => patchClusterQueueSpec(current, { cohort: null }),
      /borrowingLimit\.cpu: a borrowingLimit needs a cohort/,
    );
    assert.throws(
      () => patchClusterQueueSpec(current, { quota: { memory: '32Gi' } }),
      /borrowingLimit\.cpu: the queue has no quota for cpu/,
    );
    assert.throws(
      () => patchClusterQueueSpec(current, { quota: { cpu: '8', memory: '4Gi' } }),
      /lendingLimit\.memory: 8Gi is more than the nominal quota 4Gi/,
    );
    const cleared = patchClusterQueueSpec(current, { cohort: null, borrowingLimit: {}, lendingLimit: {} });
    assert.equal(cleared.cohort, null);
  });

  void test('the name cannot be patched, and the current spec is not mutated', () => {
    const before = structuredClone(current);
    const next = patchClusterQueueSpec(current, {
      quota: { cpu: '1' },
      borrowingLimit: { cpu: '1' },
      lendingLimit: {},
    });
    assert.equal(next.name, 'q');
    assert.deepEqual(current, before);
  });
});

void describe('queueAmounts', () => {
  void test('turns every quantity into its integer amount', () => {
    const spec = buildClusterQueueSpec({
      name: 'q',
      cohort: 'c',
      quota: { cpu: '1500m', memory: '2Gi', jobs: 3 },
      borrowingLimit: { cpu: '0.5' },
      lendingLimit: { memory: '512Mi' },
    });
    assert.deepEqual(queueAmounts(spec), {
      nominal: { cpu: 1500, memory: 2 ** 31, jobs: 3 },
      borrowingLimit: { cpu: 500 },
      lendingLimit: { memory: 2 ** 29 },
    });
  });
});
