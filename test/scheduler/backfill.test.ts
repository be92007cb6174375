/**
 * Backfill, as users see it: the reservation in `explain` (berth status), and the job a backfilled
 * admission went ahead of (its timeline). Decisions themselves are in scenarios.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Scheduler } from '../../src/scheduler/index.js';
import { admittedWorkload, queueModel, workload } from './helpers.js';

test('Backfill: the front job says when it is reserved to start; a job held for it says so', () => {
  const s = new Scheduler();
  s.upsertQueue(queueModel({ name: 'a', nominal: { cpu: 5 }, strategy: 'Backfill' }));
  // Admitted at 1 ms with a 100 s timeout: the 4 cpu of job 2 are expected free at 100.001 s.
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'a', requests: { cpu: 3 }, timeout: 100 }));
  s.enqueue(workload({ id: 2, queue: 'a', requests: { cpu: 4 }, timeout: 100 }));
  // Fits in the 2 cpu free, but would still hold them then, and only 1 is left beside job 2.
  s.enqueue(workload({ id: 3, queue: 'a', requests: { cpu: 2 }, timeout: 200 }));
  assert.deepEqual(s.schedule(1000), []);
  assert.equal(
    s.explain(2)?.reason,
    'reserved to start at 1970-01-01T00:01:40.001Z: cpu 4 of queue a, when the jobs running are expected to end (backfill); position 1',
  );
  assert.equal(
    s.explain(3)?.reason,
    'waiting for job 2, reserved to start at 1970-01-01T00:01:40.001Z: this job would still hold its quota then (backfill); position 2',
  );

  s.enqueue(workload({ id: 4, queue: 'a', requests: { cpu: 1 }, timeout: 50 }));
  assert.deepEqual(s.schedule(2000), [
    { kind: 'admit', id: 4, queue: 'a', borrowed: {}, backfilledAhead: 2 },
  ]);
  // 3 no longer fits: it waits for quota, as in any queue.
  assert.match(s.explain(3)?.reason ?? '', /^waiting for quota in queue a: cpu 4\/5 in use, needs 2/);

  // Once 1 ends, 2 goes; 3 is the front job now: 1 cpu is free at 52 s (4 ends), 2 at 103 s.
  s.release(1);
  assert.deepEqual(s.schedule(3000), [{ kind: 'admit', id: 2, queue: 'a', borrowed: {} }]);
  assert.match(
    s.explain(3)?.reason ?? '',
    /^reserved to start at 1970-01-01T00:01:43\.000Z: cpu 2 of queue a/,
  );
});

test('Backfill with learned estimates: a job held back by its timeout, though predicted short, says so', () => {
  const s = new Scheduler();
  s.upsertQueue(queueModel({ name: 'a', nominal: { cpu: 5 }, strategy: 'Backfill', estimates: 'learned' }));
  // Predicted to free its 3 cpu at 20.001 s; by its timeout at 100.001 s.
  s.restoreAdmitted(
    admittedWorkload({ id: 1, queue: 'a', requests: { cpu: 3 }, timeout: 100, expected: 20 }),
  );
  s.enqueue(workload({ id: 2, queue: 'a', requests: { cpu: 5 }, timeout: 100 }));
  // Predicted done by 11 s, but it may run 3 hours: past 100 s and the hour of slack after it.
  s.enqueue(workload({ id: 3, queue: 'a', requests: { cpu: 1 }, timeout: 10_800, expected: 10 }));
  assert.deepEqual(s.schedule(1000), []);
  assert.equal(
    s.explain(3)?.reason,
    'waiting for job 2, reserved to start at 1970-01-01T00:00:20.001Z: predicted to end before then, this job could by its timeout still hold its quota after 1970-01-01T01:01:40.001Z (backfill); position 2',
  );
});

test('Backfill with 2 reservations: the second job reserved says when; a job that would delay it names it', () => {
  const s = new Scheduler();
  s.upsertQueue(queueModel({ name: 'a', nominal: { cpu: 4 }, strategy: 'Backfill', reservations: 2 }));
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'a', requests: { cpu: 3 }, timeout: 100 }));
  // Reserved when 1 ends (100.001 s), until 200.001 s; then 3, which needs all 4 cpu.
  s.enqueue(workload({ id: 2, queue: 'a', requests: { cpu: 3 }, timeout: 100 }));
  s.enqueue(workload({ id: 3, queue: 'a', requests: { cpu: 4 }, timeout: 100 }));
  // Fits the free cpu and what 2 leaves, but would still run when 3 is due to start.
  s.enqueue(workload({ id: 4, queue: 'a', requests: { cpu: 1 }, timeout: 500 }));
  assert.deepEqual(s.schedule(1000), []);
  assert.match(
    s.explain(2)?.reason ?? '',
    /^reserved to start at 1970-01-01T00:01:40\.001Z: cpu 3 of queue a/,
  );
  assert.equal(
    s.explain(3)?.reason,
    'reserved to start at 1970-01-01T00:03:20.001Z: cpu 4 of queue a, when the jobs running are expected to end (backfill); position 2',
  );
  assert.equal(
    s.explain(4)?.reason,
    'waiting for job 3, reserved to start at 1970-01-01T00:03:20.001Z: this job would still hold its quota then (backfill); position 3',
  );
  // The dashboard reads the same as a blocker: whose reservation, when, and what of the queue.
  const third = {
    kind: 'reservation',
    queue: 'a',
    job: 3,
    startAt: '1970-01-01T00:03:20.001Z',
    requests: { cpu: '4' },
  };
  assert.deepEqual(s.explain(3)?.blockers.at(-1), third);
  assert.deepEqual(s.explain(4)?.blockers, [{ kind: 'ahead', queue: 'a', jobsAhead: 2 }, third]);
});

test('Backfill: a job no pass has weighed yet is said provisionally, from its place; the next pass reserves for it (issue #45)', () => {
  // The case: a second reservation free, a job submitted after the pass that planned the
  // first. Planned without it, the plan would have it wait for job 2 "holding its quota then"; a
  // second later it holds the second reservation.
  const s = new Scheduler();
  s.upsertQueue(queueModel({ name: 'a', nominal: { cpu: 4 }, strategy: 'Backfill', reservations: 2 }));
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'a', requests: { cpu: 3 }, timeout: 100 }));
  s.enqueue(workload({ id: 2, queue: 'a', requests: { cpu: 4 }, timeout: 100 }));
  assert.deepEqual(s.schedule(1000), []);
  assert.equal(s.explain(2)?.provisional, undefined);
  s.enqueue(workload({ id: 3, queue: 'a', requests: { cpu: 1 }, timeout: 7200 }));
  const first = s.explain(3);
  assert.equal(first?.provisional, true);
  assert.doesNotMatch(first?.reason ?? '', /reserved to start/, 'nothing planned for it is said yet');
  assert.deepEqual(s.schedule(2000), []);
  const then = s.explain(3);
  assert.equal(then?.provisional, undefined);
  assert.match(then?.reason ?? '', /^reserved to start at 1970-01-01T00:03:20\.001Z: cpu 1 of queue a/);
});

test('Backfill: a job held back at one instant is tried again at the next, once a job has outrun its expected end', () => {
  // Found by the property test of test/simulate/swf.test.ts against the reference EASY (seed
  // 1201699369): job 4 stayed parked for the capacity epoch, and job 5, behind it, went first.
  const s = new Scheduler();
  s.upsertQueue(queueModel({ name: 'a', nominal: { cpu: 7 }, strategy: 'Backfill' }));
  // 1 is expected to end at 2 s, 2 at 3 s; at 1 s 2 cpu are free.
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'a', requests: { cpu: 1 }, timeout: 2, admittedAt: 0 }));
  s.restoreAdmitted(
    admittedWorkload({ id: 2, queue: 'a', requests: { cpu: 4 }, timeout: 2, admittedAt: 1000 }),
  );
  s.enqueue(workload({ id: 3, queue: 'a', requests: { cpu: 3 }, timeout: 2 }));
  // 3 is reserved at 2 s, when 1 frees its cpu: nothing left then, and 4 would still run.
  s.enqueue(workload({ id: 4, queue: 'a', requests: { cpu: 1 }, timeout: 2 }));
  assert.deepEqual(s.schedule(1000), []);
  // At 2 s, 1 still runs: it is expected to end a second later, with 2. The reservation moves to
  // 3 s, when all 7 cpu are free: 4 of them are left beside 3, for 4 and then 5.
  s.enqueue(workload({ id: 5, queue: 'a', requests: { cpu: 1 }, timeout: 2 }));
  assert.deepEqual(s.schedule(2000), [
    { kind: 'admit', id: 4, queue: 'a', borrowed: {}, backfilledAhead: 3 },
    { kind: 'admit', id: 5, queue: 'a', borrowed: {}, backfilledAhead: 3 },
  ]);
});

test('Backfill with learned estimates: once a job outruns its prediction, the next pass lets through what the reservation held back, with nothing else happening', () => {
  const s = new Scheduler();
  s.upsertQueue(queueModel({ name: 'a', nominal: { cpu: 5 }, strategy: 'Backfill', estimates: 'learned' }));
  // Predicted to free its 3 cpu at 20 s; its timeout is up at 100 s.
  s.restoreAdmitted(
    admittedWorkload({ id: 1, queue: 'a', requests: { cpu: 3 }, timeout: 100, expected: 20, admittedAt: 0 }),
  );
  s.enqueue(workload({ id: 2, queue: 'a', requests: { cpu: 5 }, timeout: 100 }));
  // Predicted to run 50 s: it would still run at 20 s, when 2 is reserved to start.
  s.enqueue(workload({ id: 3, queue: 'a', requests: { cpu: 1 }, timeout: 50, expected: 50 }));
  assert.deepEqual(s.schedule(1000), []);
  assert.match(s.explain(2)?.reason ?? '', /^reserved to start at 1970-01-01T00:00:20\.000Z/);
  // At 21 s 1 still runs: it is expected to end by its timeout now, so 2 is reserved at 100 s,
  // and 3, done by 71 s, goes. No arrival, no release: the pass itself (the controller makes one
  // every second) finds it.
  assert.deepEqual(s.schedule(21_000), [
    { kind: 'admit', id: 3, queue: 'a', borrowed: {}, backfilledAhead: 2 },
  ]);
  assert.match(s.explain(2)?.reason ?? '', /^reserved to start at 1970-01-01T00:01:40\.000Z/);
});
