/** explain(), pendingIds() and queueFigures(): reasons, blockers and positions. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { Scheduler } from '../../src/scheduler/index.js';
import { admittedWorkload, queueModel, workload, type QueueSpec } from './helpers.js';

function scheduler(...queues: QueueSpec[]): Scheduler {
  const s = new Scheduler();
  for (const q of queues) s.upsertQueue(queueModel(q));
  return s;
}

test('a workload whose queue does not exist says so', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 4 } });
  s.enqueue(workload({ id: 1, queue: 'gpu', requests: { 'nvidia.com/gpu': 1 } }));
  s.enqueue(workload({ id: 2, queue: 'gpu', requests: { 'nvidia.com/gpu': 1 } }));
  assert.deepEqual(s.explain(2), {
    queue: 'gpu',
    position: 2,
    projectPosition: 2,
    reason: 'queue gpu does not exist',
    blockers: [{ kind: 'queue-missing', queue: 'gpu' }],
    // No pass has weighed it yet.
    provisional: true,
  });
  assert.equal(s.queueFigures('gpu'), undefined);
});

test('a removed queue: its pending workloads say the queue does not exist', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 1 } });
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'default', requests: { cpu: 1 } }));
  s.enqueue(workload({ id: 2, queue: 'default', requests: { cpu: 1 } }));
  s.removeQueue('default');
  assert.equal(s.explain(2)?.reason, 'queue default does not exist');
});

test('hold and drain are explained', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 4 }, stop: 'Hold' });
  s.enqueue(workload({ id: 1, queue: 'default', requests: { cpu: 1 } }));
  assert.equal(s.schedule(1).length, 0);
  assert.deepEqual(s.explain(1), {
    queue: 'default',
    position: 1,
    projectPosition: 1,
    reason: 'queue default is on hold',
    blockers: [{ kind: 'hold', queue: 'default', stopPolicy: 'Hold' }],
  });
  s.upsertQueue(queueModel({ name: 'default', nominal: { cpu: 4 }, stop: 'HoldAndDrain' }));
  assert.equal(s.explain(1)?.reason, 'queue default is on hold and draining');
});

test('waiting for quota: used/limit, what it needs, and its position', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 8 } });
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'default', requests: { cpu: 8 } }));
  for (const id of [2, 3, 4]) s.enqueue(workload({ id, queue: 'default', requests: { cpu: 2 } }));
  s.schedule(1);
  assert.deepEqual(s.explain(4), {
    queue: 'default',
    position: 3,
    projectPosition: 3,
    reason: 'waiting for quota in queue default: cpu 8/8 in use, needs 2; position 3',
    blockers: [
      {
        kind: 'quota',
        queue: 'default',
        resource: 'cpu',
        requested: 2000,
        available: 0,
        used: 8000,
        limit: 8000,
      },
    ],
  });
});

test('waiting for the cohort: what it needs and what is free, in quantity syntax', () => {
  const s = scheduler(
    { name: 'a', nominal: { memory: '4Gi' }, cohort: 'research' },
    { name: 'b', nominal: { memory: '4Gi' }, cohort: 'research' },
  );
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'b', requests: { memory: '7Gi' } }));
  s.enqueue(workload({ id: 2, queue: 'a', requests: { memory: '4Gi' } }));
  s.schedule(1);
  const e = s.explain(2);
  assert.equal(e?.reason, 'waiting for cohort research to free memory: needs 4Gi, 1Gi free; position 1');
  assert.deepEqual(e?.blockers, [
    { kind: 'cohort', cohort: 'research', resource: 'memory', requested: 4 * 2 ** 30, available: 2 ** 30 },
  ]);
});

test('in a cohort, the borrowing limit is a quota blocker of the queue itself', () => {
  const s = scheduler(
    { name: 'a', nominal: { cpu: 2 }, cohort: 'c', borrowingLimit: { cpu: '500m' } },
    { name: 'b', nominal: { cpu: 8 }, cohort: 'c' },
  );
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'a', requests: { cpu: 2 } }));
  s.enqueue(workload({ id: 2, queue: 'a', requests: { cpu: 1 } }));
  assert.equal(s.explain(2)?.reason, 'waiting for quota in queue a: cpu 2/2500m in use, needs 1; position 1');
});

test('a workload that fits but is behind others says how many are ahead', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 4 }, strategy: 'StrictFIFO' });
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'default', requests: { cpu: 3 } }));
  s.enqueue(workload({ id: 2, queue: 'default', requests: { cpu: 2 } }));
  for (const id of [3, 4, 5]) s.enqueue(workload({ id, queue: 'default', requests: { cpu: 1 } }));
  s.schedule(1);
  assert.deepEqual(s.explain(5), {
    queue: 'default',
    position: 4,
    projectPosition: 4,
    reason: 'waiting for 3 jobs ahead in queue default',
    blockers: [{ kind: 'ahead', queue: 'default', jobsAhead: 3 }],
  });
  assert.equal(s.explain(3)?.reason, 'waiting for 1 job ahead in queue default');
});

test('the first workload that fits is next; admitted or unknown workloads have no explanation', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 4 } });
  s.enqueue(workload({ id: 1, queue: 'default', requests: { cpu: 1 } }));
  assert.equal(s.explain(1)?.reason, 'next to be admitted in queue default');
  assert.deepEqual(s.explain(1)?.blockers, []);
  s.schedule(1);
  assert.equal(s.explain(1), undefined);
  assert.equal(s.explain(99), undefined);
});

test('a preemptor waits for its victims; the queue behind it waits for the preemptor', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 3 }, within: 'LowerPriority' });
  s.restoreAdmitted(admittedWorkload({ id: 1, queue: 'default', requests: { cpu: 2 } }));
  s.enqueue(workload({ id: 2, queue: 'default', requests: { cpu: 3 }, priority: 5 }));
  s.enqueue(workload({ id: 3, queue: 'default', requests: { cpu: 1 } }));
  assert.deepEqual(s.schedule(1), [
    {
      kind: 'preempt',
      preemptor: 2,
      victims: [1],
      reason: 'preempted for job 2 (priority 5) in queue default',
    },
  ]);
  assert.deepEqual(s.explain(2)?.blockers, [{ kind: 'preemption', victims: [1] }]);
  assert.equal(s.explain(2)?.reason, 'waiting for 1 job it preempted to stop in queue default');
  // Job 3 would fit, but the queue keeps the room for the preemptor (as Kueue's head does).
  assert.deepEqual(s.schedule(2), []);
  assert.equal(
    s.explain(3)?.reason,
    'waiting for job 2, which preempted others, to be admitted first in queue default; position 2',
  );
  s.requeue(1);
  assert.deepEqual(
    s.schedule(3).map((d) => (d.kind === 'admit' ? d.id : d.kind)),
    [2],
  );
  assert.equal(s.explain(1)?.position, 1);
  assert.equal(s.explain(3)?.position, 2);
});

test('fair share positions: the lone job of a second project is second, not last', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 100 } });
  for (let id = 1; id <= 1000; id++)
    s.enqueue(workload({ id, queue: 'default', requests: { cpu: 1 }, project: 'x' }));
  s.enqueue(workload({ id: 1001, queue: 'default', requests: { cpu: 1 }, project: 'y' }));
  const e = s.explain(1001);
  assert.equal(e?.position, 2);
  assert.equal(e?.projectPosition, 1);
  assert.equal(s.explain(500)?.position, 501);
  assert.equal(s.explain(500)?.projectPosition, 500);
  assert.deepEqual(s.pendingIds('default', 0, 4), [1, 1001, 2, 3]);
  assert.deepEqual(s.pendingIds('default', 998, 10), [998, 999, 1000]);
});

test('pendingIds pages through one project with offset and limit', () => {
  const s = scheduler({ name: 'default', nominal: { cpu: 1 } });
  for (let id = 1; id <= 50; id++)
    s.enqueue(workload({ id, queue: 'default', requests: { cpu: 2 }, priority: id % 3 }));
  const all = s.pendingIds('default', 0, 100);
  assert.equal(all.length, 50);
  assert.deepEqual(all.slice(0, 3), [2, 5, 8]);
  assert.deepEqual(s.pendingIds('default', 10, 5), all.slice(10, 15));
  assert.deepEqual(s.pendingIds('default', 49, 5), all.slice(49));
  assert.deepEqual(s.pendingIds('default', 60, 5), []);
  assert.deepEqual(s.pendingIds('nope', 0, 5), []);
  all.forEach((id, i) => assert.equal(s.explain(id)?.position, i + 1));
});

test('queueFigures: usage, borrowing and counts, with the quota they are measured against', () => {
  const s = scheduler(
    { name: 'a', nominal: { cpu: 2 }, cohort: 'c' },
    { name: 'b', nominal: { cpu: 2 }, cohort: 'c' },
  );
  s.enqueue(workload({ id: 1, queue: 'a', requests: { cpu: 3 } }));
  s.enqueue(workload({ id: 2, queue: 'a', requests: { cpu: 3 } }));
  s.schedule(1);
  assert.deepEqual(s.queueFigures('a'), {
    usage: { cpu: 3000, jobs: 1 },
    borrowed: { cpu: 1000 },
    pending: 1,
    admitted: 1,
    cohort: 'c',
    nominal: { cpu: 2000 },
    borrowingLimit: {},
    lendingLimit: {},
  });
  assert.deepEqual(s.queueFigures('b'), {
    usage: {},
    borrowed: {},
    pending: 0,
    admitted: 0,
    cohort: 'c',
    nominal: { cpu: 2000 },
    borrowingLimit: {},
    lendingLimit: {},
  });
});

test('positions, pendingIds and the actual admission order agree (random projects, weights, priorities, ties)', () => {
  const sub = fc.record({
    project: fc.constantFrom('x', 'y', 'z', 'w'),
    priority: fc.integer({ min: 0, max: 2 }),
    cpu: fc.integer({ min: 1, max: 4 }),
    mem: fc.integer({ min: 0, max: 4 }),
    createdAt: fc.integer({ min: 0, max: 20 }),
  });
  // Earlier admissions, some of which have ended since: projects whose usage is the same (often
  // none) but who were served in different rounds, so that shares tie and recency decides.
  const past = fc.record({
    project: fc.constantFrom('x', 'y', 'z', 'w'),
    cpu: fc.integer({ min: 1, max: 2 }),
    ended: fc.boolean(),
  });
  fc.assert(
    fc.property(
      fc.array(sub, { minLength: 1, maxLength: 60 }),
      fc.array(sub, { maxLength: 6 }),
      fc.array(past, { maxLength: 10 }),
      fc.record({ x: fc.integer({ min: 1, max: 3 }), y: fc.integer({ min: 1, max: 3 }) }),
      (subs, running, history, weights) => {
        const s = scheduler({ name: 'q', nominal: { cpu: 1000, memory: 500 } });
        s.setProjectWeight('x', weights.x);
        s.setProjectWeight('y', weights.y);
        running.forEach((r, i) =>
          s.restoreAdmitted(
            admittedWorkload({
              id: 1000 + i,
              queue: 'q',
              project: r.project,
              requests: { cpu: r.cpu, memory: r.mem },
            }),
          ),
        );
        history.forEach((h, i) => {
          const id = 2000 + i;
          s.enqueue(workload({ id, queue: 'q', project: h.project, requests: { cpu: h.cpu } }));
          assert.deepEqual(
            s.schedule(-100 + i).map((d) => (d.kind === 'admit' ? d.id : d.kind)),
            [id],
          );
          if (h.ended) s.release(id);
        });
        subs.forEach((r, i) =>
          s.enqueue(
            workload({
              id: i + 1,
              queue: 'q',
              project: r.project,
              priority: r.priority,
              createdAt: r.createdAt,
              requests: { cpu: r.cpu, memory: r.mem },
            }),
          ),
        );
        const order = s.pendingIds('q', 0, 1000);
        assert.equal(order.length, subs.length);
        order.forEach((id, i) => assert.equal(s.explain(id)?.position, i + 1, `position of ${id}`));
        const k = Math.floor(order.length / 2);
        assert.deepEqual(s.pendingIds('q', k, 5), order.slice(k, k + 5));
        const admitted: number[] = [];
        for (let t = 0; t < subs.length; t++) {
          for (const d of s.schedule(t, 1)) if (d.kind === 'admit') admitted.push(d.id);
        }
        assert.deepEqual(admitted, order);
      },
    ),
    { numRuns: 300 },
  );
});

test('positions match the admission order when each job ends before the next one starts (jobs: 1)', () => {
  // The case where fair share used to fail: one project with a backlog (and maybe a running job),
  // others with one job each. Every time a job ends all projects use nothing, and the one served
  // least recently must go next, as the positions said.
  const sub = fc.record({
    priority: fc.integer({ min: 0, max: 2 }),
    createdAt: fc.integer({ min: 0, max: 20 }),
  });
  fc.assert(
    fc.property(
      fc.array(sub, { minLength: 1, maxLength: 30 }),
      fc.array(sub, { maxLength: 6 }),
      fc.boolean(),
      fc.integer({ min: 1, max: 3 }),
      (backlog, lone, running, weight) => {
        const s = scheduler({ name: 'q', nominal: { jobs: 1 } });
        s.setProjectWeight('x', weight);
        if (running)
          s.restoreAdmitted(admittedWorkload({ id: 1000, queue: 'q', project: 'x', requests: {} }));
        backlog.forEach((b, i) =>
          s.enqueue(workload({ id: i + 1, queue: 'q', project: 'x', requests: {}, ...b })),
        );
        lone.forEach((b, i) =>
          s.enqueue(workload({ id: 100 + i, queue: 'q', project: `p${i}`, requests: {}, ...b })),
        );
        const order = s.pendingIds('q', 0, 1000);
        order.forEach((id, i) => assert.equal(s.explain(id)?.position, i + 1, `position of ${id}`));
        const admitted: number[] = [];
        let runningId: number | undefined = running ? 1000 : undefined;
        for (let t = 0; t < order.length; t++) {
          if (runningId !== undefined) s.release(runningId);
          const ds = s.schedule(t);
          assert.equal(ds.length, 1);
          runningId = ds[0]?.kind === 'admit' ? ds[0].id : undefined;
          if (runningId !== undefined) admitted.push(runningId);
        }
        assert.deepEqual(admitted, order);
      },
    ),
    { numRuns: 300 },
  );
});
